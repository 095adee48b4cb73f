"""Path agreement and provenance (``PATH_MISMATCH``, ``PROVENANCE_MISSING``; review-rules §8).

``PATH_MISMATCH``: the task paths a trial records disagree (``config.task_path`` vs
``source.path``), the skills directory belongs to another task, the row's ``rollout_dir``
names another rollout, or the agent worked inside another task's directory
(``/tasks/<other>`` or a known task of the tasks directory).  ``PROVENANCE_MISSING``: no
resolved commit (``source.resolved_sha`` / ``resolved_revision``, Harbor's git commit, a
flat ``source_ref``) and no task digest.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from bf_assets.audit.events import Events
from bf_assets.findings import Finding, finding
from bf_assets.ingest.identity import posix_name
from bf_assets.ingest.scan import TrialData

_SKILLS_TASK = re.compile(r"/([^/\s'\"]+)/environment/skills/?$")
_TASK_IN_PATH = re.compile(
    r"""(?:^|[\s'"=:(`])((?:[\w.~-]*/)*tasks/([A-Za-z0-9][\w.-]*))(?=/|[\s'"`)]|$)"""
)
MAX_FINDINGS = 10


def _basename(v: Any) -> str | None:
    """``PurePosixPath(v).name`` of a non-root path string (its last component that is
    neither empty nor ``.``), else None; string operations only."""
    if not isinstance(v, str) or not v.strip("/"):
        return None
    return posix_name(v)


def _known_tasks(tasks_dir: Path | None) -> set[str]:
    if tasks_dir is None or not tasks_dir.is_dir():
        return set()
    try:
        return {p.name for p in tasks_dir.iterdir() if p.is_dir()}
    except OSError:
        return set()


def _recorded(t: TrialData) -> list[Finding]:
    out: list[Finding] = []
    task = t.identity.task_id
    for name, doc in (("config.json", t.config_obj), ("result.json", t.result_obj)):
        src = doc.get("source") if isinstance(doc.get("source"), dict) else {}
        tp, sp = _basename(doc.get("task_path")), _basename(src.get("path"))
        if tp and sp and tp != sp:
            out.append(
                finding(
                    "PATH_MISMATCH",
                    f"{name}: task_path names {tp!r} but source.path names {sp!r}",
                    file=name,
                    evidence={"task_path": doc.get("task_path"), "source.path": src.get("path")},
                )
            )
        for key in ("effective_skills_dir", "requested_skills_dir"):
            v = doc.get(key)
            m = _SKILLS_TASK.search(v) if isinstance(v, str) else None
            if m and task and m.group(1) != task:
                out.append(
                    finding(
                        "PATH_MISMATCH",
                        f"{name}: {key} belongs to task {m.group(1)!r}, not {task!r}",
                        file=name,
                        evidence=v,
                    )
                )
    row = t.rows.single_row() or {}
    info = row.get("info") if isinstance(row.get("info"), dict) else {}
    rdir = _basename(info.get("rollout_dir"))
    if rdir and t.layout == "production" and rdir != t.ref.rollout:
        out.append(
            finding(
                "PATH_MISMATCH",
                f"results.jsonl info.rollout_dir names rollout {rdir!r}, but the trial directory is {t.ref.rollout!r}",
                file="results.jsonl",
                line=1,
                evidence=info.get("rollout_dir"),
            )
        )
    return out


def _trajectory(t: TrialData, ev: Events, known: set[str]) -> list[Finding]:
    task = t.identity.task_id
    if not task:
        return []
    out: list[Finding] = []
    seen: set[str] = set()
    for a in ev.actions:
        if "tasks/" not in a.text:  # every match names a tasks/ directory
            continue
        for m in _TASK_IN_PATH.finditer(a.text):
            full, other = m.group(1), m.group(2)
            if other == task or other in seen:
                continue
            if other in known or full.startswith("/tasks/"):
                seen.add(other)
                out.append(
                    finding(
                        "PATH_MISMATCH",
                        f"the agent works in another task's directory {full!r} (trial task {task!r}) "
                        f"({a.file}:{a.line})",
                        file=a.file,
                        line=a.line,
                        evidence=a.text,
                    )
                )
        if len(out) >= MAX_FINDINGS:
            break
    return out


def path_findings(t: TrialData, ev: Events, tasks_dir: Path | None) -> list[Finding]:
    return _recorded(t) + _trajectory(t, ev, _known_tasks(tasks_dir))


def provenance_findings(t: TrialData) -> list[Finding]:
    if not (t.result.present or t.config.present or t.run_config.present):
        return []
    ident = t.identity
    if ident.source_ref or ident.task_digest:
        return []
    where = {
        "production": "source.resolved_sha / resolved_revision or task_digest",
        "flat": "source_ref",
    }
    return [
        finding(
            "PROVENANCE_MISSING",
            f"no resolved source commit and no task digest ({where.get(t.layout, 'source ref or task digest')}"
            " absent): the task version this trial ran cannot be proven",
            file="run_config.json"
            if t.layout == "flat"
            else ("config.json" if t.config.present else "result.json"),
        )
    ]
