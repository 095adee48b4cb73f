"""Cleaning with remembered results gives exactly what cleaning afresh gives.

Curation shares cleaned long strings across a release's trials (``CleanedTexts``) and, in
one trial, the cleaned copies of repeated list-item objects (``CleanedItems``: each step's
prompt repeats the conversation so far).  These tests compare the output and every count
with a cleaner that remembers nothing, on conversations full of leaks of every kind the
cleaner handles, and check the bounds.
"""

from __future__ import annotations

import datetime as dt
import random
from pathlib import Path
from typing import Any

import orjson
import pytest
from trialkit import Trial, healthy_spec

from bf_assets.curate.rows import build_row
from bf_assets.redact import clean as C
from bf_assets.redact.clean import CleanedItems, CleanedTexts, Cleaner, CleanStats

SLACK = "xoxb-" + "2048-4096-" + "q8Zr3LmN5tY7uW1v"  # a Slack bot token's shape
STRIPE = "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc"
GITHUB = "ghp_" + "Zz9Yy8Xx7Ww6Vv5Uu4Tt" + "3Ss2Rr1Qq0Pp9Oo8"
LONG_LOG = "\n".join(f"line {i}: build step ok" for i in range(40))  # over 256 characters


def _text(rng: random.Random, n: int) -> str:
    pick = rng.randrange(9)
    if pick == 0:
        return f"export SLACK_TOKEN={SLACK}{n % 10}"
    if pick == 1:
        return f"{LONG_LOG}\ncharge with {STRIPE}"  # a long string with a secret
    if pick == 2:
        return f"opened /home/dana/project/{n % 5}.py"
    if pick == 3:
        return orjson.dumps({"cmd": "ls", "password": f"hunter{n % 3}"}).decode()
    if pick == 4:
        return LONG_LOG + f"\nfinished {n % 4}"
    if pick == 5:
        return f"pushed with {GITHUB}"
    return f"step {n % 6} done"


def _message(rng: random.Random, n: int) -> dict[str, Any]:
    role = rng.choice(["user", "assistant", "tool"])
    m: dict[str, Any] = {"role": role, "content": _text(rng, n)}
    if role == "assistant" and rng.random() < 0.5:
        m["tool_calls"] = [
            {
                "id": f"call_{n}_{k}",
                "type": "function",
                "function": {"name": "bash", "arguments": {"cmd": _text(rng, n + k)}},
            }
            for k in range(rng.randrange(1, 3))
        ]
    if rng.random() < 0.2:
        m["content"] = [
            {"type": "text", "text": _text(rng, n)},
            {"type": "thinking", "thinking": "private plan", "signature": "s1g"},
        ]
    if rng.random() < 0.3:
        m["reasoning_content"] = "the model's private reasoning"
    if rng.random() < 0.1:
        m["api_key"] = f"key-{n}"
    if rng.random() < 0.1:
        m["cwd"] = "/home/dana/project"
    return m


def _trajectory(seed: int, steps: int) -> list[dict[str, Any]]:
    """Steps whose prompts repeat the whole conversation so far, as agent rows do."""
    rng = random.Random(seed)
    history: list[dict[str, Any]] = [_message(rng, 0)]
    out = []
    for i in range(steps):
        reply = [_message(rng, 100 + i)]
        out.append({"prompt": list(history), "completion": reply, "extras": {"i": i}})
        history = history + reply + [_message(rng, 200 + i)]
    return orjson.loads(orjson.dumps(out))  # JSON types only, fresh objects


def _clean_all(values: list[Any], make: Any) -> tuple[list[Any], dict[str, Any]]:
    stats = CleanStats()
    cleaner = make(stats)
    out = [cleaner.value(v) for v in values]
    return out, stats.to_dict()


@pytest.mark.parametrize("seed", range(10))
def test_remembered_list_items_clean_exactly_as_walking_each_copy(seed: int) -> None:
    steps = _trajectory(seed, 12)
    plain, plain_stats = _clean_all(steps, lambda s: Cleaner(s))
    items = CleanedItems()
    memo, memo_stats = _clean_all(steps, lambda s: Cleaner(s, items=items))
    assert orjson.dumps(memo) == orjson.dumps(plain)
    assert memo_stats == plain_stats
    assert items.hits > 0  # the history's messages were not walked again
    assert plain_stats["reasoning"] and plain_stats["banned_keys"] and plain_stats["redactions"]


def test_a_remembered_item_counts_its_leaks_again_for_every_copy() -> None:
    leaky = {"role": "tool", "content": f"token {SLACK}", "api_key": "abc"}
    values = [[leaky], [dict(leaky)], [{**leaky}]]
    stats = CleanStats()
    items = CleanedItems()
    out = [Cleaner(stats, items=items).value(v) for v in values]
    assert items.hits == 2
    assert all(o == out[0] for o in out)
    assert SLACK not in orjson.dumps(out).decode()
    assert stats.banned_keys or stats.redactions["secret_field"] == 3
    assert sum(stats.redactions.values()) == 3 * sum(
        Cleaner(s := CleanStats()).value(values[0]) and s.redactions.values()
    )


