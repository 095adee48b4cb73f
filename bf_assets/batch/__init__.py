"""Reviewing many trials: the batch runner and its worker pool, the review cache, and the
Dagster ingest's inventory pass."""
