"""Harbor agent logs as evidence: what the agent did, saw and had loaded.

``harbor run`` writes no ACP or LLM trajectory; its agents log under ``agent/``:

- terminus-2: ``agent/trajectory.json``, a list of ``{episode, prompt, response}`` turns
  (the first prompt is the startup prompt, with the ``Skill context:`` block; responses are
  JSON batches of ``{"keystrokes": ...}`` commands or ``{"load_skill": name}``), or the same
  turns as ``agent/episode-N/{prompt,response}.txt``;
- Gemini CLI: ``agent/trajectory.json`` in ATIF (``schema_version`` ``ATIF-v1.x``: steps with
  ``tool_calls`` and ``observation.results``) and ``agent/gemini-cli.trajectory.json`` (its
  native session: ``messages[].toolCalls[]`` with ``args``, ``result`` and the tool's
  ``description``, whose ``activate_skill`` text lists ``(Available: 'a', 'b')``);
- Claude Code: ``agent/command-N/stdout.txt``, ``--output-format stream-json``: a
  ``system``/``init`` event (``tools``, ``skills``), ``assistant`` messages (``tool_use``,
  text, per-message ``usage``), ``user`` ``tool_result`` messages, a final ``result``;
- every agent: ``exception.txt`` and ``trial.log`` (kept as bounded text for attribution).

Each file is read once through the bounded readers (a document cap for JSON, a line cap for
stream JSON).  What is folded: agent actions (tool calls with their arguments), the
observations they returned, assistant text, the startup prompt (for the isolation audit only:
never an action), skill catalogs and skill loads with their file, line and exact text.  A
log that is present but empty or unparsable is a :class:`LogProblem` on the trial (the
audits turn it into a finding), never an exception.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from typing import Any

import orjson

from bf_assets.ingest.readers import (
    DEFAULT_LIMITS,
    FileStats,
    IssueKind,
    JsonlFile,
    ReadIssue,
    ReadLimits,
    digest_of,
    iter_jsonl,
    parse_json_bytes,
    read_upto,
    resolve_file,
)

TRAJECTORY = "agent/trajectory.json"
GEMINI_NATIVE = "agent/gemini-cli.trajectory.json"
EXCEPTION_TXT = "exception.txt"
TRIAL_LOG = "trial.log"
MAX_ITEMS = 20_000  # actions, observations (each list)
MAX_TEXT = 8_192  # characters kept per action argument text / observation
MAX_RESPONSE = 256 * 1024  # characters of one terminus response searched for JSON
MAX_EPISODES = 5_000
MAX_COMMAND_DIRS = 16
MAX_TEXT_FILE = 4 * 1024 * 1024  # bytes of one episode prompt/response file
MAX_LOG_HEAD = 64 * 1024  # bytes of exception.txt / trial.log kept
_EPISODE = re.compile(r"^episode-(\d+)$")
_COMMAND = re.compile(r"^command-(\d+)$")
_SKILL_CONTEXT = "Skill context:"
_AVAILABLE_HINT = re.compile(r"\(Available: ([^)]*)\)")
_AVAILABLE_ERROR = re.compile(r"Available skills(?: are)?: ([^\n]*)")
_QUOTED = re.compile(r"'([^']+)'")
_DEC = json.JSONDecoder()


@dataclass(slots=True)
class LogProblem:
    file: str
    message: str
    line: int | None = None


@dataclass(slots=True)
class HarborCatalog:
    """A skill list recovered from an agent log, exactly as written there."""

    format: str  # terminus_available_skills, claude_code_init_skills, gemini_activate_skill, ...
    text: str  # the exact text (hashed)
    skills: list[dict[str, str]]
    file: str
    line: int | None
    source: str  # the field it came from
    startup: bool  # recovered from the startup prompt / init event (vs. a later tool record)
    kind: str = "catalog"  # "catalog" (what was available) or "loaded" (what the agent loaded)


@dataclass(slots=True)
class HarborLog:
    logs: list[str] = field(default_factory=list)  # agent logs read (relative paths)
    formats: list[str] = field(default_factory=list)  # terminus, atif, gemini_native, claude_stream
    problems: list[LogProblem] = field(default_factory=list)
    actions: list[dict[str, Any]] = field(
        default_factory=list
    )  # {file, line, id, name, args, text}
    observations: list[dict[str, Any]] = field(default_factory=list)  # {file, line, id, text}
    assistant_texts: list[dict[str, Any]] = field(default_factory=list)  # {file, line, text}
    startup: list[dict[str, Any]] = field(default_factory=list)  # {file, line, text}
    catalogs: list[HarborCatalog] = field(default_factory=list)
    usage: dict[str, float] = field(default_factory=dict)  # summed stream-json usage
    usage_source: str | None = None
    texts: dict[str, str] = field(default_factory=dict)  # exception.txt / trial.log heads
    stats: dict[str, FileStats] = field(default_factory=dict)  # per log read, for the inventory

    @property
    def present(self) -> bool:
        return bool(self.logs)


# --------------------------------------------------------------------------- helpers


def _clip(text: str) -> str:
    return text if len(text) <= MAX_TEXT else text[:MAX_TEXT]


def _dumps(value: Any) -> str:
    try:
        return orjson.dumps(value).decode()[:MAX_TEXT]
    except TypeError:
        return f"<{type(value).__name__} too deep to show>"


def _texts(content: Any) -> str:
    """The text of a message content (a string, or a list of text / nested blocks)."""
    if isinstance(content, str):
        return content
    out: list[str] = []
    if isinstance(content, list):
        for b in content:
            if isinstance(b, str):
                out.append(b)
            elif isinstance(b, dict):
                if isinstance(b.get("text"), str):
                    out.append(b["text"])
                elif "content" in b:
                    out.append(_texts(b.get("content")))
    elif isinstance(content, dict) and isinstance(content.get("text"), str):
        out.append(content["text"])
    return "\n".join(x for x in out if x)


class _Lines:
    """Line numbers of successive needles in one document, scanning forward once."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0
        self.line = 1

    def find(self, *needles: bytes) -> int | None:
        hits = [i for i in (self.data.find(n, self.pos) for n in needles) if i >= 0]
        if not hits:
            return None
        i = min(hits)
        self.line += self.data.count(b"\n", self.pos, i)
        self.pos = i
        return self.line

    def key(self, key: str, value: Any = None) -> int | None:
        """The line of ``"key": value`` (pretty or compact), or of ``"key":`` alone."""
        k = orjson.dumps(key)
        if value is None:
            return self.find(k + b": ", k + b":")
        v = orjson.dumps(value)
        return self.find(k + b": " + v, k + b":" + v)


