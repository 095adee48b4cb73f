"""``meta/manifest.json``: what a release contains and where it came from.

Deterministic: keys sorted, lists in a fixed order, no wall-clock value, no host path and no
token.  The excluded trials (every reviewed trial that is not exported: as many as the corpus
holds) are in ``meta/excluded.jsonl`` (``bf_assets.publish.excluded``), not here: the
manifest counts them (per reason and per check) and points at that file
(``excluded_trials``), which its file list checksums like every other.

The release digest (and the tag derived from it) is computed over every published file,
manifest included, so any change to any byte gives a new release.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from importlib import metadata
from typing import Any

import orjson

from bf_assets.curate.candidate import Candidate
from bf_assets.curate.schema import SCHEMA_VERSION
from bf_assets.dataset.decide import Exclusion
from bf_assets.publish.excluded import excluded_pointer
from bf_assets.redact.clean import CleanStats, clean_value
from bf_assets.review.record import SLOT_FIELDS

MANIFEST_PATH = "meta/manifest.json"
CHECKSUMS_PATH = "meta/checksums.sha256"
MANIFEST_VERSION = 2  # 2: the excluded trials in their own file
PIPELINE = "bf-assets"


def pipeline_version() -> str:
    try:
        return metadata.version(PIPELINE)
    except metadata.PackageNotFoundError:  # pragma: no cover - running from a source tree
        return "0+unknown"


def tool_versions() -> dict[str, str]:
    out = {}
    for dist in ("pyarrow", "huggingface-hub", "orjson"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:  # pragma: no cover
            out[dist] = "unknown"
    return out


@dataclass(frozen=True, slots=True)
class FileRecord:
    path: str
    sha256: str
    bytes: int
    config: str | None = None
    split: str | None = None
    rows: int | None = None

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"path": self.path, "sha256": self.sha256, "bytes": self.bytes}
        if self.config is not None:
            d.update(config=self.config, split=self.split, rows=self.rows)
        return d


def release_digest(files: Iterable[tuple[str, str]]) -> str:
    """sha256 over the sorted ``path<TAB>sha256`` lines of the published files."""
    lines = sorted(f"{p}\t{s}" for p, s in files)
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()


def exclusion_counts(excluded: Sequence[Exclusion]) -> tuple[dict[str, int], dict[str, int]]:
    """``(by reason, by check id)``; check ids come from rejected/quarantined details."""
    by_reason = Counter(e.reason for e in excluded)
    by_check: Counter[str] = Counter()
    for e in excluded:
        if e.reason in ("rejected", "quarantined"):
            by_check.update(c.strip() for c in e.detail.split(",") if c.strip().isupper())
    return dict(sorted(by_reason.items())), dict(sorted(by_check.items()))


def source_record(c: Candidate, rollout_id: str, results_sha256: str | None) -> dict[str, Any]:
    return {
        "job": c.job,
        "rollout": c.rollout,
        "path": c.rel_path,
        **dict(zip(SLOT_FIELDS, c.slot, strict=True)),
        "started_at": c.started_at,
        "source_ref": c.source_ref,
        "task_digest": c.task_digest,
        "rollout_id": rollout_id,
        "results_sha256": results_sha256,
    }


def build_manifest(
    *,
    verdict: str,
    files: Sequence[FileRecord],
    configs: dict[str, dict[str, int]],
    sources: Sequence[dict[str, Any]],
    excluded: Sequence[Exclusion],
    stats: CleanStats,
    jobs: Sequence[str],
    plan_sha256: str | None,
    not_ingested: Sequence[str] = (),
    dataset_verdict: str | None = None,
    dataset_reasons: Sequence[str] = (),
    splits: dict[str, Any] | None = None,
    release_tag: str | None = None,
    changes: dict[str, Any] | None = None,
) -> bytes:
    """``configs`` is ``{config: {split: rows}}``; ``splits`` how the release was split
    (``SplitPlan.to_dict()``: method, fraction, seed, where they came from, the tasks of each
    split); ``release_tag`` the tag the release is published under (``None`` in the draft the
    tag is derived from, see ``bf_assets.publish.bundle``); ``excluded`` are counted, their
    lines are :func:`bf_assets.publish.excluded.write_excluded`'s."""
    by_reason, by_check = exclusion_counts(excluded)
    doc = {
        "manifest_version": MANIFEST_VERSION,
        "pipeline": {
            "name": PIPELINE,
            "version": pipeline_version(),
            "schema_version": SCHEMA_VERSION,
            "tools": tool_versions(),
        },
        "release_verdict": verdict,
        "dataset_verdict": dataset_verdict,
        "dataset_reasons": list(dataset_reasons),
        "release_tag": release_tag,
        "configs": configs,
        "splits": splits,
        "files": [f.to_dict() for f in sorted(files, key=lambda f: f.path)],
        "jobs": sorted(jobs),
        "jobs_not_ingested": sorted(not_ingested),
        "source_refs": sorted({s["source_ref"] for s in sources if s.get("source_ref")}),
        "task_digests": sorted({s["task_digest"] for s in sources if s.get("task_digest")}),
        "source_trials": sorted(sources, key=lambda s: s["rollout_id"]),
        "excluded_trials": excluded_pointer(len(excluded)),
        "exclusions_by_reason": by_reason,
        "exclusions_by_check": by_check,
        "cleaning": stats.to_dict(),
        "plan": {"sha256": plan_sha256} if plan_sha256 else None,
        "changes": changes,
    }
    # Trial-derived values (jobs, refs, exclusion details) are cleaned like export rows.
    doc = clean_value(doc)
    return orjson.dumps(doc, option=orjson.OPT_SORT_KEYS | orjson.OPT_INDENT_2) + b"\n"


def checksums_text(files: Iterable[tuple[str, str]]) -> bytes:
    return "".join(f"{sha}  {path}\n" for path, sha in sorted(files)).encode()
