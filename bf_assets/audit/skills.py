"""Skill-catalog audit: recover the startup catalog, compare it with the task's skills, and
decide ``task_skills_loading`` (review-rules §3.4) → ``SKILL_*`` / ``NOSKILL_CATALOG_INJECTED``.

The harness comes from the declared config (``identity.harness``); the prompt's look is only
a confirmation.  The catalog is read from the first real request, then (bounded) from later
requests, and, when no request body exists, from an ACP ``agent_thought`` that starts with
``System Prompt:``.  A harness without an extractor, pi's unserialised catalog, or an
unrecoverable prompt is ``SKILL_CATALOG_UNKNOWN``: a catalog is never inferred.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bf_assets.audit.catalog import (
    EXTRACTORS,
    FAMILIES,
    Catalog,
    PromptParts,
    content_family,
    prompt_parts,
)
from bf_assets.audit.expected import expected_skills, norm_skill, sandbox_skills_dir, skill_mode
from bf_assets.findings import Finding, finding
from bf_assets.ingest.readers import JsonlFile, iter_jsonl
from bf_assets.ingest.scan import ACP_FILE, LLM_FILE, TrialData

MAX_LATER_REQUESTS = 64
MAX_ACP_LINES = 500
SYSTEM_PROMPT_ANCHOR = "System Prompt:"
# Manual-review reasons that no other finding covers: they raise SKILL_CATALOG_UNKNOWN.
_UNCOVERED = ("harness", "not_serialized", "unrecoverable", "mismatch", "mode", "late")


@dataclass(slots=True)
class Located:
    catalog: Catalog | None = None
    source: str | None = None
    file: str | None = None
    line: int | None = None
    request_path: str | None = None
    first_request: bool = True
    prompt_seen: bool = False
    content_family: str | None = None


def _iter_lines(t: TrialData, rel: str, limit: int) -> Iterator[tuple[int, Any]]:
    gen = iter_jsonl(Path(t.ref.path) / rel, Path(t.ref.root), JsonlFile())
    try:
        for n, item in enumerate(gen):
            if n >= limit:
                break
            if item.value is not None:
                yield item.line, item.value
    finally:
        gen.close()


def _request_path(t: TrialData, line: int | None) -> str | None:
    for ex in t.llm.log.exchanges:
        if ex.line == line:
            return ex.request_path
    return None


def _later_requests(t: TrialData) -> Iterator[tuple[int, Any, str | None]]:
    first = t.llm.first_request_line or 0
    seen = 0
    for line, row in _iter_lines(t, LLM_FILE, MAX_LATER_REQUESTS * 4):
        req = row.get("request") if isinstance(row, dict) else None
        if line <= first or not isinstance(req, dict) or not isinstance(req.get("body"), dict):
            continue
        seen += 1
        if seen > MAX_LATER_REQUESTS:
            return
        yield line, req["body"], req.get("path") if isinstance(req.get("path"), str) else None


def _acp_system_prompts(t: TrialData) -> Iterator[tuple[int, str]]:
    if not t.acp.present:
        return
    for line, ev in _iter_lines(t, ACP_FILE, MAX_ACP_LINES):
        if not isinstance(ev, dict) or ev.get("type") != "agent_thought":
            continue
        for key in ("text", "content"):
            v = ev.get(key)
            if isinstance(v, str) and v.lstrip().startswith(SYSTEM_PROMPT_ANCHOR):
                yield line, v.lstrip()[len(SYSTEM_PROMPT_ANCHOR) :]
                break


def locate(t: TrialData, family: str) -> Located:
    """Find the startup catalog of ``family`` in the trial's trajectories."""
    extract = EXTRACTORS[family]
    if isinstance(t.llm.first_request, dict):
        line = t.llm.first_request_line
        pp = prompt_parts(t.llm.first_request)
        loc = Located(
            None,
            "request.body",
            LLM_FILE,
            line,
            _request_path(t, line),
            True,
            True,
            content_family(pp),
        )
        cat = extract(pp)
        if cat is not None:
            loc.catalog = cat
            return loc
        for later_line, body, path in _later_requests(t):
            cat = extract(prompt_parts(body))
            if cat is not None:
                loc.catalog, loc.line, loc.request_path, loc.first_request = (
                    cat,
                    later_line,
                    path,
                    False,
                )
                return loc
        return loc
    for line, text in _acp_system_prompts(t):
        pp = PromptParts(system=[text])
        loc = Located(
            extract(pp),
            "agent_thought_system_prompt",
            ACP_FILE,
            line,
            None,
            True,
            True,
            content_family(pp),
        )
        return loc
    return Located()


