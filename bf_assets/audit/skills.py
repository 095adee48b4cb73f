"""Skill-catalog audit: recover the startup catalog, compare it with the task's skills, and
decide ``task_skills_loading`` (review-rules §3.4) → ``SKILL_*`` / ``NOSKILL_CATALOG_INJECTED``.

The harness comes from the declared config (``identity.harness``), its reader from the
harness table (:mod:`bf_assets.ingest.harnesses`); the prompt's look is only a
confirmation.  The catalog is read from the first real request, then (bounded) from later
requests, and, when no request body exists, from an ACP ``agent_thought`` that starts with
``System Prompt:``; a Harbor agent's from its logs (Claude Code's ``system/init`` skills,
terminus's ``Skill context:``, Gemini CLI's ``activate_skill`` list), with terminus's
``skills_loaded`` as the record of what was loaded.  A harness without a reader, a
``catalog_not_serialized`` harness, or an unrecoverable prompt is ``SKILL_CATALOG_UNKNOWN``:
a catalog is never inferred.  A with-skill trial needs a proven load (``task_skills_loading``
1): when the expected task skills are unknown, the catalog is absent or it needs manual
review, ``SKILL_CATALOG_UNKNOWN`` fires too (checks.md), so it is never publishable.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bf_assets.audit.catalog import (
    EXTRACTORS,
    HARBOR_READERS,
    Catalog,
    PromptParts,
    content_family,
    first_prompt_parts,
    prompt_parts,
)
from bf_assets.audit.expected import expected_skills, norm_skill, sandbox_skills_dir, skill_mode
from bf_assets.findings import Finding, finding
from bf_assets.ingest.harbor import HarborCatalog
from bf_assets.ingest.harnesses import harness_of
from bf_assets.ingest.identity import SELF_GENERATED
from bf_assets.ingest.readers import AUDIT_LIMITS, JsonlFile, iter_jsonl
from bf_assets.ingest.scan import ACP_FILE, LLM_FILE, TrialData

# Modes whose runs must not see the task's own skills (a self-generated run writes its own).
NO_TASK_SKILL_MODES = ("no-skill", SELF_GENERATED)
MAX_LATER_REQUESTS = 64
MAX_ACP_LINES = 500
SYSTEM_PROMPT_ANCHOR = "System Prompt:"
# Manual-review reasons that no other finding covers: they raise SKILL_CATALOG_UNKNOWN.
_UNCOVERED = (
    "harness",
    "not_serialized",
    "unrecoverable",
    "mismatch",
    "mode",
    "late",
    "unproven",
    "partial",
)


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
    gen = iter_jsonl(Path(t.ref.path) / rel, Path(t.ref.root), JsonlFile(), AUDIT_LIMITS)
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


def _harbor_catalog(c: HarborCatalog) -> Catalog:
    return Catalog(c.format, c.text, list(c.skills), True)


def locate_harbor(t: TrialData, reader: str) -> tuple[Located, HarborCatalog | None]:
    """The catalog a Harbor agent's logs hold, and the record of loaded skills if any."""
    prefixes = HARBOR_READERS[reader]
    cats = [c for c in t.harbor.catalogs if c.kind == "catalog" and c.format.startswith(prefixes)]
    loaded = next((c for c in t.harbor.catalogs if c.kind == "loaded"), None)
    startup = t.harbor.startup[0] if t.harbor.startup else None
    if cats:
        c = cats[0]
        return Located(_harbor_catalog(c), c.source, c.file, c.line, None, c.startup, True), loaded
    if startup is not None and reader == "terminus":
        # terminus's first prompt is its whole startup prompt (system text included) and it
        # lists no skills; Claude Code's and Gemini CLI's logs hold only the task prompt
        return Located(
            None, "startup prompt", startup["file"], startup["line"], None, True, True
        ), loaded
    return Located(), loaded


def locate(t: TrialData, family: str) -> Located:
    """Find the startup catalog of ``family`` in the trial's trajectories."""
    extract = EXTRACTORS[family]
    if isinstance(t.llm.first_request, dict):
        line = t.llm.first_request_line
        pp = first_prompt_parts(t)
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
        if mode in NO_TASK_SKILL_MODES:
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
    if mode == SELF_GENERATED:
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
    h = harness_of(harness)
    reader = h.catalog if h is not None else None
    loc = Located()
    loaded: HarborCatalog | None = None
    if reader is None:
        reasons.append(f"harness: {harness or 'undeclared'} has no catalog reader; never inferred")
    elif reader == "not_serialized":
        block["catalog_status"] = "catalog_not_serialized"
        reasons.append(f"not_serialized: {h.not_serialized if h else reader}")
    else:
        if reader in HARBOR_READERS:
            loc, loaded = locate_harbor(t, reader)
        else:
            loc = locate(t, reader)
        cat = loc.catalog
        block["content_harness"] = loc.content_family
        if cat is not None and cat.found:
            block["catalog_status"] = "catalog_found"
        elif loc.prompt_seen:
            block["catalog_status"] = "catalog_absent_in_startup_prompt"
        elif loaded is not None:
            block["catalog_status"] = "skills_loaded_only"
        elif reader in HARBOR_READERS:
            what = "; ".join(t.harbor.logs) or "no agent log on disk"
            reasons.append(f"unrecoverable: no startup skill list in the agent logs ({what})")
        else:
            reasons.append("unrecoverable: no request body and no ACP 'System Prompt:' thought")
        family = reader if reader not in HARBOR_READERS else None
        if loc.content_family and family and loc.content_family != family:
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
        if loaded is not None:
            block.update(
                skills_loaded=[s["name"] for s in loaded.skills],
                skills_loaded_source=f"{loaded.file}:{loaded.line or ''}".rstrip(":"),
            )
    findings = _decide(t, block, loc, mode, reasons)
    return block, findings


