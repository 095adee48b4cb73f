"""The cleaner's one-loop copy and its per-key rules looked up once
(``bf_assets.redact.clean``) give what the rules written out for every key give: the same
cleaned value and the same counts."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from bf_assets.redact import PLACEHOLDER, clean
from bf_assets.redact.clean import (
    BANNED_KEYS,
    HOST_PATH_KEYS,
    HOST_PATH_PLACEHOLDER,
    Cleaner,
    CleanStats,
    banned_category,
    reasoning_key_kind,
    secret_named,
)
from bf_assets.redact.engine import is_marker
from bf_assets_tests.leakproof_corpus import corpus, look_alikes


def _reference(value: Any, stats: CleanStats) -> Any:
    """Every rule applied to every key as it reads, by plain recursion."""
    cleaner = Cleaner(stats)
    if isinstance(value, str):
        return cleaner.text(value)
    if isinstance(value, list):
        kept = []
        for v in value:
            kind = clean.reasoning_kind(v)
            if kind is not None:
                stats.reasoning[kind] += 1
                continue
            kept.append(_reference(v, stats))
        return kept
    if not isinstance(value, dict):
        return value
    out: dict[Any, Any] = {}
    for k, v in value.items():
        if k in BANNED_KEYS:
            stats.banned_keys[banned_category(k)] += 1
            continue
        if isinstance(k, str) and (kind := reasoning_key_kind(value, k, v)) is not None:
            stats.reasoning[kind] += 1
            continue
        nk = cleaner.text(k) if isinstance(k, str) else k
        if k in HOST_PATH_KEYS and clean._is_abs_path(v):
            stats.host_paths[HOST_PATH_PLACEHOLDER] += 1
            out[nk] = HOST_PATH_PLACEHOLDER
        elif isinstance(k, str) and isinstance(v, str) and v and secret_named(k, v):
            if v.startswith(clean._MARKERS) or is_marker(v):
                out[nk] = v
            else:
                stats.redactions["secret_field"] += 1
                out[nk] = PLACEHOLDER.format(kind="secret_field")
        else:
            out[nk] = _reference(v, stats)
    return out


def _values() -> list[Any]:
    planted = [p.text for p in corpus()]
    long_secret_key = "x" * 300 + "_password"
    message = {
        "role": "assistant",
        "content": planted[0],
        "reasoning": "chain of thought",
        "thinking": "",
        "tool_calls": [{"function": {"arguments": orjson.dumps({"db_pass": "pw1"}).decode()}}],
    }
    return [
        {
            "messages": [message, {"role": "user", "content": "/home/ann/x"}],
            "parts": [{"type": "thinking", "thinking": "t", "signature": "s"}, {"thought": True}],
            "rollout_dir": "/srv/x",
            "effective_skills_dir": "relative/not/a/host/path",
            "password": "hunter2hunter2",
            "api_key": "[REDACTED:openai]",
            "db_password_prod": "-starts-with-a-dash",
            "secret_name": "word",
            "n_tokens": "12",
            long_secret_key: "value",
            "reasoning_details": [{"text": "r"}],
            "encrypted_content": "abc",
            "verifier_output": "gold",
            "nested": {"deeper": [{"token": planted[1]}, planted[2], 3, None]},
            "secrets": planted,
            "look_alikes": look_alikes(),
        },
        {1: "int key", 2: {"password": "x"}, "ok": True},  # keys that are not strings
        [{"type": "reasoning", "id": "rs_1", "summary": []}, "after"],
        "a bare string with /Users/bob/file and " + planted[3],
        [],
        {},
    ]


@pytest.mark.parametrize("value", _values())
def test_the_cleaner_gives_what_every_rule_on_every_key_gives(value: Any) -> None:
    got_stats, want_stats = CleanStats(), CleanStats()
    got = Cleaner(got_stats).value(value)
    want = _reference(value, want_stats)
    assert got == want
    assert got_stats.to_dict() == want_stats.to_dict()


def test_the_rules_are_in_force() -> None:
    stats = CleanStats()
    got = Cleaner(stats).value(_values()[0])
    assert "verifier_output" not in got and "reasoning_details" not in got
    assert got["rollout_dir"] == HOST_PATH_PLACEHOLDER
    assert got["password"] != "hunter2hunter2" and got["secret_name"] != "word"
    assert got["db_password_prod"] == "-starts-with-a-dash"  # not a word: kept
    assert stats.n_reasoning >= 3


def test_counts_of_one_string_are_never_reused_for_another() -> None:
    planted = [p.text for p in corpus()]
    first_out, first = clean._clean_string("key " + planted[0])
    before = first.to_dict()
    assert first.n_redactions >= 1
    for s in ("nothing here", "still nothing", "/home/ann/notes " + planted[1]):
        out, delta = clean._clean_string(s)
        assert delta is not first
        if delta is clean._NO_CHANGE:
            assert out == s
    assert first.to_dict() == before  # what the first string counted stays as it was
    assert all(spare.empty() for spare in clean._SPARE)
