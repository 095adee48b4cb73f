"""A layout-independent view of a trial's result: reward, errors, timing, tokens, tools.

Production fields are the reference (``reference/artifacts.md`` §3.2); the flat and Harbor
adapters map their own fields onto the same view so the checks are written once.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from bf_assets.ingest.scan import TrialData

TIMEOUT_CATEGORIES = frozenset({"timeout"})
# Harbor exception types whose meaning does not depend on where they were raised (the
# infrastructure types, EnvironmentStartTimeoutError and the like, are matched by type in
# HARBOR_INFRA_EXCEPTIONS below).
HARBOR_EXCEPTION_CATEGORIES = {"AgentTimeoutError": "timeout"}
HARBOR_VERIFIER_TYPES = frozenset(
    {
        "RewardFileNotFoundError",
        "RewardFileEmptyError",
        "VerifierTimeoutError",
        "VerifierOutputParseError",
    }
)
# Any other type (RuntimeError, ValueError, ...) is classified by the phase it was raised in:
# the innermost Harbor ``trial.py`` step of its traceback, else the innermost Harbor module.
_FRAME = re.compile(r'File "([^"]+)", line \d+, in (\w+)')
_TRIAL_STEPS = (
    ("_verify", "verifier"),
    ("_run_verif", "verifier"),
    ("_setup_agent", "agent_setup"),
    ("_install_agent", "agent_setup"),
    ("_execute_agent", "agent"),
    ("_run_agent", "agent"),
    ("_start_environment", "environment"),
    ("_setup_environment", "environment"),
    ("_build_environment", "environment"),
)
_MODULES = (
    ("harbor/verifier/", "verifier"),
    ("harbor/environments/", "environment"),
    ("harbor/agents/installed/base.py", "agent_setup"),
    ("harbor/agents/", "agent"),
)
PHASE_CATEGORIES = {"environment": "sandbox_setup", "agent_setup": "install_failure"}
_COMMAND_TIMEOUT = re.compile(r"(?i)\btimed? ?out\b|\btimeout\b")


# Harbor exception types that are infrastructure whatever phase raised them.
HARBOR_INFRA_EXCEPTIONS = frozenset(
    {
        "EnvironmentStartTimeoutError",
        "DockerError",
        "DaytonaError",
        "AgentSetupTimeoutError",
    }
)


def num(v: Any) -> float | None:
    """A finite number (bools excluded), else None."""
    if isinstance(v, bool) or not isinstance(v, int | float):
        return None
    f = float(v)
    return f if math.isfinite(f) else None


def get(d: Any, *keys: str) -> Any:
    for k in keys:
        if not isinstance(d, dict):
            return None
        d = d.get(k)
    return d


@dataclass(slots=True)
class TokenSource:
    name: str
    input: float | None
    output: float | None
    total: float | None

    @property
    def best_total(self) -> float | None:
        if self.total is not None and self.total > 0:
            return self.total
        parts = [x for x in (self.input, self.output) if x is not None]
        return sum(parts) if parts else self.total


@dataclass(slots=True)
class ResultView:
    reward: float | None = None
    reward_field: str = "rewards.reward"
    error: str | None = None
    error_category: str | None = None
    verifier_error: str | None = None
    verifier_error_category: str | None = None
    exception_type: str | None = None
    exception_phase: str | None = None  # Harbor: environment, agent_setup, agent, verifier
    partial: bool = False
    timed_out: bool = False
    started_at: Any = None
    finished_at: Any = None
    duration: Any = None
    start_field: str = "started_at"
    end_field: str = "finished_at"
    duration_field: str = "timing.total"
    phase_durations: dict[str, Any] = field(default_factory=dict)
    tokens: list[TokenSource] = field(default_factory=list)
    n_tool_calls: int | None = None
    tool_field: str = "n_tool_calls"
    usage_source: str | None = None
    is_oracle: bool = False


def _str(v: Any) -> str | None:
    return v if isinstance(v, str) and v.strip() else None


def result_view(t: TrialData) -> ResultView:
    """The trial's result fields, read once per trial (the gate and two audits ask)."""
    v = t.memo.get("result_view")
    if v is None:
        v = t.memo["result_view"] = _result_view(t)
    return v


