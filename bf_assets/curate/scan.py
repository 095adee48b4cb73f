"""The ``PUBLISH_*`` checks on cleaned export rows and on any text that gets published.

``scan_row`` never trusts the cleaning step: it walks every key and string of the row (JSON
string columns parsed, and every string that holds a JSON document parsed and walked in
turn) and reports what survived.  Secrets are looked for with a detector independent of the
redactor (:mod:`bf_assets.curate.detect_secrets_scan`, detect-secrets' plugins); banned keys and
private reasoning in any provider's shape are ``PUBLISH_BANNED_KEY``; reasoning written inline
in text (think tags, a gpt-oss analysis channel, :mod:`bf_assets.redact.inline_reasoning`) is
``PUBLISH_REASONING``.  Evidence never carries
the secret or the path itself, only where and what kind (the plugin's name for a secret).
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Iterable
from typing import Any

import orjson

from bf_assets.contract import HEALTHY_OUTCOMES, Outcome, Verdict
from bf_assets.curate.detect_secrets_scan import detect
from bf_assets.curate.schema import CONFIGS, MESSAGE, TIMING_FIELDS, TOKEN_USAGE, Column
from bf_assets.findings import Finding, finding
from bf_assets.ingest.messages import ROLES, check_messages, tool_names
from bf_assets.redact.clean import (
    CACHE_MAX_ENTRIES,
    CACHE_MIN_CHARS,
    SHORT_CACHE_ENTRIES,
    host_path_rules_for,
    key_rules,
    parse_json_string,
    reasoning_kind,
    reasoning_name_kind,
    text_key,
)
from bf_assets.redact.inline_reasoning import reasoning_kinds_in
from bf_assets.redact.scan_memo import Attempt, ScanMemo

SECRET = "PUBLISH_SECRET"
HOST_PATH = "PUBLISH_HOST_PATH"
BANNED_KEY = "PUBLISH_BANNED_KEY"
SCHEMA = "PUBLISH_SCHEMA"
NOT_READY = "PUBLISH_NOT_READY"
REASONING = "PUBLISH_REASONING"
PUBLISH_CHECKS = (SECRET, HOST_PATH, BANNED_KEY, REASONING, SCHEMA, NOT_READY)

_SHA = re.compile(r"^sha256:[0-9a-f]{64}$")
_JSON_COLUMNS = ("json_list", "json_object")
_MESSAGE_KEYS = frozenset(f.name for f in MESSAGE)
MAX_PER_CHECK = 20  # findings per check and row: enough to act on, never a flood


def _is_marker(v: str) -> bool:
    return v.startswith(("[REDACTED", "***REDACTED", "<XXX-benchflow")) or v == "<HOST_PATH>"


Parent = dict[str, Any] | None


def host_paths_in(text: str) -> list[str]:
    """Placeholder names of the host-path rules that match ``text``."""
    return [ph for pattern, ph in host_path_rules_for(text) if pattern.search(text)]


Hits = tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]
TextCache = dict[bytes, Hits]


def text_hits(text: str) -> Hits:
    """``(secret detectors that fired, host-path placeholders, inline reasoning kinds)``
    found in ``text``."""
    return tuple(detect(text)), tuple(host_paths_in(text)), tuple(reasoning_kinds_in(text))


# Short strings recur across rows, shards, the card and the manifest: scanned once each.
_short_hits = functools.lru_cache(maxsize=SHORT_CACHE_ENTRIES)(text_hits)


def _text_hits(text: str, cache: TextCache | None) -> Hits:
    """:func:`text_hits` of ``text``, cached by content."""
    if len(text) < CACHE_MIN_CHARS:
        return _short_hits(text)
    if cache is None:
        return text_hits(text)
    key = text_key(text)
    hit = cache.get(key)
    if hit is None:
        if len(cache) >= CACHE_MAX_ENTRIES:
            cache.clear()
        hit = cache[key] = text_hits(text)
    return hit


class _Findings:
    """The findings of one scanned value: one per check and evidence, at most
    :data:`MAX_PER_CHECK` per check.  Each is *attempted* as (check, what was found,
    evidence); its message is ``"<what> in <where>"``.  With a ``log``, every attempt is
    also kept there (what a :class:`ScanMemo` remembers of an object)."""

    __slots__ = ("out", "seen", "per_check", "where", "log")

    def __init__(self, where: str, log: list[Attempt] | None = None) -> None:
        self.out: list[Finding] = []
        self.seen: set[tuple[str, str]] = set()
        self.per_check: dict[str, int] = {}
        self.where = where
        self.log = log

    def add(self, check: str, what: str, evidence: str) -> None:
        if self.log is not None:
            self.log.append((check, what, evidence))
        if (check, evidence) in self.seen or self.per_check.get(check, 0) >= MAX_PER_CHECK:
            return
        self.seen.add((check, evidence))
        self.per_check[check] = self.per_check.get(check, 0) + 1
        self.out.append(
            finding(check, f"{what} in {self.where}", file=self.where, evidence=evidence)
        )

    def key(self, key: str, v: Any, parent: dict[str, Any], cache: TextCache | None) -> None:
        facts = key_rules(key)
        kinds, paths, thoughts = _text_hits(key, cache)
        if facts.banned:
            self.add(BANNED_KEY, f"banned key {key!r}", key)
        elif facts.reasoning and (kind := reasoning_name_kind(parent, key, v)):
            self.add(BANNED_KEY, f"private reasoning ({kind})", kind)
        for kind in kinds:  # keys are published text too
            self.add(SECRET, f"detect-secrets {kind} fires in a key", kind)
        for ph in paths:
            self.add(HOST_PATH, f"an absolute host path ({ph}) survives in a key", ph)
        for kind in thoughts:
            self.add(REASONING, f"inline private reasoning ({kind}) survives in a key", kind)
        if facts.host_path_key and isinstance(v, str) and v.startswith(("/", "~")):
            self.add(HOST_PATH, f"host path under {key!r}", key)
        if facts.secret_key and isinstance(v, str) and v and not _is_marker(v):
            self.add(SECRET, f"value of secret-named key {key!r}", f"key {key}")

    def text(self, v: str, cache: TextCache | None) -> None:
        hits = _short_hits(v) if len(v) < CACHE_MIN_CHARS else _text_hits(v, cache)
        kinds, paths, thoughts = hits
        for kind in kinds:
            self.add(SECRET, f"detect-secrets {kind} fires", kind)
        for ph in paths:
            self.add(HOST_PATH, f"an absolute host path ({ph}) survives", ph)
        for kind in thoughts:
            self.add(REASONING, f"inline private reasoning ({kind}) survives", kind)


# Stack entries whose key is one of these are not a key and its value: a dict that is a list
# item (looked up in the memo first), and the end of such a dict's walk (its attempts are
# remembered then).
_ITEM = object()
_END = object()


def scan_value(
    value: Any, where: str, cache: TextCache | None = None, memo: ScanMemo | None = None
) -> list[Finding]:
    """Secrets, host paths and banned keys anywhere in a parsed value.  ``cache`` (shared by
    the caller across rows) lets text repeated across steps, rows and configs be scanned once;
    ``memo`` (only for a value of JSON types, see :mod:`bf_assets.redact.scan_memo`), an
    object repeated across steps, rows and configs be walked once.

    Every ``(key, value)`` is looked at depth first, the last child first, a string holding
    a JSON document followed by that document's values; the order decides which findings
    the per-check cap keeps.  The walk is a plain loop over one stack (no generator, no
    per-node call for a key seen before): it runs on every published value, twice
    (curation and the publish gate)."""
    return scan_values((value,), where, cache, memo)


def scan_values(
    values: Iterable[Any], where: str, cache: TextCache | None = None, memo: ScanMemo | None = None
) -> list[Finding]:
    """:func:`scan_value` of several values as parts of one document (``values`` is consumed
    one at a time, so a large document can be scanned a part at a time): one finding per
    check and evidence and at most :data:`MAX_PER_CHECK` per check in all, the values
    walked in the order given."""
    found = _Findings(where, [] if memo is not None else None)
    for value in values:
        _walk_into(found, value, cache, memo)
    return found.out


def _walk_into(
    found: _Findings, value: Any, cache: TextCache | None, memo: ScanMemo | None
) -> None:
    """The walk of :func:`scan_value`, adding to ``found`` (whose ``log`` a memo needs)."""
    log = found.log
    stack: list[tuple[Any, Any, Parent]] = [(None, value, None)]
    pop, push = stack.pop, stack.append
    while stack:
        key, v, parent = pop()
        if parent is not None:  # a key of a dict and its value
            if key is not None:
                found.key(key, v, parent, cache)
        elif key is not None:  # with a memo: a dict that is a list item, or the end of one
            assert memo is not None and log is not None
            if key is _END:
                memo.remember(v[0], log[v[1] :])
                continue
            mkey = memo.key(v)
            if mkey is not None:
                hit = memo.get(mkey)
                if hit is not None:
                    for check, what, evidence in hit:
                        found.add(check, what, evidence)
                    continue
                push((_END, (mkey, len(log)), None))  # popped once the dict is walked
        if isinstance(v, dict):
            if kind := reasoning_kind(v):
                found.add(BANNED_KEY, f"private reasoning ({kind})", kind)
            stack.extend([(k, x, v) for k, x in v.items()])
        elif isinstance(v, list):
            if memo is None:
                stack.extend([(None, x, None) for x in v])
            else:
                stack.extend([(_ITEM if type(x) is dict else None, x, None) for x in v])
        elif isinstance(v, str) and v:
            found.text(v, cache)
            inner = parse_json_string(v)
            if inner is not None:
                push((None, inner, None))


def scan_text(text: str, where: str) -> list[Finding]:
    """Secrets and host paths in a published text file (card, manifest)."""
    return scan_value(text, where)


# --------------------------------------------------------------------------- schema


def _msg_problems(msgs: Any, col: str) -> list[str]:
    if not isinstance(msgs, list):
        return [f"{col} is not a list of messages"]
    out = []
    for i, m in enumerate(msgs):
        if not isinstance(m, dict) or set(m) - _MESSAGE_KEYS:
            out.append(f"{col}[{i}] has keys outside {sorted(_MESSAGE_KEYS)}")
            continue
        if m.get("role") not in ROLES or not isinstance(m.get("content"), str):
            out.append(f"{col}[{i}] has an invalid role or non-string content")
        for tc in m.get("tool_calls") or []:
            fn = tc.get("function") if isinstance(tc, dict) else None
            if not isinstance(fn, dict) or not isinstance(fn.get("arguments"), str):
                out.append(f"{col}[{i}] has a tool call without string arguments")
            elif tc.get("type") != "function" or not tc.get("id"):
                out.append(f"{col}[{i}] has a tool call without id or type 'function'")
    return out


def _value_problems(col: Column, v: Any, row: dict[str, Any]) -> list[str]:
    name, kind = col.name, col.kind
    if v is None:
        return [] if col.nullable else [f"{name} is null"]
    if kind in ("string", "outcome", "verdict") and not isinstance(v, str):
        return [f"{name} is not a string"]
    if kind == "sha256" and not (isinstance(v, str) and _SHA.match(v)):
        return [f"{name} is not sha256:<64 hex>"]
    if kind == "int" and (isinstance(v, bool) or not isinstance(v, int)):
        return [f"{name} is not an integer"]
    if kind == "float" and (
        isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v)
    ):
        return [f"{name} is not a finite number"]
    if kind == "bool" and not isinstance(v, bool):
        return [f"{name} is not a boolean"]
    if kind == "true" and v is not True:
        return [f"{name} is not true"]
    if kind == "outcome" and v not in {o.value for o in HEALTHY_OUTCOMES}:
        return [f"{name} {v!r} is not a healthy outcome"]
    if kind == "verdict" and v not in {x.value for x in Verdict}:
        return [f"{name} {v!r} is not a verdict"]
    if kind == "string_list" and not (isinstance(v, list) and all(isinstance(x, str) for x in v)):
        return [f"{name} is not a list of strings"]
    if kind in ("token_usage", "timing"):
        names = [f.name for f in TOKEN_USAGE] if kind == "token_usage" else list(TIMING_FIELDS)
        want = int if kind == "token_usage" else float
        if not isinstance(v, dict) or set(v) != set(names):
            return [f"{name} does not have the fields {names}"]
        if any(x is not None and not isinstance(x, want) for x in v.values()):
            return [f"{name} has a value that is not {want.__name__}"]
    if kind in _JSON_COLUMNS:
        try:
            parsed = orjson.loads(v) if isinstance(v, str) else None
        except orjson.JSONDecodeError:
            parsed = None
        if not isinstance(parsed, list if kind == "json_list" else dict):
            return [f"{name} is not a JSON {'list' if kind == 'json_list' else 'object'} string"]
    if kind == "messages":
        problems = _msg_problems(v, name)
        if problems:
            return problems
        if name != "prompt" or "completion" not in row:
            defined = tool_names(row.get("tools")) if isinstance(row.get("tools"), str) else None
            found = check_messages(
                v if name != "completion" else (row.get("prompt") or []) + v,
                where=name,
                defined_tools=defined,
                require_assistant=name != "prompt",
                check_tooldefs=defined is not None,
            )
            return [p.message for p in found]
    return []


def schema_problems(row: dict[str, Any], config: str) -> list[str]:
    cols = CONFIGS[config]
    names = [c.name for c in cols]
    out = []
    missing = [n for n in names if n not in row]
    extra = sorted(set(row) - set(names))
    if missing:
        out.append(f"missing columns {missing}")
    if extra:
        out.append(f"unexpected columns {extra}")
    for c in cols:
        if c.name in row:
            out.extend(_value_problems(c, row[c.name], row))
    if config == "trl_sft" and isinstance(row.get("completion"), list):
        roles = [m.get("role") for m in row["completion"] if isinstance(m, dict)]
        if roles != ["assistant"]:
            out.append("completion is not exactly one assistant message")
    if (
        config == "rollouts"
        and all(isinstance(row.get(k), list) for k in MESSAGE_COLUMNS)
        and row["messages"] != row["prompt"] + row["completion"]
    ):
        out.append("messages is not prompt + completion")
    return out


MESSAGE_COLUMNS = ("prompt", "completion", "messages")


def not_ready_problems(row: dict[str, Any]) -> list[str]:
    """Row-level readiness (the ``rollouts`` config carries the review fields)."""
    out = []
    if row.get("training_ready") is not True:
        out.append("the trial is not training-ready")
    if row.get("review_verdict") != Verdict.PUBLISHABLE:
        out.append(f"the trial's verdict is {row.get('review_verdict')!r}, not publishable")
    outcome = row.get("outcome")
    if outcome == Outcome.ORACLE or outcome not in {o.value for o in HEALTHY_OUTCOMES}:
        out.append(f"outcome {outcome!r} is not a healthy model outcome")
    return out


def scan_row(
    row: dict[str, Any],
    config: str = "rollouts",
    where: str | None = None,
    cache: TextCache | None = None,
    memo: ScanMemo | None = None,
) -> list[Finding]:
    """Every ``PUBLISH_*`` finding of one cleaned export row (``memo``: only for a row of
    JSON types, as a shard with the published schema gives them)."""
    rid = row.get("rollout_id") if isinstance(row.get("rollout_id"), str) else "?"
    where = where or f"{config} row {rid}"
    value: dict[str, Any] = {}
    cols = {c.name: c for c in CONFIGS.get(config, ())}
    for k, v in row.items():
        col = cols.get(k)
        if col is not None and col.kind in _JSON_COLUMNS and isinstance(v, str):
            try:
                value[k] = orjson.loads(v)
                continue
            except orjson.JSONDecodeError:
                pass
        value[k] = v
    out = scan_value(value, where, cache, memo)
    out.extend(
        finding(SCHEMA, f"{where}: {p}", file=where)
        for p in schema_problems(row, config)[:MAX_PER_CHECK]
    )
    if config == "rollouts":
        out.extend(finding(NOT_READY, f"{where}: {p}", file=where) for p in not_ready_problems(row))
    return out
