"""Plain tables (pandas) of trials and findings, shared by the assets and the CLI.

Nested values (inventories, findings, identity sources) are stored as JSON strings so the
Parquet schema never drifts between batches.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Sequence

import orjson
import pandas as pd

from bf_assets.findings import finding
from bf_assets.gate.run import FILE_CHECKS
from bf_assets.ingest.discovery import TrialRef
from bf_assets.ingest.identity import Identity
from bf_assets.ingest.readers import DEFAULT_LIMITS, ReadLimits, escape_name
from bf_assets.ingest.scan import TrialData, scan_trial
from bf_assets.review.record import SLOT_FIELDS, TRIAL_ERRORS, TrialReview
from bf_assets.review.story import STORY_FIELDS, TrialStory

TRIAL_KEY = ("job", "rollout", "path")

RAW_COLUMNS = [
    *TRIAL_KEY,
    "root",
    "layout",
    *SLOT_FIELDS,
    "model_raw",
    "source_ref",
    "task_digest",
    "started_at",
    "identity_sources",
    "n_files",
    "total_bytes",
    "files",
    "read_findings",
]
VALIDATED_COLUMNS = [
    *TRIAL_KEY,
    "layout",
    *SLOT_FIELDS,
    "model_raw",
    "source_ref",
    "task_digest",
    "started_at",
    "outcome",
    "healthy",
    "training_ready",
    "verdict",
    "attribution",
    "n_blockers",
    "n_findings",
    "checks",
    "findings",
    "root",
    "reward",
    "skills",
    *STORY_FIELDS,  # how the run ended, usage, the verifier's tests (review.story)
]
# Story columns by dtype (nullable, so the Parquet schema is the same in every batch).
STORY_INT_COLUMNS = (
    "tokens_in",
    "tokens_out",
    "tokens_cache",
    "tool_calls",
    "tests_total",
    "tests_passed",
    "tests_failed",
    "tests_skipped",
    "judge_passed",
    "judge_total",
    "tokens_thought",
)
STORY_FLOAT_COLUMNS = ("cost_usd", "wall_time_sec", "judge_score")
FINDING_COLUMNS = [*TRIAL_KEY, "check", "severity", "message", "file", "line", "evidence"]


def _dumps(v: object) -> str:
    return orjson.dumps(v, option=orjson.OPT_SORT_KEYS).decode()


def _key(ref: TrialRef) -> dict[str, str]:
    return {"job": ref.job_key, "rollout": ref.rollout, "path": ref.rel_path}


def _identity(ident: Identity) -> dict[str, object]:
    """The slot fields and the provenance of a trial's identity (both tables carry them)."""
    row: dict[str, object] = {name: getattr(ident, name) for name in SLOT_FIELDS}
    row.update(
        source_ref=ident.source_ref,
        task_digest=ident.task_digest,
        started_at=ident.started_at,
        model_raw=ident.model_raw,
    )
    return row


def raw_row(data: TrialData, read_findings: Sequence[dict[str, object]]) -> dict[str, object]:
    ident = data.identity
    row: dict[str, object] = {**_key(data.ref), "root": data.ref.root, "layout": data.layout}
    row.update(_identity(ident))
    row.update(
        identity_sources=_dumps(ident.sources),
        n_files=len(data.files),
        total_bytes=sum(f.size or 0 for f in data.files),
        files=_dumps(
            [
                {
                    "path": escape_name(f.path),  # a name that is not UTF-8, escaped
                    "size": f.size,
                    "sha256": f.sha256,
                    "lines": f.lines,
                    "issue": f.issue,
                }
                for f in data.files
            ]
        ),
        read_findings=_dumps(list(read_findings)),
    )
    return row


def validated_row(t: TrialReview) -> dict[str, object]:
    ident = t.identity
    row: dict[str, object] = {**_key(t.ref), "layout": t.layout}
    row.update(_identity(ident))
    row.update(
        outcome=t.outcome,
        healthy=t.healthy,
        training_ready=t.training_ready,
        verdict=t.verdict,
        attribution=t.attribution,
        n_blockers=sum(f.severity == "blocker" for f in t.findings),
        n_findings=len(t.findings),
        checks=",".join(sorted({f.check for f in t.findings})),
        findings=_dumps([f.to_dict() for f in t.findings]),
        root=t.ref.root,
        reward=t.reward,
        skills=_dumps(t.skills),
    )
    story = t.story.to_dict()
    story["failing_tests"] = _dumps(story["failing_tests"])
    row.update(story)
    return row


