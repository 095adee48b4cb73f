"""Readers on pathological input: bounded work and memory, one depth cap on every parse
path, values that can always be written back, reversible name escaping.

No wall-clock time is asserted: blank lines are shown to cost a bounded number of read
calls (never a step per line), big values a bounded amount of memory.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import random
from pathlib import Path
from typing import Any

import orjson
import pytest
from trialkit import ACP_FILE, LLM_FILE, ROWS_FILE, Trial, check_ids, peak_traced_memory

from bf_assets.ingest import fastjson, readers, rowstream
from bf_assets.ingest.fastjson import LineParser
from bf_assets.ingest.readers import (
    IssueKind,
    JsonlFile,
    MiB,
    ReadLimits,
    encode_problem,
    escape_name,
    iter_jsonl,
    parse_json_bytes,
    read_document,
    undecodable,
    unescape_name,
)
from bf_assets.ingest.rowstream import read_rows

CAP = ReadLimits().max_depth
BIG = ReadLimits(max_line_bytes=8)  # every row through the huge-row path


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


class Counting(io.RawIOBase):
    """A file whose read calls are counted."""

    calls = 0

    def __init__(self, path: Any, mode: str = "rb", buffering: int = -1) -> None:
        self._fh = io.FileIO(path, "r")

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        Counting.calls += 1
        return self._fh.readinto(b)

    def read(self, n: int = -1) -> bytes:
        Counting.calls += 1
        return self._fh.read(n)

    def seek(self, pos: int, whence: int = 0) -> int:
        return self._fh.seek(pos, whence)

    def tell(self) -> int:
        return self._fh.tell()

    def close(self) -> None:
        self._fh.close()
        super().close()


@pytest.fixture
def counted_reads(monkeypatch: pytest.MonkeyPatch) -> type[Counting]:
    Counting.calls = 0
    monkeypatch.setattr(readers, "open", Counting, raising=False)
    monkeypatch.setattr(rowstream, "open", Counting, raising=False)
    return Counting


# --------------------------------------------------------------------------- blank lines


@pytest.mark.parametrize("unit", [b"\n", b"  \t\r\n", b"\n\x0b\x0c \n"])
def test_blank_lines_cost_a_bounded_number_of_reads(
    tmp_path: Path, unit: bytes, counted_reads: type[Counting]
) -> None:
    size = 24 * MiB
    p = tmp_path / "t.jsonl"
    p.write_bytes(b'{"a": 1}\n' + unit * (size // len(unit)) + b'{"a": 2}')
    state = JsonlFile()
    with peak_traced_memory() as peak:
        lines = [(x.line, x.value) for x in iter_jsonl(p, tmp_path, state)]
    n_lines = 1 + (size // len(unit)) * unit.count(b"\n")
    assert lines == [(1, {"a": 1}), (n_lines + 1, {"a": 2})]
    assert state.stats.lines == n_lines + 1 and state.stats.size == p.stat().st_size
    assert state.stats.sha256 == hashlib.sha256(p.read_bytes()).hexdigest()
    assert counted_reads.calls <= p.stat().st_size // readers.BLOCK + 4
    assert peak[0] < 4 * MiB
    counted_reads.calls = 0
    p.write_bytes(b'{"trajectory": []}\n' + unit * (size // len(unit)))
    rows = read_rows(p, tmp_path, lambda i, s: None)
    assert [(r.line, r.top, r.issues) for r in rows.rows] == [(1, {}, [])]
    assert rows.stats.lines == 1 + (size // len(unit)) * unit.count(b"\n")
    assert counted_reads.calls <= p.stat().st_size // rowstream.SPAN_BLOCK + 4


def test_a_whitespace_only_line_over_the_cap_is_blank_not_held(tmp_path: Path) -> None:
    p = tmp_path / "t.jsonl"
    p.write_bytes(b" " * (24 * MiB) + b'\n{"a": 1}\n')
    state = JsonlFile()
    with peak_traced_memory() as peak:
        lines = [(x.line, x.value, x.issues) for x in iter_jsonl(p, tmp_path, state)]
    assert lines == [(2, {"a": 1}, [])] and state.stats.lines == 2
    assert peak[0] < 4 * MiB


def _reference_lines(data: bytes, cap: int) -> tuple[list[tuple[Any, ...]], int]:
    parts = data.split(b"\n")
    last_open = bool(data) and not data.endswith(b"\n")
    if not last_open:
        parts = parts[:-1]
    out = []
    for i, line in enumerate(parts, 1):
        if not line.strip():
            continue
        length = len(line) + (0 if i == len(parts) and last_open else 1)
        if length > cap:
            out.append((i, None, length, [IssueKind.LINE_TOO_LONG]))
            continue
        value, issues = parse_json_bytes(line.strip())
        out.append((i, value, length, [x.kind for x in issues]))
    return out, len(parts) if data else 0


@pytest.mark.parametrize("block", [7, 64, MiB])
@pytest.mark.parametrize("small", [True, False])
def test_jsonl_lines_match_a_plain_split(
    tmp_path: Path, block: int, small: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(readers, "BLOCK", block)
    monkeypatch.setattr(readers, "SMALL_JSONL", MiB if small else 0)
    rnd = random.Random(block + small)
    pieces = [b"\n", b" ", b"\t", b"\r\n", b'{"a": 1}', b'{"b": "' + b"x" * 40 + b'"}', b"[1,"]
    p = tmp_path / "t.jsonl"
    for _ in range(150):
        cap = rnd.choice([5, 12, 40, 100, MiB])
        data = b"".join(rnd.choice(pieces) for _ in range(rnd.randint(0, 30)))
        p.write_bytes(b" " * rnd.randint(0, 200) + data)
        data = p.read_bytes()
        state = JsonlFile()
        got = [
            (x.line, x.value, x.size, [i.kind for i in x.issues])
            for x in iter_jsonl(p, tmp_path, state, ReadLimits(max_line_bytes=cap))
        ]
        want, n_lines = _reference_lines(data, cap)
        assert got == want, data
        assert (state.stats.size, state.stats.lines) == (len(data), n_lines)


@pytest.mark.parametrize("block", [5, 64, 4 * MiB])
def test_row_spans_match_a_plain_split(
    tmp_path: Path, block: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(rowstream, "SPAN_BLOCK", block)
    rnd = random.Random(block)
    pieces = [b"\n", b" ", b"\r\n", b'{"trajectory": [{"a": 1}]}', b'{"x": 2}']
    for _ in range(150):
        data = b"".join(rnd.choice(pieces) for _ in range(rnd.randint(0, 20)))
        stats = readers.FileStats()
        spans = list(rowstream._line_spans(io.BytesIO(data), hashlib.sha256(), stats))
        lines = data.split(b"\n")
        want = []
        pos = 0
        for i, line in enumerate(lines, 1):
            body = line.lstrip()
            if line.strip():
                want.append((i, pos + len(line) - len(body), pos + len(line)))
            pos += len(line) + 1
        n_lines = len(lines) - (1 if data.endswith(b"\n") or not data else 0)
        assert spans == want, data
        assert (stats.size, stats.lines) == (len(data), n_lines)


# --------------------------------------------------------------------------- depth cap


def _exact(p: Path, limits: ReadLimits, monkeypatch: pytest.MonkeyPatch) -> Any:
    def give_up(*_: Any, **__: Any) -> Any:
        raise fastjson.GiveUp("forced")

    with monkeypatch.context() as m:
        m.setattr(rowstream, "split_row", give_up)
        return _rows(p, limits)


def _rows(p: Path, limits: ReadLimits, *, share: bool = False) -> Any:
    """``(top, issue kinds, steps)`` of the one row of ``p`` (withdrawn steps removed)."""
    steps: list[Any] = []
    read = read_rows(
        p,
        p.parent,
        lambda i, s: steps.append(s),
        limits,
        on_discard=lambda n: steps.clear(),
        share=share,
    )
    [row] = read.rows
    return row.top, [i.kind for i in row.issues], steps


STEP = '{"prompt": [{"role": "user", "content": "hi"}], "completion": []}'


@pytest.mark.parametrize("where", ["top", "step", "tail"])
def test_the_depth_cap_is_the_same_on_every_row_path(
    tmp_path: Path, where: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    p = tmp_path / ROWS_FILE
    for depth in range(CAP - 4, CAP + 3):  # the row's own level counts
        deep = nested(depth - 1)  # a top-level value's containers start at level 2
        if where == "top":
            text = '{"a": ' + deep + ', "trajectory": [' + STEP + ", " + STEP + "]}"
        elif where == "step":
            deep = nested(depth - 3)  # a step's values start at level 4
            text = '{"trajectory": [' + STEP + ', {"prompt": [], "x": ' + deep + "}]}"
        else:
            text = '{"trajectory": [' + STEP + "], " + '"a": ' + deep + "}"
        p.write_text(text + "\n")
        small = _rows(p, ReadLimits())
        assert (small[1] == [IssueKind.TOO_DEEP]) == (depth > CAP), depth
        assert _rows(p, BIG) == small, depth
        assert _exact(p, BIG, monkeypatch) == small, depth
        ok = small[0] is not None
        if ok:
            orjson.dumps([small[0], small[2]])  # what passes can always be written back


@pytest.mark.parametrize("share", [False, True])
def test_the_depth_cap_holds_for_prompts_shared_between_steps(
    tmp_path: Path, share: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Steps repeating the previous prompt are parsed from their new messages only; a new
    message (level 5 of the row) is checked at its own level."""
    p = tmp_path / ROWS_FILE
    for extra in range(-2, 3):
        prompt: list[Any] = [{"role": "system", "content": "s" * 50}]
        steps = []
        for k in range(4):
            prompt = [*prompt, {"role": "user", "content": f"m{k}"}]
            steps.append({"prompt": list(prompt), "completion": [], "n": k})
        deep = json.loads(nested(CAP - 5 + extra))  # the message's content starts at level 6
        steps.append({"prompt": [*prompt, {"role": "user", "content": deep}], "completion": []})
        p.write_text(json.dumps({"trajectory": steps}) + "\n")
        small = _rows(p, ReadLimits())
        assert (small[1] == [IssueKind.TOO_DEEP]) == (extra > 0), extra
        assert _rows(p, BIG, share=share) == small, extra


