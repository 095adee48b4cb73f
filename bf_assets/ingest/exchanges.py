"""LLM exchanges: compact per-line facts and Benchflow's training-success selection.

Selection follows Benchflow's results writer (``reference/artifacts.md`` §5.2): candidates
are successful responses (status 200, object body, status completed, no incomplete
details), grouped by the canonical request body; from each group the latest exchange whose
tool calls a later request consumed, else the latest "safe" one.  Two deliberate fixes:
tool-call ids are matched exactly from structured fields (Benchflow tests substrings, so
``call_1`` looked consumed by ``call_12``), and Anthropic ``tool_use`` / Gemini
``functionCall`` calls count as tool calls (Benchflow ignores them, so those responses all
looked "safe").  Each line is reduced to an :class:`Exchange` as it streams past; nothing
of the body is kept beyond what the checks need.
"""

from __future__ import annotations

import hashlib
import operator
from dataclasses import dataclass, field
from typing import Any

import orjson

USAGE_KEYS = (
    "input_tokens",
    "output_tokens",
    "prompt_tokens",
    "completion_tokens",
    "total_tokens",
    "inputTokens",
    "outputTokens",
    "totalTokens",
    "promptTokenCount",
    "candidatesTokenCount",
    "totalTokenCount",
)


@dataclass(slots=True)
class Exchange:
    index: int  # 0-based position among the file's object rows (Benchflow's exchange_index)
    line: int
    has_request: bool
    has_response: bool
    has_error: bool
    status_code: Any
    candidate: bool
    body_key: str | None  # digest of the canonical request body
    response_call_ids: tuple[str, ...]
    response_call_names: tuple[str | None, ...]
    usage_positive: bool
    input_tokens: float
    output_tokens: float
    total_tokens: float
    provider_model: str | None
    response_model: str | None
    request_path: str | None
    call_purpose: str | None


def _num(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, int | float):
        return None
    return float(v)


def has_positive_usage(body: Any, *, max_nodes: int = 200_000) -> bool:
    """True when any usage key at any depth holds a positive number (bools excluded)."""
    if isinstance(body, dict) and max_nodes >= 2 and _last_holds_usage(body):
        return True  # what the walk below finds at its second node
    stack = [body]
    seen = 0
    while stack and seen < max_nodes:
        v = stack.pop()
        seen += 1
        if isinstance(v, dict):
            for k, x in v.items():
                if k in USAGE_KEYS:
                    n = _num(x)
                    if n is not None and n > 0:
                        return True
                if isinstance(x, dict | list):
                    stack.append(x)
        elif isinstance(v, list):
            stack.extend(x for x in v if isinstance(x, dict | list))
    return False


def _last_holds_usage(body: dict[str, Any]) -> bool:
    """True when the body's last container value (a response's ``usage``, in every provider
    shape seen) is a dict with a positive usage key of its own: the walk of
    :func:`has_positive_usage` takes it second (the body first, then its children from the
    last), so it would say True there, before any node cap."""
    for x in reversed(body.values()):
        if isinstance(x, dict):
            for k, n in x.items():
                if k in USAGE_KEYS and (n := _num(n)) is not None and n > 0:
                    return True
            return False
        if isinstance(x, list):
            return False
    return False


