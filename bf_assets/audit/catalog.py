"""Startup skill catalogs per harness (review-rules §3.2), read from request bodies.

Which reader a harness uses is the ``catalog`` column of the harness table
(:mod:`bf_assets.ingest.harnesses`); Harbor agents' catalogs come from their logs.

Each extractor looks only at the startup prompt parts its harness uses (system /
developer messages, Claude's first-user ``<system-reminder>``), never at tool outputs or
tool declarations, and returns the exact catalog text (hashed as is) and its entries.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bf_assets.ingest.scan import TrialData


class _Guarded:
    """A compiled pattern whose every match holds a literal: ``search`` looks for the
    literal first (``str.__contains__``, far faster than the regex engine's scan of a long
    prompt that lacks it) and gives the same answer."""

    __slots__ = ("rx", "needles")

    def __init__(self, pattern: str, flags: int, *needles: str) -> None:
        self.rx = re.compile(pattern, flags)
        self.needles = needles  # every match contains one of them

    def search(self, text: str, pos: int = 0) -> re.Match[str] | None:
        if not any(n in text for n in self.needles):
            return None
        return self.rx.search(text, pos)

    def finditer(self, text: str) -> Iterator[re.Match[str]]:
        return self.rx.finditer(text)


_CODEX_BLOCK = _Guarded(
    r"<skills_instructions>(.*?)</skills_instructions>", re.S, "<skills_instructions>"
)
_CODEX_LIST = re.compile(r"### Available skills\n(.*?)(?:\n### |\Z)", re.S)
_CODEX_ENTRY = re.compile(r"^- ([^:\n]+): (.*?)(?: \(file: ([^)\n]+)\))?$", re.M)
_AVAILABLE = _Guarded(r"<available_skills>(.*?)</available_skills>", re.S, "<available_skills>")
_SKILL = re.compile(r"<skill>(.*?)</skill>", re.S)
_GEMINI_HEADER = "# Available Agent Skills"
CLAUDE_MARKER = "The following skills are available for use with the Skill tool:"
_CLAUDE_BLOCK = _Guarded(
    re.escape(CLAUDE_MARKER) + r"\n\n(.*?)(?=\n\n(?!- )|\n?</system-reminder>|\Z)",
    re.S,
    CLAUDE_MARKER,
)
_CLAUDE_ENTRY = re.compile(r"^- ([^:\n]+): (.*?)(?=\n- |\Z)", re.S | re.M)
_PI = _Guarded(
    r"pi, a coding agent harness|pi-coding-agent",
    0,
    "pi, a coding agent harness",
    "pi-coding-agent",
)
_MD_SKILLS = _Guarded(
    r"^## Available Skills\n((?:- \*\*[^*\n]+\*\*:[^\n]*\n?)*)", re.M, "## Available Skills\n"
)
_MD_ENTRY = re.compile(r"^- \*\*([^*\n]+)\*\*: ?(.*)$", re.M)
_NO_SKILLS = "No skills are currently available."
_HARVEY_SKILL = _Guarded(r"^## Skill: ([^\n]+)$", re.M, "## Skill: ")


@dataclass(slots=True)
class PromptParts:
    """The startup-prompt texts of one request body, by role."""

    system: list[str] = field(default_factory=list)
    developer: list[str] = field(default_factory=list)
    first_user: list[str] = field(default_factory=list)
    tool_names: set[str] = field(default_factory=set)
    tool_descriptions: dict[str, str] = field(default_factory=dict)  # name -> description

    def all_text(self) -> str:
        return "\n".join([*self.system, *self.developer, *self.first_user])


@dataclass(slots=True)
class Catalog:
    format: str
    text: str | None  # exact catalog text (hashed); None when the block is absent
    skills: list[dict[str, str]]
    found: bool

    @property
    def sha256(self) -> str | None:
        if not self.text:
            return None
        return hashlib.sha256(self.text.encode("utf-8", errors="replace")).hexdigest()


def _texts(content: Any) -> list[str]:
    if isinstance(content, str):
        return [content]
    out: list[str] = []
    if isinstance(content, list):
        for b in content:
            if isinstance(b, str):
                out.append(b)
            elif isinstance(b, dict) and isinstance(b.get("text"), str):
                out.append(b["text"])
    elif isinstance(content, dict):
        if isinstance(content.get("text"), str):
            out.append(content["text"])
        out.extend(_texts(content.get("parts")))
    return out


def prompt_parts(body: Any) -> PromptParts:
    """Split a provider request body into its startup-prompt texts (any provider shape)."""
    pp = PromptParts()
    if not isinstance(body, dict):
        return pp
    pp.system.extend(_texts(body.get("instructions")))
    pp.system.extend(_texts(body.get("system")))
    for key in ("systemInstruction", "system_instruction"):
        pp.system.extend(_texts(body.get(key)))
    for key in ("messages", "input", "contents"):
        items = body.get(key)
        if not isinstance(items, list):
            continue
        in_first_user = True
        for m in items:
            if not isinstance(m, dict):
                continue
            role = m.get("role")
            content = m.get("content") if "content" in m else m.get("parts")
            if role == "system":
                pp.system.extend(_texts(content))
            elif role == "developer":
                pp.developer.extend(_texts(content))
            elif role == "user" and in_first_user:
                pp.first_user.extend(_texts(content))
            elif role not in (None, "system", "developer") or m.get("type") in (
                "function_call",
                "function_call_output",
            ):
                in_first_user = False
    for tool in body.get("tools") or []:
        if isinstance(tool, dict):
            fn = tool.get("function") if isinstance(tool.get("function"), dict) else tool
            if isinstance(fn.get("name"), str):
                pp.tool_names.add(fn["name"])
                if isinstance(fn.get("description"), str):
                    pp.tool_descriptions[fn["name"]] = fn["description"]
            for decl in tool.get("functionDeclarations") or []:
                if isinstance(decl, dict) and isinstance(decl.get("name"), str):
                    pp.tool_names.add(decl["name"])
    return pp


def first_prompt_parts(t: TrialData) -> PromptParts:
    """``prompt_parts`` of the trial's first request, split once per trial (several audits
    read it; none writes to it)."""
    pp = t.memo.get("first_prompt_parts")
    if pp is None:
        pp = t.memo["first_prompt_parts"] = prompt_parts(t.llm.first_request)
    return pp


_XML_TAGS = tuple(
    (tag, re.compile(rf"<{tag}>(.*?)</{tag}>", re.S)) for tag in ("name", "description", "location")
)


def _xml_entries(block: str) -> list[dict[str, str]]:
    out = []
    for m in _SKILL.finditer(block):
        inner = m.group(1)
        entry = {}
        for tag, rx in _XML_TAGS:
            t = rx.search(inner)
            if t:
                entry[tag] = t.group(1).strip()
        if entry.get("name"):
            out.append(entry)
    return out


def extract_codex(pp: PromptParts) -> Catalog | None:
    for text in (*pp.developer, *pp.system):
        m = _CODEX_BLOCK.search(text)
        if m:
            inner = m.group(1)
            lm = _CODEX_LIST.search(inner)
            skills = []
            for e in _CODEX_ENTRY.finditer(lm.group(1) if lm else ""):
                entry = {"name": e.group(1).strip(), "description": e.group(2).strip()}
                if e.group(3):
                    entry["file"] = e.group(3).strip()
                skills.append(entry)
            return Catalog("codex_skills_instructions", inner, skills, True)
    return None


def extract_openhands(pp: PromptParts) -> Catalog | None:
    for text in (*pp.system, *pp.developer, *pp.first_user):
        m = _AVAILABLE.search(text)
        if m:
            skills = _xml_entries(m.group(1))
            return Catalog("openhands_available_skills", m.group(1), skills, bool(skills))
    return None


def extract_gemini(pp: PromptParts) -> Catalog | None:
    for text in (*pp.system, *pp.developer, *pp.first_user):
        start = text.find(_GEMINI_HEADER)
        m = _AVAILABLE.search(text, max(start, 0))
        if m:
            skills = _xml_entries(m.group(1))
            return Catalog("gemini_available_skills", m.group(1), skills, bool(skills))
    return None


def extract_claude(pp: PromptParts) -> Catalog | None:
    for text in (*pp.system, *pp.first_user, *pp.developer):
        m = _CLAUDE_BLOCK.search(text)
        if m:
            block = m.group(1)
            skills = [
                {"name": e.group(1).strip(), "description": " ".join(e.group(2).split())}
                for e in _CLAUDE_ENTRY.finditer(block)
                if e.group(1).strip()
            ]
            return Catalog("claude_skill_tool_bullets", block, skills, bool(skills))
    return None


def extract_opencode(pp: PromptParts) -> Catalog | None:
    """OpenCode and its MiMo fork (``Skill.fmt``): ``<available_skills>`` in a system message
    (verbose), else ``## Available Skills`` bullets, else the explicit empty sentence; the
    ``skill`` tool's description carries the same list in some versions."""
    texts = [*pp.system, *pp.developer]
    if "skill" in pp.tool_descriptions:
        texts.append(pp.tool_descriptions["skill"])
    for text in texts:
        m = _AVAILABLE.search(text)
        if m:
            return Catalog("opencode_available_skills", m.group(1), _xml_entries(m.group(1)), True)
        md = _MD_SKILLS.search(text)
        if md:
            skills = [
                {"name": e.group(1).strip(), "description": e.group(2).strip()}
                for e in _MD_ENTRY.finditer(md.group(1))
            ]
            return Catalog("opencode_available_skills_md", md.group(0), skills, True)
        if _NO_SKILLS in text:
            return Catalog("opencode_no_skills", _NO_SKILLS, [], True)
    return None


