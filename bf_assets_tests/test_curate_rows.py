"""Export rows: built from a streamed ``results.jsonl``, cleaned, and re-scanned."""

from __future__ import annotations

import copy
import json
from collections import Counter
from pathlib import Path
from typing import Any

import orjson
import pytest
from trialkit import FINISHED, ROWS_FILE, Trial, healthy_spec

from bf_assets.curate.candidate import Candidate
from bf_assets.curate.rows import (
    CurationError,
    build_row,
    norm_message,
    prime_sft_row,
    trl_sft_rows,
)
from bf_assets.curate.scan import scan_row, schema_problems
from bf_assets.curate.schema import column_names
from bf_assets.ingest.readers import ReadLimits
from bf_assets.redact.clean import CleanStats, clean_value, strip_host_paths

SECRET = "sk-ant-api03-" + "Zx9" * 14
HOST = "/home/alice/projects/bench/notes.txt"


def leaky_trial(root: Path) -> Trial:
    """A healthy, publishable trial with a secret, a host path and reasoning fields where
    the gate allows them (tool output, raw response bodies, step extras)."""
    spec = healthy_spec()
    assert spec.llm is not None
    follow = spec.llm[1]["request"]["body"]["messages"]
    follow[-1]["content"] = f"ok, key {SECRET} saved to {HOST} and file:///Users/bob/x.txt"
    for ex in spec.llm:
        msg = ex["response"]["body"]["choices"][0]["message"]
        msg["reasoning_content"] = "private chain of thought"
        msg["provider_specific_fields"] = {"thinking_blocks": ["secret thoughts"]}
        ex["metadata"]["reasoning_content"] = "more private thoughts"
    spec.rebuild_steps().sync()
    return spec.write(root)


def checks(findings: list[Any]) -> Counter[str]:
    return Counter(f.check for f in findings)


def test_healthy_trial_gives_a_schema_valid_clean_row(trial: Trial) -> None:
    review = trial.review()
    stats = CleanStats()
    steps: list[dict[str, Any]] = []
    row = build_row(trial.path, review, stats=stats, on_step=lambda i, s: steps.append(s))
    assert list(row) == column_names("rollouts")
    assert scan_row(row) == []
    assert row["outcome"] == "pass" and row["reward"] == 1.0 and row["training_ready"] is True
    assert row["n_steps"] == len(steps) == 2 and row["n_tool_calls"] == 1
    assert row["token_usage"]["input_tokens"] == 240 and row["token_usage"]["total_tokens"] == 265
    assert [m["role"] for m in row["messages"]] == [
        "system",
        "user",
        "assistant",
        "tool",
        "assistant",
    ]
    call = row["messages"][2]["tool_calls"][0]
    assert json.loads(call["function"]["arguments"]) == {"command": "echo hi > hello.txt"}
    assert json.loads(row["tools"])[0]["function"]["name"] == "terminal"
    traj = json.loads(row["trajectory"])
    assert "response" not in traj[0] and traj[0]["response_meta"]["finish_reason"] == "tool_calls"
    assert row["rollout_id"] == Candidate.from_review(review).rollout_id
    assert row["results_sha256"] and row["llm_trajectory_sha256"]
    assert scan_row(prime_sft_row(row), "prime_sft") == []
    trl = list(trl_sft_rows(row, steps))
    assert [r["exchange_index"] for r in trl] == [0, 1]
    assert all(scan_row(r, "trl_sft") == [] for r in trl)


def test_secrets_host_paths_and_banned_keys_are_cleaned(runs_root: Path) -> None:
    trial = leaky_trial(runs_root)
    review = trial.review()
    assert review.verdict == "publishable" and review.training_ready, review.findings
    stats = CleanStats()
    row = build_row(trial.path, review, stats=stats)
    text = orjson.dumps(row).decode()
    for leaked in (SECRET, "/home/alice", "/Users/bob", "file://", "reasoning_content"):
        assert leaked not in text
    assert "private chain of thought" not in text and "thinking_blocks" not in text
    assert stats.redactions["anthropic_key"] >= 1
    assert stats.banned_keys["private reasoning"] >= 1
    assert stats.host_paths["<HOME>"] >= 1 and stats.host_paths["<FILE_URI>"] >= 1
    assert row["n_redactions"] >= 1 and row["n_host_paths"] >= 2
    assert "[REDACTED:anthropic_key]" in text and "<HOME>/projects/bench/notes.txt" in text
    assert scan_row(row) == []


def test_a_huge_row_is_streamed_step_by_step(trial: Trial) -> None:
    """With a line cap below the row size the row goes through the event-stream parser."""
    review = trial.review()
    small = build_row(trial.path, review)
    limits = ReadLimits(max_line_bytes=256)
    streamed = build_row(trial.path, review, limits=limits)
    assert streamed == small


def test_a_row_changed_after_review_is_refused(trial: Trial) -> None:
    review = trial.review()
    trial.set_row("reward", 0.5)
    with pytest.raises(CurationError, match="changed since"):
        build_row(trial.path, review)


