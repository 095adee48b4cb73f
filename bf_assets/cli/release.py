"""``bf-assets release``: run the release build through Dagster on any run roots.

Uses the project-local instance (``.dagster_home`` under the repo, SQLite, telemetry off)
unless ``DAGSTER_HOME`` is set.  A thin driver over Dagster's public execution API: it checks
the targets and the folders it writes, takes the locks, finds the job directories, plans which
of them need reading, registers one partition per job directory and runs the jobs a schedule
or the UI runs, in this process (``execute_in_process``): ``ingest_job`` (the review and the
export rows of each job, ``trial_rows``) once per block of consecutive partitions (normally a
single run; the Parquet IO manager still writes one file per partition), then
``release_job`` on the same instance: the dataset review (``coverage``, ``sandbox_parity``,
``review_report``: the export decision and the report) → ``curated_rollouts`` (the exported
trials' rows, assembled) → the blocking publish checks → ``published_dataset`` (local folder,
and the Hub when ``--hub-repo`` is given).  The outcome is read from the runs' results.  The
review report ships inside the release (``<out>/report/``); a blocked release leaves it in
the staged bundle.

A job partition whose trials and tables are as the last release over the same run roots left
them is not ingested again (:mod:`bf_assets.corpus.ingest_state`: fingerprints of every trial,
taken before anything is read, and the tables' own stats, checked against
``.ingest-state.json`` in the warehouse; ``--reread`` reads everything): a scheduled release
over a growing corpus reads only what is new or changed, and publishes the same bytes as one
that read everything.

Outcome: ``published`` (exit 0), ``blocked`` by the publish gate (exit 3), ``error`` (exit 2:
an ingest or publish step failed).
"""

from __future__ import annotations

import errno
import hashlib
import os
import re
import sys
import tempfile
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bf_assets.cli.progress import Phases
from bf_assets.corpus.ingest_state import INGEST_TABLES, IngestPlan, plan_ingest
from bf_assets.corpus.run import review_context
from bf_assets.dataset.reportfiles import REPORT_MD
from bf_assets.defs.ranges import capped, ingest_run_trials, range_run_tags
from bf_assets.files import exclusive_lock
from bf_assets.ingest.discovery import discover_trials
from bf_assets.publish.local import check_targets
from bf_assets.publish.targets import PublishError
from bf_assets.review.options import ReviewOptions
from bf_assets.settings import local_tables

# The console shows only what cannot be told otherwise: a blocked release is an outcome, not
# an error, and is explained by ``bf-assets release`` itself (every event stays in the run log).
QUIET = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}
PUBLISHED, BLOCKED, ERROR = "published", "blocked", "error"
PLANNED_SUBSET_ENV = "DAGSTER_EMIT_PARTITION_SUBSET_IN_PLANNED_EVENTS"


@dataclass(slots=True)
class ReleaseResult:
    ok: bool
    report_md: Path
    report_json: Path
    out_dir: Path
    verdict: str
    failed_partitions: list[str]
    status: str = ERROR
    failed_checks: list[str] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)  # the decisive reasons of the verdict
    excluded: dict[str, int] = field(default_factory=dict)  # excluded trials by reason
    exported: int | None = None
    tag: str | None = None
    hub_url: str | None = None
    hub_commit: str | None = None
    # where each target stands after a failed publish step (None: the step did not fail)
    local_state: str | None = None
    hub_state: str | None = None
    hub_moved: bool = False
    message: str = ""
    read_partitions: int = 0  # job partitions ingested by this release
    reused_partitions: int = 0  # left as the last release made them (nothing changed)


class UnwritablePlace(Exception):
    """A folder the release writes (its Dagster home, its warehouse) cannot be written: a
    full disk, a read-only or forbidden folder.  Its message is one line."""


PROBE_BYTES = 64 * 1024
MIN_FREE_BYTES = 16 * 1024 * 1024  # a disk fuller than this fails a release part way


def instance_home() -> Path:
    """``$DAGSTER_HOME``, else ``.dagster_home`` in the project folder (nothing is made)."""
    from bf_assets.settings import project_dir

    home = os.environ.get("DAGSTER_HOME")
    return Path(home) if home else project_dir() / ".dagster_home"


