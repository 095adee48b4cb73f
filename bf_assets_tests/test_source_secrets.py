"""``SOURCE_SECRET``: a credential in a trial's own files is reported to its owner (file,
line, JSON key path, kind, a redacted excerpt), for every trial, without changing its
verdict, and never shown in the clear."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import orjson
from leakproof_corpus import ALNUM, Gen
from trialkit import ROWS_FILE, Trial, build_trial, check_ids, healthy_spec

from bf_assets.ingest.discovery import discover
from bf_assets.redact import secret_spans
from bf_assets.review.options import ReviewOptions
from bf_assets.review.source_secrets import BLOCK_BYTES, MAX_FINDINGS, source_secret_findings
from bf_assets.review.trial import review_uncached

LLM = "trajectory/llm_trajectory.jsonl"
ACP = "trajectory/acp_trajectory.jsonl"


def _key(g: Gen) -> str:
    key = "sk-proj-" + g.s(48, ALNUM)
    assert secret_spans(f"OPENAI_API_KEY={key}"), "the redactor knows the key's form"
    return key


def _pat(g: Gen) -> str:
    return "ghp_" + g.s(36)


def _line_of(path: Path, needle: str) -> int:
    for n, line in enumerate(path.read_text().split("\n"), start=1):
        if needle in line:
            return n
    raise AssertionError(f"{needle!r} is not in {path}")


def _found(trial: Trial) -> list[dict[str, object]]:
    review = trial.full_review()
    text = orjson.dumps(review.to_json()).decode()
    return [f for f in json.loads(text)["findings"] if f["check"] == "SOURCE_SECRET"]


def _no_secret(found: list[dict[str, object]], *secrets: str) -> None:
    shown = json.dumps(found)
    for s in secrets:
        for piece in (s, s[-12:], s[8:20]):
            assert piece not in shown


def test_a_key_in_result_json_is_reported_with_its_line_and_key_path(runs_root: Path) -> None:
    g = Gen(41)
    key = _key(g)
    spec = healthy_spec()
    spec.result["agent_env"] = {
        "OPENAI_BASE_URL": "http://127.0.0.1:4000/v1",
        "OPENAI_API_KEY": key,
    }
    trial = spec.sync().write(runs_root)
    review = trial.full_review()
    found = [f for f in review.findings if f.check == "SOURCE_SECRET"]
    assert len(found) == 1
    f = found[0]
    assert (f.file, f.line, f.severity) == (
        "result.json",
        _line_of(trial.file("result.json"), key),
        "warning",
    )
    assert "$.agent_env.OPENAI_API_KEY" in f.message and "rotate" in f.message
    assert f.evidence is not None and "[REDACTED:" in f.evidence and "OPENAI_API_KEY" in f.evidence
    # a warning: the trial stays publishable (the export redacts the key)
    assert review.verdict == "publishable"
    _no_secret([f.to_dict() for f in found], key)


def test_every_file_the_review_reads_is_looked_at(runs_root: Path) -> None:
    g = Gen(43)
    keys = {rel: _pat(g) for rel in ("config.json", ACP, LLM, ROWS_FILE)}
    spec = healthy_spec()
    spec.config["agent_env"]["GH_TOKEN"] = keys["config.json"]
    assert spec.acp is not None and spec.llm is not None
    spec.acp[3]["text"] = f"I used the token {keys[ACP]} to push."
    trial = spec.sync().write(runs_root)
    # the LLM trajectory and the row: a tool result of the agent, in every later line
    for rel in (LLM, ROWS_FILE):
        path = trial.file(rel)
        path.write_text(path.read_text().replace('"content": "ok"', f'"content": "{keys[rel]}"'))
    found = _found(trial)
    by_file = {f["file"]: f for f in found}
    assert set(by_file) == set(keys), found
    for rel, key in keys.items():
        assert by_file[rel]["line"] == _line_of(trial.file(rel), key)
    assert by_file["config.json"]["message"].count("$.agent_env.GH_TOKEN") == 1
    assert "$.content" not in by_file[LLM]["message"]  # the path is the key's own
    assert "$.request.body.messages[" in by_file[LLM]["message"]
    _no_secret(found, *keys.values())


def test_a_secret_repeated_over_lines_is_one_finding_with_a_count(runs_root: Path) -> None:
    g = Gen(47)
    key = _pat(g)
    trial = build_trial(runs_root)
    path = trial.file(ACP)
    lines = [line for line in path.read_text().split("\n") if line.strip()]
    extra = [json.dumps({"type": "agent_message", "text": f"token {key}"})] * 3
    path.write_text("\n".join([*lines, *extra]) + "\n")
    found = _found(trial)
    assert len(found) == 1 and "(and 2 later lines of the file)" in str(found[0]["message"])
    assert found[0]["line"] == len(lines) + 1


def test_findings_are_capped_with_a_count_of_the_rest(runs_root: Path) -> None:
    g = Gen(53)
    keys = [_pat(g) for _ in range(MAX_FINDINGS + 5)]
    trial = build_trial(runs_root)
    path = trial.file(ACP)
    lines = [line for line in path.read_text().split("\n") if line.strip()]
    extra = [json.dumps({"type": "agent_message", "text": f"token {k}"}) for k in keys]
    path.write_text("\n".join([*lines, *extra]) + "\n")
    found = _found(trial)
    assert len(found) == MAX_FINDINGS
    assert str(found[-1]["message"]).endswith(
        "; 5 more credential-shaped strings in this trial's files are not listed"
    )
    _no_secret(found, *keys)


def test_a_key_name_beside_a_value_is_not_a_secret(runs_root: Path) -> None:
    """Inside a JSON file only a string of the file can hold a secret: the redactor's span
    over ``"session_id": "<rollout>"`` (key and value together) is not one."""
    spec = healthy_spec()
    spec.result["session_id"] = spec.rollout
    trial = spec.sync().write(runs_root)
    assert secret_spans(trial.file("result.json").read_text()), "the raw text has a span"
    assert _found(trial) == []


def test_a_long_line_is_scanned_in_windows(tmp_path: Path) -> None:
    """A line longer than a block (a big results.jsonl row) is read in overlapping
    windows: a secret anywhere in it, also across a block boundary, is found, on line 2."""
    g = Gen(59)
    key = _pat(g)
    trial_dir = tmp_path / "t"
    trial_dir.mkdir()
    pad = "x" * (BLOCK_BYTES - 10)
    text = "{}\n" + json.dumps({"a": pad, "b": f"token {key} here", "c": pad}) + "\n"
    (trial_dir / "big.jsonl").write_text(text)
    found = source_secret_findings(str(trial_dir), str(tmp_path), ["big.jsonl"])
    assert [(f.file, f.line) for f in found] == [("big.jsonl", 2)]
    _no_secret([f.to_dict() for f in found], key)


def test_a_trial_that_is_not_exported_is_reported_too(runs_root: Path) -> None:
    g = Gen(61)
    key = _pat(g)
    spec = healthy_spec()
    spec.result["agent_env"] = {"GH_TOKEN": key}
    trial = spec.sync().write(runs_root)
    trial.drop(ROWS_FILE)  # rejected: GATE_ROWS_MISSING
    review = review_uncached(trial.ref(), ReviewOptions())
    assert review.verdict == "rejected"
    assert {"GATE_ROWS_MISSING", "SOURCE_SECRET"} <= check_ids(review)


def test_real_fixtures_raise_none_and_a_planted_key_is_found(
    fixtures_dir: Path, tmp_path: Path
) -> None:
    """The public fixtures hold no credential: no finding (no wrong alarm on real data).
    A key planted into a copy of a real Harbor ``result.json`` is found on its line."""
    roots = [fixtures_dir / "benchflow-writer" / "jobs", fixtures_dir / "harbor-real"]
    refs = discover(roots).trials
    assert refs
    for ref in refs:
        review = review_uncached(ref, ReviewOptions())
        assert "SOURCE_SECRET" not in check_ids(review), ref.rel_path
    ref = next(r for r in refs if r.layout == "harbor")
    copy = tmp_path / "runs" / "job" / Path(ref.path).name
    shutil.copytree(ref.path, copy)
    result = copy / "result.json"
    key = _key(Gen(67))
    doc = json.loads(result.read_text())
    doc["config_env"] = {"OPENAI_API_KEY": key}
    result.write_text(json.dumps(doc, indent=2))
    planted = next(r for r in discover([tmp_path / "runs"]).trials)
    found = [
        f for f in review_uncached(planted, ReviewOptions()).findings if f.check == "SOURCE_SECRET"
    ]
    assert [(f.file, f.line) for f in found] == [("result.json", _line_of(result, key))]
    assert "$.config_env.OPENAI_API_KEY" in found[0].message
    _no_secret([f.to_dict() for f in found], key)


def test_the_evidence_shows_no_text_around_the_secret(tmp_path: Path) -> None:
    """The evidence names the kind (and the key path) only: text beside a secret may hold
    another one the raw line hides (a password in a YAML list inside a JSON string is only
    seen once the string is decoded), so no neighbouring text is copied out."""
    g = Gen(71)
    first, second = _pat(g), _pat(g)
    password = "Mekizo" + g.s(8)
    trial_dir = tmp_path / "t"
    trial_dir.mkdir()
    note = f"a={first} b={second}\npasswords:\n  - {password}\n"
    (trial_dir / "agent.jsonl").write_text(json.dumps({"content": note}) + "\n")
    found = source_secret_findings(str(trial_dir), str(tmp_path), ["agent.jsonl"])
    assert len(found) >= 2
    for f in found:
        assert f.evidence is not None and f.evidence.endswith("]")
        assert f.evidence.count("[REDACTED:") == 1
    _no_secret([f.to_dict() for f in found], first, second, password)


def test_a_secret_every_trial_repeats_is_reported_in_each(tmp_path: Path) -> None:
    """What one trial's scan remembered (its pieces, scanned once a process) never hides the
    same secret in another trial's files: each trial reports it, in each file."""
    g = Gen(73)
    key = _pat(g)
    found = []
    for name in ("a", "b"):
        root = tmp_path / name
        root.mkdir()
        spec = healthy_spec()
        spec.config["agent_env"]["GH_TOKEN"] = key
        trial = spec.sync().write(root)
        path = trial.file(LLM)
        path.write_text(path.read_text().replace('"content": "ok"', f'"content": "{key}"'))
        found.append(sorted((f["file"], f["line"]) for f in _found(trial)))
    assert found[0] == found[1] and {f for f, _ in found[0]} == {"config.json", LLM}


def test_a_large_file_is_scanned_in_its_head_only(tmp_path: Path) -> None:
    """The scan's work is bounded per file: its first SCAN_MAX_BYTES (where a run prints its
    environment), not the whole of an agent log of hundreds of MB."""
    from bf_assets.review.source_secrets import SCAN_MAX_BYTES

    g = Gen(79)
    early, late = _pat(g), _pat(g)
    trial_dir = tmp_path / "t"
    trial_dir.mkdir()
    filler = ("x" * 99 + "\n") * (SCAN_MAX_BYTES // 100 + 1)
    (trial_dir / "agent.log").write_text(f"a={early}\n{filler}b={late}\n")
    found = source_secret_findings(str(trial_dir), str(tmp_path), ["agent.log"])
    assert [f.line for f in found] == [1]
