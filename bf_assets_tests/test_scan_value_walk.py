"""``scan_value``'s one-loop walk (``bf_assets.curate.scan``) finds exactly what a plain
recursive-by-stack walk of every key and string finds, in the same order, so the per-check cap
keeps the same findings."""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import orjson
import pytest

from bf_assets.curate import scan
from bf_assets.findings import Finding, finding
from bf_assets.redact import is_secret_key
from bf_assets.redact.clean import (
    BANNED_KEYS,
    HOST_PATH_KEYS,
    parse_json_string,
    reasoning_kind,
    reasoning_name_kind,
)
from bf_assets_tests.leakproof_corpus import corpus, look_alikes


def _walk(value: Any) -> Iterator[tuple[str | None, Any, dict[str, Any] | None]]:
    stack: list[tuple[str | None, Any, dict[str, Any] | None]] = [(None, value, None)]
    while stack:
        key, v, parent = stack.pop()
        yield key, v, parent
        if isinstance(v, dict):
            stack.extend((k, x, v) for k, x in v.items())
        elif isinstance(v, list):
            stack.extend((None, x, None) for x in v)
        elif isinstance(v, str):
            inner = parse_json_string(v)
            if inner is not None:
                stack.append((None, inner, None))


def _reference(value: Any, where: str) -> list[Finding]:
    """The checks written out one node at a time, with no cache of any kind."""
    out: list[Finding] = []
    seen: set[tuple[str, str]] = set()

    def add(check: str, message: str, evidence: str) -> None:
        if (check, evidence) in seen or sum(f.check == check for f in out) >= scan.MAX_PER_CHECK:
            return
        seen.add((check, evidence))
        out.append(finding(check, message, file=where, evidence=evidence))

    for key, v, parent in _walk(value):
        if key is not None:
            if key in BANNED_KEYS:
                add(scan.BANNED_KEY, f"banned key {key!r} in {where}", key)
            elif parent is not None and (kind := reasoning_name_kind(parent, key, v)):
                add(scan.BANNED_KEY, f"private reasoning ({kind}) in {where}", kind)
            kinds, paths, thoughts = scan.text_hits(key)
            for kind in kinds:
                add(scan.SECRET, f"detect-secrets {kind} fires in a key in {where}", kind)
            for ph in paths:
                add(
                    scan.HOST_PATH, f"an absolute host path ({ph}) survives in a key in {where}", ph
                )
            for kind in thoughts:
                add(
                    scan.REASONING,
                    f"inline private reasoning ({kind}) survives in a key in {where}",
                    kind,
                )
            if key in HOST_PATH_KEYS and isinstance(v, str) and v.startswith(("/", "~")):
                add(scan.HOST_PATH, f"host path under {key!r} in {where}", key)
            if is_secret_key(key) and isinstance(v, str) and v and not scan._is_marker(v):
                add(scan.SECRET, f"value of secret-named key {key!r} in {where}", f"key {key}")
        if isinstance(v, dict) and (kind := reasoning_kind(v)):
            add(scan.BANNED_KEY, f"private reasoning ({kind}) in {where}", kind)
        if isinstance(v, str) and v:
            kinds, paths, thoughts = scan.text_hits(v)
            for kind in kinds:
                add(scan.SECRET, f"detect-secrets {kind} fires in {where}", kind)
            for ph in paths:
                add(scan.HOST_PATH, f"an absolute host path ({ph}) survives in {where}", ph)
            for kind in thoughts:
                add(scan.REASONING, f"inline private reasoning ({kind}) survives in {where}", kind)
    return out


def _values() -> list[Any]:
    planted = [p.text for p in corpus()]
    rng = random.Random(3)
    long_key = "k" * 300 + "_api_key"
    many_paths = [f"/home/user{i}/work/file{i}.py" for i in range(40)]
    many_keys = {f"service{i}_api_key": f"value-{i}" for i in range(30)}  # over the cap
    message = {
        "role": "assistant",
        "content": "done",
        "reasoning": "private chain of thought",
        "tool_calls": [{"function": {"arguments": orjson.dumps({"cmd": planted[0]}).decode()}}],
    }
    doc: dict[str, Any] = {
        "messages": [message, {"role": "user", "content": planted[1]}],
        "blocks": [{"type": "thinking", "thinking": "hmm", "signature": "x"}, {"thought": True}],
        "rollout_dir": "/srv/runs/job1",
        "password": "hunter2hunter2",
        "api_key": "[REDACTED:openai]",
        "reasoning_details": [{"text": "secret reasoning"}],
        long_key: planted[2],
        "nested": orjson.dumps({"inner": {"token": planted[3], "path": "/Users/ann/x"}}).decode(),
        "paths": many_paths,
        "secrets": planted,
        "look_alikes": look_alikes(),
        "numbers": [1, 2.5, None, True, {"": ""}],
        "keys": many_keys,
        "inline": ["<think>\nprivate plan\n</think>\n\nanswer", "plan it</seed:think>\nok"],
        "<|channel|>analysis<|message|>a key that reasons<|end|>": 1,
    }
    shuffled = planted[:]
    rng.shuffle(shuffled)
    return [
        doc,
        [doc, doc],  # repeated text: cached after the first
        "plain text with /home/bob/secret and " + planted[4],
        orjson.dumps(doc).decode(),  # a whole document inside a string
        {"a": {"b": {"c": [shuffled, {"tool_calls": many_paths}]}}},
        [],
        "",
        {},
    ]


@pytest.mark.parametrize("value", _values())
def test_the_one_loop_walk_finds_what_the_plain_walk_finds(value: Any) -> None:
    want = _reference(value, "here")
    assert [(f.check, f.message, f.evidence) for f in scan.scan_value(value, "here", {})] == [
        (f.check, f.message, f.evidence) for f in want
    ]
    # and again with the caches warm (keys, short strings, the shared text cache)
    cache: scan.TextCache = {}
    scan.scan_value(value, "here", cache)
    got = scan.scan_value(value, "here", cache)
    assert [(f.check, f.message, f.evidence) for f in got] == [
        (f.check, f.message, f.evidence) for f in want
    ]


def test_the_walk_reaches_what_the_checks_are_for() -> None:
    found = scan.scan_value(_values()[0], "here")
    checks = {f.check for f in found}
    assert {scan.SECRET, scan.HOST_PATH, scan.BANNED_KEY} <= checks
    assert sum(f.check == scan.SECRET for f in found) == scan.MAX_PER_CHECK  # the cap holds
