"""Raw fragments on a trial page (the clipped head of a huge JSONL line, a line of a
pretty-printed document) never show private reasoning: the part is removed as the export
removes it from a parsed value, whatever its place in the fragment."""

import json
from pathlib import Path

import pytest

from bf_assets.findings import finding
from bf_assets.pages.evidence import build_window
from bf_assets.pages.lines import TrialFiles
from bf_assets.pages.scrub import REMOVED, Scrub, mask_keys

SECRET_THOUGHT = "PRIVATE-chain-of-thought-7f3a"


@pytest.mark.parametrize(
    "fragment, kept",
    [
        (  # Anthropic thinking block in a request's history, the line clipped after it
            '{"request": {"body": {"messages": [{"role": "assistant", "content": [{"type": '
            f'"thinking", "thinking": "{SECRET_THOUGHT}", "signature": "c2ln"}}, '
            '{"type": "text", "text": "the visible answer',
            "the visible answer",
        ),
        (  # OpenAI Responses reasoning item with its summary
            '{"response": {"body": {"output": [{"id": "rs_01", "type": "reasoning", "summary": '
            f'[{{"type": "summary_text", "text": "{SECRET_THOUGHT}"}}]}}, {{"type": "message", '
            '"content": "done"}]}}',
            '"content": "done"',
        ),
        (  # Gemini: the thought's text comes before the flag that makes it one
            '{"contents": [{"role": "model", "parts": [{"text": '
            f'"{SECRET_THOUGHT}", "thought": true}}, {{"text": "a plain part"}}]}}]}}',
            "a plain part",
        ),
        (  # OpenRouter-style reasoning detail inside a list, the line clipped after it
            '{"choices": [{"message": {"content": "ok", "reasoning_details": [{"type": '
            f'"reasoning.text", "text": "{SECRET_THOUGHT}"}}], "refusal": nu',
            '"content": "ok"',
        ),
    ],
)
def test_a_reasoning_part_is_removed_from_a_fragment(fragment: str, kept: str) -> None:
    masked, _ = mask_keys(fragment)
    assert SECRET_THOUGHT not in masked and f'"{REMOVED}"' in masked
    shown, _ = Scrub().fragment(fragment)
    assert SECRET_THOUGHT not in shown and kept in shown


def test_a_part_the_fragment_ends_inside_is_cut_there() -> None:
    head = '{"content": [{"type": "text", "text": "before"}, {"type": "thinking", "thinking": "'
    shown, left_open = mask_keys(head + SECRET_THOUGHT)
    assert SECRET_THOUGHT not in shown and '"before"' in shown
    assert shown.endswith(f'"{REMOVED}"')
    assert left_open == 1  # still inside the part: the next lines of a document are its own


def test_words_inside_a_string_and_other_types_are_left_alone() -> None:
    quoted = json.dumps({"note": 'a task may say "type": "thinking" in its text', "k": 1})
    assert mask_keys(quoted) == (quoted, 0)
    tool = '{"type": "tool_use", "name": "bash", "input": {"command": "ls"}}'
    assert mask_keys(tool) == (tool, 0)


def test_a_pretty_printed_reasoning_part_is_hidden_line_by_line(tmp_path: Path) -> None:
    """A document's lines are shown one by one: the part's lines after its ``type`` line
    are left out until its closing brace, and the lines after it are shown again."""
    trial = tmp_path / "jobs" / "job-1" / "trial-1"
    trial.mkdir(parents=True)
    doc = {
        "agent_result": {
            "content": [
                {"type": "thinking", "thinking": SECRET_THOUGHT, "signature": "c2ln"},
                {"type": "text", "text": "the visible answer"},
            ]
        },
        "reward": 1.0,
    }
    (trial / "result.json").write_text(json.dumps(doc, indent=2))
    lines = (trial / "result.json").read_text().splitlines()
    cited = next(i for i, ln in enumerate(lines, 1) if SECRET_THOUGHT in ln)
    files = TrialFiles(str(trial), str(tmp_path))
    f = finding("GATE_REWARD_MISSING", "cited line", file="result.json", line=cited)
    files.want("result.json", range(1, len(lines) + 1))
    w = build_window(files, f, "ev1", Scrub())
    shown = {line.number: line.text.strip() for line in w.lines}
    assert SECRET_THOUGHT not in "\n".join(shown.values())
    assert shown[cited - 2] == f'"{REMOVED}"'  # the part's brace: removed from there
    for n in (cited - 1, cited, cited + 1):  # its type, thinking and signature lines
        assert shown[n] == f"… {REMOVED}"
    assert shown[cited + 3] == "{"  # the next part is shown again


