"""Cleaning export values: banned keys and private reasoning out, secrets redacted, host paths
replaced, in every string at any depth.

Everything works on parsed values and walks iteratively.  :meth:`Cleaner.value` does:

1. drop every banned key (``contract.BANNED_MESSAGE_KEYS`` plus verifier-only keys) at any
   depth, and replace the value of host-path keys (``rollout_dir``, ``effective_skills_dir``,
   …) with ``<HOST_PATH>``;
2. drop private reasoning in every provider's shape: Anthropic
   ``thinking``/``redacted_thinking`` blocks, their deltas and signatures; OpenAI Responses
   ``reasoning`` items (summaries, ``encrypted_content``); chat-completion ``reasoning``,
   ``reasoning_content`` and ``reasoning_details``; Gemini ``thought: true`` parts and thought
   signatures; and reasoning written inline in any string, in the tags and channels of every
   common model family (:mod:`bf_assets.redact.inline_reasoning`);
3. mask the values of secret-named keys, and clean every string (keys included):

   * a string holding a JSON document (tool-call ``arguments``, a tool output that prints
     JSON, a raw body) is parsed and cleaned as a value, then serialized again if anything
     changed;
   * every string is redacted with :mod:`bf_assets.redact` until a pass changes nothing (at
     most 16 passes; never settling is an error), host paths are replaced in every spelling
     (:data:`HOST_PATH_RULES`), and JSON objects embedded in free text that carry a banned or
     reasoning key are cleaned in place (a key that is not valid JSON is cut textually).

The counts of everything done are kept in a :class:`CleanStats` for the card and manifest.
:func:`clean_document` cleans a whole text file or JSON document (card, manifest, report).

Work is remembered, never changed by it: a long string's result (:class:`CleanedTexts`,
shared by a release's trials) and, in one trial's row, a repeated list-item object's cleaned
copy (:class:`CleanedItems`); what each counted is counted again for every occurrence.
"""

from __future__ import annotations

import bisect
import functools
import hashlib
import json
import re
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import ahocorasick
import orjson

from bf_assets.contract import BANNED_MESSAGE_KEYS
from bf_assets.redact import PLACEHOLDER, is_secret_key, redact_text, secret_spans
from bf_assets.redact.engine import Span, is_marker, merge_spans
from bf_assets.redact.inline_reasoning import strip_inline_reasoning
from bf_assets.redact.memo import CountingMemo
from bf_assets.redact.scan_memo import json_digest

# Verifier-only or gold content that must never reach a training row, beyond the contract's
# banned keys.
VERIFIER_KEYS = frozenset(
    {
        "verifier_output",
        "verifier_stdout",
        "verifier_stderr",
        "test_stdout",
        "test_stderr",
        "hidden_tests",
        "expected_output",
        "oracle_solution",
    }
)
BANNED_KEYS = BANNED_MESSAGE_KEYS | VERIFIER_KEYS
# Keys whose value is a path on the machine that ran the benchmark.
HOST_PATH_KEYS = frozenset(
    {
        "rollout_dir",
        "effective_skills_dir",
        "requested_skills_dir",
        "skills_dir",
        "local_path",
        "task_path",
        "trial_dir",
        "job_dir",
        "jobs_dir",
    }
)
HOST_PATH_PLACEHOLDER = "<HOST_PATH>"
# What the card and manifest report for removed keys: a category, never the key name itself
# (a banned name must not appear in any published byte, not even as a count label).
_REASONING = frozenset({"reasoning_content", "thinking_blocks", "private_reasoning"})
_PROVIDER = frozenset({"provider_specific_fields", "function_call"})


def banned_category(key: str) -> str:
    if key in _REASONING:
        return "private reasoning"
    if key in _PROVIDER:
        return "provider-specific fields"
    if key in VERIFIER_KEYS:
        return "verifier output"
    return "gold or verifier data"


MAX_REDACTION_PASSES = 16

# --------------------------------------------------------------------------- reasoning

THINKING = "anthropic thinking"
REDACTED_THINKING = "anthropic redacted thinking"
SIGNATURE = "thinking signature"
OPENAI_REASONING = "openai reasoning item"
ENCRYPTED = "encrypted reasoning"
REASONING_FIELD = "reasoning field"
GEMINI_THOUGHT = "gemini thought"
# keys that are private reasoning wherever they appear
REASONING_KEYS = {
    "reasoning_details": REASONING_FIELD,
    "reasoning_text": REASONING_FIELD,
    "encrypted_content": ENCRYPTED,
    "encrypted_reasoning": ENCRYPTED,
    "thought_signature": SIGNATURE,
    "thoughtSignature": SIGNATURE,
}
# keys that are private reasoning on a message or a message delta
MESSAGE_REASONING_KEYS = frozenset({"reasoning", "thinking", "reasoning_summary"})
_MESSAGE_MARKS = frozenset({"role", "content", "tool_calls", "refusal"})
_PART_TYPES = {
    "thinking": THINKING,
    "thinking_delta": THINKING,
    "redacted_thinking": REDACTED_THINKING,
    "signature_delta": SIGNATURE,
    "reasoning": OPENAI_REASONING,
    "reasoning_text": OPENAI_REASONING,
    "reasoning_summary": OPENAI_REASONING,
    "summary_text": OPENAI_REASONING,
    "reasoning.text": REASONING_FIELD,
    "reasoning.summary": REASONING_FIELD,
    "reasoning.encrypted": ENCRYPTED,
}
# the ``type`` values of a reasoning part (what a page's raw fragment is searched for)
REASONING_PART_TYPES = frozenset(_PART_TYPES)
# the keys that make a typed part a reasoning part (``{"type": "reasoning", ...}`` alone
# could be a task's own data)
_PART_EVIDENCE = {
    THINKING: ("thinking", "signature"),
    REDACTED_THINKING: ("data",),
    SIGNATURE: ("signature",),
    OPENAI_REASONING: ("summary", "encrypted_content", "text", "content"),
    REASONING_FIELD: ("text", "summary", "data"),
    ENCRYPTED: ("data", "encrypted_content"),
}


