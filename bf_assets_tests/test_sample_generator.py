"""The deterministic sample generator (``bf_sample``) and the committed ``data/runs``."""

from __future__ import annotations

import json
import tracemalloc
from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from bf_assets.contract import CHECKS, Outcome
from bf_sample import (
    SCENARIOS,
    PlannedTrial,
    generate_corpus,
    generate_jobs_root,
    write_heavy_trial,
    write_trial,
)
from bf_sample import rows as R
from bf_sample.__main__ import main as sample_main
from bf_sample.artifacts import dumps_indent2
from bf_sample.plan import planned

REPO = Path(__file__).resolve().parents[1]
COMMITTED = REPO / "data" / "runs"
WRITER_JOB = (
    REPO.parent / "shared" / "fixtures" / "benchflow-writer" / "jobs" / "2026-06-01__00-00-00"
)
HEALTHY = {"pass", "fail", "normal_timeout"}
LLM = "trajectory/llm_trajectory.jsonl"


def tree(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def read_json(path: Path) -> Any:
    return json.loads(path.read_text())


def read_lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().split("\n") if line]


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[PlannedTrial]]:
    root = tmp_path_factory.mktemp("sample")
    return root, generate_jobs_root(root, seed=7)


def trial_dir(root: Path, plan: PlannedTrial) -> Path:
    return root / "jobs" / plan.job / plan.rollout


def usage_sum(exchanges: list[dict[str, Any]]) -> tuple[int, int, int, int, int]:
    """Σ per-exchange usage, normalized like agent_result (cache-inclusive input)."""
    n_in = n_out = n_read = n_write = total = 0
    for ex in exchanges:
        usage = ex["response"]["body"].get("usage")
        if not isinstance(usage, dict):
            continue
        if "prompt_tokens" in usage:  # chat completions
            i, o = usage["prompt_tokens"], usage["completion_tokens"]
            r, w = usage["prompt_tokens_details"]["cached_tokens"], 0
        elif "input_tokens_details" in usage:  # Responses
            i, o = usage["input_tokens"], usage["output_tokens"]
            r, w = usage["input_tokens_details"]["cached_tokens"], 0
        else:  # Anthropic: input excludes the cache
            r, w = usage["cache_read_input_tokens"], usage["cache_creation_input_tokens"]
            i, o = usage["input_tokens"] + r + w, usage["output_tokens"]
        n_in, n_out, n_read, n_write = n_in + i, n_out + o, n_read + r, n_write + w
        total += usage.get("total_tokens", i + o)
    return n_in, n_out, n_read, n_write, total


# -- determinism and the committed copy -------------------------------------------------------
def test_generation_is_deterministic(
    sample: tuple[Path, list[PlannedTrial]], tmp_path: Path
) -> None:
    root, plans = sample
    again = generate_jobs_root(tmp_path / "again", seed=7)
    assert again == plans
    assert tree(tmp_path / "again") == tree(root)
    other = generate_jobs_root(tmp_path / "other", seed=8)
    assert [p.rollout for p in other] != [p.rollout for p in plans]


def test_committed_sample_is_current(sample: tuple[Path, list[PlannedTrial]]) -> None:
    root, _ = sample
    assert COMMITTED.is_dir(), "data/runs is missing: run `python -m bf_sample data/runs`"
    committed, fresh = tree(COMMITTED), tree(root)
    assert sorted(committed) == sorted(fresh), (
        "data/runs drifted: run `python -m bf_sample data/runs`"
    )
    changed = [rel for rel in fresh if committed[rel] != fresh[rel]]
    assert not changed, f"data/runs drifted in {changed[:5]}: run `python -m bf_sample data/runs`"
    assert sum(len(b) for b in committed.values()) < 2_000_000


