"""The thin Dagster shell around the review core: partitions, resources, IO, assets, sensor, jobs."""
