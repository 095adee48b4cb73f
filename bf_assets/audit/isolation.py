"""Verifier isolation (``VERIFIER_ORDER``, ``VERIFIER_LEAK``; review-rules §6 H4/H9).

Ordering evidence: the flat ``verifier_started_after_agent == false`` (when the verifier
ran at all), verifier-phase ACP events before the agent's last event, or a reward recorded
(``rewards.jsonl`` ``ts``) before the agent phase ended.  Leak evidence: a successful read
of a verifier-only path whose content the agent then saw, or lines of the task's own
``tests/`` / ``solution/`` files in the agent's observations or startup prompt.
"""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path
from typing import Any

from bf_assets.audit.catalog import first_prompt_parts
from bf_assets.audit.events import Events, tool_failed
from bf_assets.audit.fileops import action_ops, hidden_kind
from bf_assets.findings import Finding, finding
from bf_assets.gate.view import num, parse_time, result_view
from bf_assets.ingest.readers import AUDIT_LIMITS, JsonlFile, iter_jsonl
from bf_assets.ingest.scan import ACP_FILE, LLM_FILE, TrialData

VERIFIER_ONLY = frozenset(
    {"/solution", "/oracle", "/tests", "/logs/verifier", "/verifier", "solve.sh"}
)
READ_VERBS = frozenset({"read"})
TOLERANCE = timedelta(seconds=2)
MAX_HIDDEN_FILES = 20
MAX_HIDDEN_LINES = 300
MIN_LINE_CHARS = 30


def order_findings(t: TrialData) -> list[Finding]:
    out: list[Finding] = []
    v = result_view(t)
    verifier_events = t.acp.first_verifier_line is not None
    if t.result_obj.get("verifier_started_after_agent") is False and (
        v.reward is not None or verifier_events
    ):
        out.append(
            finding(
                "VERIFIER_ORDER",
                "result.json says verifier_started_after_agent is false while the verifier produced a result",
                file="result.json",
                evidence={"verifier_started_after_agent": False, "reward": v.reward},
            )
        )
    first_v, last_a = t.acp.first_verifier_line, t.acp.last_agent_line
    if first_v is not None and last_a is not None and first_v < last_a:
        out.append(
            finding(
                "VERIFIER_ORDER",
                f"verifier-phase ACP event at line {first_v} precedes the agent's last event at line {last_a}",
                file=ACP_FILE,
                line=first_v,
            )
        )
    out.extend(_reward_before_agent_end(t))
    out.extend(_harbor_phase_order(t))
    return out


def _harbor_phase_order(t: TrialData) -> list[Finding]:
    """Harbor records each phase's start and end: a verifier that started before the agent
    execution finished ran while the agent could still act."""
    if t.layout != "harbor":
        return []
    r = t.result_obj
    agent = r.get("agent_execution") if isinstance(r.get("agent_execution"), dict) else {}
    ver = r.get("verifier") if isinstance(r.get("verifier"), dict) else {}
    end, start = parse_time(agent.get("finished_at")), parse_time(ver.get("started_at"))
    if end is None or start is None or (end.tzinfo is None) != (start.tzinfo is None):
        return []
    if start + TOLERANCE < end:
        return [
            finding(
                "VERIFIER_ORDER",
                f"verifier.started_at {ver.get('started_at')} precedes "
                f"agent_execution.finished_at {agent.get('finished_at')}",
                file="result.json",
                evidence={"verifier": ver, "agent_execution": agent},
            )
        ]
    return []


def _agent_end(t: TrialData) -> Any:
    r = t.result_obj
    start = parse_time(r.get("started_at"))
    timing = r.get("timing") if isinstance(r.get("timing"), dict) else {}
    phases = [num(timing.get(k)) for k in ("environment_setup", "agent_setup", "agent_execution")]
    if start is None or phases[2] is None:
        return None
    return start + timedelta(seconds=sum(p for p in phases if p is not None))