def reasoning_kind(v: Any) -> str | None:
    """The kind of private reasoning ``v`` is, when it is a reasoning block or part."""
    if not isinstance(v, dict):
        return None
    if v.get("thought") is True:
        return GEMINI_THOUGHT
    t = v.get("type")
    kind = _PART_TYPES.get(t) if isinstance(t, str) else None
    if kind is None:
        return None
    if t == "reasoning" and not (str(v.get("id") or "").startswith("rs_") or _evidence(v, kind)):
        return None
    return kind if _evidence(v, kind) or t != "reasoning" else None


def _evidence(v: dict[str, Any], kind: str) -> bool:
    return any(k in v for k in _PART_EVIDENCE.get(kind, ()))


def _is_message(d: dict[str, Any]) -> bool:
    return not _MESSAGE_MARKS.isdisjoint(d)


def reasoning_name_kind(parent: dict[str, Any], key: str, value: Any) -> str | None:
    """The kind of private reasoning the key ``key`` of ``parent`` holds by its name."""
    if key in REASONING_KEYS:
        return REASONING_KEYS[key]
    if key in MESSAGE_REASONING_KEYS and _is_message(parent) and value not in (None, "", [], {}):
        return THINKING if key == "thinking" else REASONING_FIELD
    return None


def reasoning_key_kind(parent: dict[str, Any], key: str, value: Any) -> str | None:
    """The kind of private reasoning the ``key: value`` pair of ``parent`` is."""
    return reasoning_name_kind(parent, key, value) or (
        reasoning_kind(value) if isinstance(value, dict) else None
    )


# --------------------------------------------------------------------------- host paths

# A separator in every spelling a path takes in published text: plain, JSON-escaped (``\/``,
# ``\\``), ``\u``-escaped, URL-encoded (once or twice), as an HTML entity.
_SL = r"(?:/|\\{1,3}/|%(?:25)?2[Ff]|\\{1,2}u002[Ff]|&#0*47;|&#[xX]0*2[Ff];|&sol;)"
_BSL = r"(?:\\{1,4}|%(?:25)?5[Cc]|\\{1,2}u005[Cc]|&#0*92;|&#[xX]0*5[Cc];|&bsol;)"
_S = _SL + r"{1,2}"  # a slash, doubled or not
# a path's leading slash (doubled, but not the ``//`` of a URL's ``scheme://``)
_LEAD = r"(?:(?<!:)" + _SL + r"{2}|" + _SL + r")"
# a boundary or a glued flag before a leading separator (the lookahead first: a regex that
# starts with it skips every other position at once)
_B = r"(?=[/\\%&])(?:(?<![\w/.~<>\\-])|(?<=(?<![\w-])-[A-Za-z])|(?<=\\[nrt]))"
_USER = r"[A-Za-z0-9._-]{1,64}(?![A-Za-z0-9._-])"
# a directory name (a volume's may hold spaces when a separator follows)
_SEG = r"(?:[A-Za-z0-9._-]{1,64}(?:[ ][A-Za-z0-9._-]{1,64}){1,3}(?=/|\\)|[A-Za-z0-9._-]{1,64})"
_WIN_SEP = r"(?:" + _BSL + r"|" + _SL + r"{1,2})"
_WIN_CHAR = r"(?:(?!%(?:25)?(?:5[Cc]|2[Ff])|&#|\\u00)[^\\/\s\"'<>|*?:])"
_WIN_USER = (
    r"(?:"
    + _WIN_CHAR
    + r"{1,64}(?:[ ]"
    + _WIN_CHAR
    + r"{1,64}){0,3}(?=\\|/|%|&)|"
    + _WIN_CHAR
    + r"{1,64})"
)
_COLON = r"(?::|%(?:25)?3[Aa]|\\{1,2}u003[Aa]|&#0*58;|&colon;)"
_END = r"(?![A-Za-z0-9._-])"
_HOMEDIR = r"(?:home\d{0,2}|homes|Users)"
# mount points under which a home directory lies, lower-case ``users`` included
# (``/mnt/data/users/u``, ``/Volumes/Disk/Users/u``, ``/net/host/home/u``, ``/nfs/homes/u``)
_NET_ROOT = (
    r"(?:mnt|nfs|net|Volumes|volume\d{1,2}|export|scratch|storage|gpfs|lustre|afs|media|run"
    + _S
    + r"media)"
)
# other roots a home directory lies under (``/usr/home/u``, ``/usr/local/home/u``,
# ``/var/home/u``, ``/srv/home/u``, ``/cygdrive/c/Users/u``, Git Bash ``/c/Users/u``); a web
# root's ``/var/www/home/…`` is not one
_LOCAL_ROOT = (
    r"(?:(?:usr(?:"
    + _S
    + r"local)?|var|srv|cygdrive"
    + _S
    + r"[A-Za-z])"
    + _S
    + r"|[a-z]"
    + _S
    + r"(?=Users))"
)
# a UNC share, ``\\server\share`` (plain, JSON-escaped, encoded), with the home directory
# below it when there is one.  A server's and a share's names have two characters at least
# and the path ends at a separator, a quote, a space or the text's end: the device
# namespaces ``\\.\`` and ``\\?\`` name no server (``\\?\UNC\server\share`` does), and
# a regex or LaTeX in a raw string (``r"\\text\s*{"``) is no share.
_UNC_HOST = r"[A-Za-z0-9][A-Za-z0-9.$-]{1,62}"
_UNC_NAME = r"[A-Za-z0-9_.-][^\\/\s\"'<>|*?:%&(){}\[\]]{1,79}(?![*?:({\[|])"


