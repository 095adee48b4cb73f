"""Many trials: the walk, the one worker pool (``pool.py``), the review of a corpus
(``run.py``), the review cache (``cache.py``), the incremental ingest's state
(``ingest_state.py``) and the Dagster ingest's inventory pass (``inventory.py``)."""
