"""The Dagster daemon with a backfill loop of a chosen interval.

Dagster 1.13's backfill daemon looks at the instance's backfills every 30 s, a constant of
the daemon (``dagster._daemon.controller``), not a setting of the instance.  "Materialize
all" in the UI is an asset backfill: it waits for one look to launch the ingest runs and
another to launch the release assets once ingest is done, so about 30 s of idle time each
(most of the UI's wall time on the sample).  This daemon is Dagster's own set of daemons,
built from the instance as ``dagster-daemon run`` builds them, except that the backfill
daemon looks every ``backfill_interval`` seconds.  Each look with nothing requested is
two indexed reads of the backfills table.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from collections.abc import Iterator, Sequence

from dagster._core.instance import DagsterInstance
from dagster._core.workspace.context import IWorkspaceProcessContext
from dagster._core.workspace.load_target import WorkspaceFileTarget
from dagster._daemon.backfill import execute_backfill_iteration
from dagster._daemon.controller import (
    DEFAULT_DAEMON_HEARTBEAT_TOLERANCE_SECONDS,
    create_daemon_of_type,
    daemon_controller_from_instance,
)
from dagster._daemon.daemon import (
    BackfillDaemon,
    DaemonIterator,
    DagsterDaemon,
    SpanMarker,
    get_default_daemon_logger,
)
from dagster._daemon.utils import DaemonErrorCapture

#: The loop of ``bf-assets daemon`` and ``bf-assets ui`` unless told otherwise: as often as
#: the shipped instance's run queue is drained.
DEFAULT_BACKFILL_INTERVAL_S = 1.0
ENV_BACKFILL_INTERVAL = "BF_BACKFILL_INTERVAL_SECONDS"


def backfill_interval(value: str | float | None = None) -> float:
    """The interval given, else ``$BF_BACKFILL_INTERVAL_SECONDS``, else the default; a value
    that is not a positive number is an error naming where it came from."""
    source = "--backfill-interval"
    if value is None:
        value = os.environ.get(ENV_BACKFILL_INTERVAL)
        source = ENV_BACKFILL_INTERVAL
    if value is None or value == "":
        return DEFAULT_BACKFILL_INTERVAL_S
    try:
        seconds = float(value)
    except ValueError:
        raise ValueError(f"{source} must be a number of seconds, got {value!r}") from None
    if not seconds > 0 or seconds > 3600:
        raise ValueError(f"{source} must be between 0 and 3600 seconds, got {value!r}")
    return seconds


class BackfillEvery(BackfillDaemon):
    """Dagster's backfill daemon (its settings, thread pools and iteration), looking at the
    backfills every ``interval_seconds`` instead of every 30 s."""

    def __init__(self, settings: dict, interval_seconds: float) -> None:
        super().__init__(settings)
        self.interval_seconds = interval_seconds
        # its log lines read as Dagster's backfill daemon's ("dagster.daemon.BackfillDaemon")
        self._logger = get_default_daemon_logger(BackfillDaemon.__name__)

    def core_loop(
        self,
        workspace_process_context: IWorkspaceProcessContext,
        shutdown_event: threading.Event,
    ) -> DaemonIterator:
        futures: dict = {}
        while not shutdown_event.is_set():
            started = time.monotonic()
            yield SpanMarker.START_SPAN
            try:
                yield from execute_backfill_iteration(
                    workspace_process_context,
                    self._logger,
                    threadpool_executor=self._threadpool_executor,
                    backfill_futures=futures,
                    submit_threadpool_executor=self._submit_threadpool_executor,
                )
            except Exception:
                yield DaemonErrorCapture.process_exception(
                    exc_info=sys.exc_info(),
                    logger=self._logger,
                    log_message="BackfillDaemon caught an error",
                )
            yield SpanMarker.END_SPAN
            shutdown_event.wait(max(0.0, self.interval_seconds - (time.monotonic() - started)))
            yield None


def daemons_of(instance: DagsterInstance, interval_seconds: float) -> Iterator[DagsterDaemon]:
    """The daemons the instance requires, the backfill daemon looking every
    ``interval_seconds``."""
    for kind in instance.get_required_daemon_types():
        if kind == BackfillDaemon.daemon_type():
            yield BackfillEvery(dict(instance.get_backfill_settings()), interval_seconds)
        else:
            yield create_daemon_of_type(kind, instance)


def run_daemon(
    workspace: Sequence[str],
    interval_seconds: float,
    *,
    log_level: str = "info",
    log_format: str = "colored",
) -> None:
    """Run the daemons on ``$DAGSTER_HOME``'s instance and the code locations of the
    workspace files until interrupted (SIGINT or SIGTERM)."""
    from dagster._utils.interrupts import capture_interrupts, setup_interrupt_handlers

    setup_interrupt_handlers()
    logging.getLogger("dagster").info(
        "bf-assets daemon: the backfill daemon looks every %g s", interval_seconds
    )
    try:
        with capture_interrupts(), DagsterInstance.get() as instance:
            warm_up = getattr(instance.run_launcher, "warm_up", None)
            if callable(warm_up):  # warming while the code servers start: the first run finds
                warm_up()  # its warm worker ready
            _run_controller(instance, workspace, interval_seconds, log_level, log_format)
    except KeyboardInterrupt:
        return


def _run_controller(
    instance: DagsterInstance,
    workspace: Sequence[str],
    interval_seconds: float,
    log_level: str,
    log_format: str,
) -> None:
    tolerance = os.environ.get("DAGSTER_DAEMON_HEARTBEAT_TOLERANCE")
    with daemon_controller_from_instance(
        instance,
        workspace_load_target=WorkspaceFileTarget(paths=list(workspace)),
        heartbeat_tolerance_seconds=(
            int(tolerance) if tolerance else DEFAULT_DAEMON_HEARTBEAT_TOLERANCE_SECONDS
        ),
        gen_daemons=lambda inst: daemons_of(inst, interval_seconds),
        log_level=log_level,
        log_format=log_format,
    ) as controller:
        controller.check_daemon_loop()
