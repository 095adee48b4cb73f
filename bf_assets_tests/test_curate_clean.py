"""Cleaning and scanning short strings through the process-wide caches."""

import json
from collections import Counter

import pytest

from bf_assets.curate.scan import scan_value, text_hits
from bf_assets.redact.clean import (
    CleanStats,
    clean_document,
    clean_text,
    clean_value,
    strip_host_paths,
)

SECRET = "key sk-ant-" + "a1B2" * 8
PATH = "/home/alice/work/run.log"


def test_every_occurrence_of_a_cached_string_is_counted() -> None:
    stats = CleanStats()
    value = {"a": [SECRET, SECRET], "b": {"c": SECRET, "d": PATH}, "e": PATH}
    out = clean_value(value, stats)
    again = CleanStats()
    assert clean_value(value, again) == out
    assert stats.to_dict() == again.to_dict()
    assert stats.redactions["anthropic_key"] == 3
    assert sum(stats.host_paths.values()) == 2
    assert SECRET not in str(out) and PATH not in str(out)
    cleaned, red, paths = clean_text(SECRET)
    assert cleaned == out["a"][0] and red["anthropic_key"] == 1 and not paths


def test_cached_scans_report_every_place() -> None:
    kinds, paths, thoughts = text_hits(SECRET + " " + PATH)
    assert kinds and paths and not thoughts
    first = scan_value({"x": SECRET}, "row 1")
    second = scan_value({"y": SECRET}, "row 2")
    assert [f.check for f in first] == [f.check for f in second] == ["PUBLISH_SECRET"]
    assert first[0].file == "row 1" and second[0].file == "row 2"


# --------------------------------------------------------------------------- leak-proof cleaning


def test_private_reasoning_of_every_provider_is_removed_and_counted() -> None:
    value = {
        "anthropic": {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "plan A", "signature": "EqQBsig"},
                {"type": "redacted_thinking", "data": "opaque"},
                {"type": "text", "text": "visible"},
            ],
        },
        "delta": {"type": "thinking_delta", "thinking": "plan B"},
        "responses": [
            {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "C"}]},
            {"type": "reasoning", "id": "rs_2", "encrypted_content": "gAAAAopaque"},
            {"type": "message", "content": [{"type": "output_text", "text": "ok"}]},
        ],
        "chat": {"role": "assistant", "content": "hi", "reasoning": "plan D"},
        "router": {"role": "assistant", "content": "", "reasoning_details": [{"text": "E"}]},
        "gemini": {"parts": [{"text": "plan F", "thought": True}, {"text": "answer"}]},
        "sig": {"text": "x", "thoughtSignature": "opaque"},
        "task_data": {"type": "reasoning", "question": "2+2?"},  # a task's own data stays
        "tool_args": '{"answer": 4, "reasoning": "shown to the user"}',
    }
    stats = CleanStats()
    out = clean_value(value, stats)
    text = str(out)
    for private in ("plan ", "EqQBsig", "opaque", "'C'", "'E'"):
        assert private not in text, private
    assert out["anthropic"]["content"] == [{"type": "text", "text": "visible"}]
    assert out["task_data"] == value["task_data"] and out["tool_args"] == value["tool_args"]
    assert stats.reasoning == Counter(
        {
            "anthropic thinking": 2,
            "anthropic redacted thinking": 1,
            "openai reasoning item": 2,
            "reasoning field": 2,
            "gemini thought": 1,
            "thinking signature": 1,
        }
    )
    assert {d["kind"] for d in stats.to_dict()["reasoning"]} == set(stats.reasoning)


def test_json_inside_strings_is_cleaned_at_any_depth() -> None:
    inner = json.dumps({"reasoning_content": "leak", "path": "/home/alice/x", "password": "pw1"})
    args = json.dumps({"command": "run", "payload": inner, "thinking_blocks": ["t"]})
    value = {"tool_calls": [{"function": {"arguments": args}}], "out": f"result: {inner} end"}
    stats = CleanStats()
    out = clean_value(value, stats)
    text = json.dumps(out)
    for leak in ("leak", "/home/alice", "pw1", "reasoning_content", "thinking_blocks"):
        assert leak not in text, leak
    assert json.loads(out["tool_calls"][0]["function"]["arguments"])["command"] == "run"
    assert clean_value(out) == out  # idempotent


def test_keys_are_cleaned_too() -> None:
    out = clean_value({"/home/alice/a.txt": "sha256:" + "a" * 64})
    assert out == {"<HOME>/a.txt": "sha256:" + "a" * 64}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("ls /home/alice|wc -l", "ls <HOME>|wc -l"),
        ("ls /home/alice*", "ls <HOME>*"),
        ("`ls /home/alice`", "`ls <HOME>`"),
        ("docker run -v/home/alice/d:/d x", "docker run -v<HOME>/d:/d x"),
        ("-v/mnt/c/Users/dave/proj:/w", "-v<HOME>/proj:/w"),
        ('{"p": "\\/home\\/alice\\/x"}', '{"p": "<HOME>\\/x"}'),
        ("C:\\Users\\Dave Smith\\Desktop", "<HOME>\\Desktop"),
        ("C:/Users/dave/x", "<HOME>/x"),
        ("cat ~alice/notes", "cat <HOME>/notes"),
        ("out:\\n/home/alice/x", "out:\\n<HOME>/x"),
        ("it takes ~seconds", "it takes ~seconds"),
    ],
)
def test_host_paths_in_every_spelling(text: str, expected: str) -> None:
    assert strip_host_paths(text) == expected


def test_clean_document_for_whole_files() -> None:
    doc = json.dumps({"note": f"{SECRET} at {PATH}", "nested": json.dumps({"rollout_dir": PATH})})
    stats = CleanStats()
    out = clean_document(doc, stats)
    assert SECRET not in out and "/home/alice" not in out and json.loads(out)
    md = f"# Card\n\nrun at {PATH} with {SECRET}\n"
    assert (
        clean_document(md)
        == "# Card\n\nrun at <HOME>/work/run.log with key [REDACTED:anthropic_key]\n"
    )
    assert stats.n_redactions == 1 and stats.n_host_paths == 2