def _unc(lead: str, sep: str) -> str:
    home = sep + r"(?:Users|users|home|homes)" + sep + _UNC_NAME
    return (
        lead
        + r"(?:\?"
        + sep
        + r"UNC"
        + sep
        + r")?"
        + _UNC_HOST
        + sep
        + r"(?:(?:Users|users|home|homes)"
        + sep
        + _UNC_NAME
        + r"|"
        + _UNC_NAME
        + r"(?:"
        + home
        + r")?)"
    )


_UNC = (
    r"(?=[\\%])(?<![\w\\])(?:"
    + _unc(r"\\\\(?!\\)", r"\\(?!\\)")
    + r"|"
    + _unc(r"\\{4}(?!\\)", r"\\{2}(?!\\)")
    + r"|"
    + _unc(r"(?:%(?:25)?5[Cc]|\\u005[Cc]){2}", r"(?:%(?:25)?5[Cc]|\\u005[Cc])")
    + r")"
)
# (compiled pattern, replacement): applied in order.
HOST_PATH_RULES: list[tuple[re.Pattern[str], str]] = [
    (
        re.compile(r"(?i)\bfile(?::|%3a)(?:\\?/|%2f){2}(?:[^\s\"'<>)\]}`|%]|%(?!2[27]))*"),
        "<FILE_URI>",
    ),
    (re.compile(r"(?i)\b(?:smb|cifs|afp|nfs)://[^\s\"'<>)\]}`|]*"), HOST_PATH_PLACEHOLDER),
    (re.compile(_B + _LEAD + r"srv" + _S + r"bench" + _END), "<BENCH_ROOT>"),
    (
        re.compile(
            r"(?i)(?=[A-Z][:%\\&])(?<![\w])[A-Z]"
            + _COLON
            + _WIN_SEP
            + r"(?:(?:cygwin(?:64)?|msys(?:64|32|2)?)"
            + _WIN_SEP
            + r"home|Users|Documents and Settings)"
            + _WIN_SEP
            + _WIN_USER
        ),
        "<HOME>",
    ),
    (
        re.compile(
            _B
            + _LEAD
            + r"(?:"
            + _NET_ROOT
            + r"(?:"
            + _S
            + _SEG
            + r"){0,2}"
            + _S
            + r"(?:"
            + _HOMEDIR
            + r"|users|user)|(?:"
            + _LOCAL_ROOT
            + r")?"
            + _HOMEDIR
            + r")"
            + _S
            + _USER
        ),
        "<HOME>",
    ),
    # root's home (``/root``, macOS ``/var/root``)
    (
        re.compile(
            _B
            + _LEAD
            + r"(?:(?:private"
            + _S
            + r")?var"
            + _S
            + r")?root(?![A-Za-z0-9_-])(?!\.[A-Za-z0-9_])"
        ),
        "<HOME>",
    ),
    (re.compile(r"(?i)\\\\wsl(?:\$|\.localhost)\\[^\\\s]+\\home\\[^\\\s\"']{1,64}"), "<HOME>"),
    # machine-local mounts: a macOS volume, a WSL or Cygwin drive, a user's runtime dir or
    # removable media, an automounted or AFS host
    (
        re.compile(
            _B
            + _LEAD
            + r"(?:Volumes"
            + _S
            + _SEG
            + r"|(?:mnt|cygdrive)"
            + _S
            + r"[A-Za-z](?![A-Za-z0-9._-])|run"
            + _S
            + r"user"
            + _S
            + r"\d{1,10}|(?:run"
            + _S
            + r")?media"
            + _S
            + _SEG
            + r"|(?:net|afs)"
            + _S
            + _SEG
            + r")"
        ),
        HOST_PATH_PLACEHOLDER,
    ),
    (re.compile(_UNC), HOST_PATH_PLACEHOLDER),
    (re.compile(r"(?<![\w~/\\.$-])~[A-Za-z_][A-Za-z0-9._-]{0,31}(?=/|\\/)"), "<HOME>"),
    (re.compile(r"(?<=\bcd )~[A-Za-z_][A-Za-z0-9._-]{0,31}(?![A-Za-z0-9._-])"), "<HOME>"),
    (
        re.compile(
            _B
            + _LEAD
            + r"(?:private"
            + _S
            + r")?var"
            + _S
            + r"folders"
            + _S
            + r"[A-Za-z0-9_+-]{1,64}"
            + _S
            + r"[A-Za-z0-9_+-]{1,64}"
        ),
        "<TMP>",
    ),
    (
        re.compile(_B + _LEAD + r"(?:private" + _S + r")?(?:var" + _S + r")?tmp" + _END),
        "<TMP>",
    ),
]
# what a text must hold for any rule to match: the first character of a separator in one of
# its spellings (``/``, ``\\``, ``%2F``, ``&#47;``…) or a tilde
_PATH_HINT = re.compile(r"[/\\~%&]")


