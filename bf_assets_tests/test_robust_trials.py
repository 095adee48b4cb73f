"""A bad trial is a finding, always: whatever one trial holds, ``bf-assets review`` reports
it with a blocker and the trial next to it is still reviewed publishable.

Each case writes a healthy trial and a bad one under one run root and runs the CLI (JSON
and table output, with and without the review cache).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from trialkit import ACP_FILE, JOB, LLM_FILE, ROWS_FILE, Trial, healthy_spec

from bf_assets.cli import main as cli
from bf_assets.corpus.run import review_trial
from bf_assets.dataset.decide import CURATION_ERROR
from bf_assets.ingest.discovery import discover
from bf_assets.ingest.readers import escape_name, unescape_name
from bf_assets.review import tables
from bf_assets.review.options import ReviewOptions

GOOD = "good0001"


def nested(depth: int, leaf: Any = "x") -> Any:
    for _ in range(depth):
        leaf = [leaf]
    return leaf


def _bad(root: Path) -> Trial:
    return healthy_spec(rollout_id="bad00001").write(root)


def _row(t: Trial) -> dict[str, Any]:
    return t.read_line(ROWS_FILE)


def _write_row(t: Trial, row: dict[str, Any]) -> None:
    t.write_text(ROWS_FILE, json.dumps(row) + "\n")


def deep_row_top(root: Path) -> None:
    t = _bad(root)
    row = _row(t)
    row["metrics"] = {"deep": nested(300)}
    _write_row(t, row)


def deep_row_step(root: Path) -> None:
    t = _bad(root)
    row = _row(t)
    row["trajectory"][1]["extra"] = nested(300)
    _write_row(t, row)


def deep_acp_line(root: Path) -> None:
    t = _bad(root)
    t.append_line(ACP_FILE, json.dumps({"type": "agent_message", "text": nested(200)}))


def deep_llm_line(root: Path) -> None:
    t = _bad(root)
    ex = t.read_line(LLM_FILE, 2)
    ex["request"]["body"]["messages"].append({"role": "user", "content": nested(200)})
    t.write_line(LLM_FILE, 2, ex)


def deep_result(root: Path) -> None:
    t = _bad(root)
    t.set_result("extra", nested(300))


def bad_trial_name(root: Path) -> None:
    t = _bad(root)
    os.rename(os.fsencode(t.path), os.fsencode(t.path) + b"\xff\xfe")


def bad_job_name(root: Path) -> None:
    healthy_spec(rollout_id="bad00001").write(root, job="job\udcff-1")


def bad_file_name(root: Path) -> None:
    t = _bad(root)
    with open(os.fsencode(t.path) + b"/verifier/log\xff.txt", "wb") as fh:
        fh.write(b"x")


def bad_link_name(root: Path) -> None:
    t = _bad(root)  # a dangling link (a read issue) whose name is not UTF-8
    os.symlink(b"/nonexistent", os.fsencode(t.path) + b"/artifacts/l\xff")


def hidden_trial(root: Path) -> None:
    t = _bad(root)
    t.path.rename(t.path.parent / ".demo-task__bad00001")


def tmp_trial(root: Path) -> None:
    t = _bad(root)
    t.path.rename(t.path.parent / "demo-task__bad00001.tmp")


def hidden_job(root: Path) -> None:
    healthy_spec(rollout_id="bad00001").write(root, job=".trash")


def result_null(root: Path) -> None:
    _bad(root).write_text("result.json", "null")


def result_list(root: Path) -> None:
    _bad(root).write_text("result.json", "[1, 2]")


def result_number(root: Path) -> None:
    _bad(root).write_text("result.json", "3")


def lone_surrogate(root: Path) -> None:
    # NaN sends result.json through the json fallback, which reads "\ud800" as a lone
    # surrogate orjson cannot write
    t = _bad(root)
    text = t.file("result.json").read_text()
    t.write_text("result.json", text[:-1] + ', "x": NaN, "agent_name": "\\ud800"}')


def huge_int_row(root: Path) -> None:
    t = _bad(root)
    text = t.file(ROWS_FILE).read_text().rstrip("\n")
    t.write_text(ROWS_FILE, text[:-1] + ', "x": NaN, "n": ' + "9" * 5000 + "}\n")


CASES: dict[str, tuple[Callable[[Path], None], str]] = {
    "deep_row_top": (deep_row_top, "GATE_UNREADABLE"),
    "deep_row_step": (deep_row_step, "GATE_UNREADABLE"),
    "deep_acp_line": (deep_acp_line, "GATE_UNREADABLE"),
    "deep_llm_line": (deep_llm_line, "GATE_UNREADABLE"),
    "deep_result": (deep_result, "GATE_UNREADABLE"),
    "bad_trial_name": (bad_trial_name, "GATE_UNREADABLE"),
    "bad_job_name": (bad_job_name, "GATE_UNREADABLE"),
    "bad_file_name": (bad_file_name, "GATE_UNREADABLE"),
    "bad_link_name": (bad_link_name, "GATE_UNREADABLE"),
    "hidden_trial": (hidden_trial, "GATE_UNREADABLE"),
    "tmp_trial": (tmp_trial, "GATE_UNREADABLE"),
    "hidden_job": (hidden_job, "GATE_UNREADABLE"),
    "result_null": (result_null, "GATE_RESULT_INVALID"),
    "result_list": (result_list, "GATE_RESULT_INVALID"),
    "result_number": (result_number, "GATE_RESULT_INVALID"),
    "lone_surrogate": (lone_surrogate, "GATE_RESULT_INVALID"),
    "huge_int_row": (huge_int_row, "GATE_ROWS_INVALID"),
}


def _run(argv: list[str], capsysbinary: pytest.CaptureFixture[bytes]) -> tuple[int, bytes]:
    code = cli.main(argv)
    out, _ = capsysbinary.readouterr()
    return code, out


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_bad_trial_is_a_finding_and_its_neighbour_is_publishable(
    tmp_path: Path, case: str, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    build, check = CASES[case]
    root = tmp_path / "runs"
    healthy_spec(rollout_id=GOOD).write(root)
    build(root)
    code, out = _run(["review", str(root), "--json"], capsysbinary)
    assert code == 1
    trials = json.loads(out)["trials"]  # valid JSON, every name printable
    assert len(trials) == 2
    good = [t for t in trials if t["rollout"].endswith(GOOD)]
    [bad] = [t for t in trials if not t["rollout"].endswith(GOOD)]
    assert [t["verdict"] for t in good] == ["publishable"]
    blockers = {f["check"] for f in bad["findings"] if f["severity"] == "blocker"}
    assert bad["verdict"] == "rejected" and check in blockers, bad["findings"]
    # the table and the cached review say the same, and a second cached run is identical
    code, table = _run(["review", str(root)], capsysbinary)
    assert code == 1 and table.decode("utf-8").count("\n") > 3
    cache = str(tmp_path / "cache")
    assert _run(["review", str(root), "--json", "--cache-dir", cache], capsysbinary) == (1, out)
    assert _run(["review", str(root), "--json", "--cache-dir", cache], capsysbinary) == (1, out)


def test_names_that_are_not_utf8_are_shown_escaped_and_stable(
    tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    root = tmp_path / "runs"
    healthy_spec(rollout_id=GOOD).write(root)
    bad_trial_name(root)
    bad_job_name(root)
    code, out = _run(["review", str(root), "--json"], capsysbinary)
    paths = sorted(t["path"] for t in json.loads(out)["trials"])
    assert paths == [
        f"{JOB}/demo-task__bad00001\\xff\\xfe",
        f"{JOB}/demo-task__{GOOD}",
        "job\\xff-1/demo-task__bad00001",
    ]
    # reversible: the escaped path gives the real name back
    real = os.fsdecode(os.fsencode(root / JOB) + b"/demo-task__bad00001\xff\xfe")
    assert unescape_name(escape_name(real)) == real and os.path.isdir(real)
    assert _run(["review", str(root), "--json"], capsysbinary) == (code, out)  # stable
    _, table = _run(["review", str(root)], capsysbinary)
    assert b"demo-task__bad00001\\xff\\xfe" in table and b"\xff" not in table


def test_a_run_root_that_is_not_utf8_is_a_usage_error(
    tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    root = os.fsdecode(os.fsencode(tmp_path) + b"/runs\xff")
    healthy_spec(rollout_id=GOOD).write(Path(root))
    code = cli.main(["review", root, "--json"])
    out, err = capsysbinary.readouterr()
    assert code == 2 and out == b"" and b"is not a UTF-8 path" in err


@pytest.mark.parametrize("case", ["bad_file_name", "bad_link_name", "bad_trial_name"])
def test_the_ingest_table_holds_escaped_names(tmp_path: Path, case: str) -> None:
    """The Dagster ``raw_trials`` table of a job with such a trial builds (JSON columns)."""
    root = tmp_path / "runs"
    healthy_spec(rollout_id=GOOD).write(root)
    CASES[case][0](root)
    df = tables.raw_frame(discover([root]).trials)
    assert len(df) == 2
    for cell in [*df["files"], *df["read_findings"]]:
        json.loads(cell)
    bad = df[~df["rollout"].str.endswith(GOOD)].iloc[0]
    assert "GATE_UNREADABLE" in bad["read_findings"]


def test_a_trial_made_deep_after_its_review_is_a_curation_error(tmp_path: Path) -> None:
    from bf_assets.publish.bundle import bundle_reviews

    root = tmp_path / "runs"
    good = healthy_spec(rollout_id=GOOD).write(root)
    bad = healthy_spec(rollout_id="bad00001", task="other-task").write(root)
    reviews = [t.review() for t in (good, bad)]
    row = _row(bad)
    row["trajectory"][0]["extra"] = nested(300)  # after the review: curation reads it again
    _write_row(bad, row)
    b = bundle_reviews(reviews, tmp_path / "staging")
    assert [e.rollout for e in b.excluded] == [bad.path.name]
    assert b.excluded[0].reason == CURATION_ERROR
    assert [r for _, r, _ in b.exported] == [good.path.name]


@pytest.mark.parametrize("error", [TypeError("Recursion limit reached"), RecursionError()])
def test_curation_survives_an_encoder_error_of_one_trial(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, error: BaseException
) -> None:
    from bf_assets.publish import bundle, rowbuild

    root = tmp_path / "runs"
    good = healthy_spec(rollout_id=GOOD).write(root)
    bad = healthy_spec(rollout_id="bad00001", task="other-task").write(root)
    reviews = [t.review() for t in (good, bad)]
    real = rowbuild.build_row

    def build_row(trial_dir: Any, cand: Any, **kw: Any) -> Any:
        if cand.rollout == bad.path.name:
            raise error
        return real(trial_dir, cand, **kw)

    monkeypatch.setattr(rowbuild, "build_row", build_row)
    b = bundle.bundle_reviews(reviews, tmp_path / "staging")
    assert [(e.rollout, e.reason) for e in b.excluded] == [(bad.path.name, CURATION_ERROR)]
    assert [r for _, r, _ in b.exported] == [good.path.name]


def test_hidden_directories_are_walked_not_dropped(tmp_path: Path) -> None:
    root = tmp_path / "runs"
    healthy_spec(rollout_id=GOOD).write(root)
    healthy_spec(rollout_id="bad00001").write(root / ".old")
    hidden_trial(root)
    tmp_trial(root)
    refs = discover([root]).trials
    reviews = {r.rel_path: review_trial(r, ReviewOptions(audits=False)) for r in refs}
    assert sorted(reviews) == [
        f".old/{JOB}/demo-task__bad00001",
        f"{JOB}/.demo-task__bad00001",
        f"{JOB}/demo-task__bad00001.tmp",
        f"{JOB}/demo-task__{GOOD}",
    ]
    for rel, r in reviews.items():
        assert r.verdict == ("publishable" if rel.endswith(GOOD) else "rejected"), rel
