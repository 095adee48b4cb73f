"""Candidates from the warehouse tables (what the Dagster shell hands to curation).

``validated_trials`` and ``raw_trials`` arrive as ``{partition_key: DataFrame}`` for every
registered job partition.  Only the jobs that exist under the configured run roots right now
are used (a partition of another run root, or of a deleted job directory, is ignored), and
each trial's directory comes from discovery under those roots, never from a stored path.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from bf_assets.curate.select import Candidate
from bf_assets.ingest.discovery import discover


@dataclass(slots=True)
class TableCandidates:
    candidates: list[Candidate] = field(default_factory=list)
    not_ingested: list[str] = field(default_factory=list)  # jobs under the roots without a table
    ignored_partitions: list[str] = field(
        default_factory=list
    )  # tables of jobs not under the roots
    missing_trials: list[str] = field(default_factory=list)  # rows whose directory is gone
    unreviewed: list[str] = field(default_factory=list)  # trials of ingested jobs with no row
    dataset_verdict: str | None = None  # the dataset-level release verdict (coverage, plan)
    dataset_reasons: list[str] = field(default_factory=list)  # why it is not publishable


def _records(df: pd.DataFrame | None) -> list[dict[str, Any]]:
    if df is None or df.empty:
        return []
    return df.astype(object).where(df.notna(), None).to_dict(orient="records")


def apply_dataset_review(
    found: TableCandidates,
    validated: Mapping[str, pd.DataFrame],
    *,
    plan_path: str | None = None,
    quarantine_path: str | None = None,
) -> None:
    """Effective verdicts (manual quarantine, coverage findings such as a failed oracle lane)
    and the dataset-level release verdict (required slots, coverage floor) of
    ``bf_assets.dataset.assemble``, applied to the candidates in place."""
    from bf_assets.dataset.assemble import assemble
    from bf_assets.review.tables import reviews_from_frame

    skip = set(found.ignored_partitions)
    frames = [df for k, df in sorted(validated.items()) if k not in skip and not df.empty]
    if not frames:
        return
    reviews = reviews_from_frame(pd.concat(frames, ignore_index=True))
    ds = assemble(reviews, plan_path=plan_path, quarantine_path=quarantine_path)
    effective = {(t.ref.job_key, t.ref.rollout): t for t in ds.trials}
    for c in found.candidates:
        t = effective.get(c.key)
        if t is not None:
            c.verdict = str(t.verdict)
            c.findings = [f.to_dict() for f in t.findings]
    found.dataset_verdict = ds.release_verdict
    found.dataset_reasons = [
        r.text() if callable(r.text) else str(r.text) for r in ds.assessment.decisive()
    ]


def candidates_from_tables(
    roots: Sequence[str],
    validated: Mapping[str, pd.DataFrame],
    raw: Mapping[str, pd.DataFrame] | None = None,
    *,
    dataset_review: bool = True,
    plan_path: str | None = None,
    quarantine_path: str | None = None,
) -> TableCandidates:
    """Candidates of the jobs under ``roots``; with ``dataset_review`` their verdicts are the
    effective ones of the dataset review (quarantine, coverage)."""
    out = TableCandidates()
    refs = {(t.job_key, t.rel_path): t for t in discover(roots).trials}
    jobs = {job for job, _ in refs}
    raw = raw or {}
    for key in sorted(validated):
        if key not in jobs:
            out.ignored_partitions.append(key)
            continue
        raw_rows = {(r["job"], r["path"]): r for r in _records(raw.get(key))}
        rows = _records(validated[key])
        reviewed = {(r["job"], r["path"]) for r in rows}
        out.unreviewed += sorted(f"{j}/{p}" for j, p in refs if j == key and (j, p) not in reviewed)
        for row in rows:
            ref = refs.get((row["job"], row["path"]))
            if ref is None:
                out.missing_trials.append(f"{row['job']}/{row['path']}")
                continue
            out.candidates.append(
                Candidate.from_tables(
                    row, raw_rows.get((row["job"], row["path"])), ref.path, ref.root
                )
            )
    out.not_ingested = sorted(jobs - set(validated))
    if dataset_review:
        apply_dataset_review(out, validated, plan_path=plan_path, quarantine_path=quarantine_path)
    return out