@dataclass(slots=True)
class CleanStats:
    redactions: Counter[str] = field(default_factory=Counter)  # per secret kind
    host_paths: Counter[str] = field(default_factory=Counter)  # per placeholder
    banned_keys: Counter[str] = field(default_factory=Counter)  # per category of key
    reasoning: Counter[str] = field(default_factory=Counter)  # per kind of private reasoning

    def add(self, other: CleanStats) -> None:
        self.redactions.update(other.redactions)
        self.host_paths.update(other.host_paths)
        self.banned_keys.update(other.banned_keys)
        self.reasoning.update(other.reasoning)

    @property
    def n_redactions(self) -> int:
        return sum(self.redactions.values())

    @property
    def n_host_paths(self) -> int:
        return sum(self.host_paths.values())

    @property
    def n_reasoning(self) -> int:
        return sum(self.reasoning.values())

    def empty(self) -> bool:
        return not (self.redactions or self.host_paths or self.banned_keys or self.reasoning)

    def to_dict(self) -> dict[str, list[dict[str, Any]]]:
        """``{what: [{kind, count}, ...]}``: kinds are values, never keys (a banned key name
        must not appear as a key of a published document)."""
        return {
            what: [{"kind": k, "count": n} for k, n in sorted(counter.items())]
            for what, counter in (
                ("redactions", self.redactions),
                ("host_paths", self.host_paths),
                ("banned_keys", self.banned_keys),
                ("reasoning", self.reasoning),
            )
        }


class CleaningError(ValueError):
    """Redaction never settled: the value keeps producing new matches."""


def _then_separator(*names: str) -> tuple[str, ...]:
    """``names``, each followed by the first character of a separator in any spelling."""
    return tuple(n + c for n in names for c in "/\\%&")


# Per rule of HOST_PATH_RULES: literals one of which every match holds, and whether they are
# compared case-insensitively (then only in an ASCII text: the regex folds more than ASCII).
# A rule is not run on a text that holds none of its literals.
HOST_PATH_NEEDS: list[tuple[tuple[str, ...], bool]] = [
    (("file:", "file%3a"), True),
    (("smb:", "cifs:", "afp:", "nfs:"), True),
    (("srv",), False),
    (("users", "documents and settings", "home"), True),
    (("home", "users", *_then_separator("user")), True),
    (("/root", "froot", "Froot", ";root"), False),  # after a separator's last character
    (("wsl",), True),
    (("Volumes", "mnt", "cygdrive", "media", *_then_separator("run", "net", "afs")), False),
    (("\\\\", "%5c", "%255c", "u005c"), True),
    (("~",), False),
    (("~",), False),
    (("folders",), False),
    (("tmp",), False),
]


def _needs_automaton() -> ahocorasick.Automaton:
    """Every rule's literals, lower-cased, each with the indices of the rules that need it."""
    by_literal: dict[str, set[int]] = {}
    for i, (needs, _) in enumerate(HOST_PATH_NEEDS):
        for n in needs:
            by_literal.setdefault(n.lower(), set()).add(i)
    automaton = ahocorasick.Automaton()
    for literal, rules in by_literal.items():
        automaton.add_word(literal, frozenset(rules))
    automaton.make_automaton()
    return automaton


_NEEDS = _needs_automaton()


def host_path_rules_for(text: str) -> Iterator[tuple[re.Pattern[str], str]]:
    """The rules of :data:`HOST_PATH_RULES` that can match ``text`` (in order): none without
    a separator or a tilde, and none whose literals ``text`` does not hold.  An ASCII text
    is lower-cased and walked once for every rule's literals (a case-sensitive rule may then
    run on a text that holds its literal in another case: its regex decides)."""
    if not _PATH_HINT.search(text):
        return
    if text.isascii():
        found: set[int] = set()
        for _, rules in _NEEDS.iter(text.lower()):
            found |= rules
        for i, rule in enumerate(HOST_PATH_RULES):
            if i in found:
                yield rule
        return
    for rule, (needs, fold) in zip(HOST_PATH_RULES, HOST_PATH_NEEDS, strict=True):
        if fold or any(n in text for n in needs):  # the regex folds more than ASCII
            yield rule


def strip_host_paths(text: str, stats: CleanStats | None = None) -> str:
    out = text
    for pattern, placeholder in host_path_rules_for(text):
        # a rule's literals are looked for in the text it is given: the one the rules
        # before it left (a placeholder never brings a literal a later rule needs)
        out, n = pattern.subn(placeholder, out)
        if n and stats is not None:
            stats.host_paths[placeholder] += n
    return out


