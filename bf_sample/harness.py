"""Per-harness facts: models, proxy aliases, startup skill catalogs (review-rules.md §3.2), tools.

The catalog text is what each harness really puts in its first LLM request:
- codex-acp: a Responses ``developer`` input message with ``<skills_instructions>`` and
  ``### Available skills`` entries ``- name: description (file: /path/SKILL.md)``;
- openhands: a system message with ``<SKILLS><available_skills><skill><name>…``;
- claude-agent-acp: ``The following skills are available for use with the Skill tool:`` and
  ``- name: description`` bullets, in a ``<system-reminder>`` block of the first user message
  (LiteLLM's ``anthropic_messages`` capture keeps ``messages`` but drops ``system``);
- gemini: ``# Available Agent Skills`` followed by ``<available_skills>`` in the system message.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from bf_sample.tasks import Task


@dataclass(frozen=True)
class HarnessInfo:
    key: str
    model: str  # as requested (config.json / result.json)
    upstream: str  # response.body.model
    agent_name: str  # self-reported in the ACP handshake
    call_type: str
    path: str
    hidden_tokens: int  # uncaptured system prompt / instructions, still billed
    prices: tuple[float, float, float, float]  # USD per 1M: input, output, cache read, cache write
    base_url_env: str
    skill_root: str  # where task skills are linked for this harness
    global_skills: tuple[tuple[str, str, str], ...]  # (name, description, SKILL.md path)

    @property
    def alias(self) -> str:
        """LiteLLM proxy alias ``benchflow-<sanitized id>`` (request.body.model)."""
        return _alias(self.model)


@functools.cache
def _alias(model: str) -> str:
    return "benchflow-" + "".join(c if c.isalnum() else "-" for c in model.lower())


HARNESSES: dict[str, HarnessInfo] = {
    "codex-acp": HarnessInfo(
        key="codex-acp",
        model="openai/gpt-5",
        upstream="gpt-5-2025-08-07",
        agent_name="codex-acp",
        call_type="aresponses",
        path="/v1/chat/completions",
        hidden_tokens=2900,
        prices=(1.25, 10.0, 0.125, 0.0),
        base_url_env="OPENAI_BASE_URL",
        skill_root="/home/agent/.agents/skills",
        global_skills=(
            (
                "skill-creator",
                "Guide for creating effective skills that extend Codex with specialized knowledge.",
                "/home/agent/.codex/skills/.system/skill-creator/SKILL.md",
            ),
            (
                "skill-installer",
                "Install Codex skills into $CODEX_HOME/skills from a curated list or a repo path.",
                "/home/agent/.codex/skills/.system/skill-installer/SKILL.md",
            ),
        ),
    ),
    "claude-agent-acp": HarnessInfo(
        key="claude-agent-acp",
        model="anthropic/claude-sonnet-4-5",
        upstream="claude-sonnet-4-5-20250929",
        agent_name="claude-code-acp",
        call_type="anthropic_messages",
        path="/v1/messages",
        hidden_tokens=3600,
        prices=(3.0, 15.0, 0.3, 3.75),
        base_url_env="ANTHROPIC_BASE_URL",
        skill_root="/home/agent/.claude/skills",
        global_skills=(
            (
                "review-diff",
                "Review a unified diff for correctness risks and summarise them.",
                "/home/agent/.claude/plugins/core/skills/review-diff/SKILL.md",
            ),
            (
                "session-notes",
                "Keep short working notes for long multi-step sessions.",
                "/home/agent/.claude/plugins/core/skills/session-notes/SKILL.md",
            ),
        ),
    ),
    "openhands": HarnessInfo(
        key="openhands",
        model="anthropic/claude-sonnet-4-5",
        upstream="claude-sonnet-4-5-20250929",
        agent_name="openhands",
        call_type="acompletion",
        path="/v1/chat/completions",
        hidden_tokens=0,
        prices=(3.0, 15.0, 0.3, 3.75),
        base_url_env="LLM_BASE_URL",
        skill_root="/home/agent/.agents/skills",
        global_skills=(
            ("github", "Work with GitHub repositories, pull requests and issues via gh.", ""),
            ("security", "Security review checklist for code changes.", ""),
        ),
    ),
    "gemini": HarnessInfo(
        key="gemini",
        model="gemini/gemini-2.5-pro",
        upstream="gemini-2.5-pro",
        agent_name="gemini-cli",
        call_type="acompletion",
        path="/v1/chat/completions",
        hidden_tokens=0,
        prices=(1.25, 10.0, 0.31, 0.0),
        base_url_env="GOOGLE_GEMINI_BASE_URL",
        skill_root="/home/agent/.gemini/skills",
        global_skills=(
            (
                "skill-creator",
                "Create new Gemini CLI skills with the right layout.",
                "/usr/lib/node_modules/@google/gemini-cli/bundled/skills/skill-creator/SKILL.md",
            ),
            (
                "docs-writer",
                "Write and restructure Markdown documentation.",
                "/usr/lib/node_modules/@google/gemini-cli/bundled/skills/docs-writer/SKILL.md",
            ),
        ),
    ),
}


def catalog_entries(
    info: HarnessInfo, task: Task | None, with_skill: bool, extra_globals: int = 0
) -> list[tuple[str, str, str]]:
    """The skills a harness lists at startup: harness-global ones, plus the task's in with-skill."""
    entries = list(info.global_skills)
    for i in range(extra_globals):
        entries.append(
            (
                f"global-skill-{i:02d}",
                f"Harness-wide helper number {i} for routine repository chores.",
                f"{info.skill_root}/global-skill-{i:02d}/SKILL.md",
            )
        )
    if with_skill and task is not None:
        task_entries = [
            (s.name, s.description, f"{info.skill_root}/{s.name}/SKILL.md") for s in task.skills
        ]
        entries = task_entries + entries if info.key == "codex-acp" else entries + task_entries
    return entries


