"""Reviewing many trials: the batch runner and its worker pool, the per-trial and whole-run
caches, and the Dagster ingest's inventory pass."""
