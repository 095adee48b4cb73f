"""Scenario outcomes: rewards, error texts and diagnostics (artifacts.md §3.2, §9)."""

from __future__ import annotations

from typing import Any

from bf_sample.agent import Run
from bf_sample.plan import PlannedTrial
from bf_sample.tasks import Task

TIMEOUT_SEC = 900


def verifier_stdout(task: Task, passed: bool | None) -> str:
    head = (
        "============================= test session starts ==============================\n"
        "platform linux -- Python 3.12.3, pytest-8.3.4, pluggy-1.5.0\n"
        "rootdir: /tests\ncollected 3 items\n\n"
    )
    if passed is None:
        return head + (
            "ImportError while loading conftest '/tests/conftest.py'.\n"
            "E   ModuleNotFoundError: No module named 'jsonschema'\n"
            "=========================== 1 error in 0.21s ===========================\n"
        )
    names = ("output_exists", "output_format", "output_values")
    lines = "".join(
        f"/tests/test_outputs.py::test_{n} {'PASSED' if passed or i < 2 else 'FAILED'}\n"
        for i, n in enumerate(names)
    )
    tail = "3 passed" if passed else "1 failed, 2 passed"
    return head + lines + f"\n========================= {tail} in 0.47s =========================\n"


def failure_fields(plan: PlannedTrial, run: Run, pending: list[str]) -> dict[str, Any]:
    """error / error_category / verifier_error / diagnostics for the scenario."""
    n_tools = sum(1 for e in run.events if e["type"] == "tool_call")
    timeout_info = {
        "reason": "wall_clock_timeout",
        "timeout_sec": float(TIMEOUT_SEC),
        "n_tool_calls": n_tools,
        "pending_tool_call_ids": pending,
        "terminal_event_recorded": True,
        "terminal_trajectory_complete": not pending,
    }
    if plan.scenario in ("normal_timeout", "partial_timeout"):
        return {
            "error": f"Agent prompt exceeded wall-clock budget {TIMEOUT_SEC}s",
            "error_category": "timeout",
            "infos": {"agent_timeout_info": timeout_info},
        }
    if plan.is_retry_errored:
        raw = "Connection closed: agent process exited with code 137"
        return {
            "error": "ACP transport closed: agent process exited with code 137 (killed)",
            "error_category": "pipe_closed",
            "infos": {
                "transport_error_info": {
                    "reason": "transport_closed",
                    "process_exit_code": 137,
                    "transport_diagnosis": "agent_process_killed",
                    "raw_message": raw,
                    "stderr_snippet": "Killed",
                    "sandbox_reachable": True,
                }
            },
        }
    if plan.scenario == "api_rate_limit":
        failed = sum(1 for e in run.exchanges if e["response"]["status_code"] == 429)
        return {
            "error": f"Provider rate limit: {failed} of {len(run.exchanges)} LLM requests failed "
            "with HTTP 429 (rate_limit_error)",
            "error_category": "provider_rate_limit",
            "infos": {
                "api_error_info": {
                    "subcategory": "rate_limit",
                    "transient": True,
                    "dominant_status": 429,
                    "status_counts": {"429": failed},
                    "total_requests": len(run.exchanges),
                    "failed_requests": failed,
                    "fingerprint": "rate_limit:429",
                }
            },
        }
    if plan.scenario == "verifier_crash":
        return {
            "verifier_error": "verifier crashed: No reward file found at "
            "/logs/verifier/reward.txt or /logs/verifier/reward.json (test.sh rc=2)",
            "verifier_error_category": "verifier_failure",
        }
    if plan.scenario == "ready_mismatch":
        return {
            "error": "Agent process exited with status 1 after the final message",
            "error_category": "other",
        }
    return {}


REWARD = {
    "fail": 0.0,
    "cross_mismatch": 0.0,
    "normal_timeout": 0.0,
    "partial_timeout": 0.0,
    "verifier_crash": None,
    "api_rate_limit": None,
    "sandbox_failure": None,
}


def sandbox_failure_fields(sandbox: str, sandbox_id: str | None) -> dict[str, Any]:
    """A sandbox that never started: nothing ran, nothing was captured."""
    if sandbox == "daytona":
        error = f"Sandbox startup failed: Daytona sandbox {sandbox_id} entered state build_failed"
        raw, state = "Sandbox image build timed out after 600s", "build_failed"
    else:
        error = "Sandbox startup failed: docker compose up exited with code 1"
        raw, state = (
            'failed to solve: process "/bin/sh -c pip install -r requirements.txt" did not complete successfully: exit code: 1',
            "exited",
        )
    return {
        "error": error + " after 3 attempts",
        "error_category": "sandbox_setup",
        "infos": {
            "sandbox_startup_info": {
                "reason": "sandbox_startup_failed",
                "sandbox_id": sandbox_id,
                "sandbox_state": state,
                "attempts": 3,
                "build_timeout_sec": 600,
                "raw_message": raw,
            }
        },
    }