def _read_doc(
    path: str, root: str, limits: ReadLimits
) -> tuple[Any, bytes, list[ReadIssue], FileStats]:
    """A JSON document through the bounded reader, with its bytes (to locate lines)."""
    real, size, issue = resolve_file(path, root)
    if issue is not None:
        return None, b"", [issue], FileStats()
    assert real is not None
    try:
        data = read_upto(real, size, limits.max_document_bytes + 1)
    except OSError as exc:
        return (
            None,
            b"",
            [ReadIssue(IssueKind.IO_ERROR, f"cannot read: {exc.strerror}")],
            FileStats(),
        )
    stats = FileStats(
        size=len(data),
        sha256=digest_of(data, limits),
        read=True,
        lines=data.count(b"\n") + (0 if data.endswith(b"\n") else 1),
    )
    if len(data) > limits.max_document_bytes:
        msg = f"over the {limits.max_document_bytes // (1024 * 1024)} MiB document cap"
        return None, b"", [ReadIssue(IssueKind.TOO_LARGE, msg)], FileStats(size=size)
    if not data.strip():
        return None, data, [ReadIssue(IssueKind.INVALID_JSON, "the file is empty")], stats
    value, issues = parse_json_bytes(data, limits)
    return value, data, issues, stats


def _read_text(path: str, root: str, cap: int) -> str | None:
    real, size, issue = resolve_file(path, root)
    if issue is not None or real is None:
        return None
    try:
        return read_upto(real, size, cap).decode("utf-8", errors="replace")
    except OSError:
        return None


def json_objects(text: str, limit: int = 32) -> list[dict[str, Any]]:
    """The JSON objects embedded in free text (a terminus response), in order."""
    out: list[dict[str, Any]] = []
    i, tries = 0, 0
    text = text[:MAX_RESPONSE]
    while len(out) < limit and tries < 256:
        j = text.find("{", i)
        if j < 0:
            break
        tries += 1
        try:
            value, end = _DEC.raw_decode(text, j)
        except (ValueError, RecursionError):
            i = j + 1
            continue
        if isinstance(value, dict):
            out.append(value)
        i = max(end, j + 1)
    return out


