"""One call from per-trial reviews to the dataset review: coverage findings merged into each
trial, manual quarantine applied, sandbox parity, the release verdict and the report.

The CLI (``bf-assets review``) and the ``review_report`` asset both go through here.
"""

from __future__ import annotations

import shlex
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Any

import orjson

from bf_assets.contract import Outcome
from bf_assets.dataset.common import TrialKey, joined, pickled_chunks, trial_key, unpickled
from bf_assets.dataset.coverage import Coverage, compute_coverage
from bf_assets.dataset.decide import ExportDecision, decide_exports
from bf_assets.dataset.parity import ParityReport, sandbox_parity
from bf_assets.dataset.plan import Plan, load_plan
from bf_assets.dataset.quarantine import (
    QuarantineEntry,
    apply_quarantine,
    effective_verdicts,
    load_quarantine,
)
from bf_assets.dataset.release import Reasons, ReleaseAssessment, ReleaseReason, assess_release
from bf_assets.dataset.report import report_parts
from bf_assets.dataset.results import ResultsTable, dataset_results
from bf_assets.dataset.store import TrialStore, full_review, stored_json
from bf_assets.findings import Finding, sort_findings
from bf_assets.review.record import TrialReview

NOOP_HARNESSES = frozenset({"nop", "noop", "null", "null-agent"})


@dataclass(slots=True)
class DatasetReview:
    trials: list[TrialReview]
    coverage: Coverage
    quarantine: dict[TrialKey, QuarantineEntry]
    entries: list[QuarantineEntry]
    assessment: ReleaseAssessment
    release_verdict: str
    decision: ExportDecision = field(default_factory=ExportDecision)
    plan: Plan | None = None
    not_ingested: list[str] = field(default_factory=list)  # jobs found but not yet reviewed
    _parity: ParityReport | None = None
    # with a store, ``trials`` are slim reviews and each one's whole review is in the store
    store: TrialStore | None = None

    def __getstate__(self) -> dict[str, Any]:
        """Every field but sandbox parity (made again from the trials when asked for); the
        trials as :func:`pickled_chunks` (one pickler over every trial would keep some 1.6 KB
        a trial until the whole review is written)."""
        state = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "trials"}
        state["_parity"] = None  # made from the trials again when asked for
        state["trial_chunks"] = pickled_chunks(self.trials)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        chunks = state.pop("trial_chunks")
        for name, value in state.items():
            setattr(self, name, value)
        self.trials = unpickled(chunks)

    def pickle_parts(
        self,
    ) -> tuple[DatasetReview, list[Sequence[Any]], Callable[[Any, list[list[Any]]], Any]]:
        """For :func:`~bf_assets.dataset.common.dump_parted`: this review without its
        trials and decisions, the two of them, and how to put them back."""
        assessment, rebuild = self.assessment, _rebuild
        reasons = assessment.reasons
        if isinstance(reasons, Reasons) and reasons.decision is self.decision:
            # the reasons read the decision: linked again on load, not pickled twice
            assessment = replace(assessment, reasons=Reasons(reasons.head, None, reasons.tail))
            rebuild = _rebuild_linked
        # sandbox parity is made from the trials again when asked for: pickled, its 50,000
        # rows at 100,000 trials took some 35 MB of pickler memo and 19 MB of file
        head = replace(
            self, trials=[], decision=ExportDecision(), assessment=assessment, _parity=None
        )
        return head, [self.trials, self.decision.decisions], rebuild

    def trial_json(self, index: int) -> bytes:
        """Trial ``index``'s whole review as JSON (``TrialReview.to_json``), after the
        dataset review; read from the store when there is one."""
        t = self.trials[index]
        if self.store is None:
            return orjson.dumps(t.to_json())
        extra = self.coverage.trial_findings.get(trial_key(t), [])
        return stored_json(self.store, index, extra, t.verdict)

    def full_trial(self, index: int) -> TrialReview:
        """Trial ``index``'s whole review (findings with messages and evidence, skills)."""
        t = self.trials[index]
        if self.store is None:
            return t
        return full_review(t, self.trial_json(index))

    @property
    def exports(self) -> list[TrialKey]:
        """The exported trials, in review order (``decision`` says why each other is not)."""
        return self.decision.exported_keys()

    def with_curation(self, outcomes: dict[TrialKey, tuple[str, str]]) -> DatasetReview:
        """This review after curation excluded some of the trials it was handed: the
        decision, the assessment and the release verdict follow (``ExportDecision.with_curation``)."""
        if not outcomes:
            return self
        decision = self.decision.with_curation(outcomes)
        assessment = assess_release(decision, self.coverage)
        return replace(
            self, decision=decision, assessment=assessment, release_verdict=assessment.verdict
        )

    @property
    def parity(self) -> ParityReport:
        """Sandbox parity of the trials, computed when first asked for (the report and the
        ``sandbox_parity`` asset need it; the CLI summary does not)."""
        if self._parity is None:
            self._parity = sandbox_parity(self.trials)
        return self._parity

    def forget_parity(self) -> None:
        """Let go of sandbox parity (made again when next asked for): one row object a
        Docker/Daytona trial, some 19 MB at 100,000 trials."""
        self._parity = None

    def summary(self) -> dict[str, Any]:
        cov = self.coverage
        return {
            "coverage": {
                **cov.summary,
                "coverage_ratio": cov.coverage_ratio,
                "below_floor": cov.below_floor,
            },
            "quarantine_entries": len(self.entries),
            "exported": len(self.decision.exported),
            "excluded_by_reason": {
                k: v for k, v in self.decision.counts().items() if k != "exported"
            },
            "release_verdict": self.release_verdict,
            "release_reasons": reason_lines(self.assessment.decisive()),
            "results": self.results().to_dict(),
        }

    def results(self) -> ResultsTable:
        """The clean results table of this review's decision (``bf_assets.dataset.results``)."""
        return dataset_results(self)