def usage_numbers(body: Any) -> tuple[float, float, float]:
    """``(input, output, total)`` from a response body's usage, provider-normalised."""
    if not isinstance(body, dict):
        return 0.0, 0.0, 0.0
    u = body.get("usage")
    if isinstance(u, dict):
        inp = (
            _num(u.get("prompt_tokens"))
            or _num(u.get("input_tokens"))
            or _num(u.get("inputTokens"))
            or 0.0
        )
        # Anthropic reports cache tokens separately from input; Benchflow folds them in.
        if "cache_read_input_tokens" in u or "cache_creation_input_tokens" in u:
            inp += (_num(u.get("cache_read_input_tokens")) or 0.0) + (
                _num(u.get("cache_creation_input_tokens")) or 0.0
            )
        out = (
            _num(u.get("completion_tokens"))
            or _num(u.get("output_tokens"))
            or _num(u.get("outputTokens"))
            or 0.0
        )
        tot = _num(u.get("total_tokens")) or _num(u.get("totalTokens")) or (inp + out)
        return inp, out, tot
    g = body.get("usageMetadata")
    if isinstance(g, dict):
        inp = (_num(g.get("promptTokenCount")) or 0.0) + (
            _num(g.get("toolUsePromptTokenCount")) or 0.0
        )
        out = (_num(g.get("candidatesTokenCount")) or 0.0) + (
            _num(g.get("thoughtsTokenCount")) or 0.0
        )
        tot = _num(g.get("totalTokenCount")) or (inp + out)
        return inp, out, tot
    return 0.0, 0.0, 0.0


def response_tool_calls(body: Any) -> list[tuple[str, str | None]]:
    """``(call_id, name)`` of every tool call in a provider response body, any provider shape."""
    calls: list[tuple[str, str | None]] = []
    if not isinstance(body, dict):
        return calls
    for item in body.get("output") or []:
        if isinstance(item, dict) and item.get("type") in ("function_call", "tool_call"):
            cid = item.get("call_id") or item.get("id")
            if cid:
                calls.append((str(cid), str(item["name"]) if item.get("name") else None))
    messages: list[Any] = []
    choices = body.get("choices")
    if isinstance(choices, list):
        messages.extend(c.get("message") for c in choices if isinstance(c, dict))
    messages.append(body.get("message"))
    for msg in messages:
        if not isinstance(msg, dict):
            continue
        for call in msg.get("tool_calls") or []:
            if not isinstance(call, dict):
                continue
            cid = call.get("id") or call.get("tool_call_id")
            if not cid:
                continue
            fn = call.get("function")
            name = fn.get("name") if isinstance(fn, dict) else call.get("name")
            calls.append((str(cid), str(name) if name else None))
    # Anthropic messages: content[] tool_use blocks
    if body.get("type") == "message" or isinstance(body.get("content"), list):
        for block in body.get("content") or []:
            if isinstance(block, dict) and block.get("type") == "tool_use" and block.get("id"):
                calls.append(
                    (str(block["id"]), str(block.get("name")) if block.get("name") else None)
                )
    # Gemini: candidates[].content.parts[].functionCall (no ids: use the name and position)
    for cand in body.get("candidates") or []:
        parts = (cand.get("content") or {}).get("parts") if isinstance(cand, dict) else None
        for part in parts or []:
            if isinstance(part, dict) and isinstance(part.get("functionCall"), dict):
                fc = part["functionCall"]
                calls.append((_gemini_id(fc), str(fc.get("name")) if fc.get("name") else None))
    return calls


def _gemini_id(fc: dict[str, Any]) -> str:
    """Gemini calls carry an ``id`` only in newer APIs; otherwise the function name links a
    call to the ``functionCall``/``functionResponse`` parts that echo it in later requests."""
    return str(fc["id"]) if fc.get("id") else f"gemini-fn:{fc.get('name')}"


LIST_KEYS = ("messages", "input", "contents")  # where a request body carries its history


def request_call_ids(body: Any) -> set[str]:
    """Tool-call ids a request refers to (assistant calls and tool results), exact values."""
    ids: set[str] = set()
    if not isinstance(body, dict):
        return ids
    for key in LIST_KEYS:
        items = body.get(key)
        if isinstance(items, list):
            _items_call_ids(items, 0, ids)
    return ids


