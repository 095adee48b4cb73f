"""Cleaning export values: banned keys out, secrets redacted, host paths replaced.

Everything works on parsed values (never on serialized JSON) and walks iteratively, so a
deep step never hits Python's recursion limit.  :func:`clean_value` does, in order:

1. drop every banned key (``contract.BANNED_MESSAGE_KEYS`` plus verifier-only keys) at any
   depth, and replace the value of host-path keys (``rollout_dir``, ``effective_skills_dir``,
   …) with ``<HOST_PATH>``;
2. redact secrets with :func:`bf_assets.redact.redact_value`, repeated until a pass changes
   nothing (at most 16 passes; never settling is an error);
3. rewrite absolute host paths inside strings to placeholders.

The counts of everything done are kept in a :class:`CleanStats` for the card and manifest.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from bf_assets.contract import BANNED_MESSAGE_KEYS
from bf_assets.redact import redact_value

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
    banned_keys: Counter[str] = field(default_factory=Counter)  # per key name

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

    def to_dict(self) -> dict[str, dict[str, int]]:
        return {
            "redactions": dict(sorted(self.redactions.items())),
            "host_paths": dict(sorted(self.host_paths.items())),
            "banned_keys": dict(sorted(self.banned_keys.items())),
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


def _walk(value: Any, on_key: Callable[[str, Any], tuple[bool, Any]], on_str: Callable[[str], str]) -> Any:
    """Copy ``value``; ``on_key(k, v)`` → ``(keep, replacement-or-sentinel)``; strings mapped."""
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


def _is_abs_path(v: Any) -> bool:
    return isinstance(v, str) and (v.startswith(("/", "~")) or bool(re.match(r"[A-Za-z]:\\", v)))


def drop_banned_keys(value: Any, stats: CleanStats | None = None) -> Any:
    def on_key(k: str, v: Any) -> tuple[bool, Any]:
        if k in BANNED_KEYS:
            if stats is not None:
                stats.banned_keys[k] += 1
            return False, None
        if k in HOST_PATH_KEYS and _is_abs_path(v):
            if stats is not None:
                stats.host_paths[HOST_PATH_PLACEHOLDER] += 1
            return True, HOST_PATH_PLACEHOLDER
        return True, _KEEP

    return _walk(value, on_key, lambda s: s)


def redact_stable(value: Any, stats: CleanStats | None = None) -> Any:
    """Redact until a pass changes nothing; raise :class:`CleaningError` if it never settles.

    Settling is judged by the value, not by the pass's counts: a placeholder under a
    secret-named key is counted again by every pass although nothing changes.
    """
    counts: Counter[str] = Counter()
    out = redact_value(value, counts)
    if stats is not None:
        stats.redactions.update(counts)
    for _ in range(MAX_REDACTION_PASSES - 1):
        counts = Counter()
        again = redact_value(out, counts)
        if again == out:
            return out
        if stats is not None:
            stats.redactions.update(counts)
        out = again
    raise CleaningError(f"redaction did not settle after {MAX_REDACTION_PASSES} passes")


def clean_value(value: Any, stats: CleanStats | None = None) -> Any:
    """Banned keys dropped, secrets redacted to stability, host paths replaced."""
    out = drop_banned_keys(value, stats)
    out = redact_stable(out, stats)
    return _walk(out, lambda k, v: (True, _KEEP), lambda s: strip_host_paths(s, stats))
