"""The publish scan with a memo of walked objects finds exactly what the plain walk finds.

The memo (``bf_assets.redact.scan_memo``) replays what the walk of an earlier copy of an
object attempted; these tests compare its findings, finding for finding and in order, with
the plain walk's on values full of repeated objects, leaks of every kind the scan reports
and more findings than the per-check cap keeps.
"""

from __future__ import annotations

import datetime as dt
import random
from typing import Any

import orjson
import pytest

from bf_assets.curate.scan import MAX_PER_CHECK, scan_row, scan_value
from bf_assets.redact.clean import BANNED_KEYS
from bf_assets.redact.scan_memo import MAX_KEY_BYTES, ScanMemo

GITHUB = "ghp_" + "A1b2C3d4E5f6G7h8I9j0" + "K1l2M3n4O5p6Q7r8"  # 36 characters after the prefix
AWS = "AKIA" + "Q4ZX7PL2MN8RT5VW"
HOSTS = ("/home/alice/work/notes.txt", "/Users/bob/src/app.py", "C:\\Users\\carol\\x.txt")


def _leaf(rng: random.Random, i: int) -> Any:
    pick = rng.randrange(12)
    if pick == 0:
        return f"token {GITHUB[:-2]}{i % 97:02d} in a log line"
    if pick == 1:
        return f"aws_access_key_id = {AWS[:-2]}{chr(65 + i % 26)}{chr(65 + i % 19)}"
    if pick == 2:
        return f"see {rng.choice(HOSTS)} for details"
    if pick == 3:
        return orjson.dumps({"reasoning_content": "private", "n": i}).decode()  # JSON in text
    if pick == 4:
        return rng.choice([None, True, False, i, i / 7, -0.0])
    return f"plain text {i % 13}"


def _value(rng: random.Random, depth: int, pool: list[Any], i: int) -> Any:
    if depth > 3 or rng.random() < 0.25:
        return _leaf(rng, i)
    if pool and rng.random() < 0.35:
        return rng.choice(pool)  # the same object again (as a row repeats a message)
    if rng.random() < 0.5:
        items = [_value(rng, depth + 1, pool, i + k) for k in range(rng.randrange(1, 5))]
        return items
    d: dict[str, Any] = {}
    for k in range(rng.randrange(1, 5)):
        key = rng.choice(
            [
                "role",
                "content",
                "text",
                "api_key",
                "cwd",
                "thinking",
                rng.choice(sorted(BANNED_KEYS)),
                f"k{k}",
            ]
        )
        d[key] = _value(rng, depth + 1, pool, i + k)
    if rng.random() < 0.1:
        d.update({"type": "thinking", "thinking": "hmm", "signature": "sig"})
    if rng.random() < 0.5:
        pool.append(d)
    return d


def _rows(seed: int, n: int) -> list[Any]:
    rng = random.Random(seed)
    pool: list[Any] = []
    rows = []
    for i in range(n):
        row = {"messages": [_value(rng, 1, pool, i * 10 + j) for j in range(rng.randrange(1, 6))]}
        if pool and rng.random() < 0.5:
            row["trajectory"] = [rng.choice(pool) for _ in range(rng.randrange(1, 8))]
        rows.append(orjson.loads(orjson.dumps(row)))  # JSON types only, fresh objects
    return rows


@pytest.mark.parametrize("seed", range(12))
def test_memo_findings_equal_the_walks_finding_for_finding(seed: int) -> None:
    rows = _rows(seed, 60)
    memo = ScanMemo()
    total = 0
    for n, row in enumerate(rows):
        where = f"data/rollouts/train-00000-of-00001.parquet row {n + 1}"
        plain = scan_value(row, where, {})
        remembered = scan_value(row, where, {}, memo)
        assert remembered == plain
        total += len(plain)
    assert total > 0  # the values leak: there is something to get right
    assert memo.hits > 0  # and copies were replayed, not walked


def test_the_per_check_cap_keeps_the_same_findings() -> None:
    # more distinct secrets than the cap, inside objects repeated in reverse order: which
    # ones the cap keeps depends on the walk's order, and the replay must keep the same
    # (a finding's evidence is the detector or the key: distinct secret-named keys make
    # distinct findings)
    objs = [
        {"content": f"key {GITHUB[:-3]}{i:03d} leaked", f"svc{i}_token": f"Zq8{i}vR2mK9"}
        for i in range(3 * MAX_PER_CHECK)
    ]
    rows = [
        {"a": objs, "b": list(reversed(objs)), "c": [objs[::2], objs[1::3]]},
        {"c": [objs[5:40], objs]},
    ]
    memo = ScanMemo()
    for row in rows:
        plain = scan_value(row, "w", {})
        assert len([f for f in plain if f.check == "PUBLISH_SECRET"]) == MAX_PER_CHECK
        assert scan_value(row, "w", {}, memo) == plain
    assert memo.hits > 0


def test_replayed_findings_name_the_row_they_are_in() -> None:
    obj = {"role": "user", "content": f"my token is {GITHUB}", "cwd": "/home/alice/repo"}
    memo = ScanMemo()
    first = scan_value({"messages": [obj]}, "row 1", None, memo)
    second = scan_value({"messages": [dict(obj)]}, "row 2", None, memo)
    assert memo.hits == 1 and first and len(first) == len(second)
    assert all(f.message.endswith(" in row 2") and f.file == "row 2" for f in second)
    assert [f.message.replace("row 1", "row 2") for f in first] == [f.message for f in second]


def test_only_json_objects_within_the_size_bound_are_remembered() -> None:
    assert ScanMemo.key({"a": [1, 2.0, None, True, "x"]}) is not None
    assert ScanMemo.key({"at": dt.datetime(2026, 1, 1)}) is None  # walked every time

    class Text(str):
        pass

    assert ScanMemo.key({"a": Text("x")}) is None
    assert ScanMemo.key({"a": "x" * (MAX_KEY_BYTES + 1)}) is None
    # equal values of other JSON types are other keys
    assert ScanMemo.key({"a": 1}) != ScanMemo.key({"a": 1.0}) != ScanMemo.key({"a": True})


def test_a_full_memo_starts_afresh_and_stays_exact(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("bf_assets.redact.scan_memo.MAX_BYTES", 4096)
    rows = _rows(99, 80)
    memo = ScanMemo()
    for n, row in enumerate(rows):
        assert scan_value(row, f"row {n}", {}, memo) == scan_value(row, f"row {n}", {})
    assert memo.clears > 0


def test_scan_row_passes_the_memo_to_every_json_column() -> None:
    msg = {"role": "assistant", "content": f"use {AWS}X1 now", "tool_calls": None}
    row = {
        "rollout_id": "r1",
        "messages": [msg, msg],
        "tools": orjson.dumps([{"name": "bash", "description": HOSTS[0]}]).decode(),
        "info": orjson.dumps({"cwd": HOSTS[1]}).decode(),
    }
    memo = ScanMemo()
    plain = scan_row(row, "rollouts", where="shard row 1")
    assert scan_row(row, "rollouts", where="shard row 1", memo=memo) == plain
    assert memo.hits >= 1
    assert {f.check for f in plain} >= {"PUBLISH_SECRET", "PUBLISH_HOST_PATH"}