def _items_call_ids(items: list[Any], start: int, ids: set[str]) -> None:
    """Add the tool-call ids of ``items[start:]`` (messages of one list key) to ``ids``."""
    for i in range(start, len(items)):
        m = items[i]
        if not isinstance(m, dict):
            continue
        for k in ("tool_call_id", "call_id", "tool_use_id"):
            v = m.get(k)
            if isinstance(v, str) and v:
                ids.add(v)
        if m.get("type") in ("function_call", "function_call_output", "tool_call") and m.get("id"):
            ids.add(str(m["id"]))
        for call in m.get("tool_calls") or []:
            if isinstance(call, dict) and (call.get("id") or call.get("tool_call_id")):
                ids.add(str(call.get("id") or call.get("tool_call_id")))
        for part in m.get("parts") if isinstance(m.get("parts"), list) else []:
            if isinstance(part, dict):
                for k in ("functionCall", "functionResponse"):
                    if isinstance(part.get(k), dict):
                        ids.add(_gemini_id(part[k]))
        content = m.get("content")
        if isinstance(content, list):
            for block in content:
                if not isinstance(block, dict):
                    continue
                if block.get("type") == "tool_use" and block.get("id"):
                    ids.add(str(block["id"]))
                if block.get("type") == "tool_result" and block.get("tool_use_id"):
                    ids.add(str(block["tool_use_id"]))


_CANONICAL = orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS
_SORTED = orjson.OPT_SORT_KEYS


def canonical_bytes(value: Any) -> bytes:
    """``orjson.dumps(value, option=_CANONICAL)``: the same bytes (a parsed body's keys are
    all strings, and then the non-string-key option writes nothing differently), faster;
    only a value orjson refuses without that option is written with
    it (the same bytes, or the same error)."""
    try:
        return orjson.dumps(value, option=_SORTED)
    except TypeError:  # orjson.JSONEncodeError included
        return orjson.dumps(value, option=_CANONICAL)


def canonical_key(body: Any) -> str:
    try:
        data = canonical_bytes(body)
    except (TypeError, orjson.JSONEncodeError):
        # Unencodable (e.g. nested past the encoder's limit): a group of its own.
        data = f"unencodable:{id(body)}".encode()
    return hashlib.blake2b(data, digest_size=16).hexdigest()


@dataclass(slots=True)
class _ListMemo:
    """One list key of the previous request body: its canonical bytes (``[[item, ...]]``),
    item count, tool-call ids, and a sha256 fed with every byte but the closing ``]]``."""

    data: bytes
    count: int
    ids: set[str]
    hasher: Any
    items: tuple[Any, ...]  # the items themselves (shared by a reader: no re-serializing)


@dataclass(slots=True)
class RequestFacts:
    body: Any  # the request body these facts describe
    key: str  # groups identical bodies (same equivalence as :func:`canonical_key`)
    call_ids: set[str]
    fresh: dict[str, int]  # per list key: first item the previous body did not already carry