def test_the_depth_cap_applies_to_documents_jsonl_and_llm_lines(tmp_path: Path) -> None:
    p = tmp_path / "doc.json"
    for depth, deep in ((CAP, True), (CAP + 1, False)):
        p.write_text(nested(depth))
        doc = read_document(p, tmp_path)
        assert (doc.value is not None) == deep
        value, issues = parse_json_bytes(nested(depth).encode())
        assert (value is not None) == deep and (issues == []) == deep
    # the LLM line parser's fast path checks the new messages' depth at their own level
    msgs = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]
    lines = []
    for k in range(4):
        body = {"model": "m", "messages": list(msgs), "tools": []}
        lines.append(json.dumps({"request": {"body": body}, "response": {}}).encode())
        msgs.append({"role": "user", "content": json.loads(nested(CAP - 5 + k))})
    parser = LineParser(ReadLimits())
    got = [(v is not None, [i.kind for i in iss]) for v, iss in map(parser.parse, lines)]
    want = [(v is not None, [i.kind for i in iss]) for v, iss in map(parse_json_bytes, lines)]
    # a message sits at level 5: content nested CAP - 5 reaches the cap, one more is over
    assert got == want == [(True, [])] * 2 + [(False, [IssueKind.TOO_DEEP])] * 2


def test_deep_lines_are_unreadable_on_every_trial_file(trial: Trial) -> None:
    deep = json.loads(nested(CAP))
    trial.append_line(ACP_FILE, json.dumps({"type": "agent_message", "x": deep}))
    trial.set_result("extra", deep)
    ex = trial.read_line(LLM_FILE, 2)
    ex["metadata"]["x"] = deep
    trial.write_line(LLM_FILE, 2, ex)
    found = {(f.check, f.file) for f in trial.review().findings}
    for rel in (ACP_FILE, LLM_FILE, "result.json"):
        assert ("GATE_UNREADABLE", rel) in found