class _Fold:
    """Collects one trial's actions and observations, capped."""

    def __init__(self, log: HarborLog) -> None:
        self.log = log

    def action(self, file: str, line: int | None, name: str, args: Any, cid: Any = None) -> None:
        if len(self.log.actions) >= MAX_ITEMS:
            return
        a = args if isinstance(args, dict) else {}
        self.log.actions.append(
            {
                "file": file,
                "line": line,
                "id": str(cid) if cid else None,
                "name": name,
                "args": a,
                "text": _dumps(args) if args is not None else "",
            }
        )

    def observation(self, file: str, line: int | None, text: str, cid: Any = None) -> None:
        if text.strip() and len(self.log.observations) < MAX_ITEMS:
            self.log.observations.append(
                {"file": file, "line": line, "id": str(cid) if cid else None, "text": _clip(text)}
            )

    def said(self, file: str, line: int | None, text: Any) -> None:
        if isinstance(text, str) and text.strip() and len(self.log.assistant_texts) < MAX_ITEMS:
            self.log.assistant_texts.append({"file": file, "line": line, "text": _clip(text)})


# --------------------------------------------------------------------------- terminus


def terminus_catalog(prompt: str, file: str, line: int | None) -> HarborCatalog | None:
    """The ``Skill context:`` block of a terminus startup prompt: ``available_skills:``
    (a JSON list of ``{name, description, location}``), else an empty catalog."""
    start = prompt.find(_SKILL_CONTEXT)
    if start < 0:
        return None
    block_end = prompt.find("\n---", start)
    block = prompt[start : block_end if block_end > 0 else start + 4096]
    avail = prompt.find("available_skills:", start, block_end if block_end > 0 else None)
    if avail >= 0:
        lb = prompt.find("[", avail)
        try:
            value, end = _DEC.raw_decode(prompt, lb) if lb >= 0 else (None, 0)
        except (ValueError, RecursionError):
            value, end = None, 0
        if isinstance(value, list):
            skills = [
                {k: str(v[k]) for k in ("name", "description", "location") if v.get(k)}
                for v in value
                if isinstance(v, dict) and isinstance(v.get("name"), str) and v["name"].strip()
            ]
            return HarborCatalog(
                "terminus_available_skills",
                prompt[lb:end],
                skills,
                file,
                line,
                "first prompt: Skill context available_skills",
                True,
            )
    return HarborCatalog(
        "terminus_available_skills",
        block.rstrip(),
        [],
        file,
        line,
        "first prompt: Skill context (no available_skills)",
        True,
    )


def _terminus_turn(
    fold: _Fold, file: str, idx: int, prompt: Any, response: Any, pl: int | None, rl: int | None
) -> None:
    log = fold.log
    if isinstance(prompt, str):
        if idx == 0:
            log.startup.append({"file": file, "line": pl, "text": _clip(prompt)})
            cat = terminus_catalog(prompt, file, pl)
            if cat is not None:
                log.catalogs.append(cat)
        else:
            fold.observation(file, pl, prompt)
    if not isinstance(response, str):
        return
    objs = json_objects(response)
    said = [o[k] for o in objs for k in ("analysis", "plan") if isinstance(o.get(k), str)]
    fold.said(file, rl, "\n".join(said) if said else response)
    for o in objs:
        skill = o.get("load_skill")
        if isinstance(skill, str):
            fold.action(file, rl, "load_skill", {"name": skill})
        cmds = o.get("commands")
        for c in cmds if isinstance(cmds, list) else []:
            keys = c.get("keystrokes") if isinstance(c, dict) else None
            if isinstance(keys, str) and keys.strip():
                fold.action(file, rl, "terminal", {"keystrokes": keys})


def _terminus_list(fold: _Fold, value: list[Any], data: bytes, file: str) -> None:
    lines = _Lines(data)
    for idx, turn in enumerate(value[:MAX_EPISODES]):
        if not isinstance(turn, dict):
            continue
        pl = lines.key("prompt") if "prompt" in turn else None
        rl = lines.key("response") if "response" in turn else None
        _terminus_turn(fold, file, idx, turn.get("prompt"), turn.get("response"), pl, rl)


def _terminus_episodes(fold: _Fold, trial: str, root: str, names: list[str]) -> None:
    eps = sorted((int(m.group(1)), n) for n in names if (m := _EPISODE.match(n)) is not None)[
        :MAX_EPISODES
    ]
    for idx, (_, name) in enumerate(eps):
        texts = {}
        for part in ("prompt", "response"):
            rel = f"agent/{name}/{part}.txt"
            text = _read_text(os.path.join(trial, rel), root, MAX_TEXT_FILE)
            if text is not None:
                texts[part] = (rel, text)
                fold.log.logs.append(rel)
        if "prompt" in texts:
            rel, text = texts["prompt"]
            _terminus_turn(fold, rel, idx, text, None, 1, None)
        if "response" in texts:
            rel, text = texts["response"]
            _terminus_turn(fold, rel, idx, None, text, None, 1)
    if eps:
        fold.log.formats.append("terminus_episodes")


