"""``bf-assets review``: exit codes, the JSON contract, progress only on a terminal."""

import io
import json
from pathlib import Path

import pytest
from trialkit import Trial, healthy_spec

from bf_assets.cli import main as cli
from bf_assets.ingest.discovery import TrialRef

TRIAL_FIELDS = {
    "path",
    "task_id",
    "harness",
    "model",
    "skill_mode",
    "sandbox",
    "trial_index",
    "layout",
    "outcome",
    "healthy",
    "training_ready",
    "verdict",
    "attribution",
    "skills",
    "findings",
}


@pytest.fixture
def healthy(tmp_path: Path) -> Trial:
    return healthy_spec().write(tmp_path / "runs")


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = cli.main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_exit_0_when_every_trial_is_healthy_and_publishable(
    healthy: Trial, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _run(["review", str(healthy.root), "--json"], capsys)
    data = json.loads(out)
    [t] = data["trials"]
    assert code == 0, t["findings"]
    assert set(t) >= TRIAL_FIELDS
    assert (t["outcome"], t["healthy"], t["training_ready"], t["verdict"]) == (
        "pass",
        True,
        True,
        "publishable",
    )
    assert t["path"] == healthy.ref().rel_path  # relative to the run root
    for f in t["findings"]:
        assert set(f) == {"check", "severity", "message", "file", "line", "evidence"}
    assert data["summary"]["trials"] == 1 and data["summary"]["release_verdict"] == "publishable"
    # piped --json output: no progress on stderr, only the one-line warning (no --tasks)
    assert err == f"bf-assets: {cli.NO_TASK_TREE}\n"


def test_exit_1_when_a_trial_is_not_publishable(
    healthy: Trial, capsys: pytest.CaptureFixture[str]
) -> None:
    healthy.drop("trajectory/llm_trajectory.jsonl")
    code, out, _ = _run(["review", str(healthy.root), "--json"], capsys)
    [t] = json.loads(out)["trials"]
    assert code == 1
    assert t["verdict"] == "rejected" and "GATE_LLM_MISSING" in {f["check"] for f in t["findings"]}


def test_readable_table_without_json(healthy: Trial, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(["review", str(healthy.root)], capsys)
    assert code == 0
    assert "OUTCOME" in out and "release verdict: publishable" in out


def test_a_root_without_trials_says_so(
    healthy: Trial, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The wrong folder (no trial under it) is named as such, in the JSON and the table,
    not only as an empty export; a root that does hold trials gets no such reason."""
    empty = tmp_path / "empty" / "jobs"
    (empty / "some-job").mkdir(parents=True)
    code, out, _ = _run(["review", str(empty), "--json"], capsys)
    summary = json.loads(out)["summary"]
    assert code == 1 and summary["trials"] == 0
    [reason] = summary["release_reasons"]
    assert reason.startswith("nothing to export (0 export rows: no trials were found")
    code, out, _ = _run(["review", str(empty)], capsys)
    assert "why:             nothing to export (0 export rows: no trials were found" in out
    healthy.drop("trajectory/llm_trajectory.jsonl")  # rejected: nothing left to export
    code, out, _ = _run(["review", str(healthy.root), "--json"], capsys)
    reasons = json.loads(out)["summary"]["release_reasons"]
    assert any(r.startswith("nothing to export (0 export rows)") for r in reasons), reasons
    assert not any("no trials were found" in r for r in reasons)


@pytest.mark.parametrize(
    "argv",
    [
        ["review"],  # no path
        ["review", "/nonexistent/run/root"],
        ["review", ".", "--workers", "0"],
        ["review", ".", "--plan", "/nonexistent/plan.yaml"],
        ["frobnicate"],
    ],
)
def test_exit_2_on_bad_usage(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _run(argv, capsys)
    assert code == 2 and "error" in err


def test_exit_2_on_a_bad_plan_file(
    healthy: Trial, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plan = tmp_path / "plan.yaml"
    plan.write_text("matrix: not-a-list\n")
    code, _, err = _run(["review", str(healthy.root), "--plan", str(plan)], capsys)
    assert code == 2 and "plan.yaml" in err  # the error names the file and what is wrong


def test_a_crash_is_exit_2_never_1(
    healthy: Trial, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def boom(*a: object, **k: object) -> None:
        raise RuntimeError("internal failure")

    monkeypatch.setattr("bf_assets.corpus.run.review_roots", boom)
    code, _, err = _run(["review", str(healthy.root), "--json"], capsys)
    assert code == 2 and "internal error" in err


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_only_on_a_terminal() -> None:
    ref = TrialRef(
        root="/r",
        path="/r/j/t",
        rel_path="j/t",
        job_key="jobs/j",
        job="j",
        rollout="t",
        layout="production",
    )
    tty, pipe = _Tty(), io.StringIO()
    for stream in (tty, pipe):
        progress = cli._Progress(stream)
        progress(1, 2, ref)
        progress(2, 2, ref)
    assert "2/2 trials" in tty.getvalue() and "jobs/j" in tty.getvalue()
    assert pipe.getvalue() == ""


def test_without_a_task_tree_a_one_line_warning_in_every_format(
    healthy: Trial, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for fmt in ([], ["--json"]):
        _, _, err = _run(["review", str(healthy.root), *fmt], capsys)
        assert err.splitlines() == [f"bf-assets: {cli.NO_TASK_TREE}"]
        assert "--tasks DIR" in err and "skills cannot be checked" in err
    tasks = tmp_path / "tasks"
    tasks.mkdir()
    _, _, err = _run(["review", str(healthy.root), "--tasks", str(tasks)], capsys)
    assert err == ""


def test_phases_show_on_a_terminal_only() -> None:
    from bf_assets.cli.progress import Phases

    tty, pipe = _Tty(), io.StringIO()
    for stream in (tty, pipe):
        phases = Phases(stream)
        with phases.phase("reading and reviewing trials", 4) as advance:
            advance(2)
            advance(2)
        with phases.phase("walking the run roots"):
            pass
    assert "reading and reviewing trials" in tty.getvalue() and "4/4" in tty.getvalue()
    assert "walking the run roots" in tty.getvalue()
    assert pipe.getvalue() == ""
