"""Every harness the review knows, as data: one :class:`Harness` row per harness.

Benchflow's registry (``src/benchflow/agents/registry.py`` in benchflow-ai/benchflow at
62cc7e41: ``AGENTS`` and ``AGENT_ALIASES``) gives the keys, aliases and ``skill_paths``;
each harness's public source gives what its first provider request carries (the startup
skill catalog) and how the agent activates a skill.  Harbor's own agents (``harbor run``:
Claude Code, Gemini CLI, Terminus) are rows too; their catalogs come from the agent logs
Harbor writes under ``agent/``.

Nothing else in the project spells a harness name: identity normalisation, the catalog
reader, the leak markers and the harness-global exemptions all read this table.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Harness:
    key: str  # the registry key (Benchflow) or Harbor's ``agent_info.name``
    aliases: tuple[str, ...]  # other spellings of the same harness
    catalog: str  # the catalog reader (bf_assets.audit.catalog.READERS), or "not_serialized"
    skill_paths: tuple[str, ...] = ()  # where skills are mounted ($HOME/..., $WORKSPACE/...)
    # Path fragments that mark skill resources of this harness in an agent action (besides
    # the roots every harness shares, :data:`SHARED_SKILL_ROOTS`).
    leak_roots: tuple[str, ...] = ()
    # The harness's own built-in skills: seen in a no-skill run without being a leak.
    global_paths: tuple[str, ...] = ()
    activation_tools: tuple[str, ...] = ()  # tool names that load a skill
    not_serialized: str | None = None  # why no catalog is recoverable (catalog == "not_serialized")
    layout: str = "production"  # "production" (Benchflow) or "harbor" (harbor run)
    source: str = ""  # where these facts were read


_TERMINUS = (
    "agent/trajectory.json first prompt 'Skill context: available_skills:'; "
    'result.json agent_result.metadata.skills_loaded; response {"load_skill": ...}'
)
REGISTRY = "benchflow-ai/benchflow@62cc7e41 src/benchflow/agents/registry.py"

HARNESSES: tuple[Harness, ...] = (
    # ---- Benchflow's registry (the ten ACP harnesses) ----
    Harness(
        "claude-agent-acp",
        ("claude", "claude-acp", "claude-code-acp"),
        catalog="claude",
        skill_paths=("$HOME/.claude/skills",),
        global_paths=(".claude/plugins/",),
        activation_tools=("Skill", "ToolSearch"),
        source=f"{REGISTRY}; Claude Code system-reminder 'The following skills are available "
        "for use with the Skill tool:'",
    ),
    Harness(
        "codex-acp",
        ("codex",),
        catalog="codex",
        skill_paths=("$HOME/.agents/skills",),
        leak_roots=(".codex/skills",),
        global_paths=(".codex/skills/.system/",),
        source=f"{REGISTRY}; Codex Responses developer input <skills_instructions>",
    ),
    Harness(
        "gemini",
        ("gemini-acp",),
        catalog="gemini",
        skill_paths=("$HOME/.gemini/skills",),
        global_paths=("gemini-cli/bundled/skills/",),
        activation_tools=("activate_skill",),
        source=f"{REGISTRY}; Gemini CLI systemInstruction '# Available Agent Skills' "
        "<available_skills>",
    ),
    Harness(
        "openhands",
        ("oh",),
        catalog="openhands",
        skill_paths=("$HOME/.agents/skills", "$WORKSPACE/.agents/skills"),
        activation_tools=("invoke_skill",),
        source=f"{REGISTRY}; OpenHands system message <SKILLS><available_skills>",
    ),
    Harness(
        "pi-acp",
        ("pi",),
        catalog="not_serialized",
        skill_paths=("$HOME/.pi/agent/skills", "$HOME/.agents/skills"),
        not_serialized="pi-acp does not serialize its skill catalog in any provider request "
        "(review-rules §3.2: its tools are read, bash, edit, write only)",
        source=REGISTRY,
    ),
    Harness(
        "opencode",
        ("opencode-acp",),
        catalog="opencode",
        skill_paths=("$HOME/.opencode/skills",),
        leak_roots=(".opencode/skill/", ".config/opencode/skill"),
        activation_tools=("skill",),
        source=f"{REGISTRY}; OpenCode Skill.fmt: system message <available_skills> "
        "(benchflow providers/litellm_logging.py _opencode_catalog_names), tool 'skill'",
    ),
    Harness(
        "mimo",
        ("mimo-acp", "mimocode"),
        catalog="opencode",
        leak_roots=(".mimocode/skill", ".config/mimocode/skill"),
        activation_tools=("skill",),
        source=f"{REGISTRY} (no skill_paths; an OpenCode fork); XiaomiMiMo/MiMo-Code "
        "packages/opencode/src/skill/index.ts fmt() and tool/skill.ts",
    ),
    Harness(
        "openclaw",
        (),
        catalog="openclaw",
        skill_paths=("$HOME/.claude/skills", "$WORKSPACE/skills"),
        leak_roots=(".openclaw/workspace/skills", ".openclaw/skills", ".openclaw/managed-skills"),
        source=f"{REGISTRY}; openclaw_acp_shim.py copies skills to <workspace>/skills; "
        "OpenClaw system prompt '## Skills' <available_skills>",
    ),
    Harness(
        "deepagents",
        (),
        catalog="not_serialized",
        not_serialized="Benchflow's deepagents shim calls create_deep_agent with a fixed "
        "system prompt and no skills, and the registry mounts no skill paths: no catalog "
        "is serialized (deepagents_acp_shim.py build_agent)",
        source=f"{REGISTRY}; src/benchflow/agents/deepagents_acp_shim.py",
    ),
    Harness(
        "harvey-lab-harness",
        ("harvey-lab",),
        catalog="harvey",
        global_paths=("/opt/harvey-labs/harness/skills",),
        source=f"{REGISTRY} (no skill_paths); harvey_lab_acp_shim.py _load_system_prompt "
        "appends '## Skill: <name>' per harness/skills/*/SKILL.md (harness-global manuals)",
    ),
    # ---- Harbor's agents (``harbor run``), read from their logs under agent/ ----
    Harness(
        "claude-code",
        (),
        catalog="claude_stream",
        skill_paths=("$HOME/.claude/skills",),
        global_paths=(".claude/plugins/",),
        activation_tools=("Skill", "ToolSearch"),
        layout="harbor",
        source="agent/command-N/stdout.txt: Claude Code --output-format stream-json, "
        "system/init 'skills'",
    ),
    Harness(
        "gemini-cli",
        (),
        catalog="gemini_log",
        skill_paths=("$HOME/.gemini/skills",),
        global_paths=("gemini-cli/bundled/skills/",),
        activation_tools=("activate_skill",),
        layout="harbor",
        source="agent/gemini-cli.trajectory.json activate_skill description '(Available: ...)'"
        " and its 'Available skills are:' error; agent/trajectory.json (ATIF)",
    ),
    Harness(
        "terminus-2",
        ("terminus", "terminus2"),
        catalog="terminus",
        activation_tools=("load_skill",),
        layout="harbor",
        source=_TERMINUS,
    ),
    Harness(
        "terminus-2-skills",
        (),
        catalog="terminus",
        activation_tools=("load_skill",),
        layout="harbor",
        source=_TERMINUS + " (SkillsBench's HarborTerminus2WithSkills)",
    ),
)

BY_KEY: dict[str, Harness] = {h.key: h for h in HARNESSES}
ALIASES: dict[str, str] = {a: h.key for h in HARNESSES for a in h.aliases}

# Skill roots every harness shares as leak markers (checks.md NOSKILL_LEAK), plus each
# harness's own: a no-skill agent touching any of them touches skill resources.
SHARED_SKILL_ROOTS = (
    ".agents/skills",
    ".codex/skills",
    ".claude/skills",
    ".gemini/skills",
    ".opencode/skills",
    ".pi/agent/skills",
    "environment/skills",
)


def canonical(name: str) -> str:
    """The table key for a (lower-cased) harness spelling; unknown names unchanged."""
    return ALIASES.get(name, name)


def harness_of(name: str | None) -> Harness | None:
    return BY_KEY.get(canonical(name)) if name else None


def leak_roots() -> tuple[str, ...]:
    """Every skill root of every harness (shared and harness-specific), deduplicated."""
    roots = list(SHARED_SKILL_ROOTS)
    for h in HARNESSES:
        roots.extend(r for r in h.leak_roots if r not in roots)
    return tuple(roots)


def global_paths() -> tuple[str, ...]:
    out: list[str] = []
    for h in HARNESSES:
        out.extend(p for p in h.global_paths if p not in out)
    return tuple(out)


def activation_tools() -> frozenset[str]:
    """Lower-cased tool names that activate a skill, over every harness."""
    names = {t.lower() for h in HARNESSES for t in h.activation_tools if t != "ToolSearch"}
    return frozenset(names | {"use_skill"})
