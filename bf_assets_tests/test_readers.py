"""Bounded readers: every bad input becomes a finding, none raises, big lines are not held.

Unit level (``bf_assets.ingest.readers``) and trial level (the finding the
gate reports for the same input).
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import pytest
from trialkit import (
    ACP_FILE,
    LLM_FILE,
    ROWS_FILE,
    Trial,
    check_ids,
    deadline,
    peak_traced_memory,
)

from bf_assets.ingest.readers import (
    UNREADABLE_KINDS,
    IssueKind,
    JsonlFile,
    JsonlLine,
    MiB,
    ReadLimits,
    hash_file,
    iter_jsonl,
    parse_json_bytes,
    read_document,
    resolve_file,
)
from bf_assets.ingest.rowstream import read_rows

TWENTY_MB = 20 * 1024 * 1024


DEFAULT = ReadLimits()


def read_lines(
    path: Path, root: Path, limits: ReadLimits = DEFAULT
) -> tuple[list[JsonlLine], JsonlFile]:
    state = JsonlFile()
    return list(iter_jsonl(path, root, state, limits)), state


def kinds(issues: list[Any]) -> list[IssueKind]:
    return [i.kind for i in issues]


def write_big_line_file(path: Path) -> None:
    with open(path, "wb") as fh:
        fh.write(b'{"type": "user_message", "text": "x"}\n')
        fh.write(b'{"type": "agent_message", "text": "' + b"a" * TWENTY_MB + b'"}\n')
        fh.write(b'{"type": "agent_message", "text": "after"}')


# --------------------------------------------------------------------------- value parsing


def test_truncated_value_is_invalid_json() -> None:
    value, issues = parse_json_bytes(b'{"type": "agent_mess')
    assert value is None and kinds(issues) == [IssueKind.INVALID_JSON]


def test_invalid_utf8_in_a_string_is_replaced_with_a_warning() -> None:
    value, issues = parse_json_bytes(b'{"text": "caf\xe9 ok"}')
    assert value == {"text": "caf\ufffd ok"}
    assert kinds(issues) == [IssueKind.REPLACED_UTF8]


def test_invalid_utf8_that_prevents_parsing() -> None:
    value, issues = parse_json_bytes(b'{"text": \xff}')
    assert value is None and kinds(issues) == [IssueKind.INVALID_UTF8]


def test_nonfinite_literals_read_as_null() -> None:
    value, issues = parse_json_bytes(b'{"a": NaN, "b": [Infinity, -Infinity], "c": 1.5}')
    assert value == {"a": None, "b": [None, None], "c": 1.5}
    assert kinds(issues) == [IssueKind.NONFINITE]
    assert "3" in issues[0].message


@pytest.mark.parametrize(
    "data",
    [
        b"[" * 5000 + b"]" * 5000,
        b'{"a":' * 5000 + b"1" + b"}" * 5000,
        b"[" * 5000 + b"NaN" + b"]" * 5000,  # the NaN fallback parser must not recurse either
    ],
)
def test_deep_nesting_is_too_deep_not_an_exception(data: bytes) -> None:
    value, issues = parse_json_bytes(data)
    assert value is None and kinds(issues) == [IssueKind.TOO_DEEP]


def test_deep_nesting_with_invalid_utf8_is_unreadable() -> None:
    # reported as INVALID_UTF8 (the re-parse after replacement hits the depth limit);
    # both kinds are GATE_UNREADABLE on the trial
    value, issues = parse_json_bytes(b"[" * 5000 + b'"\xff"' + b"]" * 5000)
    assert value is None and len(issues) == 1
    assert issues[0].kind in UNREADABLE_KINDS


def test_a_lower_depth_cap_is_enforced() -> None:
    limits = ReadLimits(max_depth=64)
    value, issues = parse_json_bytes(b"[" * 65 + b"]" * 65, limits)
    assert value is None and kinds(issues) == [IssueKind.TOO_DEEP]
    value, issues = parse_json_bytes(b"[" * 64 + b"]" * 64, limits)
    assert value is not None and issues == []


# --------------------------------------------------------------------------- JSONL lines


def test_jsonl_keeps_physical_line_numbers_and_skips_blanks(tmp_path: Path) -> None:
    p = tmp_path / "a.jsonl"
    p.write_bytes(b'{"a": 1}\n\n  \n{"a": 2\n{"a": 3}')
    lines, state = read_lines(p, tmp_path)
    assert [(x.line, x.value) for x in lines] == [(1, {"a": 1}), (4, None), (5, {"a": 3})]
    assert kinds(lines[1].issues) == [IssueKind.INVALID_JSON] and lines[1].issues[0].line == 4
    assert state.stats.lines == 5 and state.stats.size == p.stat().st_size
    assert state.stats.sha256 == hashlib.sha256(p.read_bytes()).hexdigest()


def test_line_over_the_default_cap_is_skipped_and_reading_goes_on(tmp_path: Path) -> None:
    p = tmp_path / "a.jsonl"
    write_big_line_file(p)
    lines, state = read_lines(p, tmp_path)
    assert [x.line for x in lines] == [1, 2, 3]
    assert lines[1].value is None and kinds(lines[1].issues) == [IssueKind.LINE_TOO_LONG]
    assert lines[2].value == {"type": "agent_message", "text": "after"}
    assert state.stats.size == p.stat().st_size


def test_line_over_a_small_cap_is_drained_not_held(tmp_path: Path) -> None:
    p = tmp_path / "a.jsonl"
    write_big_line_file(p)
    with peak_traced_memory() as peak:
        lines, _ = read_lines(p, tmp_path, ReadLimits(max_line_bytes=MiB))
    assert kinds(lines[1].issues) == [IssueKind.LINE_TOO_LONG]
    assert peak[0] < 8 * 1024 * 1024


def test_line_over_the_default_cap_is_not_held(tmp_path: Path) -> None:
    p = tmp_path / "a.jsonl"
    write_big_line_file(p)
    with peak_traced_memory() as peak:
        read_lines(p, tmp_path)
    assert peak[0] < 8 * 1024 * 1024


def test_big_line_gives_unreadable_on_the_trial(trial: Trial) -> None:
    big = {"type": "agent_message", "text": "a" * TWENTY_MB}
    trial.replace_line(ACP_FILE, 4, json.dumps(big))
    found = [f for f in trial.review().findings if f.check == "GATE_UNREADABLE"]
    assert [(f.file, f.line) for f in found] == [(ACP_FILE, 4)]


def test_truncated_lines_give_the_files_invalid_id(trial: Trial) -> None:
    for rel in (ACP_FILE, LLM_FILE):
        trial.write_text(rel, trial.file(rel).read_text()[:-12])
    trial.write_text(ROWS_FILE, trial.file(ROWS_FILE).read_text()[:-12])
    trial.write_text("result.json", trial.file("result.json").read_text()[:-12])
    review = trial.review()
    by_file = {(f.file, f.check) for f in review.findings}
    assert (ACP_FILE, "GATE_ACP_INVALID") in by_file
    assert (LLM_FILE, "GATE_LLM_INVALID") in by_file
    assert (ROWS_FILE, "GATE_ROWS_INVALID") in by_file
    assert ("result.json", "GATE_RESULT_INVALID") in by_file


# --------------------------------------------------------------------------- trial level


@pytest.mark.parametrize("rel", ["result.json", ACP_FILE, ROWS_FILE])
def test_replaced_utf8_is_a_warning_and_the_trial_stays_publishable(trial: Trial, rel: str) -> None:
    needle = b'"demo-task__aaaa1111"' if rel == "result.json" else b'"Done."'
    data = trial.file(rel).read_bytes()
    trial.write_bytes(rel, data.replace(needle, needle[:-1] + b'\xff"', 1))
    review = trial.review()
    assert [(f.check, f.file) for f in review.findings] == [("READ_INVALID_UTF8", rel)]
    assert review.verdict == "publishable"


@pytest.mark.parametrize("rel", ["result.json", ACP_FILE, LLM_FILE])
def test_invalid_utf8_preventing_parse_is_unreadable(trial: Trial, rel: str) -> None:
    if rel == "result.json":
        data = trial.file(rel).read_bytes().replace(b'"error": null', b'"error": \xff')
        trial.write_bytes(rel, data)
    else:
        trial.write_bytes(rel, trial.file(rel).read_bytes() + b'\n{"type": \xfe}')
    found = {(f.check, f.file) for f in trial.review().findings}
    assert ("GATE_UNREADABLE", rel) in found


def test_nan_reward_is_read_as_null(trial: Trial) -> None:
    data = trial.file("result.json").read_bytes().replace(b'"reward": 1.0', b'"reward": NaN')
    trial.write_bytes("result.json", data)
    ids = check_ids(trial.review())
    assert {"READ_NONFINITE", "GATE_REWARD_MISSING"} <= ids


@pytest.mark.parametrize(
    ("rel", "check"),
    [
        (ACP_FILE, "GATE_ACP_EMPTY"),
        (LLM_FILE, "GATE_LLM_EMPTY"),
        (ROWS_FILE, "GATE_ROWS_COUNT"),  # no ROWS_EMPTY id: an empty file holds 0 rows
        ("result.json", "GATE_RESULT_INVALID"),
    ],
)
def test_empty_file(trial: Trial, rel: str, check: str) -> None:
    trial.write_text(rel, "")
    assert check in trial.checks()


def test_document_over_the_cap(tmp_path: Path) -> None:
    p = tmp_path / "result.json"
    p.write_text(json.dumps({"pad": "x" * 4096}))
    doc = read_document(p, tmp_path, ReadLimits(max_document_bytes=1024))
    assert doc.present and doc.value is None
    assert kinds(doc.issues) == [IssueKind.TOO_LARGE]


def test_document_stats(tmp_path: Path) -> None:
    p = tmp_path / "config.json"
    p.write_text('{\n  "a": 1\n}')
    doc = read_document(p, tmp_path)
    assert doc.ok and doc.value == {"a": 1}
    assert (doc.stats.size, doc.stats.lines) == (12, 3)
    assert doc.stats.sha256 == hashlib.sha256(p.read_bytes()).hexdigest()


# --------------------------------------------------------------------------- links and special files


def outside_file(tmp_path: Path, name: str, text: str) -> Path:
    target = tmp_path / "outside" / name
    target.parent.mkdir(exist_ok=True)
    target.write_text(text)
    return target


def test_link_leaving_the_root_is_never_followed(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    target = outside_file(tmp_path, "acp.jsonl", '{"type": "agent_message"}')
    os.symlink(target, root / "acp.jsonl")
    lines, state = read_lines(root / "acp.jsonl", root)
    assert lines == [] and state.present
    assert kinds(state.issues) == [IssueKind.LINK_ESCAPE]
    assert state.stats.size == 0 and state.stats.sha256 is None
    doc = read_document(root / "acp.jsonl", root)
    assert doc.value is None and kinds(doc.issues) == [IssueKind.LINK_ESCAPE]
    stats, issue = hash_file(root / "acp.jsonl", root)
    assert stats is None and issue is not None and issue.kind is IssueKind.LINK_ESCAPE


def test_link_inside_the_root_is_followed(tmp_path: Path) -> None:
    (tmp_path / "real.json").write_text('{"a": 1}')
    os.symlink(tmp_path / "real.json", tmp_path / "link.json")
    assert read_document(tmp_path / "link.json", tmp_path).value == {"a": 1}


def test_dangling_link_is_reported_not_raised(tmp_path: Path) -> None:
    os.symlink(tmp_path / "nowhere.json", tmp_path / "result.json")
    real, _, issue = resolve_file(tmp_path / "result.json", tmp_path)
    assert real is None and issue is not None and issue.kind is IssueKind.MISSING


def test_parent_directory_link_leaving_the_root_is_not_followed(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    target = outside_file(tmp_path, "acp.jsonl", '{"type": "agent_message"}')
    os.symlink(target.parent, root / "trajectory")
    lines, state = read_lines(root / "trajectory" / "acp.jsonl", root)
    assert lines == [] and kinds(state.issues) == [IssueKind.LINK_ESCAPE]


def test_link_leaving_the_root_on_a_trial(trial: Trial, tmp_path: Path) -> None:
    target = outside_file(tmp_path, "result.json", trial.file("result.json").read_text())
    trial.drop("result.json")
    os.symlink(target, trial.file("result.json"))
    review = trial.review()
    assert ("GATE_UNREADABLE", "result.json") in {(f.check, f.file) for f in review.findings}
    assert review.verdict == "rejected"


def test_fifo_is_never_opened(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    with deadline():
        lines, state = read_lines(fifo, tmp_path)
        doc = read_document(fifo, tmp_path)
        rows = read_rows(fifo, tmp_path, lambda i, s: None)
        stats, issue = hash_file(fifo, tmp_path)
    assert lines == [] and kinds(state.issues) == [IssueKind.SPECIAL_FILE]
    assert kinds(doc.issues) == [IssueKind.SPECIAL_FILE]
    assert rows.rows == [] and kinds(rows.issues) == [IssueKind.SPECIAL_FILE]
    assert stats is None and issue is not None and issue.kind is IssueKind.SPECIAL_FILE


@pytest.mark.parametrize("rel", ["result.json", ACP_FILE, LLM_FILE, ROWS_FILE])
def test_fifo_on_a_trial_is_unreadable(trial: Trial, rel: str) -> None:
    trial.drop(rel)
    os.mkfifo(trial.file(rel))
    with deadline():
        review = trial.review()
    assert ("GATE_UNREADABLE", rel) in {(f.check, f.file) for f in review.findings}


def test_directory_resolution_matches_realpath_through_links_and_deep_trees(
    tmp_path: Path,
) -> None:
    from bf_assets.ingest.readers import _real_dir, clear_path_cache

    real = tmp_path / "real"
    deep = real.joinpath(*[f"d{i}" for i in range(300)])  # deeper than any recursion limit
    deep.mkdir(parents=True)
    (tmp_path / "link").symlink_to(real)
    via_link = tmp_path / "link" / "d0" / "d1"
    clear_path_cache()
    for d in (deep, via_link, tmp_path / "link", deep.parent):
        assert _real_dir(str(d)) == os.path.realpath(d)
    # a directory swapped for a link is seen once the cache is cleared for a new review
    (real / "d0" / "d1").rename(real / "moved")
    (real / "d0" / "d1").symlink_to(tmp_path)
    clear_path_cache()
    assert _real_dir(str(via_link)) == os.path.realpath(via_link) == str(tmp_path)


def test_directories_resolved_on_the_way_are_kept(tmp_path: Path, monkeypatch) -> None:
    """A trial directory resolves its job directory too: the job's next trial costs one
    ``lstat`` (its own), and every kept answer is realpath's."""
    from bf_assets.ingest import readers

    (tmp_path / "real").mkdir()
    (tmp_path / "runs").symlink_to(tmp_path / "real")
    job = tmp_path / "runs" / "job"
    for name in ("t1", "t2"):
        (job / name / "trajectory").mkdir(parents=True)
    readers.clear_path_cache()
    assert readers._real_dir(str(job / "t1" / "trajectory")) == os.path.realpath(
        job / "t1" / "trajectory"
    )
    seen: list[str] = []
    real_lstat = os.lstat

    def counting(path: str, *a: object, **k: object) -> os.stat_result:
        seen.append(path)
        return real_lstat(path, *a, **k)

    monkeypatch.setattr(readers.os, "lstat", counting)
    got = readers._real_dir(str(job / "t2"))
    assert seen == [str(job / "t2")]
    monkeypatch.undo()
    assert got == os.path.realpath(job / "t2")
    for d in (job, job / "t1", tmp_path / "runs"):
        assert readers._real_dir(str(d)) == os.path.realpath(d)