@pytest.mark.parametrize(
    ("rel", "old", "new"),
    [
        ("result.json", FINISHED.encode(), FINISHED.replace("10:01", "19:59").encode()),
        (ROWS_FILE, b'"stop_condition": "agent_completed"', b'"stop_condition": "agent_complete!"'),
    ],
    ids=["result.json", "results.jsonl"],
)
def test_a_file_rewritten_in_place_after_review_is_refused(
    trial: Trial, rel: str, old: bytes, new: bytes
) -> None:
    """Every file curation reads is checked against the review's digest: a rewrite that
    keeps the size and the mtime is refused, naming the file."""
    review = trial.review()
    build_row(trial.path, review)  # as reviewed: fine
    trial.rewrite_in_place(rel, old, new)
    with pytest.raises(CurationError, match=f"^{rel} changed since the trial was reviewed"):
        build_row(trial.path, review)


def test_a_file_curation_reads_without_a_reviewed_digest_is_refused(trial: Trial) -> None:
    """No digest from the review: nothing shows the bytes are the reviewed ones."""
    cand = Candidate.from_review(trial.review())
    del cand.file_shas["result.json"]
    with pytest.raises(CurationError, match="^result.json has no digest from the review"):
        build_row(trial.path, cand)


def test_a_missing_row_is_refused(trial: Trial) -> None:
    review = trial.review()
    trial.drop(ROWS_FILE)
    with pytest.raises(CurationError, match="missing"):
        build_row(trial.path, review)


def test_scan_row_reports_every_publish_check(trial: Trial) -> None:
    row = build_row(trial.path, trial.review())
    bad = copy.deepcopy(row)
    bad["messages"][1]["content"] = f"token {SECRET} in /tmp/run-1/out.log"
    bad["tools"] = json.dumps([{"name": "x", "gold_solution": "42", "rollout_dir": "/srv/bench/j"}])
    bad["metrics"] = json.dumps({"api_key": "plaintext-value-123"})
    bad["reward"] = "high"
    bad["extra_column"] = 1
    bad["review_verdict"] = "quarantined"
    got = checks(scan_row(bad))
    assert set(got) == {
        "PUBLISH_SECRET",
        "PUBLISH_HOST_PATH",
        "PUBLISH_BANNED_KEY",
        "PUBLISH_SCHEMA",
        "PUBLISH_NOT_READY",
    }
    for f in scan_row(bad):  # evidence never repeats the secret or the path
        assert SECRET not in (f.evidence or "") + f.message
        assert "/tmp/run-1" not in (f.evidence or "") + f.message


def test_schema_checks_message_shapes(trial: Trial) -> None:
    row = build_row(trial.path, trial.review())
    bad = copy.deepcopy(row)
    bad["messages"][3]["tool_call_id"] = "call_404"
    bad["completion"][0]["tool_calls"][0]["function"]["arguments"] = {"command": "ls"}
    problems = schema_problems(bad, "rollouts")
    assert any("call_404" in p for p in problems)
    assert any("string arguments" in p for p in problems)
    trl = {k: row[k] for k in column_names("trl_sft") if k in row}
    trl.update(exchange_index=0, completion=row["completion"])  # three messages, not one
    assert "completion is not exactly one assistant message" in schema_problems(trl, "trl_sft")


def test_cleaning_is_stable_and_idempotent() -> None:
    value = {
        "headers": {"Authorization": "Bearer abcdefghijklmnop1234", "x-api-key": "k" * 20},
        "cwd": "/tmp/pytest-of-alice/x",
        "nested": [{"reasoning_content": "x", "keep": "/home/bob"}],
    }
    stats = CleanStats()
    once = clean_value(value, stats)
    assert clean_value(once) == once
    assert once["nested"] == [{"keep": "<HOME>"}] and once["cwd"] == "<TMP>/pytest-of-alice/x"
    assert stats.banned_keys["private reasoning"] == 1


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("see /home/alice/x.py", "see <HOME>/x.py"),
        ("cd /Users/Bob.Smith && ls", "cd <HOME> && ls"),
        ("out=/tmp/abc/def.txt", "out=<TMP>/abc/def.txt"),
        ("/var/folders/zz/abc123/T/tmpx", "<TMP>/T/tmpx"),
        ("open file:///srv/x.txt now", "open <FILE_URI> now"),
        ("/srv/bench/jobs/j1/t1", "<BENCH_ROOT>/jobs/j1/t1"),
        ("relative src/tmp/file and tmpfile", "relative src/tmp/file and tmpfile"),
        ("/app/home/alice stays", "/app/home/alice stays"),
    ],
)
def test_host_path_rules(text: str, expected: str) -> None:
    assert strip_host_paths(text) == expected


def test_message_normalisation() -> None:
    m = norm_message(
        {
            "role": "assistant",
            "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
            "tool_calls": [{"id": "c1", "type": "function", "name": "bash", "arguments": {"x": 1}}],
            "reasoning_content": "dropped",
        }
    )
    assert m == {
        "role": "assistant",
        "content": "a\nb",
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": '{"x":1}'}}
        ],
        "tool_call_id": None,
        "name": None,
    }


def test_repeated_text_is_cleaned_once_and_counted_per_occurrence() -> None:
    from bf_assets.redact.clean import Cleaner

    long_text = f"{SECRET} at {HOST} " + "x" * 1000
    stats = CleanStats()
    cleaner = Cleaner(stats)
    out = cleaner.value({"a": [long_text, long_text], "b": {"c": long_text}})
    assert out["a"][0] == out["a"][1] == out["b"]["c"]
    assert SECRET not in out["a"][0] and "/home/alice" not in out["a"][0]
    assert stats.redactions["anthropic_key"] == 3 and stats.host_paths["<HOME>"] == 3
    assert len(cleaner.texts.entries) == 1 and cleaner.texts.hits == 2
