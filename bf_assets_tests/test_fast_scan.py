"""The fast paths of a heavy trial's scan give exactly the serial, exact results.

* ``fastjson``: a huge ``results.jsonl`` row cut at its steps and parsed with orjson must
  give the same top-level keys, step facts and issues as the exact parse, or
  give up (then the exact parse runs, without handing a step over twice); LLM lines read
  from their new messages must give what ``parse_json_bytes`` gives.  Both are compared
  with the exact reader on hand-written rows, the sample's files and generated edge cases.
* ``RequestHistory``: request bodies folded incrementally give the same exchange facts,
  selection, call-id index and observations as each body walked whole.
"""

from __future__ import annotations

import dataclasses
import gc
import json
import random
from pathlib import Path
from typing import Any

import pytest
from trialkit import LLM_FILE, ROWS_FILE, Trial, chat_exchange, opening, tool_call, tool_result

from bf_assets.ingest import fastjson, rowstream, scan
from bf_assets.ingest.exchanges import (
    Exchange,
    ExchangeLog,
    RequestHistory,
    request_observations,
)
from bf_assets.ingest.fastjson import LineParser
from bf_assets.ingest.jsonpos import value_at
from bf_assets.ingest.messages import StepFacts, StepValidator
from bf_assets.ingest.readers import JsonlFile, ReadLimits, iter_jsonl, parse_json_bytes
from bf_assets.ingest.rowstream import RowsRead, read_rows
from bf_sample.heavy import write_heavy_trial

BIG = ReadLimits(max_line_bytes=8)  # every row goes through the huge-row path
DEFAULT = ReadLimits()


def _read(
    path: Path, limits: ReadLimits, *, share: bool = False
) -> tuple[RowsRead, list[StepFacts]]:
    facts: list[StepFacts] = []

    def discard(n: int) -> None:
        del facts[len(facts) - n :]

    read = read_rows(
        path,
        path.parent,
        lambda i, s: facts.append(StepValidator().facts(i, s)),
        limits,
        on_discard=discard,
        share=share,
    )
    return read, facts


def _exact(path: Path, limits: ReadLimits, monkeypatch: pytest.MonkeyPatch) -> Any:
    with monkeypatch.context() as m:
        m.setattr(rowstream, "split_row", _give_up)
        return _read(path, limits)


def _give_up(*_: Any, **__: Any) -> Any:
    raise fastjson.GiveUp("forced")


def _fast_only(
    path: Path, limits: ReadLimits, monkeypatch: pytest.MonkeyPatch, *, share: bool = False
) -> Any:
    """The fast path's result, failing the test if it fell back to the exact parse."""

    def no_fallback(*_: Any, **__: Any) -> Any:
        raise AssertionError("the fast path gave up")

    with monkeypatch.context() as m:
        m.setattr(rowstream, "_parse_streaming", no_fallback)
        return _read(path, limits, share=share)


def _step(n: int, extra: str = "") -> str:
    msgs = ", ".join(
        f'{{"role": "user", "content": "m{i} }}, {{\\"prompt\\": [1]}}"}}' for i in range(n + 1)
    )
    return (
        f'{{"prompt": [{msgs}], "completion": [{{"role": "assistant", "content": "ok"}}], '
        f'"extras": {{"exchange_index": {n}}}{extra}}}'
    )


STEPS = ", ".join(_step(n) for n in range(4))

# Rows the fast path reads itself.
FAST_ROWS = [
    '{"a": 1, "trajectory": [' + STEPS + "]}",
    '{"a": 1, "trajectory": [' + STEPS + '], "b": {"c": [true, null]}, "a": 2}',
    '{"trajectory": []}',
    '{ "x" : [1, 2.5, -0.0, 1e5] ,\t"trajectory"  :  [ '
    + " ,\t".join(_step(n) for n in range(3))
    + " ] }",
    '{"a": 1, "trajectory": [' + _step(0) + "]}",
    '{"a": 1, "trajectory": [' + STEPS + '], "n": 9223372036854775}',
    '{"trajectory": [' + _step(0, ', "big": 123456789012345678') + "]}",
]

