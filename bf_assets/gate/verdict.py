"""Outcome, health, training readiness, attribution and the per-trial verdict."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from bf_assets.contract import HEALTHY_OUTCOMES, Attribution, Outcome, Severity, Verdict
from bf_assets.findings import Finding
from bf_assets.gate.result import infra_reason, verifier_reason
from bf_assets.gate.view import ResultView
from bf_assets.ingest.scan import TrialData


@dataclass(frozen=True, slots=True)
class Classification:
    outcome: str
    healthy: bool
    training_ready: bool
    attribution: str


def _token_total(v: ResultView) -> float:
    return max((s.best_total or 0) for s in v.tokens) if v.tokens else 0.0


def attribution_reason(v: ResultView) -> str | None:
    """The experiment-side cause of a non-pass, when the result shows one."""
    reason = infra_reason(v) or verifier_reason(v)
    if reason:
        return reason
    if v.error_category == "idle_timeout":
        return "idle timeout (the harness stalled)"
    if v.timed_out and v.reward is None:
        return "an unscored timeout"
    if v.timed_out and _token_total(v) <= 0:
        return "a timeout without token usage"
    return None


def attribute(v: ResultView, outcome: str, blockers: bool) -> str:
    """Why a non-pass ended as it did: model capability only with evidence that it was the model."""
    if outcome == Outcome.PASS:
        return Attribution.NOT_APPLICABLE.value
    if outcome == Outcome.ORACLE:
        return Attribution.NOT_APPLICABLE.value
    if infra_reason(v) or verifier_reason(v) or v.error_category == "idle_timeout":
        return Attribution.EXPERIMENT_FIDELITY.value
    if v.timed_out and (v.reward is None or _token_total(v) <= 0):
        return Attribution.EXPERIMENT_FIDELITY.value  # an unscored timeout, or one without tokens
    if outcome in (Outcome.FAIL, Outcome.NORMAL_TIMEOUT) and not blockers:
        if v.error and not v.timed_out:
            return Attribution.UNKNOWN.value  # an agent error of no known category
        return Attribution.MODEL_CAPABILITY.value
    if outcome == Outcome.UNHEALTHY:
        return Attribution.EXPERIMENT_FIDELITY.value if blockers else Attribution.UNKNOWN.value
    return Attribution.UNKNOWN.value


def classify(t: TrialData, v: ResultView, findings: Iterable[Finding]) -> Classification:
    fs = list(findings)
    blockers = any(f.severity == Severity.BLOCKER for f in fs)
    if not t.result.present and not t.ref.link_escape:
        return Classification(Outcome.INCOMPLETE.value, False, False, Attribution.UNKNOWN.value)
    if v.is_oracle or (t.acp.has_oracle_event and t.acp.agent_events == 0):
        return Classification(Outcome.ORACLE.value, False, False, Attribution.NOT_APPLICABLE.value)
    if blockers or v.reward is None:
        outcome = Outcome.UNHEALTHY
    elif v.timed_out:
        outcome = Outcome.NORMAL_TIMEOUT
    elif v.reward >= 1.0:
        outcome = Outcome.PASS
    else:
        outcome = Outcome.FAIL
    attribution = attribute(v, outcome.value, blockers)
    healthy = outcome in HEALTHY_OUTCOMES and attribution in (
        Attribution.NOT_APPLICABLE.value,
        Attribution.MODEL_CAPABILITY.value,
    )
    row = t.rows.single_row() or {}
    info = row.get("info") if isinstance(row.get("info"), dict) else {}
    training_ready = healthy and info.get("training_ready") is True
    return Classification(outcome.value, healthy, training_ready, attribution)


def verdict_of(findings: Iterable[Finding], *, manual_quarantine: bool = False) -> str:
    sev = {f.severity for f in findings}
    if Severity.BLOCKER.value in sev:
        return Verdict.REJECTED.value
    if Severity.QUARANTINE.value in sev or manual_quarantine:
        return Verdict.QUARANTINED.value
    return Verdict.PUBLISHABLE.value
