"""Fake secrets planted in publishable trials never reach a published byte.

Each location (tool output, tool-call argument, system prompt, completion, raw bodies) gets
its own otherwise healthy trial carrying the whole corpus; the release bundle is built, every
file byte and every decoded Parquet value is searched for each secret and three inner pieces
of it, every planted trial must still be exported, the bundle must verify, and the
look-alikes (hashes, call ids, trial names, base64 of ordinary data, UUIDs) must survive.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pyarrow.parquet as pq
import pytest
from leakproof_corpus import Planted, corpus, look_alikes
from trialkit import Trial, TrialSpec, healthy_spec

from bf_assets.publish.bundle import Bundle, bundle_reviews
from bf_assets.publish.verify import verify_reviews

CORPUS = corpus()


def planted_text(items: list[Planted]) -> str:
    return "\n".join(f"[{i}] {p.text}" for i, p in enumerate(items))


def _tool_output(spec: TrialSpec, text: str) -> None:
    assert spec.llm is not None
    spec.llm[1]["request"]["body"]["messages"][-1]["content"] = text


def _tool_argument(spec: TrialSpec, text: str) -> None:
    assert spec.llm is not None
    args = json.dumps({"command": "echo hi > hello.txt", "env": text})
    spec.llm[0]["response"]["body"]["choices"][0]["message"]["tool_calls"][0]["function"][
        "arguments"
    ] = args
    spec.llm[1]["request"]["body"]["messages"][2]["tool_calls"][0]["function"]["arguments"] = args


def _prompt(spec: TrialSpec, text: str) -> None:
    assert spec.llm is not None
    for ex in spec.llm:
        ex["request"]["body"]["messages"][0]["content"] = "You are an agent.\n" + text


def _completion(spec: TrialSpec, text: str) -> None:
    assert spec.llm is not None
    spec.llm[1]["response"]["body"]["choices"][0]["message"]["content"] = "Done.\n" + text


def _raw_bodies(spec: TrialSpec, text: str) -> None:
    assert spec.llm is not None
    for ex in spec.llm:
        ex["metadata"]["raw_request_headers"] = {"x-debug": text}
        ex["response"]["body"]["usage"]["debug_body"] = text
        ex["response"]["body"]["system_fingerprint"] = text


LOCATIONS: dict[str, Callable[[TrialSpec, str], None]] = {
    "tool-output": _tool_output,
    "tool-argument": _tool_argument,
    "prompt": _prompt,
    "completion": _completion,
    "raw-bodies": _raw_bodies,
}


def planted_trial(root: Path, location: str, text: str) -> Trial:
    spec = healthy_spec(task=f"leak-{location}", rollout_id=f"{abs(hash(location)) % 16**8:08x}")
    LOCATIONS[location](spec, text)
    spec.rebuild_steps().sync()
    return spec.write(root)


def published_values(root: Path) -> str:
    """Every file's bytes, plus every decoded Parquet cell, plus every JSON string decoded."""
    parts: list[str] = []
    for p in sorted(root.rglob("*")):
        if not p.is_file():
            continue
        parts.append(p.read_bytes().decode("utf-8", "replace"))
        if p.suffix == ".parquet":
            rows = pq.read_table(p).to_pylist()
            parts.append(orjson.dumps(rows).decode())
            stack: list[Any] = list(rows)
            while stack:
                v = stack.pop()
                if isinstance(v, dict):
                    stack.extend(v.values())
                elif isinstance(v, list):
                    stack.extend(v)
                elif isinstance(v, str):
                    parts.append(v)
                    if v[:1] in "[{":
                        with contextlib.suppress(ValueError):
                            stack.append(json.loads(v))
    return "\n".join(parts)


@pytest.fixture(scope="module")
def leak_bundle(tmp_path_factory: pytest.TempPathFactory) -> tuple[Bundle, list[Trial], Path]:
    root = tmp_path_factory.mktemp("runs")
    text = planted_text(CORPUS)
    trials = [planted_trial(root, loc, text) for loc in LOCATIONS]
    alike = healthy_spec(task="look-alikes", rollout_id="bbbb2222")
    _tool_output(alike, "\n".join(look_alikes()))
    trials.append(alike.rebuild_steps().sync().write(root))
    reviews = [t.review() for t in trials]
    for r in reviews:
        assert r.verdict == "publishable", (r.ref.rollout, r.findings)
    b = bundle_reviews(reviews, tmp_path_factory.mktemp("staging"))
    return b, trials, b.path


def test_every_planted_trial_is_exported_and_verifies(
    leak_bundle: tuple[Bundle, list[Trial], Path],
) -> None:
    assert_all_exported_and_verified(*leak_bundle)
    assert leak_bundle[0].stats.n_redactions >= len(CORPUS)


def assert_all_exported_and_verified(b: Bundle, trials: list[Trial], path: Path) -> None:
    """Every planted trial is exported (cleaning never costs a trial) and the bundle passes
    the publish gate."""
    assert b.rows["rollouts"] == len(trials), b.excluded
    assert not b.excluded
    report = verify_reviews(path, [t.review() for t in trials])
    assert report.ok, report.summary() + str(report.findings)


@pytest.mark.parametrize("item", CORPUS, ids=[p.name for p in CORPUS])
def test_no_secret_or_inner_piece_survives(
    leak_bundle: tuple[Bundle, list[Trial], Path], item: Planted
) -> None:
    text = _published(leak_bundle[2])
    for piece in item.fragments():
        assert piece not in text, (item.name, piece)


def test_look_alikes_survive_verbatim(leak_bundle: tuple[Bundle, list[Trial], Path]) -> None:
    text = _published(leak_bundle[2])
    for s in look_alikes():
        assert s in text, s


_CACHE: dict[Path, str] = {}


def _published(path: Path) -> str:
    if path not in _CACHE:
        _CACHE[path] = published_values(path)
    return _CACHE[path]