def test_read_upto_reads_past_a_stale_size_and_stops_at_the_limit(tmp_path: Path) -> None:
    from bf_assets.ingest.readers import read_upto

    p = tmp_path / "grew.json"
    p.write_bytes(b"x" * 5000)
    assert read_upto(str(p), 10, 100_000) == b"x" * 5000  # the file grew since its stat
    assert read_upto(str(p), 5000, 300) == b"x" * 300  # never more than the limit
    assert read_upto(str(p), 5000, 5001) == b"x" * 5000
    p.write_bytes(b"")
    assert read_upto(str(p), 0, 10) == b""


def _old_value_issue(value: Any, limits: ReadLimits, level: int, data: Any) -> object:
    """``value_issue`` as it was: the brackets of ``data`` counted with ``bytes.count``."""
    from bf_assets.ingest.readers import depth_cap, value_issue

    room = depth_cap(limits) - level + 1
    raw = data if isinstance(data, bytes | bytearray) else bytes(data)
    if raw.count(b"[") + raw.count(b"{") < room:
        return None
    return value_issue(value, limits, level)


def _nested(depth: int, pad: int) -> Any:
    v: Any = "x" * pad
    for i in range(depth):
        v = [v] if i % 2 else {"k": v}
    return v


@pytest.mark.parametrize("pad", [0, 100, 1500, 3000, 70_000, 1_100_000])  # both ways
@pytest.mark.parametrize("depth", [1, 60, 126, 127, 128, 129, 200])
@pytest.mark.parametrize("level", [1, 3])
def test_value_issue_counting_brackets_in_one_pass_answers_the_same(
    pad: int, depth: int, level: int
) -> None:
    from bf_assets.ingest.readers import value_issue

    limits = ReadLimits()
    value = _nested(depth, pad)
    try:
        data = json.dumps(value).encode()
    except RecursionError:  # pragma: no cover - json's own limit is far above these
        pytest.skip("too deep for json")
    for piece in (data, memoryview(data), b"{" + data[1:]):  # the last: brackets added
        assert value_issue(value, limits, level, piece) == _old_value_issue(
            value, limits, level, piece
        )
    # brackets inside strings count for the old look but never change the answer
    texty = {"t": "{[" * (pad // 2 + 200), "v": _nested(min(depth, 120), 0)}
    raw = json.dumps(texty).encode()
    assert value_issue(texty, limits, level, raw) == _old_value_issue(texty, limits, level, raw)


def test_parse_json_bytes_depth_cap_at_every_size() -> None:
    limits = ReadLimits(max_depth=8)
    for pad in (0, 3000, 70_000, 1_100_000):
        ok = json.dumps(_nested(8, pad)).encode()
        deep = json.dumps(_nested(9, pad)).encode()
        assert parse_json_bytes(ok, limits)[1] == []
        value, issues = parse_json_bytes(deep, limits)
        assert value is None and [i.kind for i in issues] == [IssueKind.TOO_DEEP]


def test_a_root_swapped_for_a_link_is_seen_after_the_cache_is_cleared(tmp_path: Path) -> None:
    from bf_assets.ingest.readers import clear_path_cache

    inside, outside = tmp_path / "a", tmp_path / "b"
    for d in (inside, outside):
        (d / "t").mkdir(parents=True)
        (d / "t" / "f.json").write_text("{}")
    root = tmp_path / "root"
    root.symlink_to(inside)
    clear_path_cache()
    for r in (root, str(root)):  # a root given as a path or as a string
        real, size, issue = resolve_file(root / "t" / "f.json", r)
        assert issue is None and real == os.path.realpath(root / "t" / "f.json") and size == 2
    # the file is reached through a link to elsewhere: it leaves the (real) root
    (root / "t" / "g.json").symlink_to(outside / "t" / "f.json")
    assert resolve_file(root / "t" / "g.json", root).issue.kind is IssueKind.LINK_ESCAPE
    root.unlink()
    root.symlink_to(outside)
    clear_path_cache()  # a new review: the root now resolves to b
    real, _, issue = resolve_file(root / "t" / "f.json", root)
    assert issue is None and real == os.path.realpath(outside / "t" / "f.json")


@pytest.mark.parametrize(
    "body",
    [b"", b"one line, no newline", b"a\nb\n", b"x" * (MiB - 1) + b"\n", b"ab\n" * (MiB // 2 + 7)],
    ids=["empty", "no-newline", "two-lines", "just-under-1MiB", "several-MiB-reads"],
)
def test_hash_file_is_the_digest_size_and_lines_of_every_byte(tmp_path: Path, body: bytes) -> None:
    p = tmp_path / "agent.log"
    p.write_bytes(body)
    stats, issue = hash_file(p, tmp_path)
    assert issue is None and stats is not None and stats.read
    lines = body.count(b"\n") + (1 if body and not body.endswith(b"\n") else 0)
    assert (stats.size, stats.sha256, stats.lines) == (
        len(body),
        hashlib.sha256(body).hexdigest(),
        lines,
    )


def test_hash_file_reads_to_the_end_of_a_file_that_grew_since_its_stat(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first read is sized by the stat size: bytes added after the stat are still hashed,
    and the size is the bytes the digest covers."""
    from bf_assets.ingest import readers

    p = tmp_path / "verifier.log"
    body = b"early line\n" * 100 + b"appended after the stat\n" * 50
    p.write_bytes(body)
    real = readers.resolve_file

    def stale(path: Any, root: Any) -> readers.Resolved:
        got = real(path, root)
        return got._replace(size=1100)  # the size before the append

    monkeypatch.setattr(readers, "resolve_file", stale)
    stats, issue = hash_file(p, tmp_path)
    assert issue is None and stats is not None
    assert stats.sha256 == hashlib.sha256(body).hexdigest()
    assert (stats.size, stats.lines) == (len(body), 150)