def check_writable(folder: Path, what: str) -> None:
    """Make ``folder`` and write (and sync) a small file in it, then remove it, and see that
    its file system has :data:`MIN_FREE_BYTES` free; raise :class:`UnwritablePlace` naming
    ``what`` when not.  A release checks its Dagster home and warehouse so before it starts:
    a full disk or a read-only folder is one clear line, not a failure deep in Dagster's
    storage (a disk that fills later is one line too: ``bf_assets.cli.main``'s
    ``environment_error``)."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(prefix=".bf-assets-probe-", dir=folder)
        try:
            block = bytes(PROBE_BYTES)
            while block:
                n = os.write(fd, block)
                if n <= 0:
                    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), name)
                block = block[n:]
            os.fsync(fd)
        finally:
            os.close(fd)
            os.unlink(name)
        fs = os.statvfs(folder)
    except OSError as exc:
        raise UnwritablePlace(f"{what} {folder} cannot be written: {exc.strerror or exc}") from None
    free = fs.f_bavail * fs.f_frsize
    if free < MIN_FREE_BYTES:
        raise UnwritablePlace(
            f"{what} {folder} cannot be written: its disk is nearly full ({free // 1024:,} KiB "
            f"free, a release needs at least {MIN_FREE_BYTES // (1024 * 1024)} MiB)"
        )


def check_places(roots: Sequence[str]) -> None:
    """The folders a release over ``roots`` writes before it publishes: its Dagster home
    and its warehouse (:func:`check_writable`)."""
    from bf_assets.settings import local_warehouse

    check_writable(instance_home(), "the Dagster home (DAGSTER_HOME)")
    check_writable(local_warehouse(roots), "the warehouse (BF_WAREHOUSE)")


def ensure_instance_home() -> Path:
    """``$DAGSTER_HOME``, else ``.dagster_home`` in the project folder; a home without a
    ``dagster.yaml`` gets the shipped instance defaults (package data)."""
    from bf_assets.defaults import default_file

    home = str(instance_home())
    os.environ["DAGSTER_HOME"] = home
    Path(home).mkdir(parents=True, exist_ok=True)
    cfg = Path(home) / "dagster.yaml"
    if not cfg.exists():
        cfg.write_bytes(default_file("dagster.yaml"))
    os.environ.setdefault("DAGSTER_DISABLE_TELEMETRY", "1")
    os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
    return Path(home)


def _value(v: Any) -> Any:
    return getattr(v, "value", v)


def _release_outcome(res: Any) -> dict[str, Any]:
    """Status, failed checks, verdict and publish metadata of a ``release_job`` run."""
    evals = res.get_asset_check_evaluations()
    failed = sorted(e.check_name for e in evals if not e.passed)
    verdicts = [_value(e.metadata.get("release_verdict")) for e in evals]
    out: dict[str, Any] = {"failed_checks": failed, "verdict": next(filter(None, verdicts), None)}
    for ev in res.get_asset_materialization_events():
        mat = ev.materialization
        meta = {k: _value(v) for k, v in mat.metadata.items()}
        if mat.asset_key.to_user_string() == "review_report":
            out["warehouse_report"] = meta.get("report_path")
            out["verdict"] = out["verdict"] or meta.get("release_verdict")
        if mat.asset_key.to_user_string() == "curated_rollouts":
            out["verdict"] = meta.get("release_verdict") or out["verdict"]
            out["tag"] = meta.get("tag")
            out["bundle"] = meta.get("bundle")
            out["reasons"] = meta.get("release_reasons") or []
            out["excluded"] = meta.get("excluded_by_reason") or {}
            out["exported"] = meta.get("rows_exported")
        if mat.asset_key.to_user_string() == "published_dataset":
            out["published"] = True
            out["verdict"] = meta.get("release_verdict") or out["verdict"]
            out["hub_url"] = meta.get("hub_repo")
            out["hub_commit"] = meta.get("hub_commit")
    failures = {
        str(e.step_key): _failure_text(e)
        for e in res.all_events
        if e.is_step_failure and e.step_key
    }
    refused = any(
        "refusing to publish" in m for k, m in failures.items() if "published_dataset" in k
    )
    for e in res.all_events:
        if e.is_step_failure and "published_dataset" in str(e.step_key or ""):
            data = getattr(e.event_specific_data, "user_failure_data", None)
            meta = {k: _value(v) for k, v in (getattr(data, "metadata", None) or {}).items()}
            if "local_state" in meta:
                out["local_state"] = meta["local_state"]
                out["hub_state"] = meta.get("hub_state") or None
                out["hub_moved"] = bool(meta.get("hub_moved"))
    if out.get("published"):
        out["status"] = PUBLISHED
    elif failed or refused:
        out["status"] = BLOCKED
    else:
        out["status"] = ERROR
    out["message"] = "; ".join(f"{k}: {m}" for k, m in failures.items() if m)[:1600]
    out["interrupted"] = out["status"] == ERROR and interrupted(res.all_events)
    return out


def _failure_text(event: Any) -> str:
    """The first line of a step failure's error (its message, never the stack): of the
    error the step's code raised (the innermost cause), not of Dagster's wrapper ("Error
    occurred while executing op ...", which names no reason)."""
    err = getattr(event.event_specific_data, "error", None)
    for _ in range(16):  # a cause chain is short; never follow a cycle
        cause = getattr(err, "cause", None)
        if cause is None or not str(getattr(cause, "message", "") or "").strip():
            break
        err = cause
    text = str(getattr(err, "message", "") or event.message or "").strip()
    if getattr(err, "cls_name", None) == "Failure":  # a step's own dg.Failure: its description
        text = re.sub(r"^[\w.]*\bFailure: ", "", text)
    return text.splitlines()[0] if text else ""


def partition_blocks(
    order: Sequence[str],
    keys: Sequence[str],
    sizes: Mapping[str, int] | None = None,
    max_trials: int | None = None,
) -> list[list[str]]:
    """``keys`` as blocks of consecutive partitions of ``order`` (the instance's partition
    order), so a partition range never takes in a partition that is not in ``keys``; with
    ``sizes`` (trials per partition) a block holds at most ``max_trials`` trials (a larger
    partition is a block of its own), so one ingest run's memory is bounded."""
    position = {k: i for i, k in enumerate(order)}
    runs: list[list[str]] = []  # the keys in runs of consecutive partitions
    last = -2
    for k in sorted(set(keys), key=lambda k: position[k]):
        if position[k] == last + 1:
            runs[-1].append(k)
        else:
            runs.append([k])
        last = position[k]
    if max_trials is None:
        return runs
    return [block for run in runs for block in capped(run, sizes or {}, max_trials)]


def range_tags(block: Sequence[str]) -> dict[str, str]:
    """Run tags of a partition range (none for a single partition)."""
    return range_run_tags(block) if len(block) > 1 else {}


def run_release(
    runs: Sequence[str],
    out_dir: str | None = None,
    hub_repo: str | None = None,
    *,
    tasks: str | None = None,
    plan: str | None = None,
    quarantine: str | None = None,
    staging_dir: str | None = None,
    reread: bool = False,
    progress: Phases | None = None,
) -> ReleaseResult:
    from bf_assets.settings import default_out_dir, default_run_root, default_tasks_root

    roots = [str(Path(r).resolve()) for r in runs] or [str(default_run_root())]
    if not runs and tasks is None and default_tasks_root().is_dir():
        tasks = str(default_tasks_root())  # the sample's task tree goes with the sample runs
    # never resolve --out: it is a link to the current release, and must stay the link
    out = Path(os.path.abspath(out_dir)) if out_dir else default_out_dir()
    try:
        check_targets(out, hub_repo)  # nothing is touched when a precondition fails
    except PublishError as exc:
        md = out / REPORT_MD
        return ReleaseResult(
            False, md, md.with_suffix(".json"), out, "not_publishable", [], message=str(exc)
        )
    check_places(roots)  # raises UnwritablePlace
    # One release at a time into one output folder, and over one set of run roots (their
    # warehouse tables); a second release waits for the first, then runs.
    with (
        _waiting_lock(out.parent / f".{out.name}.release.lock", f"into {out}"),
        _waiting_lock(_warehouse_lock(roots), "over the same run roots"),
        _waiting_lock(_hub_lock(hub_repo), f"to {hub_repo}") if hub_repo else nullcontext(),
    ):
        # The job directories are found and fingerprinted before anything is read: the
        # ingest plan says which of them need reading (each ingest run finds its own trials).
        phases = progress or Phases(enabled=False)
        with phases.phase("walking the run roots"):
            trials = discover_trials(roots)
        sizes = Counter(t.job_key for t in trials)
        options = ReviewOptions(tasks_dir=tasks, plan_path=plan, quarantine_path=quarantine)
        ingest = plan_ingest(local_tables(roots), trials, review_context(options), reread=reread)
        del trials
        return _release(
            roots,
            sizes,
            ingest,
            out,
            hub_repo,
            tasks=tasks,
            plan=plan,
            quarantine=quarantine,
            staging_dir=staging_dir,
            progress=phases,
        )


def _hub_lock(repo_id: str) -> Path:
    """One machine-wide lock per Hub repo: two releases never commit to one repo at once."""
    digest = hashlib.sha256(repo_id.strip().lower().encode()).hexdigest()[:16]
    return Path(tempfile.gettempdir()) / f"bf-assets-hub-{digest}.lock"


def _warehouse_lock(roots: Sequence[str]) -> Path:
    from bf_assets.settings import local_warehouse

    return local_warehouse(roots) / ".release.lock"


@contextmanager
def _waiting_lock(path: Path, what: str) -> Iterator[None]:
    """An exclusive lock; when another release holds it, say so on stderr and wait."""

    def busy() -> None:
        sys.stderr.write(f"bf-assets: another release is running {what}; waiting for it\n")

    with exclusive_lock(path, on_busy=busy):
        yield


def _ingest(
    job: Any,
    instance: Any,
    order: Sequence[str],
    sizes: Mapping[str, int],
    ingest: IngestPlan,
    on_block: Callable[[Sequence[str]], None] | None = None,
) -> tuple[list[str], list[str]]:
    """Run ``ingest_job`` over the job partitions of ``sizes`` (trials per partition) that
    ``ingest`` says to read: one run per block of consecutive partitions of at most
    :func:`ingest_run_trials` trials (never spanning a partition left as it is); the keys of
    the runs that failed, and why.  The ingest state is written after every run."""
    blocks = partition_blocks(order, ingest.to_read(sorted(sizes)), sizes, ingest_run_trials())
    failed: list[str] = []
    why: list[str] = []
    for block in blocks:
        res = job.execute_in_process(
            instance=instance,
            raise_on_error=False,
            tags={"release": "local", **range_tags(block)},
            run_config=QUIET,
            partition_key=block[0] if len(block) == 1 else None,
        )
        ingest.done(block, res.success)
        if on_block is not None:
            on_block(block)
        if not res.success and interrupted(res.all_events):
            # SIGINT or SIGTERM during the run: Dagster ended it, and the release stops here
            # (no further run is started; the run's partitions are read again next time)
            raise KeyboardInterrupt
        if not res.success:
            failed += block
            why += [_failure_text(e) for e in res.all_events if e.is_step_failure]
    return failed, why


INTERRUPTED = "DagsterExecutionInterruptedError"


def interrupted(events: Iterable[Any]) -> bool:
    """Whether a run's events say it was stopped by an interrupt (Dagster turns SIGINT and
    SIGTERM during a run into a step failure of source ``INTERRUPT``) rather than failed."""
    for e in events:
        if not (e.is_step_failure or e.is_run_failure):
            continue
        data = e.event_specific_data
        source = getattr(getattr(data, "error_source", None), "value", None)
        err = getattr(data, "error", None)
        if source == "INTERRUPT" or getattr(err, "cls_name", None) == INTERRUPTED:
            return True
    return False


def _release(
    roots: list[str],
    sizes: Mapping[str, int],
    ingest: IngestPlan,
    out: Path,
    hub_repo: str | None,
    *,
    tasks: str | None,
    plan: str | None,
    quarantine: str | None,
    staging_dir: str | None,
    progress: Phases,
) -> ReleaseResult:
    ensure_instance_home()
    # One "planned" event per asset for an ingest run over a range of partitions, not one per
    # asset and partition (5,000 events at 100,000 trials); the price, a partition of a failed
    # run not shown as failed, does not apply here: a failed ingest fails the release.
    os.environ.setdefault(PLANNED_SUBSET_ENV, "1")

    import dagster as dg

    from bf_assets.definitions import build_defs
    from bf_assets.defs.partitions import job_partitions
    from bf_assets.defs.publish import PublishTarget
    from bf_assets.defs.resources import RunRoots

    target_cfg: dict[str, Any] = {"out_dir": str(out), "hub_repo": hub_repo}
    if staging_dir:
        target_cfg["staging_dir"] = staging_dir
    defs = build_defs(
        run_roots=RunRoots(
            roots=roots, tasks_dir=tasks, plan_path=plan, quarantine_path=quarantine
        ),
        publish_target=PublishTarget(**target_cfg),
    )
    instance = dg.DagsterInstance.get()
    partitions = job_partitions.name or "trial_jobs"
    known = set(instance.get_dynamic_partitions(partitions))
    keys = sorted(sizes)
    new = [k for k in keys if k not in known]
    if new:
        instance.add_dynamic_partitions(partitions, new)
    order = instance.get_dynamic_partitions(partitions)
    if ingest.unchanged:  # tables this instance has no materialization of are made again
        ingest.keep_only_materialized(
            instance.get_materialized_partitions(dg.AssetKey(t)) for t in INGEST_TABLES
        )
    to_read = sum(sizes[k] for k in ingest.to_read(keys))
    with progress.phase("reading and reviewing trials", to_read) as advance:
        failed, why = _ingest(
            defs.resolve_job_def("ingest_job"),
            instance,
            order,
            sizes,
            ingest,
            on_block=lambda block: advance(sum(sizes[k] for k in block)),
        )
    md = out / REPORT_MD
    result = ReleaseResult(False, md, md.with_suffix(".json"), out, "not_publishable", failed)
    result.reused_partitions = len(ingest.unchanged)
    result.read_partitions = len(sizes) - len(ingest.unchanged)
    if failed:
        reasons = "; ".join(dict.fromkeys(w for w in why if w))
        result.message = (
            f"ingest failed for job(s) {', '.join(failed)}: {reasons or 'see the run log'}"
        )
        return result
    try:
        with progress.phase("dataset review, curation, publish gate and publishing"):
            res = defs.resolve_job_def("release_job").execute_in_process(
                instance=instance, raise_on_error=False, tags={"release": "local"}, run_config=QUIET
            )
    except Exception as exc:  # noqa: BLE001 (Dagster could not run the job: an outcome, said)
        result.message = f"release_job: {type(exc).__name__}: {exc}"[:800]
        return result
    outcome = _release_outcome(res)
    if outcome.get("interrupted"):  # told to stop (SIGTERM, Ctrl-C): as during an ingest run
        raise KeyboardInterrupt
    if outcome["status"] != PUBLISHED:  # nothing was published: the report is where it was made
        where = outcome.get("bundle") or None
        if where:
            result.report_md = Path(where) / REPORT_MD
        elif outcome.get("warehouse_report"):
            result.report_md = Path(outcome["warehouse_report"])
        result.report_json = result.report_md.with_suffix(".json")
    result.status = outcome["status"]
    result.ok = result.status == PUBLISHED
    result.verdict = outcome.get("verdict") or result.verdict
    result.failed_checks = outcome["failed_checks"]
    result.reasons = list(outcome.get("reasons") or [])
    result.excluded = dict(outcome.get("excluded") or {})
    result.exported = outcome.get("exported")
    result.tag = outcome.get("tag")
    result.hub_url = outcome.get("hub_url")
    result.hub_commit = outcome.get("hub_commit")
    result.local_state = outcome.get("local_state")
    result.hub_state = outcome.get("hub_state")
    result.hub_moved = bool(outcome.get("hub_moved"))
    result.message = outcome["message"]
    return result