def test_values_that_are_not_json_types_are_cleaned_without_the_memo() -> None:
    when = dt.datetime(2026, 1, 2, 3, 4, 5)

    class Sub(dict):  # type: ignore[type-arg]
        pass

    values = [
        [{"at": when, "content": f"x {GITHUB}"}, {"at": when, "content": f"x {GITHUB}"}],
        [Sub(content=f"y {GITHUB}"), Sub(content=f"y {GITHUB}")],
        [{1: "int key", "content": f"z {GITHUB}"}] * 2,
    ]
    for v in values:
        items = CleanedItems()
        s1, s2 = CleanStats(), CleanStats()
        assert Cleaner(s1, items=items).value(v) == Cleaner(s2).value(v)
        assert s1.to_dict() == s2.to_dict()
        assert items.hits == 0 and not len(items)
        assert GITHUB not in repr(Cleaner().value(v))


def test_deep_nesting_does_not_recurse_past_the_memo_depth() -> None:
    value: Any = {"content": f"deep {GITHUB}"}
    for _ in range(150):  # list-item objects nested far deeper than the memo follows
        value = [{"role": "user", "content": "x", "nested": [value]}]
    items = CleanedItems()
    s1, s2 = CleanStats(), CleanStats()
    out = Cleaner(s1, items=items).value(value)
    assert out == Cleaner(s2).value(value)
    assert s1.to_dict() == s2.to_dict() and s1.redactions
    assert len(items) <= C.ITEM_MEMO_DEPTH + 1


def test_a_full_item_memo_starts_afresh_and_stays_exact() -> None:
    steps = _trajectory(3, 10)
    items = CleanedItems(max_bytes=2_000)
    memo, memo_stats = _clean_all(steps, lambda s: Cleaner(s, items=items))
    plain, plain_stats = _clean_all(steps, lambda s: Cleaner(s))
    assert memo == plain and memo_stats == plain_stats
    assert items.bytes <= 2_000 or len(items) == 1


def test_cleaned_texts_drop_the_least_recently_used_first() -> None:
    texts = CleanedTexts(max_entries=3, max_chars=10_000)
    for k in (b"a", b"b", b"c"):
        texts.put(k, ("x" * 100, CleanStats()))
    assert texts.get(b"a") is not None  # a is now the most recent
    texts.put(b"d", ("y" * 100, CleanStats()))
    assert list(texts.entries) == [b"c", b"a", b"d"]
    assert texts.get(b"b") is None
    texts.put(b"big", ("z" * 20_000, CleanStats()))  # larger than the whole bound: not kept
    assert b"big" not in texts.entries and texts.chars == 300
    small = CleanedTexts(max_entries=100, max_chars=250)
    for i in range(5):
        small.put(bytes([i]), ("w" * 100, CleanStats()))
    assert small.chars <= 250 and list(small.entries) == [bytes([3]), bytes([4])]


@pytest.mark.parametrize("seed", range(4))
def test_texts_shared_across_cleaners_give_each_its_own_counts(seed: int) -> None:
    trials = [_trajectory(seed * 10 + t, 4) for t in range(6)]
    shared = CleanedTexts(max_entries=8, max_chars=4_000)  # small: entries are dropped too
    for steps in trials:
        s1, s2 = CleanStats(), CleanStats()
        a = [Cleaner(s1, shared).value(v) for v in steps]
        b = [Cleaner(s2).value(v) for v in steps]
        assert a == b and s1.to_dict() == s2.to_dict()
    assert shared.hits > 0 and len(shared.entries) <= 8 and shared.chars <= 4_000


def _leaky_long_trial(root: Path, rollout_id: str) -> Trial:
    """A publishable trial whose tool output is long (remembered across trials) and leaks
    a Stripe key and a host path, with reasoning in the response bodies."""
    spec = healthy_spec(rollout_id=rollout_id)
    assert spec.llm is not None
    follow = spec.llm[1]["request"]["body"]["messages"]
    follow[-1]["content"] = f"{LONG_LOG}\npaid with {STRIPE} from /home/dana/x.txt"
    for ex in spec.llm:
        ex["response"]["body"]["choices"][0]["message"]["reasoning_content"] = "private"
    spec.rebuild_steps().sync()
    return spec.write(root)


def test_build_row_is_the_same_with_texts_shared_across_trials(tmp_path: Path) -> None:
    trials = [_leaky_long_trial(tmp_path, f"{i:04d}beef") for i in range(3)]
    shared = CleanedTexts()
    for trial in trials:
        review = trial.review()
        s1, s2 = CleanStats(), CleanStats()
        with_shared = build_row(trial.path, review, stats=s1, texts=shared)
        alone = build_row(trial.path, review, stats=s2)
        assert orjson.dumps(with_shared) == orjson.dumps(alone)
        assert s1.to_dict() == s2.to_dict() and s1.redactions and s1.host_paths
        assert STRIPE not in orjson.dumps(with_shared).decode()
    assert shared.hits > 0  # the later trials' long output was cleaned once