def _result_view(t: TrialData) -> ResultView:
    r = t.result_obj
    if t.layout == "flat":
        return _flat_view(t, r)
    if t.layout == "harbor":
        return _harbor_view(t, r)
    v = ResultView()
    rewards = r.get("rewards")
    v.reward = num(rewards.get("reward")) if isinstance(rewards, dict) else None
    v.error = _str(r.get("error"))
    v.error_category = _str(r.get("error_category"))
    v.verifier_error = _str(r.get("verifier_error"))
    v.verifier_error_category = _str(r.get("verifier_error_category"))
    v.partial = r.get("partial_trajectory") is True
    v.timed_out = v.error_category in TIMEOUT_CATEGORIES or (
        v.error is not None and "wall-clock budget" in v.error
    )
    v.started_at, v.finished_at = r.get("started_at"), r.get("finished_at")
    timing = r.get("timing") if isinstance(r.get("timing"), dict) else {}
    v.duration = timing.get("total")
    v.phase_durations = {k: x for k, x in timing.items() if k != "total"}
    ar = r.get("agent_result") if isinstance(r.get("agent_result"), dict) else {}
    v.usage_source = _str(ar.get("usage_source")) or _str(get(r, "usage_tracking", "usage_source"))
    v.tokens = [
        TokenSource(
            "agent_result",
            num(ar.get("n_input_tokens")),
            num(ar.get("n_output_tokens")),
            num(ar.get("total_tokens")),
        ),
        TokenSource(
            "final_metrics",
            num(get(r, "final_metrics", "total_prompt_tokens")),
            num(get(r, "final_metrics", "total_completion_tokens")),
            None,
        ),
        TokenSource(
            "token_usage",
            num(get(r, "token_usage", "input_tokens")),
            num(get(r, "token_usage", "output_tokens")),
            num(get(r, "token_usage", "total_tokens")),
        ),
    ]
    n = r.get("n_tool_calls")
    v.n_tool_calls = n if isinstance(n, int) and not isinstance(n, bool) else None
    harness = (str(r.get("agent") or t.config_obj.get("agent") or "")).strip().lower()
    v.is_oracle = harness == "oracle" or str(r.get("agent_name") or "").strip().lower() == "oracle"
    return v


def _flat_view(t: TrialData, r: dict[str, Any]) -> ResultView:
    v = ResultView(
        reward_field="reward", start_field="timing.started_at", end_field="timing.ended_at"
    )
    v.duration_field = "timing.duration_seconds"
    v.reward = num(r.get("reward"))
    v.error = _str(r.get("error"))
    status = _str(r.get("status"))
    v.timed_out = status == "timeout"
    timing = r.get("timing") if isinstance(r.get("timing"), dict) else {}
    v.started_at, v.finished_at, v.duration = (
        timing.get("started_at"),
        timing.get("ended_at"),
        timing.get("duration_seconds"),
    )
    tu = r.get("token_usage") if isinstance(r.get("token_usage"), dict) else {}
    v.tokens = [
        TokenSource(
            "token_usage",
            num(tu.get("input_tokens")),
            num(tu.get("output_tokens")),
            num(tu.get("total_tokens")),
        )
    ]
    usage = r.get("tool_usage")
    if isinstance(usage, dict):
        counts = [x for x in usage.values() if isinstance(x, int) and not isinstance(x, bool)]
        v.n_tool_calls = sum(counts) if counts else None
        v.tool_field = "tool_usage"
    rc = t.run_config_obj
    v.is_oracle = str(rc.get("harness") or "").lower() == "oracle"
    return v


