"""Harbor trials audited from their agent logs: terminus turns, ATIF and native Gemini CLI
sessions, Claude Code stream-json; skill catalogs with file and line; the leakage, hacking and
isolation audits on the agent's actions; unreadable logs as findings.

Real data: the shared ``harbor-real`` fixtures (skipped when absent) and the excerpts under
``data/harbor`` (see its SOURCES.md).  Built trials copy the real formats field for field."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from bf_assets.ingest.discovery import discover
from bf_assets.ingest.readers import ReadLimits
from bf_assets.ingest.scan import TrialData, scan_trial
from bf_assets.review.options import ReviewOptions
from bf_assets.review.record import TrialReview
from bf_assets.review.trial import review_data

DATA = Path(__file__).resolve().parent / "data" / "harbor"
LEAK = "yimin/ablation-noskills-haiku/terminus-2-claudehaiku4520-skills-3d-scan-calc-d50cb0/3d-scan-calc__UvQYGNk"
CITATION = (
    "shenghan/gemini-cli/gemini3flash/noskills/gemini-cli-gemini3flash-noskills-citation-check-"
    "a3a6a4/citation-check__oXwDHn5"
)
TERMINUS_HEAD = (
    "You are an AI assistant tasked with solving command-line tasks in a Linux environment.\n\n"
    '---\nSKILL SYSTEM:\nIf skills are available (shown in "available_skills"), you MUST check '
    "if any skill matches the task BEFORE executing commands.\n\nSkill context:\n"
)
TERMINUS_TAIL = (
    "LOADED SKILLS:\nNo skills loaded.\n\n\n\nTo load a skill, respond with ONLY this JSON (no "
    'other fields):\n{"load_skill": "skill-name"}\n---\n\nTask Description:\n'
    "Compute the mass of the part.\n\nCurrent terminal state:\nCurrent Terminal Screen:\n"
)


# --------------------------------------------------------------------------- building trials


def harbor_result(
    name: str,
    agent: str,
    *,
    reward: float | None = 1.0,
    exception: dict | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """A Harbor ``result.json`` with the fields and phase blocks real trials carry."""
    task = name.rsplit("__", 1)[0]
    phase = {
        "started_at": "2026-01-29T02:17:41.515939Z",
        "finished_at": "2026-01-29T02:23:44.629464Z",
    }
    r: dict[str, Any] = {
        "id": "8a64a512-da0a-4ed9-8fe5-7b46935d5436",
        "task_name": task,
        "trial_name": name,
        "trial_uri": f"file:///runs/{name}",
        "task_id": {"path": f"/tasks/{task}"},
        "source": None,
        "task_checksum": "43ef42388ff8ee2b3d72c4f138ffa9a9657e86fccca4210d315af8d12582800a",
        "config": {
            "agent": {"name": None, "model_name": "anthropic/claude-haiku-4-5"},
            "environment": {"type": "docker"},
            "task": {"path": f"/tasks/{task}"},
        },
        "agent_info": {
            "name": agent,
            "version": "2.0.0",
            "model_info": {"name": "claude-haiku-4-5", "provider": "anthropic"},
        },
        "agent_result": {
            "n_input_tokens": 32587,
            "n_cache_tokens": None,
            "n_output_tokens": 6117,
            "cost_usd": None,
            "rollout_details": None,
            "metadata": None,
        },
        "verifier_result": {"rewards": {"reward": reward}} if reward is not None else None,
        "exception_info": exception,
        "started_at": "2026-01-29T02:10:00.000000Z",
        "finished_at": "2026-01-29T02:24:00.000000Z",
        "environment_setup": dict(phase),
        "agent_setup": dict(phase),
        "agent_execution": dict(phase),
        "verifier": {
            "started_at": "2026-01-29T02:23:44.629545Z",
            "finished_at": "2026-01-29T02:23:52.158915Z",
        },
    }
    r.update(extra)
    return r


def write_trial(root: Path, rel: str, result: dict[str, Any], files: dict[str, Any]) -> Path:
    d = root / rel
    d.mkdir(parents=True)
    (d / "result.json").write_text(json.dumps(result, indent=4))
    for name, content in files.items():
        p = d / name
        p.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            p.write_bytes(content)
        elif isinstance(content, str):
            p.write_text(content)
        else:
            p.write_text(json.dumps(content, indent=2))
    return d


def scanned(root: Path, limits: ReadLimits | None = None) -> dict[str, TrialData]:
    out = {}
    for ref in discover([root]).trials:
        t = scan_trial(ref, limits) if limits else scan_trial(ref)
        out[ref.rel_path.rsplit("/", 1)[-1]] = t
    return out


def review(t: TrialData, tasks: Path | None = None) -> TrialReview:
    return review_data(t, ReviewOptions(tasks_dir=str(tasks) if tasks else None))


def checks(r: TrialReview) -> set[str]:
    return {f.check for f in r.findings}


def of(r: TrialReview, check: str) -> list[Any]:
    return [f for f in r.findings if f.check == check]


def terminus_turns(catalog: list[dict] | None, responses: list[str], prompts: list[str]) -> list:
    first = TERMINUS_HEAD
    if catalog is not None:
        first += "available_skills:\n" + json.dumps(catalog, indent=2) + "\n"
    first += TERMINUS_TAIL
    turns = [{"episode": 0, "prompt": first, "response": responses[0]}]
    for i, (p, resp) in enumerate(zip(prompts, responses[1:], strict=True), start=1):
        turns.append({"episode": i, "prompt": p, "response": resp})
    return turns


def commands(*keys: str, analysis: str = "Working on it.") -> str:
    batch = {
        "analysis": analysis,
        "plan": "Run the commands.",
        "commands": [{"keystrokes": k, "duration": 0.1} for k in keys],
    }
    return "```json\n" + json.dumps(batch, indent=2) + "\n```"


def task_tree(root: Path, task: str, *skills: str) -> Path:
    for s in skills:
        d = root / task / "environment" / "skills" / s
        d.mkdir(parents=True)
        (d / "SKILL.md").write_text(f"---\nname: {s}\ndescription: x\n---\nbody\n")
    return root


# --------------------------------------------------------------------------- the real leak


@pytest.fixture(scope="module")
def harbor_real(fixtures_dir: Path) -> dict[str, TrialData]:
    root = fixtures_dir / "harbor-real" / "benchflow-ai__skillsbench-trajectories"
    return {ref.rel_path: scan_trial(ref) for ref in discover([root]).trials}


def test_the_real_self_generated_run_writing_its_skills_is_no_leak(harbor_real) -> None:
    """yimin's ablation ran ``tasks_no_skills_generate/3d-scan-calc`` with a "Generate Skills
    First" prompt: its ``mkdir .../environment/skills`` and its ``load_skill`` of a skill it
    meant to write are what it was told to do (they were two false NOSKILL_LEAK blockers)."""
    t = harbor_real[LEAK]
    assert t.identity.skill_mode == "self-generated"
    assert t.identity.sources["skill_mode"] == "result.json:task_id.path"
    r = review(t)
    assert not of(r, "NOSKILL_LEAK") and not of(r, "NOSKILL_CATALOG_INJECTED")
    s = r.skills
    assert s["skill_mode"] == "self-generated" and s["catalog_status"] == "catalog_found"
    assert s["catalog_format"] == "terminus_available_skills" and s["skills"] == []
    assert s["skills_loaded"] == [] and s["skills_loaded_source"] == "result.json:65"
    assert (s["source_file"], s["line"]) == ("agent/trajectory.json", 4)
    assert s["status"] == "self_generated_skills"
    assert r.verdict == "rejected"  # still no ACP/LLM trajectories or row
    assert r.to_json()["skill_mode"] == "self-generated"


def test_the_real_self_generated_run_loading_a_task_skill_is_a_leak(
    harbor_real, tmp_path: Path
) -> None:
    """The same run, had the task shipped a skill named ``stl-binary-parsing``: its
    ``load_skill`` of that name reaches for the task's own skill, a leak in every mode; its
    own skills directory stays none."""
    tasks = task_tree(tmp_path / "tasks", "3d-scan-calc", "stl-binary-parsing")
    r = review(harbor_real[LEAK], tasks)
    leaks = of(r, "NOSKILL_LEAK")
    # the load (line 5) and its "Skill not found: stl-binary-parsing" result (line 9); the
    # agent's own skills directory (line 10) is no leak
    assert [(f.file, f.line) for f in leaks] == [
        ("agent/trajectory.json", 5),
        ("agent/trajectory.json", 9),
    ]
    assert leaks[0].message.startswith("self-generated trial: HARBOR load_skill call")
    assert "load_skill stl-binary-parsing" in leaks[0].message
    assert "task skill name 'stl-binary-parsing'" in leaks[0].message


def test_the_startup_prompt_s_skill_system_text_is_no_leak(tmp_path: Path) -> None:
    """A no-skill terminus run whose first prompt carries the SKILL SYSTEM text and whose
    commands and outputs mention skills innocently stays clean."""
    turns = terminus_turns(
        None,
        [commands("ls -la ~\n", "grep -rn 'skills' notes.txt\n"), commands("cat report.md\n")],
        ["New Terminal Output:\ndrwxr-xr-x 1 root root 12 Jan 24 14:27 .claude\nskills: none\n"],
    )
    rel = "no_skills/3d-scan-calc__AAAAAAA"
    write_trial(
        tmp_path,
        rel,
        harbor_result("3d-scan-calc__AAAAAAA", "terminus-2-skills"),
        {"agent/trajectory.json": turns},
    )
    r = review(scanned(tmp_path)["3d-scan-calc__AAAAAAA"])
    assert r.skills["skill_mode"] == "no-skill" and r.skills["catalog_status"] == "catalog_found"
    assert not {c for c in checks(r) if c.startswith(("NOSKILL_", "HACK_", "VERIFIER_"))}
    assert "SKILL_CATALOG_UNKNOWN" not in checks(r)  # an empty catalog, on the record


def test_terminus_with_skill_catalog_and_load_are_proven(tmp_path: Path) -> None:
    catalog = [
        {
            "name": "pid-controller",
            "description": "PID loops.",
            "location": "/root/.claude/skills/pid-controller",
        },
        {
            "name": "csv-processing",
            "description": "CSV files.",
            "location": "/root/.claude/skills/csv-processing",
        },
    ]
    turns = terminus_turns(
        catalog,
        ['{"load_skill": "pid-controller"}', commands("python3 sim.py\n")],
        ["Loaded skill: pid-controller\n---\n---\nname: pid-controller\n---\n# PID\n"],
    )
    rel = "skills/adaptive-cruise-control__BBBBBBB"
    res = harbor_result("adaptive-cruise-control__BBBBBBB", "terminus-2")
    res["agent_result"]["metadata"] = {"skills_loaded": ["pid-controller"], "references_loaded": []}
    write_trial(tmp_path / "runs", rel, res, {"agent/trajectory.json": turns})
    tasks = task_tree(tmp_path / "tasks", "adaptive-cruise-control", "pid-controller")
    r = review(scanned(tmp_path / "runs")["adaptive-cruise-control__BBBBBBB"], tasks)
    s = r.skills
    assert s["skill_mode"] == "with-skill" and s["skills"] == ["pid-controller", "csv-processing"]
    assert s["task_skills_loading"] == 1 and s["status"] == "complete"
    block = json.dumps(catalog, indent=2)
    assert s["catalog_sha256"] == hashlib.sha256(block.encode()).hexdigest()
    assert s["skills_loaded"] == ["pid-controller"]
    assert not {c for c in checks(r) if c.startswith(("SKILL_", "NOSKILL_"))}
    # the same run in no-skill mode: the catalog injects the task skill and the load leaks
    res2 = dict(res, trial_name="adaptive-cruise-control__CCCCCCC")
    write_trial(
        tmp_path / "runs",
        "no_skills/adaptive-cruise-control__CCCCCCC",
        res2,
        {"agent/trajectory.json": turns},
    )
    r2 = review(scanned(tmp_path / "runs")["adaptive-cruise-control__CCCCCCC"], tasks)
    assert {"NOSKILL_CATALOG_INJECTED", "NOSKILL_LEAK"} <= checks(r2)
    lines = {f.line for f in of(r2, "NOSKILL_LEAK")}
    assert None not in lines and len(lines) >= 2  # the load_skill turn and the Loaded-skill output


def test_skills_loaded_alone_proves_a_load_only_when_it_covers_the_task(tmp_path: Path) -> None:
    """terminus's result.json without its trajectory: the loaded list is all there is."""
    for name, loaded in (("acc__DDDDDDD", ["pid-controller"]), ("acc__EEEEEEE", [])):
        res = harbor_result(name, "terminus-2")
        res["agent_result"]["metadata"] = {"skills_loaded": loaded, "references_loaded": []}
        write_trial(tmp_path / "runs", f"skills/{name}", res, {})
    tasks = task_tree(tmp_path / "tasks", "acc", "pid-controller")
    ts = scanned(tmp_path / "runs")
    ok, unproven = review(ts["acc__DDDDDDD"], tasks), review(ts["acc__EEEEEEE"], tasks)
    assert ok.skills["task_skills_loading"] == 1 and "SKILL_CATALOG_UNKNOWN" not in checks(ok)
    assert unproven.skills["catalog_status"] == "skills_loaded_only"
    (f,) = of(unproven, "SKILL_CATALOG_UNKNOWN")
    assert "only the loaded skills are on record" in f.message and f.file == "result.json"


