"""The rollout ``results.jsonl`` reader: small rows parsed whole, big rows streamed.

A row over ``ReadLimits.max_line_bytes`` goes through the huge-row parsers; it must give
the same top-level keys and step facts as the small path, and hold at most one step.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from trialkit import ROWS_FILE, Trial, peak_traced_memory

from bf_assets.ingest.messages import StepFacts, StepValidator
from bf_assets.ingest.readers import ReadLimits
from bf_assets.ingest.rowstream import RowsRead, read_rows


def rows_with_facts(path: Path, root: Path, limits: ReadLimits) -> tuple[RowsRead, list[StepFacts]]:
    facts: list[StepFacts] = []
    read = read_rows(
        path, root, lambda i, step: facts.append(StepValidator().facts(i, step)), limits
    )
    return read, facts


STREAMED = ReadLimits(max_line_bytes=512)


def test_streamed_row_gives_the_same_facts_as_the_small_path(trial: Trial) -> None:
    path = trial.file(ROWS_FILE)
    assert path.stat().st_size > STREAMED.max_line_bytes
    small, small_steps = rows_with_facts(path, trial.root, ReadLimits())
    big, big_steps = rows_with_facts(path, trial.root, STREAMED)
    assert len(small_steps) == 2 and big_steps == small_steps
    assert big.rows[0].top == small.rows[0].top
    assert "trajectory" not in big.rows[0].top
    assert (big.rows[0].n_steps, big.rows[0].trajectory_is_list) == (2, True)
    assert big.stats == small.stats and big.rows[0].issues == []


def test_streamed_row_on_the_trial_stays_healthy(trial: Trial) -> None:
    review = trial.review(ReadLimits(max_line_bytes=2000))  # LLM lines fit, the row streams
    assert review.findings == [] and review.training_ready


@pytest.mark.parametrize(
    "text",
    [
        '{"a": 1, "trajectory": [1, {"x": [1, 2]}, [3]], "b": {"c": [true, null]}}',
        '{"trajectory": "not a list", "k": 1}',
        '{"a": 1} {"b": 2}',
        '{"a": [1, 2',
        "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]",
        '{"a": ' + "[" * 600 + "]" * 600 + "}",
    ],
)
def test_streamed_and_small_paths_agree(tmp_path: Path, text: str) -> None:
    p = tmp_path / "results.jsonl"
    p.write_text(text + "\n")
    small, small_steps = rows_with_facts(p, tmp_path, ReadLimits())
    big, big_steps = rows_with_facts(p, tmp_path, ReadLimits(max_line_bytes=8))
    assert big_steps == small_steps
    s, b = small.rows[0], big.rows[0]
    assert (b.n_steps, b.trajectory_is_list) == (s.n_steps, s.trajectory_is_list)
    if isinstance(s.top, dict):
        assert b.top == s.top
    else:  # both reject a line that is not one JSON object
        assert b.top is None and b.issues


@pytest.mark.parametrize(
    "data", [b'{"a": NaN, "trajectory": []}', b'{"a": "\xff", "trajectory": []}']
)
def test_streamed_row_reads_nonfinite_and_bad_utf8_like_the_small_path(
    tmp_path: Path, data: bytes
) -> None:
    p = tmp_path / "results.jsonl"
    p.write_bytes(data + b"\n")
    small, _ = rows_with_facts(p, tmp_path, ReadLimits())
    big, _ = rows_with_facts(p, tmp_path, ReadLimits(max_line_bytes=8))
    assert isinstance(small.rows[0].top, dict)
    assert big.rows[0].top == small.rows[0].top
    assert [i.kind for i in big.rows[0].issues] == [i.kind for i in small.rows[0].issues]


def test_streamed_big_row_memory_is_bounded_by_its_largest_step(
    trial: Trial, tmp_path: Path
) -> None:
    row = trial.read_line(ROWS_FILE)
    step = row["trajectory"][1]
    step["response"]["pad"] = "x" * 120_000
    row["trajectory"] = [step] * 200  # ~20 MB on one line, over the 16 MiB line cap
    p = tmp_path / "results.jsonl"
    p.write_text(json.dumps(row) + "\n")
    assert p.stat().st_size > 20 * 1024 * 1024
    with peak_traced_memory() as peak:
        read, facts = rows_with_facts(p, tmp_path, ReadLimits())
    assert len(facts) == 200 and read.rows[0].issues == []
    assert peak[0] < 16 * 1024 * 1024


def test_row_over_the_row_cap_is_unreadable(trial: Trial) -> None:
    review = trial.review(ReadLimits(max_line_bytes=1500, max_row_bytes=2048))
    assert ("GATE_UNREADABLE", ROWS_FILE) in {(f.check, f.file) for f in review.findings}
