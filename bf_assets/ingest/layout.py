"""Layout detection from fields (``reference/artifacts.md`` §1), never from directory names."""

from __future__ import annotations

from typing import Any

from bf_assets.contract import Layout


def is_harbor_job_result(result: Any) -> bool:
    """A Harbor job-level ``result.json`` (``n_total_trials``/``stats``) is not a trial."""
    return (
        isinstance(result, dict)
        and ("n_total_trials" in result or "stats" in result)
        and "trial_name" not in result
        and "rollout_name" not in result
    )


def is_harbor_job_config(config: Any) -> bool:
    """A Harbor JobConfig (``job_name`` with orchestrator/agents/datasets) is not a trial."""
    return (
        isinstance(config, dict)
        and "job_name" in config
        and any(k in config for k in ("orchestrator", "agents", "datasets", "n_attempts"))
        and "trial_name" not in config
    )


def layout_of_result(result: Any) -> Layout | None:
    """Layout implied by a trial ``result.json``; None when it names no known layout."""
    if not isinstance(result, dict):
        return None
    if any(k in result for k in ("verifier_result", "agent_info", "trial_uri")):
        return Layout.HARBOR
    if "rollout_name" in result or ("trial_name" in result and "rewards" in result):
        return Layout.PRODUCTION
    if "status" in result and "reward" in result:
        return Layout.FLAT
    return None


def layout_of_config(config: Any, run_config: Any) -> Layout | None:
    """Layout implied by the config files when ``result.json`` is absent or unhelpful."""
    if isinstance(run_config, dict) and ("task_id" in run_config or "harness" in run_config):
        return Layout.FLAT
    if isinstance(config, dict):
        if "trial_name" in config and isinstance(config.get("task"), dict):
            return Layout.HARBOR
        if "agent" in config and any(
            k in config for k in ("task_path", "started_at", "environment")
        ):
            return Layout.PRODUCTION
    return None


def detect_layout(result: Any, config: Any, run_config: Any) -> Layout:
    return layout_of_result(result) or layout_of_config(config, run_config) or Layout.UNKNOWN
