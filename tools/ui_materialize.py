"""How long "Materialize all" in the Dagster UI takes, next to ``bf-assets release``.

On the sample (``data/runs``) and a fresh temporary instance seeded with the shipped
``bf_assets/defaults/dagster.yaml`` (or ``--config``), this starts the webserver and the
daemon as ``./dev ui`` does (``bf-assets ui -w workspace.yaml`` in the instance folder), registers
the job directories as partitions (what the ``new_job_dirs`` sensor's first tick does; the
sensor itself stays stopped), opens the global asset lineage in Debian's chromium through
Playwright, clicks "Materialize all", picks "All" partitions and "Launch backfill", and waits
until the backfill and every run it launched have finished.  Then, in the same invocation,
it times ``bf-assets release`` on the same sample with another fresh instance, and compares
what the two published.

    .venv/bin/python tools/ui_materialize.py [--config FILE] [--env KEY=VALUE]... [--json OUT]

Reported (seconds): click → last run finished; the runs' own execution (RUN_START →
RUN_SUCCESS, and the steps inside it); the idle time (no run executing: backfill daemon,
queue, run-worker start); the CLI release's wall and CPU; the ratio UI / CLI (the target is
≤ 2).  Exit status 1 when a run or the backfill did not succeed, or the UI published other
bytes than the CLI.  Needs ``playwright`` (the test extra)
and ``apt-get install chromium``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import resource
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
SHIPPED = REPO / "bf_assets" / "defaults" / "dagster.yaml"
TERMINAL_RUN = {"SUCCESS", "FAILURE", "CANCELED"}
TERMINAL_BACKFILL = {"COMPLETED", "COMPLETED_SUCCESS", "COMPLETED_FAILED", "FAILED", "CANCELED"}
REPO_SELECTOR = {"repositoryLocationName": "bf_assets", "repositoryName": "__repository__"}


# --------------------------------------------------------------------------- the UI server


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def gql(base: str, query: str, variables: Mapping[str, Any] | None = None) -> dict[str, Any]:
    body = json.dumps({"query": query, "variables": dict(variables or {})}).encode()
    req = urllib.request.Request(
        base + "/graphql", data=body, headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(req, timeout=60) as resp:  # noqa: S310 (loopback only)
        out = json.load(resp)
    if out.get("errors"):
        raise RuntimeError(f"GraphQL errors: {out['errors']}")
    return out["data"]


def ui_env(home: Path, work: Path, extra: Mapping[str, str]) -> dict[str, str]:
    """The environment ``./dev ui`` gives ``bf-assets ui``, with the warehouse and the published
    folder in ``work`` (never the checkout's ``data/``)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BF_", "DAGSTER_"))}
    env.update(
        DAGSTER_HOME=str(home),
        DAGSTER_DISABLE_TELEMETRY="1",
        BF_PROJECT_DIR=str(REPO),
        BF_WAREHOUSE=str(work / "warehouse"),
        BF_PUBLISH_DIR=str(work / "published"),
        BF_EXECUTOR="in_process",  # ./dev ui's default
        DAGSTER_PROJECT_ENV_FILE_PATHS=json.dumps({"bf_assets": str(REPO)}),
    )
    env.update(extra)
    return env


def fresh_home(home: Path, config: Path) -> None:
    home.mkdir(parents=True)
    shutil.copyfile(config, home / "dagster.yaml")


def start_ui(home: Path, env: Mapping[str, str], port: int, log: Path) -> subprocess.Popen[bytes]:
    """``bf-assets ui -w workspace.yaml`` in the instance folder, as ``./dev ui`` runs it (the
    webserver and ``dagster-daemon run``); its own process group, to stop it whole."""
    cmd = [str(BIN / "bf-assets"), "ui", "-w", str(REPO / "workspace.yaml"), "-p", str(port)]
    with log.open("wb") as out:
        return subprocess.Popen(
            cmd, cwd=home, env=dict(env), stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip


def stop_ui(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is not None:
        return
    os.killpg(proc.pid, signal.SIGINT)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=20)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)  # the children that outlived bf-assets ui
    proc.wait(timeout=20)


def session_cpu(sid: int) -> float:
    """CPU seconds (user + sys) used so far by the processes of session ``sid``: the live
    ones and zombies, plus the children they have reaped (``cutime``/``cstime``)."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            rest = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue  # the process ended meanwhile
        if int(rest[3]) == sid:  # field 6, session
            total += sum(int(x) for x in rest[11:15])  # utime stime cutime cstime
    return total / tick


DAEMONS_Q = "{ instance { daemonHealth { allDaemonStatuses { daemonType healthy required } } } }"
LOCATION_Q = """{ workspaceOrError { ... on Workspace { locationEntries { name loadStatus
  locationOrLoadError { __typename } } } } }"""


def wait_ready(base: str, proc: subprocess.Popen[bytes], seconds: float) -> float:
    """Wait until the webserver answers, the code location is loaded and every required
    daemon reports healthy; the seconds it took."""
    t0 = time.monotonic()
    deadline = t0 + seconds
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"the UI exited early (status {proc.returncode})")
        try:
            entries = gql(base, LOCATION_Q)["workspaceOrError"]["locationEntries"]
            loaded = entries and all(
                e["loadStatus"] == "LOADED"
                and e["locationOrLoadError"]["__typename"] == "RepositoryLocation"
                for e in entries
            )
            statuses = gql(base, DAEMONS_Q)["instance"]["daemonHealth"]["allDaemonStatuses"]
            healthy = all(d["healthy"] for d in statuses if d["required"])
            if loaded and healthy:
                return time.monotonic() - t0
        except (OSError, RuntimeError, KeyError, TypeError):
            pass
        time.sleep(1)
    raise SystemExit(f"the UI at {base} was not ready within {seconds:.0f} s")


ADD_PARTITION_M = """mutation($r: RepositorySelector!, $d: String!, $k: String!) {
  addDynamicPartition(repositorySelector: $r, partitionsDefName: $d, partitionKey: $k) {
    __typename ... on PythonError { message } ... on UnauthorizedError { message } } }"""


def add_partitions(base: str, keys: Sequence[str]) -> None:
    for key in keys:
        res = gql(base, ADD_PARTITION_M, {"r": REPO_SELECTOR, "d": "trial_jobs", "k": key})
        kind = res["addDynamicPartition"]["__typename"]
        if kind not in ("AddDynamicPartitionSuccess", "DuplicateDynamicPartitionError"):
            raise SystemExit(f"could not add partition {key}: {res}")


def sample_job_keys() -> list[str]:
    sys.path.insert(0, str(REPO))
    from bf_assets.ingest.discovery import discover_jobs

    return [j.key for j in discover_jobs([str(REPO / "data" / "runs" / "jobs")])]


# --------------------------------------------------------------------------- the browser


def click_materialize_all(base: str, chromium: str, shot: Path | None) -> float:
    """Open the global asset lineage, click "Materialize all", choose "All" partitions and
    "Launch backfill" as a user does; the wall-clock time of that last click."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1600, "height": 1000})
        page.goto(base + "/asset-groups", wait_until="networkidle", timeout=180_000)
        materialize = page.get_by_role("button", name="Materialize all").first
        materialize.wait_for(timeout=120_000)
        page.wait_for_timeout(2000)  # the first-visit newsletter dialog comes up late
        skip = page.get_by_role("button", name="Skip")
        if skip.count():
            skip.first.click()
            page.wait_for_timeout(500)
        materialize.click(timeout=120_000)
        page.get_by_text("Launch runs to materialize").wait_for(timeout=120_000)
        page.get_by_role("button", name="All", exact=True).click()
        launch = page.get_by_role("button", name="Launch backfill")
        launch.wait_for(timeout=60_000)
        clicked = time.time()
        launch.click()
        page.get_by_text("Created backfill").wait_for(timeout=120_000)
        if shot is not None:
            page.screenshot(path=str(shot))
        browser.close()
    return clicked


ASSET_KEYS_Q = "{ assetNodes { assetKey { path } isMaterializable } }"
LAUNCH_BACKFILL_M = """mutation($p: LaunchBackfillParams!) { launchPartitionBackfill(backfillParams: $p) {
  __typename ... on LaunchBackfillSuccess { backfillId } ... on PythonError { message } } }"""


def launch_backfill(base: str, keys: Sequence[str]) -> float:
    """What the dialog's "Launch backfill" sends for "Materialize all" with "All" partitions
    (every materializable asset, the partitions by name, the UI's tag), without a browser;
    the wall-clock time it was sent."""
    nodes = gql(base, ASSET_KEYS_Q)["assetNodes"]
    params = {
        "assetSelection": [n["assetKey"] for n in nodes if n["isMaterializable"]],
        "partitionNames": list(keys),
        "fromFailure": False,
        "tags": [{"key": "dagster/from_ui", "value": "true"}],
    }
    sent = time.time()
    res = gql(base, LAUNCH_BACKFILL_M, {"p": params})["launchPartitionBackfill"]
    if res["__typename"] != "LaunchBackfillSuccess":
        raise SystemExit(f"the backfill was not launched: {res}")
    return sent


BACKFILLS_Q = """{ partitionBackfillsOrError(limit: 10) { ... on PartitionBackfills {
  results { id status timestamp endTimestamp numPartitions runs(limit: 100) { runId status } } } } }"""


def wait_done(base: str, seconds: float) -> dict[str, Any]:
    """Poll until the one backfill and every run it launched are finished."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        results = gql(base, BACKFILLS_Q)["partitionBackfillsOrError"]["results"]
        if results:
            bf = results[0]
            runs_done = all(r["status"] in TERMINAL_RUN for r in bf["runs"])
            if bf["status"] in TERMINAL_BACKFILL and runs_done:
                return bf
        time.sleep(1)
    raise SystemExit(f"the backfill did not finish within {seconds:.0f} s")


# --------------------------------------------------------------------------- the timeline


@dataclass
class RunTimes:
    run_id: str
    status: str
    what: str  # the partition range or "unpartitioned"
    created: float
    launched: float | None  # RUN_STARTING: the queue daemon handed it to the run launcher
    started: float | None  # RUN_START: the run worker is up and executing
    ended: float | None
    steps: list[tuple[str, float, float]] = field(default_factory=list)

    @property
    def execution(self) -> float:
        return (self.ended - self.started) if self.started and self.ended else 0.0

    @property
    def materialized(self) -> float:
        """When its last step ended (the backfill daemon goes on from the materializations,
        not from the run's end)."""
        return max((e for _, _, e in self.steps), default=self.ended or self.created)

    @property
    def in_steps(self) -> float:
        return union_length([(s, e) for _, s, e in self.steps])


def union_length(spans: Sequence[tuple[float, float]]) -> float:
    total, end = 0.0, float("-inf")
    for s, e in sorted(spans):
        if e <= end:
            continue
        total += e - max(s, end)
        end = e
    return total


def run_timeline(home: Path, backfill_id: str) -> list[RunTimes]:
    """Each run of the backfill with its queue, launch, execution and step times, read from
    the instance's run storage and event log."""
    import dagster as dg

    instance = dg.DagsterInstance.from_config(str(home))
    et = dg.DagsterEventType
    out: list[RunTimes] = []
    records = instance.get_run_records(dg.RunsFilter(tags={"dagster/backfill": backfill_id}))
    for rec in records:
        run = rec.dagster_run
        first: dict[Any, float] = {}
        step_start: dict[str, float] = {}
        steps: list[tuple[str, float, float]] = []
        for entry in instance.all_logs(run.run_id):
            ev = entry.dagster_event
            if ev is None:
                continue
            first.setdefault(ev.event_type, entry.timestamp)
            if ev.event_type == et.STEP_START and ev.step_key:
                step_start[ev.step_key] = entry.timestamp
            if ev.event_type in (et.STEP_SUCCESS, et.STEP_FAILURE) and ev.step_key:
                steps.append((ev.step_key, step_start.get(ev.step_key, entry.timestamp),
                              entry.timestamp))  # fmt: skip
        tags = run.tags
        what = (
            f"{tags['dagster/asset_partition_range_start']}…{tags['dagster/asset_partition_range_end']}"
            if "dagster/asset_partition_range_start" in tags
            else tags.get("dagster/partition", "unpartitioned")
        )
        ended = first.get(et.RUN_SUCCESS) or first.get(et.RUN_FAILURE) or first.get(et.RUN_CANCELED)
        out.append(
            RunTimes(
                run.run_id,
                run.status.value,
                what,
                rec.create_timestamp.timestamp(),
                first.get(et.RUN_STARTING),
                first.get(et.RUN_START),
                ended,
                steps,
            )  # fmt: skip
        )
    instance.dispose()
    return sorted(out, key=lambda r: r.created)


ANSI = re.compile(r"\x1b\[[0-9;]*m")
DAEMON_LINE = re.compile(
    r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) \+0000 - dagster\.daemon\.(\w+) - \w+ - (.*)$"
)


def daemon_log(path: Path) -> list[tuple[float, str, str]]:
    """``(timestamp, daemon, message)`` of each daemon line ``bf-assets ui`` printed (the
    timestamps have whole seconds)."""
    out: list[tuple[float, str, str]] = []
    for line in path.read_text(errors="replace").splitlines():
        m = DAEMON_LINE.match(ANSI.sub("", line).strip())
        if m:
            when = datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S").replace(tzinfo=UTC)
            out.append((when.timestamp(), m.group(2), m.group(3)))
    return out


@dataclass
class Iterations:
    """The daemon iterations a run waited through, from the ``bf-assets ui`` log."""

    run_id: str
    idle_backfill_iterations: (
        int  # backfill iterations after its parents materialized, before its own
    )
    queue_iterations: int  # run-queue iterations that saw queued runs, created → launched


def parents_ready(run: RunTimes, runs: Sequence[RunTimes], clicked: float) -> float:
    """When everything the backfill had requested before ``run`` was materialized (the
    click for the first run)."""
    return max([clicked, *(x.materialized for x in runs if x.created < run.created)])


def waited_iterations(
    log: Sequence[tuple[float, str, str]], backfill_id: str, runs: Sequence[RunTimes],
    clicked: float,
) -> list[Iterations]:  # fmt: skip
    """For each run: the backfill iterations that started (by a whole second) after every
    run before it had materialized its assets, yet did not request it; and the run-queue iterations that
    found queued runs between its creation and its launch (1 when it went at the first)."""
    evaluating = [t for t, d, m in log if d == "BackfillDaemon" and m.startswith(
        f"Evaluating asset backfill {backfill_id}")]  # fmt: skip
    submitted = {
        m.split()[2]: t
        for t, d, m in log
        if d == "BackfillDaemon" and m.startswith("Submitted run")
    }
    sorting = [t for t, d, m in log if d == "QueuedRunCoordinatorDaemon" and m.startswith(
        "Priority sorting")]  # fmt: skip
    out: list[Iterations] = []
    for r in runs:
        ready = parents_ready(r, runs, clicked)
        sub = submitted.get(r.run_id, r.created)
        # the iterations that began after ``ready`` up to the one that submitted the run
        idle = max(0, sum(1 for t in evaluating if ready + 1 < t <= sub) - 1)
        start = r.launched or r.started or r.created
        seen = sum(1 for t in sorting if int(r.created) <= t <= start)
        out.append(Iterations(r.run_id, idle, seen))
    return out


@dataclass
class UiResult:
    config: str
    ready_s: float
    click_to_last_run_end_s: float
    run_execution_s: float  # sum over runs of RUN_START → end
    in_steps_s: float  # of which inside steps
    idle_s: float  # click → last end with no run executing
    backfill_wait_s: float  # run requested by the backfill daemon after its parents materialized
    queue_s: float  # created → RUN_STARTING (launched by the queue daemon)
    launch_s: float  # RUN_STARTING → RUN_START (run worker process start, code load)
    all_succeeded: bool
    backfill_status: str
    backfill_iterations: int  # backfill daemon iterations from the click to the last run's end
    cpu_s: float  # CPU of webserver, daemon, code servers and runs from the click to the end
    runs: list[dict[str, Any]]


def summarize(config: str, ready: float, clicked: float, bf: Mapping[str, Any],
              runs: Sequence[RunTimes], log: Sequence[tuple[float, str, str]],
              cpu: float = 0.0) -> UiResult:  # fmt: skip
    last_end = max((r.ended or 0.0) for r in runs) if runs else clicked
    executing = union_length([(r.started, r.ended) for r in runs if r.started and r.ended])
    backfill_wait = 0.0
    for r in runs:
        backfill_wait += max(0.0, r.created - parents_ready(r, runs, clicked))
    return UiResult(
        config=config,
        ready_s=round(ready, 1),
        click_to_last_run_end_s=round(last_end - clicked, 1),
        run_execution_s=round(sum(r.execution for r in runs), 1),
        in_steps_s=round(sum(r.in_steps for r in runs), 1),
        idle_s=round((last_end - clicked) - executing, 1),
        backfill_wait_s=round(backfill_wait, 1),
        queue_s=round(sum((r.launched or r.created) - r.created for r in runs), 1),
        launch_s=round(sum((r.started or 0) - (r.launched or r.created) for r in runs), 1),
        all_succeeded=bool(runs) and all(r.status == "SUCCESS" for r in runs),
        backfill_status=str(bf["status"]),
        cpu_s=round(cpu, 1),
        backfill_iterations=sum(
            1
            for t, d, m in log
            if d == "BackfillDaemon"
            and m.startswith(f"Evaluating asset backfill {bf['id']}")
            and clicked <= t + 1 <= last_end + 1
        ),  # fmt: skip
        runs=[
            {
                "run_id": r.run_id,
                "status": r.status,
                "assets": r.what,
                "created": round(r.created - clicked, 1),
                "launched": round((r.launched or r.created) - clicked, 1),
                "started": round((r.started or 0) - clicked, 1),
                "ended": round((r.ended or 0) - clicked, 1),
                "steps": [[k, round(s - clicked, 1), round(e - clicked, 1)] for k, s, e in r.steps],
                "idle_backfill_iterations": it.idle_backfill_iterations,
                "queue_iterations": it.queue_iterations,
            }  # fmt: skip
            for r, it in zip(runs, waited_iterations(log, bf["id"], runs, clicked), strict=True)
        ],
    )


def measure_ui(work: Path, config: Path, extra_env: Mapping[str, str], chromium: str | None,
               timeout: float) -> tuple[UiResult, Path]:  # fmt: skip
    """One "Materialize all" on a fresh instance: in chromium, or (``chromium=None``) the
    same backfill launched through GraphQL."""
    home = work / "home"
    fresh_home(home, config)
    env = ui_env(home, work, extra_env)
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    proc = start_ui(home, env, port, work / "ui.log")
    try:
        ready = wait_ready(base, proc, 600)
        keys = sample_job_keys()
        add_partitions(base, keys)
        cpu0 = session_cpu(proc.pid)
        clicked = (
            click_materialize_all(base, chromium, work / "launched.png")
            if chromium
            else launch_backfill(base, keys)
        )
        bf = wait_done(base, timeout)
        cpu = session_cpu(proc.pid) - cpu0
    finally:
        stop_ui(proc)
    runs = run_timeline(home, bf["id"])
    log = daemon_log(work / "ui.log")
    return summarize(str(config), ready, clicked, bf, runs, log, cpu), work / "published"


# --------------------------------------------------------------------------- the CLI


@dataclass
class CliResult:
    wall_s: float
    cpu_s: float  # user + sys of bf-assets release and its worker processes
    exit_status: int


def measure_cli(work: Path, config: Path) -> tuple[CliResult, Path]:
    """``bf-assets release`` on the sample with a fresh instance (the shipped config), as
    ``./dev release`` runs it; wall and CPU from ``os.wait4``."""
    home = work / "home"
    fresh_home(home, config)
    env = ui_env(home, work, {})
    out = work / "published"
    t0 = time.monotonic()
    proc = subprocess.Popen(
        [str(BIN / "bf-assets"), "release", "--out", str(out)],
        cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=(work / "release.log").open("wb"),
    )  # fmt: skip
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.monotonic() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    return CliResult(round(wall, 1), round(usage.ru_utime + usage.ru_stime, 1),
                     proc.returncode), out  # fmt: skip


# --------------------------------------------------------------------------- what was published


def tree_bytes(root: Path) -> dict[str, bytes]:
    base = root.resolve()
    if not base.is_dir():
        return {}
    return {
        str(p.relative_to(base)): p.read_bytes()
        for p in sorted(base.rglob("*"))
        if p.is_file() and not p.is_symlink()
    }


def compare_published(ui: Path, cli: Path) -> list[str]:
    """The relative paths whose bytes differ (or exist on one side only)."""
    a, b = tree_bytes(ui), tree_bytes(cli)
    if not a or not b:
        return [f"nothing published by the {'UI' if not a else 'CLI'}"]
    return sorted(k for k in a.keys() | b.keys() if a.get(k) != b.get(k))


# --------------------------------------------------------------------------- main


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", type=Path, default=SHIPPED, help="instance dagster.yaml")
    ap.add_argument("--env", action="append", default=[], metavar="KEY=VALUE",
                    help="extra environment for the UI (e.g. BF_EXECUTOR=in_process)")  # fmt: skip
    ap.add_argument("--chromium", default=shutil.which("chromium") or "/usr/bin/chromium")
    ap.add_argument("--no-browser", action="store_true",
                    help="launch the same backfill through GraphQL instead of clicking")  # fmt: skip
    ap.add_argument("--timeout", type=float, default=900, help="seconds to wait for the runs")
    ap.add_argument("--skip-cli", action="store_true", help="time only the UI")
    ap.add_argument("--json", type=Path, help="write the figures here as JSON")
    ap.add_argument("--keep", action="store_true", help="keep the temporary folder")
    args = ap.parse_args(argv)
    extra = dict(kv.split("=", 1) for kv in args.env)
    work = Path(tempfile.mkdtemp(prefix="bf-ui-materialize-"))
    problems: list[str] = []
    report: dict[str, Any] = {"config": str(args.config), "env": extra}
    try:
        chromium = None if args.no_browser else args.chromium
        ui, ui_pub = measure_ui(work / "ui", args.config.resolve(), extra, chromium,
                                args.timeout)  # fmt: skip
        report["ui"] = asdict(ui)
        print(f"UI  ready after {ui.ready_s} s; click -> last run finished "
              f"{ui.click_to_last_run_end_s} s (CPU {ui.cpu_s} s)")  # fmt: skip
        print(f"    runs executing {ui.run_execution_s} s (in steps {ui.in_steps_s} s); "
              f"idle {ui.idle_s} s = backfill daemon {ui.backfill_wait_s} s + queue "
              f"{ui.queue_s} s + run-worker start {ui.launch_s} s; "
              f"{ui.backfill_iterations} backfill daemon iterations")  # fmt: skip
        for r in ui.runs:
            print(f"    run {r['run_id'][:8]} {r['status']:<8} {r['assets']}: created +{r['created']}"
                  f" launched +{r['launched']} started +{r['started']} ended +{r['ended']}; idle "
                  f"backfill iterations {r['idle_backfill_iterations']}, queue iterations "
                  f"{r['queue_iterations']}")  # fmt: skip
        if not ui.all_succeeded or ui.backfill_status != "COMPLETED_SUCCESS":
            problems.append(f"backfill {ui.backfill_status}, runs: "
                            f"{[r['status'] for r in ui.runs]}")  # fmt: skip
        if not args.skip_cli:
            cli, cli_pub = measure_cli(work / "cli", args.config.resolve())
            report["cli"] = asdict(cli)
            ratio = ui.click_to_last_run_end_s / cli.wall_s if cli.wall_s else float("inf")
            report["ratio"] = round(ratio, 2)
            report["ui_overhead_s"] = round(ui.click_to_last_run_end_s - cli.wall_s, 1)
            print(f"CLI bf-assets release: wall {cli.wall_s} s, CPU {cli.cpu_s} s, "
                  f"exit {cli.exit_status}")  # fmt: skip
            print(f"UI / CLI = {ratio:.2f} (target <= 2); the UI's own overhead "
                  f"{report['ui_overhead_s']} s")  # fmt: skip
            if cli.exit_status != 0:
                problems.append(f"bf-assets release exited {cli.exit_status}")
            diff = compare_published(ui_pub, cli_pub)
            report["published_differences"] = diff
            print("published: same bytes" if not diff else f"published differs: {diff[:10]}")
            if diff:
                problems.append(f"the UI and the CLI published different bytes: {diff[:10]}")
    finally:
        if args.keep:
            print("kept", work)
        else:
            shutil.rmtree(work, ignore_errors=True)
    report["problems"] = problems
    report["max_rss_mb_of_waited_children"] = round(
        resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    )
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    for p in problems:
        print("problem:", p, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