def _loaded_only(
    block: dict[str, Any], expected: list[str], mode: str | None, reasons: list[str]
) -> None:
    """Only the loaded skills are on record (terminus ``skills_loaded`` without its first
    prompt): a with-skill trial that loaded every expected skill proved its load; anything
    else cannot be judged without the startup catalog."""
    have = {norm_skill(n) for n in block.get("skills_loaded") or []}
    got = [n for n in expected if norm_skill(n) in have]
    missing = [n for n in expected if norm_skill(n) not in have]
    block.update(loaded_task_skills=got, missing_task_skills=missing)
    if mode == "with-skill" and expected and not missing:
        block.update(status="complete", task_skills_loading=1)
        return
    block["status"] = "skills_loaded_only"
    reasons.append(
        f"partial: only the loaded skills are on record ({block.get('skills_loaded_source')}: "
        f"{block.get('skills_loaded')}); the startup catalog is not"
    )


def _noskill_loads(block: dict[str, Any], mode: str | None) -> list[Finding]:
    """A no-skill trial whose own record says it loaded skills: a skill activation (in a
    self-generated trial, a load of one of the task's own skills)."""
    names = block.get("skills_loaded") or []
    if mode == SELF_GENERATED:
        task = {norm_skill(n) for n in block.get("expected_task_skills") or []}
        names = [n for n in names if norm_skill(n) in task]
    elif mode != "no-skill":
        return []
    if not names:
        return []
    file, _, line = str(block.get("skills_loaded_source") or "result.json").partition(":")
    return [
        finding(
            "NOSKILL_LEAK",
            f"{mode} trial that loaded skill(s) {names} (agent_result.metadata.skills_loaded "
            f"at {file}:{line})",
            file=file,
            line=int(line) if line.isdigit() else None,
            evidence=", ".join(names),
        )
    ]


def _default_file(t: TrialData) -> str:
    """Where a catalog finding points when no catalog was located."""
    if t.layout != "harbor":
        return LLM_FILE
    return t.harbor.logs[0] if t.harbor.logs else "result.json"


def _decide(
    t: TrialData,
    block: dict[str, Any],
    loc: Located,
    mode: str | None,
    reasons: list[str],
) -> list[Finding]:
    out: list[Finding] = _noskill_loads(block, mode)
    where = {"file": block["source_file"] or _default_file(t), "line": block["line"]}
    known = block["catalog_status"] in ("catalog_found", "catalog_absent_in_startup_prompt")
    expected = block["expected_task_skills"]
    if block["catalog_status"] == "skills_loaded_only":
        _loaded_only(block, expected, mode, reasons)
        where = {"file": "result.json", "line": None}
    if known:
        have = {norm_skill(n) for n in block["skills"]}
        loaded = [n for n in expected if norm_skill(n) in have]
        missing = [n for n in expected if norm_skill(n) not in have]
        status, loading = _status(expected, loaded, missing, mode)
        block.update(loaded_task_skills=loaded, missing_task_skills=missing, status=status)
        block["task_skills_loading"] = loading
        if mode not in ("with-skill", *NO_TASK_SKILL_MODES):
            reasons.append(f"mode: skill mode {mode!r} is unknown; the catalog cannot be judged")
        if status in (
            "unexpected_complete_task_skills_loaded_without_skills",
            "partial_unexpected_task_skills_loaded_without_skills",
        ):
            out.append(
                finding(
                    "NOSKILL_CATALOG_INJECTED",
                    f"{mode} trial whose startup catalog lists task skill(s) {loaded}",
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
    not_loaded = any(f.check == "SKILL_NOT_LOADED" for f in out)
    if mode == "with-skill" and block["task_skills_loading"] != 1 and not not_loaded:
        reasons.append(
            "unproven: a with-skill trial needs a proven skill load (task_skills_loading 1); "
            f"status {block['status']}, catalog {block['catalog_status']}, "
            f"expected task skills {expected or 'unknown'}"
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
