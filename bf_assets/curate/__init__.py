"""Curation core (no Dagster): which trials are exported, and their cleaned export rows.

- :mod:`bf_assets.curate.select`: ``select_exports`` (newest exportable attempt per slot,
  every other trial with its reason);
- :mod:`bf_assets.curate.rows`: ``build_row`` (streamed ``results.jsonl`` → export row) and
  the ``prime_sft`` / ``trl_sft`` projections;
- :mod:`bf_assets.curate.clean`: banned keys, secret redaction, host paths;
- :mod:`bf_assets.curate.scan`: ``scan_row`` and the ``PUBLISH_*`` findings;
- :mod:`bf_assets.curate.schema`: the published schema as data.
"""

from bf_assets.curate.clean import CleanStats, clean_value
from bf_assets.curate.rows import CurationError, build_row
from bf_assets.curate.scan import scan_row
from bf_assets.curate.select import Candidate, Exclusion, select_exports

__all__ = [
    "Candidate",
    "CleanStats",
    "CurationError",
    "Exclusion",
    "build_row",
    "clean_value",
    "scan_row",
    "select_exports",
]