def test_cli_regenerates_and_clears_stale_files(
    tmp_path: Path, sample: tuple[Path, list[PlannedTrial]]
) -> None:
    stale = tmp_path / "jobs" / "2026-01-01__00-00-00" / "old__00000000" / "result.json"
    stale.parent.mkdir(parents=True)
    stale.write_text("{}")
    (tmp_path / "keep.txt").write_text("not owned by the generator")
    assert sample_main([str(tmp_path), "--seed", "7"]) == 0
    assert not stale.exists()
    assert (tmp_path / "keep.txt").exists()
    (tmp_path / "keep.txt").unlink()
    assert tree(tmp_path) == tree(sample[0])


# -- the plan -----------------------------------------------------------------------------------
def test_plan_covers_the_brief(sample: tuple[Path, list[PlannedTrial]]) -> None:
    root, plans = sample
    assert 25 <= len(plans) <= 40
    assert len({p.job for p in plans}) == 2
    assert len({p.task for p in plans}) >= 3
    assert {"codex-acp", "claude-agent-acp", "openhands", "gemini"} <= {p.harness for p in plans}
    assert {p.skill_mode for p in plans} == {"with-skill", "no-skill"}
    assert {p.sandbox for p in plans} == {"docker", "daytona"}
    assert {p.scenario for p in plans} == set(SCENARIOS)
    assert len({(p.job, p.rollout) for p in plans}) == len(plans)
    outcomes = {o.value for o in Outcome}
    for p in plans:
        assert p.expected_outcome in outcomes
        assert set(p.expected_gate_ids) <= set(CHECKS), p
        assert all(i.startswith("GATE_") for i in p.expected_gate_ids)
        assert (p.expected_outcome in HEALTHY | {"oracle"}) == (not p.expected_gate_ids), p
        assert p.rollout.startswith(p.task + "__") and len(p.rollout.split("__")[1]) == 8
        assert (p.model is None) == (p.harness == "oracle")
    on_disk = {(d.parent.name, d.name) for d in (root / "jobs").glob("*/*") if d.is_dir()}
    assert on_disk == {(p.job, p.rollout) for p in plans}
    manifest = read_json(root / "sample-manifest.json")
    assert manifest["seed"] == 7 and manifest["generator"]
    assert manifest["trials"] == [p.to_dict() for p in plans]


# -- the tree parses and follows Benchflow's serialization -----------------------------------------
def test_every_json_file_parses(sample: tuple[Path, list[PlannedTrial]]) -> None:
    root, plans = sample
    broken = {trial_dir(root, p) / LLM for p in plans if p.scenario == "bad_llm_line"}
    assert broken
    for path in sorted(root.rglob("*")):
        if not path.is_file() or path.suffix not in (".json", ".jsonl"):
            continue
        text = path.read_text()
        if path.suffix == ".json":
            doc = json.loads(text)
            if path.name not in ("atif.json", "sample-manifest.json"):
                assert not text.endswith("\n") and text == dumps_indent2(doc) == json.dumps(
                    doc, indent=2
                ), path
            continue
        lines = text.split("\n") if text else []  # a 0-byte ACP file has no lines
        if "trajectory" in path.parts:
            assert not text.endswith("\n"), path
        elif text:
            assert text.endswith("\n"), path
            lines = lines[:-1]
        bad = []
        for n, line in enumerate(lines, 1):
            try:
                assert isinstance(json.loads(line), dict)
            except json.JSONDecodeError:
                bad.append(n)
        if path in broken:
            assert bad == [len(lines)], path
        else:
            assert not bad, (path, bad)


def test_token_sums_match_llm_usage(sample: tuple[Path, list[PlannedTrial]]) -> None:
    root, plans = sample
    checked = 0
    for p in plans:
        d = trial_dir(root, p)
        if not (d / "result.json").exists():
            continue
        result = read_json(d / "result.json")
        ar = result["agent_result"]
        if (d / LLM).exists() and p.scenario != "bad_llm_line":
            expected = usage_sum(read_lines(d / LLM))
            got = (
                ar["n_input_tokens"],
                ar["n_output_tokens"],
                ar["n_cache_read_tokens"],
                ar["n_cache_creation_tokens"],
                ar["total_tokens"],
            )
            assert got == expected, p.rollout
            checked += 1
        fm = result["final_metrics"]
        assert (fm["total_prompt_tokens"], fm["total_completion_tokens"]) == (
            ar["n_input_tokens"],
            ar["n_output_tokens"],
        )
        if (d / "results.jsonl").exists():
            tu = read_lines(d / "results.jsonl")[0]["token_usage"]
            assert tu["input_tokens"] == float(ar["n_input_tokens"])
            assert tu["total_tokens"] == float(ar["total_tokens"])
        positive = ar["total_tokens"] > 0
        assert positive == (p.scenario not in ("no_usage", "oracle", "sandbox_failure")), p.rollout
    assert checked >= 20