def _harbor_view(t: TrialData, r: dict[str, Any]) -> ResultView:
    v = ResultView(reward_field="verifier_result.rewards.reward")
    v.reward = num(get(r, "verifier_result", "rewards", "reward"))
    exc = r.get("exception_info") if isinstance(r.get("exception_info"), dict) else None
    if exc:
        v.exception_type = _str(exc.get("exception_type"))
        msg = _str(exc.get("exception_message")) or ""
        v.error = f"{v.exception_type}: {msg}" if v.exception_type else msg or None
        tb_file = t.harbor.texts.get("exception.txt")
        if tb_file and not _str(exc.get("exception_traceback")):  # the traceback Harbor kept
            exc = {**exc, "exception_traceback": tb_file}
        _classify_harbor_exception(v, exc, msg, r)
    ver = r.get("verifier") if isinstance(r.get("verifier"), dict) else {}
    if v.verifier_error is None and ver.get("started_at") and r.get("verifier_result") is None:
        v.verifier_error = (
            f"the verifier started at {ver['started_at']} but verifier_result is null"
            + (f" ({v.error})" if v.error else "")
        )
    v.started_at, v.finished_at = r.get("started_at"), r.get("finished_at")
    v.duration_field = "finished_at"
    ar = r.get("agent_result") if isinstance(r.get("agent_result"), dict) else {}
    v.tokens = [
        TokenSource(
            "agent_result", num(ar.get("n_input_tokens")), num(ar.get("n_output_tokens")), None
        )
    ]
    v.tool_field = "(none in Harbor)"
    return v


def harbor_exception_phase(exc: dict[str, Any], r: dict[str, Any]) -> str | None:
    """The trial phase a Harbor exception was raised in, from its traceback (else from the
    phase timestamps: the last phase that started without finishing)."""
    tb = exc.get("exception_traceback")
    if isinstance(tb, str) and tb:
        last = tb.rsplit("Traceback (most recent call last):", 1)[-1]
        frames = _FRAME.findall(last)
        for path, func in reversed(frames):
            if path.replace("\\", "/").endswith("harbor/trial/trial.py"):
                hit = next((ph for prefix, ph in _TRIAL_STEPS if func.startswith(prefix)), None)
                if hit:
                    return hit
        for path, _ in reversed(frames):
            p = path.replace("\\", "/")
            hit = next((ph for mod, ph in _MODULES if mod in p), None)
            if hit:
                return hit
    for key, phase in (
        ("verifier", "verifier"),
        ("agent_execution", "agent"),
        ("agent_setup", "agent_setup"),
        ("environment_setup", "environment"),
    ):
        block = r.get(key)
        if isinstance(block, dict) and block.get("started_at") and not block.get("finished_at"):
            return phase
    return None


def _classify_harbor_exception(
    v: ResultView, exc: dict[str, Any], msg: str, r: dict[str, Any]
) -> None:
    """A Harbor exception is infrastructure only when its type or origin says so: an error
    raised while the agent ran (terminus's own "Command timed out after 900 seconds") is the
    agent's, not the sandbox's; one raised in the verifier is a verifier error."""

    etype = v.exception_type or ""
    v.exception_phase = harbor_exception_phase(exc, r)
    if etype in HARBOR_INFRA_EXCEPTIONS:
        return
    if etype in HARBOR_VERIFIER_TYPES:
        v.verifier_error = v.error
        return
    cat = HARBOR_EXCEPTION_CATEGORIES.get(etype)
    if cat is None and v.exception_phase == "verifier":
        v.verifier_error = v.error
        return
    if cat is None:
        cat = PHASE_CATEGORIES.get(v.exception_phase or "")
    if cat is None and v.exception_phase == "agent" and _COMMAND_TIMEOUT.search(msg):
        cat = "timeout"  # the agent's own command or step timed out
    v.error_category = cat
    v.timed_out = cat == "timeout"


# --------------------------------------------------------------------------- timestamps


def parse_time(value: Any) -> datetime | None:
    """Parse ISO-8601 or Benchflow's naive ``str(datetime)`` (space separator)."""
    if not isinstance(value, str) or not value.strip():
        return None
    try:
        return datetime.fromisoformat(value.strip())
    except ValueError:
        return None
