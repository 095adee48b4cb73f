"""Reviewing many trials: the batch runner and its worker pool, the spill file that keeps
memory flat, the review cache, and the Dagster ingest's inventory pass."""
