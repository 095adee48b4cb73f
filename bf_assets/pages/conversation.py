"""The conversation of a trial as page steps: LLM exchanges and ACP events, windowed.

Each trajectory is shown as a window of its lines: the first and last few, and the lines
around every cited one (at most ``MAX_STEPS``); what is left out is said as a gap with its
line range.  A selected line is parsed on its own (up to ``PARSE_MAX`` bytes) and only what
it adds is shown: of an LLM exchange the messages after the model's last turn (the first
exchange: all of them) and the response; of an ACP event its text, tool call and output.
Every text is clipped.  Values are cleaned before they are taken apart.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from bf_assets.ingest.exchanges import LIST_KEYS, response_actions, usage_numbers
from bf_assets.pages.lines import MiB, TrialFiles, decode
from bf_assets.pages.scrub import AHEAD, Scrub

LLM_FILE = "trajectory/llm_trajectory.jsonl"
ACP_FILE = "trajectory/acp_trajectory.jsonl"
HEAD, TAIL, AROUND = 8, 8, 1  # steps at the start, at the end, around each cited line
MAX_STEPS = 80
MAX_CITED = 40
PARSE_MAX = 16 * MiB
TEXT_MAX = 3000
SYSTEM_MAX = 1500
ARGS_MAX = 2000
PARTS_MAX = 12
FRAGMENT_MAX = 1500
SKILL_TOOLS = frozenset(
    {"invoke_skill", "skill", "activate_skill", "load_skill", "use_skill", "read_skill"}
)


@dataclass(slots=True)
class Part:
    kind: str  # text, system, call, result, note
    role: str
    title: str = ""
    body: str = ""
    omitted: int = 0  # characters of body left out
    skill: str | None = None  # a skill load: the skill's name (or "?")


@dataclass(slots=True)
class Step:
    source: str  # llm or acp
    line: int
    label: str
    parts: list[Part] = field(default_factory=list)
    meta: list[str] = field(default_factory=list)
    problem: str | None = None


@dataclass(frozen=True, slots=True)
class Gap:
    first: int
    last: int
    cited: int = 0  # cited lines inside the gap (over MAX_CITED)


@dataclass(slots=True)
class Track:
    source: str
    file: str
    title: str
    problem: str | None = None
    lines: int = 0
    items: list[Step | Gap] = field(default_factory=list)


def clip(text: str, limit: int) -> tuple[str, int]:
    if len(text) <= limit:
        return text, 0
    return text[:limit], len(text) - limit


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        out = []
        for block in content:
            if isinstance(block, str):
                out.append(block)
            elif isinstance(block, dict):
                t = block.get("text")
                if isinstance(t, str):
                    out.append(t)
                elif block.get("type") in ("image", "image_url", "input_image"):
                    out.append("[image]")
                elif isinstance(block.get("content"), str | list):
                    out.append(_text_of(block["content"]))
        return "\n".join(x for x in out if x)
    if isinstance(content, dict):
        t = content.get("text")
        if isinstance(t, str):
            return t
        return _text_of(content.get("content"))
    if content is None:
        return ""
    return _dumps(content)


def _dumps(value: Any, pretty: bool = False) -> str:
    try:
        opt = orjson.OPT_INDENT_2 if pretty else 0
        return orjson.dumps(value, option=opt, default=str).decode()
    except TypeError:
        return repr(value)


def _args_text(args: Any) -> str:
    if isinstance(args, str):
        s = args.strip()
        if s[:1] in "{[":
            try:
                return _dumps(orjson.loads(s), pretty=True)
            except orjson.JSONDecodeError:
                return args
        return args
    return _dumps(args, pretty=True)


def skill_of(name: str, args_text: str) -> str | None:
    """The skill a tool call loads (its name, or ``?``), else None."""
    low = (name or "").lower()
    if low in SKILL_TOOLS:
        try:
            parsed = orjson.loads(args_text) if args_text.strip()[:1] == "{" else None
        except orjson.JSONDecodeError:
            parsed = None
        if isinstance(parsed, dict):
            for key in ("name", "skill", "skill_name", "command"):
                if isinstance(parsed.get(key), str):
                    return parsed[key]
        return "?"
    if "SKILL.md" in args_text:
        head = args_text.split("SKILL.md", 1)[0].rstrip("/")
        return head.rsplit("/", 1)[-1] or "?"
    return None


def _call(name: str, args: Any, call_id: str | None, role: str = "assistant") -> Part:
    text = _args_text(args)
    body, omitted = clip(text, ARGS_MAX)
    title = name or "tool"
    if call_id:
        title += f"  ·  {call_id}"
    return Part("call", role, title, body, omitted, skill_of(name, text))


def _result(text: str, call_id: str | None) -> Part:
    body, omitted = clip(text, TEXT_MAX)
    return Part("result", "tool", f"result  ·  {call_id}" if call_id else "result", body, omitted)


def _message_parts(item: Any) -> list[Part]:
    """One request item (chat message, Responses item, Anthropic or Gemini turn)."""
    if not isinstance(item, dict):
        return [Part("text", "?", body=clip(_text_of(item), TEXT_MAX)[0])]
    role = str(item.get("role") or item.get("type") or "?")
    kind = item.get("type")
    if kind == "function_call":
        return [_call(str(item.get("name") or ""), item.get("arguments"), item.get("call_id"))]
    if kind == "function_call_output":
        return [_result(_text_of(item.get("output")), item.get("call_id"))]
    if role == "tool":
        return [_result(_text_of(item.get("content")), item.get("tool_call_id"))]
    parts: list[Part] = []
    content = item.get("content")
    blocks = content if isinstance(content, list) else None
    texts: list[str] = []
    if blocks is None:
        texts.append(_text_of(content))
    else:
        for b in blocks:
            if isinstance(b, dict) and b.get("type") == "tool_use":
                parts.append(_call(str(b.get("name") or ""), b.get("input"), b.get("id")))
            elif isinstance(b, dict) and b.get("type") == "tool_result":
                parts.append(_result(_text_of(b.get("content")), b.get("tool_use_id")))
            else:
                texts.append(_text_of([b]))
    for p in item.get("parts") or [] if isinstance(item.get("parts"), list) else []:
        if isinstance(p, dict) and isinstance(p.get("functionCall"), dict):
            fc = p["functionCall"]
            parts.append(_call(str(fc.get("name") or ""), fc.get("args"), fc.get("id")))
        elif isinstance(p, dict) and isinstance(p.get("functionResponse"), dict):
            fr = p["functionResponse"]
            parts.append(_result(_text_of(fr.get("response")), fr.get("id") or fr.get("name")))
        elif isinstance(p, dict) and isinstance(p.get("text"), str):
            texts.append(p["text"])
    for call in item.get("tool_calls") or [] if isinstance(item.get("tool_calls"), list) else []:
        if isinstance(call, dict):
            fn = call.get("function") if isinstance(call.get("function"), dict) else {}
            parts.append(
                _call(
                    str(fn.get("name") or call.get("name") or ""),
                    fn.get("arguments"),
                    call.get("id"),
                )
            )
    text = "\n".join(t for t in texts if t)
    if text:
        limit = SYSTEM_MAX if role in ("system", "developer") else TEXT_MAX
        body, omitted = clip(text, limit)
        kind_name = "system" if role in ("system", "developer") else "text"
        parts.insert(0, Part(kind_name, role, role, body, omitted))
    return parts


def _is_model_turn(item: Any) -> bool:
    return isinstance(item, dict) and (
        item.get("role") in ("assistant", "model") or item.get("type") == "function_call"
    )


def _history(body: dict[str, Any]) -> list[Any] | None:
    for key in LIST_KEYS:
        items = body.get(key)
        if isinstance(items, list):
            return items
    return None


def exchange_step(line: int, value: Any, scrub: Scrub) -> Step:
    step = Step("llm", line, f"exchange · line {line}")
    if not isinstance(value, dict):
        step.problem = "not a JSON object"
        return step
    req = value.get("request") if isinstance(value.get("request"), dict) else None
    resp = value.get("response") if isinstance(value.get("response"), dict) else None
    body = req.get("body") if req and isinstance(req.get("body"), dict) else None
    if body is not None:
        items = _history(body) or []
        last = max((i for i, it in enumerate(items) if _is_model_turn(it)), default=-1)
        fresh = items[last + 1 :]
        system: list[Any] = []
        if last < 0:
            for key in ("system", "instructions", "systemInstruction"):
                if body.get(key):
                    system.append({"role": "system", "content": _text_of(body[key])})
        shown = [*system, *fresh]
        if len(shown) > PARTS_MAX:
            step.parts.append(
                Part("note", "", body=f"{len(shown) - PARTS_MAX} earlier new messages not shown")
            )
            shown = shown[-PARTS_MAX:]
        for item in scrub.value(shown):
            step.parts.extend(_message_parts(item))
        if isinstance(body.get("model"), str):
            step.meta.append(f"model {scrub.text(body['model'])}")
        if last >= 0:
            step.meta.append(f"{last + 1} earlier messages re-sent")
    if resp is not None:
        status = resp.get("status_code")
        if status is not None:
            step.meta.append(f"HTTP {status}")
        rbody = scrub.value(resp.get("body"))
        calls, texts = response_actions(rbody, limit=TEXT_MAX * 2)
        for t in texts:
            b, o = clip(t, TEXT_MAX)
            step.parts.append(Part("text", "assistant", "assistant", b, o))
        for cid, name, args in calls:
            step.parts.append(_call(str(name or ""), args, cid or None))
        if isinstance(rbody, dict) and isinstance(rbody.get("error"), dict | str):
            b, o = clip(_text_of(rbody["error"]) or _dumps(rbody["error"]), TEXT_MAX)
            step.parts.append(Part("note", "error", "error", b, o))
        inp, out, tot = usage_numbers(rbody)
        if inp or out or tot:
            step.meta.append(
                f"tokens in {inp:g} · out {out:g}" + (f" · total {tot:g}" if tot else "")
            )
    err = value.get("error")
    if err is not None:
        b, o = clip(_text_of(scrub.value(err)) or _dumps(scrub.value(err)), TEXT_MAX)
        step.parts.append(Part("note", "error", "error", b, o))
    dur = value.get("duration_ms")
    if isinstance(dur, int | float):
        step.meta.append(f"{dur / 1000:.1f} s")
    meta = value.get("metadata")
    if isinstance(meta, dict) and isinstance(meta.get("call_purpose"), str):
        step.meta.append(f"purpose {scrub.text(meta['call_purpose'])}")
    if not step.parts and step.problem is None:
        step.parts.append(Part("note", "", body="(nothing new in this exchange)"))
    return step


def _acp_blocks(content: Any) -> list[Part]:
    parts: list[Part] = []
    blocks = content if isinstance(content, list) else [content]
    texts: list[str] = []
    for b in blocks:
        if isinstance(b, dict) and b.get("type") == "diff":
            old = b.get("oldText") if isinstance(b.get("oldText"), str) else ""
            new = b.get("newText") if isinstance(b.get("newText"), str) else ""
            diff = "\n".join(
                [*("- " + x for x in old.splitlines()), *("+ " + x for x in new.splitlines())]
            )
            body, omitted = clip(diff, TEXT_MAX)
            parts.append(Part("result", "tool", f"diff  ·  {b.get('path')}", body, omitted))
        elif isinstance(b, dict) and b.get("type") == "terminal":
            texts.append(f"[terminal {b.get('terminalId')}]")
        elif b is not None:
            texts.append(_text_of(b))
    text = "\n".join(t for t in texts if t)
    if text:
        body, omitted = clip(text, TEXT_MAX)
        parts.insert(0, Part("result", "tool", "output", body, omitted))
    return parts


def acp_step(line: int, value: Any, scrub: Scrub) -> Step:
    value = scrub.value(value)
    if not isinstance(value, dict):
        step = Step("acp", line, f"event · line {line}")
        step.problem = "not a JSON object"
        return step
    kind = str(value.get("type") or "?")
    step = Step("acp", line, f"{kind} · line {line}")
    if isinstance(value.get("phase"), str):
        step.meta.append(f"phase {value['phase']}")
    if kind in ("user_message", "agent_message", "agent_thought", "final"):
        role = {"user_message": "user", "agent_thought": "thought"}.get(kind, "assistant")
        text = _text_of(
            value.get("text") if value.get("text") is not None else value.get("content")
        )
        body, omitted = clip(text, TEXT_MAX)
        step.parts.append(Part("text", role, role, body, omitted))
    elif kind == "tool_call":
        tool_kind = str(value.get("kind") or value.get("tool") or value.get("tool_name") or "")
        title = value.get("title") if isinstance(value.get("title"), str) else ""
        args = value.get("args")
        call = _call(tool_kind, args if args is not None else title, value.get("tool_call_id"))
        if tool_kind == "skill" or "SKILL.md" in title:
            call.skill = call.skill or skill_of("skill", title.split(" ", 1)[-1]) or "?"
        step.parts.append(call)
        if isinstance(value.get("status"), str):
            step.meta.append(f"status {value['status']}")
        step.parts.extend(_acp_blocks(value.get("content")))
    elif kind == "oracle":
        step.parts.append(_call("oracle", value.get("command") or "", None))
        step.parts.append(_result(_text_of(value.get("stdout")), None))
        step.meta.append(f"return code {value.get('return_code')}")
    else:
        rest = {k: v for k, v in value.items() if k not in ("type", "phase")}
        body, omitted = clip(_dumps(rest, pretty=True), TEXT_MAX)
        step.parts.append(Part("note", "", kind, body, omitted))
    return step


def select(total: int, cited: Iterable[int]) -> tuple[list[int], int]:
    """Lines to show of a ``total``-line trajectory and the cited lines left out."""
    cites = sorted({c for c in cited if 1 <= c <= total})
    kept_cites, dropped = cites[:MAX_CITED], max(0, len(cites) - MAX_CITED)
    chosen: set[int] = set(range(1, min(HEAD, total) + 1))
    for c in kept_cites:
        chosen.update(range(max(1, c - AROUND), min(total, c + AROUND) + 1))
    room = MAX_STEPS - len(chosen)
    if room > 0:
        chosen.update(range(max(1, total - min(TAIL, room) + 1), total + 1))
    lines = sorted(chosen)
    if len(lines) > MAX_STEPS:  # cited windows first, then the head
        must = {c for c in kept_cites}
        rest = [n for n in lines if n not in must]
        lines = sorted(must | set(rest[: max(0, MAX_STEPS - len(must))]))
    return lines, dropped


def want(files: TrialFiles, rel: str, cited: Iterable[int]) -> None:
    """Ask for the lines a track may show (before the file is scanned)."""
    cites = sorted(set(cited))[:MAX_CITED]
    around = [n for c in cites for n in range(c - AROUND, c + AROUND + 1)]
    files.want(rel, around, head=HEAD, tail=TAIL)


def build_track(
    files: TrialFiles, source: str, rel: str, cited: Sequence[int], scrub: Scrub
) -> Track:
    title = (
        "Model exchanges (LLM trajectory)" if source == "llm" else "Agent events (ACP trajectory)"
    )
    track = Track(source, rel, title)
    scan = files.scan(rel)
    if scan.problem is not None:
        track.problem = scan.problem
        return track
    track.lines = scan.lines
    if scan.lines == 0:
        track.problem = "the file holds no lines"
        return track
    lines, dropped = select(scan.lines, cited)
    cited_set = set(cited)
    prev = 0
    for n in lines:
        if n > prev + 1:
            inside = sum(1 for c in cited_set if prev < c < n)
            track.items.append(Gap(prev + 1, n - 1, inside))
        prev = n
        track.items.append(_step(files, source, rel, n, scrub))
    if prev < scan.lines:
        track.items.append(Gap(prev + 1, scan.lines, sum(1 for c in cited_set if c > prev)))
    del dropped  # counted in the gaps
    return track


def _step(files: TrialFiles, source: str, rel: str, n: int, scrub: Scrub) -> Step:
    got = files.read(rel, n, PARSE_MAX + 1)
    label = f"line {n}"
    if got is None:
        return Step(source, n, label, problem="the line could not be read")
    data, omitted = got
    if omitted or len(data) > PARSE_MAX:
        size = len(data) + omitted
        return Step(
            source,
            n,
            label,
            problem=f"line of {size / MiB:.1f} MiB is over the page's {PARSE_MAX // MiB} MiB "
            "limit for one step: not rendered",
        )
    if not data.strip():
        return Step(source, n, label, problem="blank line")
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        ahead = decode(data[FRAGMENT_MAX : FRAGMENT_MAX + AHEAD])
        text, _ = scrub.fragment(decode(data[:FRAGMENT_MAX]), ahead)
        step = Step(source, n, label, problem=f"not valid JSON ({exc})")
        step.parts.append(Part("note", "", "raw", text, max(0, len(data) - FRAGMENT_MAX)))
        return step
    del data
    return exchange_step(n, value, scrub) if source == "llm" else acp_step(n, value, scrub)
