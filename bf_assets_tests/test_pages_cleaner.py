"""The page cleaner gives exactly what ``Cleaner`` gives, its memos are bounded by bytes, and
a page rendered with it equals a page rendered with the plain cleaner."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from leakproof_corpus import corpus, look_alikes
from trialkit import healthy_spec

from bf_assets.pages import scrub as scrub_mod
from bf_assets.pages.cleaner import PageCleaner
from bf_assets.pages.scrub import Scrub
from bf_assets.redact import default_rules
from bf_assets.redact.clean import Cleaner
from bf_assets.redact.memo import ENTRY_OVERHEAD, BytesMemo

TEXTS = [p.text for p in corpus()] + look_alikes() + ["", "plain words", "/home/bob/x"]


def exact(value: Any) -> Any:
    return Cleaner().value(value)


def values(seed: int) -> list[Any]:
    """Parsed-JSON-shaped values with secrets, banned and reasoning keys, host-path and
    secret-named keys, JSON in strings, markers, reasoning parts in lists."""
    rnd = random.Random(seed)
    out: list[Any] = []
    for _ in range(300):
        t = rnd.choice(TEXTS)
        u = rnd.choice(TEXTS)
        out.append(
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": t},
                    {"type": "thinking", "thinking": u, "signature": "sig"},
                    {"type": "tool_use", "input": {"command": u, "api_key": t}},
                ],
                "reasoning_content": u,
                "function_call": None,
                "rollout_dir": "/home/alice/run",
                "password": "[REDACTED:x]",
                "token_count": 3,
                "part": {"type": "thinking", "thinking": u},  # reasoning under a plain key
                "item": {"type": "reasoning", "id": "rs_1", "summary": [t]},
                "args": json.dumps({"token": t, "gold": u}),
                t[:40]: [t, u, 1, 2.5, None, True, {"x": [u]}],
            }
        )
        out.append([t, [u, {"thought": True, "text": t}], {"nested": {"deeper": [t]}}])
        out.append({"messages": [{"role": "user", "content": t}], "tools": [{"name": u}]})
    return out


@pytest.mark.parametrize("seed", [1, 2])
def test_the_page_cleaner_gives_what_the_cleaner_gives(seed: int) -> None:
    pc = PageCleaner(default_rules())
    for v in values(seed):
        want = exact(v)
        for _ in range(2):  # the second time from the memos
            assert pc.value(v) == want
            assert pc.value(json.loads(json.dumps(v))) == want


def test_the_memo_is_bounded_by_bytes() -> None:
    memo = BytesMemo(max_bytes=10_000, max_entry=2_000)
    for i in range(1_000):
        memo.put(f"key-{i}", f"value-{i}")
        assert memo.bytes <= 10_000
    assert memo.clears > 0
    memo.put("x" * 5_000, "y")  # one entry over max_entry: refused
    assert memo.get("x" * 5_000) is None
    ascii_memo, wide_memo = BytesMemo(1 << 20, 1 << 20), BytesMemo(1 << 20, 1 << 20)
    ascii_memo.put("a" * 100, "a" * 100)
    wide_memo.put("\U0001f600" * 100, "\U0001f600" * 100)  # 4 bytes a character
    assert wide_memo.bytes > 3 * (ascii_memo.bytes - ENTRY_OVERHEAD)


def test_the_page_cleaners_memos_stay_under_their_bounds() -> None:
    pc = PageCleaner(default_rules())
    pc.memo.max_bytes = 50_000
    for i in range(2_000):
        pc.value({"i": i, "text": f"line {i} " * 20, "tools": [{"name": f"t{i}"}]})
        assert pc.memo.bytes <= 50_000
    assert pc.memo.clears > 0


def test_remembered_results_are_made_once() -> None:
    calls: list[int] = []
    s = Scrub(True)

    def make() -> str:
        calls.append(1)
        return "made"

    assert s.remember(("test", b"key"), make) == "made"
    assert s.remember(("test", b"key"), make) == "made"
    assert len(calls) == 1
    assert Scrub(True).remember(("test", b"key"), make) == "made" and len(calls) == 2
    assert Scrub(False).remember(("test", b"key"), make) == "made" and len(calls) == 3


class _ExactCleaner(Cleaner):
    """The plain cleaner behind Scrub's interface: no memo."""

    def __init__(self, rules: object = None) -> None:
        super().__init__()
        self.derived = BytesMemo(0, 0)  # remembers nothing


def test_a_page_equals_the_page_the_plain_cleaner_makes(
    runs_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from bf_assets.corpus.run import review_refs
    from bf_assets.dataset.assemble import assemble
    from bf_assets.ingest.discovery import discover
    from bf_assets.pages.trial import PageInput, render_trial
    from bf_assets.review.options import ReviewOptions

    secret = corpus()[0]
    spec = healthy_spec()
    assert spec.acp is not None and spec.llm is not None
    spec.acp[1]["text"] = f"see {secret.text} in /home/alice/notes"
    reply = spec.llm[0]["response"]["body"]["choices"][0]["message"]
    reply["reasoning_content"] = "PRIVATE-REASONING"
    reply["content"] = f"token={secret.secret}"
    spec.sync().write(runs_root)
    found = discover([str(runs_root)])
    ds = assemble(review_refs(found.trials, ReviewOptions()))
    [t] = ds.trials
    inp = PageInput(review=t)
    one = Scrub(True)
    fast = [render_trial(inp, scrub=one)[0] for _ in range(2)]  # the second from the memos
    monkeypatch.setattr(scrub_mod, "PageCleaner", _ExactCleaner)
    plain = render_trial(inp)[0]
    assert fast[0] == plain and fast[1] == plain
    assert secret.secret not in plain and "PRIVATE-REASONING" not in plain