@pytest.mark.parametrize(
    "part",
    [
        {"text": SECRET_THOUGHT, "thought": True},  # Gemini: the flag after the text
        {"id": "rs_01", "summary": [{"text": SECRET_THOUGHT}], "type": "reasoning"},
    ],
)
def test_a_document_part_whose_mark_comes_late_is_hidden_from_its_brace(
    tmp_path: Path, part: dict[str, object]
) -> None:
    trial = tmp_path / "jobs" / "job-1" / "trial-1"
    trial.mkdir(parents=True)
    doc = {"parts": [part, {"text": "the visible answer"}], "reward": 1.0}
    (trial / "result.json").write_text(json.dumps(doc, indent=2))
    lines = (trial / "result.json").read_text().splitlines()
    secret_at = next(i for i, ln in enumerate(lines, 1) if SECRET_THOUGHT in ln)
    assert any(SECRET_THOUGHT in ln for ln in lines[secret_at - 3 : secret_at + 3])
    files = TrialFiles(str(trial), str(tmp_path))
    f = finding("GATE_REWARD_MISSING", "cited line", file="result.json", line=secret_at + 1)
    files.want("result.json", range(1, len(lines) + 1))
    w = build_window(files, f, "ev1", Scrub())
    assert any(ln.number == secret_at for ln in w.lines)  # the window holds the text's line
    shown = "\n".join(line.text for line in w.lines)
    assert SECRET_THOUGHT not in shown and REMOVED in shown


def test_raw_pages_show_the_fragment_as_written() -> None:
    raw = f'{{"type": "thinking", "thinking": "{SECRET_THOUGHT}"}}'
    assert Scrub(clean=False).fragment(raw) == (raw, 0)


def test_a_window_deep_inside_a_long_reasoning_part_shows_none_of_it(tmp_path: Path) -> None:
    """A cited line too long to parse is shown as its head and the bytes around the
    evidence; when the evidence lies deep inside a thinking block (its ``type`` far before
    that window), the window shows none of the block, and what follows the block is kept."""
    trial = tmp_path / "jobs" / "job-1" / "trial-1"
    (trial / "trajectory").mkdir(parents=True)
    needle = "needle-phrase-0123456789"
    thought = f"{SECRET_THOUGHT} " * 3000 + needle + f" {SECRET_THOUGHT}" * 6000
    line = {
        "request": {
            "body": {
                "messages": [
                    {
                        "role": "assistant",
                        "content": [
                            {"type": "thinking", "thinking": thought, "signature": "c2ln"},
                            {"type": "text", "text": "the visible answer"},
                        ],
                    }
                ]
            }
        }
    }
    rel = "trajectory/llm_trajectory.jsonl"
    (trial / rel).write_text(json.dumps(line) + "\n" + json.dumps({"n": 2}) + "\n")
    assert (trial / rel).stat().st_size > 256 * 1024  # past what a page parses as a value
    files = TrialFiles(str(trial), str(tmp_path))
    f = finding("NOSKILL_LEAK", "cited", file=rel, line=1, evidence=needle)
    files.want(rel, [1, 2])
    w = build_window(files, f, "ev1", Scrub())
    [cited] = [ln for ln in w.lines if ln.cited]
    assert SECRET_THOUGHT not in cited.text and needle not in cited.text
    assert REMOVED in cited.text
    raw = build_window(files, f, "ev1", Scrub(clean=False))
    [cited_raw] = [ln for ln in raw.lines if ln.cited]
    assert needle in cited_raw.text  # the window is the one around the evidence


