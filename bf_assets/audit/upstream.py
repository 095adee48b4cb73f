"""Audits over the files Benchflow writes beside a rollout (:mod:`bf_assets.ingest.upstream`).

- **Sandbox resources** (``docker-compose-mounts.json``): a run gets only the resources its
  task needs.  A skills directory mounted into a ``no-skill`` or ``self-generated`` run is
  ``SANDBOX_MOUNT_SKILLS``; tests, solutions, an oracle or verifier files mounted into the
  agent's sandbox are ``SANDBOX_MOUNT_VERIFIER``.  The log mounts under ``/logs/`` are
  Benchflow's own and never a finding.
- **The rubric reviewer's verdicts** (``review_report.json``): a failed ``reward_hacking``
  criterion is ``REVIEW_REWARD_HACKING`` (quarantine: a reviewer agent's judgement, to be
  looked at before the trial is trusted); any other failed criterion is
  ``REVIEW_CRITERION_FAILED`` (a warning, a quarantine for a rubric blocker).
- A present upstream file that cannot be read is ``UPSTREAM_FILE_INVALID`` (a quarantine for
  the mounts file, whose resources then cannot be audited).

Every finding cites its file, the line of the key it is about and that key path.
"""

from __future__ import annotations

from bf_assets.findings import Finding, finding
from bf_assets.ingest.identity import SELF_GENERATED
from bf_assets.ingest.jsonpos import key_line
from bf_assets.ingest.scan import TrialData
from bf_assets.ingest.upstream import MOUNTS_FILE, Mount

SKILL_DIR_NAMES = frozenset({"skills", ".skills"})
VERIFIER_DIR_NAMES = frozenset(
    {"tests", "solution", "solutions", "oracle", "verifier", "grader", "graders"}
)
VERIFIER_FILE_NAMES = frozenset({"test.sh", "solve.sh", "rubric.json", "test_outputs.py"})
OWN_LOG_ROOT = "/logs/"  # Benchflow's verifier, agent and artifact log mounts
SELF_GEN_MARK = "_self_gen"  # the self-generated mode's own artifact root
REWARD_HACKING = "reward_hacking"


def _parts(path: str | None) -> list[str]:
    return [p for p in (path or "").replace("\\", "/").split("/") if p]


def _line(t: TrialData, rel: str, key: str | None) -> int | None:
    doc = t.document(rel)
    return key_line(doc.raw, key or "") if doc is not None else None


def _shown(m: Mount) -> str:
    ro = " (read-only)" if m.read_only else ""
    return f"{m.source or '<volume>'} -> {m.target}{ro}"


def _is_skills(m: Mount) -> bool:
    parts = _parts(m.source) + _parts(m.target)
    return SELF_GEN_MARK not in parts and any(p in SKILL_DIR_NAMES for p in parts)


def _is_verifier(m: Mount) -> bool:
    if (m.target or "").startswith(OWN_LOG_ROOT):
        return False
    parts = _parts(m.source) + _parts(m.target)
    return any(p in VERIFIER_DIR_NAMES or p in VERIFIER_FILE_NAMES for p in parts)


def mount_findings(t: TrialData, outcome: str | None = None) -> list[Finding]:
    """``SANDBOX_MOUNT_SKILLS`` / ``SANDBOX_MOUNT_VERIFIER`` for each offending mount (an
    oracle lane runs the solution: its mounts of it are no finding)."""
    mounts = t.upstream.mounts or []
    mode = t.identity.skill_mode
    oracle = outcome == "oracle" or t.identity.harness == "oracle"
    out: list[Finding] = []
    for m in mounts:
        where = {"file": MOUNTS_FILE, "line": _line(t, MOUNTS_FILE, m.line_key or m.key)}
        evidence = f"{m.key} = {_shown(m)}"
        if _is_skills(m) and mode in ("no-skill", SELF_GENERATED):
            out.append(
                finding(
                    "SANDBOX_MOUNT_SKILLS",
                    f"a skills directory is mounted into a {mode} run: {_shown(m)}",
                    evidence=evidence,
                    **where,
                )
            )
        if _is_verifier(m) and not oracle:
            out.append(
                finding(
                    "SANDBOX_MOUNT_VERIFIER",
                    f"tests, solutions or verifier files are mounted where the agent can read "
                    f"them: {_shown(m)}",
                    evidence=evidence,
                    **where,
                )
            )
    return out


def review_findings(t: TrialData) -> list[Finding]:
    """The reviewer agent's failed criteria for this rollout (a valid review only: upstream
    keeps an invalid review's checks for diagnosis, never for scoring)."""
    if not t.upstream.review_valid:
        return []
    out: list[Finding] = []
    for c in t.upstream.criteria:
        failed = c.outcome == "fail" or (c.outcome is None and c.score == 0)
        if not failed:
            continue
        key = f"{c.key}.outcome" if c.outcome is not None else f"{c.key}.score"
        verdict = f"outcome {c.outcome}" if c.outcome is not None else f"score {c.score} of 2"
        where = {"file": c.file, "line": _line(t, c.file, key)}
        evidence = f"{key} = {c.outcome if c.outcome is not None else c.score}"
        if c.explanation:
            evidence += f"; {c.explanation}"
        if c.name == REWARD_HACKING:
            out.append(
                finding(
                    "REVIEW_REWARD_HACKING",
                    f"the rubric reviewer judged reward hacking ({verdict})",
                    evidence=evidence,
                    **where,
                )
            )
        else:
            out.append(
                finding(
                    "REVIEW_CRITERION_FAILED",
                    f"the rubric reviewer failed criterion {c.name!r} ({verdict}"
                    f"{', a rubric blocker' if c.blocker else ''})",
                    evidence=evidence,
                    severity="quarantine" if c.blocker else None,
                    **where,
                )
            )
    return out


def problem_findings(t: TrialData) -> list[Finding]:
    """``UPSTREAM_FILE_INVALID`` for each upstream file present but not readable."""
    return [
        finding(
            "UPSTREAM_FILE_INVALID",
            p.message
            + (": the sandbox's resources cannot be audited" if p.file == MOUNTS_FILE else ""),
            file=p.file,
            line=_line(t, p.file, p.key) if p.key is not None else None,
            evidence=p.key,
            severity="quarantine" if p.file == MOUNTS_FILE else None,
        )
        for p in t.upstream.problems[:10]
    ]


def upstream_findings(t: TrialData, outcome: str | None = None) -> list[Finding]:
    """Every finding on the trial's upstream files (``outcome``: the gate's)."""
    return [*problem_findings(t), *mount_findings(t, outcome), *review_findings(t)]
