"""Skill-catalog recovery per harness, expected task skills and the loading table
(review-rules §3.4): ``SKILL_*`` and ``NOSKILL_CATALOG_INJECTED``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_audit_kit import (
    audit,
    by_check,
    chat_request,
    chat_response,
    checks,
    flat_trial,
    oh_system,
)

from bf_assets.audit.catalog import extract_claude, extract_codex, prompt_parts
from bf_sample.bodies import conversation
from bf_sample.harness import HARNESSES, catalog_entries
from bf_sample.tasks import TASKS

SALES = TASKS["sales-report"]


def harness_request(harness: str, with_skill: bool) -> dict:
    entries = catalog_entries(HARNESSES[harness], SALES, with_skill)
    body = conversation(harness, entries, SALES.instruction).body()
    return {"request": {"path": HARNESSES[harness].path, "body": body}}


def run(
    tmp_path: Path, harness: str, mode: str, llm: list[dict] | None, **rc
) -> tuple[dict, set[str]]:
    cfg = {"harness": harness, "skill_mode": mode, "task_skills": list(SALES.skill_names), **rc}
    r = audit(flat_trial(tmp_path, llm=llm, run_config=cfg))
    return r.skills, checks(r)


@pytest.mark.parametrize("harness", sorted(HARNESSES))
def test_each_harness_catalog_with_skills(tmp_path: Path, harness: str) -> None:
    s, ids = run(tmp_path, harness, "with-skill", [harness_request(harness, True), chat_response()])
    assert s["harness"] == harness and s["catalog_status"] == "catalog_found"
    assert set(SALES.skill_names) <= set(s["skills"]) and s["task_skills_loading"] == 1
    assert s["status"] == "complete" and s["catalog_sha256"] and s["catalog_chars"] > 0
    assert s["content_harness"] is not None and not {i for i in ids if i.startswith("SKILL_")}


@pytest.mark.parametrize("harness", sorted(HARNESSES))
def test_each_harness_no_skill_catalog_is_clean(tmp_path: Path, harness: str) -> None:
    s, ids = run(tmp_path, harness, "no-skill", [harness_request(harness, False), chat_response()])
    assert s["task_skills_loading"] == 0 and s["status"] == "not_loaded_without_skills"
    assert s["skills"]  # the harness-global skills are listed and do not count
    assert not {i for i in ids if i.startswith(("SKILL_", "NOSKILL_"))}


@pytest.mark.parametrize("harness", sorted(HARNESSES))
def test_task_skills_in_a_no_skill_catalog_are_injected(tmp_path: Path, harness: str) -> None:
    s, ids = run(tmp_path, harness, "no-skill", [harness_request(harness, True), chat_response()])
    assert s["status"] == "unexpected_complete_task_skills_loaded_without_skills"
    assert s["task_skills_loading"] == 1 and "NOSKILL_CATALOG_INJECTED" in ids


def test_partial_injection(tmp_path: Path) -> None:
    llm = [chat_request(oh_system("github", "pandas-groupby")), chat_response()]
    s, ids = run(tmp_path, "openhands", "no-skill", llm)
    assert s["status"] == "partial_unexpected_task_skills_loaded_without_skills"
    assert s["task_skills_loading"] == 0 and "NOSKILL_CATALOG_INJECTED" in ids


def test_with_skill_missing_a_task_skill_is_not_loaded(tmp_path: Path) -> None:
    llm = [chat_request(oh_system("github", "pandas-groupby")), chat_response()]
    s, ids = run(tmp_path, "openhands", "with-skill", llm)
    assert s["status"] == "missing_expected_task_skills" and s["task_skills_loading"] == 0
    assert s["missing_task_skills"] == ["csv-validation"] and "SKILL_NOT_LOADED" in ids
    assert s["manual_review_required"] is True


def test_with_skill_without_a_catalog_block_is_not_loaded(tmp_path: Path) -> None:
    llm = [chat_request("You are an agent."), chat_response()]
    s, ids = run(tmp_path, "openhands", "with-skill", llm)
    assert s["catalog_status"] == "catalog_absent_in_startup_prompt"
    assert "SKILL_NOT_LOADED" in ids and "SKILL_CATALOG_UNKNOWN" not in ids


def test_name_matching_lowercases_and_maps_underscores(tmp_path: Path) -> None:
    llm = [chat_request(oh_system("Pandas_GroupBy", "csv_validation")), chat_response()]
    s, ids = run(tmp_path, "openhands", "with-skill", llm)
    assert s["task_skills_loading"] == 1 and s["loaded_task_skills"] == list(SALES.skill_names)


@pytest.mark.parametrize("harness", ["goose", "terminus-2", "claude-code"])
def test_harness_without_extractor_is_catalog_unknown(tmp_path: Path, harness: str) -> None:
    """An unregistered harness, or a Harbor agent without its logs: never inferred."""
    llm = [
        harness_request("codex-acp", True),
        chat_response(),
    ]  # a catalog is there: never inferred
    s, ids = run(tmp_path, harness, "with-skill", llm)
    assert s["catalog_status"] == "unknown" and s["task_skills_loading"] is None
    assert "SKILL_CATALOG_UNKNOWN" in ids and s["skills"] == []


def test_pi_is_not_serialized(tmp_path: Path) -> None:
    s, ids = run(
        tmp_path,
        "pi",
        "with-skill",
        [chat_request("You are pi, a coding agent harness."), chat_response()],
    )
    assert s["harness"] == "pi-acp" and s["catalog_status"] == "catalog_not_serialized"
    assert "SKILL_CATALOG_UNKNOWN" in ids


def test_declared_harness_wins_and_mismatch_needs_review(tmp_path: Path) -> None:
    llm = [harness_request("openhands", True), chat_response()]
    s, ids = run(tmp_path, "claude-agent-acp", "with-skill", llm)
    assert s["harness"] == "claude-agent-acp" and s["content_harness"] == "openhands"
    assert "SKILL_CATALOG_UNKNOWN" in ids and s["manual_review_required"] is True


def test_flat_codex_is_codex_acp(tmp_path: Path) -> None:
    s, _ = run(
        tmp_path, "codex", "with-skill", [harness_request("codex-acp", True), chat_response()]
    )
    assert s["harness"] == "codex-acp" and s["catalog_format"] == "codex_skills_instructions"


def test_later_request_is_scanned_when_the_first_has_no_catalog(tmp_path: Path) -> None:
    llm = [
        chat_request("You are OpenHands."),
        chat_response(),
        chat_request(oh_system("pandas-groupby", "csv-validation")),
        chat_response(),
    ]
    s, ids = run(tmp_path, "openhands", "with-skill", llm)
    assert s["catalog_status"] == "catalog_found" and s["line"] == 3
    assert s["catalog_in_first_request"] is False and "SKILL_CATALOG_UNKNOWN" in ids


def test_acp_system_prompt_fallback(tmp_path: Path) -> None:
    acp = [
        {
            "type": "agent_thought",
            "text": "System Prompt:\n" + oh_system("pandas-groupby", "csv-validation"),
        },
        {"type": "tool_call", "kind": "execute", "title": "ls"},
    ]
    cfg = {
        "harness": "openhands",
        "skill_mode": "with-skill",
        "task_skills": list(SALES.skill_names),
    }
    r = audit(flat_trial(tmp_path, acp=acp, llm=[], run_config=cfg))
    s = r.skills
    assert s["catalog_source"] == "agent_thought_system_prompt" and s["line"] == 1
    assert s["source_file"] == "trajectory/acp_trajectory.jsonl" and s["task_skills_loading"] == 1


def test_usage_only_llm_rows_fall_back_to_acp(tmp_path: Path) -> None:
    llm = [{"type": "llm_completion", "usage": {"prompt_tokens": 10}}]
    s, ids = run(tmp_path, "openhands", "with-skill", llm)
    assert s["catalog_status"] == "unknown" and "SKILL_CATALOG_UNKNOWN" in ids


def test_expected_unknown_warning(tmp_path: Path) -> None:
    llm = [chat_request(oh_system("github")), chat_response()]
    cfg = {"harness": "openhands", "skill_mode": "with-skill", "task_skills": []}
    r = audit(flat_trial(tmp_path, llm=llm, run_config=cfg))
    (w,) = by_check(r, "SKILL_EXPECTED_UNKNOWN")
    assert w.severity == "warning" and r.skills["expected_source"] == "none"
    assert r.skills["status"] == "expected_with_skills_but_no_task_skill_manifest"


def test_expected_from_tasks_dir_uses_front_matter(tmp_path: Path) -> None:
    skill = tmp_path / "tasks" / "example-task" / "environment" / "skills" / "dir-name"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: data-cleaning\ndescription: x\n---\nbody")
    (skill.parent / "no-manifest").mkdir()
    t = flat_trial(tmp_path / "runs", run_config={"task_skills": ["other-skill"]})
    r = audit(t, tmp_path / "tasks")
    assert r.skills["expected_source"] == "tasks_dir"
    assert (
        r.skills["expected_task_skills"] == ["data-cleaning"]
        and r.skills["task_skills_loading"] == 1
    )


def test_no_skill_catalog_entry_from_the_task_skills_dir_is_injected(tmp_path: Path) -> None:
    text = "<skills_instructions>\n### Available skills\n- helper: h (file: /skills/helper/SKILL.md)\n</skills_instructions>"
    body = {
        "instructions": "You are Codex.",
        "input": [{"role": "developer", "content": [{"type": "input_text", "text": text}]}],
    }
    llm = [{"request": {"path": "/responses", "body": body}}, chat_response()]
    s, ids = run(tmp_path, "codex-acp", "no-skill", llm, task_skills=[])
    assert "NOSKILL_CATALOG_INJECTED" in ids and s["skills"] == ["helper"]


def test_oracle_lane_is_not_applicable(tmp_path: Path) -> None:
    s, ids = run(tmp_path, "oracle", "no-skill", [])
    assert s["status"] == "not_applicable" and not {i for i in ids if i.startswith("SKILL_")}


def test_codex_entry_without_file_suffix_is_kept() -> None:
    text = "<skills_instructions>\n### Available skills\n- a-skill: does a\n- b: does b (file: /x/SKILL.md)\n### How to use skills\n</skills_instructions>"
    cat = extract_codex(prompt_parts({"input": [{"role": "developer", "content": text}]}))
    assert cat is not None and [s["name"] for s in cat.skills] == ["a-skill", "b"]


def test_claude_bullets_survive_a_capitalised_line_in_descriptions() -> None:
    text = (
        "<system-reminder>\nThe following skills are available for use with the Skill tool:\n\n"
        "- one: First line.\n  Note: continued.\n- two: Second.\n\nIMPORTANT: other text\n</system-reminder>"
    )
    body = {"messages": [{"role": "user", "content": [{"type": "text", "text": text}]}]}
    cat = extract_claude(prompt_parts(body))
    assert cat is not None and [s["name"] for s in cat.skills] == ["one", "two"]
    assert "IMPORTANT" not in (cat.text or "")


def test_skills_block_is_json_serialisable(tmp_path: Path) -> None:
    s, _ = run(tmp_path, "gemini", "with-skill", [harness_request("gemini", True), chat_response()])
    json.dumps(s)
    for key in (
        "harness",
        "catalog_status",
        "catalog_source",
        "source_file",
        "line",
        "request_path",
        "skills",
        "skill_count",
        "catalog_sha256",
        "catalog_chars",
        "expected_task_skills",
        "expected_source",
        "loaded_task_skills",
        "missing_task_skills",
        "skill_mode",
        "task_skills_loading",
        "status",
        "manual_review_required",
    ):
        assert key in s