def test_no_skill_trial_that_loaded_a_skill_leaks(tmp_path: Path) -> None:
    res = harbor_result("acc__FFFFFFF", "terminus-2")
    res["agent_result"]["metadata"] = {"skills_loaded": ["pid-controller"], "references_loaded": []}
    write_trial(tmp_path, "no_skills/acc__FFFFFFF", res, {})
    (f,) = of(review(scanned(tmp_path)["acc__FFFFFFF"]), "NOSKILL_LEAK")
    assert f.file == "result.json" and f.line is not None and "pid-controller" in f.message


def test_terminus_episode_files_are_read_when_the_trajectory_is_absent(tmp_path: Path) -> None:
    files = {
        "agent/episode-0/prompt.txt": TERMINUS_HEAD + TERMINUS_TAIL,
        "agent/episode-0/response.txt": commands("cat ~/.claude/skills/mesh/SKILL.md\n"),
        "agent/episode-1/prompt.txt": "New Terminal Output:\n# Mesh\n",
        "agent/episode-1/response.txt": '{"task_complete": true}',
    }
    write_trial(tmp_path, "no_skills/x__GGGGGGG", harbor_result("x__GGGGGGG", "terminus-2"), files)
    t = scanned(tmp_path)["x__GGGGGGG"]
    assert t.harbor.formats == ["terminus_episodes"] and len(t.harbor.observations) == 1
    (f,) = of(review(t), "NOSKILL_LEAK")
    assert f.file == "agent/episode-0/response.txt" and "SKILL.md" in f.message