def codex_developer_texts(entries: list[tuple[str, str, str]]) -> list[str]:
    perms = (
        "<permissions instructions>\nFilesystem sandboxing defines which files can be read or "
        "written. `sandbox_mode` is `danger-full-access`: no filesystem sandboxing. Approval "
        "policy is `never`: do not ask the user for approval, run commands directly.\n"
        "</permissions instructions>"
    )
    lines = "\n".join(f"- {n}: {d} (file: {p})" for n, d, p in entries)
    skills = (
        "<skills_instructions>\n## Skills\nThese skills are discovered at startup from multiple "
        "local sources. Each entry includes a name, description, and file path so you can open "
        "the source for full instructions.\n### Available skills\n"
        f"{lines}\n"
        "### How to use skills\n- Discovery: the list above is the skills available in this "
        "session.\n- Trigger rules: if the task clearly matches a skill's description, open its "
        "SKILL.md and follow it for that turn.\n</skills_instructions>"
    )
    return [perms, skills]


CODEX_ENV_CONTEXT = (
    "<environment_context>\n  <cwd>/app</cwd>\n  <approval_policy>never</approval_policy>\n"
    "  <sandbox_mode>danger-full-access</sandbox_mode>\n  <network_access>enabled</network_access>"
    "\n  <shell>bash</shell>\n</environment_context>"
)


def openhands_system(entries: list[tuple[str, str, str]]) -> str:
    skills = "".join(
        f"<skill><name>{n}</name><description>{d}</description></skill>" for n, d, _ in entries
    )
    return (
        "You are OpenHands agent, a helpful AI assistant that can interact with a computer to "
        "solve tasks.\n\n<ROLE>\nYour primary role is to assist users by executing commands, "
        "modifying code, and solving technical problems effectively. Be thorough, methodical, "
        "and prioritize quality over speed.\n</ROLE>\n\n<EFFICIENCY>\nCombine multiple bash "
        "commands into one where possible; use grep and find to navigate.\n</EFFICIENCY>\n\n"
        "<SKILLS>\nThe following skills are available. To use a skill, call "
        f'invoke_skill(name="...").\n<available_skills>{skills}</available_skills>\n</SKILLS>'
    )


def claude_reminder(entries: list[tuple[str, str, str]]) -> str:
    bullets = "\n".join(f"- {n}: {d}" for n, d, _ in entries)
    return (
        "<system-reminder>\nThe following skills are available for use with the Skill tool:\n\n"
        f"{bullets}\n\nIMPORTANT: this context may or may not be relevant to your tasks.\n"
        "</system-reminder>"
    )


