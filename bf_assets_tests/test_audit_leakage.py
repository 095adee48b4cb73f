"""``NOSKILL_LEAK``: actions and observations only; startup prompts and tool declarations never."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_audit_kit import (
    acp_bash,
    acp_tool,
    audit,
    by_check,
    chat_request,
    chat_response,
    flat_trial,
    oh_system,
    one_bash_call,
)

NO_SKILL = {"harness": "openhands", "skill_mode": "no_skills", "task_skills": ["task-helper"]}


def leaks(tmp_path: Path, acp=None, llm=None, **rc) -> list:
    r = audit(flat_trial(tmp_path, acp=acp, llm=llm, run_config={**NO_SKILL, **rc}))
    return by_check(r, "NOSKILL_LEAK")


@pytest.mark.parametrize(
    "event",
    [
        acp_tool("read", path="/home/agent/.agents/skills/x/SKILL.md"),
        acp_bash("ls ~/.claude/skills"),
        acp_bash("cat ~/.gemini/skills/foo/notes.md"),
        acp_bash("find / -path '*.opencode/skills*'"),
        acp_bash("ls /home/agent/.pi/agent/skills"),
        acp_bash("cat /task/environment/skills/x/README"),
        acp_bash("ls /skills/"),
        acp_bash("grep -r parse /app --include='*task-helper*'"),
        acp_tool("invoke_skill", name="github"),
        acp_tool("activate_skill", name="anything"),
        acp_tool("Skill", skill="pdf"),
        acp_tool("ToolSearch", query="select:Skill"),
        acp_bash("cat /home/agent/.codex/skills/.system/task-helper/SKILL.md"),
    ],
)
def test_action_marker_fires(tmp_path: Path, event: dict) -> None:
    found = leaks(tmp_path, acp=[event])
    assert found and found[0].line == 1 and found[0].file == "trajectory/acp_trajectory.jsonl"


def test_observation_marker_fires(tmp_path: Path) -> None:
    llm = one_bash_call("ls ~", "notes.txt\nskills/task-helper/SKILL.md", skills="github")
    (f,) = leaks(tmp_path, llm=llm)
    assert f.file == "trajectory/llm_trajectory.jsonl" and f.line == 3
    assert "SKILL.md" in (f.evidence or "")


def test_activation_envelope_in_output_fires(tmp_path: Path) -> None:
    ev = {**acp_bash("echo"), "content": "Launching skill: pdf"}
    assert leaks(tmp_path, acp=[ev])


@pytest.mark.parametrize(
    "event",
    [
        acp_bash("ls -la /app && cat /app/data/input.csv"),
        acp_bash("cat /home/agent/.codex/skills/.system/skill-creator/SKILL.md"),
        acp_bash("pip install scikit-learn"),  # "skill" substrings are not skill resources
        acp_bash("echo debugging the helper"),
        acp_tool("read", path="/app/task_helper_output.txt"),
    ],
)
def test_clean_look_alikes(tmp_path: Path, event: dict) -> None:
    assert leaks(tmp_path, acp=[event]) == []


def test_startup_prompt_and_tool_declarations_never_count(tmp_path: Path) -> None:
    # OpenHands always declares invoke_skill and lists its global catalog; Codex lists .system skills.
    llm = [
        chat_request(oh_system("github", "security") + "\nSee ~/.agents/skills/*/SKILL.md"),
        chat_response("I will not use skills."),
    ]
    assert leaks(tmp_path, acp=[acp_bash("ls")], llm=llm) == []


def test_with_skill_trials_are_not_scanned(tmp_path: Path) -> None:
    r = audit(
        flat_trial(
            tmp_path,
            acp=[acp_tool("invoke_skill", name="data-cleaning")],
            run_config={"skill_mode": "with_skills"},
        )
    )
    assert not by_check(r, "NOSKILL_LEAK")


def test_custom_sandbox_skills_dir(tmp_path: Path) -> None:
    ev = [acp_bash("ls /opt/task-skills/")]
    assert leaks(tmp_path / "a", acp=ev, skills_sandbox_dir="/opt/task-skills")
    assert not leaks(tmp_path / "b", acp=ev)


def test_one_word_task_skill_needs_a_skill_context(tmp_path: Path) -> None:
    quiet = [acp_bash("python main.py --debug")]
    assert not leaks(tmp_path / "a", acp=quiet, task_skills=["debug"])
    loud = [acp_bash("cat /somewhere/skills/debug/notes")]
    assert leaks(tmp_path / "b", acp=loud, task_skills=["debug"])
