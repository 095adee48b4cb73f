"""The CLI's dataset review with nothing of its own kept per trial.

``bf_assets.dataset.assemble`` gives every trial a merged review, an export decision, a
release reason and several dictionary entries, all alive at once: about 1 KB a trial
beside the slim review itself.  The CLI needs only three things per trial (its effective
verdict, its export decision and the figures of the summary), so :class:`StreamedDataset`
runs the same rules (coverage, quarantine, ``effective_verdict``, the decision of
``bf_assets.dataset.decide``) one trial at a time and keeps a verdict code and a decision
index per trial; the merged review of a trial is rebuilt when it is printed.  The result is
the one ``assemble`` gives, including when two trials share a ``(job, rollout)`` key (the
last one's verdict and decision stand for both, as in ``assemble``'s dictionaries).
"""

from __future__ import annotations

from array import array
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from typing import Any

import orjson

from bf_assets.batch.slimreview import SlimReview
from bf_assets.batch.summary import Tally
from bf_assets.contract import ReleaseVerdict, Verdict
from bf_assets.dataset.assemble import REASON_EXAMPLES, probe_rewards, reason_lines
from bf_assets.dataset.common import TrialKey, show_key, trial_key
from bf_assets.dataset.coverage import (
    MISSING,
    UNHEALTHY,
    Coverage,
    SlotRow,
    compute_coverage,
    superseded_reason,
)
from bf_assets.dataset.decide import EXPORTED, PROBE_REASONS
from bf_assets.dataset.decide import _reason as _decide  # the rule of decide_exports, per trial
from bf_assets.dataset.plan import load_plan
from bf_assets.dataset.quarantine import apply_quarantine, effective_verdict, load_quarantine
from bf_assets.dataset.release import ReleaseReason, nothing_to_export
from bf_assets.dataset.results import ResultTrial, result_trial, results_table
from bf_assets.findings import sort_findings
from bf_assets.review.record import TrialReview

# What the dataset review reads of a trial: a TrialReview, or a SlimReview standing for one.
Reviewed = TrialReview | SlimReview
VERDICTS = tuple(v.value for v in Verdict)
_CODE = {v: i for i, v in enumerate(VERDICTS)}
NOT = ReleaseVerdict.NOT_PUBLISHABLE.value
WITH_Q = ReleaseVerdict.PUBLISHABLE_WITH_QUARANTINES.value
CLEAN = ReleaseVerdict.PUBLISHABLE.value


class _Superseded(Mapping[TrialKey, str]):
    """``decide_exports``' superseded reasons: one text per slot row, not one per trial."""

    def __init__(self, cov: Coverage) -> None:
        self.slot_of = {k: row for row in cov.rows for k in row.superseded}
        self.text: dict[int, str] = {}

    def __contains__(self, key: object) -> bool:
        return key in self.slot_of

    def __getitem__(self, key: TrialKey) -> str:
        row = self.slot_of[key]
        hit = self.text.get(id(row))
        if hit is None:
            hit = self.text[id(row)] = superseded_reason(row)
        return hit

    def __iter__(self) -> Iterator[TrialKey]:
        return iter(self.slot_of)

    def __len__(self) -> int:
        return len(self.slot_of)


class _Excluded:
    """The release reasons about excluded trials, per kind: how many, and the first few
    (all that ``reason_lines`` shows of them)."""

    def __init__(self) -> None:
        self.count: Counter[str] = Counter()
        self.examples: dict[str, list[ReleaseReason]] = {}

    def add(self, kind: str, key: TrialKey) -> None:
        self.count[kind] += 1
        shown = self.examples.setdefault(kind, [])
        if len(shown) < REASON_EXAMPLES:
            shown.append(ReleaseReason(WITH_Q, kind, show_key(key)))

    def lines(self) -> list[str]:
        """``reason_lines`` of every reason added, in order."""
        out = []
        for kind, shown in self.examples.items():
            n = self.count[kind]
            if n == 1:
                out.extend(reason_lines(shown))
                continue
            more = ", ..." if n > REASON_EXAMPLES else ""
            what = "slots" if "_slot_" in kind else "trials"
            subjects = ", ".join(r.subject for r in shown)
            out.append(f"{kind.replace('_', ' ')}: {n} {what} (e.g. {subjects}{more})")
        return out