REASON_EXAMPLES = 3


def _rebuild(head: DatasetReview, parts: list[list[Any]]) -> DatasetReview:
    """The review :meth:`DatasetReview.pickle_parts` took apart."""
    trials, decisions = parts
    head.trials = trials
    head.decision = ExportDecision(decisions)
    return head


def _rebuild_linked(head: DatasetReview, parts: list[list[Any]]) -> DatasetReview:
    """As :func:`_rebuild`, and the release reasons read the decision again."""
    ds = _rebuild(head, parts)
    r = ds.assessment.reasons
    assert isinstance(r, Reasons)
    ds.assessment = replace(ds.assessment, reasons=Reasons(r.head, ds.decision, r.tail))
    return ds


def reason_lines(reasons: Sequence[ReleaseReason]) -> list[str]:
    """The decisive reasons, one line per kind: a kind that concerns many trials is counted
    with a few examples instead of listed trial by trial (the report lists them all)."""
    by_kind: dict[str, list[ReleaseReason]] = defaultdict(list)
    for r in reasons:
        by_kind[r.kind].append(r)
    lines = []
    for kind, rs in by_kind.items():
        if len(rs) == 1:
            lines.append(rs[0].text())
            continue
        shown = ", ".join(r.subject for r in rs[:REASON_EXAMPLES])
        more = ", ..." if len(rs) > REASON_EXAMPLES else ""
        what = "slots" if "_slot_" in kind else "trials"
        lines.append(f"{kind.replace('_', ' ')}: {len(rs)} {what} (e.g. {shown}{more})")
    return lines


def probe_rewards(
    reviews: Sequence[TrialReview],
) -> tuple[dict[str, list[float | None]], dict[str, list[float | None]]]:
    """Oracle and no-op lane rewards per task (the build-time leak probes of checks.md)."""
    oracle: dict[str, list[float | None]] = defaultdict(list)
    noop: dict[str, list[float | None]] = defaultdict(list)
    for r in reviews:
        task = r.identity.task_id
        if not task:
            continue
        if r.outcome == Outcome.ORACLE:
            oracle[task].append(r.reward)
        elif (r.identity.harness or "") in NOOP_HARNESSES:
            noop[task].append(r.reward)
    return dict(oracle), dict(noop)


def assemble(
    reviews: Sequence[TrialReview],
    *,
    plan_path: str | None = None,
    quarantine_path: str | None = None,
    store: TrialStore | None = None,
) -> DatasetReview:
    """Coverage, quarantine and release verdict over reviewed trials (raises PlanError /
    QuarantineError for a bad plan or quarantine file).  With a ``store`` the reviews are
    slim ones and the store holds each one's whole review, in the same order."""
    plan = load_plan(plan_path) if plan_path else None
    entries = load_quarantine(quarantine_path) if quarantine_path else []
    oracle, noop = probe_rewards(reviews)
    cov = compute_coverage(reviews, plan, oracle_rewards=oracle, noop_rewards=noop)
    applied = apply_quarantine(reviews, entries)
    verdicts = effective_verdicts(reviews, applied, cov.trial_findings)
    merged: list[TrialReview] = []
    lists: dict[tuple[Finding, ...], list[Finding]] = {}  # equal merged lists: one object
    states: dict[tuple[Any, ...], Any] = {}  # equal states: one object
    for r in reviews:
        key = trial_key(r)
        extra = cov.trial_findings.get(key, [])
        if not extra and verdicts[key] == r.verdict and r.findings == sort_findings(r.findings):
            merged.append(r)  # unchanged: no second copy
            continue
        fs = sort_findings([*r.findings, *extra])
        fs = lists.setdefault(tuple(fs), fs)
        merged.append(r.restated(fs, verdicts[key], states))
    decision = decide_exports(merged, cov)
    assessment = assess_release(decision, cov)
    return DatasetReview(
        trials=merged,
        coverage=cov,
        quarantine=dict(applied),
        entries=list(entries),
        assessment=assessment,
        release_verdict=assessment.verdict,
        decision=decision,
        plan=plan,
        store=store,
    )


def report_pieces(
    ds: DatasetReview,
    roots: Sequence[str],
    *,
    tasks_dir: str | None = None,
    plan_path: str | None = None,
    quarantine_path: str | None = None,
    clean: Callable[[str], str] | None = None,
) -> Iterator[str]:
    """The report of ``ds`` a piece at a time (``bf_assets.dataset.report.report_parts``;
    ``clean``: the published report's cleaning of every value it shows)."""
    cmd = ["bf-assets", "review", *roots]
    if tasks_dir:
        cmd += ["--tasks", tasks_dir]
    if plan_path:
        cmd += ["--plan", plan_path]
    if quarantine_path:
        cmd += ["--quarantine", quarantine_path]
    return report_parts(
        ds.trials,
        ds.coverage,
        ds.parity,
        ds.quarantine,
        ds.release_verdict,
        list(roots),
        " ".join(shlex.quote(c) for c in cmd),
        verdicts={trial_key(r): r.verdict for r in ds.trials},
        assessment=ds.assessment,
        entries=ds.entries,
        decision=ds.decision,
        clean=clean,
        results=ds.results(),
    )


report_markdown = joined(report_pieces)
