"""The warm run worker: one process that has imported Dagster and a code location once, and
forks a run worker for each run it is told to start.

Dagster's default launcher asks the code server for a run worker, which is a fresh
interpreter (``multiprocessing`` "spawn") importing Dagster and the definitions again: about
3 s of CPU a run here, most of a small run.  This process does that once, in the order a
run worker does it (the location's environment variables from its ``.env`` injected first,
then the module imported and its repository built), and then forks: the child is a run
worker with nothing left to import, executing the run as ``dagster api execute_run`` does.

It talks to the launcher (``bf_assets.defs.launcher``) over two pipes given on the command
line, never its stdout (the runs' own output goes there, as a run worker's does):

    launcher -> worker   "<run id>\\n"            start that run
    worker -> launcher   "ready <pid>\\n"         once warm
                         "<run id> <pid>\\n"      the run's worker was forked as <pid>
                         "<run id> error <msg>\\n"  it could not be
                         "<run id> stale <file>\\n" a file it imported changed since it
                                                  warmed: it starts no more runs

The process is single-threaded when it forks (checked; a thread started by an import makes
it refuse to fork, and the launcher then starts runs the default way).  It ends when the
launcher's end of the pipe closes; the runs it forked go on to their end.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import select
import signal
import sys
import threading

#: The command-pipe line longer than this is refused (a run id is 36 characters).
MAX_LINE = 4096


def warm(instance_ref: str, location: str, module: str) -> dict[str, int]:
    """Inject ``location``'s environment, import ``module`` and build its repository; the
    files the warm state came from (:func:`source_files`) and their mtimes."""
    from dagster._core.instance import DagsterInstance, InstanceRef
    from dagster._serdes import deserialize_value

    with DagsterInstance.from_ref(deserialize_value(instance_ref, InstanceRef)) as instance:
        instance.inject_env_vars(location)
    # what a run worker imports to execute a run, so the forked one has nothing to import
    importlib.import_module("dagster._grpc.impl")
    importlib.import_module("dagster._utils.hosted_user_process")
    mod = importlib.import_module(module)
    for value in vars(mod).values():
        get_repo = getattr(value, "get_repository_def", None)
        if callable(get_repo) and type(value).__name__ == "Definitions":
            get_repo()
    return _mtimes(source_files(module))


def source_files(module: str) -> list[str]:
    """The project's own files the warm state depends on: every imported module's file
    outside the interpreter's installation (the project's code, an editable install
    included), and the ``.env`` beside the top package of ``module`` (read at import)."""
    roots = tuple({os.path.realpath(p) + os.sep for p in (sys.prefix, sys.base_prefix,
                                                       sys.exec_prefix)})  # fmt: skip
    files = set()
    for mod in list(sys.modules.values()):
        path = getattr(mod, "__file__", None)
        if isinstance(path, str) and path.endswith(".py"):
            real = os.path.realpath(path)
            if not real.startswith(roots):
                files.add(real)
    top = sys.modules.get(module.split(".")[0])
    top_file = getattr(top, "__file__", None)
    if isinstance(top_file, str):
        files.add(
            os.path.join(os.path.dirname(os.path.dirname(os.path.realpath(top_file))), ".env")
        )
    return sorted(files)


def _mtimes(files: list[str]) -> dict[str, int]:
    out = {}
    for f in files:
        try:
            out[f] = os.stat(f).st_mtime_ns
        except OSError:
            out[f] = -1  # absent: its appearing is a change too
    return out


def changed(seen: dict[str, int]) -> str | None:
    """The first watched file whose mtime differs from when the worker warmed, if any."""
    now = _mtimes(list(seen))
    return next((f for f, m in seen.items() if now[f] != m), None)


def execute_run(instance_ref: str, run_id: str) -> int:
    """Execute the run in this (forked) process, as ``dagster api execute_run`` does; the
    run's failure is in its event log, the exit code says only whether the worker ran it."""
    from dagster._core.events import EngineEventData
    from dagster._core.instance import DagsterInstance, InstanceRef
    from dagster._core.origin import JobPythonOrigin
    from dagster._core.storage.dagster_run import DagsterRunStatus
    from dagster._grpc.impl import core_execute_run
    from dagster._serdes import deserialize_value
    from dagster._utils.hosted_user_process import recon_job_from_origin

    with DagsterInstance.from_ref(deserialize_value(instance_ref, InstanceRef)) as instance:
        run = instance.get_run_by_id(run_id)
        if run is None or not isinstance(run.job_code_origin, JobPythonOrigin):
            sys.stderr.write(f"bf-assets warm worker: run {run_id} not found or has no origin\n")
            return 1
        if run.status not in (DagsterRunStatus.STARTING, DagsterRunStatus.NOT_STARTED):
            return 0  # canceled or taken by someone else meanwhile
        instance.report_engine_event(
            f"Started process for run (pid: {os.getpid()}), forked from a warm worker.",
            run,
            EngineEventData.in_process(os.getpid()),
        )
        recon = recon_job_from_origin(run.job_code_origin)
        failed = False
        try:
            for _event in core_execute_run(recon, run, instance, inject_env_vars=True):
                pass
        except BaseException:  # core_execute_run has written the failure to the event log
            failed = True
        return 1 if failed else 0


def _fork_run(instance_ref: str, run_id: str, keep: set[int]) -> int:
    pid = os.fork()
    if pid:
        return pid
    code = 1
    try:
        for fd in keep:
            os.close(fd)
        os.setsid()  # its own group: terminating the run never signals the warm worker
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        code = execute_run(instance_ref, run_id)
    except BaseException as exc:  # the child must never return into the server loop
        sys.stderr.write(f"bf-assets warm worker: run {run_id}: {type(exc).__name__}: {exc}\n")
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError):
                stream.flush()
        os._exit(code)


def _reap() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def serve(cmd_fd: int, reply_fd: int, instance_ref: str, location: str, module: str) -> int:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the daemon's Ctrl-C is not for the runs
    reply = os.fdopen(reply_fd, "w", buffering=1)
    try:
        seen = warm(instance_ref, location, module)
    except Exception as exc:
        reply.write(
            f"failed {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}\n"
        )
        return 1
    reply.write(f"ready {os.getpid()}\n")
    buf = b""
    while True:
        readable, _, _ = select.select([cmd_fd], [], [], 1.0)
        _reap()
        if not readable:
            continue
        chunk = os.read(cmd_fd, 4096)
        if not chunk:
            return 0  # the launcher is gone
        buf += chunk
        if len(buf) > MAX_LINE and b"\n" not in buf:
            reply.write("- error line too long\n")
            buf = b""
            continue
        *lines, buf = buf.split(b"\n")
        for line in lines:
            run_id = line.decode(errors="replace").strip()
            if not run_id:
                continue
            if threading.active_count() > 1:
                reply.write(f"{run_id} error threads are running in the warm worker\n")
                continue
            stale = changed(seen)
            if stale is not None:  # the code was edited (a reload in the UI): a new worker
                reply.write(f"{run_id} stale {stale}\n")
                continue
            try:
                pid = _fork_run(instance_ref, run_id, {cmd_fd, reply_fd})
            except OSError as exc:
                reply.write(f"{run_id} error {exc}\n")
                continue
            reply.write(f"{run_id} {pid}\n")


def main(argv: list[str]) -> int:
    cmd_fd, reply_fd, location, module = int(argv[0]), int(argv[1]), argv[2], argv[3]
    instance_ref = sys.stdin.readline().strip()  # too long for a command line
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    return serve(cmd_fd, reply_fd, instance_ref, location, module)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