class RequestHistory:
    """Facts of successive request bodies, each costing about what it adds to the previous.

    Every request repeats the conversation so far, so a list (``messages``, ``input``,
    ``contents``) usually extends the previous body's list.  Both are serialized canonically
    (orjson, C speed); when the previous bytes are a prefix of the new ones, the items they
    cover are equal *with their types* (``1``, ``1.0`` and ``true`` serialize apart, unlike
    ``==``), so their call ids are reused and the body digest continues from the stored hash
    state.  Otherwise the list is walked whole, exactly like :func:`request_call_ids`.
    """

    __slots__ = ("_memo", "_unencodable", "last")

    def __init__(self) -> None:
        self._memo: dict[str, _ListMemo] = {}
        self._unencodable = 0
        self.last: RequestFacts | None = None

    def facts(self, body: dict[str, Any]) -> RequestFacts:
        lists = {k: body[k] for k in LIST_KEYS if isinstance(body.get(k), list)}
        parts: list[bytes] = []
        ok = True
        try:
            parts.append(canonical_bytes({k: v for k, v in body.items() if k not in lists}))
        except (TypeError, orjson.JSONEncodeError):
            ok = False
        ids: set[str] = set()
        fresh: dict[str, int] = {}
        for k, items in lists.items():
            digest, fresh[k] = self._list(k, items, ids)
            if digest is None:
                ok = False
            else:
                parts.append(b"\x1e" + k.encode() + digest)
        if ok:
            key = hashlib.blake2b(b"".join(parts), digest_size=16).hexdigest()
        else:  # a group of its own, like canonical_key
            self._unencodable += 1
            key = f"unencodable:{self._unencodable}"
        self.last = RequestFacts(body, key, ids, fresh)
        return self.last

    def _list(self, k: str, items: list[Any], ids: set[str]) -> tuple[bytes | None, int]:
        """Digest of one list (None when unencodable) and the index of its first new item;
        its call ids are added to ``ids``."""
        memo = self._memo.get(k)
        try:
            data = _shared_data(items, memo) if memo is not None else None
            if data is None:
                # Wrapped so the items sit at the depth they have in the body (encoder limit).
                data = canonical_bytes((items,))
        except (TypeError, orjson.JSONEncodeError):
            self._memo.pop(k, None)
            _items_call_ids(items, 0, ids)
            return None, 0
        if memo is not None and _extends(data, memo):
            start, own = memo.count, set(memo.ids)
            hasher = memo.hasher.copy()
            hasher.update(memoryview(data)[len(memo.data) - 2 : -2])
        else:
            start, own, hasher = 0, set(), hashlib.sha256(memoryview(data)[:-2])
        _items_call_ids(items, start, own)
        self._memo[k] = _ListMemo(data, len(items), own, hasher.copy(), tuple(items))
        hasher.update(b"]]")
        ids |= own
        return hasher.digest(), start


def _shared_data(items: list[Any], memo: _ListMemo) -> bytes | None:
    """The canonical bytes of ``items`` when they start with the very objects of ``memo``
    (a reader that shares repeated messages): only the new items are serialized.  Item by
    item, orjson writes the same bytes alone as inside the list (``,`` between items, each
    at the same depth), so this equals ``orjson.dumps((items,))``."""
    n = memo.count
    if len(items) < n or len(memo.items) != n:
        return None
    if not all(map(operator.is_, items[:n], memo.items)):
        return None
    new = canonical_bytes((items[n:],))
    if n and len(items) > n:
        return b"".join((memoryview(memo.data)[:-2], b",", memoryview(new)[2:]))
    return memo.data if len(items) == n else new


def _extends(data: bytes, memo: _ListMemo) -> bool:
    """True when ``data`` (``[[a,b,c]]``) starts with the items of ``memo`` (``[[a,b]]``)."""
    head = len(memo.data) - 2
    if len(data) < len(memo.data) or not data.startswith(memoryview(memo.data)[:head]):
        return False
    return memo.count == 0 or data[head] in b",]"


_EMPTY_KEY = canonical_key({})


def is_training_success(response: Any) -> bool:
    if not isinstance(response, dict) or response.get("status_code") != 200:
        return False
    body = response.get("body")
    if not isinstance(body, dict):
        return False
    status = body.get("status")
    if status is not None and status != "completed":
        return False
    return not body.get("incomplete_details")