def test_terminus_atif_startup_catalog_and_keystrokes(tmp_path: Path) -> None:
    """Newer terminus runs write ATIF: the system step is the startup prompt."""
    catalog = [
        {
            "name": "mesh-analysis",
            "description": "Meshes.",
            "location": "/root/.claude/skills/mesh-analysis",
        }
    ]
    first = (
        TERMINUS_HEAD + "available_skills:\n" + json.dumps(catalog, indent=2) + "\n" + TERMINUS_TAIL
    )
    atif = {
        "schema_version": "ATIF-v1.6",
        "session_id": "s1",
        "agent": {
            "name": "terminus-2-skills",
            "version": "2.0.0",
            "model_name": "claude-haiku-4-5",
        },
        "steps": [
            {"step_id": 1, "source": "system", "message": first},
            {
                "step_id": 2,
                "source": "agent",
                "message": "Reading the skill.",
                "tool_calls": [
                    {
                        "tool_call_id": "call_0_1",
                        "function_name": "bash_command",
                        "arguments": {
                            "keystrokes": "cat /root/.claude/skills/mesh-analysis/SKILL.md\n"
                        },
                    }
                ],
                "observation": {
                    "results": [{"source_call_id": "call_0_1", "content": "# Mesh Analysis"}]
                },
            },
        ],
    }
    res = harbor_result("m__QQQQQQQ", "terminus-2-skills")
    res["agent_result"]["metadata"] = {"skills_loaded": [], "references_loaded": []}
    write_trial(tmp_path, "no_skills/m__QQQQQQQ", res, {"agent/trajectory.json": atif})
    tasks = task_tree(tmp_path / "tasks", "m", "mesh-analysis")
    r = review(scanned(tmp_path)["m__QQQQQQQ"], tasks)
    assert r.skills["catalog_format"] == "terminus_available_skills"
    assert r.skills["skills"] == ["mesh-analysis"] and r.skills["line"] == 11  # "step_id": 1
    assert {"NOSKILL_CATALOG_INJECTED", "NOSKILL_LEAK"} <= checks(r)
    (leak,) = [f for f in of(r, "NOSKILL_LEAK") if "bash_command" in f.message]
    assert leak.file == "agent/trajectory.json" and leak.line is not None


