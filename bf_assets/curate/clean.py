"""Cleaning export values: banned keys out, secrets redacted, host paths replaced.

Everything works on parsed values (never on serialized JSON) and walks iteratively, so a
deep step never hits Python's recursion limit.  :func:`clean_value` does, in order:

1. drop every banned key (``contract.BANNED_MESSAGE_KEYS`` plus verifier-only keys) at any
   depth, and replace the value of host-path keys (``rollout_dir``, ``effective_skills_dir``,
   …) with ``<HOST_PATH>``;
2. redact secrets with the patterns of :mod:`bf_assets.redact` (``redact_text``; values under
   secret-named keys are masked whatever they hold), repeated until a pass changes nothing
   (at most 16 passes; never settling is an error);
3. rewrite absolute host paths inside strings to placeholders.

The counts of everything done are kept in a :class:`CleanStats` for the card and manifest.
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from bf_assets.contract import BANNED_MESSAGE_KEYS
from bf_assets.redact import PLACEHOLDER, is_secret_key, redact_text

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

_B = r"(?<![\w/.~<>-])"  # a path starts at a boundary (not inside a relative path or a word)
_USER = r"[A-Za-z0-9._-]{1,64}"
# (compiled pattern, replacement): applied in order.
HOST_PATH_RULES: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"(?i)\bfile://[^\s\"'<>)\]}]*"), "<FILE_URI>"),
    (re.compile(_B + r"/srv/bench(?=[/\s\"'),:;\]}]|$)"), "<BENCH_ROOT>"),
    (re.compile(_B + r"/(?:home|Users)/" + _USER + r"(?=[/\s\"'),:;\]}]|$)"), "<HOME>"),
    (re.compile(r"(?i)(?<![\w])[A-Z]:\\Users\\[^\\\s\"']{1,64}"), "<HOME>"),
    (
        re.compile(_B + r"/(?:private/)?var/folders/[A-Za-z0-9_+-]{1,64}/[A-Za-z0-9_+-]{1,64}"),
        "<TMP>",
    ),
    (re.compile(_B + r"/(?:private/)?(?:var/)?tmp(?=[/\s\"'),:;\]}]|$)"), "<TMP>"),
]


@dataclass(slots=True)
class CleanStats:
    redactions: Counter[str] = field(default_factory=Counter)  # per secret kind
    host_paths: Counter[str] = field(default_factory=Counter)  # per placeholder
    banned_keys: Counter[str] = field(default_factory=Counter)  # per category of key

    def add(self, other: CleanStats) -> None:
        self.redactions.update(other.redactions)
        self.host_paths.update(other.host_paths)
        self.banned_keys.update(other.banned_keys)

    @property
    def n_redactions(self) -> int:
        return sum(self.redactions.values())

    @property
    def n_host_paths(self) -> int:
        return sum(self.host_paths.values())

    def to_dict(self) -> dict[str, list[dict[str, Any]]]:
        """``{what: [{kind, count}, ...]}``: kinds are values, never keys (a banned key name
        must not appear as a key of a published document)."""
        return {
            what: [{"kind": k, "count": n} for k, n in sorted(counter.items())]
            for what, counter in (
                ("redactions", self.redactions),
                ("host_paths", self.host_paths),
                ("banned_keys", self.banned_keys),
            )
        }


class CleaningError(ValueError):
    """Redaction never settled: the value keeps producing new matches."""


def strip_host_paths(text: str, stats: CleanStats | None = None) -> str:
    out = text
    for pattern, placeholder in HOST_PATH_RULES:
        out, n = pattern.subn(placeholder, out)
        if n and stats is not None:
            stats.host_paths[placeholder] += n
    return out


def _walk(
    value: Any, on_key: Callable[[str, Any], tuple[bool, Any]], on_str: Callable[[str], str]
) -> Any:
    """Copy ``value``; ``on_key(k, v)`` → ``(keep, replacement or _KEEP)``; strings mapped."""
    if isinstance(value, str):
        return on_str(value)
    if not isinstance(value, dict | list):
        return value
    root: list[Any] = [None]
    stack: list[tuple[Any, Callable[[Any], None]]] = [(value, lambda v: root.__setitem__(0, v))]
    while stack:
        src, put = stack.pop()
        if isinstance(src, dict):
            dst: dict[str, Any] = {}
            put(dst)
            for k, v in src.items():
                keep, repl = on_key(k, v)
                if not keep:
                    continue
                if repl is not _KEEP:
                    dst[k] = repl
                elif isinstance(v, dict | list):
                    dst[k] = None
                    stack.append((v, lambda x, d=dst, key=k: d.__setitem__(key, x)))
                else:
                    dst[k] = on_str(v) if isinstance(v, str) else v
        else:
            lst: list[Any] = [None] * len(src)
            put(lst)
            for i, v in enumerate(src):
                if isinstance(v, dict | list):
                    stack.append((v, lambda x, li=lst, idx=i: li.__setitem__(idx, x)))
                else:
                    lst[i] = on_str(v) if isinstance(v, str) else v
    return root[0]


_KEEP = object()
_MARKERS = ("[REDACTED", "***REDACTED***", "<XXX-benchflow-key-values-XXX>")
CACHE_MIN_CHARS = 256  # shorter strings go through the process-wide cache below
SHORT_CACHE_ENTRIES = 1 << 15
CACHE_MAX_ENTRIES = 100_000


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


def clean_text(text: str) -> tuple[str, Counter[str], Counter[str]]:
    """One string redacted to stability and stripped of host paths, with the counts of
    redactions (per kind) and host paths (per placeholder)."""
    red: Counter[str] = Counter()
    out = redact_text_stable(text, red)
    paths = CleanStats()
    out = strip_host_paths(out, paths)
    return out, red, paths.host_paths


# Short strings (job keys, rollout names, outcomes, exclusion reasons…) recur across rows,
# trials, the card and the manifest of a release: each is cleaned once per process.  The
# counters of a cached result are shared: callers only read them.
_clean_short = functools.lru_cache(maxsize=SHORT_CACHE_ENTRIES)(clean_text)


class Cleaner:
    """Cleans values for one trial, with a cache of cleaned strings.

    A long trial repeats its history in every step's prompt, so the same tool output is seen
    many times: each distinct string is redacted and path-stripped once, and the counts of
    the cached result are replayed for every occurrence.
    """

    def __init__(self, stats: CleanStats | None = None) -> None:
        self.stats = stats if stats is not None else CleanStats()
        self._cache: dict[bytes, tuple[str, Counter[str], Counter[str]]] = {}

    def _clean_text(self, text: str) -> tuple[str, Counter[str], Counter[str]]:
        return clean_text(text)

    def text(self, text: str) -> str:
        if len(text) < CACHE_MIN_CHARS:
            out, red, paths = _clean_short(text)
        else:
            key = text_key(text)
            hit = self._cache.get(key)
            if hit is None:
                if len(self._cache) >= CACHE_MAX_ENTRIES:
                    self._cache.clear()
                hit = self._cache[key] = self._clean_text(text)
            out, red, paths = hit
        self.stats.redactions.update(red)
        self.stats.host_paths.update(paths)
        return out

    def _on_key(self, k: str, v: Any) -> tuple[bool, Any]:
        if k in BANNED_KEYS:
            self.stats.banned_keys[banned_category(k)] += 1
            return False, None
        if k in HOST_PATH_KEYS and _is_abs_path(v):
            self.stats.host_paths[HOST_PATH_PLACEHOLDER] += 1
            return True, HOST_PATH_PLACEHOLDER
        if isinstance(k, str) and is_secret_key(k) and isinstance(v, str) and v:
            if v.startswith(_MARKERS):
                return True, v
            self.stats.redactions["secret_field"] += 1
            return True, PLACEHOLDER.format(kind="secret_field")
        return True, _KEEP

    def value(self, value: Any) -> Any:
        """Banned keys dropped, secret-named fields masked, every string redacted to
        stability and stripped of host paths."""
        return _walk(value, self._on_key, self.text)


def clean_value(value: Any, stats: CleanStats | None = None) -> Any:
    """:meth:`Cleaner.value` with a fresh cache."""
    return Cleaner(stats).value(value)


def redact_stable(value: Any, stats: CleanStats | None = None) -> Any:
    """Only the redaction part of :func:`clean_value` (no key or path rules)."""
    counts: Counter[str] = Counter()
    out = _walk(value, lambda k, v: (True, _KEEP), lambda t: redact_text_stable(t, counts))
    if stats is not None:
        stats.redactions.update(counts)
    return out