_KEEP = object()
_MARKERS = ("[REDACTED", "***REDACTED***", "<XXX-benchflow-key-values-XXX>")
CACHE_MIN_CHARS = 256  # shorter strings go through the process-wide cache below
SHORT_CACHE_ENTRIES = 1 << 13  # recurring strings stay (LRU); one-off ones pass through
CACHE_MAX_ENTRIES = 20_000
CACHE_MAX_CHARS = 8 << 20  # cleaned text a Cleaner keeps, in all
ITEM_MEMO_BYTES = 8 << 20  # JSON bytes of the list-item objects a CleanedItems holds, in all
ITEM_MEMO_MAX_ENTRY = 256 * 1024  # a larger object is walked every time (it rarely repeats)
ITEM_MEMO_DEPTH = 32  # list-item objects nested deeper are walked in place

OnKey = Callable[[dict[str, Any], str, Any], tuple[bool, Any]]


def _walk(
    value: Any,
    on_key: OnKey,
    on_str: Callable[[str], str],
    drop_item: Callable[[Any], bool] | None = None,
    on_item: Callable[[dict[Any, Any]], Any] | None = None,
) -> Any:
    """Copy ``value``; ``on_key(parent, k, v)`` → ``(keep, replacement or _KEEP)``; strings
    (keys included) mapped; list items for which ``drop_item`` is true left out; a kept list
    item that is a ``dict`` copied by ``on_item`` when given.  One loop over one stack of
    ``(source, copy it goes into, slot)``: no recursion, no callable a container."""
    if isinstance(value, str):
        return on_str(value)
    if not isinstance(value, dict | list):
        return value
    root: list[Any] = [None]
    stack: list[tuple[Any, Any, Any]] = [(value, root, 0)]
    pop, push = stack.pop, stack.append
    while stack:
        src, into, slot = pop()
        if isinstance(src, dict):
            dst: dict[Any, Any] = {}
            into[slot] = dst
            for k, v in src.items():
                keep, repl = on_key(src, k, v)
                if not keep:
                    continue
                nk = on_str(k) if isinstance(k, str) else k
                if repl is not _KEEP:
                    dst[nk] = repl
                elif isinstance(v, dict | list):
                    dst[nk] = None
                    push((v, dst, nk))
                else:
                    dst[nk] = on_str(v) if isinstance(v, str) else v
        else:
            items = [v for v in src if not drop_item(v)] if drop_item is not None else src
            lst: list[Any] = [None] * len(items)
            into[slot] = lst
            for i, v in enumerate(items):
                if on_item is not None and type(v) is dict:
                    lst[i] = on_item(v)
                elif isinstance(v, dict | list):
                    push((v, lst, i))
                else:
                    lst[i] = on_str(v) if isinstance(v, str) else v
    return root[0]


def _is_abs_path(v: Any) -> bool:
    return isinstance(v, str) and (v.startswith(("/", "~")) or bool(re.match(r"[A-Za-z]:\\", v)))


def text_key(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def redact_text_stable(text: str, counts: Counter[str]) -> str:
    """Redact one string until a pass changes nothing (unchanged strings take one pass)."""
    out = redact_text(text, counts)
    if out == text:
        return out
    for _ in range(MAX_REDACTION_PASSES - 1):
        more: Counter[str] = Counter()
        again = redact_text(out, more)
        if again == out:
            return out
        counts.update(more)
        out = again
    raise CleaningError(f"redaction did not settle after {MAX_REDACTION_PASSES} passes")


_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.S)


def _odd_backslashes_before(text: str, i: int, floor: int) -> bool:
    """Whether ``text[i]`` is escaped: an odd run of backslashes ends just before it."""
    j = i
    while j > floor and text[j - 1] == "\\":
        j -= 1
    return (i - j) % 2 == 1


def _escape_at(text: str, i: int, floor: int) -> int:
    """The length of the JSON escape starting at ``i`` (0: none starts there)."""
    if text[i] != "\\" or _odd_backslashes_before(text, i, floor) or i + 1 >= len(text):
        return 0
    return 6 if text[i + 1] == "u" else 2


def _escape_covering(text: str, pos: int, floor: int) -> tuple[int, int] | None:
    """The escape sequence ``pos`` lies strictly inside (after its first character), if any."""
    for j in range(max(floor, pos - 5), pos):
        n = _escape_at(text, j, floor)
        if n and j < pos < j + n:
            return j, j + n
    return None


def json_text_spans(text: str, spans: list[Span]) -> list[Span]:
    """``spans`` of a serialized JSON document cut to the inside of the string literals they
    touch and widened to whole escape sequences, so a placeholder never splits an escape or
    a quote and the document still parses; a span outside every string is dropped."""
    if not spans:
        return []
    literals = [(m.start() + 1, m.end() - 1) for m in _JSON_STRING.finditer(text)]
    starts = [a for a, _ in literals]
    out: list[Span] = []
    for s, e, prio, kind in spans:
        k = max(0, bisect.bisect_right(starts, s) - 1)
        while k < len(literals) and literals[k][0] < e:
            ls, le = literals[k]
            k += 1
            a, b = max(s, ls), min(e, le)
            if a >= b:
                continue
            inside = _escape_covering(text, a, ls)
            if inside is not None:
                a = inside[0]
            inside = _escape_covering(text, b, ls)
            if inside is not None:
                b = inside[1]
            out.append((a, min(b, le), prio, kind))
    return merge_spans(out) if out else out