# --------------------------------------------------------------------------- values


@pytest.mark.parametrize(
    "data",
    [
        b'{"a": "\\ud800", "b": NaN}',  # json reads a lone surrogate
        b'{"a": "\\udfff\\ud800", "b": [Infinity]}',
    ],
)
def test_a_value_orjson_cannot_write_is_not_returned(data: bytes) -> None:
    value, issues = parse_json_bytes(data)
    assert value is None and [i.kind for i in issues] == [IssueKind.INVALID_JSON]


def test_integers_read_like_orjson_on_the_fallback_path() -> None:
    value, issues = parse_json_bytes(b'{"a": 123456789012345678901234567890, "b": NaN}')
    assert value == {"a": orjson.loads(b"123456789012345678901234567890"), "b": None}
    assert [i.kind for i in issues] == [IssueKind.NONFINITE]
    value, issues = parse_json_bytes(b'{"a": 18446744073709551615, "b": NaN}')
    assert value == {"a": 18446744073709551615, "b": None}
    value, issues = parse_json_bytes(b'{"a": 1e400, "b": NaN}')
    assert value is None


def test_encode_problem_counts_containers_exactly() -> None:
    for room in (1, 7, CAP, 254):
        for depth, ok in ((room, True), (room + 1, False)):
            assert (encode_problem(json.loads(nested(depth)), room) is None) == ok
    assert encode_problem(2**64, 10) is not None and encode_problem("\ud800", 10) is not None


