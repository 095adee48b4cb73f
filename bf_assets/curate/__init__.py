"""Curation core (no Dagster): the cleaned export rows of the trials it is handed (the
dataset review, ``bf_assets.dataset.decide``, decides which; curation selects nothing).

- :mod:`bf_assets.curate.candidate`: ``Candidate``, what curation needs of one trial;
- :mod:`bf_assets.curate.frames`: candidates of the exported trials from the warehouse tables;
- :mod:`bf_assets.curate.rows`: ``build_row`` (streamed ``results.jsonl`` → export row) and
  the ``prime_sft`` / ``trl_sft`` projections;
- :mod:`bf_assets.curate.scan`: ``scan_row`` and the ``PUBLISH_*`` findings;
- :mod:`bf_assets.curate.schema`: the published schema as data.

Every value is cleaned by :mod:`bf_assets.redact.clean` (below every stage that shows trial
data).
"""
