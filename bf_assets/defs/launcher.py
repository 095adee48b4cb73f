"""``WarmRunLauncher``: runs start in a forked, already warm run worker.

Set in the shipped instance config (``run_launcher`` in ``bf_assets/defaults/dagster.yaml``)
so that the UI's runs do not each pay a fresh interpreter importing Dagster and the
definitions (about 3 s of CPU a run here, of a 2 s sample run).  A run of a code location
named in ``locations`` is started by the warm worker of that location
(``bf_assets.defs.warm_worker``, started once, at the daemon's start by ``bf-assets daemon``
or at the first run otherwise); any other run, or any run while the warm worker cannot be
had, is launched by Dagster's ``DefaultRunLauncher`` through its code server, as before.

The warm worker runs in the launcher's environment (the daemon's Python and variables, plus
the location's ``.env``), so it is for a code location that runs in the daemon's own
environment: a workspace entry with its own ``executable_path`` goes the default way.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from dagster import Field, Permissive
from dagster._core.launcher.base import LaunchRunContext, RunLauncher
from dagster._core.launcher.default_run_launcher import DefaultRunLauncher
from dagster._serdes import ConfigurableClass, serialize_value
from dagster._serdes.config_class import ConfigurableClassData

log = logging.getLogger("bf_assets.launcher")

#: The run tag naming the process a warm worker forked for the run.
PID_TAG = "bf_assets/run_worker_pid"
#: How long the launcher waits for the warm worker to become ready, or to answer.
READY_TIMEOUT_S = 120.0
ANSWER_TIMEOUT_S = 30.0
DEFAULT_LOCATIONS = {"bf_assets": "bf_assets.definitions"}


class WarmWorkerError(Exception):
    pass


class StaleWarmWorker(WarmWorkerError):
    """The project's code or ``.env`` changed after the worker imported it."""


class WarmWorker:
    """The launcher's handle on one warm worker process and its two pipes."""

    def __init__(self, instance_ref: str, location: str, module: str) -> None:
        cmd_r, self._cmd_w = os.pipe()
        self._reply_r, reply_w = os.pipe()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "bf_assets.defs.warm_worker", str(cmd_r), str(reply_w),
             location, module],
            stdin=subprocess.PIPE, pass_fds=(cmd_r, reply_w), close_fds=True,
        )  # fmt: skip
        os.close(cmd_r)
        os.close(reply_w)
        assert self.proc.stdin is not None
        self.proc.stdin.write(instance_ref.encode() + b"\n")
        self.proc.stdin.close()
        self._replies = os.fdopen(self._reply_r, "r")
        self._lock = threading.Lock()
        self.ready = threading.Event()
        self.failure: str | None = None
        self._waiting: dict[str, list[str]] = {}
        threading.Thread(target=self._read, name="bf-warm-worker-replies", daemon=True).start()

    def _read(self) -> None:
        for line in self._replies:
            head, _, rest = line.strip().partition(" ")
            if head == "ready":
                self.ready.set()
            elif head == "failed":
                self.failure = rest
                self.ready.set()
            else:
                with self._lock:
                    box = self._waiting.get(head)
                if box is not None:
                    box.append(rest)
        if not self.ready.is_set():
            self.failure = self.failure or f"the warm worker exited ({self.proc.wait()})"
            self.ready.set()
        with self._lock:
            for box in self._waiting.values():
                box.append("error the warm worker exited")

    def alive(self) -> bool:
        return self.proc.poll() is None and self.failure is None

    def start(self, run_id: str) -> int:
        """Fork a run worker for ``run_id``; its pid."""
        if not self.ready.wait(READY_TIMEOUT_S):
            raise WarmWorkerError("the warm worker did not become ready")
        if not self.alive():
            raise WarmWorkerError(self.failure or "the warm worker is not running")
        box: list[str] = []
        with self._lock:
            self._waiting[run_id] = box
            try:
                os.write(self._cmd_w, run_id.encode() + b"\n")
            except OSError as exc:
                del self._waiting[run_id]
                raise WarmWorkerError(f"the warm worker is gone ({exc})") from None
        deadline = threading.Event()
        for _ in range(int(ANSWER_TIMEOUT_S * 20)):
            if box:
                break
            deadline.wait(0.05)
        with self._lock:
            self._waiting.pop(run_id, None)
        if not box:
            raise WarmWorkerError("the warm worker did not answer")
        answer = box[0]
        if answer.startswith("stale"):
            self.failure = f"{answer[len('stale') :].strip()} changed since it was imported"
            raise StaleWarmWorker(self.failure)
        if answer.startswith("error"):
            raise WarmWorkerError(answer[len("error") :].strip() or "unknown error")
        return int(answer)

    def stop(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self._cmd_w)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=10)
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