def _status(
    expected: list[str], loaded: list[str], missing: list[str], mode: str | None
) -> tuple[str, int]:
    if expected:
        if mode == "no-skill":
            if not missing:
                return "unexpected_complete_task_skills_loaded_without_skills", 1
            if loaded:
                return "partial_unexpected_task_skills_loaded_without_skills", 0
            return "not_loaded_without_skills", 0
        return ("complete", 1) if not missing else ("missing_expected_task_skills", 0)
    if mode == "no-skill":
        return "not_expected_without_skills", 0
    if mode == "with-skill":
        return "expected_with_skills_but_no_task_skill_manifest", 0
    if mode == "self-gen":
        return "self_generated_skills", 0
    return "unknown_expected_task_skills", 0


def _injected_by_path(cat: Catalog | None, sandbox_dir: str) -> list[str]:
    out = []
    for s in cat.skills if cat else []:
        where = s.get("file") or s.get("location") or ""
        if "environment/skills/" in where or where.startswith(sandbox_dir + "/"):
            out.append(s["name"])
    return out


def audit_skills(
    t: TrialData,
    *,
    outcome: str,
    tasks_dir: Path | None = None,
    plan_skills: dict[str, list[str]] | None = None,
) -> tuple[dict[str, Any], list[Finding]]:
    """The per-trial skills block and its findings."""
    harness = t.identity.harness
    expected, exp_source = expected_skills(t, tasks_dir, plan_skills)
    mode = skill_mode(t)
    block: dict[str, Any] = {
        "harness": harness or "unknown",
        "harness_source": t.identity.sources.get("harness"),
        "content_harness": None,
        "catalog_status": "unknown",
        "catalog_source": None,
        "catalog_format": None,
        "source_file": None,
        "line": None,
        "request_path": None,
        "catalog_in_first_request": None,
        "skills": [],
        "skill_count": 0,
        "catalog_sha256": None,
        "catalog_chars": 0,
        "expected_task_skills": expected,
        "expected_source": exp_source,
        "loaded_task_skills": [],
        "missing_task_skills": [],
        "skill_mode": mode,
        "task_skills_loading": None,
        "status": "catalog_unknown",
        "manual_review_required": True,
        "manual_review_reasons": [],
    }
    if outcome == "oracle" or harness in ("oracle", "nop"):
        block.update(status="not_applicable", manual_review_required=False)
        return block, []
    reasons: list[str] = block["manual_review_reasons"]
    family = FAMILIES.get(harness or "")
    loc = Located()
    if family is None:
        reasons.append(
            f"harness: {harness or 'undeclared'} has no catalog extractor; never inferred"
        )
    elif family == "pi":
        block["catalog_status"] = "catalog_not_serialized"
        reasons.append("not_serialized: pi-acp does not serialize its skill catalog")
    else:
        loc = locate(t, family)
        cat = loc.catalog
        block["content_harness"] = loc.content_family
        if cat is not None and cat.found:
            block["catalog_status"] = "catalog_found"
        elif loc.prompt_seen:
            block["catalog_status"] = "catalog_absent_in_startup_prompt"
        else:
            reasons.append("unrecoverable: no request body and no ACP 'System Prompt:' thought")
        if loc.content_family and loc.content_family != family:
            reasons.append(
                f"mismatch: declared {harness} but the prompt looks like {loc.content_family}"
            )
        if cat is not None and not loc.first_request:
            reasons.append(
                f"late: catalog first seen at {loc.file}:{loc.line}, not in the first request"
            )
        names = [s["name"] for s in cat.skills] if cat else []
        block.update(
            catalog_source=loc.source,
            catalog_format=cat.format if cat else None,
            source_file=loc.file,
            line=loc.line,
            request_path=loc.request_path,
            catalog_in_first_request=loc.first_request if cat else None,
            skills=names,
            skill_count=len(names),
            catalog_sha256=cat.sha256 if cat else None,
            catalog_chars=len(cat.text) if cat and cat.text else 0,
        )
    findings = _decide(t, block, loc, mode, reasons)
    return block, findings


