"""The line and key a finding on a JSON document cites.

Checks say what they found; this module says where, once for every finding of a trial
(:func:`locate_findings`): a finding on one of the trial's JSON documents (``result.json``,
``config.json``, ``run_config.json``, ``prompts.json``, the upstream files) that has no line
gets the line of the key it is about (by its check id and the layout's field names, or a
``result.<key>`` / ``config.<key>`` its message names) and, without evidence of its own, an
excerpt ``<key path> = <value>``.  A finding about the document as a whole (unparsable, not
an object) cites line 1.  Lines come from :func:`bf_assets.ingest.jsonpos.key_line` over the
small document's bytes kept at read time; nothing is read again.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import replace

from bf_assets.findings import Finding, clip, sort_findings
from bf_assets.gate.view import ResultView
from bf_assets.ingest.jsonpos import has_key, key_line, value_at
from bf_assets.ingest.scan import TrialData

_NAMED = re.compile(r"\b(result|config|run_config)\.([A-Za-z_][\w]*(?:\.[A-Za-z_][\w]*)*)")
_DOC_OF = {"result": "result.json", "config": "config.json", "run_config": "run_config.json"}


def _candidates(f: Finding, v: ResultView) -> list[str]:
    """Key paths a finding of this check is about, most specific first."""
    named = [k for d, k in _NAMED.findall(f.message) if _DOC_OF[d] == f.file]
    by_check = {
        "GATE_REWARD_MISSING": [v.reward_field, "rewards", "verifier_result"],
        "GATE_TIMING_MISSING": [v.start_field, v.end_field, v.duration_field, "timing"],
        "GATE_TIMING_INVALID": [v.start_field, v.end_field, v.duration_field, "timing"],
        "GATE_TOKENS_MISSING": ["agent_result", "token_usage", "final_metrics"],
        "GATE_TOKENS_SUSPICIOUS": ["agent_result", "token_usage", "final_metrics"],
        "GATE_TOOLS_MISSING": [v.tool_field, "trajectory_summary"],
        "GATE_VERIFIER_ERROR": ["verifier_error", "verifier_result", v.reward_field, "rewards"],
        "GATE_INFRA_ERROR": ["error", "exception_info", "error_category"],
        "ATTR_EXPERIMENT_FIDELITY": ["error", "verifier_error", "exception_info", "rewards"],
        "ATTR_UNKNOWN": ["error", "exception_info", v.reward_field, "rewards"],
        "GATE_TRAJECTORY_PARTIAL": ["partial_trajectory"],
        "GATE_TRAJECTORY_UNTRUSTED": ["trajectory_source"],
        "GATE_CROSS_MISMATCH": ["task_name"],
        "PROVENANCE_MISSING": ["source", "task_digest", "task_checksum", "config.task"],
        "SKILL_CATALOG_UNKNOWN": ["skill_mode", "agent_info", "agent", "config.agent"],
        "SKILL_EXPECTED_UNKNOWN": ["task_name", "config.task"],
        "SKILL_NOT_LOADED": ["skill_mode", "agent_info", "agent"],
        "PATH_MISMATCH": ["task_path", "info"],
    }
    return [*named, *by_check.get(f.check, [])]


def cite(t: TrialData, rel: str, key: str) -> tuple[int | None, str | None]:
    """``(line, evidence)`` of ``key`` in the trial's document ``rel`` (evidence: the key
    path and a short excerpt of its value, secrets redacted)."""
    from bf_assets.redact import redact_text

    doc = t.document(rel)
    if doc is None or doc.raw is None:
        return None, None
    line = key_line(doc.raw, key)
    if not has_key(doc.value, key):
        return line, None
    return line, clip(redact_text(f"{key} = {clip(value_at(doc.value, key), 4096)}"))


def _locate(t: TrialData, v: ResultView, f: Finding) -> Finding:
    if f.file is None or (f.line is not None and f.evidence is not None):
        return f
    doc = t.document(f.file)
    if doc is None or doc.raw is None:
        return _whole_file(t, f)
    keys = _candidates(f, v)
    for key in keys:
        if has_key(doc.value, key):
            line, evidence = cite(t, f.file, key)
            return replace(f, line=f.line or line, evidence=f.evidence or evidence)
    if f.line is not None:
        return f
    # the key is absent: its nearest present parent (line 1: the document itself)
    return replace(f, line=(key_line(doc.raw, keys[0]) if keys else None) or 1)


def _whole_file(t: TrialData, f: Finding) -> Finding:
    """Line 1 for a finding on another of the trial's JSON files (an agent log) that says
    nothing more precise: the file as a whole, when it is on disk and not empty."""
    if f.line is not None or f.file is None or not f.file.endswith(".json"):
        return f
    if f.file.startswith(("/", "../")) or "/../" in f.file:
        return f
    try:
        size = os.stat(os.path.join(t.ref.path, f.file)).st_size
    except OSError:
        return f
    return replace(f, line=1) if size > 0 else f


def locate_findings(t: TrialData, v: ResultView, findings: Iterable[Finding]) -> list[Finding]:
    """``findings`` with the line (and, lacking one, an evidence excerpt) of the key each
    cites in the trial's JSON documents; line 1 for a finding about a whole document."""
    return sort_findings(_locate(t, v, f) for f in findings)