def _reward_before_agent_end(t: TrialData) -> list[Finding]:
    if t.layout != "production":
        return []
    end = _agent_end(t)
    if end is None:
        return []
    path = os.path.join(t.ref.path, "rewards.jsonl")
    gen = iter_jsonl(path, t.ref.root, JsonlFile(), AUDIT_LIMITS)
    try:
        for n, item in enumerate(gen):
            if n >= 50:
                break
            ev = item.value
            ts = parse_time(ev.get("ts")) if isinstance(ev, dict) else None
            if ts is None or (ts.tzinfo is None) != (end.tzinfo is None):
                continue
            if ts + TOLERANCE < end:
                return [
                    finding(
                        "VERIFIER_ORDER",
                        f"reward recorded at {ts.isoformat()} before the agent phase ended ({end.isoformat()})",
                        file="rewards.jsonl",
                        line=item.line,
                        evidence=ev,
                    )
                ]
    finally:
        gen.close()
    return []


def _hidden_lines(task_dir: Path | None) -> list[str]:
    """Distinctive lines of the task's verifier-only files (``tests/``, ``solution/``)."""
    if task_dir is None:
        return []
    lines: list[str] = []
    files: list[Path] = []
    for sub in ("tests", "solution"):
        d = task_dir / sub
        if d.is_dir():
            files.extend(p for p in sorted(d.rglob("*")) if p.is_file())
    for p in files[:MAX_HIDDEN_FILES]:
        try:
            with open(p, encoding="utf-8", errors="replace") as fh:
                text = fh.read(65536)
        except OSError:
            continue
        for raw in text.splitlines():
            s = raw.strip()
            if len(s) >= MIN_LINE_CHARS and not s.startswith(("#", "//", "import ", "from ")):
                lines.append(s)
    return list(dict.fromkeys(lines))[:MAX_HIDDEN_LINES]


def leak_findings(t: TrialData, ev: Events, task_dir: Path | None) -> list[Finding]:
    out: list[Finding] = []
    seen: set[str] = set()
    for a in ev.actions:
        obs = ev.observation_for(a)
        if not obs.strip() or tool_failed(a, obs):
            continue
        for op in ev.ops_of(a, action_ops):
            kind = hidden_kind(op.path) if op.kind in READ_VERBS else None
            if kind in VERIFIER_ONLY and op.path not in seen:
                seen.add(op.path)
                out.append(
                    finding(
                        "VERIFIER_LEAK",
                        f"the agent saw the content of verifier-only {op.path} ({op.via}, {a.file}:{a.line})",
                        file=a.file,
                        line=a.line,
                        evidence=obs,
                    )
                )
    hidden = _hidden_lines(task_dir)
    if not hidden:
        return out
    pp = first_prompt_parts(t)
    startup = "\n".join([*pp.system, *pp.developer, *pp.first_user])
    sources = [(LLM_FILE, t.llm.first_request_line, "the startup prompt", startup)]
    for sp in t.harbor.startup:  # a Harbor agent's first prompt, from its log
        startup += "\n" + str(sp.get("text") or "")
        sources[0] = (str(sp["file"]), sp.get("line"), "the startup prompt", startup)
    sources.extend(
        (o.file, o.line, f"{o.source.upper()} tool result", o.text) for o in ev.observations
    )
    hidden_set = set(hidden)
    for n, (file, line, what, text) in enumerate(sources):
        if n == 0:  # the startup prompt: one text, a substring search per hidden line
            hit = next((h for h in hidden if h in text), None)
        else:  # observations: exact (stripped) line matches, one hash lookup per line
            hit = next((s for s in (x.strip() for x in text.splitlines()) if s in hidden_set), None)
        if hit is not None and f"{file}:{line}" not in seen:
            seen.add(f"{file}:{line}")
            out.append(
                finding(
                    "VERIFIER_LEAK",
                    f"{what} contains a line of the task's hidden tests or solution ({file}:{line})",
                    file=file,
                    line=line,
                    evidence=hit,
                )
            )
            if len(out) >= 20:
                break
    return out
