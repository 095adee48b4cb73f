"""``bf-assets ui``: the Dagster UI for this project.

What ``dg dev`` does here: Dagster's own webserver and ``dagster-daemon run``, on
``$DAGSTER_HOME``'s instance and the workspace file, and the trial page server the UI's
links open (``--pages-port``), as child processes ended together.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import FrameType

from bf_assets.corpus.lifetime import end_with_parent
from bf_assets.settings import PAGES_URL_ENV, local_warehouse

#: How long the children get to shut down after SIGTERM before they are killed.
STOP_GRACE_S = 20.0


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    ui = sub.add_parser("ui", help="the Dagster UI and daemon on $DAGSTER_HOME")
    ui.add_argument("--host", default="127.0.0.1", help="webserver host (default 127.0.0.1)")
    ui.add_argument("--port", "-p", type=int, default=3000, help="webserver port (default 3000)")
    ui.add_argument(
        "--workspace",
        "-w",
        action="append",
        metavar="FILE",
        help="workspace file (default ./workspace.yaml, else the project's)",
    )
    ui.add_argument(
        "--pages-port",
        type=int,
        default=3001,
        help="port of the trial page server the UI links to (default 3001; 0: none)",
    )
    ui.add_argument("--log-level", default="info", help="Dagster's log level (default info)")


class ServiceUsageError(Exception):
    """A bad flag or a missing file, said before anything starts."""


def workspace_files(given: Sequence[str] | None) -> list[str]:
    """The workspace files to load: those given, else ``./workspace.yaml``, else the one
    beside the package (a checkout); an error when none exists."""
    if given:
        files = [Path(g) for g in given]
    else:
        here = Path("workspace.yaml")
        project = Path(os.environ.get("BF_PROJECT_DIR", Path(__file__).parents[2]))
        files = [here if here.is_file() else project / "workspace.yaml"]
    missing = [str(f) for f in files if not f.is_file()]
    if missing:
        raise ServiceUsageError(f"workspace file not found: {', '.join(missing)} (pass -w FILE)")
    return [str(f.resolve()) for f in files]


def ui(args: argparse.Namespace) -> int:
    """Start the webserver and the daemon; end both when either ends or on SIGINT/SIGTERM.
    The exit code is the first child's to end on its own, 0 after an interrupt."""
    files = workspace_files(args.workspace)
    if not os.environ.get("DAGSTER_HOME"):
        raise ServiceUsageError(
            "DAGSTER_HOME is not set: the UI needs an instance folder (./dev ui sets one)"
        )
    env = dict(os.environ, DAGSTER_IS_DEV_CLI="1")
    made = make_instance_storage(env)
    if made != 0:
        sys.stderr.write(f"bf-assets ui: the instance at $DAGSTER_HOME could not be opened "
                         f"(exit {made}); see above\n")  # fmt: skip
        return made
    ws = [a for f in files for a in ("-w", f)]
    level = ["--dagster-log-level", args.log_level]
    commands = {
        "webserver": [sys.executable, "-m", "dagster_webserver", "-h", args.host,
                      "-p", str(args.port), *level, *ws],
        "daemon": [_console_script("dagster-daemon"), "run", "--log-level", args.log_level, *ws],
    }  # fmt: skip
    if args.pages_port and _port_free(args.host, args.pages_port):
        commands["trial page server"] = pages_server_argv(args.host, args.pages_port)
        env[PAGES_URL_ENV] = f"http://{_url_host(args.host)}:{args.pages_port}"
    elif args.pages_port:
        sys.stderr.write(f"bf-assets ui: port {args.pages_port} is in use: no trial page "
                         "server (--pages-port N); the UI links the pages as files\n")  # fmt: skip
    return supervise(commands, env)


def pages_server_argv(host: str, port: int) -> list[str]:
    """The trial page server over the local warehouse (:mod:`bf_assets.cli.pages_server`)."""
    root = str(local_warehouse())
    return [sys.executable, "-m", "bf_assets.cli.pages_server", "--root", root,
            "--host", host, "--port", str(port)]  # fmt: skip


def _port_free(host: str, port: int) -> bool:
    """Whether the page server can listen on ``host:port`` now (a taken port would end it,
    and with it the UI)."""
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError:
            return False
    return True


def _url_host(host: str) -> str:
    """The host a browser on this machine reaches a server bound to ``host`` at."""
    return "127.0.0.1" if host in ("0.0.0.0", "", "::") else host


def _console_script(name: str) -> str:
    """Dagster's command ``name`` installed beside this interpreter (else on ``PATH``)."""
    beside = Path(sys.executable).with_name(name)
    return str(beside) if beside.is_file() else name


# Opens the instance once: its storages create their databases and tables (and stamp their
# schema version) when they are missing.
_MAKE_STORAGE = "import dagster; dagster.DagsterInstance.get().dispose()"


def make_instance_storage(env: dict[str, str]) -> int:
    """Create the instance's storage (a new home's SQLite databases, or a database's tables)
    in one process before the webserver and the daemon start; its exit status.

    Started together on a new home, both would create and stamp the same databases at once:
    ``runs.db`` could then hold two schema versions, and every process opening the instance
    (the code location's server first) fails with "Version table 'alembic_version' has more
    than one head present"."""
    return subprocess.run([sys.executable, "-c", _MAKE_STORAGE], env=env, check=False).returncode


def supervise(commands: dict[str, list[str]], env: dict[str, str]) -> int:
    """Run the commands as children; when one ends, or this process gets SIGINT or SIGTERM,
    stop the others (SIGTERM, then SIGKILL after :data:`STOP_GRACE_S`).

    On Linux each child is also told by the kernel (``PR_SET_PDEATHSIG``) to end when this
    process does, so killing it outright does not leave a webserver and a daemon behind."""
    stopping: list[int] = []

    def on_signal(signo: int, _frame: FrameType | None) -> None:
        stopping.append(signo)

    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    children: dict[str, subprocess.Popen[bytes]] = {}
    code = 0
    try:
        for name, argv in commands.items():
            children[name] = subprocess.Popen(argv, env=env, preexec_fn=_end_with_parent())
        while not stopping:
            ended = [(n, c.returncode) for n, c in children.items() if c.poll() is not None]
            if ended:
                name, code = ended[0]
                sys.stderr.write(f"bf-assets ui: the {name} ended (exit {code}); stopping\n")
                break
            time.sleep(0.25)
    finally:
        for child in children.values():
            if child.poll() is None:
                child.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + STOP_GRACE_S
        for child in children.values():
            with contextlib.suppress(subprocess.TimeoutExpired):
                child.wait(timeout=max(0.1, deadline - time.monotonic()))
            if child.poll() is None:
                child.kill()
                child.wait()
        for s, handler in previous.items():
            signal.signal(s, handler)
    return code if not stopping else 0


def _end_with_parent() -> Callable[[], None]:
    """A ``preexec_fn`` ending the child with this process (``bf_assets.corpus.lifetime``); the
    supervisor forks from its only thread, where a ``preexec_fn`` is safe."""
    parent = os.getpid()

    def preexec() -> None:
        end_with_parent(parent)

    return preexec