# Rows the fast path must leave to the exact parse (which then reports the same as before).
OTHER_ROWS = [
    '{"a": 1, "trajectory": [' + STEPS + ', {"prompt": [], "n": 12345678901234567890}]}',
    '{"n": 123456789012345678901, "trajectory": [' + STEPS + "]}",
    '{"trajectory": [' + STEPS + '], "n": -9223372036854775809}',
    '{"a": 1, "trajectory": [' + STEPS + "]",  # truncated
    '{"a": 1, "trajectory": [' + STEPS + "]} x",  # extra data
    '{"a": 1, "trajectory": [' + STEPS + ", [3]]}",
    '{"a": 1, "trajectory": [1, ' + STEPS + "]}",
    '{"a": {"trajectory": [' + STEPS + "]}}",
    '{"trajectory": 5, "trajectory": [' + STEPS + "]}",
    '{"trajectory": [' + STEPS + '], "trajectory": null}',
    '{"a": "\\"trajectory": [' + STEPS + "]}",
    '{"trajectory": "not a list", "k": 1}',
    '{"a": 1} {"b": 2}',
    "[1, 2, 3]",
    '{"trajectory": [' + STEPS + ', {"prompt": "' + "\xff" + '"}]}',
    '{"trajectory": [' + STEPS + ', {"prompt": ' + "[" * 1030 + "]" * 1030 + "}]}",
    '{"trajectory": [' + STEPS + ', {"prompt": ' + "[" * 1021 + "]" * 1021 + "}]}",
    '{"trajectory": [' + STEPS + ', {"prompt": ' + "[" * 1022 + "]" * 1022 + "}]}",
    '{"trajectory": [' + STEPS + ', {"prompt": NaN}]}',
    '{"trajectory": [' + STEPS + ', {"other": 1}, ' + STEPS + "]}",
    '{"trajectory": [' + STEPS + ", {}]}",
]


@pytest.fixture(autouse=True)
def _no_garbage_left() -> None:
    """Some rows are parsed a few frames short of the recursion limit: garbage an earlier
    test left (a temporary directory's finalizer, say) is collected here, at a shallow
    depth, not by a collection that happens to run inside that parse, where its finalizer
    would fail with RecursionError and pytest would report it against this test."""
    gc.collect()


def _write(tmp_path: Path, text: str | bytes) -> Path:
    p = tmp_path / "results.jsonl"
    p.write_bytes((text.encode() if isinstance(text, str) else text) + b"\n")
    return p


