"""Trial identity: the slot fields from each layout, with the source every field came from."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from trialkit import JOB, Trial, healthy_spec, oracle_spec

from bf_assets.ingest.discovery import discover
from bf_assets.ingest.identity import (
    Identity,
    identify,
    normalize_harness,
    normalize_skill_mode,
)
from bf_assets.ingest.scan import scan_trial


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("claude", "claude-agent-acp"),
        (" Codex ", "codex-acp"),
        ("pi", "pi-acp"),
        ("oh", "openhands"),
        ("gemini-acp", "gemini"),
        ("codex-acp", "codex-acp"),
        ("Terminus-2", "terminus-2"),
        ("", None),
        ("   ", None),
        (None, None),
        (3, None),
    ],
)
def test_normalize_harness(raw: Any, expected: str | None) -> None:
    assert normalize_harness(raw) == expected


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("with_skills", "with-skill"),
        ("With-Skill", "with-skill"),
        ("skills", "with-skill"),
        ("no_skills", "no-skill"),
        ("baseline", "no-skill"),
        ("none", "no-skill"),
        ("self-gen", "self-generated"),
        ("self_generated", "self-generated"),
        ("custom-mode", "custom-mode"),
        ("", None),
        (None, None),
    ],
)
def test_normalize_skill_mode(raw: Any, expected: str | None) -> None:
    assert normalize_skill_mode(raw) == expected


def production(spec_result: dict, spec_config: dict | None, rel_path: str = "j/r") -> Identity:
    return identify(
        layout="production",
        rel_path=rel_path,
        job="j",
        rollout=rel_path.rsplit("/", 1)[-1],
        result=spec_result,
        config=spec_config,
        run_config=None,
    )


def test_production_identity_and_sources() -> None:
    spec = healthy_spec()
    ident = production(spec.result, spec.config, f"{JOB}/demo-task__aaaa1111")
    assert ident.slot() == ("demo-task", "codex-acp", "openai/gpt-x", "with-skill", "daytona", None)
    assert ident.rollout == "demo-task__aaaa1111"
    assert ident.source_ref == "benchflow-ai/skillsbench@" + "a" * 40
    assert ident.task_digest == "sha256:" + "c" * 64
    assert ident.sources["task_id"] == "result.json:task_name"
    assert ident.sources["harness"] == "result.json:agent"
    assert ident.sources["sandbox"] == "config.json:environment"


def test_production_falls_back_to_config_when_result_is_absent() -> None:
    spec = healthy_spec()
    spec.config["agent"] = "codex"
    ident = production({}, spec.config, f"{JOB}/demo-task__aaaa1111")
    assert ident.slot() == ("demo-task", "codex-acp", "openai/gpt-x", "with-skill", "daytona", None)
    assert ident.sources["task_id"] == "config.json:task_path"
    assert ident.sources["harness"] == "config.json:agent"


def test_task_from_directory_name_as_last_resort() -> None:
    ident = production({}, None, f"{JOB}/edit-pdf__1a2b3c4d")
    assert (ident.task_id, ident.sources["task_id"]) == ("edit-pdf", "directory name")
    assert ident.rollout == "edit-pdf__1a2b3c4d"


def test_trial_index_from_the_matrix_path() -> None:
    spec = healthy_spec()
    ident = production(spec.result, spec.config, f"gpt-x/trial-07/{JOB}/demo-task__aaaa1111")
    assert ident.trial_index == 7


def test_first_source_wins() -> None:
    ident = Identity()
    ident.set("model", None, "a")
    ident.set("model", "", "b")
    ident.set("model", "m1", "c")
    ident.set("model", "m2", "d")
    assert (ident.model, ident.sources["model"]) == ("m1", "c")


def test_oracle_identity(runs_root: Path) -> None:
    review = oracle_spec().write(runs_root).review()
    assert review.identity.harness == "oracle" and review.identity.model is None
    assert review.identity.sandbox == "docker"


def test_flat_identity() -> None:
    rc = {
        "task_id": "t1",
        "harness": "codex",
        "model": "m",
        "skill_mode": "no_skills",
        "trial_id": 3,
        "sandbox": "docker",
        "source_ref": "ref",
    }
    ident = identify(
        layout="flat", rel_path="x", job="j", rollout="x", result={}, config=None, run_config=rc
    )
    assert ident.slot() == ("t1", "codex-acp", "m", "no-skill", "docker", 3)
    assert ident.source_ref == "ref" and ident.sources["trial_index"] == "run_config.json:trial_id"


def test_flat_boolean_trial_id_is_not_an_index() -> None:
    rc = {"task_id": "t1", "trial_id": True}
    ident = identify(
        layout="flat", rel_path="x", job="j", rollout="x", result={}, config=None, run_config=rc
    )
    assert ident.trial_index is None


def harbor(result: dict, rel_path: str, config: dict | None = None) -> Identity:
    return identify(
        layout="harbor",
        rel_path=rel_path,
        job="j",
        rollout=rel_path.rsplit("/", 1)[-1],
        result=result,
        config=config,
        run_config=None,
    )


def test_harbor_identity_fields() -> None:
    result = {
        "task_name": "citation-check",
        "trial_name": "citation-check__bGmgnv8",
        "agent_info": {"name": "claude-code", "model_info": {"name": "m1", "provider": "p"}},
        "config": {"environment": {"type": "docker"}, "agent": {"model_name": None}},
        "task_checksum": "abc",
        "source": "tasks",
    }
    ident = harbor(result, "run/claude-code-skills-citation-check-229ca9")
    assert ident.slot() == ("citation-check", "claude-code", "p/m1", "with-skill", "docker", None)
    assert ident.rollout == "citation-check__bGmgnv8"  # flattened dir: trial_name wins
    assert ident.task_digest == "abc"


@pytest.mark.parametrize(
    ("rel_path", "source", "expected"),
    [
        ("minimax/no_skills/t__a", None, "no-skill"),
        ("run/gemini3pro/noskills/job/t__a", None, "no-skill"),
        ("yimin/ablation-noskills-haiku/terminus-2-skills-t/t__a", None, "no-skill"),
        ("yimin/ablation/byos/h/t/t__a", None, "no-skill"),
        ("minimax/skills/t__a", None, "with-skill"),
        ("plain/t__a", "tasks-no-skills", "no-skill"),
        ("plain/t__a", "tasks", "with-skill"),
        ("plain/t__a", None, None),
    ],
)
def test_harbor_skill_mode_is_inferred(
    rel_path: str, source: str | None, expected: str | None
) -> None:
    ident = harbor({"task_name": "t", "source": source}, rel_path)
    assert ident.skill_mode == expected


def test_harbor_trial_log_only_takes_the_task_from_the_directory() -> None:
    rel = "yimin/byos/h/scheduling-email-assistant/scheduling-email-assistant__4exzDzN"
    ident = harbor({}, rel)
    assert ident.task_id == "scheduling-email-assistant"
    assert ident.skill_mode == "no-skill"


# --------------------------------------------------------------------------- the fixture sets


def identities(root: Path) -> dict[str, Identity]:
    return {t.rel_path: scan_trial(t).identity for t in discover([root]).trials}


def test_writer_fixture_identities(fixtures_dir: Path) -> None:
    ids = identities(fixtures_dir / "benchflow-writer")
    base = f"jobs/{JOB}/demo-task__"
    model_run = ("demo-task", "codex-acp", "openai/gpt-x", "with-skill", "daytona", None)
    for x in ("aaaa1111", "bbbb2222", "cccc3333"):
        assert ids[base + x].slot() == model_run
    assert ids[base + "dddd4444"].slot() == (
        "demo-task",
        "oracle",
        None,
        "no-skill",
        "docker",
        None,
    )
    assert ids[base + "aaaa1111"].job == JOB


def test_flat_fixture_identities(fixtures_dir: Path) -> None:
    ids = identities(fixtures_dir / "benchflow-evals")
    assert ids["clean-pass"].slot() == (
        "example-clean-pass",
        "openhands",
        "sample-model",
        "with-skill",
        "daytona",
        1,
    )
    assert ids["no-skill-leak"].harness == "codex-acp"  # run_config says "codex"
    assert ids["no-skill-leak"].skill_mode == "no-skill"
    assert ids["reward-hack"].sandbox == "docker"


def test_harbor_fixture_identities(fixtures_dir: Path) -> None:
    ids = identities(fixtures_dir / "harbor-real")
    pre = "benchflow-ai__skillsbench-trajectories/"
    minimax = ids[pre + "minimax-m2.1+claude-code/no_skills/3d-scan-calc__qLuah6E"]
    assert minimax.slot() == (
        "3d-scan-calc",
        "claude-code",
        "minimax/minimax-m2.1",  # the canonical id (docs/model-identity.md)
        "no-skill",
        "docker",
        None,
    )
    assert minimax.model_raw == "minimax/MiniMax-M2.1"  # the spelling on record
    wenbo = ids[pre + "wenbo/claude-sonnet-4-5-0126/claude-code-claude-sonnet-4-5-skills-lab-unit-harmonization-55a405"]  # fmt: skip
    assert wenbo.rollout == "lab-unit-harmonization__LDx8EnA"
    assert wenbo.skill_mode == "with-skill"
    log_only = next(v for k, v in ids.items() if k.endswith("scheduling-email-assistant__4exzDzN"))
    assert (log_only.task_id, log_only.skill_mode) == ("scheduling-email-assistant", "no-skill")
    assert all(i.task_id for i in ids.values())
    harbor_ids = {k: i for k, i in ids.items() if "skillsbench-trajectories" in k}
    # yimin's ablations ran tasks_no_skills_generate/<task>: the agent wrote its own skills
    self_gen = {k for k, i in harbor_ids.items() if i.skill_mode == "self-generated"}
    assert len(self_gen) == 5 and all("/yimin/ablation-noskills-" in k for k in self_gen)
    assert {harbor_ids[k].sources["skill_mode"] for k in self_gen} == {"result.json:task_id.path"}
    rest = [i for k, i in harbor_ids.items() if k not in self_gen]
    assert all(i.skill_mode in ("with-skill", "no-skill") for i in rest)


def test_identity_of_a_built_trial_matches_its_review(trial: Trial) -> None:
    review = trial.review()
    assert review.identity.slot()[:5] == ("demo-task", "codex-acp", "openai/gpt-x", "with-skill", "daytona")  # fmt: skip
    assert review.to_json()["task_id"] == "demo-task"