# --------------------------------------------------------------------------- ATIF / Gemini


def _available(text: str, pattern: re.Pattern[str]) -> list[str] | None:
    m = pattern.search(text)
    if not m:
        return None
    inner = m.group(1)
    names = _QUOTED.findall(inner) or [n.strip() for n in inner.split(",")]
    return [n for n in (x.strip() for x in names) if n and n != "none"]


def _gemini_catalog(log: HarborLog, text: str, file: str, line: int | None, via: str) -> None:
    if any(c.format.startswith("gemini") for c in log.catalogs):
        return
    for pattern, fmt in (
        (_AVAILABLE_HINT, "gemini_activate_skill_hint"),
        (_AVAILABLE_ERROR, "gemini_activate_skill_error"),
    ):
        names = _available(text, pattern)
        if names is not None:
            m = pattern.search(text)
            assert m is not None
            log.catalogs.append(
                HarborCatalog(fmt, m.group(0), [{"name": n} for n in names], file, line, via, True)
            )
            return


def _atif(fold: _Fold, value: dict[str, Any], data: bytes, file: str) -> None:
    lines = _Lines(data)
    steps = value.get("steps")
    first_user = True
    for step in steps[:MAX_ITEMS] if isinstance(steps, list) else []:
        if not isinstance(step, dict):
            continue
        sl = lines.key("step_id", step.get("step_id")) if "step_id" in step else None
        src = step.get("source")
        msg = step.get("message")
        if src in ("system", "user"):
            text = _texts(msg)
            if src == "system" or first_user:  # the startup prompt (terminus ATIF: system)
                fold.log.startup.append({"file": file, "line": sl, "text": _clip(text)})
                cat = terminus_catalog(text, file, sl)
                if cat is not None and not any(c.kind == "catalog" for c in fold.log.catalogs):
                    fold.log.catalogs.append(cat)
                first_user = first_user and src != "user"
            else:
                fold.observation(file, sl, text)
            continue
        fold.said(file, sl, _texts(msg))
        calls = step.get("tool_calls")
        for c in calls if isinstance(calls, list) else []:
            if not isinstance(c, dict):
                continue
            cid = c.get("tool_call_id")
            cl = (lines.key("tool_call_id", cid) if isinstance(cid, str) else None) or sl
            fold.action(file, cl, str(c.get("function_name") or ""), c.get("arguments"), cid)
        obs = step.get("observation")
        results = obs.get("results") if isinstance(obs, dict) else None
        for r in results if isinstance(results, list) else []:
            if not isinstance(r, dict):
                continue
            cid = r.get("source_call_id")
            ol = (lines.key("source_call_id", cid) if isinstance(cid, str) else None) or sl
            text = _texts(r.get("content"))
            fold.observation(file, ol, text, cid)
            if "not found" in text and "Available skills" in text:
                _gemini_catalog(fold.log, text, file, ol, "activate_skill error: Available skills")


def _gemini_native(
    fold: _Fold, value: dict[str, Any], data: bytes, file: str, actions: bool
) -> None:
    """The native Gemini CLI session; its actions only when no ATIF file was read."""
    lines = _Lines(data)
    msgs = value.get("messages")
    first_user = True
    for m in msgs[:MAX_ITEMS] if isinstance(msgs, list) else []:
        if not isinstance(m, dict):
            continue
        ml = lines.key("id", m.get("id")) if isinstance(m.get("id"), str) else None
        if m.get("type") == "user":
            if actions:
                if first_user:
                    fold.log.startup.append(
                        {"file": file, "line": ml, "text": _clip(_texts(m.get("content")))}
                    )
                else:
                    fold.observation(file, ml, _texts(m.get("content")))
            first_user = False
            continue
        if actions and m.get("type") == "gemini":
            fold.said(file, ml, _texts(m.get("content")))
        calls = m.get("toolCalls")
        for c in calls if isinstance(calls, list) else []:
            if not isinstance(c, dict):
                continue
            cid = c.get("id")
            cl = (lines.key("id", cid) if isinstance(cid, str) else None) or ml
            name = str(c.get("name") or "")
            desc = c.get("description")
            if name == "activate_skill" and isinstance(desc, str) and "(Available:" in desc:
                dl = lines.key("description") or cl  # the description follows the result
                _gemini_catalog(fold.log, desc, file, dl, "activate_skill tool description")
            out = _gemini_result(c.get("result"))
            if name == "activate_skill" and "Available skills" in out:
                _gemini_catalog(fold.log, out, file, cl, "activate_skill error: Available skills")
            if actions:
                fold.action(file, cl, name, c.get("args"), cid)
                fold.observation(file, cl, out, cid)


