"""Gate checks on ``result.json`` metadata: reward, timing, tokens, tools, verifier and infra errors.

Errors are classified from Benchflow's ``error_category`` / ``verifier_error_category``
taxonomy first and from text markers second (Benchflow's validator only does crude
substrings: ``provider`` or ``connection`` in a legitimate task error made it cry infra,
while ``api_key``, ``Agent idle for`` or ``install failed`` slipped through).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from bf_assets.findings import Finding, finding
from bf_assets.gate.view import HARBOR_INFRA_EXCEPTIONS, ResultView, parse_time
from bf_assets.ingest.scan import TrialData

R = "result.json"

INFRA_CATEGORIES = frozenset(
    {
        "install_failure",
        "pipe_closed",
        "acp_error",
        "infra_failure",
        "sandbox_setup",
        "provider_auth",
        "provider_rate_limit",
        "provider_rejected",
        "api_error",
        "suspected_api_error",
    }
)
VERIFIER_CATEGORIES = frozenset(
    {
        "verifier_failure",
        "verifier_infra",
        "verifier_timeout",
        "verifier_dep_install",
        "verifier_other",
    }
)
# Text markers, checked only when no category decides.  Word-bounded and specific.
INFRA_MARKERS = re.compile(
    r"(?i)(sandbox (?:startup|setup|creation) failed|docker (?:daemon|compose)|daytona|"
    r"transport (?:closed|error)|pipe closed|broken pipe|closed stdout|no space left on device|"
    r"connection (?:reset|refused|aborted)|rate.?limit|\b429\b|\b50[234]\b|service unavailable|"
    r"internal server error|install(?:ation)? failed|failed to install|"
    r"missing\s+(?:required\s+)?[A-Z0-9_]*(?:API_?KEY|TOKEN|SECRET|CREDENTIALS?)\b|"
    r"api[_ ]key (?:not set|missing|is required)|\bcredentials? (?:missing|not found|invalid)|"
    r"agent idle for|out of memory|\boom\b|killed by signal|host hard deadline)"
)


def infra_reason(v: ResultView) -> str | None:
    """Why the trial's error is an infrastructure failure, or None."""
    if v.error_category in INFRA_CATEGORIES:
        return f"error_category {v.error_category}"
    if v.exception_type in HARBOR_INFRA_EXCEPTIONS:
        return f"Harbor exception {v.exception_type}"
    if v.error_category in (None, "other") and v.error:
        m = INFRA_MARKERS.search(v.error)
        if m:
            return f"error text mentions {m.group(0)!r}"
    return None


def verifier_reason(v: ResultView) -> str | None:
    if v.verifier_error_category in VERIFIER_CATEGORIES:
        return (
            f"verifier_error_category {v.verifier_error_category}: {v.verifier_error or ''}".strip()
        )
    if v.verifier_error:
        return v.verifier_error
    return None


def check_result_metadata(t: TrialData, v: ResultView) -> Iterator[Finding]:
    if not isinstance(t.result.value, dict):
        return
    if v.is_oracle:
        if v.reward is None:
            yield finding(
                "GATE_REWARD_MISSING", f"oracle lane has no numeric {v.reward_field}", file=R
            )
        yield from _timing(v)
        return
    if v.reward is None:
        yield finding("GATE_REWARD_MISSING", f"no numeric {v.reward_field}", file=R)
    yield from _timing(v)
    yield from _tokens(v)
    yield from _tools(t, v)
    vr = verifier_reason(v)
    if vr:
        yield finding("GATE_VERIFIER_ERROR", f"the verifier failed: {vr}", file=R, evidence=vr)
    elif v.reward is None and not v.error:
        yield finding(
            "GATE_VERIFIER_ERROR", "no agent error, yet the verifier wrote no reward", file=R
        )
    ir = infra_reason(v)
    if ir:
        yield finding(
            "GATE_INFRA_ERROR", f"infrastructure failure ({ir})", file=R, evidence=v.error
        )


def _timing(v: ResultView) -> Iterator[Finding]:
    start, end, dur = v.started_at, v.finished_at, v.duration
    if not start or (not end and dur is None):
        missing = [
            n
            for n, x in ((v.start_field, start), (v.end_field, end), (v.duration_field, dur))
            if not x and x != 0
        ]
        yield finding(
            "GATE_TIMING_MISSING", f"timing incomplete: missing {', '.join(missing)}", file=R
        )
        return
    problems = []
    ts, te = parse_time(start), parse_time(end) if end else None
    if ts is None:
        problems.append(f"{v.start_field} {start!r} does not parse")
    if end and te is None:
        problems.append(f"{v.end_field} {end!r} does not parse")
    if ts and te and (ts.tzinfo is None) == (te.tzinfo is None) and te < ts:
        problems.append(f"{v.end_field} is before {v.start_field}")
    if dur is not None:
        if isinstance(dur, bool) or not isinstance(dur, int | float):
            problems.append(f"{v.duration_field} is not a number")
        elif dur < 0:
            problems.append(f"{v.duration_field} is negative")
    neg = [
        k
        for k, x in v.phase_durations.items()
        if isinstance(x, int | float) and not isinstance(x, bool) and x < 0
    ]
    if neg:
        problems.append(f"negative phase duration(s): {', '.join(neg)}")
    if problems:
        yield finding("GATE_TIMING_INVALID", "; ".join(problems), file=R)


def _tokens(v: ResultView) -> Iterator[Finding]:
    positive = [s for s in v.tokens if (s.best_total or 0) > 0]
    if not positive:
        yield finding(
            "GATE_TOKENS_MISSING", "no positive token usage in any result.json source", file=R
        )
        return
    s = positive[0]
    if (s.output or 0) == 0 and (s.input or 0) >= 10_000:
        yield finding(
            "GATE_TOKENS_SUSPICIOUS",
            f"{s.name} reports {int(s.input or 0)} input tokens but zero output tokens",
            file=R,
        )


def _tools(t: TrialData, v: ResultView) -> Iterator[Finding]:
    traj_calls = t.acp.tool_calls + sum(len(e.response_call_ids) for e in t.llm.log.exchanges)
    if traj_calls > 0 and (v.n_tool_calls is None or v.n_tool_calls <= 0):
        yield finding(
            "GATE_TOOLS_MISSING",
            f"the trajectories show {traj_calls} tool call(s) but {v.tool_field} is {v.n_tool_calls}",
            file=R,
        )
