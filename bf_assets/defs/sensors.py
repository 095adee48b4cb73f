"""The ``new_job_dirs`` sensor: one partition per job directory, one run per job change.

Cursor: JSON ``{job_key: fingerprint}`` of the jobs seen at the last tick.  A job whose key
is not yet a partition gets an add-partition request and a run; a job whose fingerprint
changed (a retry rollout landed, a ``result.json`` appeared, a file grew or was rewritten, a
Harbor agent log under ``agent/`` or a file under ``artifacts/`` landed: the fingerprint is
the stat digest of every file of every trial, :func:`bf_assets.ingest.discovery.trial_fingerprint`)
gets a new run (its ``run_key`` includes the fingerprint) on the existing partition; nothing
changed → skip.
A job the cursor does not know yet (the sensor's first tick, or a partition another path
ingested, e.g. ``bf-assets release``) is compared with the fingerprint its latest
``raw_trials`` materialization recorded: unchanged, it is not run again.  That recorded
fingerprint is taken before the ingest reads the job's trials (by ``bf-assets release`` with
its walk, else by the ingest step before its read), so a file that lands while the job is
read makes the job a change here, never tables left behind their files.
"""

from collections.abc import Mapping

import dagster as dg
import orjson

from bf_assets.defs.ingest import JOB_FINGERPRINT
from bf_assets.defs.jobs import ingest_job
from bf_assets.defs.partitions import job_partitions
from bf_assets.defs.resources import RunRoots
from bf_assets.ingest.discovery import JobDir, discover_jobs


def load_cursor(cursor: str | None) -> dict[str, str]:
    """The ``{job_key: fingerprint}`` map of a cursor; an absent or unreadable cursor is empty."""
    if not cursor:
        return {}
    try:
        value = orjson.loads(cursor)
    except orjson.JSONDecodeError:
        return {}
    if not isinstance(value, dict):
        return {}
    return {str(k): str(v) for k, v in value.items()}


def dump_cursor(state: Mapping[str, str]) -> str:
    return orjson.dumps(dict(state), option=orjson.OPT_SORT_KEYS).decode()


def ingested_fingerprints(instance: dg.DagsterInstance, keys: list[str]) -> dict[str, str]:
    """``{job_key: fingerprint}`` recorded by the latest ``raw_trials`` materialization of
    each partition in ``keys`` (none for a partition never ingested)."""
    out: dict[str, str] = {}
    for key in keys:
        result = instance.fetch_materializations(
            dg.AssetRecordsFilter(asset_key=dg.AssetKey("raw_trials"), asset_partitions=[key]),
            limit=1,
        )
        for rec in result.records:
            mat = rec.asset_materialization
            value = mat.metadata.get(JOB_FINGERPRINT) if mat is not None else None
            if value is not None:
                out[key] = str(getattr(value, "value", value))
    return out


def run_key(job: JobDir) -> str:
    return f"{job.key}:{job.fingerprint[:16]}"


@dg.sensor(
    job=ingest_job,
    minimum_interval_seconds=30,
    # On from the start: a fresh instance registers the job directories as partitions at
    # the daemon's first tick, so "Materialize all" has partitions to run.
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Registers new Benchflow job directories as partitions and requests an "
    "ingest run whenever a job directory's trials change.",
)
def new_job_dirs(
    context: dg.SensorEvaluationContext, run_roots: RunRoots
) -> dg.SensorResult | dg.SkipReason:
    roots = run_roots.existing_roots()
    missing = [r for r in run_roots.roots if r not in roots]
    if missing:
        context.log.warning(f"run roots not found (skipped): {', '.join(missing)}")
    if not roots:
        return dg.SkipReason(f"no run root exists: {', '.join(run_roots.roots) or '(none)'}")

    jobs = discover_jobs(roots)
    seen = load_cursor(context.cursor)
    partitions = set(context.instance.get_dynamic_partitions(job_partitions.name))

    new_keys = [j.key for j in jobs if j.key not in partitions]
    unknown = [j.key for j in jobs if j.key in partitions and j.key not in seen]
    seen = {**ingested_fingerprints(context.instance, unknown), **seen}
    to_run = [j for j in jobs if j.key not in partitions or seen.get(j.key) != j.fingerprint]
    state = {j.key: j.fingerprint for j in jobs}

    if not to_run:
        reason = f"{len(jobs)} job dir(s) known, nothing changed"
        if state != seen:
            # A job directory disappeared: forget it, request nothing.
            return dg.SensorResult(skip_reason=reason, cursor=dump_cursor(state))
        return dg.SkipReason(reason)

    for j in to_run:
        what = "new job" if j.key in new_keys else "changed job"
        context.log.info(f"{what} {j.key}: {j.n_trials} trial(s), run key {run_key(j)}")
    return dg.SensorResult(
        run_requests=[dg.RunRequest(partition_key=j.key, run_key=run_key(j)) for j in to_run],
        dynamic_partitions_requests=[job_partitions.build_add_request(new_keys)]
        if new_keys
        else [],
        cursor=dump_cursor(state),
    )
