"""How trials are reviewed: read limits, task tree, plan, quarantine, workers and cache."""

from __future__ import annotations

from dataclasses import dataclass

from bf_assets.ingest.readers import DEFAULT_LIMITS, ReadLimits


@dataclass(slots=True)
class ReviewOptions:
    limits: ReadLimits = DEFAULT_LIMITS
    tasks_dir: str | None = None
    plan_path: str | None = None
    quarantine_path: str | None = None
    hash_files: bool = False  # sha256 of files no check parses (the raw_trials inventory does)
    workers: int | None = None  # worker processes for large batches (None: every core)
    audits: bool = True  # False: the hard gate alone (the gate's own tests use this)
    cache_dir: str | None = None  # reuse reviews of unchanged trials (bf_assets.corpus.cache)
