"""Run the hard trajectory gate on one scanned trial: every ``GATE_*`` check, then the verdict."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from bf_assets.findings import Finding, finding, sort_findings
from bf_assets.gate import artifacts, cross, result, row
from bf_assets.gate.identity_secret import identity_secret_findings
from bf_assets.gate.verdict import Classification, attribution_reason, classify, verdict_of
from bf_assets.gate.view import ResultView, result_view
from bf_assets.ingest.scan import TrialData

UNTRUSTED_SOURCES = frozenset({"scraped", "hosted_env"})


def check_trajectory_source(t: TrialData, v: ResultView) -> Iterator[Finding]:
    if t.layout != "production" or not isinstance(t.result.value, dict) or v.is_oracle:
        return
    src = t.result_obj.get("trajectory_source")
    if v.partial:
        pending = (
            (t.result_obj.get("agent_timeout_info") or {}).get("pending_tool_call_ids")
            if isinstance(t.result_obj.get("agent_timeout_info"), dict)
            else None
        )
        detail = f"; pending tool calls {pending}" if pending else ""
        yield finding(
            "GATE_TRAJECTORY_PARTIAL",
            f"partial_trajectory is true (trajectory_source {src!r}{detail}): not a complete, healthy run",
            file="result.json",
        )
    if src in UNTRUSTED_SOURCES:
        yield finding(
            "GATE_TRAJECTORY_UNTRUSTED",
            f"trajectory_source is {src!r}: agent-forgeable",
            file="result.json",
        )


def check_layout(t: TrialData, v: ResultView) -> Iterator[Finding]:
    if t.layout in ("flat", "harbor"):
        yield finding(
            "LAYOUT_ADAPTED",
            f"{t.layout} layout read through its adapter; it lacks the production artifacts the gate requires",
        )


def check_identity(t: TrialData, v: ResultView) -> list[Finding]:
    """``IDENTITY_SECRET``: a credential-shaped string in a name the trial is shown by."""
    return identity_secret_findings(t.ref, t.identity)


# Every gate check, in report order.  Each takes the scanned trial (and the result view).
FILE_CHECKS: tuple[Callable[[TrialData], Iterable[Finding]], ...] = (
    artifacts.check_link_escape,
    artifacts.check_result_file,
    artifacts.check_config_files,
    artifacts.check_acp,
    artifacts.check_llm,
    artifacts.check_rows_file,
)
VIEW_CHECKS: tuple[Callable[[TrialData, ResultView], Iterable[Finding]], ...] = (
    check_identity,
    check_layout,
    result.check_result_metadata,
    check_trajectory_source,
    row.check_row,
    cross.check_cross,
)


@dataclass(frozen=True, slots=True)
class GateResult:
    findings: list[Finding]
    classification: Classification
    verdict: str
    view: ResultView


def run_gate(t: TrialData) -> GateResult:
    v = result_view(t)
    found: list[Finding] = []
    for check in FILE_CHECKS:
        found.extend(check(t))
    for vcheck in VIEW_CHECKS:
        found.extend(vcheck(t, v))
    if v.is_oracle:
        # The oracle lane has no model trajectories by design: keep only what judges the lane.
        found = [f for f in found if f.check not in _ORACLE_NOT_APPLICABLE]
    found = _dedupe(found)
    cls = classify(t, v, found)
    found.extend(attribution_findings(cls, v))
    return GateResult(sort_findings(found), cls, verdict_of(found), v)


def attribution_findings(cls: Classification, v: ResultView) -> list[Finding]:
    """``ATTR_*`` for a fail or timeout that is not a model-capability outcome (checks.md)."""
    if cls.outcome not in ("fail", "normal_timeout", "unhealthy"):
        return []
    if cls.attribution == "experiment_fidelity":
        why = attribution_reason(v)
        if why is None:
            return []  # unhealthy for missing artifacts: the gate findings already say why
        return [
            finding(
                "ATTR_EXPERIMENT_FIDELITY",
                f"caused by the experiment, not the model: {why}",
                file="result.json",
                evidence=v.error or v.verifier_error,
            )
        ]
    if cls.attribution == "unknown" and cls.outcome != "unhealthy":
        return [
            finding(
                "ATTR_UNKNOWN",
                f"a {cls.outcome} whose cause cannot be attributed",
                file="result.json",
                evidence=v.error,
            )
        ]
    return []


_ORACLE_NOT_APPLICABLE = frozenset(
    {
        "GATE_LLM_MISSING",
        "GATE_LLM_EMPTY",
        "GATE_LLM_NO_EXCHANGE",
        "GATE_LLM_NO_USAGE",
        "GATE_ACP_NO_AGENT_EVENTS",
        "GATE_ROW_READY_MISMATCH",
        "GATE_ROW_STEPS_MISMATCH",
        "GATE_ROW_SHAPE",
        "GATE_TOKENS_MISSING",
        "GATE_TOOLS_MISSING",
    }
)


def _dedupe(findings: list[Finding]) -> list[Finding]:
    seen: set[tuple[object, ...]] = set()
    out = []
    for f in findings:
        key = (f.check, f.message, f.file, f.line)
        if key not in seen:
            seen.add(key)
            out.append(f)
    return out