def _gemini_result(result: Any) -> str:
    out: list[str] = []
    for r in result if isinstance(result, list) else []:
        fr = r.get("functionResponse") if isinstance(r, dict) else None
        resp = fr.get("response") if isinstance(fr, dict) else None
        if isinstance(resp, dict):
            for k in ("output", "error"):
                if isinstance(resp.get(k), str):
                    out.append(resp[k])
    return "\n".join(out)


# --------------------------------------------------------------------------- Claude Code


_STREAM_TYPES = frozenset({"system", "assistant", "user", "result"})
_USAGE_KEYS = (
    "input_tokens",
    "output_tokens",
    "cache_creation_input_tokens",
    "cache_read_input_tokens",
)


def _claude_stream(fold: _Fold, path: str, root: str, rel: str, limits: ReadLimits) -> bool:
    """One ``stream-json`` file; False when it holds no stream-json event at all."""
    state = JsonlFile()
    events = 0
    seen_assistant = False
    msg_usage: dict[str, dict[str, float]] = {}
    final: dict[str, float] | None = None
    log = fold.log
    for item in iter_jsonl(path, root, state, limits):
        ev = item.value
        if not isinstance(ev, dict) or ev.get("type") not in _STREAM_TYPES:
            continue  # shell noise ("bash: cannot set terminal process group") or other JSON
        events += 1
        line = item.line
        etype = ev.get("type")
        if etype == "system" and ev.get("subtype") == "init":
            skills = ev.get("skills")
            if isinstance(skills, list):
                log.catalogs.append(
                    HarborCatalog(
                        "claude_code_init_skills",
                        _dumps(skills),
                        [{"name": s} for s in skills if isinstance(s, str) and s.strip()],
                        rel,
                        line,
                        "system/init skills",
                        True,
                    )
                )
            continue
        msg = ev.get("message") if isinstance(ev.get("message"), dict) else {}
        content = msg.get("content")
        if etype == "assistant":
            seen_assistant = True
            usage = msg.get("usage")
            if isinstance(usage, dict) and isinstance(msg.get("id"), str):
                msg_usage[msg["id"]] = {
                    k: float(usage[k]) for k in _USAGE_KEYS if _num(usage.get(k))
                }
            for b in content if isinstance(content, list) else []:
                if not isinstance(b, dict):
                    continue
                if b.get("type") == "tool_use":
                    fold.action(rel, line, str(b.get("name") or ""), b.get("input"), b.get("id"))
                elif b.get("type") == "text":
                    fold.said(rel, line, b.get("text"))
        elif etype == "user":
            blocks = content if isinstance(content, list) else [content]
            for b in blocks:
                if isinstance(b, dict) and b.get("type") == "tool_result":
                    fold.observation(rel, line, _texts(b.get("content")), b.get("tool_use_id"))
                elif seen_assistant:  # meta text the harness adds (e.g. a skill's body)
                    fold.observation(rel, line, _texts(b))
        elif etype == "result":
            usage = ev.get("usage")
            if isinstance(usage, dict):
                final = {k: float(usage[k]) for k in _USAGE_KEYS if _num(usage.get(k))}
    log.stats[rel] = state.stats
    if state.issues:
        log.problems.extend(LogProblem(rel, i.message) for i in state.issues)
        return True
    if events == 0:
        return False
    usage_sum = final
    src = f"{rel}: result.usage"
    if usage_sum is None and msg_usage:
        usage_sum = {}
        for u in msg_usage.values():
            for k, v in u.items():
                usage_sum[k] = usage_sum.get(k, 0.0) + v
        src = f"{rel}: assistant message usage"
    if usage_sum and not log.usage:
        log.usage, log.usage_source = usage_sum, src
    return True