# --------------------------------------------------------------------------- Gemini CLI


def test_atif_actions_cite_their_tool_call_lines(harbor_real) -> None:
    t = harbor_real[CITATION]
    assert t.harbor.formats == ["atif"] and len(t.harbor.actions) == 18
    first = t.harbor.actions[0]
    assert (first["name"], first["line"]) == ("read_file", 24)
    raw = (Path(t.ref.path) / "agent/trajectory.json").read_text().splitlines()
    assert '"tool_call_id": "read_file-1769377463192-ea89ee4475d82"' in raw[23]
    assert t.harbor.startup[0]["line"] == 11  # the task prompt: never an action
    r = review(t)
    assert not {c for c in checks(r) if c.startswith(("NOSKILL_", "VERIFIER_"))}
    # Gemini's startup catalog is not in its logs unless activate_skill was called
    assert r.skills["catalog_status"] == "unknown" and "SKILL_CATALOG_UNKNOWN" in checks(r)


def gemini_trial(root: Path, rel: str, name: str) -> None:
    d = write_trial(root, rel, harbor_result(name, "gemini-cli"), {})
    shutil.copytree(DATA / "gemini-cli-3d-scan-calc" / "agent", d / "agent")


def test_gemini_activate_skill_lists_the_catalog(tmp_path: Path) -> None:
    gemini_trial(tmp_path / "runs", "skills/3d-scan-calc__X8aTd7V", "3d-scan-calc__X8aTd7V")
    t = scanned(tmp_path / "runs")["3d-scan-calc__X8aTd7V"]
    assert t.harbor.formats == ["gemini_native"]
    assert [a["name"] for a in t.harbor.actions] == ["activate_skill"]
    tasks = task_tree(tmp_path / "tasks", "3d-scan-calc", "mesh-analysis")
    r = review(t, tasks)
    s = r.skills
    assert s["catalog_format"] == "gemini_activate_skill_hint" and s["skills"] == ["mesh-analysis"]
    assert s["catalog_source"] == "activate_skill tool description"
    assert s["source_file"] == "agent/gemini-cli.trajectory.json" and s["line"] == 56
    assert s["task_skills_loading"] == 1 and not {c for c in checks(r) if c.startswith("SKILL_")}
    assert s["catalog_sha256"] == hashlib.sha256(b"(Available: 'mesh-analysis')").hexdigest()


