"""The review contract of ``checks.md``: layouts, outcomes, severities, verdicts and check ids.

Every other module takes its vocabulary from here, so a name used in the CLI's JSON, the
asset tables and the dataset card is always one of these.  Ids are never renamed or reused;
the project's own additions are marked ``added`` and documented in ``docs/checks.md``.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Layout(StrEnum):
    PRODUCTION = "production"
    FLAT = "flat"
    HARBOR = "harbor"
    UNKNOWN = "unknown"


class Outcome(StrEnum):
    PASS = "pass"
    FAIL = "fail"
    NORMAL_TIMEOUT = "normal_timeout"
    UNHEALTHY = "unhealthy"
    INCOMPLETE = "incomplete"
    ORACLE = "oracle"


HEALTHY_OUTCOMES = frozenset({Outcome.PASS, Outcome.FAIL, Outcome.NORMAL_TIMEOUT})


class Severity(StrEnum):
    BLOCKER = "blocker"
    QUARANTINE = "quarantine"
    WARNING = "warning"
    INFO = "info"


SEVERITY_RANK = {
    Severity.BLOCKER: 0,
    Severity.QUARANTINE: 1,
    Severity.WARNING: 2,
    Severity.INFO: 3,
}


class Verdict(StrEnum):
    PUBLISHABLE = "publishable"
    QUARANTINED = "quarantined"
    REJECTED = "rejected"


class Attribution(StrEnum):
    MODEL_CAPABILITY = "model_capability"
    EXPERIMENT_FIDELITY = "experiment_fidelity"
    UNKNOWN = "unknown"
    NOT_APPLICABLE = "n/a"


class ReleaseVerdict(StrEnum):
    NOT_PUBLISHABLE = "not_publishable"
    PUBLISHABLE_WITH_QUARANTINES = "publishable_with_quarantines"
    PUBLISHABLE = "publishable"


@dataclass(frozen=True, slots=True)
class CheckSpec:
    id: str
    severity: Severity
    summary: str
    added: bool = False  # True for ids this project added to checks.md's list


B, Q, W, INFO_ = Severity.BLOCKER, Severity.QUARANTINE, Severity.WARNING, Severity.INFO

_SPECS = [
    # Hard trajectory gate (checks.md §2, all blockers but GATE_TOKENS_SUSPICIOUS)
    CheckSpec("GATE_RESULT_MISSING", B, "no result.json (outcome incomplete)"),
    CheckSpec("GATE_RESULT_INVALID", B, "result.json unreadable, not JSON, or not an object"),
    CheckSpec("GATE_ACP_MISSING", B, "trajectory/acp_trajectory.jsonl absent"),
    CheckSpec("GATE_ACP_EMPTY", B, "trajectory/acp_trajectory.jsonl empty"),
    CheckSpec("GATE_ACP_INVALID", B, "an ACP line that is not a JSON object"),
    CheckSpec("GATE_ACP_NO_AGENT_EVENTS", B, "no tool call, agent message or thought"),
    CheckSpec("GATE_LLM_MISSING", B, "trajectory/llm_trajectory.jsonl absent"),
    CheckSpec("GATE_LLM_EMPTY", B, "trajectory/llm_trajectory.jsonl empty"),
    CheckSpec("GATE_LLM_INVALID", B, "an unparsable LLM trajectory line"),
    CheckSpec(
        "GATE_LLM_NO_EXCHANGE", B, "no real request, no response, or fewer responses than requests"
    ),
    CheckSpec("GATE_LLM_NO_USAGE", B, "no positive provider token usage in any response"),
    CheckSpec("GATE_ROWS_MISSING", B, "rollout results.jsonl absent"),
    CheckSpec("GATE_ROWS_INVALID", B, "rollout results.jsonl unparsable"),
    CheckSpec("GATE_ROWS_COUNT", B, "rollout results.jsonl does not hold exactly one row"),
    CheckSpec("GATE_ROW_SHAPE", B, "training row lacks required parts or has invalid messages"),
    CheckSpec("GATE_ROW_TOOLDEFS", B, "tool calls without tool definitions"),
    CheckSpec("GATE_ROW_READY_MISMATCH", B, "info.training_ready disagrees with the trial"),
    CheckSpec("GATE_ROW_STEPS_MISMATCH", B, "row steps do not match the selected LLM exchanges"),
    CheckSpec("GATE_ROW_BANNED_KEY", B, "a banned key in the row or its messages"),
    CheckSpec("GATE_REWARD_MISSING", B, "no numeric reward"),
    CheckSpec("GATE_TIMING_MISSING", B, "no start/end/duration"),
    CheckSpec("GATE_TIMING_INVALID", B, "timing unparsable, negative or end before start"),
    CheckSpec("GATE_TOKENS_MISSING", B, "no positive token usage in result.json"),
    CheckSpec("GATE_TOKENS_SUSPICIOUS", W, "zero output tokens next to a large input"),
    CheckSpec("GATE_TOOLS_MISSING", B, "no tool-usage count where the trajectory shows tool calls"),
    CheckSpec(
        "GATE_CROSS_MISMATCH", B, "task, model, harness, reward or tokens disagree across files"
    ),
    CheckSpec("GATE_VERIFIER_ERROR", B, "the verifier crashed, timed out, or wrote no reward"),
    CheckSpec("GATE_INFRA_ERROR", B, "the error is an infrastructure failure"),
    CheckSpec("GATE_UNREADABLE", B, "a file could not be read safely"),
    # Skills
    CheckSpec("SKILL_NOT_LOADED", Q, "with-skill trial whose catalog lacks an expected task skill"),
    CheckSpec("SKILL_CATALOG_UNKNOWN", Q, "skill catalog not recoverable"),
    CheckSpec("SKILL_EXPECTED_UNKNOWN", W, "expected task skill names cannot be found"),
    CheckSpec("NOSKILL_CATALOG_INJECTED", B, "no-skill trial whose catalog holds a task skill"),
    CheckSpec("NOSKILL_LEAK", B, "no-skill trial whose actions touch skill resources"),
    # Reward hacking and verifier isolation
    CheckSpec("HACK_SCORE_WRITE", B, "the agent writes a reward/score/result file"),
    CheckSpec("HACK_VERIFIER_TAMPER", B, "the agent edits verifier, grader or test files"),
    CheckSpec("HACK_TEST_SUPPRESSION", B, "tests skipped, neutered or monkey-patched"),
    CheckSpec("HACK_HIDDEN_READ", B, "reads of solution, oracle or hidden test paths"),
    CheckSpec("HACK_GIT_HISTORY", Q, "git commands that look past the base commit"),
    CheckSpec("HACK_ONLINE_LOOKUP", Q, "network fetches of write-ups or solutions"),
    CheckSpec("HACK_SUSPECTED", Q, "weaker reward-hacking signals"),
    CheckSpec("VERIFIER_LEAK", B, "verifier-only content visible to the agent"),
    CheckSpec("VERIFIER_ORDER", B, "the verifier ran before the agent finished"),
    # Attribution, paths, provenance
    CheckSpec("ATTR_EXPERIMENT_FIDELITY", B, "a fail or timeout caused by the experiment"),
    CheckSpec("ATTR_UNKNOWN", Q, "a non-pass whose cause cannot be attributed"),
    CheckSpec("PATH_MISMATCH", B, "task root, cwd, trajectory and result paths disagree"),
    CheckSpec("PROVENANCE_MISSING", W, "no source ref, task digest or resolved commit"),
    # Dataset level
    CheckSpec("COVERAGE_MISSING", B, "a planned slot has no trial (warning when not required)"),
    CheckSpec(
        "COVERAGE_UNHEALTHY", B, "a slot has trials but no healthy one (warning when not required)"
    ),
    CheckSpec(
        "COVERAGE_DUPLICATE", INFO_, "a slot has several trials; the latest healthy one is exported"
    ),
    CheckSpec("COVERAGE_STALE", W, "a trial ran against another source ref or task digest"),
    CheckSpec("TASK_ORACLE_FAILED", B, "the task's oracle lane scored below 1.0"),
    CheckSpec("TASK_NOOP_PASSED", B, "a no-op agent lane scored 1.0"),
    CheckSpec("PUBLISH_SECRET", B, "a credential survives redaction"),
    CheckSpec("PUBLISH_HOST_PATH", B, "an absolute host path survives in an export row"),
    CheckSpec("PUBLISH_BANNED_KEY", B, "a banned key survives in an export row"),
    CheckSpec("PUBLISH_SCHEMA", B, "an export row does not match the published schema"),
    CheckSpec("PUBLISH_NOT_READY", B, "an export row comes from a trial that is not exportable"),
    # Project additions (documented in docs/checks.md)
    CheckSpec(
        "READ_INVALID_UTF8",
        W,
        "invalid UTF-8 bytes were replaced; the line still parsed",
        added=True,
    ),
    CheckSpec("READ_NONFINITE", W, "NaN or Infinity literals were read as null", added=True),
    CheckSpec(
        "LAYOUT_ADAPTED", INFO_, "the trial was read through the flat or Harbor adapter", added=True
    ),
    CheckSpec(
        "GATE_TRAJECTORY_PARTIAL",
        B,
        "the ACP trajectory was salvaged (crash, idle timeout, timeout with pending tool calls)",
        added=True,
    ),
    CheckSpec(
        "AGENT_LOG_INVALID",
        B,
        "a Harbor agent log is present but empty, unparsable or of no known shape",
        added=True,
    ),
    CheckSpec(
        "PUBLISH_REASONING",
        B,
        "private reasoning written inline (think tags, a gpt-oss analysis channel, ...) "
        "survives in a published value",
        added=True,
    ),
    CheckSpec(
        "SANDBOX_MOUNT_SKILLS",
        B,
        "docker-compose-mounts.json mounts a skills directory into a no-skill or "
        "self-generated run",
        added=True,
    ),
    CheckSpec(
        "SANDBOX_MOUNT_VERIFIER",
        B,
        "docker-compose-mounts.json mounts tests, solutions or verifier files where the "
        "agent can read them",
        added=True,
    ),
    CheckSpec(
        "REVIEW_REWARD_HACKING",
        Q,
        "the rubric reviewer (review_report.json) failed the reward_hacking criterion",
        added=True,
    ),
    CheckSpec(
        "REVIEW_CRITERION_FAILED",
        W,
        "the rubric reviewer failed a criterion (quarantine for a rubric blocker)",
        added=True,
    ),
    CheckSpec(
        "UPSTREAM_FILE_INVALID",
        W,
        "an upstream file (mounts, review report, judge files) is present but unreadable "
        "(quarantine for the mounts file)",
        added=True,
    ),
    CheckSpec(
        "GATE_TRAJECTORY_UNTRUSTED",
        B,
        "trajectory_source is scraped or hosted_env: agent-forgeable, not a captured trajectory",
        added=True,
    ),
    CheckSpec(
        "IDENTITY_SECRET",
        B,
        "a credential-shaped string in a name the trial is shown by (task, rollout, job, model...)",
        added=True,
    ),
    CheckSpec(
        "SOURCE_SECRET",
        W,
        "a credential-shaped string in one of the trial's own files: rotate it",
        added=True,
    ),
]

CHECKS: dict[str, CheckSpec] = {spec.id: spec for spec in _SPECS}

GATE_IDS = frozenset(cid for cid in CHECKS if cid.startswith("GATE_"))


def default_severity(check_id: str) -> Severity:
    """The severity ``checks.md`` gives a check id; unknown ids are a programming error."""
    try:
        return CHECKS[check_id].severity
    except KeyError as exc:  # pragma: no cover - guards against typos in new code
        raise KeyError(f"unknown check id {check_id!r}; add it to bf_assets.contract") from exc


# Keys that must never reach a training row (checks.md GATE_ROW_BANNED_KEY).
BANNED_ROW_KEYS = frozenset(
    {
        "gold",
        "gold_solution",
        "verify_source",
        "tools_py",
        "initial_db",
        "db_json",
        "target_constants",
        "private_reasoning",
        "reasoning_content",
        "thinking_blocks",
    }
)
BANNED_MESSAGE_KEYS = BANNED_ROW_KEYS | {"provider_specific_fields", "function_call"}