def test_healthy_rows_have_one_step_per_selected_exchange(
    sample: tuple[Path, list[PlannedTrial]],
) -> None:
    root, plans = sample
    for p in plans:
        if p.expected_outcome not in HEALTHY:
            continue
        d = trial_dir(root, p)
        result = read_json(d / "result.json")
        exchanges = read_lines(d / LLM)
        rows = read_lines(d / "results.jsonl")
        assert len(rows) == 1
        row = rows[0]
        # independent of rows.select: the last 200 exchange per distinct request body
        last_per_body: dict[str, int] = {}
        for i, ex in enumerate(exchanges):
            if ex["response"]["status_code"] == 200:
                last_per_body[json.dumps(ex["request"]["body"], sort_keys=True)] = i
        indices = [s["extras"]["exchange_index"] for s in row["trajectory"]]
        assert indices == sorted(last_per_body.values()) == R.select(exchanges), p.rollout
        assert all(s["extras"]["source"] == "llm_trajectory" for s in row["trajectory"])
        assert row["info"]["task_id"] == result["task_name"] == p.task
        assert row["reward"] == result["rewards"]["reward"]
        assert row["metrics"]["n_tool_calls"] == result["n_tool_calls"] > 0
        assert row["tool_defs"] and row["completion"] and row["prompt"][0]["role"] == "user"
        if p.expected_outcome == "normal_timeout":
            assert row["info"]["training_ready"] is False
            assert row["info"]["training_ready_reason"] == "agent_error"
            assert row["error"]["error"] == "agent_error"
        else:
            assert row["info"]["training_ready"] is True and row["error"] is None
            assert row["stop_condition"] == "agent_completed" and not row["is_truncated"]


# -- every scenario is what it says -------------------------------------------------------------
def _files(d: Path) -> set[str]:
    return {p.relative_to(d).as_posix() for p in d.rglob("*") if p.is_file()}