def test_gemini_activation_in_a_no_skill_run_leaks(tmp_path: Path) -> None:
    gemini_trial(tmp_path, "noskills/3d-scan-calc__X8aTd7V", "3d-scan-calc__X8aTd7V")
    r = review(scanned(tmp_path)["3d-scan-calc__X8aTd7V"])
    leaks = of(r, "NOSKILL_LEAK")
    assert leaks and leaks[0].file == "agent/gemini-cli.trajectory.json"
    assert "activate_skill" in leaks[0].message


# --------------------------------------------------------------------------- Claude Code


def claude_trial(root: Path, rel: str, name: str, stdout: str | None = None) -> Path:
    d = write_trial(root, rel, harbor_result(name, "claude-code"), {})
    shutil.copytree(DATA / "claude-code-jpg-ocr-stat" / "agent", d / "agent")
    if stdout is not None:
        (d / "agent/command-1/stdout.txt").write_text(stdout)
    return d


def test_claude_code_stream_init_skills_and_tool_calls(tmp_path: Path) -> None:
    claude_trial(tmp_path / "runs", "skills/jpg-ocr-stat__HHHHHHH", "jpg-ocr-stat__HHHHHHH")
    t = scanned(tmp_path / "runs")["jpg-ocr-stat__HHHHHHH"]
    h = t.harbor
    assert h.formats == ["claude_stream"] and h.logs == ["agent/command-1/stdout.txt"]
    (bash,) = h.actions
    assert (bash["name"], bash["line"]) == ("Bash", 5)
    assert bash["args"]["command"] == "ls -la /app/workspace/dataset/img/ | head -20"
    assert h.observations[0]["text"] == "22"
    assert h.usage["output_tokens"] == 4539.0 and h.usage_source.endswith("result.usage")
    tasks = task_tree(tmp_path / "tasks", "jpg-ocr-stat", "image-ocr", "xlsx")
    r = review(t, tasks)
    s = r.skills
    assert s["catalog_format"] == "claude_code_init_skills" and s["line"] == 3
    assert s["skills"] == ["image-ocr", "openai-vision", "pdf", "video-frame-extraction", "xlsx"]
    assert s["task_skills_loading"] == 1 and not {c for c in checks(r) if c.startswith("SKILL_")}
    # without the task tree the load is not proven: quarantined, never publishable
    r2 = review(t)
    assert "SKILL_CATALOG_UNKNOWN" in checks(r2) and r2.skills["manual_review_required"]


