"""The plan of a sample: one :class:`PlannedTrial` per rollout directory, plus the scenario table.

A scenario names what a trial is built to exercise; ``SCENARIOS`` gives its default expected
outcome (``checks.md`` §1) and the ``GATE_*`` ids (``checks.md`` §2) it is built to raise. The
gate may raise more ids than listed: tests check ``expected ⊆ actual``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

HEALTHY_SCENARIOS = ("pass", "fail", "normal_timeout", "retry_superseded")
UNHEALTHY_SCENARIOS = (
    "verifier_crash",
    "partial_timeout",
    "sandbox_failure",
    "api_rate_limit",
    "missing_llm",
    "missing_rows",
    "bad_llm_line",
    "ready_mismatch",
    "steps_mismatch",
    "cross_mismatch",
    "no_usage",
)

# scenario -> (expected outcome, expected gate ids)
SCENARIOS: dict[str, tuple[str, tuple[str, ...]]] = {
    "pass": ("pass", ()),
    "fail": ("fail", ()),
    "normal_timeout": ("normal_timeout", ()),
    # The healthy retry; the errored first attempt is planned with RETRY_ERRORED below.
    "retry_superseded": ("pass", ()),
    "verifier_crash": ("unhealthy", ("GATE_VERIFIER_ERROR", "GATE_REWARD_MISSING")),
    # GATE_TRAJECTORY_PARTIAL is a project addition (docs/checks.md), not in shared checks.md
    "partial_timeout": ("unhealthy", ("GATE_TRAJECTORY_PARTIAL",)),
    "sandbox_failure": (
        "unhealthy",
        (
            "GATE_INFRA_ERROR",
            "GATE_ACP_EMPTY",
            "GATE_LLM_MISSING",
            "GATE_REWARD_MISSING",
            "GATE_TOKENS_MISSING",
        ),
    ),
    "api_rate_limit": ("unhealthy", ("GATE_INFRA_ERROR", "GATE_REWARD_MISSING")),
    "missing_llm": ("unhealthy", ("GATE_LLM_MISSING",)),
    "missing_rows": ("unhealthy", ("GATE_ROWS_MISSING",)),
    "bad_llm_line": ("unhealthy", ("GATE_LLM_INVALID",)),
    "ready_mismatch": ("unhealthy", ("GATE_ROW_READY_MISMATCH",)),
    "steps_mismatch": ("unhealthy", ("GATE_ROW_STEPS_MISMATCH",)),
    "cross_mismatch": ("unhealthy", ("GATE_CROSS_MISMATCH",)),
    "no_usage": ("unhealthy", ("GATE_LLM_NO_USAGE", "GATE_TOKENS_MISSING")),
    "oracle": ("oracle", ()),
    "incomplete": ("incomplete", ("GATE_RESULT_MISSING",)),
}

# The errored first attempt of a ``retry_superseded`` pair (ACP pipe closed mid tool call,
# partial trajectory, no reward).
RETRY_ERRORED: tuple[str, tuple[str, ...]] = (
    "unhealthy",
    ("GATE_INFRA_ERROR", "GATE_REWARD_MISSING", "GATE_TRAJECTORY_PARTIAL"),
)

HARNESSES = ("codex-acp", "claude-agent-acp", "openhands", "gemini")
SKILL_MODES = ("with-skill", "no-skill")
SANDBOXES = ("docker", "daytona")


@dataclass(frozen=True)
class PlannedTrial:
    job: str  # job dir name, e.g. "2026-06-01__10-00-00"
    rollout: str  # "<task>__<8 hex>"
    task: str
    harness: str  # Benchflow registry key: codex-acp, claude-agent-acp, openhands, gemini, oracle
    model: str | None  # None for oracle
    skill_mode: str  # "with-skill" | "no-skill"
    sandbox: str  # "docker" | "daytona"
    scenario: str
    expected_outcome: str  # pass, fail, normal_timeout, unhealthy, incomplete, oracle
    expected_gate_ids: tuple[str, ...]

    @property
    def is_retry_errored(self) -> bool:
        """The errored first attempt of a ``retry_superseded`` pair."""
        return self.scenario == "retry_superseded" and self.expected_outcome == "unhealthy"

    def to_dict(self) -> dict[str, Any]:
        return {
            "job": self.job,
            "rollout": self.rollout,
            "task": self.task,
            "harness": self.harness,
            "model": self.model,
            "skill_mode": self.skill_mode,
            "sandbox": self.sandbox,
            "scenario": self.scenario,
            "expected_outcome": self.expected_outcome,
            "expected_gate_ids": list(self.expected_gate_ids),
        }


def planned(
    *,
    job: str,
    rollout: str,
    task: str,
    harness: str,
    model: str | None,
    skill_mode: str,
    sandbox: str,
    scenario: str,
    retry_errored: bool = False,
) -> PlannedTrial:
    """A :class:`PlannedTrial` with the outcome and gate ids of its scenario."""
    if scenario not in SCENARIOS:
        raise ValueError(f"unknown scenario {scenario!r}")
    if retry_errored and scenario != "retry_superseded":
        raise ValueError("retry_errored only applies to retry_superseded")
    outcome, gates = RETRY_ERRORED if retry_errored else SCENARIOS[scenario]
    return PlannedTrial(
        job=job,
        rollout=rollout,
        task=task,
        harness=harness,
        model=model,
        skill_mode=skill_mode,
        sandbox=sandbox,
        scenario=scenario,
        expected_outcome=outcome,
        expected_gate_ids=gates,
    )