def test_scenarios_are_built_as_described(sample: tuple[Path, list[PlannedTrial]]) -> None:
    root, plans = sample
    provenance_missing = 0
    for p in plans:
        d = trial_dir(root, p)
        files = _files(d)
        config = read_json(d / "config.json")
        assert config["agent"] == p.harness and config["environment"] == p.sandbox
        assert config["model"] == p.model and config["skill_mode"] == p.skill_mode
        assert ("sandbox.json" in files) == (
            p.sandbox == "daytona" and p.scenario != "sandbox_failure"
        )
        provenance_missing += "source" not in config
        if p.scenario == "incomplete":
            assert "result.json" not in files and "results.jsonl" not in files
            assert "trajectory/llm_trajectory.jsonl.tmp" in files
            acp = read_lines(d / "trajectory/acp_trajectory.jsonl")
            assert acp[-1]["type"] == "tool_call" and acp[-1]["status"] == "in_progress"
            continue
        result = read_json(d / "result.json")
        assert result["task_name"] == p.task and result["rollout_name"] == p.rollout
        assert result["timing"] == read_json(d / "timing.json")
        assert ("rewards.jsonl" in files) == (result["rewards"] is not None)
        assert ("results.jsonl" in files) == (p.scenario != "missing_rows")
        has_llm = LLM in files
        assert has_llm == (p.scenario not in ("missing_llm", "sandbox_failure", "oracle"))
        acp = read_lines(d / "trajectory/acp_trajectory.jsonl")
        row = read_lines(d / "results.jsonl")[0] if "results.jsonl" in files else None
        reward = (result["rewards"] or {}).get("reward")
        s = p.scenario
        if s in ("pass", "fail") or (s == "retry_superseded" and p.expected_outcome == "pass"):
            assert reward == (1.0 if s != "fail" else 0.0) and result["error"] is None
        elif s == "normal_timeout":
            assert result["error_category"] == "timeout" and reward == 0.0
            assert result["partial_trajectory"] is False
            assert result["agent_timeout_info"]["terminal_trajectory_complete"] is True
            assert acp[-1]["type"] == "agent_timeout" and acp[-1]["pending_tool_call_ids"] == []
        elif s == "retry_superseded":
            assert result["error_category"] == "pipe_closed" and result["rewards"] is None
        elif s == "verifier_crash":
            assert result["rewards"] is None and result["verifier_error"].startswith(
                "verifier crashed"
            )
        elif s == "partial_timeout":
            assert (
                result["partial_trajectory"] is True
                and result["trajectory_source"] == "partial_acp"
            )
            assert result["agent_timeout_info"]["pending_tool_call_ids"] == [
                acp[-2]["tool_call_id"]
            ]
        elif s == "sandbox_failure":
            assert result["error_category"] == "sandbox_setup" and result["sandbox_startup_info"]
            assert (d / "trajectory/acp_trajectory.jsonl").stat().st_size == 0
        elif s == "api_rate_limit":
            statuses = [e["response"]["status_code"] for e in read_lines(d / LLM)]
            assert statuses.count(429) == 3 and statuses.count(200) >= 1
            assert result["error_category"] == "provider_rate_limit" and result["rewards"] is None
        elif s == "missing_llm":
            assert reward == 1.0 and result["agent_result"]["total_tokens"] > 0
        elif s == "ready_mismatch":
            assert result["error"] and row and row["info"]["training_ready"] is True
        elif s == "steps_mismatch":
            assert row and len(row["trajectory"]) == len(R.select(read_lines(d / LLM))) - 1
        elif s == "cross_mismatch":
            assert row and reward == 0.0 and row["reward"] == 1.0
        elif s == "no_usage":
            assert (
                result["agent_result"]["total_tokens"] == 0
                and usage_sum(read_lines(d / LLM)) == (0,) * 5
            )
        elif s == "oracle":
            assert result["agent"] == "oracle" and result["model"] is None
            assert [e["type"] for e in acp] == ["oracle"] and result["trajectory_source"] is None
            assert (
                row
                and row["info"]["training_ready_reason"]
                == "missing_healthy_structured_llm_trajectory"
            )
    assert 1 <= provenance_missing <= 2
    retries = [p for p in plans if p.scenario == "retry_superseded"]
    assert len(retries) == 2 and [r.expected_outcome for r in retries] == ["unhealthy", "pass"]
    cell = {(r.job, r.task, r.harness, r.model, r.skill_mode, r.sandbox) for r in retries}
    assert len(cell) == 1 and retries[0].rollout != retries[1].rollout
    first, second = (read_json(trial_dir(root, r) / "result.json") for r in retries)
    assert datetime.fromisoformat(first["finished_at"]) < datetime.fromisoformat(
        second["started_at"]
    )


# -- skill catalogs in the first request (review-rules.md §3.2) ---------------------------------
MARKERS = {
    "codex-acp": "<skills_instructions>",
    "openhands": "<SKILLS>",
    "claude-agent-acp": "The following skills are available for use with the Skill tool:",
    "gemini": "# Available Agent Skills",
}


def _task_skills(root: Path, task: str) -> set[str]:
    return {
        p.parent.name for p in (root / "tasks" / task / "environment" / "skills").glob("*/SKILL.md")
    }


