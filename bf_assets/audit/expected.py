"""Expected task skills and the skill mode of a trial (review-rules §3.3).

Sources, first that names at least one skill: the task tree (``<tasks>/<task>/environment/
skills/*/SKILL.md``, task matched by ``source.path`` / ``task_path`` basename or the task
name), then flat ``run_config.task_skills`` (and its sibling keys, top level only: never
other tasks' skills from nested job configs), then the experiment plan.
"""

from __future__ import annotations

import re
from pathlib import Path, PurePosixPath
from typing import Any

from bf_assets.ingest.scan import TrialData

SKILL_KEYS = (
    "task_skills",
    "expected_task_skills",
    "expected_task_skill_names",
    "required_task_skills",
    "task_bundled_skills",
    "task_skill_names",
)
_FRONT_NAME = re.compile(r"^name:\s*['\"]?([^'\"\n]+?)['\"]?\s*$", re.M)
MAX_SKILLS = 200


def norm_skill(name: str) -> str:
    return name.strip().lower().replace("_", "-")


def task_candidates(t: TrialData) -> list[str]:
    """Names the task directory may have, most specific first."""
    names: list[str] = []
    for doc in (t.config_obj, t.result_obj):
        src = doc.get("source")
        if isinstance(src, dict) and isinstance(src.get("path"), str):
            names.append(PurePosixPath(src["path"]).name)
        if isinstance(doc.get("task_path"), str):
            names.append(PurePosixPath(doc["task_path"]).name)
    for v in (t.identity.task_id, t.run_config_obj.get("task_id"), t.result_obj.get("task_name")):
        if isinstance(v, str):
            names.append(v)
    return [n for n in dict.fromkeys(names) if n and n not in (".", "..") and "/" not in n]


def find_task_dir(t: TrialData, tasks_dir: Path | None) -> Path | None:
    if tasks_dir is None or not tasks_dir.is_dir():
        return None
    for name in task_candidates(t):
        d = tasks_dir / name
        if d.is_dir():
            return d
    return None


def _skill_name(skill_md: Path) -> str:
    try:
        with open(skill_md, encoding="utf-8", errors="replace") as fh:
            head = fh.read(4096)
    except OSError:
        head = ""
    if head.startswith("---"):
        end = head.find("\n---", 3)
        m = _FRONT_NAME.search(head[: end if end > 0 else len(head)])
        if m:
            return m.group(1).strip()
    return skill_md.parent.name


def skills_from_task_dir(task_dir: Path) -> list[str]:
    root = task_dir / "environment" / "skills"
    if not root.is_dir():
        return []
    out = []
    try:
        entries = sorted(root.iterdir())[:MAX_SKILLS]
    except OSError:
        return []
    for d in entries:
        md = d / "SKILL.md"
        if d.is_dir() and md.is_file():
            out.append(_skill_name(md))
    return out


def _names(value: Any) -> list[str]:
    if isinstance(value, str):
        return [s.strip() for s in re.split(r"[,;\n]", value) if s.strip()]
    if isinstance(value, list):
        out = []
        for v in value:
            if isinstance(v, str) and v.strip():
                out.append(v.strip())
            elif isinstance(v, dict):
                n = v.get("name") or v.get("skill") or v.get("id")
                if isinstance(n, str) and n.strip():
                    out.append(n.strip())
        return out
    return []


def skills_from_config(t: TrialData) -> list[str]:
    out: list[str] = []
    for doc in (t.run_config_obj, t.config_obj):
        for key in SKILL_KEYS:
            out.extend(_names(doc.get(key)))
    return list(dict.fromkeys(out))


def expected_skills(
    t: TrialData, tasks_dir: Path | None, plan_skills: dict[str, list[str]] | None
) -> tuple[list[str], str]:
    """``(names, source)``; source is ``tasks_dir``, ``run_config``, ``plan`` or ``none``."""
    task_dir = find_task_dir(t, tasks_dir)
    if task_dir is not None:
        names = skills_from_task_dir(task_dir)
        if names:
            return names, "tasks_dir"
    names = skills_from_config(t)
    if names:
        return names, "run_config"
    if plan_skills:
        for name in task_candidates(t):
            if plan_skills.get(name):
                return list(plan_skills[name]), "plan"
    return [], "none"


def skill_mode(t: TrialData) -> str | None:
    """``with-skill``, ``no-skill``, ``self-generated``, another declared value, or None."""
    mode = t.identity.skill_mode
    if mode:
        return mode
    for doc in (t.config_obj, t.result_obj, t.run_config_obj):
        inc = doc.get("include_task_skills")
        if isinstance(inc, bool):
            return "with-skill" if inc else "no-skill"
    return None


def sandbox_skills_dir(t: TrialData) -> str:
    for doc in (t.config_obj, t.result_obj, t.run_config_obj):
        v = doc.get("skills_sandbox_dir")
        if isinstance(v, str) and v.startswith("/") and len(v) > 1:
            return v.rstrip("/")
    return "/skills"