def _decide(
    t: TrialData,
    block: dict[str, Any],
    loc: Located,
    mode: str | None,
    reasons: list[str],
) -> list[Finding]:
    out: list[Finding] = []
    where = {"file": block["source_file"] or LLM_FILE, "line": block["line"]}
    known = block["catalog_status"] in ("catalog_found", "catalog_absent_in_startup_prompt")
    expected = block["expected_task_skills"]
    if known:
        have = {norm_skill(n) for n in block["skills"]}
        loaded = [n for n in expected if norm_skill(n) in have]
        missing = [n for n in expected if norm_skill(n) not in have]
        status, loading = _status(expected, loaded, missing, mode)
        block.update(loaded_task_skills=loaded, missing_task_skills=missing, status=status)
        block["task_skills_loading"] = loading
        if mode not in ("with-skill", "no-skill", "self-gen"):
            reasons.append(f"mode: skill mode {mode!r} is unknown; the catalog cannot be judged")
        if status in (
            "unexpected_complete_task_skills_loaded_without_skills",
            "partial_unexpected_task_skills_loaded_without_skills",
        ):
            out.append(
                finding(
                    "NOSKILL_CATALOG_INJECTED",
                    f"no-skill trial whose startup catalog lists task skill(s) {loaded}",
                    evidence=", ".join(block["skills"]),
                    **where,
                )
            )
        elif mode == "no-skill":
            by_path = _injected_by_path(loc.catalog, sandbox_skills_dir(t))
            if by_path:
                out.append(
                    finding(
                        "NOSKILL_CATALOG_INJECTED",
                        f"no-skill trial whose startup catalog lists skill(s) {by_path} from the task's skills directory",
                        evidence=", ".join(by_path),
                        **where,
                    )
                )
        if status == "missing_expected_task_skills" and mode == "with-skill":
            out.append(
                finding(
                    "SKILL_NOT_LOADED",
                    f"with-skill trial whose startup catalog ({block['catalog_status']}, {block['skill_count']} skill(s)) lacks task skill(s) {missing}; task_skills_loading 0",
                    evidence=", ".join(block["skills"]) or None,
                    **where,
                )
            )
        if status in (
            "expected_with_skills_but_no_task_skill_manifest",
            "unknown_expected_task_skills",
        ):
            out.append(
                finding(
                    "SKILL_EXPECTED_UNKNOWN",
                    f"expected task skill names cannot be found (status {status}; pass the tasks directory or declare task_skills)",
                    **where,
                )
            )
    elif mode == "with-skill" and not expected:
        out.append(
            finding(
                "SKILL_EXPECTED_UNKNOWN",
                "with-skill trial whose expected task skill names cannot be found",
                **where,
            )
        )
    uncovered = [r for r in reasons if r.split(":", 1)[0] in _UNCOVERED]
    covered = block["status"] in (
        "missing_expected_task_skills",
        "partial_unexpected_task_skills_loaded_without_skills",
        "unexpected_complete_task_skills_loaded_without_skills",
        "expected_with_skills_but_no_task_skill_manifest",
    )
    block["manual_review_required"] = (
        bool(uncovered) or covered or (known and block["skill_count"] == 0 and mode == "with-skill")
    )
    if uncovered:
        out.append(
            finding(
                "SKILL_CATALOG_UNKNOWN",
                "skill catalog cannot be confirmed: " + "; ".join(uncovered),
                **where,
            )
        )
    return out