def exchange_from_row(
    row: Any, index: int, line: int, history: RequestHistory | None = None
) -> tuple[Exchange, set[str]]:
    """Reduce one parsed ``llm_trajectory.jsonl`` row to the facts the checks use.

    Also returns the tool-call ids its request refers to (not kept on the exchange: every
    request repeats the history, so the caller folds them into one index).  With a
    ``history`` (the same one for every row of a file, in order) the request body costs
    only what it adds to the previous one; the result is the same.
    """
    req = row.get("request") if isinstance(row, dict) else None
    resp = row.get("response") if isinstance(row, dict) else None
    req_body = req.get("body") if isinstance(req, dict) else None
    resp_body = resp.get("body") if isinstance(resp, dict) else None
    meta = (
        row.get("metadata")
        if isinstance(row, dict) and isinstance(row.get("metadata"), dict)
        else {}
    )
    calls = response_tool_calls(resp_body)
    inp, out, tot = usage_numbers(resp_body)
    has_request = isinstance(req_body, dict)
    req_facts = history.facts(req_body) if has_request and history is not None else None
    if req_facts is not None:
        body_key, ids = req_facts.key, req_facts.call_ids
    else:
        body_key = canonical_key(req_body) if has_request else _EMPTY_KEY
        ids = request_call_ids(req_body) if has_request else set()
    ex = Exchange(
        index=index,
        line=line,
        has_request=has_request,
        has_response=isinstance(resp_body, dict),
        has_error=isinstance(row, dict) and isinstance(row.get("error"), dict),
        status_code=resp.get("status_code") if isinstance(resp, dict) else None,
        candidate=is_training_success(resp),
        body_key=body_key,
        response_call_ids=tuple(c for c, _ in calls),
        response_call_names=tuple(n for _, n in calls),
        usage_positive=isinstance(resp_body, dict) and has_positive_usage(resp_body),
        input_tokens=inp,
        output_tokens=out,
        total_tokens=tot,
        provider_model=meta.get("provider_model")
        if isinstance(meta.get("provider_model"), str)
        else None,
        response_model=resp_body.get("model")
        if isinstance(resp_body, dict) and isinstance(resp_body.get("model"), str)
        else None,
        request_path=req.get("path")
        if isinstance(req, dict) and isinstance(req.get("path"), str)
        else None,
        call_purpose=meta.get("call_purpose")
        if isinstance(meta.get("call_purpose"), str)
        else None,
    )
    return ex, ids


@dataclass(slots=True)
class ExchangeLog:
    """Exchanges of one LLM trajectory, folded line by line (memory: O(exchanges + call ids))."""

    exchanges: list[Exchange] = field(default_factory=list)
    last_ref: dict[str, int] = field(default_factory=dict)  # call id -> last request position
    last_request_pos: int = -1

    def add(self, row: Any, line: int, history: RequestHistory | None = None) -> Exchange:
        pos = len(self.exchanges)
        ex, ids = exchange_from_row(row, pos, line, history)
        self.exchanges.append(ex)
        if ex.has_request:
            self.last_request_pos = pos
            for cid in ids:
                self.last_ref[cid] = pos
        return ex

    def selected(self) -> list[int]:
        """Indices of the selected successful exchanges, ascending (Benchflow's rule, exact ids)."""
        exs = self.exchanges
        groups: dict[str | None, list[int]] = {}
        for pos, ex in enumerate(exs):
            if ex.candidate:
                groups.setdefault(ex.body_key, []).append(pos)
        chosen: list[int] = []
        for positions in groups.values():
            consumed = [
                p
                for p in positions
                if any(self.last_ref.get(c, -1) > p for c in exs[p].response_call_ids)
            ]
            if consumed:
                chosen.append(exs[max(consumed)].index)
                continue
            safe = [
                p
                for p in positions
                if not exs[p].response_call_ids
                or all(n == "finish" for n in exs[p].response_call_names)
                or self.last_request_pos <= p
            ]
            if safe:
                chosen.append(exs[max(safe)].index)
        return sorted(chosen)


# --------------------------------------------------------------------------- agent actions


def _text(v: Any, limit: int) -> str:
    if isinstance(v, str):
        return v[:limit]
    if isinstance(v, list):
        parts = []
        for p in v:
            if isinstance(p, dict):
                t = p.get("text") if isinstance(p.get("text"), str) else p.get("content")
                parts.append(t if isinstance(t, str) else "")
            elif isinstance(p, str):
                parts.append(p)
        return "\n".join(parts)[:limit]
    if v is None:
        return ""
    try:
        return orjson.dumps(v).decode()[:limit]
    except TypeError:
        return ""