def _shared_keys(trials: Sequence[Reviewed]) -> list[list[int]]:
    """Indices of trials that share a key, in order.  Keys are unique under one run root;
    several roots can hold the same job and rollout names.  Found with a bitmap of key
    hashes (2 bytes a trial), then a dictionary of the few trials whose bit was taken."""
    if len({t.ref.root for t in trials}) <= 1:
        return []
    bits = 16 * len(trials)
    seen = bytearray(bits // 8 + 1)
    again: set[int] = set()  # hashes whose bit an earlier trial took
    for t in trials:
        h = hash(trial_key(t))
        b = h % bits
        if seen[b >> 3] & (1 << (b & 7)):
            again.add(h)
        seen[b >> 3] |= 1 << (b & 7)
    del seen
    groups: dict[TrialKey, list[int]] = {}
    for i, t in enumerate(trials):
        key = trial_key(t)
        if hash(key) in again:
            groups.setdefault(key, []).append(i)
    return [g for g in groups.values() if len(g) > 1]


class StreamedDataset:
    """``assemble(trials, ...)`` as the CLI prints it: per trial a verdict code and a
    decision index, the summary's figures, and each merged review on demand."""

    def __init__(
        self,
        trials: Sequence[Reviewed],
        *,
        plan_path: str | None = None,
        quarantine_path: str | None = None,
    ) -> None:
        plan = load_plan(plan_path) if plan_path else None
        self.entries = load_quarantine(quarantine_path) if quarantine_path else []
        oracle, noop = probe_rewards(trials)
        cov = compute_coverage(trials, plan, oracle_rewards=oracle, noop_rewards=noop)
        self.coverage = cov
        self.trials = trials
        shared = _shared_keys(trials)
        applied = apply_quarantine(trials, self.entries)
        self.verdicts = bytearray(len(trials))
        for i, t in enumerate(trials):
            key = trial_key(t)
            v = effective_verdict(t, applied.get(key), cov.trial_findings.get(key, ()))
            self.verdicts[i] = _CODE[v]
        for group in shared:  # assemble's verdict map: the last trial of a key wins
            for i in group:
                self.verdicts[i] = self.verdicts[group[-1]]
        self.tally = Tally()
        self.choices: list[tuple[str, str]] = []  # distinct (reason, detail) pairs
        self.fields: list[bytes] = []  # their JSON fields
        self.choice = array("I")
        self.reasons: Counter[str] = Counter()
        self.exported = 0
        excluded = _Excluded()
        self._decide(excluded)
        for group in shared:  # the decision map too
            for i in group:
                self.choice[i] = self.choice[group[-1]]
        self.verdict, self.reason_lines = self._assess(excluded)

    def _decide(self, excluded: _Excluded) -> None:
        cov = self.coverage
        superseded = _Superseded(cov)
        filled = cov.filled
        unplanned = set(cov.unplanned)
        index: dict[tuple[str, str], int] = {}
        for i, t in enumerate(self.trials):
            final = self.final(i)
            self.tally.add(final)
            pair = _decide(final, filled, superseded, unplanned)
            c = index.get(pair)
            if c is None:
                c = index[pair] = len(self.choices)
                self.choices.append(pair)
                self.fields.append(_decision_fields(*pair))
            self.choice.append(c)
            reason = pair[0]
            self.reasons[reason] += 1
            if reason == EXPORTED:
                self.exported += 1
            elif reason not in PROBE_REASONS:
                excluded.add(reason.replace(" ", "_").replace("-", "_"), trial_key(t))

    def _assess(self, excluded: _Excluded) -> tuple[str, list[str]]:
        """``assess_release(decision, coverage)``: its verdict and ``reason_lines`` of its
        decisive reasons."""
        cov = self.coverage
        blocking = [
            ReleaseReason(NOT, f"required_slot_{row.state}", row.label())
            for row in cov.blocking_rows()
        ]
        if cov.below_floor:
            ratio = cov.coverage_ratio
            shown = "n/a" if ratio is None else f"{ratio:.2f}"
            blocking.append(
                ReleaseReason(NOT, "below_floor", f"coverage {shown} < floor {cov.min_coverage}")
            )
        if self.exported <= 0:
            blocking.append(nothing_to_export(self.exported, len(self.trials)))
        if blocking:
            return NOT, reason_lines(blocking)
        optional = [
            ReleaseReason(WITH_Q, f"optional_slot_{row.state}", row.label())
            for row in cov.planned_rows()
            if _optional_gap(row)
        ]
        if excluded.count or optional:
            return WITH_Q, excluded.lines() + reason_lines(optional)
        return CLEAN, []

    def final(self, i: int) -> TrialReview:
        """Trial ``i`` as ``assemble`` merges it: coverage findings added, effective verdict."""
        slim = self.trials[i]
        t = slim.review() if isinstance(slim, SlimReview) else slim
        extra = self.coverage.trial_findings.get(trial_key(t), [])
        verdict = VERDICTS[self.verdicts[i]]
        if not extra and verdict == t.verdict and t.findings == sort_findings(t.findings):
            return t
        return replace(t, findings=sort_findings([*t.findings, *extra]), verdict=verdict)

    def final_trials(self) -> Iterator[TrialReview]:
        for i in range(len(self.trials)):
            yield self.final(i)

    def decision_fields(self, i: int) -> bytes:
        """``"exported": ..., "export_reason": ..., "export_detail": ...}`` of trial ``i``."""
        return self.fields[self.choice[i]]

    def summary(self) -> dict[str, Any]:
        """``summarize(ds.trials)`` updated with ``ds.summary()``."""
        cov = self.coverage
        out = self.tally.as_dict()
        out.update(
            {
                "coverage": {
                    **cov.summary,
                    "coverage_ratio": cov.coverage_ratio,
                    "below_floor": cov.below_floor,
                },
                "quarantine_entries": len(self.entries),
                "exported": self.exported,
                "excluded_by_reason": {
                    k: v for k, v in sorted(self.reasons.items()) if k != EXPORTED
                },
                "release_verdict": self.verdict,
                "release_reasons": self.reason_lines,
                "results": results_table(self.result_trials()).to_dict(),
            }
        )
        return out

    def result_trials(self) -> Iterator[ResultTrial]:
        """Each model trial with its decision, as ``bf_assets.dataset.results`` reads it."""
        for i, t in enumerate(self.trials):
            r = result_trial(t, self.choices[self.choice[i]][0])  # type: ignore[arg-type]
            if r is not None:
                yield r


def _optional_gap(row: SlotRow) -> bool:
    return not row.required and row.state in (MISSING, UNHEALTHY)


def _decision_fields(reason: str, detail: str) -> bytes:
    """The decision's JSON members without the opening brace (a copy of exactly its size:
    ``orjson.dumps`` leaves room to spare in the bytes it returns)."""
    data = orjson.dumps(
        {"exported": reason == EXPORTED, "export_reason": reason, "export_detail": detail}
    )
    return data[1:]


def with_decision(data: bytes, fields: bytes) -> bytes:
    """A trial's JSON object with its decision's members (``_decision_fields``) spliced in
    before the closing brace."""
    if not data.endswith(b"}"):
        return data
    return data[:-1] + b"," + fields
