"""Reviewing many trials: the batch runner and its worker pool, the spill file that keeps
memory flat, the per-trial and whole-run caches, and the Dagster ingest's inventory pass."""