def test_first_request_carries_the_harness_catalog(sample: tuple[Path, list[PlannedTrial]]) -> None:
    root, plans = sample
    for p in plans:
        d = trial_dir(root, p)
        if not (d / LLM).exists() or p.scenario == "bad_llm_line":
            continue
        first = read_lines(d / LLM)[0]["request"]["body"]
        text = json.dumps(first.get("messages") or first.get("input"))
        assert MARKERS[p.harness] in text, p.rollout
        skills = _task_skills(root, p.task)
        assert skills
        if p.harness == "codex-acp":
            assert "### Available skills" in text and "(file: /home/agent/" in text
            assert first["input"][0]["role"] == "developer"
        if p.harness == "gemini":
            assert "<available_skills>" in text
        listed = {s for s in skills if f"{s}</name>" in text or f"- {s}: " in text}
        assert listed == (skills if p.skill_mode == "with-skill" else set()), p.rollout


def test_no_skill_actions_do_not_touch_skills(sample: tuple[Path, list[PlannedTrial]]) -> None:
    root, plans = sample
    for p in plans:
        d = trial_dir(root, p)
        if p.skill_mode != "no-skill" or not (d / "trajectory/acp_trajectory.jsonl").exists():
            continue
        markers = [
            "SKILL.md",
            "/skills",
            "invoke_skill",
            "activate_skill",
            *_task_skills(root, p.task),
        ]
        actions: list[Any] = [
            e for e in read_lines(d / "trajectory/acp_trajectory.jsonl") if e["type"] == "tool_call"
        ]
        if (d / LLM).exists() and p.scenario != "bad_llm_line":
            exchanges = read_lines(d / LLM)
            actions += [ex["response"]["body"] for ex in exchanges]  # the model's own output
            last = exchanges[-1]["request"]["body"]  # everything after the startup prompt
            start = {"codex-acp": 3, "claude-agent-acp": 1}.get(p.harness, 2)
            actions += (last.get("messages") or last.get("input"))[start:]
        blob = json.dumps(actions)
        assert not [m for m in markers if m in blob], p.rollout


# -- single trials --------------------------------------------------------------------------------
def test_write_trial_defaults_give_a_ready_two_step_pass(tmp_path: Path) -> None:
    plan = planned(
        job="2026-06-01__00-00-00",
        rollout="demo-task__aaaa1111",
        task="demo-task",
        harness="codex-acp",
        model="openai/gpt-5",
        skill_mode="with-skill",
        sandbox="daytona",
        scenario="pass",
    )
    d = write_trial(tmp_path / plan.job, plan)
    assert d == tmp_path / plan.job / plan.rollout
    expected = {
        "config.json",
        "prompts.json",
        "result.json",
        "results.jsonl",
        "rewards.jsonl",
        "sandbox.json",
        "timing.json",
        "trainer/adp.jsonl",
        "trainer/atif.json",
        "trainer/verifiers.jsonl",
        "trajectory/acp_trajectory.jsonl",
        "trajectory/llm_trajectory.jsonl",
        "verifier/reward.txt",
        "verifier/test-stdout.txt",
    }
    assert _files(d) == expected
    if WRITER_JOB.is_dir():  # the same file set as Benchflow's writer (plus verifier outputs)
        assert {f for f in expected if not f.startswith("verifier/")} == _files(
            WRITER_JOB / "demo-task__aaaa1111"
        )
        keys = list(read_json(WRITER_JOB / "demo-task__aaaa1111" / "result.json"))
        assert list(read_json(d / "result.json")) == keys
        keys = list(read_json(WRITER_JOB / "demo-task__aaaa1111" / "config.json"))
        assert list(read_json(d / "config.json")) == keys
    row = read_lines(d / "results.jsonl")[0]
    assert row["info"]["training_ready"] is True and len(row["trajectory"]) == 2
    again = tmp_path / "again"
    write_trial(again / plan.job, plan)
    assert tree(again / plan.job) == tree(tmp_path / plan.job)


