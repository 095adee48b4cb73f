"""Every harness of Benchflow's registry in the harness table: keys, aliases, skill paths, a
catalog reader (or a documented ``catalog_not_serialized``) and leak markers, with request
bodies shaped like each harness's real first request."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from test_audit_kit import audit, by_check, checks, flat_trial

from bf_assets.audit.catalog import EXTRACTORS, HARBOR_READERS
from bf_assets.ingest.harnesses import BY_KEY, HARNESSES, canonical, leak_roots
from bf_assets.ingest.identity import normalize_harness

# benchflow-ai/benchflow@62cc7e41 src/benchflow/agents/registry.py: AGENTS keys with their
# skill_paths, and AGENT_ALIASES (self-aliases omitted).
REGISTRY = {
    "claude-agent-acp": ["$HOME/.claude/skills"],
    "pi-acp": ["$HOME/.pi/agent/skills", "$HOME/.agents/skills"],
    "openclaw": ["$HOME/.claude/skills", "$WORKSPACE/skills"],
    "codex-acp": ["$HOME/.agents/skills"],
    "gemini": ["$HOME/.gemini/skills"],
    "opencode": ["$HOME/.opencode/skills"],
    "mimo": [],
    "harvey-lab-harness": [],
    "deepagents": [],
    "openhands": ["$HOME/.agents/skills", "$WORKSPACE/.agents/skills"],
}
REGISTRY_ALIASES = {
    "claude": "claude-agent-acp",
    "codex": "codex-acp",
    "pi": "pi-acp",
    "oh": "openhands",
    "harvey-lab": "harvey-lab-harness",
}
TASK_SKILLS = ["mesh-analysis"]


def test_every_registry_harness_is_a_row_of_the_table() -> None:
    for key, paths in REGISTRY.items():
        h = BY_KEY[key]
        assert list(h.skill_paths) == paths, key
        assert h.layout == "production" and h.source
        if h.catalog == "not_serialized":
            assert h.not_serialized, key  # documented, never silent
        else:
            assert h.catalog in EXTRACTORS, key
    for alias, key in REGISTRY_ALIASES.items():
        assert canonical(alias) == key and normalize_harness(alias.upper()) == key
    for h in HARNESSES:
        if h.layout == "harbor":
            assert h.catalog in HARBOR_READERS, h.key


def test_leak_roots_cover_every_harness_skill_path() -> None:
    roots = leak_roots()
    for h in HARNESSES:
        for p in h.skill_paths:
            frag = p.split("/", 1)[1]  # "$HOME/.claude/skills" -> ".claude/skills"
            assert frag == "skills" or any(frag in r or r in frag for r in roots), (h.key, p)


# --------------------------------------------------------------------------- request bodies


def chat_body(system: str, tools: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """A chat-completions body as Benchflow's LiteLLM proxy records it (the OpenCode family,
    OpenClaw, deepagents and Harvey LAB all speak chat completions through it)."""
    return {
        "request": {
            "path": "/v1/chat/completions",
            "body": {
                "model": "benchflow-deepseek-v4-pro",
                "messages": [
                    {"role": "system", "content": system},
                    {"role": "user", "content": [{"type": "text", "text": "Compute the mass."}]},
                ],
                "tools": tools or [],
                "stream": True,
            },
        }
    }


def response(calls: list[tuple[str, str, str]] = ()) -> dict[str, Any]:
    msg: dict[str, Any] = {"role": "assistant", "content": "ok"}
    if calls:
        msg["tool_calls"] = [
            {"id": cid, "type": "function", "function": {"name": n, "arguments": a}}
            for cid, n, a in calls
        ]
    return {
        "response": {
            "status_code": 200,
            "body": {
                "choices": [{"message": msg}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 2},
            },
        }
    }


def xml_skills(*names: str, where: str = "file:///root/.config/opencode/skill") -> str:
    entries = "".join(
        f"  <skill>\n    <name>{n}</name>\n    <description>About {n}.</description>\n"
        f"    <location>{where}/{n}/SKILL.md</location>\n  </skill>\n"
        for n in names
    )
    return f"<available_skills>\n{entries}</available_skills>"


SKILL_TOOL = {
    "type": "function",
    "function": {
        "name": "skill",
        "description": "Load a specialized skill.",
        "parameters": {"type": "object", "properties": {"name": {"type": "string"}}},
    },
}
OPENCODE = (
    "You are opencode, an interactive CLI tool.\n\nSkills provide specialized instructions.\n"
)
OPENCLAW = (
    "You are a personal assistant running inside OpenClaw.\n\n## Skills (mandatory)\n"
    "Before replying: scan <available_skills> <description> entries.\n"
    "- If exactly one skill clearly applies: read its SKILL.md at <location>, then follow it.\n"
)
HARVEY = "You are an AI agent executing a task provided by the user within a workspace.\n"
DEEPAGENTS = (
    "You are an autonomous software engineering agent operating inside a sandboxed workspace. "
    "Use your filesystem and shell tools to complete the user's task end to end."
)


def run(tmp: Path, harness: str, mode: str, llm: list[dict]) -> tuple[dict, set[str], Any]:
    cfg = {"harness": harness, "skill_mode": mode, "task_skills": TASK_SKILLS}
    r = audit(flat_trial(tmp, llm=llm, run_config=cfg))
    return r.skills, checks(r), r


@pytest.mark.parametrize("harness", ["opencode", "mimo"])
def test_opencode_family_catalog_forms(tmp_path: Path, harness: str) -> None:
    verbose = OPENCODE + xml_skills("customize-opencode", "mesh-analysis")
    s, ids, _ = run(
        tmp_path / "a", harness, "with-skill", [chat_body(verbose, [SKILL_TOOL]), response()]
    )
    assert s["catalog_format"] == "opencode_available_skills" and s["task_skills_loading"] == 1
    assert s["skills"] == ["customize-opencode", "mesh-analysis"]
    assert not {i for i in ids if i.startswith("SKILL_")}
    md = OPENCODE + "## Available Skills\n- **mesh-analysis**: Mesh volumes.\n"
    s, _, _ = run(tmp_path / "b", harness, "with-skill", [chat_body(md), response()])
    assert s["catalog_format"] == "opencode_available_skills_md" and s["skills"] == TASK_SKILLS
    none = OPENCODE + "No skills are currently available."
    s, ids, _ = run(tmp_path / "c", harness, "no-skill", [chat_body(none), response()])
    assert s["catalog_status"] == "catalog_found" and s["skill_count"] == 0
    assert s["status"] == "not_loaded_without_skills" and "SKILL_CATALOG_UNKNOWN" not in ids
    # the catalog in the skill tool's description only (some OpenCode versions)
    tool = {
        "type": "function",
        "function": {**SKILL_TOOL["function"], "description": xml_skills("mesh-analysis")},
    }
    s, _, _ = run(tmp_path / "d", harness, "with-skill", [chat_body(OPENCODE, [tool]), response()])
    assert s["skills"] == TASK_SKILLS


def test_opencode_skill_tool_call_in_a_no_skill_run_leaks(tmp_path: Path) -> None:
    llm = [
        chat_body(OPENCODE + xml_skills("customize-opencode"), [SKILL_TOOL]),
        response([("c1", "skill", '{"name": "mesh-analysis"}')]),
    ]
    s, ids, r = run(tmp_path, "opencode", "no-skill", llm)
    assert s["status"] == "not_loaded_without_skills"  # the catalog itself is clean
    (f,) = by_check(r, "NOSKILL_LEAK")
    assert f.line == 2 and "skill activation skill mesh-analysis" in f.message


def test_openclaw_catalog_and_workspace_skills_leak(tmp_path: Path) -> None:
    system = OPENCLAW + xml_skills(
        "weather", "mesh-analysis", where="/root/.openclaw/workspace/skills"
    )
    s, ids, _ = run(tmp_path / "a", "openclaw", "with-skill", [chat_body(system), response()])
    assert s["catalog_format"] == "openclaw_available_skills" and s["task_skills_loading"] == 1
    read = '{"path": "/root/.openclaw/workspace/skills/weather/SKILL.md"}'
    llm = [chat_body(OPENCLAW + xml_skills("weather")), response([("c1", "read", read)])]
    _, ids, r = run(tmp_path / "b", "openclaw", "no-skill", llm)
    (f,) = by_check(r, "NOSKILL_LEAK")
    assert "skill root .openclaw/workspace/skills" in f.message


def test_harvey_lab_manuals_are_harness_global(tmp_path: Path) -> None:
    system = (
        HARVEY + "\n\n## Skill: docx\n\n---\nname: docx\n---\n# DOCX\n\n## Skill: xlsx\n\n# XLSX\n"
    )
    s, ids, _ = run(tmp_path / "a", "harvey-lab", "with-skill", [chat_body(system), response()])
    assert s["harness"] == "harvey-lab-harness" and s["skills"] == ["docx", "xlsx"]
    assert s["catalog_format"] == "harvey_skill_manuals"
    assert "SKILL_NOT_LOADED" in ids  # Benchflow mounts no task skills for Harvey LAB
    read = '{"path": "/opt/harvey-labs/harness/skills/docx/SKILL.md"}'
    llm = [chat_body(system), response([("c1", "read", read)])]
    _, ids, _ = run(tmp_path / "b", "harvey-lab-harness", "no-skill", llm)
    assert "NOSKILL_LEAK" not in ids  # its own manual, not a task skill


def test_deepagents_catalog_is_not_serialized_with_the_reason(tmp_path: Path) -> None:
    s, ids, r = run(tmp_path, "deepagents", "with-skill", [chat_body(DEEPAGENTS), response()])
    assert s["catalog_status"] == "catalog_not_serialized" and s["skills"] == []
    (f,) = by_check(r, "SKILL_CATALOG_UNKNOWN")
    assert "create_deep_agent" in f.message and "no skills" in f.message


@pytest.mark.parametrize(
    ("harness", "path"),
    [
        ("mimo", "/root/.mimocode/skills/mesh/SKILL.md"),
        ("opencode", "/root/.config/opencode/skill/mesh/notes.md"),
        ("pi-acp", "/root/.pi/agent/skills/mesh/notes.md"),
        ("gemini", "/root/.gemini/skills/mesh/notes.md"),
    ],
)
def test_each_harness_skill_root_is_a_leak_marker(tmp_path: Path, harness: str, path: str) -> None:
    llm = [
        chat_body("You are a coding agent."),
        response([("c1", "bash", f'{{"command": "cat {path}"}}')]),
    ]
    _, ids, _ = run(tmp_path, harness, "no-skill", llm)
    assert "NOSKILL_LEAK" in ids