def response_actions(
    body: Any, limit: int = 8192
) -> tuple[list[tuple[str, str | None, str]], list[str]]:
    """``([(call_id, name, arguments_text)], [assistant_text])`` of one provider response."""
    calls: list[tuple[str, str | None, str]] = []
    texts: list[str] = []
    if not isinstance(body, dict):
        return calls, texts
    for item in body.get("output") or []:
        if not isinstance(item, dict):
            continue
        if item.get("type") in ("function_call", "tool_call"):
            calls.append(
                (
                    str(item.get("call_id") or item.get("id") or ""),
                    item.get("name"),
                    _text(item.get("arguments"), limit),
                )
            )
        elif item.get("type") == "message":
            texts.append(_text(item.get("content"), limit))
    messages: list[Any] = [
        c.get("message") for c in body.get("choices") or [] if isinstance(c, dict)
    ]
    messages.append(body.get("message"))
    for msg in messages:
        if not isinstance(msg, dict):
            continue
        if msg.get("content"):
            texts.append(_text(msg.get("content"), limit))
        for call in msg.get("tool_calls") or []:
            if isinstance(call, dict):
                fn = call.get("function") if isinstance(call.get("function"), dict) else {}
                calls.append(
                    (
                        str(call.get("id") or ""),
                        fn.get("name") or call.get("name"),
                        _text(fn.get("arguments"), limit),
                    )
                )
    if isinstance(body.get("content"), list):
        for block in body["content"]:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "tool_use":
                calls.append(
                    (
                        str(block.get("id") or ""),
                        block.get("name"),
                        _text(block.get("input"), limit),
                    )
                )
            elif block.get("type") == "text":
                texts.append(_text(block.get("text"), limit))
    for cand in body.get("candidates") or []:
        parts = (cand.get("content") or {}).get("parts") if isinstance(cand, dict) else None
        for part in parts or []:
            if isinstance(part, dict) and isinstance(part.get("functionCall"), dict):
                fc = part["functionCall"]
                calls.append(
                    (str(fc.get("id") or ""), fc.get("name"), _text(fc.get("args"), limit))
                )
            elif isinstance(part, dict) and isinstance(part.get("text"), str):
                texts.append(part["text"][:limit])
    return calls, [t for t in texts if t]


def request_observations(
    body: Any, limit: int = 8192, fresh: dict[str, int] | None = None
) -> list[tuple[str, str]]:
    """``(call_id, text)`` of every tool result a request carries (the agent's observations).

    ``fresh`` (from :class:`RequestHistory`) skips, per list key, the items the previous
    body already carried: their results were reported then, under the same ids."""
    out: list[tuple[str, str]] = []
    if not isinstance(body, dict):
        return out
    for key in LIST_KEYS:
        items = body.get(key)
        if isinstance(items, list):
            start = fresh.get(key, 0) if fresh else 0
            for pos in range(start, len(items)):
                _item_observations(key, pos, items[pos], limit, out)
    return out


def _item_observations(key: str, pos: int, m: Any, limit: int, out: list[tuple[str, str]]) -> None:
    if not isinstance(m, dict):
        return
    if m.get("role") == "tool":
        out.append((str(m.get("tool_call_id") or f"{key}:{pos}"), _text(m.get("content"), limit)))
    elif m.get("type") == "function_call_output":
        out.append((str(m.get("call_id") or f"{key}:{pos}"), _text(m.get("output"), limit)))
    content = m.get("content")
    if isinstance(content, list):
        for bi, block in enumerate(content):
            if isinstance(block, dict) and block.get("type") == "tool_result":
                out.append(
                    (
                        str(block.get("tool_use_id") or f"{key}:{pos}:{bi}"),
                        _text(block.get("content"), limit),
                    )
                )
    for pi, part in enumerate(m.get("parts") or [] if isinstance(m.get("parts"), list) else []):
        if isinstance(part, dict) and isinstance(part.get("functionResponse"), dict):
            fr = part["functionResponse"]
            out.append((str(fr.get("id") or f"{key}:{pos}:{pi}"), _text(fr.get("response"), limit)))