@pytest.mark.skipif(
    not WRITER_JOB.is_dir(), reason=f"shared fixtures not available at {WRITER_JOB}"
)
def test_row_builder_reproduces_benchflow_writer_rows() -> None:
    for d in sorted(p for p in WRITER_JOB.iterdir() if p.is_dir()):
        llm = d / LLM
        exchanges = read_lines(llm) if llm.exists() else None
        row = R.build_row(
            read_json(d / "result.json"),
            exchanges,
            read_json(d / "prompts.json"),
            f"/srv/bench/jobs/{WRITER_JOB.name}/{d.name}",
        )
        assert json.dumps(row) + "\n" == (d / "results.jsonl").read_text(), d.name


# -- the heavy trial ------------------------------------------------------------------------------
def _heavy_sizes(root: Path, n: int) -> tuple[Path, int]:
    d = write_heavy_trial(root / "2026-06-03__09-00-00", n_exchanges=n, seed=1)
    return d, (d / LLM).stat().st_size


def test_heavy_trial_is_quadratic_and_one_line(tmp_path: Path) -> None:
    d, size30 = _heavy_sizes(tmp_path / "a", 30)
    exchanges = read_lines(d / LLM)
    assert len(exchanges) == 30
    assert len(exchanges[-1]["request"]["body"]["messages"]) == 2 + 2 * 29
    text = (d / "results.jsonl").read_text()
    assert text.count("\n") == 1 and text.endswith("\n")
    assert abs(len(text) - size30) / size30 < 0.1
    row = json.loads(text)
    assert len(row["trajectory"]) == 30 and row["info"]["training_ready"] is True
    result = read_json(d / "result.json")
    assert (
        json.dumps(
            R.build_row(
                result, exchanges, [row["prompt"][0]["content"]], row["info"]["rollout_dir"]
            )
        )
        == text[:-1]
    )
    ar = result["agent_result"]
    assert usage_sum(exchanges)[::4] == (ar["n_input_tokens"], ar["total_tokens"])
    catalog = exchanges[0]["request"]["body"]["messages"][0]["content"]
    assert catalog.count("<skill>") >= 42
    tool_msg = json.dumps(exchanges[-1]["request"]["body"]["messages"][-1])
    assert 1300 <= len(tool_msg) <= 1700
    # size(n) = a*n + b*n*(n-1)/2: fit on n=30 and n=60, extrapolate to n=400
    _, size60 = _heavy_sizes(tmp_path / "b", 60)
    b = (size60 / 60 - size30 / 30) / ((59 - 29) / 2)
    a = size30 / 30 - b * 29 / 2
    predicted = a * 400 + b * 400 * 399 / 2
    assert 135e6 <= predicted <= 155e6, predicted


def test_heavy_trial_streams(tmp_path: Path) -> None:
    tracemalloc.start()
    try:
        d = write_heavy_trial(tmp_path / "2026-06-03__09-00-00", n_exchanges=150, seed=2)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    size = (d / LLM).stat().st_size + (d / "results.jsonl").stat().st_size
    assert size > 30_000_000
    assert peak < size / 8, (peak, size)


# -- corpora ----------------------------------------------------------------------------------------
def test_corpus_jobs_hold_at_most_100_rollouts(tmp_path: Path) -> None:
    plans = generate_corpus(tmp_path / "c", 230, seed=3, healthy_fraction=0.8)
    assert len(plans) == 230
    per_job = Counter(p.job for p in plans)
    assert sorted(per_job.values()) == [30, 100, 100]
    jobs = tmp_path / "c" / "jobs"
    assert {d.name: len(list(d.iterdir())) for d in jobs.iterdir()} == dict(per_job)
    healthy = sum(p.expected_outcome in HEALTHY for p in plans) / len(plans)
    assert 0.7 <= healthy <= 0.9
    assert read_json(tmp_path / "c" / "sample-manifest.json")["trials"] == [
        p.to_dict() for p in plans
    ]
    small = generate_corpus(tmp_path / "d", 40, seed=3)
    assert small == plans[:40]
    again = generate_corpus(tmp_path / "e", 40, seed=3)
    assert small == again and tree(tmp_path / "d") == tree(tmp_path / "e")