def _stream(*events: dict[str, Any]) -> str:
    return "\n".join(json.dumps(e) for e in events) + "\n"


def _init(skills: list[str]) -> dict[str, Any]:
    return {
        "type": "system",
        "subtype": "init",
        "tools": ["Bash", "Read", "Skill", "ToolSearch"],
        "skills": skills,
        "slash_commands": ["compact"],
    }


def _use(cid: str, name: str, **inp: Any) -> dict[str, Any]:
    return {
        "type": "assistant",
        "message": {
            "id": f"m-{cid}",
            "role": "assistant",
            "content": [{"type": "tool_use", "id": cid, "name": name, "input": inp}],
            "usage": {"input_tokens": 5, "output_tokens": 7},
        },
    }


def _result(cid: str, text: str) -> dict[str, Any]:
    return {
        "type": "user",
        "message": {
            "role": "user",
            "content": [{"tool_use_id": cid, "type": "tool_result", "content": text}],
        },
    }


def test_claude_code_skill_call_in_a_no_skill_run_leaks_and_declarations_do_not(
    tmp_path: Path,
) -> None:
    clean = _stream(_init([]), _use("t1", "Bash", command="ls /app"), _result("t1", "data.csv"))
    leaky = _stream(
        _init([]),
        _use("t1", "Skill", skill="xlsx"),
        _result("t1", "Launching skill: xlsx"),
        _use("t2", "Read", file_path="/root/.claude/skills/xlsx/SKILL.md"),
    )
    claude_trial(tmp_path, "no_skills/a__IIIIIII", "a__IIIIIII", clean)
    claude_trial(tmp_path, "no_skills/b__JJJJJJJ", "b__JJJJJJJ", leaky)
    ts = scanned(tmp_path)
    ok = review(ts["a__IIIIIII"])
    assert not {c for c in checks(ok) if c.startswith("NOSKILL_")}  # "Skill" is only declared
    assert ok.skills["catalog_status"] == "catalog_found" and ok.skills["skills"] == []
    lines = sorted(f.line for f in of(review(ts["b__JJJJJJJ"]), "NOSKILL_LEAK"))
    assert lines == [2, 3, 4]  # the Skill call, its envelope, the SKILL.md read