def redact_json_text_stable(text: str, counts: Counter[str]) -> str:
    """:func:`redact_text_stable` for a serialized JSON document: what the rules find across
    its strings (a flag and its value in an argument list) is redacted inside the string
    literals only, so the document stays valid JSON."""
    out = text
    for _ in range(MAX_REDACTION_PASSES):
        spans = json_text_spans(out, secret_spans(out))
        parts, last = [], 0
        found: Counter[str] = Counter()
        for s, e, _, kind in spans:
            parts.append(out[last:s])
            parts.append(PLACEHOLDER.format(kind=kind))
            last = e
            found[kind] += 1
        parts.append(out[last:])
        again = "".join(parts)
        if again == out:  # nothing found, or only placeholders found again
            return out
        counts.update(found)
        out = again
    raise CleaningError(f"redaction did not settle after {MAX_REDACTION_PASSES} passes")


# --------------------------------------------------------------------------- JSON in text

_CONTAINER = re.compile(r"\A\s*(?:\{[\s\S]*\}|\[[\s\S]*\])\s*\Z")
_SENSITIVE_KEYS = sorted(BANNED_KEYS | set(REASONING_KEYS) | {"thinking", "reasoning", "thought"})
# a sensitive key written as a JSON/Python key (plain or escaped quotes)
_SENSITIVE_QUOTED = re.compile(
    r"(\\*[\"'])(?:" + "|".join(re.escape(k) for k in _SENSITIVE_KEYS) + r")\1\s*:"
)
# textual fallback: banned and unambiguous reasoning keys whose value is not valid JSON
_CUT_KEYS = sorted(BANNED_KEYS | set(REASONING_KEYS))
_CUT = re.compile(
    r"(?P<q>\\*[\"'])(?P<key>" + "|".join(re.escape(k) for k in _CUT_KEYS) + r")(?P=q)\s*:\s*"
    r"(?:(?P=q)(?:(?!(?P=q)).)*(?P=q)|\{[^{}\n]*\}|\[[^\[\]\n]*\]|[^,}\]\n]*)"
)
_DECODER = json.JSONDecoder()


def _dumps_like(original: str, value: Any) -> str:
    """``value`` as JSON in roughly the layout of ``original`` (compact, spaced, indented)."""
    if "\n" in original.strip():
        return json.dumps(value, ensure_ascii=False, indent=2)
    if '": ' in original or '", ' in original:
        return json.dumps(value, ensure_ascii=False)
    return orjson.dumps(value).decode()


def parse_json_string(text: str) -> Any:
    """The value of a string that holds a JSON object or array, else ``None`` (the cleaner
    and the publish scan both look inside such strings)."""
    if len(text) < 2 or text[0] not in "{[ \t\r\n" or not _CONTAINER.match(text):
        return None
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        return None
    return value if isinstance(value, dict | list) else None


def _parse_container(text: str) -> Any:
    value = parse_json_string(text)
    return _KEEP if value is None else value


def _embedded(text: str, stats: CleanStats) -> str:
    """Clean the JSON objects embedded in free text that carry a sensitive key; cut what is
    left of banned and reasoning keys that do not parse."""
    if not _SENSITIVE_QUOTED.search(text):
        return text
    parts: list[str] = []
    last = i = 0
    tries = 0
    while tries < 10_000:
        i = text.find("{", i)
        if i < 0:
            break
        tries += 1
        try:
            value, end = _DECODER.raw_decode(text, i)
        except ValueError:
            i += 1
            continue
        chunk = text[i:end]
        if _SENSITIVE_QUOTED.search(chunk):
            cleaned = Cleaner(stats).value(value)
            if cleaned != value:
                parts.append(text[last:i])
                parts.append(_dumps_like(chunk, cleaned))
                last = end
        i = end
    out = "".join(parts) + text[last:] if parts else text

    def cut(m: re.Match[str]) -> str:
        key = m.group("key")
        if key in BANNED_KEYS:
            stats.banned_keys[banned_category(key)] += 1
        else:
            stats.reasoning[REASONING_KEYS[key]] += 1
        q = m.group("q")
        return f"{q}removed{q}: null"

    return _CUT.sub(cut, out)


# What cleaning a string that needed nothing counts: one shared object (the caches below
# keep a result per distinct string; callers only read the counts).
_NO_CHANGE = CleanStats()


# Empty counts to count a string's cleaning into: most strings need nothing, and four new
# Counters a string would cost more than cleaning a short one.  A string that counted
# something keeps its counts (they are its result); an empty one goes back here.  (A list's
# pop and append are atomic: each spare has one user at a time, nested cleaning included.)
_SPARE: list[CleanStats] = []