# --------------------------------------------------------------------------- huge rows


ROWS = [
    '{"a": 1, "trajectory": [' + ", ".join([STEP] * 5) + '], "b": {"c": [true, null]}}',
    '{"trajectory": [' + ", ".join([STEP] * 3) + '], "a": NaN, "b": [Infinity, 1.5]}',
    '{"trajectory": [{"prompt": "caf\xe9"}], "x": "\xff"}',
    '{"a": 1, "a": 2, "trajectory": [1, "two", [3], {"4": 4}], "z": -0.0}',
    '{"trajectory": [' + ", ".join(['{"p": "},{"}'] * 50) + "]}",  # a cut inside strings
    '{"trajectory": [' + ", ".join(['{"p": NaN}'] * 700) + "]}",
    '  {  "trajectory"  :  [  ]  ,  "k"  :  "v"  }  ',
    '{"trajectory": "not a list", "k": 1}',
    '{"n": 18446744073709551615, "m": 1e308, "trajectory": []}',
    '{"trajectory": [' + STEP + "]",  # truncated
    '{"trajectory": []} {"x": 1}',  # extra data
    "[1, 2, 3]",
    '{"trajectory": [' + STEP + ', {"x": 1e400}]}',
]


@pytest.mark.parametrize("text", ROWS)
def test_the_exact_huge_row_parser_reads_as_the_small_path(
    tmp_path: Path, text: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    p = tmp_path / ROWS_FILE
    p.write_bytes(text.encode("utf-8", "surrogateescape").replace(b"\xc3\xbf", b"\xff") + b"\n")
    small = _rows(p, ReadLimits())
    exact = _exact(p, BIG, monkeypatch)
    fast = _rows(p, BIG)
    assert fast == exact
    if isinstance(small[0], dict):
        assert exact == small
    else:  # both refuse what is not one JSON object
        assert exact[0] is None and exact[1] and exact[2] == []


def test_small_steps_in_batches_count_nonfinite_literals_once(tmp_path: Path) -> None:
    p = tmp_path / ROWS_FILE
    p.write_text('{"trajectory": [' + ", ".join(['{"p": NaN}'] * 3000) + "]}\n")
    steps: list[Any] = []
    read = read_rows(p, tmp_path, lambda i, s: steps.append(i), BIG)
    small = read_rows(p, tmp_path, lambda i, s: None)
    assert steps == list(range(3000))
    assert [i.message for i in read.rows[0].issues] == [i.message for i in small.rows[0].issues]


def test_a_huge_value_is_refused_with_bounded_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(rowstream, "STEP_CAP", 2 * MiB)
    monkeypatch.setattr(fastjson, "STEP_CAP", 2 * MiB)
    p = tmp_path / ROWS_FILE
    for text in (
        b'{"trajectory": [{"p": "' + b"x" * (40 * MiB) + b'"}]}\n',
        b'{"trajectory": [], "pad": [' + b"1, " * (10 * MiB) + b"1]}\n",
        b'{"pad": "' + b"y" * (40 * MiB) + b'", "trajectory": []}\n',
    ):
        p.write_bytes(text)
        with peak_traced_memory() as peak:
            read = read_rows(p, tmp_path, lambda i, s: None, BIG)
        assert [i.kind for i in read.rows[0].issues] == [IssueKind.LINE_TOO_LONG]
        assert read.rows[0].top is None
        assert peak[0] < 24 * MiB


def test_a_run_of_whitespace_inside_a_row_is_never_held_past_the_cap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The fast split looks past a step for the next one's start, never past the value cap;
    # the exact parser drops whitespace as it goes.
    monkeypatch.setattr(rowstream, "STEP_CAP", 2 * MiB)
    monkeypatch.setattr(fastjson, "STEP_CAP", 2 * MiB)
    p = tmp_path / ROWS_FILE
    p.write_bytes(b'{"trajectory": [' + STEP.encode() + b"," + b" " * (80 * MiB) + b"{}]}\n")
    steps: list[Any] = []
    with peak_traced_memory() as peak:
        read = read_rows(p, tmp_path, lambda i, s: steps.append(s))
    assert read.rows[0].issues == [] and len(steps) == 2
    assert peak[0] < 24 * MiB


def test_many_small_steps_give_the_small_paths_steps(tmp_path: Path) -> None:
    p = tmp_path / ROWS_FILE
    steps = [{"prompt": [{"role": "user", "content": f"m{i} }},{{"}], "n": i} for i in range(5000)]
    p.write_text(json.dumps({"trajectory": steps, "k": 1}) + "\n")
    got: list[Any] = []
    read = read_rows(p, tmp_path, lambda i, s: got.append(s), BIG, share=True)
    assert got == steps and read.rows[0].top == {"k": 1} and read.rows[0].n_steps == 5000


# --------------------------------------------------------------------------- names


def test_escape_name_is_reversible_and_leaves_plain_names_alone() -> None:
    rnd = random.Random(0)
    seen: dict[str, str] = {}
    for _ in range(3000):
        raw = bytes(rnd.choice(b"ab\\x\xff\xc3\xa9\x01 .") for _ in range(rnd.randint(0, 8)))
        name = os.fsdecode(raw)
        shown = escape_name(name)
        assert unescape_name(shown) == name
        shown.encode("utf-8")  # text without surrogates (raises otherwise)
        assert seen.setdefault(shown, name) == name  # two names never share a form
        assert undecodable(name) == (raw.decode("utf-8", "replace").encode() != raw)
    for plain in ("demo-task__aaaa1111", "2026-06-01__00-00-00", "café", ".x", "x.tmp"):
        assert escape_name(plain) is plain
    assert escape_name(os.fsdecode(b"a\xffb\\c")) == "a\\xffb\\\\c"


def test_read_messages_show_bad_names_escaped(tmp_path: Path) -> None:
    link = os.fsencode(tmp_path) + b"/gone\xff.json"
    os.symlink(b"/nonexistent", link)
    doc = read_document(os.fsdecode(link), tmp_path)
    [issue] = doc.issues
    assert "gone\\xff.json" in issue.message and issue.message.encode("utf-8")


def test_trial_with_a_bad_file_name_has_one_finding(trial: Trial) -> None:
    with open(os.fsencode(trial.path) + b"/verifier/a\xfe.txt", "wb") as fh:
        fh.write(b"1")
    review = trial.review()
    unreadable = [f for f in review.findings if f.check == "GATE_UNREADABLE"]
    assert [f.file for f in unreadable] == ["verifier/a\\xfe.txt"]
    assert check_ids(review) == {"GATE_UNREADABLE"}


@pytest.mark.parametrize("limits", [ReadLimits(max_row_steps=50), BIG, "split"])
def test_a_row_over_the_step_cap_is_refused_on_every_path(
    tmp_path: Path, limits: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    cap = 50
    if limits == "split":  # the fast split reads these steps itself, then leaves it
        limits = ReadLimits(max_line_bytes=8, max_row_steps=cap)
        step = {"prompt": [{"role": "user", "content": "x" * 2000}], "completion": []}
    else:
        limits = ReadLimits(max_line_bytes=limits.max_line_bytes, max_row_steps=cap)
        step = {"prompt": [], "completion": []}
    p = tmp_path / ROWS_FILE
    for n, refused in ((cap, False), (cap + 1, True)):
        p.write_text(json.dumps({"trajectory": [step] * n}) + "\n")
        top, kinds, steps = _rows(p, limits)
        assert (kinds == [IssueKind.TOO_LARGE]) == refused
        assert (top is None) == refused and len(steps) == (0 if refused else n)
