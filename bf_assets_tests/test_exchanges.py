"""Selection of the successful LLM exchanges that become training steps (artifacts.md §5.2).

Candidates are status-200 responses with an object body; they are grouped by identical
request body; per group the latest exchange whose tool calls a later request consumed wins,
else the latest "safe" one.  Tool-call ids are matched exactly (review-rules V-13) and the
Anthropic and Responses shapes are understood (V-14).
"""

from __future__ import annotations

from typing import Any

import pytest
from trialkit import assistant, chat_exchange, failed_exchange, opening, tool_call, tool_result

from bf_assets.ingest.exchanges import (
    USAGE_KEYS,
    ExchangeLog,
    canonical_key,
    has_positive_usage,
    is_training_success,
    request_call_ids,
    response_tool_calls,
    usage_numbers,
)


def selected(rows: list[dict[str, Any]]) -> list[int]:
    log = ExchangeLog()
    for line, row in enumerate(rows, start=1):
        log.add(row, line)
    return log.selected()


def call(cid: str, name: str = "terminal") -> dict[str, Any]:
    return tool_call(cid, "ls", name=name)


def followed_by(cid: str) -> list[dict[str, Any]]:
    """A later request that answers ``cid``."""
    return [*opening(), assistant(None, call(cid)), tool_result(cid)]


# --------------------------------------------------------------------------- chat completions


def test_single_final_answer_is_selected() -> None:
    assert selected([chat_exchange(opening(), assistant("Done."))]) == [0]


def test_retries_with_identical_body_keep_the_latest_consumed() -> None:
    rows = [
        chat_exchange(opening(), assistant(None, call("call_a"))),
        chat_exchange(opening(), assistant(None, call("call_b"))),  # consumed below
        chat_exchange(opening(), assistant(None, call("call_c"))),  # parallel duplicate, lost
        chat_exchange(followed_by("call_b"), assistant("Done.")),
    ]
    assert selected(rows) == [1, 3]


def test_latest_of_several_consumed_wins() -> None:
    both = [*followed_by("call_a"), assistant(None, call("call_b")), tool_result("call_b")]
    rows = [
        chat_exchange(opening(), assistant(None, call("call_a"))),
        chat_exchange(opening(), assistant(None, call("call_b"))),
        chat_exchange(both, assistant("Done.")),
    ]
    assert selected(rows) == [1, 2]


def test_consumed_beats_a_later_unconsumed_retry() -> None:
    rows = [
        chat_exchange(opening(), assistant(None, call("call_a"))),
        chat_exchange(opening(), assistant(None, call("call_z"))),  # never answered
        chat_exchange(followed_by("call_a"), assistant("Done.")),
    ]
    assert selected(rows) == [0, 2]


def test_call_ids_are_matched_exactly_not_as_substrings() -> None:
    # V-13: Benchflow finds "call_1" inside the serialized "call_12" and picks exchange 1.
    rows = [
        chat_exchange(opening(), assistant(None, call("call_12"))),
        chat_exchange(opening(), assistant(None, call("call_1"))),
        chat_exchange(followed_by("call_12"), assistant("Done.")),
    ]
    assert selected(rows) == [0, 2]


def test_safe_unconsumed_exchanges_are_kept() -> None:
    rows = [
        chat_exchange(opening(), assistant("thinking out loud")),  # no tool calls: safe
        chat_exchange(opening(), assistant("final answer")),  # same body: latest safe wins
        chat_exchange([*opening(), assistant("x")], assistant(None, call("call_last"))),
    ]
    # the last exchange's call is never answered, but no request follows it: safe
    assert selected(rows) == [1, 2]


def test_unconsumed_tool_call_with_later_requests_is_dropped() -> None:
    rows = [
        chat_exchange(opening(), assistant(None, call("call_lost"))),
        chat_exchange([*opening(), assistant("retry")], assistant("Done.")),
    ]
    assert selected(rows) == [1]


def test_finish_only_calls_are_safe() -> None:
    rows = [
        chat_exchange(opening(), assistant(None, call("call_f", name="finish"))),
        chat_exchange([*opening(), assistant("next")], assistant("Done.")),
    ]
    assert selected(rows) == [0, 1]


def test_finish_mixed_with_another_call_is_not_safe() -> None:
    mixed = assistant(None, call("call_f", name="finish"), call("call_t"))
    rows = [
        chat_exchange(opening(), mixed),
        chat_exchange([*opening(), assistant("next")], assistant("Done.")),
    ]
    assert selected(rows) == [1]


@pytest.mark.parametrize("status", [400, 401, 408, 429, 500, 503])
def test_failed_calls_are_excluded(status: int) -> None:
    rows = [
        failed_exchange(opening(), status=status),
        chat_exchange(opening(), assistant("Done.")),
    ]
    assert selected(rows) == [1]


def test_only_failed_calls_select_nothing() -> None:
    assert selected([failed_exchange(opening(), status=429)] * 3) == []


