"""Agent actions and observations of one trial, normalised across the ACP and LLM trajectories.

The audits look only at what the agent *did* (tool calls: names, titles, arguments) and what
it *saw* (tool results).  Startup prompts and tool declarations are never part of either.
ACP tool events come from :class:`~bf_assets.ingest.scan.AcpFacts` as one text blob per
event (title, then compact JSON of ``content`` / ``args``); this module splits it back into
the call (title, arguments, diff blocks) and its output.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson

from bf_assets.audit.prefilter import may_contain
from bf_assets.ingest.scan import ACP_FILE, LLM_FILE, TrialData

_REPAIRED_TITLE = re.compile(r"^([A-Za-z_][\w.-]*) (\{.*\})$", re.S)
_DIFF_PATH = re.compile(r'"type":\s*"diff",\s*"path":\s*"([^"]+)"')
_ERRORISH_WORDS = (
    "no such file",
    "permission denied",
    "cannot access",
    "not found",
    "operation not permitted",
    "is a directory",
    "cannot open",
    "does not exist",
)
_ERRORISH = re.compile("(?i)" + "|".join(re.escape(w) for w in _ERRORISH_WORDS))


@dataclass(slots=True)
class Action:
    """One tool call of the agent."""

    source: str  # "acp", "llm" or "harbor" (a Harbor agent log)
    file: str  # trajectory file, relative to the trial
    line: int
    tool: str  # tool name or ACP kind, as recorded
    title: str = ""  # ACP title ("" for LLM calls)
    args: dict[str, Any] = field(default_factory=dict)
    args_text: str = ""  # the arguments as recorded
    call_id: str | None = None
    status: str | None = None
    observation: str = ""  # the tool's output when the same record holds it (ACP content)
    diffs: list[tuple[str, str | None, str | None]] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.tool.lower()

    @property
    def text(self) -> str:
        """What the agent asked for (tool, title, arguments): never the tool's output."""
        return "\n".join(x for x in (self.tool, self.title, self.args_text) if x)

    @property
    def kind_label(self) -> str:
        return f"{self.source.upper()} {self.tool or 'tool'} call"


@dataclass(slots=True)
class Observation:
    """One tool result the agent saw."""

    source: str
    file: str
    line: int
    call_id: str | None
    text: str


@dataclass(slots=True)
class Events:
    actions: list[Action]
    observations: list[Observation]
    _by_id: dict[str, str] | None = None
    _ops: dict[int, Any] | None = None  # id(action) -> its file/git/network effects

    def ops_of(self, a: Action, derive: Callable[[Action], list[Any]]) -> list[Any]:
        """``derive(a)`` (``fileops.action_ops``), computed once per action: several audits
        walk the same actions' effects (read-only)."""
        if self._ops is None:
            self._ops = {}
        hit = self._ops.get(id(a))
        if hit is None:
            hit = self._ops[id(a)] = derive(a)
        return hit

    def observation_for(self, a: Action) -> str:
        """What the agent saw back from ``a`` (same ACP record, or the LLM tool result)."""
        if a.observation:
            return a.observation
        if self._by_id is None:
            self._by_id = {}
            for o in self.observations:
                if o.call_id and o.call_id not in self._by_id:
                    self._by_id[o.call_id] = o.text
        return self._by_id.get(a.call_id or "", "")


def tool_failed(a: Action, obs: str) -> bool:
    """The tool call visibly failed (status, or a short error-looking output)."""
    if a.status == "failed":
        return True
    return (
        bool(obs)
        and len(obs) < 400
        and may_contain(obs, _ERRORISH_WORDS)
        and bool(_ERRORISH.search(obs))
    )


def _loads(text: str) -> Any:
    try:
        return orjson.loads(text)
    except (orjson.JSONDecodeError, TypeError):
        return None


