"""No-skill leakage (``NOSKILL_LEAK``, review-rules §4), scoped to actions and observations.

Markers: ``SKILL.md``; the skill roots of every harness, the task's ``environment/skills``
and the sandbox skills dir; the task's own skill names; skill activations (``invoke_skill``,
``activate_skill``, a ``Skill`` call, ``ToolSearch`` selecting a skill, the ``Launching
skill:`` / ``<activated_skill>`` / ``Loaded skill:`` envelopes).  Roots, activation tools
and harness-global paths come from the harness table (:mod:`bf_assets.ingest.harnesses`).
They are applied to ACP tool events (title,
arguments, output) and to LLM tool calls and tool results, never to the startup prompt or
the tool declarations (nor a Harbor agent's first prompt).  Harness-global built-in skill
paths (Codex ``.codex/skills/.system``, Claude plugin skills, Gemini's bundled skills, Harvey
LAB's manuals) are not a leak unless they name a task skill.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from bf_assets.audit.events import Action, Events
from bf_assets.audit.expected import norm_skill
from bf_assets.audit.prefilter import may_contain
from bf_assets.findings import Finding, clip, finding
from bf_assets.ingest.harnesses import activation_tools, global_paths, leak_roots
from bf_assets.ingest.identity import SELF_GENERATED

SKILL_ROOTS = leak_roots()  # every harness's skill roots (bf_assets.ingest.harnesses)
HARNESS_GLOBAL = re.compile(
    r"[^\s'\"`]*(?:" + "|".join(re.escape(p) for p in global_paths()) + r")[^\s'\"`]*"
)
ACTIVATION_TOOLS = activation_tools()
ENVELOPES = re.compile(r"Launching skill:|<activated_skill\b|^Loaded skill: ", re.M)
_SKILL_MD = re.compile(r"(?i)\bskill\.md\b")
MAX_FINDINGS = 20


def _name_patterns(names: Iterable[str]) -> list[tuple[str, re.Pattern[str]]]:
    out = []
    for n in names:
        key = norm_skill(n)
        if not key:
            continue
        alt = "[-_ ]".join(re.escape(p) for p in key.split("-"))
        if "-" in key:  # distinctive enough to match as a word
            rx = re.compile(rf"(?i)(?<![\w-]){alt}(?![\w-])")
        else:  # a one-word name only counts in a skill context
            rx = re.compile(
                rf"(?i)(?:skills?/|[\"']?(?:name|skill)[\"']?\s*[:=]\s*[\"']?){alt}(?![\w-])"
            )
        out.append((n, rx))
    return out


def _activation(a: Action) -> str | None:
    name = a.name
    title = a.title.lower()
    if name in ACTIVATION_TOOLS or title.startswith(
        ("invoke_skill", "activate_skill", "skill ", "skill(")
    ):
        arg = a.args.get("name") or a.args.get("skill") or a.title
        return f"skill activation {a.tool or 'skill'} {clip(arg, 80)}"
    if name == "toolsearch" or title.startswith("toolsearch"):
        q = str(a.args.get("query") or a.title)
        if "select:" in q.lower() or "skill" in q.lower():
            return f"ToolSearch selecting a skill ({clip(q, 80)})"
    return None


class _Scanner:
    def __init__(self, task_skills: list[str], sandbox_dir: str, task_only: bool = False) -> None:
        self.names = _name_patterns(task_skills)
        self.task_only = task_only
        roots = [re.escape(r) for r in SKILL_ROOTS]
        self.roots = re.compile("(" + "|".join(roots) + ")")
        self.sandbox = re.compile(rf"(?:^|[\s'\"=:(`]){re.escape(sandbox_dir)}(?:/|\b)")
        self.sandbox_dir = sandbox_dir
        # Words every marker below contains (lowercased): skill roots, SKILL.md and the
        # envelopes all say "skill"; a task skill name contains its first word; the sandbox
        # directory itself.  Most texts contain none and stop here.
        self.needles = ["skill", sandbox_dir.lower()]
        self.needles += [norm_skill(n).split("-")[0] for n, _ in self.names]

    def markers(self, text: str) -> list[str]:
        if not may_contain(text, self.needles):
            return []
        found: list[str] = []
        for n, rx in self.names:
            if rx.search(text):
                found.append(f"task skill name {n!r}")
        if self.task_only:
            return found
        stripped = HARNESS_GLOBAL.sub(" ", text)
        if _SKILL_MD.search(stripped):
            found.append("SKILL.md")
        for m in dict.fromkeys(self.roots.findall(stripped)):
            found.append(f"skill root {m}")
        if self.sandbox.search(stripped):
            found.append(f"sandbox skills dir {self.sandbox_dir}")
        if ENVELOPES.search(text):
            found.append("skill activation envelope")
        return found


def leak_findings(
    ev: Events, task_skills: list[str], sandbox_dir: str, mode: str = "no-skill"
) -> list[Finding]:
    """``NOSKILL_LEAK`` for every action or observation that touches skill resources.

    A ``self-generated`` run was told to write (and then load) skills of its own: skill
    roots, ``SKILL.md`` files and activations are its job, not a leak.  Only the task's
    shipped skills (their names, an activation of one) are a leak there."""
    task_only = mode == SELF_GENERATED
    if task_only and not task_skills:
        return []
    sc = _Scanner(task_skills, sandbox_dir, task_only)
    out: list[Finding] = []
    seen: set[tuple[str, int]] = set()
    whose = "the task's own skills" if task_only else "skill resources"

    def emit(file: str, line: int, what: str, markers: list[str], evidence: str) -> None:
        if (file, line) in seen or len(out) >= MAX_FINDINGS:
            return
        seen.add((file, line))
        out.append(
            finding(
                "NOSKILL_LEAK",
                f"{mode} trial: {what} touches {whose} ({'; '.join(markers)}) at {file}:{line}",
                file=file,
                line=line,
                evidence=evidence,
            )
        )

    for a in ev.actions:
        markers = sc.markers(a.text)
        act = _activation(a)
        if act and (not task_only or markers):  # self-generated: a task skill's activation
            markers.insert(0, act)
        if markers:
            emit(a.file, a.line, a.kind_label, markers, a.text)
    for o in ev.observations:
        markers = sc.markers(o.text)
        if markers:
            emit(
                o.file,
                o.line,
                f"{o.source.upper()} tool result",
                markers,
                _excerpt(o.text, markers),
            )
    return out


def _excerpt(text: str, markers: list[str]) -> str:
    low = text.lower()
    for m in ("skill.md", "skills", "launching skill", "activated_skill"):
        i = low.find(m)
        if i >= 0:
            return text[max(0, i - 80) : i + 120]
    return text[:200]
