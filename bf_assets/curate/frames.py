"""Candidates for the trials the dataset review exports, from the warehouse tables (what
the Dagster shell hands to curation).

Nothing is selected here: the trials are the dataset review's exported ones, or, for a job
partition's rows built before any dataset review, the trials one could export
(:func:`bf_assets.dataset.decide.could_export`).  Each one's
artifact hashes come from its ``raw_trials`` inventory (so ``rollout_id`` is the digest of
the files as they were reviewed), and its directory is its run root joined with its path,
used only when that root is one of the configured run roots.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import pandas as pd

from bf_assets.curate.candidate import Candidate, inventory_hashes
from bf_assets.dataset.assemble import DatasetReview
from bf_assets.dataset.common import TrialKey, trial_key
from bf_assets.dataset.decide import could_export
from bf_assets.review.tables import reviews_from_frame

INVENTORY_COLUMNS = ("job", "path", "files")
# what a release reads of a partition's ``trial_rows`` index to find each row's record
ROW_ENTRY_COLUMNS = ("job", "rollout", "rollout_id", "rows_file", "offset", "length")


def _columns(raw: Mapping[str, pd.DataFrame], key: str, columns: Sequence[str]) -> pd.DataFrame:
    """Partition ``key``'s table, only ``columns`` when the mapping can read just those (a
    mapping that reads tables on demand has a ``frame(key, columns)`` method)."""
    frame = getattr(raw, "frame", None)
    return frame(key, columns) if callable(frame) else raw[key]


def _norm(root: str) -> str:
    return str(Path(root).resolve()) if root else root


def exported_candidates(
    ds: DatasetReview, raw: Mapping[str, pd.DataFrame], roots: Sequence[str]
) -> dict[TrialKey, Candidate]:
    """A :class:`Candidate` for each exported trial whose ``raw_trials`` row exists and
    whose run root is configured; the others are left out (curation records them as a
    curation error: their files are not available)."""
    allowed = {_norm(r) for r in roots}
    wanted = set(ds.exports)
    jobs = {job for job, _ in wanted}
    files: dict[tuple[str, str], str] = {}
    for key in raw:
        if key not in jobs:
            continue
        df = _columns(raw, key, INVENTORY_COLUMNS)
        if df is None or df.empty:
            continue
        for job, path, inv in zip(df["job"], df["path"], df["files"], strict=True):
            files[(str(job), str(path))] = inv
    configured: dict[str, bool] = {}  # each distinct root resolved once
    out: dict[TrialKey, Candidate] = {}
    for t in ds.trials:
        key = trial_key(t)
        if key not in wanted:
            continue
        root = t.ref.root
        if root not in configured:
            configured[root] = _norm(root) in allowed
        if not configured[root]:
            continue
        inv = files.get((t.ref.job_key, t.ref.rel_path))
        if inv is None:
            continue
        out[key] = Candidate.from_review(t, files=inventory_hashes(inv))
    return out


def exportable_candidates(
    validated: pd.DataFrame | None, raw: pd.DataFrame | None
) -> list[Candidate]:
    """A :class:`Candidate` for each trial of one job partition's ``validated_trials`` that a
    dataset review could export and that has a ``raw_trials`` inventory row, in table order:
    the reviews are rebuilt from the table as the dataset review rebuilds them, so each row
    is the one a release would build from them."""
    if validated is None or validated.empty or raw is None or raw.empty:
        return []
    files = {
        (str(job), str(path)): inv
        for job, path, inv in zip(raw["job"], raw["path"], raw["files"], strict=True)
    }
    out = []
    for t in reviews_from_frame(validated):
        inv = files.get((t.ref.job_key, t.ref.rel_path))
        if inv is not None and could_export(t):
            out.append(Candidate.from_review(t, files=inventory_hashes(inv)))
    return out


def exported_row_entries(
    ds: DatasetReview, index: Mapping[str, pd.DataFrame]
) -> dict[TrialKey, dict[str, object]]:
    """The ``trial_rows`` index entry of each exported trial that has one (``index``: the
    table of each job partition)."""
    wanted = set(ds.exports)
    jobs = {job for job, _ in wanted}
    out: dict[TrialKey, dict[str, object]] = {}
    for key in index:
        if key not in jobs:
            continue
        df = _columns(index, key, ROW_ENTRY_COLUMNS)
        if df is None or df.empty:
            continue
        for rec in df.loc[:, list(ROW_ENTRY_COLUMNS)].to_dict(orient="records"):
            k = (str(rec["job"]), str(rec["rollout"]))
            if k in wanted:
                out[k] = rec
    return out
