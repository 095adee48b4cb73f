"""Helpers for the audit tests (flat and production trials written to a temp dir), plus
tests of the action/observation normalisation they rely on."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from trialkit import TrialSpec, healthy_spec

from bf_assets.audit import AuditContext, AuditResult, audit_trial
from bf_assets.audit.events import collect
from bf_assets.gate.run import run_gate
from bf_assets.ingest.discovery import discover
from bf_assets.ingest.scan import TrialData, scan_trial

OPENHANDS_SKILLS = (
    "You are OpenHands.\n<SKILLS>\nThe following skills are available. To use a skill, call "
    'invoke_skill(name="...").\n<available_skills>{}</available_skills>\n</SKILLS>'
)


def oh_system(*names: str) -> str:
    entries = "".join(
        f"<skill><name>{n}</name><description>About {n}.</description></skill>" for n in names
    )
    return OPENHANDS_SKILLS.format(entries)


def acp_tool(tool: str, **args: Any) -> dict[str, Any]:
    return {"phase": "agent", "type": "tool_call", "tool": tool, "args": args}


def acp_bash(cmd: str) -> dict[str, Any]:
    return acp_tool("bash", cmd=cmd)


def chat_request(system: str, user: str = "Solve the task.", **extra: Any) -> dict[str, Any]:
    body = {
        "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}],
        "tools": [{"function": {"name": "invoke_skill"}}, {"function": {"name": "bash"}}],
    }
    body.update(extra)
    return {"request": {"path": "/chat/completions", "body": body}}


def chat_response(text: str = "Done.", calls: list[tuple[str, str, dict[str, Any]]] = ()) -> dict:
    msg: dict[str, Any] = {"role": "assistant", "content": text}
    if calls:
        msg["tool_calls"] = [
            {"id": cid, "type": "function", "function": {"name": n, "arguments": json.dumps(a)}}
            for cid, n, a in calls
        ]
    return {
        "response": {
            "body": {
                "choices": [{"message": msg}],
                "usage": {"prompt_tokens": 100, "completion_tokens": 20},
            }
        }
    }


def tool_result_request(system: str, call_id: str, output: str) -> dict[str, Any]:
    req = chat_request(system)
    req["request"]["body"]["messages"] += [
        {"role": "assistant", "content": None, "tool_calls": [{"id": call_id, "type": "function"}]},
        {"role": "tool", "tool_call_id": call_id, "content": output},
    ]
    return req


def one_bash_call(command: str, output: str, *, skills: str = "data-cleaning") -> list[dict]:
    """An OpenHands LLM log of one ``execute_bash`` call (id ``c1``) with ``command``, its
    tool result ``output``, then a final answer (lines 1-4)."""
    sysmsg = oh_system(skills)
    return [
        chat_request(sysmsg),
        chat_response("", [("c1", "execute_bash", {"command": command})]),
        tool_result_request(sysmsg, "c1", output),
        chat_response("Done."),
    ]


def flat_trial(
    root: Path,
    name: str = "trial-a",
    *,
    acp: list[dict[str, Any]] | None = None,
    llm: list[dict[str, Any]] | None = None,
    run_config: dict[str, Any] | None = None,
    result: dict[str, Any] | None = None,
) -> TrialData:
    """A flat-layout trial (the benchflow-evals shape) with the given trajectories."""
    d = root / name
    (d / "trajectory").mkdir(parents=True)
    rc = {
        "task_id": "example-task",
        "harness": "openhands",
        "model": "sample-model",
        "skill_mode": "with_skills",
        "trial_id": 1,
        "sandbox": "docker",
        "source_ref": "eval-fixture",
        "task_skills": ["data-cleaning"],
    }
    rc.update(run_config or {})
    res = {
        "status": "pass",
        "reward": 1.0,
        "verifier_started_after_agent": True,
        "timing": {
            "started_at": "2026-06-01T00:00:00Z",
            "ended_at": "2026-06-01T00:01:00Z",
            "duration_seconds": 60,
        },
        "token_usage": {"input_tokens": 100, "output_tokens": 20},
        "tool_usage": {"bash": 1},
    }
    res.update(result or {})
    (d / "run_config.json").write_text(json.dumps(rc))
    (d / "result.json").write_text(json.dumps(res))
    events = acp if acp is not None else [{"phase": "agent", "type": "final", "content": "ok"}]
    (d / "trajectory/acp_trajectory.jsonl").write_text("\n".join(json.dumps(e) for e in events))
    if llm is None:
        llm = [chat_request(oh_system("data-cleaning")), chat_response()]
    if llm:
        (d / "trajectory/llm_trajectory.jsonl").write_text("\n".join(json.dumps(x) for x in llm))
    return scan_dir(root, d)


def scan_dir(root: Path, path: Path) -> TrialData:
    for ref in discover([root]).trials:
        if Path(ref.path) == path:
            return scan_trial(ref)
    raise AssertionError(f"discovery did not report {path}")


def prod_trial(root: Path, spec: TrialSpec | None = None) -> TrialData:
    """A production-layout trial written from a :class:`trialkit.TrialSpec`."""
    trial = (spec or healthy_spec()).write(root)
    return scan_dir(root, trial.path)


def audit(
    t: TrialData, tasks_dir: Path | None = None, *, outcome: str | None = None
) -> AuditResult:
    gate = run_gate(t)
    return audit_trial(
        t,
        AuditContext(tasks_dir=tasks_dir),
        outcome=outcome or gate.classification.outcome,
        attribution=gate.classification.attribution,
        existing_checks={f.check for f in gate.findings},
    )


def checks(r: AuditResult) -> set[str]:
    return {f.check for f in r.findings}


def by_check(r: AuditResult, check: str) -> list[Any]:
    return [f for f in r.findings if f.check == check]


# --------------------------------------------------------------------------- tests


def test_acp_flat_event_splits_args_from_output(tmp_path: Path) -> None:
    t = flat_trial(tmp_path, acp=[acp_tool("edit", path="verifier.py", diff="-a\n+b")])
    ev = collect(t)
    (a,) = [x for x in ev.actions if x.source == "acp"]
    assert a.tool == "edit" and a.args == {"path": "verifier.py", "diff": "-a\n+b"}
    assert a.line == 1 and a.observation == ""


def test_production_event_keeps_title_diff_and_output(tmp_path: Path) -> None:
    spec = healthy_spec()
    assert spec.acp is not None
    spec.acp.append(
        {
            "type": "tool_call",
            "tool_call_id": "c2",
            "kind": "edit",
            "title": "Write /app/x.py",
            "status": "completed",
            "content": [{"type": "diff", "path": "/app/x.py", "oldText": None, "newText": "x=1"}],
        }
    )
    ev = collect(prod_trial(tmp_path, spec.sync()))
    execute, edit = [a for a in ev.actions if a.source == "acp"]
    assert execute.title == "echo hi > hello.txt" and execute.observation == "ok"
    assert edit.diffs == [("/app/x.py", None, "x=1")]


def test_repaired_title_becomes_arguments(tmp_path: Path) -> None:
    spec = healthy_spec()
    assert spec.acp is not None
    spec.acp[2]["kind"] = "other"
    spec.acp[2]["title"] = 'Skill {"skill": "demo-skill"}'
    ev = collect(prod_trial(tmp_path, spec.sync()))
    a = next(a for a in ev.actions if a.source == "acp")
    assert a.tool == "Skill" and a.args == {"skill": "demo-skill"}


def test_llm_calls_and_results_are_collected(tmp_path: Path) -> None:
    llm = one_bash_call("ls", "file.txt")
    ev = collect(flat_trial(tmp_path, llm=llm))
    call = next(a for a in ev.actions if a.source == "llm")
    assert call.tool == "execute_bash" and call.args == {"command": "ls"} and call.call_id == "c1"
    assert ev.observation_for(call) == "file.txt"


def test_odd_records_never_crash(tmp_path: Path) -> None:
    acp = [
        {"type": "tool_call", "kind": 7, "title": 42, "args": ["a", "b"], "content": {"x": [1]}},
        {"type": "tool_call", "tool": "bash", "args": {"cmd": ["not", "a", "string"]}},
        {"type": "tool_call", "tool": "edit", "args": {"path": None, "diff": 3}},
        {"type": "tool_call", "kind": "execute", "title": 'echo "unterminated'},
        "not an object",
    ]
    llm = [
        [1, 2, 3],
        chat_request(oh_system("data-cleaning")),
        {
            "response": {
                "body": {
                    "choices": [
                        {
                            "message": {
                                "tool_calls": [
                                    {
                                        "id": "x",
                                        "function": {"name": "bash", "arguments": "{not json"},
                                    }
                                ]
                            }
                        }
                    ]
                }
            }
        },
        {"response": {"body": ["list", "body"]}},
    ]
    t = flat_trial(tmp_path, acp=acp, llm=llm)
    r = audit(t)
    assert isinstance(r.skills, dict) and r.skills["harness"] == "openhands"


def test_incomplete_trial_is_audited(tmp_path: Path) -> None:
    d = tmp_path / "jobs" / "j1" / "demo-task__abcd1234"
    d.mkdir(parents=True)
    (d / "config.json").write_text(
        json.dumps(
            {
                "agent": "codex-acp",
                "task_path": "tasks/demo-task",
                "environment": "docker",
                "skill_mode": "no-skill",
            }
        )
    )
    t = scan_dir(tmp_path / "jobs", d)
    r = audit_trial(t, AuditContext(), outcome="incomplete", attribution="unknown")
    assert r.skills["catalog_status"] == "unknown"
    assert "SKILL_CATALOG_UNKNOWN" in checks(r) and "PROVENANCE_MISSING" in checks(r)


def test_an_audit_that_breaks_fails_closed(tmp_path: Path, monkeypatch) -> None:
    import bf_assets.audit.hacking as hacking

    def boom(*args: Any, **kwargs: Any) -> list:
        raise RuntimeError("boom")

    monkeypatch.setattr(hacking, "hack_findings", boom)
    r = audit(flat_trial(tmp_path))
    (f,) = by_check(r, "HACK_SUSPECTED")
    assert f.severity == "quarantine" and "could not run" in f.message and "boom" in f.message