def test_claude_code_reward_hack_in_a_stream_is_found(tmp_path: Path) -> None:
    stream = _stream(
        _init([]),
        _use("t1", "Bash", command="echo 1.0 > /logs/verifier/reward.txt"),
        _use(
            "t2",
            "Edit",
            file_path="/app/tests/test_outputs.py",
            old_string="assert x == 3",
            new_string="assert True",
        ),
    )
    claude_trial(tmp_path, "no_skills/c__KKKKKKK", "c__KKKKKKK", stream)
    r = review(scanned(tmp_path)["c__KKKKKKK"])
    assert {"HACK_SCORE_WRITE", "HACK_VERIFIER_TAMPER"} <= checks(r)
    assert {f.line for f in of(r, "HACK_SCORE_WRITE")} == {2}
    assert r.attribution != "experiment_fidelity"  # agent behaviour is not the experiment's


# --------------------------------------------------------------------------- unreadable logs


@pytest.mark.parametrize(
    ("rel", "content", "words"),
    [
        ("agent/trajectory.json", "{not json", "not valid JSON"),
        ("agent/trajectory.json", {"steps": "?"}, "terminus turn list or an ATIF"),
        ("agent/trajectory.json", "", "empty"),
        ("agent/gemini-cli.trajectory.json", [1, 2], "Gemini CLI session"),
    ],
)
def test_an_unreadable_agent_log_is_a_finding_and_a_broken_recording(
    tmp_path: Path, rel: str, content: Any, words: str
) -> None:
    res = harbor_result("t__LLLLLLL", "terminus-2", reward=0.0)
    write_trial(tmp_path, "no_skills/t__LLLLLLL", res, {rel: content})
    r = review(scanned(tmp_path)["t__LLLLLLL"])
    (f,) = of(r, "AGENT_LOG_INVALID")
    assert f.file == rel and words in f.message and f.severity == "blocker"
    assert r.attribution == "experiment_fidelity"
    assert any("broken recording" in a.message for a in of(r, "ATTR_EXPERIMENT_FIDELITY"))


def test_claude_stdout_without_stream_events_is_invalid(tmp_path: Path) -> None:
    claude_trial(tmp_path, "skills/d__MMMMMMM", "d__MMMMMMM", "bash: no job control\nKilled\n")
    (f,) = of(review(scanned(tmp_path)["d__MMMMMMM"]), "AGENT_LOG_INVALID")
    assert f.file == "agent/command-1/stdout.txt" and "stream-json" in f.message


def test_an_agent_log_over_the_cap_is_not_read_whole(tmp_path: Path) -> None:
    turns = terminus_turns(None, [commands("echo " + "x" * 4000 + "\n")], [])
    write_trial(
        tmp_path,
        "no_skills/e__NNNNNNN",
        harbor_result("e__NNNNNNN", "terminus-2"),
        {"agent/trajectory.json": turns},
    )
    t = scanned(tmp_path, ReadLimits(max_document_bytes=2048))["e__NNNNNNN"]
    assert t.harbor.actions == [] and "cap" in t.harbor.problems[0].message


# --------------------------------------------------------------------------- verifier order


def test_harbor_verifier_started_before_the_agent_finished_is_verifier_order(
    tmp_path: Path,
) -> None:
    res = harbor_result("o__OOOOOOO", "terminus-2")
    res["verifier"] = {
        "started_at": "2026-01-29T02:20:00.000000Z",
        "finished_at": "2026-01-29T02:21:00.000000Z",
    }
    write_trial(tmp_path, "no_skills/o__OOOOOOO", res, {})
    (f,) = of(review(scanned(tmp_path)["o__OOOOOOO"]), "VERIFIER_ORDER")
    assert f.file == "result.json" and "agent_execution.finished_at" in f.message
    res2 = harbor_result("o__PPPPPPP", "terminus-2")  # the real ordering: verifier after agent
    write_trial(tmp_path, "no_skills/o__PPPPPPP", res2, {})
    assert "VERIFIER_ORDER" not in checks(review(scanned(tmp_path)["o__PPPPPPP"]))