@pytest.mark.parametrize(
    "response",
    [
        {"status_code": "200", "body": {"choices": []}},  # 200 exactly, not the string
        {"status_code": 200, "body": "text"},
        {"status_code": 200, "body": {"status": "incomplete"}},
        {"status_code": 200, "body": {"status": "completed", "incomplete_details": {"r": 1}}},
        {"body": {"choices": []}},  # no status code recorded (flat fixtures)
        None,
    ],
)
def test_not_a_training_success(response: Any) -> None:
    assert not is_training_success(response)


def test_completed_responses_body_is_a_training_success() -> None:
    assert is_training_success({"status_code": 200, "body": {"status": "completed"}})


def test_group_key_ignores_key_order() -> None:
    assert canonical_key({"a": 1, "b": [1, 2]}) == canonical_key({"b": [1, 2], "a": 1})
    assert canonical_key({"a": 1}) != canonical_key({"a": 2})


# --------------------------------------------------------------------------- other providers


def anthropic_row(messages: list[dict[str, Any]], content: list[dict[str, Any]]) -> dict:
    return {
        "request": {"path": "/v1/messages", "body": {"model": "claude", "messages": messages}},
        "response": {
            "status_code": 200,
            "body": {
                "type": "message",
                "role": "assistant",
                "content": content,
                "usage": {"input_tokens": 10, "output_tokens": 2, "cache_read_input_tokens": 5},
            },
        },
    }


def test_anthropic_tool_use_ids_are_recognised() -> None:
    use = {"type": "tool_use", "id": "toolu_1", "name": "bash", "input": {"cmd": "ls"}}
    first = [{"role": "user", "content": "go"}]
    answer = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1"}]}
    later = [*first, {"role": "assistant", "content": [use]}, answer]
    rows = [
        anthropic_row(first, [use]),
        anthropic_row(first, [{**use, "id": "toolu_2"}]),  # retry, never answered
        anthropic_row(later, [{"type": "text", "text": "Done."}]),
    ]
    assert response_tool_calls(rows[0]["response"]["body"]) == [("toolu_1", "bash")]
    assert {"toolu_1"} <= request_call_ids(rows[2]["request"]["body"])
    assert selected(rows) == [0, 2]


def test_anthropic_usage_folds_cache_into_input() -> None:
    body = anthropic_row([], [])["response"]["body"]
    assert usage_numbers(body) == (15.0, 2.0, 17.0)


def responses_row(items: list[dict[str, Any]], output: list[dict[str, Any]]) -> dict:
    return {
        "request": {"path": "/v1/chat/completions", "body": {"model": "gpt", "input": items}},
        "response": {
            "status_code": 200,
            "body": {
                "object": "response",
                "status": "completed",
                "output": output,
                "usage": {"input_tokens": 10, "output_tokens": 3, "total_tokens": 13},
            },
        },
    }


def test_responses_function_call_ids_are_recognised() -> None:
    fc = {"type": "function_call", "call_id": "fc_1", "name": "shell", "arguments": "{}"}
    first = [{"role": "user", "content": "go"}]
    later = [*first, fc, {"type": "function_call_output", "call_id": "fc_1", "output": "ok"}]
    rows = [
        responses_row(first, [{"type": "reasoning"}, fc]),
        responses_row(first, [{**fc, "call_id": "fc_2"}]),
        responses_row(later, [{"type": "message", "content": [{"text": "Done."}]}]),
    ]
    assert response_tool_calls(rows[0]["response"]["body"]) == [("fc_1", "shell")]
    assert "fc_1" in request_call_ids(rows[2]["request"]["body"])
    assert selected(rows) == [0, 2]


def gemini_row(contents: list[dict[str, Any]], parts: list[dict[str, Any]]) -> dict:
    return {
        "request": {"path": "/v1beta/models/g:generateContent", "body": {"contents": contents}},
        "response": {
            "status_code": 200,
            "body": {
                "candidates": [{"content": {"role": "model", "parts": parts}}],
                "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 2},
            },
        },
    }


def test_gemini_function_calls_are_tool_calls() -> None:
    body = gemini_row([], [{"functionCall": {"name": "run", "args": {}}}])["response"]["body"]
    assert [name for _, name in response_tool_calls(body)] == ["run"]
    assert usage_numbers(body) == (10.0, 2.0, 12.0)


def test_gemini_answered_function_call_is_selected() -> None:
    fcall = {"functionCall": {"name": "run", "args": {"cmd": "ls"}}}
    first = [{"role": "user", "parts": [{"text": "go"}]}]
    answer = {"role": "user", "parts": [{"functionResponse": {"name": "run", "response": {}}}]}
    later = [*first, {"role": "model", "parts": [fcall]}, answer]
    rows = [gemini_row(first, [fcall]), gemini_row(later, [{"text": "Done."}])]
    assert selected(rows) == [0, 1]


# --------------------------------------------------------------------------- usage