def test_brackets_and_escaped_quotes_inside_the_part_s_strings_do_not_end_it() -> None:
    part = {"type": "thinking", "thinking": f'{SECRET_THOUGHT} "}}]" \\ {{', "signature": "x"}
    text = json.dumps([part, {"type": "text", "text": "after"}])
    masked, left_open = mask_keys(text)
    assert masked == f'["{REMOVED}", {{"type": "text", "text": "after"}}]' and left_open == 0


def test_a_banned_value_closed_on_its_line_hides_no_following_line(tmp_path: Path) -> None:
    trial = tmp_path / "jobs" / "job-1" / "trial-1"
    trial.mkdir(parents=True)
    text = '{\n  "reasoning_content": {"a": 1},\n  "reward": 1.0,\n  "status": "ok"\n}\n'
    (trial / "result.json").write_text(text)
    files = TrialFiles(str(trial), str(tmp_path))
    f = finding("GATE_REWARD_MISSING", "cited", file="result.json", line=3)
    files.want("result.json", range(1, 6))
    shown = {ln.number: ln.text.strip() for ln in build_window(files, f, "ev1", Scrub()).lines}
    assert shown[3] == '"reward": 1.0,' and shown[4] == '"status": "ok"'
    assert "a" not in shown[2].replace("[removed]", "")


def test_a_thought_whose_flag_comes_after_the_fragment_is_removed() -> None:
    """A Gemini thought says ``"thought": true`` after its text: a fragment clipped inside
    the text is cut where the part begins once what follows in the line shows the flag."""
    line = json.dumps(
        {
            "contents": [
                {"role": "user", "parts": [{"text": "the task"}]},
                {"role": "model", "parts": [{"text": SECRET_THOUGHT * 200, "thought": True}]},
            ]
        }
    )
    cut = line.index(SECRET_THOUGHT) + 100
    shown, left_open = mask_keys(line[:cut], line[cut:])
    assert SECRET_THOUGHT[:20] not in shown and '"the task"' in shown
    assert shown.endswith(f'"{REMOVED}"') and left_open == 1
    assert SECRET_THOUGHT[:20] in mask_keys(line[:cut])[0]  # without what follows: unknown
    other = json.dumps({"parts": [{"text": "plain " * 50}, {"text": "x", "thought": True}]})
    cut = other.index("plain") + 40  # the thought begins after the fragment: nothing cut
    assert mask_keys(other[:cut], other[cut:]) == (other[:cut], 0)


def test_the_head_of_a_long_line_hides_a_thought_it_is_clipped_inside(tmp_path: Path) -> None:
    trial = tmp_path / "jobs" / "job-1" / "trial-1"
    (trial / "trajectory").mkdir(parents=True)
    body = {
        "contents": [
            {"role": "model", "parts": [{"text": SECRET_THOUGHT * 300, "thought": True}]},
            {"role": "user", "parts": [{"text": "filler " * 50000}]},
        ]
    }
    rel = "trajectory/llm_trajectory.jsonl"
    (trial / rel).write_text(json.dumps({"request": {"body": body}}) + "\n")
    assert (trial / rel).stat().st_size > 256 * 1024
    files = TrialFiles(str(trial), str(tmp_path))
    f = finding("NOSKILL_LEAK", "cited", file=rel, line=1, evidence="filler filler")
    files.want(rel, [1])
    [cited] = [ln for ln in build_window(files, f, "ev1", Scrub()).lines if ln.cited]
    assert SECRET_THOUGHT not in cited.text and REMOVED in cited.text