def _clean_string(text: str) -> tuple[str, CleanStats]:
    """One string cleaned: as a JSON document when it is one, then as text."""
    delta = _SPARE.pop() if _SPARE else CleanStats()
    out = text
    parsed = _parse_container(text)
    if parsed is not _KEEP:
        cleaned = Cleaner(delta).value(parsed)
        if cleaned != parsed:
            out = _dumps_like(text, cleaned)
    out = strip_inline_reasoning(out, delta.reasoning)
    if parsed is _KEEP:
        out = redact_text_stable(out, delta.redactions)
    else:
        out = redact_json_text_stable(out, delta.redactions)
    out = strip_host_paths(out, delta)
    if parsed is _KEEP:
        out = _embedded(out, delta)
    if delta.empty():
        _SPARE.append(delta)
        return out, _NO_CHANGE
    return out, delta


def clean_text(text: str) -> tuple[str, Counter[str], Counter[str]]:
    """One string cleaned, with the counts of redactions (per kind) and host paths (per
    placeholder)."""
    out, delta = _clean_short(text)
    return out, delta.redactions, delta.host_paths


# Short strings (job keys, rollout names, outcomes, exclusion reasons…) recur across rows,
# trials, the card and the manifest of a release: each is cleaned once per process.  The
# stats of a cached result are shared: callers only read them.
_clean_short = functools.lru_cache(maxsize=SHORT_CACHE_ENTRIES)(_clean_string)


class CleanedTexts:
    """Long strings' cleaning results ``(cleaned, counts)`` by content digest, the least
    recently used dropped past ``max_entries`` or ``max_chars`` of cleaned text.

    One per :class:`Cleaner` by default; a release's curation shares one across its trials,
    whose rows repeat the harness's system prompt, tool definitions and the task's
    instruction.  Exact: a string's result depends on the string alone.
    """

    __slots__ = ("entries", "chars", "max_entries", "max_chars", "hits")

    def __init__(self, max_entries: int | None = None, max_chars: int | None = None) -> None:
        self.entries: OrderedDict[bytes, tuple[str, CleanStats]] = OrderedDict()
        self.chars = 0
        self.max_entries = CACHE_MAX_ENTRIES if max_entries is None else max_entries
        self.max_chars = CACHE_MAX_CHARS if max_chars is None else max_chars
        self.hits = 0

    def get(self, key: bytes) -> tuple[str, CleanStats] | None:
        hit = self.entries.get(key)
        if hit is not None:
            self.entries.move_to_end(key)
            self.hits += 1
        return hit

    def put(self, key: bytes, result: tuple[str, CleanStats]) -> None:
        size = len(result[0])
        if size > self.max_chars:
            return
        entries = self.entries
        while entries and (len(entries) >= self.max_entries or self.chars + size > self.max_chars):
            self.chars -= len(entries.popitem(last=False)[1][0])
        entries[key] = result
        self.chars += size


class CleanedItems(CountingMemo):
    """Cleaned copies of the objects that were list items, with what cleaning them counted,
    by a digest of their JSON bytes (:func:`bf_assets.redact.scan_memo.json_digest`): a
    trial's steps each repeat the conversation so far, so each message would otherwise be
    walked once per later step.  Exact: an object that is a list item is cleaned the same
    wherever it is (its keys' rules look only at it), and two values of JSON types with the
    same bytes are equal.  Bounded by the JSON bytes of what it holds; past
    ``max_bytes`` it starts afresh.  The copies are shared: whoever receives one only reads
    it."""

    __slots__ = ()

    def __init__(self, max_bytes: int | None = None) -> None:
        bound = ITEM_MEMO_BYTES if max_bytes is None else max_bytes
        super().__init__(bound, bound)


