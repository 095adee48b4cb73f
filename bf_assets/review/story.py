"""A trial's story: how its run ended, what it cost and what the verifier's tests said.

Kept beside every outcome (``unhealthy`` included, checks.md §1 ``execution``), so a broken
pass is still visibly a pass and a timeout or an exception is never lost:

- ``execution``: ``finished``, ``agent_timeout``, ``verifier_timeout``, ``exception`` or
  ``not_started`` (None when the run left no record of its end: no ``result.json`` and no
  failure log);
- ``exception_type`` / ``exception_message``: the recorded error class (Harbor's
  ``exception_type``; Benchflow's ``error_category`` or ``verifier_error_category``) and the
  first line of its message (or the last line of a traceback), cleaned of secrets and host
  paths and clipped;
- ``verifier_outcome``: what the reward alone says (``pass`` for 1.0, ``fail`` for any other
  number), whatever the review decided;
- tokens, cost, wall time and tool calls where the run recorded them;
- the verifier's test counts and failing test names from ``verifier/ctrf.json``;
- the judge's score (``evaluation_details.json``, else ``llm_judge_score.txt``) with its
  passed/total criteria, and the first line of ``answer.txt``, cleaned;
- ``agent_result.usage_details``: native thought tokens and where stitched usage came from.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from bf_assets.gate.view import ResultView, get, num, parse_time
from bf_assets.ingest.scan import TrialData

MESSAGE_MAX = 300  # characters of an exception message kept
_MESSAGE_READ = 2_000  # characters cleaned before clipping (a secret cut short still matches)
NOT_STARTED_CATEGORIES = frozenset({"sandbox_setup", "install_failure"})
AGENT_TIMEOUT_CATEGORIES = frozenset({"timeout", "idle_timeout"})
NOT_STARTED_PHASES = frozenset({"environment", "agent_setup"})
HARBOR_NOT_STARTED_TYPES = frozenset({"EnvironmentStartTimeoutError", "AgentSetupTimeoutError"})


@dataclass(frozen=True, slots=True)
class TrialStory:
    execution: str | None = None
    exception_type: str | None = None
    exception_message: str | None = None
    verifier_outcome: str | None = None
    tokens_in: int | None = None
    tokens_out: int | None = None
    tokens_cache: int | None = None
    cost_usd: float | None = None
    wall_time_sec: float | None = None
    tool_calls: int | None = None
    tests_total: int | None = None
    tests_passed: int | None = None
    tests_failed: int | None = None
    tests_skipped: int | None = None
    failing_tests: tuple[str, ...] = ()
    judge_score: float | None = None
    judge_source: str | None = None
    judge_passed: int | None = None
    judge_total: int | None = None
    answer_excerpt: str | None = None
    tokens_thought: int | None = None
    usage_provenance: str | None = None

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["failing_tests"] = list(self.failing_tests)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any] | None) -> TrialStory:
        if not d:
            return NO_STORY
        kw = {k: d.get(k) for k in STORY_FIELDS}
        kw["failing_tests"] = tuple(d.get("failing_tests") or ())
        return cls(**kw)


STORY_FIELDS = tuple(TrialStory.__dataclass_fields__)
NO_STORY = TrialStory()


def verifier_outcome(reward: float | None) -> str | None:
    """What the reward alone says: ``pass`` (1.0, Benchflow's rule), ``fail``, or None."""
    return None if reward is None else ("pass" if reward == 1.0 else "fail")


def partial_story(execution: str | None, reward: float | None) -> TrialStory:
    """The story a slim review keeps: the execution state and the reward's outcome."""
    return TrialStory(execution=execution, verifier_outcome=verifier_outcome(reward))


def clean_message(text: str | None, *, last_line: bool = False) -> str | None:
    """A short, cleaned excerpt of an error message: its first non-empty line (a
    traceback's last), secrets and host paths replaced, at most ``MESSAGE_MAX`` characters."""
    if not isinstance(text, str):
        return None
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    if not lines:
        return None
    line = lines[-1] if last_line else lines[0]
    from bf_assets.redact.clean import clean_text  # bf_assets.curate imports the review

    out, _, _ = clean_text(line[:_MESSAGE_READ])
    out = " ".join(out.split())
    return out if len(out) <= MESSAGE_MAX else out[: MESSAGE_MAX - 1] + "…"


def _int(v: Any) -> int | None:
    f = num(v)
    return int(f) if f is not None else None


def _failure_log(t: TrialData) -> tuple[str | None, str | None]:
    """``(type, message)`` of Harbor's ``exception.txt`` (a traceback: its last line) or
    ``trial.log`` (``Trial <name> failed: <message>``)."""
    tb = t.harbor.texts.get("exception.txt")
    if tb and tb.strip():
        last = [ln for ln in tb.splitlines() if ln.strip()][-1].strip()
        head, sep, rest = last.partition(": ")
        if sep and head.replace(".", "").replace("_", "").isalnum() and " " not in head:
            return head.rsplit(".", 1)[-1], clean_message(rest)
        return None, clean_message(last)
    log = t.harbor.texts.get("trial.log") or ""
    for line in log.splitlines():
        _, sep, rest = line.partition(" failed: ")
        if sep and line.startswith("Trial "):
            return None, clean_message(rest)
    return None, None


def _execution(t: TrialData, v: ResultView) -> tuple[str | None, str | None, str | None]:
    """``(execution, exception_type, exception_message)``."""
    r = t.result_obj
    if not isinstance(t.result.value, dict):
        etype, msg = _failure_log(t)
        return ("exception" if msg or etype else None), etype, msg
    if t.layout == "harbor":
        return _harbor_execution(t, v, r)
    etype = v.error_category if v.error else None
    if etype is None and v.verifier_error:
        etype = v.verifier_error_category
    msg = clean_message(v.error or v.verifier_error)
    if v.error and (
        v.error_category in NOT_STARTED_CATEGORIES
        or isinstance(r.get("sandbox_startup_info"), dict)
    ):
        return "not_started", etype, msg
    if (
        v.timed_out
        or v.error_category in AGENT_TIMEOUT_CATEGORIES
        or isinstance(r.get("idle_timeout_info"), dict)
    ):
        return "agent_timeout", etype, msg
    if (
        v.verifier_error_category == "verifier_timeout"
        or isinstance(r.get("verifier_timeout_info"), dict)
        or (v.verifier_error or "").startswith("verifier timed out")
    ):
        return "verifier_timeout", etype, msg
    if v.error or v.verifier_error:
        return "exception", etype, msg
    return "finished", None, None


def _harbor_execution(
    t: TrialData, v: ResultView, r: dict[str, Any]
) -> tuple[str | None, str | None, str | None]:
    exc = r.get("exception_info")
    if not isinstance(exc, dict):
        etype, msg = _failure_log(t)
        if etype or msg:
            return "exception", etype, msg
        if v.verifier_error:  # the verifier started, no result and no exception on record
            return "exception", None, clean_message(v.verifier_error)
        return "finished", None, None
    etype = v.exception_type
    msg = clean_message(get(exc, "exception_message"))
    if msg is None:
        msg = _failure_log(t)[1]
    agent_ran = isinstance(r.get("agent_execution"), dict) and bool(
        r["agent_execution"].get("started_at")
    )
    if v.exception_phase in NOT_STARTED_PHASES or (
        etype in HARBOR_NOT_STARTED_TYPES and not agent_ran
    ):
        return "not_started", etype, msg
    if etype == "AgentTimeoutError" or v.timed_out:
        return "agent_timeout", etype, msg
    if etype == "VerifierTimeoutError":
        return "verifier_timeout", etype, msg
    return "exception", etype, msg


def _wall_time(v: ResultView) -> float | None:
    d = num(v.duration)
    if d is not None and d >= 0:
        return d
    start, end = parse_time(v.started_at), parse_time(v.finished_at)
    if start is None or end is None or (start.tzinfo is None) != (end.tzinfo is None):
        return None
    secs = (end - start).total_seconds()
    return round(secs, 3) if secs >= 0 else None


def _usage(t: TrialData, v: ResultView) -> tuple[int | None, int | None, int | None, float | None]:
    """``(tokens_in, tokens_out, tokens_cache, cost_usd)`` as the run recorded them."""
    r = t.result_obj
    tin = tout = None
    for s in v.tokens:
        if s.input is not None or s.output is not None:
            tin, tout = _int(s.input), _int(s.output)
            break
    if tin is None and tout is None and t.harbor.usage:  # Claude Code stream-json usage
        tin = _int(t.harbor.usage.get("input_tokens"))
        tout = _int(t.harbor.usage.get("output_tokens"))
    ar = r.get("agent_result") if isinstance(r.get("agent_result"), dict) else {}
    cache = _int(ar.get("n_cache_read_tokens"))
    if cache is None:
        cache = _int(ar.get("n_cache_tokens"))  # Harbor
    cost = num(ar.get("cost_usd"))
    if cost is None:
        cost = num(get(r, "final_metrics", "total_cost_usd"))
    return tin, tout, cache, cost


def _tool_calls(t: TrialData, v: ResultView) -> int | None:
    if v.n_tool_calls is not None:
        return v.n_tool_calls
    if t.layout == "harbor" and t.harbor.present:  # the agent log's own tool calls
        return len(t.harbor.actions)
    return None


def _usage_details(t: TrialData) -> tuple[int | None, str | None]:
    """``(thought tokens, provenance)`` of ``agent_result.usage_details`` (artifacts §3.2)."""
    ud = get(t.result_obj, "agent_result", "usage_details")
    if not isinstance(ud, dict):
        return None, None
    src = ud.get("source")
    return _int(ud.get("thought_tokens")), (clean_message(src) if isinstance(src, str) else None)


def trial_story(t: TrialData, v: ResultView) -> TrialStory:
    """The story of one scanned trial (``v``: its result view, the gate's)."""
    execution, etype, msg = _execution(t, v)
    tin, tout, cache, cost = _usage(t, v)
    c = t.ctrf
    up = t.upstream
    thought, provenance = _usage_details(t)
    return TrialStory(
        execution=execution,
        exception_type=etype,
        exception_message=msg,
        verifier_outcome=verifier_outcome(v.reward),
        tokens_in=tin,
        tokens_out=tout,
        tokens_cache=cache,
        cost_usd=cost,
        wall_time_sec=_wall_time(v),
        tool_calls=_tool_calls(t, v),
        tests_total=c.total if c else None,
        tests_passed=c.passed if c else None,
        tests_failed=c.failed if c else None,
        tests_skipped=c.skipped if c else None,
        failing_tests=tuple(clean_message(n) or "" for n in c.failing) if c else (),
        judge_score=up.judge_score,
        judge_source=up.judge_source,
        judge_passed=up.judge_passed,
        judge_total=up.judge_total,
        answer_excerpt=clean_message(up.answer),
        tokens_thought=thought,
        usage_provenance=provenance,
    )