@pytest.mark.parametrize(
    ("body", "positive"),
    [
        ({"usage": {"prompt_tokens": 3, "completion_tokens": 0}}, True),
        ({"usage": {"total_tokens": 5}}, True),
        ({"usageMetadata": {"totalTokenCount": 7}}, True),
        ({"nested": [{"deep": {"outputTokens": 1}}]}, True),
        ({"usage": {"prompt_tokens": 0, "completion_tokens": 0}}, False),
        ({"usage": {"total_tokens": True}}, False),  # bools are not counts
        ({"usage": {"total_tokens": "12"}}, False),
        ({}, False),
    ],
)
def test_positive_usage(body: dict[str, Any], positive: bool) -> None:
    assert has_positive_usage(body) is positive


def test_exchange_facts_from_a_chat_row() -> None:
    log = ExchangeLog()
    ex = log.add(chat_exchange(opening(), assistant(None, call("call_1")), usage=(100, 20)), 7)
    assert (ex.index, ex.line, ex.status_code, ex.candidate) == (0, 7, 200, True)
    assert ex.response_call_ids == ("call_1",) and ex.usage_positive
    assert (ex.input_tokens, ex.output_tokens, ex.total_tokens) == (100.0, 20.0, 120.0)
    assert ex.provider_model == "openai/gpt-x" and ex.call_purpose == "agent"
    failed = log.add(failed_exchange(opening(), status=500), 8)
    assert not failed.candidate and not failed.usage_positive and failed.has_response


def _walk_usage(body: Any, max_nodes: int = 200_000) -> bool:
    """``has_positive_usage`` as the plain walk (no shortcut), for comparison."""
    stack = [body]
    seen = 0
    while stack and seen < max_nodes:
        v = stack.pop()
        seen += 1
        if isinstance(v, dict):
            for k, x in v.items():
                number = not isinstance(x, bool) and isinstance(x, int | float)
                if k in USAGE_KEYS and number and x > 0:
                    return True
                if isinstance(x, dict | list):
                    stack.append(x)
        elif isinstance(v, list):
            stack.extend(x for x in v if isinstance(x, dict | list))
    return False


USAGE_SHAPES: list[Any] = [
    {"choices": [], "usage": {"prompt_tokens": 5}},
    {"choices": [], "usage": {"prompt_tokens": 0, "completion_tokens": 0}},
    {"usage": {"total_tokens": 3}, "choices": [{"usage": {"x": 1}}]},  # usage not last
    {"content": [], "usage": {"input_tokens": True}},  # a bool is no number
    {"content": [], "usage": {"input_tokens": -1}},
    {"content": [], "usage": {"nested": {"output_tokens": 2}}},  # found deeper only
    {"content": [], "usage": [{"input_tokens": 4}]},  # a list last
    {"usage": {"input_tokens": 0}, "model": "m"},  # last container is usage, after a str
    {"usageMetadata": {"totalTokenCount": 9}},
    {"x": {"deep": {"usage": {"input_tokens": 1}}}, "y": "z"},
    {"input_tokens": 2},
    {},
    [],
    "text",
    None,
]


@pytest.mark.parametrize("body", USAGE_SHAPES)
@pytest.mark.parametrize("max_nodes", [1, 2, 3, 200_000])
def test_positive_usage_shortcut_answers_as_the_walk(body: Any, max_nodes: int) -> None:
    assert has_positive_usage(body, max_nodes=max_nodes) is _walk_usage(body, max_nodes)


CANONICAL_VALUES: list[Any] = [
    {"b": 1, "a": {"d": [1, 2.5, None, True], "c": "é\u2028"}, "": 0},
    ({"messages": [{"role": "user", "content": "hi"}]},),
    {"9": 1, "10": 2, "Z": 3, "a": 4},
    {1: "int key", "a": 2},  # only the non-string-key option writes this
    {None: 1},
    [],
    "text",
]


@pytest.mark.parametrize("value", CANONICAL_VALUES)
def test_canonical_bytes_are_those_of_the_canonical_options(value: Any) -> None:
    import orjson

    from bf_assets.ingest.exchanges import _CANONICAL, canonical_bytes

    assert canonical_bytes(value) == orjson.dumps(value, option=_CANONICAL)


def test_canonical_bytes_refuse_what_the_canonical_options_refuse() -> None:
    import orjson

    from bf_assets.ingest.exchanges import _CANONICAL, canonical_bytes

    deep: Any = "x"
    for _ in range(300):
        deep = [deep]
    for bad in (deep, {"s": {1, 2}}, {(1, 2): "tuple key"}):
        with pytest.raises(TypeError) as want:
            orjson.dumps(bad, option=_CANONICAL)
        with pytest.raises(TypeError) as got:
            canonical_bytes(bad)
        assert type(got.value) is type(want.value) and str(got.value) == str(want.value)
    other = [deep[0]]  # equal, another object: each unencodable body is a group of its own
    assert canonical_key(deep) != canonical_key(other)
