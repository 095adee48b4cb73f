"""Trial identity: the slot fields of ``checks.md`` from whichever layout a trial has.

Each field records where it came from (``"result.json:task_name"``), so a reviewer can see
why a trial landed in a slot.  Harness and skill-mode spellings are normalised the same way
for trials and for the experiment plan.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any

from bf_assets.ingest.harnesses import ALIASES
from bf_assets.ingest.models import canonical_model

# Spellings of a harness -> its key: the harness table's aliases (Benchflow's AGENT_ALIASES
# plus the spellings seen in run configs and Harbor trees).
HARNESS_ALIASES = ALIASES

_WITH_SKILL = {
    "with-skill",
    "with-skills",
    "with-task-skills",
    "task-skills",
    "skills",
    "with-skill-mode",
}
_NO_SKILL = {
    "no-skill",
    "no-skills",
    "without-skill",
    "without-skills",
    "baseline",
    "none",
    "noskills",
    "noskill",
}
_SELF_GEN = {
    "self-gen",
    "self-generated",
    "self-generate",
    "selfgen",
    "self-generated-skills",
    "no-skills-generate",
}
SELF_GENERATED = "self-generated"


def normalize_harness(name: Any) -> str | None:
    if not isinstance(name, str) or not name.strip():
        return None
    key = name.strip().lower()
    return HARNESS_ALIASES.get(key, key)


def normalize_skill_mode(mode: Any) -> str | None:
    if not isinstance(mode, str) or not mode.strip():
        return None
    key = mode.strip().lower().replace("_", "-")
    if key in _WITH_SKILL:
        return "with-skill"
    if key in _NO_SKILL:
        return "no-skill"
    if key in _SELF_GEN:
        return SELF_GENERATED
    return key


_TRIAL_DIR = re.compile(r"^trial-(\d+)$")
# A task copy or run tree of the self-generated mode: SkillsBench's
# ``tasks_no_skills_generate/<task>``, Benchflow's ``_self_gen/`` artifact root.
_PATH_SELF_GEN = re.compile(
    r"(?i)(?:^|[/_\-])(?:no[_\-]?skills?[_\-]generate|self[_\-]?gen(?:erated?)?)(?:$|[/_\-])"
)
# The instruction that tells the agent to write its own skills before solving the task.
_PROMPT_SELF_GEN = re.compile(r"(?i)\bgenerate\s+skills\s+first\b")
# Skill-mode hints in Harbor run trees (no field records it there).
_PATH_NO_SKILL = re.compile(
    r"(?:^|[/_\-])(no[_\-]?skills?|noskills|ablation-noskills[^/]*|byos|tasks-no-skills)(?:$|[/_\-])"
)
_PATH_WITH_SKILL = re.compile(r"(?:^|[/_\-])(skills|with[_\-]skills?)(?:$|[/_\-])")


@dataclass(slots=True)
class Identity:
    task_id: str | None = None
    harness: str | None = None
    model: str | None = None
    skill_mode: str | None = None
    sandbox: str | None = None
    trial_index: int | None = None
    job: str | None = None
    rollout: str | None = None
    source_ref: str | None = None
    task_digest: str | None = None
    started_at: str | None = None
    sources: dict[str, str] = field(default_factory=dict)
    model_raw: str | None = None  # the model as recorded; ``model`` is its canonical id

    def set(self, name: str, value: Any, source: str) -> None:
        """Set a field from the first source that has it."""
        if value is None or value == "" or getattr(self, name) is not None:
            return
        setattr(self, name, value)
        self.sources[name] = source

    def slot(self) -> tuple[Any, ...]:
        return (
            self.task_id,
            self.harness,
            self.model,
            self.skill_mode,
            self.sandbox,
            self.trial_index,
        )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def posix_name(path: str) -> str:
    """``PurePosixPath(path).name`` with string operations: the last component that is
    neither empty nor ``.`` ("" for a root or an empty path)."""
    for part in reversed(path.split("/")):
        if part and part != ".":
            return part
    return ""


def _get(d: Any, *keys: str) -> Any:
    for k in keys:
        if not isinstance(d, dict):
            return None
        d = d.get(k)
    return d


def _source_ref(source: Any) -> str | None:
    if not isinstance(source, dict):
        return source if isinstance(source, str) and source else None
    repo = source.get("repo") or source.get("env_id") or source.get("continued_from")
    rev = source.get("resolved_sha") or source.get("resolved_revision") or source.get("version")
    if repo and rev:
        return f"{repo}@{rev}"
    return rev or None


def identify(
    *,
    layout: str,
    rel_path: str,
    job: str,
    rollout: str,
    result: Any,
    config: Any,
    run_config: Any,
) -> Identity:
    ident = Identity(job=job)
    r, c, rc = result, config, run_config
    if layout == "flat":
        ident.set("task_id", _get(rc, "task_id"), "run_config.json:task_id")
        ident.set("harness", normalize_harness(_get(rc, "harness")), "run_config.json:harness")
        ident.set("model", _get(rc, "model"), "run_config.json:model")
        ident.set(
            "skill_mode", normalize_skill_mode(_get(rc, "skill_mode")), "run_config.json:skill_mode"
        )
        ident.set("sandbox", _get(rc, "sandbox"), "run_config.json:sandbox")
        tid = _get(rc, "trial_id")
        ident.set(
            "trial_index",
            tid if isinstance(tid, int) and not isinstance(tid, bool) else None,
            "run_config.json:trial_id",
        )
        ident.set("source_ref", _get(rc, "source_ref"), "run_config.json:source_ref")
        ident.set("started_at", _get(r, "timing", "started_at"), "result.json:timing.started_at")
    elif layout == "harbor":
        ident.set("task_id", _get(r, "task_name"), "result.json:task_name")
        ident.set(
            "harness",
            normalize_harness(_get(r, "agent_info", "name")),
            "result.json:agent_info.name",
        )
        ident.set("harness", normalize_harness(_get(c, "agent", "name")), "config.json:agent.name")
        ident.set(
            "harness",
            normalize_harness(_get(r, "config", "agent", "name")),
            "result.json:config.agent.name",
        )
        ident.set("model", _get(c, "agent", "model_name"), "config.json:agent.model_name")
        ident.set(
            "model", _get(r, "config", "agent", "model_name"), "result.json:config.agent.model_name"
        )
        info = _get(r, "agent_info", "model_info")
        if isinstance(info, dict) and info.get("name"):
            name = (
                info["name"] if not info.get("provider") else f"{info['provider']}/{info['name']}"
            )
            ident.set("model", name, "result.json:agent_info.model_info")
        ident.set("sandbox", _get(c, "environment", "type"), "config.json:environment.type")
        ident.set(
            "sandbox",
            _get(r, "config", "environment", "type"),
            "result.json:config.environment.type",
        )
        ident.set("rollout", _get(r, "trial_name"), "result.json:trial_name")
        ident.set("task_digest", _get(r, "task_checksum"), "result.json:task_checksum")
        git = _get(c, "task", "git_commit_id") or _get(r, "config", "task", "git_commit_id")
        url = _get(c, "task", "git_url") or _get(r, "config", "task", "git_url")
        ident.set(
            "source_ref", f"{url}@{git}" if url and git else git, "config.json:task.git_commit_id"
        )
        ident.set("started_at", _get(r, "started_at"), "result.json:started_at")
        _harbor_skill_mode(ident, r, rel_path)
        if ident.task_id is None and "__" in rollout:
            ident.set("task_id", rollout.rsplit("__", 1)[0], "directory name")
    else:  # production (and unknown: take whatever production fields exist)
        ident.set("task_id", _get(r, "task_name"), "result.json:task_name")
        tp = _get(c, "task_path")
        if ident.task_id is None and isinstance(tp, str) and tp:
            ident.set("task_id", posix_name(tp), "config.json:task_path")
        ident.set("harness", normalize_harness(_get(r, "agent")), "result.json:agent")
        ident.set("harness", normalize_harness(_get(c, "agent")), "config.json:agent")
        ident.set("model", _get(r, "model"), "result.json:model")
        ident.set("model", _get(c, "model"), "config.json:model")
        ident.set(
            "skill_mode", normalize_skill_mode(_get(r, "skill_mode")), "result.json:skill_mode"
        )
        ident.set(
            "skill_mode", normalize_skill_mode(_get(c, "skill_mode")), "config.json:skill_mode"
        )
        for doc, name in ((r, "result.json"), (c, "config.json")):
            if _get(doc, "skill_source") == "self_generated":
                ident.set("skill_mode", SELF_GENERATED, f"{name}:skill_source")
        for where, name in ((_get(c, "task_path"), "config.json:task_path"), (rel_path, "path")):
            if isinstance(where, str) and _PATH_SELF_GEN.search(where):
                ident.set("skill_mode", SELF_GENERATED, name)
        ident.set("sandbox", _get(c, "environment"), "config.json:environment")
        ident.set(
            "sandbox",
            _get(r, "usage_tracking", "environment"),
            "result.json:usage_tracking.environment",
        )
        ident.set(
            "rollout", _get(r, "rollout_name") or _get(r, "trial_name"), "result.json:rollout_name"
        )
        ident.set("task_digest", _get(r, "task_digest"), "result.json:task_digest")
        ident.set("task_digest", _get(c, "task_digest"), "config.json:task_digest")
        ident.set("source_ref", _source_ref(_get(r, "source")), "result.json:source")
        ident.set("source_ref", _source_ref(_get(c, "source")), "config.json:source")
        ident.set("started_at", _get(r, "started_at"), "result.json:started_at")
        ident.set("started_at", _get(c, "started_at"), "config.json:started_at")
        if ident.task_id is None and "__" in rollout:
            ident.set("task_id", rollout.rsplit("__", 1)[0], "directory name")
    ident.set("rollout", rollout, "directory name")
    if ident.trial_index is None:
        for part in reversed(rel_path.split("/")):  # a posix path relative to the root
            m = _TRIAL_DIR.match(part)
            if m:
                ident.set("trial_index", int(m.group(1)), "path:trial-NN")
                break
    if isinstance(ident.model, str):  # one model, one id: the spelling stays on record
        ident.model_raw = ident.model
        ident.model = canonical_model(ident.model)
    return ident


def _harbor_skill_mode(ident: Identity, r: Any, rel_path: str) -> None:
    """Harbor records no skill mode: infer it from the task path (a self-generated-skills
    task copy), ``source``, then the run-tree path."""
    for keys, name in (
        (("task_id", "path"), "result.json:task_id.path"),
        (("config", "task", "path"), "result.json:config.task.path"),
    ):
        where = _get(r, *keys)
        if isinstance(where, str) and _PATH_SELF_GEN.search(where):
            ident.set("skill_mode", SELF_GENERATED, name)
    src = _get(r, "source")
    if isinstance(src, str):
        if "no-skills" in src or "noskills" in src:
            ident.set("skill_mode", "no-skill", "result.json:source")
        elif src == "tasks":
            ident.set("skill_mode", "with-skill", "result.json:source")
    task_path = _get(r, "task_id", "path")
    if isinstance(task_path, str) and ("noskills" in task_path or "no-skills" in task_path):
        ident.set("skill_mode", "no-skill", "result.json:task_id.path")
    low = rel_path.lower()
    if _PATH_NO_SKILL.search(low):
        ident.set("skill_mode", "no-skill", "path")
    elif _PATH_WITH_SKILL.search(low):
        ident.set("skill_mode", "with-skill", "path")


def refine_skill_mode(ident: Identity, prompts: list[Any], source: str) -> None:
    """A run whose prompt tells the agent to generate its own skills first is
    ``self-generated``, whatever a path or a no-skill label said (a declared ``with-skill``
    stays)."""
    if ident.skill_mode not in (None, "no-skill"):
        return
    for text in prompts:
        m = _PROMPT_SELF_GEN.search(text) if isinstance(text, str) else None
        if m:
            ident.skill_mode = SELF_GENERATED
            ident.sources["skill_mode"] = f"{source}: {m.group(0)!r}"
            return
