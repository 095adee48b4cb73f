"""A small JSONL file read whole gives what the block reader gives: the same lines, line
numbers, lengths, issues, digest and inventory stats (blank and whitespace-only lines, no
final newline, CRLF, over-long lines, invalid JSON, invalid UTF-8, deep nesting)."""

from __future__ import annotations

import hashlib
import io
import random
from pathlib import Path

import pytest

from bf_assets.ingest.readers import (
    DEFAULT_LIMITS,
    JsonlFile,
    ReadLimits,
    _jsonl_lines,
    _memory_lines,
    iter_jsonl,
    parse_json_bytes,
)

PIECES = [
    b'{"a": 1}',
    b"[1, 2, 3]",
    b'{"text": "x\\ny"}',
    b"   ",
    b"\t",
    b"",
    b"\r",
    b"not json",
    b'{"a": NaN}',
    b'{"s": "\xff\xfe"}',
    b"[" * 140 + b"]" * 140,
    b'{"long": "' + b"z" * 300 + b'"}',
    b"\x0b\x0c",
    b"42",
]


def _both(data: bytes, cap: int, limits: ReadLimits = DEFAULT_LIMITS) -> tuple[object, object]:
    out = []
    for run in ("block", "memory"):
        state = JsonlFile()
        digest = hashlib.sha256()
        if run == "block":
            lines = _jsonl_lines(io.BytesIO(data), digest, state, cap, limits, parse_json_bytes)
        else:
            lines = _memory_lines(data, digest, state, cap, limits, parse_json_bytes)
        got = [(x.line, x.value, x.size, x.issues) for x in lines]
        out.append((got, digest.hexdigest(), state.stats.size, state.stats.lines))
    return out[0], out[1]


@pytest.mark.parametrize("seed", range(300))
def test_memory_lines_match_the_block_reader(seed: int) -> None:
    rng = random.Random(seed)
    parts = [rng.choice(PIECES) for _ in range(rng.randrange(0, 9))]
    seps = [rng.choice([b"\n", b"\r\n", b"\n\n", b" \n", b"\n   \n"]) for _ in parts]
    data = b"".join(p + s for p, s in zip(parts, seps, strict=True))
    if rng.random() < 0.4:
        data = data.rstrip(b"\n")  # no final newline
    cap = rng.choice([8, 40, 200, DEFAULT_LIMITS.max_line_bytes])
    block, memory = _both(data, cap)
    assert memory == block


@pytest.mark.parametrize(
    "data",
    [b"", b"\n", b"\n\n  \n", b"  ", b'{"a":1}', b'{"a":1}\n', b'\n\n{"a":1}  \n \n', b"x\n"],
)
def test_memory_lines_edge_cases(data: bytes) -> None:
    block, memory = _both(data, 16)
    assert memory == block


def test_iter_jsonl_reads_a_small_file_from_memory(tmp_path: Path) -> None:
    p = tmp_path / "t.jsonl"
    p.write_bytes(b'{"a": 1}\n\n  \nbad\n{"b": 2}')
    state = JsonlFile()
    got = [(x.line, x.value) for x in iter_jsonl(p, tmp_path, state)]
    assert got == [(1, {"a": 1}), (4, None), (5, {"b": 2})]
    assert (state.stats.size, state.stats.lines, state.stats.read) == (25, 5, True)
    assert state.stats.sha256 == hashlib.sha256(p.read_bytes()).hexdigest()
