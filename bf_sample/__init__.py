"""Deterministic Benchflow sample data (production layout) for tests, demos and benchmarks.

``generate_jobs_root`` writes the committed sample (``data/runs``), ``write_trial`` one rollout
for a :class:`PlannedTrial`, ``write_heavy_trial`` one very large streamed trial, and
``generate_corpus`` many small trials. No Dagster import here.
"""

from bf_sample.generator import generate_corpus, generate_jobs_root
from bf_sample.heavy import write_heavy_trial
from bf_sample.plan import SCENARIOS, PlannedTrial
from bf_sample.trial import write_trial

__all__ = [
    "SCENARIOS",
    "PlannedTrial",
    "generate_corpus",
    "generate_jobs_root",
    "write_heavy_trial",
    "write_trial",
]