def extract_openclaw(pp: PromptParts) -> Catalog | None:
    """OpenClaw's system prompt ``## Skills`` section: ``<available_skills>`` with name,
    description and the ``SKILL.md`` location the agent is told to read."""
    for text in (*pp.system, *pp.developer):
        m = _AVAILABLE.search(text)
        if m:
            return Catalog("openclaw_available_skills", m.group(1), _xml_entries(m.group(1)), True)
    return None


def extract_harvey(pp: PromptParts) -> Catalog | None:
    """Harvey LAB's system prompt appends ``## Skill: <name>`` and the manual per harness
    skill (harness-global; Benchflow mounts no task skills for it)."""
    for text in pp.system:
        first = _HARVEY_SKILL.search(text)
        if first:
            skills = [{"name": m.group(1).strip()} for m in _HARVEY_SKILL.finditer(text)]
            return Catalog("harvey_skill_manuals", text[first.start() :], skills, True)
    return None


# Request-body catalog readers by the harness table's ``catalog`` name.
EXTRACTORS = {
    "codex": extract_codex,
    "openhands": extract_openhands,
    "gemini": extract_gemini,
    "claude": extract_claude,
    "opencode": extract_opencode,
    "openclaw": extract_openclaw,
    "harvey": extract_harvey,
}
# Harbor agent-log readers: their catalogs are folded while the logs are read
# (bf_assets.ingest.harbor), matched here by format prefix.
HARBOR_READERS = {
    "claude_stream": ("claude_code_init_skills",),
    "gemini_log": ("gemini_activate_skill",),
    "terminus": ("terminus_available_skills",),
}


def content_family(pp: PromptParts) -> str | None:
    """Which harness family the startup prompt looks like (confirmation only, never decisive)."""
    text = pp.all_text()
    if _CODEX_BLOCK.search("\n".join(pp.developer)):
        return "codex"
    if "<SKILLS>" in text or "invoke_skill" in pp.tool_names:
        return "openhands"
    if _GEMINI_HEADER in text or "activate_skill" in pp.tool_names:
        return "gemini"
    if CLAUDE_MARKER in text or "Skill" in pp.tool_names:
        return "claude"
    if _PI.search(text):
        return "pi"
    return None
