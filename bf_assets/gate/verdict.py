"""Outcome, health, training readiness, attribution and the per-trial verdict."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from bf_assets.contract import HEALTHY_OUTCOMES, Attribution, Outcome, Severity, Verdict
from bf_assets.findings import Finding
from bf_assets.gate.result import infra_reason, verifier_reason
from bf_assets.gate.view import ResultView
from bf_assets.ingest.scan import ACP_FILE, LLM_FILE, ROWS_FILE, TrialData


@dataclass(frozen=True, slots=True)
class Classification:
    outcome: str
    healthy: bool
    training_ready: bool
    attribution: str


def _token_total(v: ResultView) -> float:
    return max((s.best_total or 0) for s in v.tokens) if v.tokens else 0.0


def attribution_reason(v: ResultView) -> str | None:
    """The experiment-side cause of a non-pass, when the result records one."""
    reason = infra_reason(v) or verifier_reason(v)
    if reason:
        return reason
    if v.error_category == "idle_timeout":
        return "idle timeout (the harness stalled)"
    if v.timed_out and v.reward is None and _token_total(v) <= 0:
        return "an unscored timeout without token usage"
    return None


# Gate findings that mean the recording itself is broken (checks.md §1: a missing, empty or
# unparsable trajectory or row file), per layout: what the layout is supposed to write.
# Harbor writes none of these files; a broken Harbor recording is its agent log, which the
# audits judge (AGENT_LOG_INVALID with ATTR_EXPERIMENT_FIDELITY).
_TRAJECTORY_BROKEN = frozenset(
    {
        "GATE_ACP_MISSING",
        "GATE_ACP_EMPTY",
        "GATE_ACP_INVALID",
        "GATE_LLM_MISSING",
        "GATE_LLM_EMPTY",
        "GATE_LLM_INVALID",
    }
)
# What the result and the trajectories must record of any run that started: a trajectory
# with no agent event or no provider exchange, no token usage anywhere, no timing or an
# impossible one, no tool count beside recorded tool calls.  A cross-file disagreement is
# not here: it may be a configuration error, not a lost record.
_RECORD_BROKEN = frozenset(
    {
        "GATE_ACP_NO_AGENT_EVENTS",
        "GATE_LLM_NO_EXCHANGE",
        "GATE_LLM_NO_USAGE",
        "GATE_TOKENS_MISSING",
        "GATE_TIMING_MISSING",
        "GATE_TIMING_INVALID",
        "GATE_TOOLS_MISSING",
    }
)
BROKEN_RECORDING: dict[str, frozenset[str]] = {
    # production: also a row file that is absent, unparsable, empty or holds several rows
    "production": _TRAJECTORY_BROKEN
    | _RECORD_BROKEN
    | {"GATE_ROWS_MISSING", "GATE_ROWS_INVALID", "GATE_ROWS_COUNT"},
    "flat": _TRAJECTORY_BROKEN | _RECORD_BROKEN,  # no results.jsonl by design
    "harbor": frozenset(),
}
RECORDING_FILES = {
    "production": frozenset({ACP_FILE, LLM_FILE, ROWS_FILE}),
    "flat": frozenset({ACP_FILE, LLM_FILE}),
    "harbor": frozenset(),
}


def broken_recording(findings: Iterable[Finding], layout: str) -> Finding | None:
    """The first gate finding that shows a broken recording for this layout, if any."""
    ids = BROKEN_RECORDING.get(layout, BROKEN_RECORDING["production"])
    files = RECORDING_FILES.get(layout, RECORDING_FILES["production"])
    for f in findings:
        if f.check in ids or (f.check == "GATE_UNREADABLE" and f.file in files):
            return f
    return None


def attribute(
    v: ResultView, outcome: str, findings: Iterable[Finding], layout: str = "production"
) -> str:
    """Why a non-pass ended as it did; evidence decides (checks.md §1).

    ``experiment_fidelity`` needs a cause on record: an infra or verifier error, an idle
    timeout, an unscored timeout without tokens, or a broken recording.  A clean scored fail
    or timeout is ``model_capability``; anything else without a recorded cause is ``unknown``
    (agent behaviour such as reward hacking is never experiment fidelity; the audits that
    find a cause add ``ATTR_EXPERIMENT_FIDELITY`` themselves)."""
    if outcome in (Outcome.PASS, Outcome.ORACLE):
        return Attribution.NOT_APPLICABLE.value
    fs = list(findings)
    if attribution_reason(v) or broken_recording(fs, layout) is not None:
        return Attribution.EXPERIMENT_FIDELITY.value
    blockers = any(f.severity == Severity.BLOCKER for f in fs)
    if outcome in (Outcome.FAIL, Outcome.NORMAL_TIMEOUT) and not blockers:
        if v.error and not v.timed_out:
            return Attribution.UNKNOWN.value  # an agent error of no known category
        return Attribution.MODEL_CAPABILITY.value
    return Attribution.UNKNOWN.value


def classify(t: TrialData, v: ResultView, findings: Iterable[Finding]) -> Classification:
    fs = list(findings)
    blockers = any(f.severity == Severity.BLOCKER for f in fs)
    if not t.result.present and not t.unread:
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
    attribution = attribute(v, outcome.value, fs, t.layout)
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
