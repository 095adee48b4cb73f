"""Tokens, timing and the file list of a trial, for its page.

Tokens and timing come from ``result.json`` (read whole only up to ``DOC_MAX``), whichever
layout wrote it: production (``agent_result``, ``timing``), flat (``token_usage``,
``timing``) or Harbor (``agent_result.n_*``, per-phase ``started_at`` / ``finished_at``).
The file list is a bounded walk of the trial directory that follows no link.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from typing import Any

from bf_assets.ingest.readers import ReadLimits, read_document

MiB = 1024 * 1024
DOC_MAX = 8 * MiB
MAX_FILES = 200
MAX_DEPTH = 5

TOKEN_KEYS = (
    ("agent_result", "n_input_tokens", "input tokens"),
    ("agent_result", "n_output_tokens", "output tokens"),
    ("agent_result", "n_cache_read_tokens", "cache read tokens"),
    ("agent_result", "n_cache_creation_tokens", "cache creation tokens"),
    ("agent_result", "n_cache_tokens", "cache tokens"),
    ("agent_result", "total_tokens", "total tokens"),
    ("agent_result", "cost_usd", "cost (USD)"),
    ("agent_result", "usage_source", "usage source"),
    ("token_usage", "input_tokens", "input tokens"),
    ("token_usage", "output_tokens", "output tokens"),
    ("", "n_tool_calls", "tool calls"),
    ("", "n_skill_invocations", "skill invocations"),
    ("", "n_prompts", "prompts"),
)
TIME_KEYS = ("started_at", "finished_at")
HARBOR_PHASES = ("environment_setup", "agent_setup", "agent_execution", "verifier")


@dataclass(slots=True)
class Facts:
    tokens: list[tuple[str, str]] = field(default_factory=list)
    timing: list[tuple[str, str]] = field(default_factory=list)
    problem: str | None = None


def _show(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:g}"
    return str(v)


def trial_facts(trial_dir: str, root: str) -> Facts:
    facts = Facts()
    doc = read_document(
        os.path.join(trial_dir, "result.json"), root, ReadLimits(max_document_bytes=DOC_MAX)
    )
    if not doc.ok or not isinstance(doc.value, dict):
        facts.problem = (
            doc.issues[0].message if doc.issues else "result.json is absent: no tokens or timing"
        )
        return facts
    r: dict[str, Any] = doc.value
    for parent, key, label in TOKEN_KEYS:
        holder = r.get(parent) if parent else r
        if isinstance(holder, dict) and holder.get(key) is not None:
            facts.tokens.append((label, _show(holder[key])))
    timing = r.get("timing")
    for key in TIME_KEYS:
        if r.get(key) is not None:
            facts.timing.append((key.replace("_", " "), _show(r[key])))
    if isinstance(timing, dict):
        for k, v in timing.items():
            if isinstance(v, int | float) and not isinstance(v, bool):
                facts.timing.append((f"{k.replace('_', ' ')} (s)", _show(v)))
            elif isinstance(v, str):
                facts.timing.append((k.replace("_", " "), v))
    for phase in HARBOR_PHASES:
        span = r.get(phase)
        if isinstance(span, dict) and span.get("started_at") and span.get("finished_at"):
            facts.timing.append(
                (phase.replace("_", " "), f"{span['started_at']} → {span['finished_at']}")
            )
    return facts


def list_files(trial_dir: str) -> tuple[list[tuple[str, int | None, str]], int]:
    """``[(path, size, kind)]`` under the trial (kind: file, dir, link, special) and how many
    entries were left out past ``MAX_FILES``."""
    out: list[tuple[str, int | None, str]] = []
    more = 0
    stack: list[tuple[str, int]] = [("", 0)]
    while stack:
        rel, depth = stack.pop()
        try:
            with os.scandir(os.path.join(trial_dir, rel) if rel else trial_dir) as it:
                entries = sorted(it, key=lambda e: e.name, reverse=True)
        except OSError:
            continue
        for e in entries:
            path = f"{rel}/{e.name}" if rel else e.name
            try:
                st = e.stat(follow_symlinks=False)
            except OSError:
                continue
            if len(out) >= MAX_FILES:
                more += 1
                continue
            if stat.S_ISLNK(st.st_mode):
                out.append((path, None, "link"))
            elif stat.S_ISDIR(st.st_mode):
                out.append((path + "/", None, "dir"))
                if depth + 1 < MAX_DEPTH:
                    stack.append((path, depth + 1))
            elif stat.S_ISREG(st.st_mode):
                out.append((path, st.st_size, "file"))
            else:
                out.append((path, None, "special"))
    return sorted(out), more
