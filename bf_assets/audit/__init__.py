"""Trial audits beyond the hard gate: skills, leakage, reward hacking, verifier isolation,
attribution, paths and provenance (issue 3).  Plain functions over a scanned
:class:`~bf_assets.ingest.scan.TrialData`; no Dagster.

``audit_trial`` never raises for anything a trial contains: an audit that fails
unexpectedly becomes a quarantine finding of its own family (fail closed).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from bf_assets.audit import hacking, isolation, leakage, paths, skills, upstream
from bf_assets.audit.attribution import attribution_findings
from bf_assets.audit.catalog import first_prompt_parts
from bf_assets.audit.events import Events, collect
from bf_assets.audit.expected import find_task_dir, sandbox_skills_dir
from bf_assets.audit.netcheck import host_of
from bf_assets.findings import Finding, finding
from bf_assets.ingest.identity import SELF_GENERATED
from bf_assets.ingest.scan import TrialData

__all__ = ["AuditContext", "AuditResult", "audit_trial"]


@dataclass
class AuditContext:
    tasks_dir: Path | None = None  # <tasks>/<task>/environment/skills/*/SKILL.md
    plan_skills: dict[str, list[str]] | None = None  # task -> expected skill names (the plan)


@dataclass
class AuditResult:
    findings: list[Finding]
    skills: dict[str, Any]  # the per-trial "skills" block of the CLI JSON
    attribution: dict[str, Any] = field(default_factory=dict)  # causes found, for the report


# The skills block when the skill audit itself failed (its SKILL_CATALOG_UNKNOWN says why).
FALLBACK_BLOCK: dict[str, Any] = {
    "harness": "unknown",
    "catalog_status": "unknown",
    "skills": [],
    "skill_count": 0,
    "catalog_sha256": None,
    "expected_task_skills": [],
    "expected_source": "none",
    "task_skills_loading": None,
    "status": "audit_error",
    "manual_review_required": True,
}


def _task_text(t: TrialData) -> str:
    parts: list[str] = []
    if isinstance(t.prompts.value, list):
        parts.extend(p for p in t.prompts.value if isinstance(p, str))
    pp = first_prompt_parts(t)
    parts.extend(pp.first_user)
    parts.extend(s["text"] for s in t.harbor.startup if isinstance(s.get("text"), str))
    return "\n".join(parts)


def _allowed_hosts(t: TrialData, task_text: str) -> tuple[set[str], bool]:
    hosts: set[str] = set()
    declared = False
    for doc in (t.config_obj, t.run_config_obj, t.result_obj):
        for holder in (doc, doc.get("network") if isinstance(doc.get("network"), dict) else {}):
            v = holder.get("allowed_hosts")
            if isinstance(v, list) and v:
                declared = True
                hosts.update(h.lower() for h in v if isinstance(h, str))
    for word in task_text.split():
        if "//" not in word:  # no network location, no host (urlsplit agrees)
            continue
        h = host_of(word.strip("`'\"()<>[],"))
        if h:
            hosts.add(h)
    return hosts, declared


def _guard(
    check: str, what: str, fn: Callable[[], list[Finding]], failures: list[Finding]
) -> list[Finding]:
    try:
        return fn()
    except Exception as exc:  # noqa: BLE001 - fail closed per audit, never abort the trial
        failures.append(
            finding(
                check,
                f"the {what} audit could not run: {type(exc).__name__}: {exc}",
                severity="quarantine",
            )
        )
        return []


def _hacks(t: TrialData, ev: Events) -> list[Finding]:
    text = _task_text(t)
    hosts, declared = _allowed_hosts(t, text)
    return hacking.hack_findings(t, ev, hacking.HackContext(text, hosts, declared))


def _agent_log_findings(t: TrialData) -> list[Finding]:
    """``AGENT_LOG_INVALID`` for each Harbor agent log that is on disk but unreadable: the
    agent's actions cannot be audited (fail closed)."""
    return [
        finding(
            "AGENT_LOG_INVALID",
            f"{p.message}: the agent's actions in it cannot be audited",
            file=p.file,
            line=p.line,
        )
        for p in t.harbor.problems[:10]
    ]


def audit_trial(
    t: TrialData,
    ctx: AuditContext,
    *,
    outcome: str,
    attribution: str,
    existing_checks: frozenset[str] | set[str] = frozenset(),
) -> AuditResult:
    """Every audit of one trial.  ``outcome`` / ``attribution`` come from the gate;
    ``existing_checks`` are the gate's check ids (to word the attribution finding)."""
    failures: list[Finding] = []
    found: list[Finding] = []
    ev = Events([], [])
    try:
        ev = collect(t)
    except Exception as exc:  # noqa: BLE001
        msg = f"agent actions could not be read: {type(exc).__name__}: {exc}"
        failures.append(finding("HACK_SUSPECTED", msg, severity="quarantine"))
    block: dict[str, Any] = dict(FALLBACK_BLOCK)

    def run_skills() -> list[Finding]:
        b, f = skills.audit_skills(
            t, outcome=outcome, tasks_dir=ctx.tasks_dir, plan_skills=ctx.plan_skills
        )
        block.update(b)
        return f

    found += _agent_log_findings(t)
    found += _guard("SKILL_CATALOG_UNKNOWN", "skill-catalog", run_skills, failures)
    task_dir = find_task_dir(t, ctx.tasks_dir)
    if outcome != "oracle":
        mode = block.get("skill_mode")
        if mode in ("no-skill", SELF_GENERATED):  # self-generated: the task's skills only
            names = list(block.get("expected_task_skills") or [])
            leak = partial(leakage.leak_findings, ev, names, sandbox_skills_dir(t), mode)
            found += _guard("NOSKILL_LEAK", "no-skill leakage", leak, failures)
        found += _guard("HACK_SUSPECTED", "reward-hacking", partial(_hacks, t, ev), failures)
        vleak = partial(isolation.leak_findings, t, ev, task_dir)
        found += _guard("HACK_SUSPECTED", "verifier-leak", vleak, failures)
    order = partial(isolation.order_findings, t)
    found += _guard("HACK_SUSPECTED", "verifier-order", order, failures)
    attr_fn = partial(
        attribution_findings,
        t,
        ev,
        outcome=outcome,
        existing_checks=existing_checks,
        task_dir=task_dir,
    )
    found += _guard("ATTR_UNKNOWN", "attribution", attr_fn, failures)
    path_fn = partial(paths.path_findings, t, ev, ctx.tasks_dir)
    found += _guard("PATH_MISMATCH", "path", path_fn, failures)
    prov = partial(paths.provenance_findings, t)
    found += _guard("PROVENANCE_MISSING", "provenance", prov, failures)
    up = partial(upstream.upstream_findings, t, outcome)
    found += _guard("UPSTREAM_FILE_INVALID", "upstream-file", up, failures)
    attr = [f for f in found if f.check == "ATTR_EXPERIMENT_FIDELITY"]
    detail = {
        "gate_attribution": attribution,
        "audit_cause": attr[0].message if attr else None,
    }
    return AuditResult(found + failures, block, detail)
