"""The CLI review's memory per trial stays small, and its slim path prints exactly what the
in-memory review prints (JSON, table, summary, exit condition), under one or several roots."""

from __future__ import annotations

import io
import pickle
import shutil
import tracemalloc
from pathlib import Path

import orjson
import pytest

from bf_assets.cli.main import _table
from bf_assets.corpus.run import ReviewReport, review_roots
from bf_assets.ingest.discovery import TrialRef
from bf_assets.review.options import ReviewOptions
from bf_sample.generator import generate_corpus

SMALL, LARGE = 100, 500  # both reviewed by worker processes (64 trials or more)
# Kept per trial by the report (slim review, its share of the dataset review with its export
# decision, store index). Without a plan every attempt is a coverage slot of its own
# (repeats are trials, not duplicates), a slim review keeps its execution state, and
# findings on JSON files carry their own line and excerpt (fewer equal lists to share):
# about 960 bytes measured here. The bound still fails a per-trial copy of a review's files
# or story, and any growth with a trial's size.
MAX_RETAINED_PER_TRIAL = 1000


@pytest.fixture(scope="module")
def corpora(tmp_path_factory: pytest.TempPathFactory) -> dict[int, Path]:
    out = {}
    for n in (SMALL, LARGE):
        root = tmp_path_factory.mktemp(f"mem{n}")
        generate_corpus(root, n, seed=11)
        out[n] = root / "jobs"
    return out


def _measure(jobs: Path) -> tuple[int, int]:
    """(bytes retained by the report, trials): tracemalloc in this process, the one that
    keeps the slim reviews (the workers' own memory is theirs)."""
    opts = ReviewOptions(workers=2)
    review_roots([jobs], opts, slim=True).close()  # imports, caches and rules loaded once
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        report = review_roots([jobs], opts, slim=True)
        kept = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    n = len(report.trials)
    report.close()
    return kept - base, n


def test_memory_per_trial_is_bounded(corpora: dict[int, Path]) -> None:
    kept_s, n_s = _measure(corpora[SMALL])
    kept_l, n_l = _measure(corpora[LARGE])
    assert (n_s, n_l) == (SMALL, LARGE)
    per_trial = (kept_l - kept_s) / (n_l - n_s)
    assert per_trial <= MAX_RETAINED_PER_TRIAL, f"{per_trial:.0f} bytes kept per trial"


def _outputs(report: ReviewReport) -> tuple[list[object], bytes, dict[str, object], bool]:
    table = io.BytesIO()
    _table(report, table)
    trials = [orjson.loads(b) for b in report.trial_json()]
    return trials, table.getvalue(), report.summary, report.all_publishable()


def _plan(tmp_path: Path) -> Path:
    plan = tmp_path / "plan.yaml"
    plan.write_text(
        "name: mem\nmin_coverage: 0.5\nmatrix:\n"
        "  - tasks: [citation-check, log-anomaly, no-such-task]\n"
        "    harnesses: [claude-agent-acp, codex-acp]\n"
        "    models: [anthropic/claude-sonnet-4-5, openai/gpt-5]\n"
        "    skill_modes: [with-skill, no-skill]\n    sandboxes: [daytona, docker]\n"
        "    trials: 2\n    required: true\n"
    )
    return plan


@pytest.mark.parametrize("with_plan", [False, True])
def test_slim_path_prints_what_the_in_memory_review_prints(
    corpora: dict[int, Path], tmp_path: Path, with_plan: bool
) -> None:
    opts = ReviewOptions(workers=2, plan_path=str(_plan(tmp_path)) if with_plan else None)
    full = review_roots([corpora[SMALL]], opts)
    slim = review_roots([corpora[SMALL]], opts, slim=True)
    try:
        assert _outputs(slim) == _outputs(full)
    finally:
        slim.close()
    assert all(not t.whole for t in slim.trials) and all(t.whole for t in full.trials)
    assert slim.dataset.store is not None and full.dataset.store is None


def test_slim_path_with_keys_shared_between_roots(corpora: dict[int, Path], tmp_path: Path) -> None:
    """Two roots holding the same job and rollout names: the dataset review's maps keep the
    last trial of a key, and the slim path does the same."""
    for name in ("a", "b"):
        shutil.copytree(corpora[SMALL], tmp_path / name / "jobs", symlinks=True)
    roots = [tmp_path / "a" / "jobs", tmp_path / "b" / "jobs"]
    q = tmp_path / "quarantine.yaml"
    first = sorted(p for p in sorted(roots[1].iterdir())[0].iterdir() if p.is_dir())[0]
    q.write_text(
        f"- trial: b/jobs/{first.parent.name}/{first.name}\n  action: quarantine\n"
        "  reason: second copy\n  by: reviewer\n  at: 2026-11-03\n"
    )
    opts = ReviewOptions(workers=1, quarantine_path=str(q))
    full = review_roots(roots, opts)
    slim = review_roots(roots, opts, slim=True)
    try:
        assert _outputs(slim) == _outputs(full)
    finally:
        slim.close()
    assert len(full.trials) == 2 * SMALL


def test_slim_review_reads_like_the_review(corpora: dict[int, Path]) -> None:
    opts = ReviewOptions(workers=1)
    full = review_roots([corpora[SMALL]], opts)
    slim = review_roots([corpora[SMALL]], opts, slim=True)
    assert len(full.trials) == len(slim.trials)
    for f, s in zip(full.trials, slim.trials, strict=True):
        assert not s.whole
        r = s.replace()  # a whole review of the slim one's values
        assert r.ref == f.ref and s.ref.path == f.ref.path and s.ref.rel_path == f.ref.rel_path
        assert (s.ref.job_key, s.ref.rollout, s.ref.root) == (
            f.ref.job_key,
            f.ref.rollout,
            f.ref.root,
        )
        fi, si = f.identity, s.identity
        for name in ("task_id", "harness", "model", "skill_mode", "sandbox", "trial_index",
                     "job", "rollout", "source_ref", "task_digest", "started_at"):  # fmt: skip
            assert getattr(si, name) == getattr(fi, name) == getattr(r.identity, name), name
        assert si.slot() == fi.slot()
        for name in ("layout", "outcome", "healthy", "training_ready", "attribution", "reward"):
            assert getattr(s, name) == getattr(f, name) == getattr(r, name), name
    slim.close()


def test_trial_ref_keeps_its_path_only_when_it_is_not_derived() -> None:
    plain = TrialRef(
        root="/runs/jobs", path="/runs/jobs/j1/t1", rel_path="j1/t1",
        job_key="jobs/j1", job="j1", rollout="t1", layout="production",
    )  # fmt: skip
    assert plain.own_path is None and plain.path == "/runs/jobs/j1/t1"
    odd = TrialRef(
        "/runs/jobs", "/runs/jobs/j1/t\udcff", "j1/t\\xff", "jobs/j1", "j1", "t\\xff", "flat"
    )
    assert odd.own_path == "/runs/jobs/j1/t\udcff" and odd.path == odd.own_path
    itself = TrialRef("/runs/t", "/runs/t", ".", "runs", "runs", "t", "flat")
    assert itself.own_path is None and itself.path == "/runs/t"
    for ref in (plain, odd, itself):
        back = pickle.loads(pickle.dumps(ref))
        assert back == ref and hash(back) == hash(ref) and back.path == ref.path
        assert list(ref.to_dict()) == [
            "root", "path", "rel_path", "job_key", "job", "rollout", "layout", "link_escape",
        ]  # fmt: skip
        assert TrialRef(**ref.to_dict()) == ref  # type: ignore[arg-type]