class WarmRunLauncher(RunLauncher, ConfigurableClass):
    def __init__(
        self,
        inst_data: ConfigurableClassData | None = None,
        locations: Mapping[str, str] | None = None,
    ) -> None:
        self._inst_data = inst_data
        self.locations = dict(DEFAULT_LOCATIONS if locations is None else locations)
        self._workers: dict[str, WarmWorker] = {}
        self._lock = threading.Lock()
        self._default = DefaultRunLauncher()
        super().__init__()

    # -- ConfigurableClass -----------------------------------------------------------------

    @property
    def inst_data(self) -> ConfigurableClassData | None:
        return self._inst_data

    @classmethod
    def config_type(cls) -> dict[str, Field]:
        return {
            "locations": Field(
                Permissive(),
                is_required=False,
                description="code location name -> module whose definitions the warm worker "
                "imports (default: bf_assets -> bf_assets.definitions)",
            )
        }

    @classmethod
    def from_config_value(
        cls, inst_data: ConfigurableClassData, config_value: Mapping[str, Any]
    ) -> WarmRunLauncher:
        locations = config_value.get("locations")
        return cls(inst_data=inst_data, locations=locations)

    def register_instance(self, instance: Any) -> None:
        super().register_instance(instance)
        self._default.register_instance(instance)

    # -- the warm workers ------------------------------------------------------------------

    def warm_up(self) -> None:
        """Start every location's warm worker now (``bf-assets daemon`` calls this at start,
        so the first run finds it ready)."""
        for location in self.locations:
            self._worker(location)

    def _worker(self, location: str) -> WarmWorker | None:
        module = self.locations.get(location)
        if module is None:
            return None
        with self._lock:
            worker = self._workers.get(location)
            if worker is None or not worker.alive():
                if worker is not None:
                    worker.stop()
                ref = serialize_value(self._instance.get_ref())
                worker = self._workers[location] = WarmWorker(ref, location, module)
            return worker

    # -- RunLauncher -----------------------------------------------------------------------

    def launch_run(self, context: LaunchRunContext) -> None:
        run = context.dagster_run
        origin = run.remote_job_origin
        location = origin.location_name if origin is not None else None
        worker = self._worker(location) if location and run.job_code_origin else None
        if worker is not None:
            try:
                pid = worker.start(run.run_id)
            except StaleWarmWorker as exc:
                log.info("run %s: %s; a new warm worker starts for the next run", run.run_id, exc)
                self._worker(location)  # replaced now, warm by the next run
            except WarmWorkerError as exc:
                log.warning("run %s: warm worker unavailable (%s); launching it the default way",
                            run.run_id, exc)  # fmt: skip
            else:
                self._instance.add_run_tags(run.run_id, {PID_TAG: str(pid)})
                return
        self._default.launch_run(context)

    def terminate(self, run_id: str) -> bool:
        run = self._instance.get_run_by_id(run_id)
        if run is None:
            return False
        pid = run.tags.get(PID_TAG)
        if pid is None:
            return self._default.terminate(run_id)
        if not _is_warm_run_worker(int(pid)):
            return False
        self._instance.report_run_canceling(run)
        with contextlib.suppress(ProcessLookupError):
            os.kill(int(pid), signal.SIGINT)  # KeyboardInterrupt: the run ends as canceled
        return True

    def dispose(self) -> None:
        with self._lock:
            workers, self._workers = list(self._workers.values()), {}
        for worker in workers:
            worker.stop()
        self._default.dispose()


def _is_warm_run_worker(pid: int) -> bool:
    """Whether ``pid`` is still a process forked by a warm worker (not a reused pid)."""
    if not Path("/proc/self/cmdline").exists():  # no procfs: only whether it is alive
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
    return b"bf_assets.defs.warm_worker" in cmdline