def _num(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


# --------------------------------------------------------------------------- entry point


def _listing(d: str) -> list[str]:
    try:
        return [e.name for e in os.scandir(d)]
    except OSError:
        return []


def _problem(log: HarborLog, rel: str, issues: list[ReadIssue], what: str) -> None:
    msg = "; ".join(i.message for i in issues) if issues else what
    log.problems.append(LogProblem(rel, f"{rel} cannot be read as {what}: {msg}"))


def _skills_loaded(log: HarborLog, trial: str, root: str, result: Any) -> None:
    ar = result.get("agent_result") if isinstance(result, dict) else None
    meta = ar.get("metadata") if isinstance(ar, dict) else None
    loaded = meta.get("skills_loaded") if isinstance(meta, dict) else None
    if not isinstance(loaded, list):
        return
    names = [s for s in loaded if isinstance(s, str) and s.strip()]
    text = _read_text(os.path.join(trial, "result.json"), root, 64 * 1024 * 1024) or ""
    line = _Lines(text.encode()).key("skills_loaded") if text else None
    log.catalogs.append(
        HarborCatalog(
            "terminus_skills_loaded",
            _dumps(loaded),
            [{"name": n} for n in names],
            "result.json",
            line,
            "agent_result.metadata.skills_loaded",
            True,
            kind="loaded",
        )
    )


def scan_harbor(
    trial: str,
    root: str,
    harness: str | None,
    result: Any,
    names: set[str],
    limits: ReadLimits = DEFAULT_LIMITS,
) -> HarborLog:
    """Read a Harbor trial's agent logs (bounded) into a :class:`HarborLog`."""
    log = HarborLog()
    fold = _Fold(log)
    _skills_loaded(log, trial, root, result)
    for rel in (EXCEPTION_TXT, TRIAL_LOG):
        if rel in names:
            text = _read_text(os.path.join(trial, rel), root, MAX_LOG_HEAD)
            if text is not None:
                log.texts[rel] = text
    if "agent" not in names:
        return log
    agent_dir = os.path.join(trial, "agent")
    entries = _listing(agent_dir)
    atif_read = False
    if "trajectory.json" in entries:
        value, data, issues, stats = _read_doc(os.path.join(trial, TRAJECTORY), root, limits)
        log.stats[TRAJECTORY] = stats
        log.logs.append(TRAJECTORY)
        if isinstance(value, list):
            log.formats.append("terminus")
            _terminus_list(fold, value, data, TRAJECTORY)
        elif isinstance(value, dict) and str(value.get("schema_version", "")).startswith("ATIF"):
            log.formats.append("atif")
            atif_read = True
            _atif(fold, value, data, TRAJECTORY)
        else:
            _problem(log, TRAJECTORY, issues, "a terminus turn list or an ATIF trajectory")
    elif any(_EPISODE.match(n) for n in entries):
        _terminus_episodes(fold, trial, root, entries)
    if "gemini-cli.trajectory.json" in entries:
        value, data, issues, stats = _read_doc(os.path.join(trial, GEMINI_NATIVE), root, limits)
        log.stats[GEMINI_NATIVE] = stats
        log.logs.append(GEMINI_NATIVE)
        if isinstance(value, dict) and isinstance(value.get("messages"), list):
            log.formats.append("gemini_native")
            _gemini_native(fold, value, data, GEMINI_NATIVE, actions=not atif_read)
        else:
            _problem(log, GEMINI_NATIVE, issues, "a Gemini CLI session (messages[])")
    cmds = sorted((int(m.group(1)), n) for n in entries if (m := _COMMAND.match(n)) is not None)[
        :MAX_COMMAND_DIRS
    ]
    streams = 0
    for _, name in cmds:
        rel = f"agent/{name}/stdout.txt"
        path = os.path.join(trial, rel)
        if not os.path.lexists(path):
            continue
        if _claude_stream(fold, path, root, rel, limits):
            log.logs.append(rel)
            streams += 1
    if streams:
        log.formats.append("claude_stream")
    elif harness == "claude-code" and "claude-code.txt" in entries:
        rel = "agent/claude-code.txt"
        if _claude_stream(fold, os.path.join(trial, rel), root, rel, limits):
            log.logs.append(rel)
            log.formats.append("claude_stream")
    if harness == "claude-code" and cmds and not streams and "claude_stream" not in log.formats:
        first = f"agent/{cmds[0][1]}/stdout.txt"
        if os.path.lexists(os.path.join(trial, first)):
            log.logs.append(first)
            log.problems.append(
                LogProblem(
                    first,
                    f"{first} holds no Claude Code stream-json event (init, assistant, user, result)",
                )
            )
    return log