@pytest.mark.parametrize("share", [False, True])
@pytest.mark.parametrize("text", FAST_ROWS)
def test_fast_split_gives_the_exact_result(
    tmp_path: Path, text: str, share: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    p = _write(tmp_path, text)
    assert _fast_only(p, BIG, monkeypatch, share=share) == _exact(p, BIG, monkeypatch)


@pytest.mark.parametrize("share", [False, True])
@pytest.mark.parametrize("text", OTHER_ROWS)
def test_rows_the_fast_split_cannot_vouch_for_read_as_before(
    tmp_path: Path, text: str, share: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    p = _write(tmp_path, text.encode("utf-8", "surrogateescape").replace(b"\xc3\xbf", b"\xff"))
    assert _read(p, BIG, share=share) == _exact(p, BIG, monkeypatch)


@pytest.mark.parametrize("max_depth", [8, 12, 40])
def test_a_lower_depth_cap_is_applied_the_same_way(
    tmp_path: Path, max_depth: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    limits = ReadLimits(max_line_bytes=8, max_depth=max_depth)
    for depth in range(max_depth - 5, max_depth + 2):
        deep = "[" * depth + "]" * depth
        for text in (
            '{"trajectory": [' + STEPS + ', {"prompt": ' + deep + "}]}",
            '{"a": ' + deep + ', "trajectory": [' + STEPS + "]}",
            '{"trajectory": [' + STEPS + '], "a": ' + deep + "}",
        ):
            p = _write(tmp_path, text)
            exact = _exact(p, limits, monkeypatch)
            assert _read(p, limits) == exact, (depth, text[:40])
            assert _read(p, limits, share=True) == exact, (depth, text[:40])


def test_the_trial_row_and_a_heavy_row_take_the_fast_path(
    trial: Trial, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    p = trial.file(ROWS_FILE)
    assert _fast_only(p, BIG, monkeypatch) == _exact(p, BIG, monkeypatch)
    heavy = write_heavy_trial(tmp_path / "job", n_exchanges=12, tool_output_bytes=300)
    p = heavy / ROWS_FILE
    fast = _fast_only(p, BIG, monkeypatch)
    assert fast == _exact(p, BIG, monkeypatch) and len(fast[1]) == 12
    assert _fast_only(p, BIG, monkeypatch, share=True) == fast


def test_steps_are_not_handed_over_twice_when_the_split_gives_up_late(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Four steps the split reads, then one it cannot vouch for (19 digits, within 64 bits:
    # the exact parser reads it); the row itself is sound.
    text = '{"trajectory": [' + STEPS + ', {"prompt": [], "n": 1234567890123456789}]}'
    p = _write(tmp_path, text)
    seen: list[int] = []
    read = read_rows(p, tmp_path, lambda i, s: seen.append(i), BIG)
    exact = _exact(p, BIG, monkeypatch)
    assert read == exact[0] and read.rows[0].n_steps == 5
    assert seen == list(range(5))


@pytest.mark.parametrize(
    "tail",
    [
        ', {"prompt": [], "n": 123456789012345678901234567890}]}',  # past 64 bits: rejected
        ', {"prompt": []}]} trailing',  # extra data after the row
        ', {"prompt": [' + "[" * 1100 + "]" * 1100 + "]}]}",  # too deep
    ],
)
def test_steps_of_a_row_that_fails_late_are_withdrawn(
    tmp_path: Path, tail: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    p = _write(tmp_path, '{"trajectory": [' + STEPS + tail)
    before = scan._scan_rows(p, tmp_path, BIG)
    with monkeypatch.context() as m:
        m.setattr(rowstream, "split_row", _give_up)
        exact = scan._scan_rows(p, tmp_path, BIG)
    assert before == exact
    assert before.read.rows[0].top is None and before.steps == []


def test_withdrawn_steps_leave_the_next_row_checked_as_before(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    good = '{"trajectory": [' + STEPS + "]}"
    bad = '{"trajectory": [' + STEPS + ', {"prompt": [], "n": 123456789012345678901234567890}]}'
    p = tmp_path / "results.jsonl"
    p.write_text("\n".join([good, bad, good]) + "\n")
    fast = scan._scan_rows(p, tmp_path, BIG)
    with monkeypatch.context() as m:
        m.setattr(rowstream, "split_row", _give_up)
        exact = scan._scan_rows(p, tmp_path, BIG)
    assert fast == exact and len(fast.steps) == 8


def test_long_digit_runs_are_found_anywhere() -> None:
    assert not fastjson.has_long_digit_run(b"1" * 18 + b"x" + b"2" * 18)
    for at in range(0, 40):
        data = b"a" * at + b"9" * 19 + b"b" * 7
        assert fastjson.has_long_digit_run(data)


# --------------------------------------------------------------------------- request history


def _log(rows: list[Any], history: bool) -> tuple[ExchangeLog, list[Any]]:
    log = ExchangeLog()
    hist = RequestHistory() if history else None
    seen: set[str] = set()
    observed: list[Any] = []
    for line, row in enumerate(rows, start=1):
        ex = log.add(row, line, hist)
        body = (row.get("request") or {}).get("body") if isinstance(row, dict) else None
        last = hist.last if hist is not None else None
        fresh = last.fresh if last is not None and last.body is body else None
        for cid, text in request_observations(body, 8192, fresh):
            if cid not in seen:
                seen.add(cid)
                observed.append((ex.index, cid, text))
    return log, observed


def _partition(exs: list[Exchange]) -> list[list[int]]:
    groups: dict[str | None, list[int]] = {}
    for e in exs:
        groups.setdefault(e.body_key, []).append(e.index)
    return sorted(groups.values())


def _same_log(rows: list[Any]) -> None:
    (a, obs_a), (b, obs_b) = _log(rows, True), _log(rows, False)
    strip = [dataclasses.replace(e, body_key=None) for e in a.exchanges]
    assert strip == [dataclasses.replace(e, body_key=None) for e in b.exchanges]
    assert _partition(a.exchanges) == _partition(b.exchanges)
    assert (a.last_ref, a.last_request_pos, a.selected()) == (
        b.last_ref,
        b.last_request_pos,
        b.selected(),
    )
    assert obs_a == obs_b


def _conversation(n: int) -> list[dict[str, Any]]:
    history = opening()
    rows = []
    for i in range(n):
        rows.append(chat_exchange(list(history), {"role": "assistant", "content": None}))
        history += [
            {"role": "assistant", "content": None, "tool_calls": [tool_call(f"c{i}", "ls")]},
            tool_result(f"c{i}", f"out {i}"),
        ]
    return rows


def test_history_gives_the_same_exchanges_on_a_growing_conversation() -> None:
    _same_log(_conversation(8))


def test_history_with_retries_rewinds_and_odd_bodies() -> None:
    rows = _conversation(6)
    rows.insert(3, rows[2])  # a retry of the same body
    rows.insert(5, rows[1])  # a shorter history (after a compaction)
    rows.append({"request": {"body": "not a dict"}, "response": rows[0]["response"]})
    rows.append({"request": {"body": {"messages": "not a list"}}, "response": {}})
    rows.append(json.loads(json.dumps(rows[4])))  # equal body, fresh objects
    _same_log(rows)


@pytest.mark.parametrize("value", [1, 1.0, True, "1", None, [1], {"a": 1}])
def test_history_does_not_mistake_equal_values_of_other_types(value: Any) -> None:
    # 1 == 1.0 == True in Python, but ids, texts and body keys differ; the history compares
    # serialized bytes, so each of these is a change.
    base = opening()
    first = [*base, {"role": "tool", "tool_call_id": 1, "content": [{"text": "a"}]}]
    second = [*base, {"role": "tool", "tool_call_id": value, "content": [{"text": "a"}]}]
    rows = [
        chat_exchange(first, {"role": "assistant", "content": "x"}),
        chat_exchange([*second, tool_result("z")], {"role": "assistant", "content": "y"}),
        chat_exchange(first, {"role": "assistant", "content": "x"}),
    ]
    _same_log(rows)


def test_history_key_ignores_key_order_like_canonical_key() -> None:
    a = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    b = {"messages": [{"content": "hi", "role": "user"}], "model": "m"}
    h = RequestHistory()
    assert h.facts(a).key == h.facts(b).key
    assert h.facts({"model": "m", "messages": []}).key != h.facts(a).key


def test_history_handles_bodies_too_deep_to_encode() -> None:
    deep: Any = "x"
    for _ in range(300):
        deep = [deep]
    rows = _conversation(3)
    rows.insert(1, chat_exchange([*opening(), {"role": "user", "content": deep}], {}))
    rows.insert(2, chat_exchange([*opening(), {"role": "user", "content": deep}], {}))
    (a, _), (b, _) = _log(rows, True), _log(rows, False)
    assert [dataclasses.replace(e, body_key=None) for e in a.exchanges] == [
        dataclasses.replace(e, body_key=None) for e in b.exchanges
    ]
    # an unencodable body is a group of its own
    assert a.exchanges[1].body_key != a.exchanges[2].body_key


# --------------------------------------------------------------------------- prompt reuse


def _msg(i: int, extra: str = "") -> str:
    return f'{{"role": "user", "content": "m{i}"{extra}}}'


def _grow(prompts: list[list[str]], tail: str = ', "completion": [], "extras": {}') -> str:
    steps = ", ".join('{"prompt": [' + ", ".join(p) + "]" + tail + "}" for p in prompts)
    return '{"trajectory": [' + steps + "]}"


def _growing(n: int) -> list[list[str]]:
    return [[_msg(i) for i in range(k + 1)] for k in range(n)]


REUSE_ROWS = [
    _grow(_growing(6)),
    _grow([["1", "2"], ["1", "2.5", "3"], ["1", "2e5"], ["1", "2", "3"]]),  # token continues
    _grow([["1", "true"], ["1", "true", "null"], ["1", "trueish"]]),
    _grow(_growing(3), ', "completion": [], "prompt": [9]'),  # a later duplicate key
    _grow(_growing(3), ', "completion": [], "prompt": null'),
    _grow(_growing(3), ', "completion": [], "prompt": 0'),
    _grow([*_growing(3), [_msg(9)], [_msg(9), _msg(10)]]),  # the history is rewritten
    _grow([[_msg(0)], [_msg(0), _msg(1, ', "x": [1], "completion": [2]')], [_msg(0)]]),
    _grow([[_msg(0)], [_msg(0), _msg(1)]], ',"completion":[] ,  "extras" : {}'),
    _grow([[_msg(0)], [_msg(0), _msg(1)]], ""),  # the prompt is the only key
    '{"trajectory": [{"prompt": [1], "completion": []}, {"completion": [], "prompt": [1, 2]}, '
    '{"prompt": [1, 2, 3], "completion": []}]}',
]


@pytest.mark.parametrize("text", REUSE_ROWS)
def test_reused_prompts_give_the_steps_parsed_whole(
    tmp_path: Path, text: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    p = _write(tmp_path, text)
    shared: list[Any] = []
    whole: list[Any] = []
    read_shared = read_rows(p, tmp_path, lambda i, s: shared.append(s), BIG, share=True)
    read_whole = read_rows(p, tmp_path, lambda i, s: whole.append(s), BIG)
    assert read_shared == read_whole
    assert json.dumps(shared) == json.dumps(whole)  # types too: 2.5 is not 2
    assert _read(p, BIG, share=True) == _exact(p, BIG, monkeypatch)


def test_a_growing_prompt_is_parsed_once(tmp_path: Path) -> None:
    p = _write(tmp_path, _grow(_growing(5)))
    steps: list[Any] = []
    read_rows(p, tmp_path, lambda i, s: steps.append(s), BIG, share=True)
    for prev, step in zip(steps, steps[1:], strict=False):
        assert step["prompt"][0] is prev["prompt"][0]  # the same objects, not re-parsed
        assert step["prompt"] is not prev["prompt"]  # each step has its own list


# --------------------------------------------------------------------------- LLM lines


def _lines_parsed(lines: list[bytes], limits: ReadLimits = DEFAULT) -> list[Any]:
    parser = LineParser(limits)
    return [parser.parse(line, limits) for line in lines]


def _plain(lines: list[bytes], limits: ReadLimits = DEFAULT) -> list[Any]:
    return [parse_json_bytes(line, limits) for line in lines]


def _llm_line(messages: list[str], *, body_tail: str = ', "tools": []', head: str = "") -> bytes:
    return (
        '{"request": {"ts": "t", '
        + head
        + '"body": {"model": "m", "messages": ['
        + ", ".join(messages)
        + "]"
        + body_tail
        + '}}, "response": {"status_code": 200, "body": {"choices": []}}}'
    ).encode()


def _conv_lines(n: int, **kw: Any) -> list[bytes]:
    return [_llm_line([_msg(i) for i in range(k + 1)], **kw) for k in range(n)]


LLM_CASES = [
    _conv_lines(6),
    _conv_lines(4, body_tail=""),  # messages is the body's last key
    _conv_lines(4, head='"headers": {"messages": [1]}, '),  # an earlier "messages"
    _conv_lines(4, body_tail=', "tools": [], "messages": null'),  # a later duplicate
    _conv_lines(4, body_tail=', "tools": [], "messages": 0'),
    [*_conv_lines(3), _llm_line(["1", "2"]), _llm_line(["1", "2.5", "3"]), _llm_line(["1", "2e5"])],
    [*_conv_lines(3), b'{"request": {"body": {"messages": [NaN]}}}', *_conv_lines(4)],
    [*_conv_lines(3), b'{"a": "caf\xe9"}', *_conv_lines(4)[2:], b"[1, 2", b"3"],
    [*_conv_lines(3), _conv_lines(3)[2] + b' {"request": 1}', *_conv_lines(5)[3:]],
    [
        *_conv_lines(3),
        _conv_lines(4)[3].replace(b'"response"', b'"request": {"body": 1}, "response"'),
    ],
    [*_conv_lines(3), _llm_line([_msg(0), _msg(1), _msg(2, ', "x": [1], "tools": [2]')])],
]


@pytest.mark.parametrize("lines", LLM_CASES)
def test_line_parser_gives_what_parse_json_bytes_gives(lines: list[bytes]) -> None:
    fast, plain = _lines_parsed(lines), _plain(lines)
    assert fast == plain
    assert json.dumps([v for v, _ in fast]) == json.dumps([v for v, _ in plain])


def test_line_parser_shares_the_repeated_messages() -> None:
    values = [v for v, _ in _lines_parsed(_conv_lines(4))]
    msgs = [v["request"]["body"]["messages"] for v in values]
    assert all(b[0] is a[0] for a, b in zip(msgs, msgs[1:], strict=False))
    assert len({id(m) for m in msgs}) == 4  # each value has its own list


def test_line_parser_with_a_lower_depth_cap() -> None:
    limits = ReadLimits(max_depth=6)
    lines = [*_conv_lines(3), _llm_line([_msg(0), "[[[[1]]]]"])]
    assert _lines_parsed(lines, limits) == _plain(lines, limits)


def test_llm_scan_with_shared_lines_gives_the_plain_scan(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    heavy = write_heavy_trial(tmp_path / "job", n_exchanges=15, tool_output_bytes=200)
    path = heavy / LLM_FILE
    with path.open("ab") as fh:  # a retry, a compaction and a broken line
        lines = path.read_bytes().splitlines()
        fh.write(b"\n" + lines[3] + b"\n" + lines[1] + b"\n" + lines[-1][:-9] + b"\n" + lines[-1])
    monkeypatch.setattr(scan, "LINE_REUSE_MIN_BYTES", 0)
    fast = scan._scan_llm(path, tmp_path, ReadLimits())

    class Plain:
        def __init__(self, limits: ReadLimits) -> None:
            self.parse = parse_json_bytes

    monkeypatch.setattr(scan, "LineParser", Plain)
    plain = scan._scan_llm(path, tmp_path, ReadLimits())
    assert fast == plain and fast[0].bad_lines and len(fast[0].log.exchanges) == 18


@pytest.mark.parametrize(
    "text",
    [
        '{"trajectory": [' + " " * 50_000 + STEPS + "]}",
        '{"trajectory": [' + _step(0, ', "pad": "' + "x" * 20_000 + '"') + ", " + STEPS + "]}",
        '{"a": "' + "y" * 20_000 + '", "trajectory": [' + STEPS + "]}",
        '{"trajectory": [' + STEPS + '], "b": "' + "z" * 20_000 + '"}',
    ],
)
def test_pieces_over_the_cap_go_to_the_exact_parser(
    tmp_path: Path, text: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(fastjson, "STEP_CAP", 4096)
    monkeypatch.setattr(fastjson, "CHUNK", 1024)
    p = _write(tmp_path, text)
    assert _read(p, BIG, share=True) == _exact(p, BIG, monkeypatch)


# --------------------------------------------------------------------------- against the exact reader

SAMPLE = Path(__file__).resolve().parents[1] / "data" / "runs" / "jobs"
TEXTS = [
    "plain text",
    'a quote " a backslash \\ a slash / a tab \t a newline \n',
    '}, {"prompt": [',  # a step's opening bytes inside a string
    '], "completion": [',  # the bytes after a prompt
    '"trajectory": [',
    '"messages": [{"role": "user"}], "tools": [',
    "caf\u00e9 \u2603 \U0001f600 \u2028 \x00 \x1f",
    "1234567890123456789",  # a long digit run inside a string
]
# Placeholders replaced in the written bytes: what json.dumps cannot write.
BREAKS = {
    "invalid_utf8": b"\xff\xfe",
    "nan": b"NaN",
    "infinity": b"-Infinity",
    "big_int": b"123456789012345678901234567890",
    "lone_surrogate": b'"\\ud800"',
}


def _content(rng: random.Random) -> Any:
    kind = rng.randrange(7)
    if kind == 0:
        return rng.choice(TEXTS)
    if kind == 1:
        return "x" * rng.choice([100, 5_000, 70_000])  # a long string
    if kind == 2:
        deep: Any = "d"
        for _ in range(rng.randint(1, 12)):
            deep = [deep] if rng.random() < 0.5 else {"k": deep}
        return deep
    if kind == 3:
        return rng.choice([0, -0.0, 1.5e300, 2.5, 1e-7, 3.0, 12345678901234567, -(2**40)])
    if kind == 4:
        return [{"type": "text", "text": rng.choice(TEXTS)}]
    if kind == 5:
        return rng.choice([[], {}, None, True, False, ""])
    return f"message {rng.random()}"


def _messages(rng: random.Random, n: int) -> list[dict[str, Any]]:
    roles = ["user", "assistant", "tool"]
    return [{"role": rng.choice(roles), "content": _content(rng), "i": i} for i in range(n)]


def _break(rng: random.Random, messages: list[dict[str, Any]]) -> str | None:
    """Plant a placeholder for one of :data:`BREAKS`, deep nesting or a later duplicate of
    the list's key, or nothing; the growing lists repeat a planted message in every later
    value."""
    kind = rng.choice([None, "deep", "deep", "duplicate", "duplicate", "deep_rest", *BREAKS])
    at = rng.randrange(len(messages))
    if kind == "deep":
        deep: Any = 1
        for _ in range(rng.randint(121, 126)):  # around the depth cap, from level 6
            deep = [deep]
        messages[at]["content"] = deep
    elif kind in BREAKS:
        messages[at]["content"] = f"@@{kind}@@"
    return kind


def _dumps(value: Any, style: tuple[bool, tuple[str, str]], key: bytes) -> bytes:
    text = json.dumps(value, ensure_ascii=style[0], separators=style[1])
    data = text.encode("utf-8", "surrogatepass")
    for kind, raw in BREAKS.items():
        data = data.replace(f'"@@{kind}@@"'.encode(), raw)
    return data.replace(b'"@@duplicate@@"', key)


def _later(rng: random.Random, kind: str | None, k: int, n: int) -> dict[str, Any]:
    """What the last values add beside the list, when planted: a later duplicate of the
    list's key (placeholder) or a value around the depth cap (from level 4)."""
    if k < n // 2:
        return {}
    if kind == "duplicate":
        return {"@@duplicate@@": rng.choice([None, 0, [9], "x"])}
    if kind == "deep_rest":
        deep: Any = 1
        for _ in range(rng.randint(122, 127)):
            deep = [deep]
        return {"later": deep}
    return {}


def _style(rng: random.Random) -> tuple[bool, tuple[str, str]]:
    return rng.random() < 0.5, rng.choice([(", ", ": "), (",", ":"), (" , ", " :  ")])


def _generated_row(seed: int) -> bytes:
    rng = random.Random(seed)
    msgs = _messages(rng, rng.randint(2, 8))
    kind = _break(rng, msgs)
    steps = [
        {
            "prompt": msgs[: k + 1],
            "completion": [{"role": "assistant", "content": _content(rng)}],
            "extras": {"exchange_index": k},
            **_later(rng, kind, k, len(msgs)),
        }
        for k in range(len(msgs))
    ]
    if rng.random() < 0.2:  # a compaction: the history is rewritten
        steps.append({"prompt": msgs[1:], "completion": [], "extras": {}})
    data = _dumps({"id": seed, "trajectory": steps, "reward": 1.0}, _style(rng), b'"prompt"')
    if rng.random() < 0.2:  # a truncated line
        data = data[: rng.randrange(1, len(data))]
    return data


def _generated_lines(seed: int) -> list[bytes]:
    rng = random.Random(seed)
    msgs = _messages(rng, rng.randint(2, 8))
    kind = _break(rng, msgs)
    style = _style(rng)
    lines = []
    for k in range(len(msgs)):
        body = {"model": "m", "messages": msgs[: k + 1], "tools": []}
        body |= _later(rng, kind, k, len(msgs))
        line = {
            "request": {"ts": k, "body": body},
            "response": {"status_code": 200, "body": {"content": _content(rng)}},
        }
        lines.append(_dumps(line, style, b'"messages"'))
    if rng.random() < 0.3:  # a retry and a compaction
        lines += [lines[-1], lines[0]]
    if rng.random() < 0.3:  # a truncated line
        at = rng.randrange(len(lines))
        lines[at] = lines[at][: rng.randrange(1, len(lines[at]))]
    return lines


@pytest.mark.parametrize("seed", range(60))
def test_generated_rows_read_as_the_exact_reader_reads_them(
    tmp_path: Path, seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    p = _write(tmp_path, _generated_row(seed))
    exact = _exact(p, BIG, monkeypatch)
    for share in (False, True):
        assert _read(p, BIG, share=share) == exact, share


@pytest.mark.parametrize("seed", range(60))
def test_generated_llm_lines_read_as_the_exact_reader_reads_them(seed: int) -> None:
    lines = _generated_lines(seed)
    fast, plain = _lines_parsed(lines), _plain(lines)
    assert fast == plain
    assert json.dumps([v for v, _ in fast]) == json.dumps([v for v, _ in plain])


def _shares_first_item(values: list[Any], path: str) -> int:
    """How many values share the first item of their list at ``path`` with the previous."""
    lists = [value_at(v, path) for v in values]
    return sum(bool(a) and bool(b) and a[0] is b[0] for a, b in zip(lists, lists[1:], strict=False))


def test_the_generated_cases_take_the_fast_path(tmp_path: Path) -> None:
    """The generated conversations are read from their new items (the comparisons above
    are about the fast path, not only about its fallback)."""
    lines = rows = 0
    for seed in range(60):
        lines += _shares_first_item(
            [v for v, _ in _lines_parsed(_generated_lines(seed))], "request.body.messages"
        )
        steps: list[Any] = []
        p = _write(tmp_path, _generated_row(seed))
        read_rows(p, tmp_path, lambda i, s, out=steps: out.append(s), BIG, share=True)
        rows += _shares_first_item(steps, "prompt")
    assert lines > 40 and rows > 40, (lines, rows)


def test_the_sample_files_read_as_the_exact_reader_reads_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rows = sorted(SAMPLE.rglob(ROWS_FILE))
    assert rows
    for p in rows:
        exact = _exact(p, BIG, monkeypatch)
        assert _read(p, BIG) == exact and _read(p, BIG, share=True) == exact, p
    for p in sorted(SAMPLE.rglob("llm_trajectory.jsonl")):
        plain = [(x.line, x.value, x.issues) for x in iter_jsonl(p, SAMPLE, JsonlFile())]
        fast = LineParser(DEFAULT).parse
        got = [(x.line, x.value, x.issues) for x in iter_jsonl(p, SAMPLE, JsonlFile(), parse=fast)]
        assert got == plain, p