class Cleaner:
    """Cleans values for one trial, with a cache of cleaned strings.

    A long trial repeats its history in every step's prompt, so the same tool output is seen
    many times: each distinct string is cleaned once, and the counts of the cached result are
    replayed for every occurrence.  ``texts`` shares that cache between cleaners (bounded).
    With ``items`` (only for values of JSON types: parsed JSON), a repeated object that is a
    list item is walked once too.
    """

    def __init__(
        self,
        stats: CleanStats | None = None,
        texts: CleanedTexts | None = None,
        items: CleanedItems | None = None,
    ) -> None:
        self.stats = stats if stats is not None else CleanStats()
        self.texts = texts if texts is not None else CleanedTexts()
        self.items = items
        self._depth = 0  # list-item objects being cleaned through ``items``, nested

    def _clean_text(self, text: str) -> tuple[str, CleanStats]:
        return _clean_string(text)

    def text(self, text: str) -> str:
        if len(text) < CACHE_MIN_CHARS:
            out, delta = _clean_short(text)
        else:
            key = text_key(text)
            hit = self.texts.get(key)
            if hit is None:
                hit = self._clean_text(text)
                self.texts.put(key, hit)
            out, delta = hit
        if delta is not _NO_CHANGE and not delta.empty():
            self.stats.add(delta)
        return out

    def _drop_item(self, v: Any) -> bool:
        kind = reasoning_kind(v)
        if kind is not None:
            self.stats.reasoning[kind] += 1
            return True
        return False

    def _on_key(self, parent: dict[str, Any], k: str, v: Any) -> tuple[bool, Any]:
        if not isinstance(k, str):
            facts = KeyRules(k in BANNED_KEYS, False, k in HOST_PATH_KEYS, False, False)
        else:
            facts = key_rules(k)
        if facts.banned:
            self.stats.banned_keys[banned_category(k)] += 1
            return False, None
        # only a reasoning name or a dict value can be private reasoning
        maybe = facts.reasoning or isinstance(v, dict)
        if maybe and isinstance(k, str) and (kind := reasoning_key_kind(parent, k, v)):
            self.stats.reasoning[kind] += 1
            return False, None
        if facts.host_path_key and _is_abs_path(v):
            self.stats.host_paths[HOST_PATH_PLACEHOLDER] += 1
            return True, HOST_PATH_PLACEHOLDER
        if isinstance(k, str) and isinstance(v, str) and v and secret_named(k, v):
            if v.startswith(_MARKERS) or is_marker(v):
                return True, v
            self.stats.redactions["secret_field"] += 1
            return True, PLACEHOLDER.format(kind="secret_field")
        return True, _KEEP

    def value(self, value: Any) -> Any:
        """Banned keys and private reasoning dropped, secret-named fields masked, every
        string (keys too) redacted to stability and stripped of host paths."""
        on_item = self._item if self.items is not None else None
        return _walk(value, self._on_key, self.text, self._drop_item, on_item)

    def _item(self, v: dict[Any, Any]) -> Any:
        """A list item that is an object, cleaned once per distinct object (``items``).
        Nested items below :data:`ITEM_MEMO_DEPTH` are walked in place (the walk is
        iterative; this is the only recursion)."""
        assert self.items is not None
        if self._depth >= ITEM_MEMO_DEPTH:
            return _walk(v, self._on_key, self.text, self._drop_item)
        found = json_digest(v, ITEM_MEMO_MAX_ENTRY)
        if found is not None:
            hit = self.items.get(found[0])
            if hit is not None:
                return self.replayed(hit)
        self._depth += 1
        try:
            cleaned, counted = self.counted_apart(
                lambda: _walk(v, self._on_key, self.text, self._drop_item, self._item)
            )
        finally:
            self._depth -= 1
        if found is not None:
            self.items.put(found[0], (cleaned, counted), found[1])
        return cleaned

    def replayed(self, remembered: tuple[Any, CleanStats | None]) -> Any:
        """A remembered ``(cleaned, counted)`` (:meth:`counted_apart`): its counts counted
        again into :attr:`stats`, its cleaned value returned."""
        cleaned, counted = remembered
        if counted is not None:
            self.stats.add(counted)
        return cleaned

    def counted_apart(self, clean: Callable[[], Any]) -> tuple[Any, CleanStats | None]:
        """``clean()``'s result and what it counted (None: nothing), counted into
        :attr:`stats` too: what a remembered result replays for each later copy."""
        outer, self.stats = self.stats, _SPARE.pop() if _SPARE else CleanStats()
        try:
            cleaned = clean()
        finally:
            counted, self.stats = self.stats, outer
        if counted.empty():
            _SPARE.append(counted)
            return cleaned, None
        outer.add(counted)
        return cleaned, counted


# detect-secrets-style key words: a value under a key holding one of them, that starts like
# a word, is a secret (``secret_name``, ``db_password_prod``)
_SECRET_WORD = re.compile(
    r"(?i)(?:api_?key|auth_?key|service_?key|account_?key|db_?key|database_?key|priv_?key|"
    r"private_?key|client_?key|db_?pass|database_?pass|key_?pass|password|passwd|pwd|secret|"
    r"contrase(?:\u00f1|n)a)"
)


_WORD_START = re.compile(r"\w")


def secret_named(key: str, value: str) -> bool:
    """True when ``value`` under ``key`` is a secret by the key's name alone."""
    rules = key_rules(key)
    return rules.secret_key or (rules.secret_word and bool(_WORD_START.match(value)))


class KeyRules(NamedTuple):
    """What the key rules (the cleaner's and the publish scan's) make of a key's name alone."""

    banned: bool
    reasoning: bool  # a name private reasoning goes under (the parent and value decide)
    host_path_key: bool
    secret_key: bool  # its value is a secret whatever it is
    secret_word: bool  # its value is a secret when it starts like a word


def _key_rules_of(key: str) -> KeyRules:
    return KeyRules(
        key in BANNED_KEYS,
        key in REASONING_KEYS or key in MESSAGE_REASONING_KEYS,
        key in HOST_PATH_KEYS,
        is_secret_key(key),
        bool(_SECRET_WORD.search(key)),
    )


# Keys recur in every value cleaned and scanned: each short one is looked at once a process.
_short_key_rules = functools.lru_cache(maxsize=SHORT_CACHE_ENTRIES)(_key_rules_of)


def key_rules(key: str) -> KeyRules:
    """:class:`KeyRules` of ``key`` (kept for short keys)."""
    return _short_key_rules(key) if len(key) < CACHE_MIN_CHARS else _key_rules_of(key)


def clean_value(value: Any, stats: CleanStats | None = None) -> Any:
    """:meth:`Cleaner.value` with a fresh cache."""
    return Cleaner(stats).value(value)


def clean_document(text: str, stats: CleanStats | None = None) -> str:
    """A whole text file or JSON document (card, manifest, report) cleaned for publishing:
    a JSON document is parsed and cleaned as a value (keys and nested JSON strings included)
    and serialized in its layout; any other text is cleaned as one string (secrets, host
    paths, embedded JSON with banned or reasoning keys)."""
    st = stats if stats is not None else CleanStats()
    out, delta = _clean_string(text)
    st.add(delta)
    return out