def gemini_system(entries: list[tuple[str, str, str]]) -> str:
    skills = "\n".join(
        f"  <skill>\n    <name>{n}</name>\n    <description>{d}</description>\n"
        f"    <location>{p}</location>\n  </skill>"
        for n, d, p in entries
    )
    return (
        "You are an interactive CLI agent specializing in software engineering tasks. Your "
        "primary goal is to help users safely and efficiently, adhering strictly to the "
        "following instructions and utilizing your available tools.\n\n# Core Mandates\n\n"
        "- Conventions: rigorously adhere to existing project conventions.\n- Proactiveness: "
        "fulfil the request thoroughly.\n\n# Available Agent Skills\n\nYou have access to the "
        "following specialized skills. To activate a skill and receive its detailed "
        "instructions, call the `activate_skill` tool with the skill's name.\n\n"
        f"<available_skills>\n{skills}\n</available_skills>\n\n# Operational Guidelines\n\n"
        "Keep responses concise; explain critical commands before running them."
    )


def _obj(props: dict[str, dict[str, object]], required: list[str]) -> dict[str, object]:
    return {"type": "object", "properties": props, "required": required}


_S = {"type": "string"}

CHAT_TOOLS: dict[str, list[dict[str, object]]] = {
    "openhands": [
        {
            "type": "function",
            "function": {
                "name": name,
                "description": desc,
                "parameters": _obj(props, req),
            },
        }
        for name, desc, props, req in (
            (
                "execute_bash",
                "Execute a bash command in the terminal within a persistent shell session.",
                {"command": _S, "timeout": {"type": "number"}},
                ["command"],
            ),
            (
                "str_replace_editor",
                "Custom editing tool for viewing, creating and editing files.",
                {"command": _S, "path": _S, "file_text": _S, "old_str": _S, "new_str": _S},
                ["command", "path"],
            ),
            ("think", "Log a thought without changing anything.", {"thought": _S}, ["thought"]),
            (
                "invoke_skill",
                "Load the instructions of an available skill.",
                {"name": _S},
                ["name"],
            ),
            ("finish", "Signal that the task is complete.", {"message": _S}, ["message"]),
        )
    ],
    "gemini": [
        {
            "type": "function",
            "function": {"name": name, "description": desc, "parameters": _obj(props, req)},
        }
        for name, desc, props, req in (
            (
                "run_shell_command",
                "Executes a given shell command as `bash -c <command>`.",
                {"command": _S, "description": _S},
                ["command"],
            ),
            (
                "read_file",
                "Reads and returns the content of a file.",
                {"file_path": _S},
                ["file_path"],
            ),
            (
                "write_file",
                "Writes content to a specified file.",
                {"file_path": _S, "content": _S},
                ["file_path", "content"],
            ),
            (
                "activate_skill",
                "Activates a specialized agent skill by name.",
                {"name": _S},
                ["name"],
            ),
        )
    ],
}

CODEX_TOOLS: list[dict[str, object]] = [
    {
        "type": "function",
        "name": "shell",
        "description": "Runs a shell command and returns its output.",
        "strict": False,
        "parameters": _obj(
            {
                "command": {"type": "array", "items": _S},
                "workdir": _S,
                "timeout_ms": {"type": "number"},
            },
            ["command"],
        ),
    },
    {
        "type": "function",
        "name": "update_plan",
        "description": "Updates the task plan.",
        "strict": False,
        "parameters": _obj({"explanation": _S, "plan": {"type": "array"}}, ["plan"]),
    },
]

CLAUDE_TOOLS: list[dict[str, object]] = [
    {"name": name, "description": desc, "input_schema": _obj(props, req)}
    for name, desc, props, req in (
        (
            "Bash",
            "Executes a given bash command in a persistent shell session.",
            {"command": _S, "description": _S, "timeout": {"type": "number"}},
            ["command"],
        ),
        ("Read", "Reads a file from the local filesystem.", {"file_path": _S}, ["file_path"]),
        (
            "Write",
            "Writes a file to the local filesystem.",
            {"file_path": _S, "content": _S},
            ["file_path", "content"],
        ),
        (
            "Edit",
            "Performs exact string replacements in files.",
            {"file_path": _S, "old_string": _S, "new_string": _S},
            ["file_path", "old_string", "new_string"],
        ),
        ("Skill", "Execute a skill within the main conversation.", {"skill": _S}, ["skill"]),
    )
]