def _block_texts(blocks: list[Any], diffs: list[tuple[str, str | None, str | None]]) -> list[str]:
    out: list[str] = []
    for b in blocks:
        if isinstance(b, str):
            out.append(b)
        elif isinstance(b, dict):
            if b.get("type") == "diff" and isinstance(b.get("path"), str):
                old, new = b.get("oldText"), b.get("newText")
                diffs.append(
                    (
                        b["path"],
                        old if isinstance(old, str) else None,
                        new if isinstance(new, str) else None,
                    )
                )
                continue
            inner = b.get("content")
            if isinstance(inner, dict) and isinstance(inner.get("text"), str):
                out.append(inner["text"])
            elif isinstance(b.get("text"), str):
                out.append(b["text"])
            elif isinstance(inner, str):
                out.append(inner)
    return out


def _acp_action(ev: dict[str, Any]) -> Action:
    title = ev.get("title") or ""
    rest = ev.get("text") or ""
    if title and rest.startswith(title):
        rest = rest[len(title) :]
    a = Action(
        "acp",
        ACP_FILE,
        int(ev.get("line") or 0),
        str(ev.get("kind") or ""),
        title=title.strip().strip("`"),
        status=ev.get("status") if isinstance(ev.get("status"), str) else None,
    )
    seen: list[str] = []
    for part in rest.split("\n"):
        if not part.strip():
            continue
        value = _loads(part) if part[:1] in "[{" else None
        if isinstance(value, list):
            seen.extend(_block_texts(value, a.diffs))
        elif isinstance(value, dict) and not a.args:
            a.args, a.args_text = value, part
        else:
            for p in _DIFF_PATH.findall(part):  # a clipped content blob: keep the diff paths
                a.diffs.append((p, None, None))
            seen.append(part)
    m = _REPAIRED_TITLE.match(a.title)
    if m and not a.args:  # Benchflow repairs a generic title to "<tool> {json args}"
        parsed = _loads(m.group(2))
        if isinstance(parsed, dict):
            a.args, a.args_text = parsed, m.group(2)
            a.tool = a.tool if a.tool not in ("", "other", "tool") else m.group(1)
    a.observation = "\n".join(seen)
    return a


def _llm_action(d: dict[str, Any]) -> Action:
    raw = d.get("arguments")
    text = raw if isinstance(raw, str) else ""
    parsed = _loads(text) if text[:1] == "{" else None
    return Action(
        "llm",
        LLM_FILE,
        int(d.get("line") or 0),
        str(d.get("name") or ""),
        args=parsed if isinstance(parsed, dict) else {},
        args_text=text,
        call_id=str(d["id"]) if d.get("id") else None,
    )


def _harbor_action(d: dict[str, Any]) -> Action:
    args = d.get("args")
    return Action(
        "harbor",
        str(d.get("file") or ""),
        int(d.get("line") or 0),
        str(d.get("name") or ""),
        args=args if isinstance(args, dict) else {},
        args_text=str(d.get("text") or ""),
        call_id=str(d["id"]) if d.get("id") else None,
    )


def collect(t: TrialData) -> Events:
    """Every agent action and observation of the trial, ACP first, in file order (then the
    Harbor agent logs, which a Harbor trial has instead of both trajectories)."""
    actions = [_acp_action(ev) for ev in t.acp.tool_events if isinstance(ev, dict)]
    observations = [
        Observation("acp", ACP_FILE, a.line, None, a.observation) for a in actions if a.observation
    ]
    actions.extend(_llm_action(d) for d in t.llm.actions if isinstance(d, dict))
    for o in t.llm.observations:
        if isinstance(o, dict) and isinstance(o.get("text"), str):
            cid = str(o["id"]) if o.get("id") else None
            observations.append(
                Observation("llm", LLM_FILE, int(o.get("line") or 0), cid, o["text"])
            )
    actions.extend(_harbor_action(d) for d in t.harbor.actions)
    for o in t.harbor.observations:
        cid = str(o["id"]) if o.get("id") else None
        observations.append(
            Observation("harbor", str(o["file"]), int(o.get("line") or 0), cid, o["text"])
        )
    return Events(actions, observations)