def finding_rows(t: TrialReview) -> list[dict[str, object]]:
    key = _key(t.ref)
    return [{**key, **f.to_dict()} for f in t.findings]


def frame(rows: Sequence[dict[str, object]], columns: Sequence[str]) -> pd.DataFrame:
    df = pd.DataFrame(list(rows), columns=list(columns))
    if "trial_index" in df.columns:
        df["trial_index"] = df["trial_index"].astype("Int64")
    if "line" in df.columns:
        df["line"] = df["line"].astype("Int64")
    for col in STORY_INT_COLUMNS:
        if col in df.columns:
            df[col] = df[col].astype("Int64")
    for col in STORY_FLOAT_COLUMNS:
        if col in df.columns:
            df[col] = df[col].astype("float64")
    return df


def validated_frames(reviews: Sequence[TrialReview]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``(validated_trials, findings)`` tables for a batch of reviewed trials."""
    validated = frame([validated_row(t) for t in reviews], VALIDATED_COLUMNS)
    findings = frame([r for t in reviews for r in finding_rows(t)], FINDING_COLUMNS)
    return validated, findings


def unreadable_raw_row(ref: TrialRef, exc: BaseException) -> dict[str, object]:
    """The ``raw_trials`` row of a trial whose scan raised ``exc``."""
    f = finding(
        "GATE_UNREADABLE",
        f"the trial could not be read safely: {type(exc).__name__}: {exc}",
        file=".",
    )
    return {
        **_key(ref),
        "root": ref.root,
        "layout": ref.layout,
        "read_findings": _dumps([f.to_dict()]),
        "n_files": 0,
        "total_bytes": 0,
        "files": "[]",
        "identity_sources": "{}",
    }


def read_row(data: TrialData) -> dict[str, object]:
    """The ``raw_trials`` row of a scanned trial (the file checks give its read findings)."""
    return raw_row(data, [f.to_dict() for check in FILE_CHECKS for f in check(data)])


def raw_frame(refs: Sequence[TrialRef], limits: ReadLimits = DEFAULT_LIMITS) -> pd.DataFrame:
    """The ``raw_trials`` table: identity, layout, inventory and read findings per trial."""
    rows = []
    for ref in refs:
        try:
            data = scan_trial(ref, limits)
        except TRIAL_ERRORS as exc:
            rows.append(unreadable_raw_row(ref, exc))
            continue
        rows.append(read_row(data))
    return frame(rows, RAW_COLUMNS)


# --------------------------------------------------------------------------- audits

SKILL_COLUMNS = [
    *TRIAL_KEY,
    "task_id",
    "harness",
    "skill_mode",
    "catalog_status",
    "catalog_source",
    "skill_count",
    "skills",
    "catalog_sha256",
    "expected_task_skills",
    "loaded_task_skills",
    "missing_task_skills",
    "task_skills_loading",
    "status",
    "manual_review_required",
]
AUDIT_PREFIXES = ("SKILL_", "NOSKILL_", "HACK_", "VERIFIER_", "ATTR_", "PATH_", "PROVENANCE_")


def skill_row(t: TrialReview) -> dict[str, object]:
    sk = t.skills or {}
    loading = sk.get("task_skills_loading")
    return {
        **_key(t.ref),
        "task_id": t.identity.task_id,
        "harness": sk.get("harness") or t.identity.harness,
        "skill_mode": sk.get("skill_mode") or t.identity.skill_mode,
        "catalog_status": sk.get("catalog_status"),
        "catalog_source": sk.get("catalog_source"),
        "skill_count": sk.get("skill_count"),
        "skills": _dumps(sk.get("skills") or []),
        "catalog_sha256": sk.get("catalog_sha256"),
        "expected_task_skills": _dumps(sk.get("expected_task_skills") or []),
        "loaded_task_skills": _dumps(sk.get("loaded_task_skills") or []),
        "missing_task_skills": _dumps(sk.get("missing_task_skills") or []),
        "task_skills_loading": loading if isinstance(loading, int) else None,
        "status": sk.get("status"),
        "manual_review_required": sk.get("manual_review_required"),
    }


def audit_frames(reviews: Sequence[TrialReview]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``(skill_audit, trial_audits)``: the skills block per trial, and the audit findings."""
    skills = frame([skill_row(t) for t in reviews], SKILL_COLUMNS)
    for col in ("skill_count", "task_skills_loading"):
        skills[col] = skills[col].astype("Int64")
    audits = frame(
        [r for t in reviews for r in finding_rows(t) if str(r["check"]).startswith(AUDIT_PREFIXES)],
        FINDING_COLUMNS,
    )
    return skills, audits


def _cell_value(rec: dict[str, object], k: str) -> object:
    v = rec.get(k)
    return None if v is None or (isinstance(v, float) and v != v) or v is pd.NA else v


def frame_records(df: pd.DataFrame) -> Iterator[dict[str, object]]:
    """The rows of ``df`` as dicts by column name, the values of ``df[col].tolist()``: the
    values ``df.to_dict(orient="records")`` gives up to how a missing one is spelled (``None``,
    ``NaN`` or ``pd.NA``, which :func:`_cell_value` reads alike), at a fifth of its cost on
    the warehouse's string columns (one list a column, not a boxed lookup a cell)."""
    cols = [str(c) for c in df.columns]
    for row in zip(*(df[c].tolist() for c in df.columns), strict=True):
        yield dict(zip(cols, row, strict=True))


def reviews_from_frame(df: pd.DataFrame) -> list[TrialReview]:
    """Rebuild reviews from ``validated_trials`` rows (what the dataset-level assets need)."""
    from bf_assets.findings import Finding

    out: list[TrialReview] = []
    for rec in frame_records(df):
        val = functools.partial(_cell_value, rec)

        job = str(val("job") or "")
        rel = str(val("path") or "")
        ref = TrialRef(
            root=str(val("root") or ""),
            path=str(val("root") or "") + "/" + rel,
            rel_path=rel,
            job_key=job,
            job=job.rsplit("/", 1)[-1],
            rollout=str(val("rollout") or ""),
            layout=str(val("layout") or "unknown"),
        )
        ti = val("trial_index")
        ident = Identity(
            task_id=val("task_id"),  # type: ignore[arg-type]
            harness=val("harness"),  # type: ignore[arg-type]
            model=val("model"),  # type: ignore[arg-type]
            skill_mode=val("skill_mode"),  # type: ignore[arg-type]
            sandbox=val("sandbox"),  # type: ignore[arg-type]
            trial_index=int(ti) if ti is not None else None,  # type: ignore[call-overload]
            job=ref.job,
            rollout=ref.rollout,
            source_ref=val("source_ref"),  # type: ignore[arg-type]
            task_digest=val("task_digest"),  # type: ignore[arg-type]
            started_at=val("started_at"),  # type: ignore[arg-type]
            model_raw=val("model_raw"),  # type: ignore[arg-type]
        )
        reward = val("reward")
        story = {k: val(k) for k in STORY_FIELDS}
        story["failing_tests"] = orjson.loads(str(story["failing_tests"] or "[]"))
        for k in STORY_INT_COLUMNS:
            story[k] = int(story[k]) if story[k] is not None else None  # type: ignore[call-overload]
        out.append(
            TrialReview(
                ref=ref,
                identity=ident,
                layout=ref.layout,
                outcome=str(val("outcome")),
                healthy=bool(val("healthy")),
                training_ready=bool(val("training_ready")),
                verdict=str(val("verdict")),
                attribution=str(val("attribution")),
                findings=[Finding.from_dict(d) for d in orjson.loads(str(val("findings") or "[]"))],
                skills=orjson.loads(str(val("skills") or "{}")),
                reward=float(reward) if reward is not None else None,  # type: ignore[arg-type]
                story=TrialStory.from_dict(story),
            )
        )
    return out
