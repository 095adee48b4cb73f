#!/usr/bin/env python3
"""Side-by-side benchmark: ``bf-assets review`` against Benchflow's ``validate_run_artifacts.py``.

Every tool runs as a child process with its stdout sent to a file; the wall time is taken with
``time.perf_counter`` around the child and the peak RSS is the child's ``ru_maxrss`` as returned
by ``os.wait4``.  Runs alternate between the two tools and the tables report medians.

Standard library only, plus the project's own corpus generator ``bf_sample.generator``.
See ``bench/README.md`` for the scenarios and the targets.  No timing figure from here belongs
in a test.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import importlib.util
import itertools
import json
import math
import os
import platform
import re
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from types import ModuleType
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_WORK = REPO_ROOT / "bench" / "corpora"
DEFAULT_RESULTS = REPO_ROOT / "bench" / "results"

SCENARIOS = (
    "small",
    "heavy",
    "scale",
    "dagster",
    "cache",
    "release-scale",
    "release-again",
    "release-export",
)
DEFAULT_SCENARIOS = ("small", "heavy")

MARKER_NAME = ".bench-corpus.json"
MARKER_VERSION = 1
SEED = 0
HEALTHY_FRACTION = 0.8
HEAVY_TOOL_OUTPUT_BYTES = 1500
HEAVY_TASK = "heavy-task"
HEAVY_JOB = "2026-01-01__00-00-00"


@dataclass(frozen=True)
class Sizes:
    small: int
    heavy_exchanges: int
    scale: tuple[int, ...]  # the third one is the "20,000" point of the flat-memory target
    release: tuple[int, ...] = ()  # release-scale: the first is the reference size
    export: tuple[int, ...] = ()  # release-export: the first is the reference size


FULL_SIZES = Sizes(
    small=2000,
    heavy_exchanges=400,
    scale=(1000, 5000, 20000, 100000),
    release=(2000, 20000, 100000),
    export=(2000, 20000),
)
QUICK_SIZES = Sizes(
    small=40,
    heavy_exchanges=20,
    scale=(40, 80, 160, 320),
    release=(40, 160, 320),
    export=(40, 160),
)
EXPORT_PLAN = "plan.json"  # beside the jobs of an exportable corpus
# Points of at least this many trials are timed --scale-runs times (scale, release-scale).
BIG_POINT_TRIALS = 20000
QUICK_BIG_POINT_TRIALS = 160

# Targets (README.md): ratios are ours/theirs unless stated otherwise.
HEAVY_MAX_WALL_RATIO = 1 / 10
HEAVY_MAX_RSS_RATIO = 1 / 4
HEAVY_MAX_RSS_MB = 200.0
SMALL_MAX_WALL_RATIO = 1.0
SMALL_MAX_CPU_RATIO = 1.0
RELEASE_MAX_RSS_GROWTH = 1.5
SCALE_MAX_GROWTH = 1.5
DAGSTER_MAX_RATIO = 2.0
# release-scale also measures a release of this many trials: what a release costs before its
# trials (importing Dagster, the instance, the runs, the published folder), set beside the
# 2x budget of each size and the cost of each trial more
FLOOR_TRIALS = 1
CACHE_MIN_SPEEDUP = 10.0

TRACEBACK_MARKER = b"Traceback (most recent call last)"
STDERR_TAIL_BYTES = 2000
SUMMARY_PARSE_LIMIT = 512 * 1024 * 1024

MB = 1_000_000  # every "MB" printed here is 10**6 bytes


class BenchError(Exception):
    """A problem the user has to fix; printed as a single message, never as a traceback."""


# --------------------------------------------------------------------------------------------
# Measuring one child process
# --------------------------------------------------------------------------------------------


@dataclass
class Invocation:
    argv: list[str]
    env: dict[str, str]
    cwd: Path
    cleanup: list[Path] = field(default_factory=list)
    # called with the child's start (epoch seconds) and wall time once it ended well, before
    # the cleanup: figures of what the child left (a release's instance: bench/phases.py)
    after: Callable[[float, float], dict[str, Any] | None] | None = None


@dataclass
class Measurement:
    tool: str
    run: int
    argv: list[str]
    wall_s: float
    peak_rss_kib: int
    exit_code: int  # negative: killed by that signal
    failure: str | None
    stdout_bytes: int
    summary: dict[str, Any] | None
    stderr_tail: str
    warning: str | None = None
    cpu_s: float = 0.0  # user + system time of the child
    phases: dict[str, Any] | None = None  # where a release's time went (Invocation.after)

    @property
    def ok(self) -> bool:
        return self.failure is None

    @property
    def peak_rss_mb(self) -> float:
        return self.peak_rss_kib * 1024 / MB


def _rss_kib(raw: int) -> int:
    # ru_maxrss is KiB on Linux and bytes on macOS.
    return raw // 1024 if sys.platform == "darwin" else raw


def _file_contains(path: Path, needle: bytes, chunk: int = 1 << 20) -> bool:
    keep = len(needle) - 1
    tail = b""
    with path.open("rb") as fh:
        while True:
            block = fh.read(chunk)
            if not block:
                return False
            if needle in tail + block:
                return True
            tail = block[-keep:] if keep else b""


def _file_tail(path: Path, limit: int = STDERR_TAIL_BYTES) -> str:
    size = path.stat().st_size
    with path.open("rb") as fh:
        if size > limit:
            fh.seek(size - limit)
        return fh.read().decode("utf-8", "replace").strip()


def _first_int(d: dict[str, Any], keys: Sequence[str]) -> int | None:
    for key in keys:
        value = d.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None


_RELEASE_EXPORTED = re.compile(r"^trials exported:\s+(\d+)", re.MULTILINE)


def summarize_output(path: Path) -> tuple[dict[str, Any] | None, str | None]:
    """A small summary of a tool's JSON report (after the clock stopped), and a warning."""
    size = path.stat().st_size
    if size == 0:
        return None, "empty stdout"
    if size > SUMMARY_PARSE_LIMIT:
        return None, f"stdout of {size / MB:.0f} MB not parsed"
    text = path.read_text("utf-8", "replace")
    try:
        doc: Any = json.loads(text)
    except ValueError:
        lines = [ln for ln in text.splitlines() if ln.strip()]
        try:
            last = json.loads(lines[-1])
        except (ValueError, IndexError):
            exported = _RELEASE_EXPORTED.search(text)  # bf-assets release's own summary
            if exported:
                return {"exported": int(exported.group(1))}, None
            return None, "stdout is not JSON"
        doc = last if isinstance(last, dict) else {}
        doc = {"jsonl_lines": len(lines), **doc}
    if not isinstance(doc, dict):
        return {"type": type(doc).__name__}, None
    summary: dict[str, Any] = {}
    nested = doc.get("summary")
    if isinstance(nested, dict):
        summary.update(
            {k: v for k, v in nested.items() if isinstance(v, (int, float, str, bool)) or v is None}
        )
    for key, value in doc.items():
        if key != "summary" and isinstance(value, (int, float, bool)):
            summary.setdefault(key, value)
    for key in ("rollouts", "trials"):
        if isinstance(doc.get(key), list):
            summary.setdefault(f"n_{key}", len(doc[key]))
    return summary, None


def trial_count(m: Measurement) -> int | None:
    if not m.summary:
        return None
    return _first_int(m.summary, ("checked", "n_trials", "trials", "total", "n_rollouts"))


# The timed child is started by a small launcher process, never by this one.  On Linux a child
# started with vfork/posix_spawn (what subprocess uses) or fork inherits the parent's peak RSS
# in its own ru_maxrss at exec time, so a bench process that generated a corpus or parsed a
# large report would put a floor under every figure (a 300 MB parent made `python -c pass`
# report 318 MB).  The launcher is a fresh, isolated interpreter (about 11 MB, i.e. no more
# than any Python tool's own start-up), so the figure it reads with os.wait4 is the tool's.
LAUNCHER_SOURCE = """
import json, os, subprocess, sys, time
with open(sys.argv[1], encoding="utf-8") as fh:
    spec = json.load(fh)
result = {}
with open(spec["stdout"], "wb") as out, open(spec["stderr"], "wb") as err:
    start = time.perf_counter()
    try:
        proc = subprocess.Popen(spec["argv"], stdin=subprocess.DEVNULL, stdout=out,
                                stderr=err, env=spec["env"], cwd=spec["cwd"])
    except OSError as exc:
        result["error"] = "cannot start: %s" % exc
    else:
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        result.update(wall_s=wall, exit_code=proc.returncode, maxrss=usage.ru_maxrss,
                      utime_s=usage.ru_utime, stime_s=usage.ru_stime)
with open(spec["result"], "w", encoding="utf-8") as fh:
    json.dump(result, fh)
"""


# The floor: what reading every byte of a corpus once and parsing every JSON / JSONL file
# once with orjson costs (standard library + orjson, one process).  Any review must at least
# do this much; the tools' figures are shown beside it.
FLOOR_SOURCE = """
import os, sys, orjson
files = nbytes = values = errors = 0
stack = [sys.argv[1]]
while stack:
    d = stack.pop()
    with os.scandir(d) as it:
        entries = list(it)
    for e in entries:
        if e.is_dir(follow_symlinks=False):
            stack.append(e.path)
            continue
        with open(e.path, "rb") as fh:
            data = fh.read()
        files += 1
        nbytes += len(data)
        if e.name.endswith(".jsonl"):
            for line in data.split(b"\\n"):
                if line.strip():
                    try:
                        orjson.loads(line)
                        values += 1
                    except orjson.JSONDecodeError:
                        errors += 1
        elif e.name.endswith(".json"):
            try:
                orjson.loads(data)
                values += 1
            except orjson.JSONDecodeError:
                errors += 1
sys.stdout.write(orjson.dumps({"files": files, "bytes": nbytes, "json_values": values,
                               "parse_errors": errors}).decode() + "\\n")
"""


def measure(
    tool: str,
    run: int,
    inv: Invocation,
    scratch: Path,
    timeout_s: float,
    traceback_is_crash: bool = True,
) -> Measurement:
    """Run one child through the launcher: perf_counter wall time, ``os.wait4`` peak RSS."""
    scratch.mkdir(parents=True, exist_ok=True)
    tag = uuid.uuid4().hex
    paths = {name: scratch / f"{name}-{tag}" for name in ("spec", "stdout", "stderr", "result")}
    launcher_err = scratch / f"launcher-{tag}"
    spec = {
        "argv": inv.argv,
        "env": inv.env,
        "cwd": str(inv.cwd),
        **{k: str(paths[k]) for k in ("stdout", "stderr", "result")},
    }
    paths["spec"].write_text(json.dumps(spec), encoding="utf-8")
    started = time.time()
    try:
        with launcher_err.open("wb") as lerr:
            launcher = subprocess.Popen(
                [sys.executable, "-I", "-S", "-c", LAUNCHER_SOURCE, str(paths["spec"])],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=lerr,
                start_new_session=True,  # one process group: a timeout kills the tool too
            )
            timed_out = False
            try:
                launcher.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                timed_out = True
                os.killpg(launcher.pid, signal.SIGKILL)
                launcher.wait()
            except BaseException:
                os.killpg(launcher.pid, signal.SIGKILL)
                launcher.wait()
                raise
        try:
            result = json.loads(paths["result"].read_text(encoding="utf-8"))
        except (OSError, ValueError):
            result = {}
        if "error" in result:
            raise BenchError(f"{shlex.join(inv.argv)}: {result['error']}")
        if not timed_out and "exit_code" not in result:
            raise BenchError(
                f"the measuring launcher failed (exit {launcher.returncode}): "
                + _file_tail(launcher_err)
            )

        code = int(result.get("exit_code", -signal.SIGKILL))
        failure: str | None = None
        if timed_out:
            failure = f"timed out after {timeout_s:.0f} s"
        elif code < 0:
            failure = f"killed by {signal.Signals(-code).name}"
        elif code >= 2:
            failure = f"exit code {code}"
        elif traceback_is_crash and _file_contains(paths["stderr"], TRACEBACK_MARKER):
            failure = f"crashed: Python traceback on stderr (exit code {code})"
        summary, warning = (None, None) if timed_out else summarize_output(paths["stdout"])
        wall = float(result.get("wall_s", timeout_s))
        phases = inv.after(started, wall) if inv.after is not None and failure is None else None
        return Measurement(
            tool=tool,
            run=run,
            argv=inv.argv,
            wall_s=wall,
            peak_rss_kib=_rss_kib(int(result.get("maxrss", 0))),
            exit_code=code,
            failure=failure,
            stdout_bytes=paths["stdout"].stat().st_size if paths["stdout"].exists() else 0,
            summary=summary,
            stderr_tail=_file_tail(paths["stderr"]) if paths["stderr"].exists() else "",
            warning=warning,
            cpu_s=float(result.get("utime_s", 0.0)) + float(result.get("stime_s", 0.0)),
            phases=phases,
        )
    finally:
        for path in (*paths.values(), launcher_err):
            path.unlink(missing_ok=True)
        for path in inv.cleanup:
            shutil.rmtree(path, ignore_errors=True)


# --------------------------------------------------------------------------------------------
# Corpora
# --------------------------------------------------------------------------------------------


@dataclass
class Corpus:
    name: str
    root: Path
    jobs: Path
    stats: dict[str, Any]

    @property
    def n_trials(self) -> int:
        return int(self.stats["trials"])


def _walk_files(root: Path) -> Iterator[Path]:
    for dirpath, _dirnames, filenames in os.walk(root):
        for name in filenames:
            yield Path(dirpath) / name


def tree_stats(jobs: Path) -> dict[str, Any]:
    files = 0
    total = 0
    jsonl = 0
    trials = 0
    for path in _walk_files(jobs):
        size = path.stat().st_size
        files += 1
        total += size
        if path.name.endswith(".jsonl"):
            jsonl += size
        if path.name == "result.json":
            trials += 1
    return {"files": files, "bytes": total, "jsonl_bytes": jsonl, "result_json_files": trials}


def prewarm(jobs: Path) -> None:
    """Read every file once so that no tool pays for a cold page cache the other did not."""
    for path in _walk_files(jobs):
        with path.open("rb") as fh:
            while fh.read(1 << 20):
                pass


def _source_digest(paths: Sequence[Path]) -> str:
    digest = hashlib.sha256()
    for path in sorted(paths):
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def _fixture_digest(job_dir: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(_walk_files(job_dir)):
        digest.update(str(path.relative_to(job_dir)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def write_export_plan(path: Path, trials: Sequence[dict[str, Any]]) -> int:
    """A plan (JSON) of every cell ``trials`` ran, per harness and model, with as many slots
    per cell as the cell with the most attempts; returns the number of cells."""
    attempts: dict[tuple[Any, ...], int] = {}
    for t in trials:
        cell = (t["task"], t["harness"], t["model"], t["skill_mode"], t["sandbox"])
        attempts[cell] = attempts.get(cell, 0) + 1
    slots = max(attempts.values(), default=1)
    tasks = sorted({c[0] for c in attempts})
    modes = sorted({c[3] for c in attempts})
    sandboxes = sorted({c[4] for c in attempts})
    pairs = sorted({(c[1], c[2]) for c in attempts}, key=lambda hm: (hm[0], hm[1] or ""))
    matrix = [
        {
            "tasks": tasks,
            "harnesses": [harness],
            "models": [model],
            "skill_modes": modes,
            "sandboxes": sandboxes,
            "trials": slots,
            "required": False,
        }
        for harness, model in pairs
    ]
    path.write_text(json.dumps({"name": "bench-export", "matrix": matrix}, indent=2) + "\n")
    return len(attempts)


class CorpusFactory:
    """Builds corpora under ``work`` and reuses one whose marker file matches its spec."""

    def __init__(self, work: Path, fixture_job: Path | None) -> None:
        self.work = work
        self.fixture_job = fixture_job
        self._generator: ModuleType | None = None
        self._generator_digest: str | None = None
        self._fixture_digest: str | None = None

    # -- sources ---------------------------------------------------------------------------

    def generator(self) -> ModuleType:
        if self._generator is None:
            if str(REPO_ROOT) not in sys.path:
                sys.path.insert(0, str(REPO_ROOT))
            try:
                module = importlib.import_module("bf_sample.generator")
            except Exception as exc:  # any import failure is reported plainly
                raise BenchError(
                    "the corpus generator bf_sample.generator cannot be imported "
                    f"({type(exc).__name__}: {exc}). Corpora are generated with it; until it "
                    "exists, only the small and scale scenarios can run, on copies of a "
                    "fixture job (--fixture-job DIR)."
                ) from None
            for name in ("generate_corpus", "write_heavy_trial"):
                if not callable(getattr(module, name, None)):
                    raise BenchError(f"bf_sample.generator has no function {name}()")
            sources = list(Path(module.__file__ or "").parent.glob("*.py"))
            self._generator_digest = _source_digest(sources)
            self._generator = module
        return self._generator

    def check_available(self, need_generated: bool, need_heavy: bool) -> None:
        if need_heavy or (need_generated and self.fixture_job is None):
            self.generator()

    # -- building --------------------------------------------------------------------------

    def _ensure(
        self, name: str, spec: dict[str, Any], build: Callable[[Path], dict[str, Any]]
    ) -> Corpus:
        root = self.work / name
        jobs = root / "jobs"
        marker = root / MARKER_NAME
        spec = {"marker_version": MARKER_VERSION, **spec}
        if marker.is_file():
            try:
                saved = json.loads(marker.read_text())
            except (OSError, ValueError):
                saved = None
            if isinstance(saved, dict) and saved.get("spec") == spec and jobs.is_dir():
                print(f"  corpus {name}: reusing {root}")
                return Corpus(name, root, jobs, saved["stats"])
        if root.exists():
            print(f"  corpus {name}: marker missing or stale, rebuilding")
            shutil.rmtree(root)
        jobs.mkdir(parents=True)
        print(f"  corpus {name}: generating in {root} ...", flush=True)
        started = time.perf_counter()
        extra = build(root)
        stats = {**tree_stats(jobs), **extra}
        stats.setdefault("trials", stats["result_json_files"])
        stats["build_s"] = round(time.perf_counter() - started, 2)
        marker.write_text(json.dumps({"spec": spec, "stats": stats}, indent=2) + "\n")
        print(
            f"  corpus {name}: {stats['trials']:,} trial(s), {stats['files']:,} files, "
            f"{stats['bytes'] / MB:.1f} MB, built in {stats['build_s']:.1f} s"
        )
        return Corpus(name, root, jobs, stats)

    def trials(self, n_trials: int) -> Corpus:
        """``n_trials`` small trials: generated, or copies of the fixture job."""
        if self.fixture_job is not None:
            return self._fixture_copies(n_trials)
        gen = self.generator()
        spec = {
            "kind": "generated",
            "n_trials": n_trials,
            "seed": SEED,
            "healthy_fraction": HEALTHY_FRACTION,
            "generator_digest": self._generator_digest,
        }

        def build(root: Path) -> dict[str, Any]:
            made = gen.generate_corpus(root, n_trials, seed=SEED, healthy_fraction=HEALTHY_FRACTION)
            return {"trials": len(made)} if isinstance(made, list) else {}

        return self._ensure(f"trials-{n_trials}", spec, build)

    def exportable(self, n_trials: int) -> Corpus:
        """``n_trials`` generated trials, all from healthy scenarios, and a plan
        (``EXPORT_PLAN``) with a slot for every attempt of every cell they ran: every
        publishable, training-ready trial fills a slot and is exported (in the ``trials``
        corpora nearly every trial is excluded, as a quarantine, a rejection or a superseded
        attempt, and a release exports a few dozen)."""
        gen = self.generator()
        spec = {
            "kind": "exportable",
            "n_trials": n_trials,
            "seed": SEED,
            "healthy_fraction": 1.0,
            "generator_digest": self._generator_digest,
            "plan": EXPORT_PLAN,
        }

        def build(root: Path) -> dict[str, Any]:
            made = gen.generate_corpus(root, n_trials, seed=SEED, healthy_fraction=1.0)
            cells = write_export_plan(root / EXPORT_PLAN, [p.to_dict() for p in made])
            return {"trials": len(made), "plan_cells": cells}

        return self._ensure(f"exportable-{n_trials}", spec, build)

    def _fixture_copies(self, n_trials: int) -> Corpus:
        src = self.fixture_job
        assert src is not None
        per_copy = sum(1 for _ in src.rglob("result.json"))
        if per_copy == 0:
            raise BenchError(f"--fixture-job {src} holds no result.json")
        copies = math.ceil(n_trials / per_copy)
        if self._fixture_digest is None:
            self._fixture_digest = _fixture_digest(src)
        spec = {
            "kind": "fixture-copies",
            "source": str(src),
            "source_digest": self._fixture_digest,
            "copies": copies,
        }

        def build(root: Path) -> dict[str, Any]:
            for i in range(copies):
                shutil.copytree(src, root / "jobs" / f"{src.name}__copy{i:05d}")
            return {"trials": copies * per_copy, "copies": copies}

        return self._ensure(f"fixture-{src.name}-x{copies}", spec, build)

    def heavy(self, n_exchanges: int) -> Corpus:
        gen = self.generator()
        spec = {
            "kind": "heavy",
            "n_exchanges": n_exchanges,
            "tool_output_bytes": HEAVY_TOOL_OUTPUT_BYTES,
            "task": HEAVY_TASK,
            "seed": SEED,
            "generator_digest": self._generator_digest,
        }

        def build(root: Path) -> dict[str, Any]:
            job_dir = root / "jobs" / HEAVY_JOB
            job_dir.mkdir(parents=True, exist_ok=True)
            trial = Path(
                gen.write_heavy_trial(
                    job_dir,
                    n_exchanges=n_exchanges,
                    tool_output_bytes=HEAVY_TOOL_OUTPUT_BYTES,
                    task=HEAVY_TASK,
                    seed=SEED,
                )
            )
            llm = trial / "trajectory" / "llm_trajectory.jsonl"
            if not llm.is_file():
                found = sorted(trial.rglob("llm_trajectory.jsonl"), key=lambda p: p.stat().st_size)
                llm = found[-1] if found else llm
            llm_bytes = llm.stat().st_size if llm.is_file() else 0
            trial_jsonl = sum(p.stat().st_size for p in trial.rglob("*.jsonl"))
            return {"trial": str(trial), "llm_bytes": llm_bytes, "trial_jsonl_bytes": trial_jsonl}

        return self._ensure(f"heavy-{n_exchanges}", spec, build)


# --------------------------------------------------------------------------------------------
# Tools
# --------------------------------------------------------------------------------------------


def _child_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ)
    # Our package may not be installed (namespace package from the clone): make it importable.
    path = env.get("PYTHONPATH")
    env["PYTHONPATH"] = str(REPO_ROOT) + (os.pathsep + path if path else "")
    if extra:
        env.update(extra)
    return env


def compile_package() -> None:
    """Bytecode for ``bf_assets`` (what a wheel install carries; ``./dev`` does the same):
    without it, an editable install under ``PYTHONDONTWRITEBYTECODE`` compiles every module
    on every run.  The validator is a single script, which Python compiles on each run
    whatever the settings."""
    package = REPO_ROOT / "bf_assets"
    if package.is_dir():
        subprocess.run(
            [sys.executable, "-m", "compileall", "-q", str(package)],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            check=False,
        )


def _probe(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[bool, str]:
    """Run ``argv`` (a ``--help`` call) and return (ok, output or reason)."""
    try:
        done = subprocess.run(
            argv,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            env=env,
            cwd=cwd,
            timeout=300,
            check=False,
        )
    except OSError as exc:
        return False, str(exc)
    except subprocess.TimeoutExpired:
        return False, "no answer to --help within 300 s"
    text = (done.stdout + done.stderr).decode("utf-8", "replace")
    if done.returncode != 0:
        last = [ln for ln in text.strip().splitlines() if ln.strip()][-3:]
        return False, f"exit code {done.returncode}: " + " | ".join(last)
    return True, text


class Tools:
    def __init__(self, args: argparse.Namespace, scratch: Path) -> None:
        self.scratch = scratch
        self.timeout_s: float = args.timeout
        self.validator: Path | None = args.validator
        self.validator_sha256: str | None = None
        self.skip_ours: bool = args.skip_ours
        self.cache_flag: str = args.cache_flag
        if args.ours_cmd:
            self.ours = shlex.split(args.ours_cmd)
        else:
            script = Path(sys.executable).parent / "bf-assets"
            if script.is_file():
                self.ours = [str(script), "review"]
            else:
                self.ours = [sys.executable, "-m", "bf_assets.cli.main", "review"]
        if args.release_cmd:
            self.release_template: list[str] | None = shlex.split(args.release_cmd)
        elif self.ours and self.ours[-1] == "review":
            self.release_template = [
                *self.ours[:-1],
                "release",
                "--runs",
                "{jobs}",
                "--out",
                "{out}",
            ]
        else:
            self.release_template = None
        self.ours_help = ""
        self.release_problem: str | None = None
        self.fresh_instance: bool = args.fresh_instance
        self._template: Path | None = None
        self.failed_runs = 0
        self.floor_problem: str | None = None

    # -- availability ----------------------------------------------------------------------

    def check_validator(self) -> None:
        if self.validator is None:
            return
        path = self.validator.expanduser().resolve()
        if not path.is_file():
            raise BenchError(f"--validator {self.validator}: no such file")
        self.validator = path
        self.validator_sha256 = hashlib.sha256(path.read_bytes()).hexdigest()
        ok, text = _probe([sys.executable, str(path), "--help"], _child_env(), self.scratch)
        if not ok:
            raise BenchError(f"the validator does not run: {shlex.join([str(path)])}: {text}")

    def check_ours(self) -> None:
        if self.skip_ours:
            return
        compile_package()
        ok, text = _probe([*self.ours, "--help"], _child_env(), self.scratch)
        if not ok:
            raise BenchError(
                f"our review command is not available: `{shlex.join(self.ours)} --help` "
                f"failed ({text}). Point --ours-cmd at it, or pass --skip-ours to measure "
                "only the Benchflow validator."
            )
        self.ours_help = text

    def check_release(self) -> None:
        if self.release_template is None:
            self.release_problem = "no release command (set --release-cmd)"
            return
        base = list(
            itertools.takewhile(
                lambda a: "{" not in a and not a.startswith("-"), self.release_template
            )
        )
        ok, text = _probe([*base, "--help"], _child_env(), self.scratch)
        if not ok:
            self.release_problem = f"`{shlex.join(base)} --help` failed ({text})"

    def check_floor(self) -> None:
        ok, text = _probe([sys.executable, "-c", "import orjson"], _child_env(), self.scratch)
        if not ok:
            self.floor_problem = f"orjson is not importable by {sys.executable} ({text})"

    @property
    def has_cache_flag(self) -> bool:
        return bool(self.cache_flag) and self.cache_flag in self.ours_help

    # -- invocations -----------------------------------------------------------------------

    def _fresh_dir(self, prefix: str) -> Path:
        return Path(tempfile.mkdtemp(prefix=prefix, dir=self.scratch))

    def ours_review(
        self, jobs: Path, cache_dir: Path | None = None, extra: Sequence[str] = ()
    ) -> Invocation:
        """Our review; the cache only in the cache scenario (``cache_dir`` given), so the
        other scenarios measure a plain review with no cache writes; ``extra``: more
        arguments (a plan and a task tree)."""
        cleanup: list[Path] = []
        argv = [*self.ours, str(jobs), "--json", *extra]
        if cache_dir is not None and self.has_cache_flag:
            argv += [self.cache_flag, str(cache_dir)]
        if cache_dir is None:
            cache_dir = self._fresh_dir("cache-")
            cleanup.append(cache_dir)
        env = _child_env({"XDG_CACHE_HOME": str(cache_dir)})
        return Invocation(argv, env, self.scratch, cleanup)

    def theirs(self, jobs: Path) -> Invocation:
        assert self.validator is not None
        return Invocation(
            [sys.executable, str(self.validator), str(jobs), "--json"], _child_env(), self.scratch
        )

    def floor(self, jobs: Path) -> Invocation:
        return Invocation(
            [sys.executable, "-c", FLOOR_SOURCE, str(jobs)], _child_env(), self.scratch
        )

    def instance_template(self) -> Path | None:
        """An empty, initialised Dagster instance (storage schemas created), made once per
        bench run: every release run gets a fresh copy of it, as a deployment's instance
        exists before its first build.  None with ``--fresh-instance`` (each run then also
        pays for creating the instance)."""
        if self.fresh_instance:
            return None
        if self._template is None:
            home = self._fresh_dir("dagster-template-")
            shutil.copyfile(REPO_ROOT / "dagster.yaml", home / "dagster.yaml")
            init = "import dagster; dagster.DagsterInstance.get()"
            env = _child_env({"DAGSTER_HOME": str(home)})
            ok, text = _probe([sys.executable, "-c", init], env, self.scratch)
            if not ok:
                raise BenchError(f"could not initialise a Dagster instance: {text}")
            self._template = home
        return self._template

    def release(
        self, corpus: Corpus, again: Path | None = None, extra: Sequence[str] = ()
    ) -> Invocation:
        """A release into a fresh instance, warehouse and output folder of its own; with
        ``again``, into those of the release that ran in ``again`` (its second release);
        ``extra``: more arguments (a plan and a task tree)."""
        assert self.release_template is not None
        run_dir = again or self._fresh_dir("release-")
        home = run_dir / "dagster_home"
        out = run_dir / "out"
        cache = run_dir / "cache"
        # A warehouse of its own: every release run starts cold (no tables, pickles or trial
        # pages of an earlier run to reuse), like the review it is compared with.
        warehouse = run_dir / "warehouse"
        template = self.instance_template()
        if template is not None and again is None:
            shutil.copytree(template, home)
        for d in (home, out, cache, warehouse):
            d.mkdir(exist_ok=True)
        values = {"jobs": str(corpus.jobs), "corpus": str(corpus.root), "out": str(out)}
        argv = [*(a.format(**values) for a in self.release_template), *extra]
        env = _child_env(
            {
                "DAGSTER_HOME": str(home),
                "XDG_CACHE_HOME": str(cache),
                "BF_WAREHOUSE": str(warehouse),
                "BF_STAGING_DIR": str(run_dir / "staging"),
            }
        )
        phases = bench_module("phases")

        def after(started: float, wall_s: float) -> dict[str, Any] | None:
            runs = phases.read(env, run_dir)
            return None if runs is None else phases.phases(runs, wall_s, since=started)

        return Invocation(argv, env, run_dir, [run_dir], after)


# --------------------------------------------------------------------------------------------
# Running pairs, statistics, tables
# --------------------------------------------------------------------------------------------


@dataclass
class Side:
    key: str
    label: str
    make: Callable[[], Invocation]
    traceback_is_crash: bool = True


@dataclass
class SideStats:
    key: str
    label: str
    runs: int
    ok: int
    wall_median_s: float | None
    wall_min_s: float | None
    rss_median_mb: float | None
    rss_max_mb: float | None
    cpu_median_s: float | None = None  # user + system, the child and its waited-for children
    cpu_min_s: float | None = None


def side_stats(side: Side, ms: list[Measurement]) -> SideStats:
    good = [m for m in ms if m.ok]
    walls = [m.wall_s for m in good]
    rss = [m.peak_rss_mb for m in good]
    cpu = [m.cpu_s for m in good]
    return SideStats(
        key=side.key,
        label=side.label,
        runs=len(ms),
        ok=len(good),
        wall_median_s=statistics.median(walls) if walls else None,
        wall_min_s=min(walls) if walls else None,
        rss_median_mb=statistics.median(rss) if rss else None,
        rss_max_mb=max(rss) if rss else None,
        cpu_median_s=statistics.median(cpu) if cpu else None,
        cpu_min_s=min(cpu) if cpu else None,
    )


def ratio(a: float | None, b: float | None) -> float | None:
    if a is None or b is None or b == 0:
        return None
    return a / b


def run_sides(
    sides: list[Side], runs: int, tools: Tools, alternate: bool = True
) -> dict[str, list[Measurement]]:
    """``runs`` rounds; within a round every side once, the order flipped every other round."""
    results: dict[str, list[Measurement]] = {s.key: [] for s in sides}
    for i in range(runs):
        order = list(reversed(sides)) if alternate and i % 2 == 1 else sides
        for side in order:
            m = measure(
                side.key,
                i + 1,
                side.make(),
                tools.scratch,
                tools.timeout_s,
                side.traceback_is_crash,
            )
            results[side.key].append(m)
            if m.failure:
                tools.failed_runs += 1
            note = f"FAILED ({m.failure})" if m.failure else f"exit {m.exit_code}"
            if m.warning:
                note += f"; {m.warning}"
            print(
                f"    run {i + 1}/{runs}  {side.label:<28} {m.wall_s:8.2f} s  "
                f"CPU {m.cpu_s:8.2f} s  {m.peak_rss_mb:8.1f} MB  {note}",
                flush=True,
            )
            if m.failure and m.stderr_tail:
                print("      stderr: " + m.stderr_tail.splitlines()[-1][:300])
    return results


def fmt_s(v: float | None) -> str:
    return "-" if v is None else f"{v:.2f} s"


def fmt_mb(v: float | None) -> str:
    return "-" if v is None else f"{v:.1f} MB"


def fmt_x(v: float | None) -> str:
    return "-" if v is None else f"{v:.2f}x"


def print_table(stats: list[SideStats], ratio_label: str | None, *more: str) -> None:
    """The sides' medians; ``ratio_label`` (``"a/b"``) names the first two sides' ratio
    line, each of ``more`` (``"label:key_a:key_b"``) one more ratio line."""
    print(
        f"  {'tool':<30} {'ok/runs':>7} {'wall median':>12} {'wall min':>10} "
        f"{'CPU median':>11} {'CPU min':>9} {'peak RSS median':>16} {'peak RSS max':>13}"
    )
    for s in stats:
        print(
            f"  {s.label:<30} {f'{s.ok}/{s.runs}':>7} {fmt_s(s.wall_median_s):>12} "
            f"{fmt_s(s.wall_min_s):>10} {fmt_s(s.cpu_median_s):>11} {fmt_s(s.cpu_min_s):>9} "
            f"{fmt_mb(s.rss_median_mb):>16} {fmt_mb(s.rss_max_mb):>13}"
        )
    pairs: list[tuple[str, SideStats, SideStats]] = []
    if ratio_label and len(stats) >= 2:
        pairs.append((ratio_label, stats[0], stats[1]))
    by = {s.key: s for s in stats}
    for spec in more:
        label, ka, kb = spec.split(":")
        if ka in by and kb in by:
            pairs.append((label, by[ka], by[kb]))
    for label, a, b in pairs:
        w = ratio(a.wall_median_s, b.wall_median_s)
        c = ratio(a.cpu_median_s, b.cpu_median_s)
        r = ratio(a.rss_median_mb, b.rss_median_mb)
        print(
            f"  {'ratio ' + label:<30} {'':>7} {fmt_x(w):>12} {'':>10} {fmt_x(c):>11} "
            f"{'':>9} {fmt_x(r):>16}"
        )


@dataclass
class Target:
    text: str
    value: float | None
    limit: float
    higher_is_better: bool = False

    @property
    def verdict(self) -> str:
        if self.value is None:
            return "n/a"
        good = self.value >= self.limit if self.higher_is_better else self.value <= self.limit
        return "PASS" if good else "MISS"


def print_targets(targets: list[Target]) -> None:
    if not targets:
        return
    print("  targets:")
    for t in targets:
        shown = "-" if t.value is None else f"{t.value:.3g}"
        print(f"    [{t.verdict:>4}] {t.text}: {shown}")


def scale_time_measure(n_sizes: int) -> str:
    return "marginal time per trial" if n_sizes >= 3 else "time per trial"


def scale_time_growth(points: list[tuple[float, float | None]]) -> float | None:
    """How much the cost of one more trial grows from the smallest sizes to the largest.

    With three or more sizes this compares the marginal cost per trial of the last step with
    that of the first step, so the fixed start-up cost does not hide super-linear growth; with
    two sizes it compares the plain time per trial.
    """
    if len(points) < 2 or any(t is None for _, t in points):
        return None
    pts = [(n, float(t)) for n, t in points if t is not None]
    if len(pts) >= 3:
        (n0, t0), (n1, t1) = pts[0], pts[1]
        (m0, u0), (m1, u1) = pts[-2], pts[-1]
        first = (t1 - t0) / (n1 - n0)
        last = (u1 - u0) / (m1 - m0)
        if first <= 0:
            return None
        return last / first
    (n0, t0), (n1, t1) = pts
    return ratio(t1 / n1, t0 / n0)


def check_counts(ms: dict[str, list[Measurement]], expected: int) -> list[str]:
    notes: list[str] = []
    for key, runs in ms.items():
        counts = {c for c in (trial_count(m) for m in runs if m.ok) if c is not None}
        if counts and counts != {expected}:
            notes.append(
                f"{key} reported {sorted(counts)} trials, the corpus has {expected} result.json files"
            )
    for note in notes:
        print(f"  note: {note}")
    return notes


def write_results(
    results_dir: Path, name: str, quick: bool, payload: dict[str, Any], context: dict[str, Any]
) -> Path:
    results_dir.mkdir(parents=True, exist_ok=True)
    path = results_dir / (f"{name}.quick.json" if quick else f"{name}.json")
    doc = {"scenario": name, **context, **payload}
    path.write_text(json.dumps(doc, indent=2, default=str) + "\n")
    print(f"  raw results: {path}")
    return path


def _raw(ms: dict[str, list[Measurement]]) -> dict[str, list[dict[str, Any]]]:
    return {k: [asdict(m) for m in v] for k, v in ms.items()}


# --------------------------------------------------------------------------------------------
# Scenarios
# --------------------------------------------------------------------------------------------


@dataclass
class Goal:
    """One of issue 16's "Done when" targets, with the figures it was judged on."""

    text: str
    value: float | None
    limit: float
    detail: str = ""
    missing: str = ""  # why there is no value (the scenario that measures it did not run)

    @property
    def verdict(self) -> str:
        if self.value is None:
            return "n/a"
        return "MET" if self.value <= self.limit else "MISS"


@dataclass
class Bench:
    args: argparse.Namespace
    sizes: Sizes
    tools: Tools
    corpora: CorpusFactory
    context: dict[str, Any]
    figures: dict[str, Any] = field(default_factory=dict)  # for the "Done when" lines

    def _runs_for(self, n_trials: int) -> int:
        big = QUICK_BIG_POINT_TRIALS if self.args.quick else BIG_POINT_TRIALS
        return self.args.scale_runs if n_trials >= big else self.args.runs

    def _pair(self, corpus: Corpus) -> list[Side]:
        sides: list[Side] = []
        if not self.tools.skip_ours:
            sides.append(
                Side("ours", "ours (bf-assets review)", lambda: self.tools.ours_review(corpus.jobs))
            )
        if self.tools.validator is not None:
            sides.append(
                Side("theirs", "Benchflow validator", lambda: self.tools.theirs(corpus.jobs))
            )
        return sides

    def _compare(
        self, corpus: Corpus, *, runs: int | None = None, floor: bool = False
    ) -> tuple[dict[str, list[Measurement]], list[SideStats]]:
        if not self.args.no_prewarm:
            prewarm(corpus.jobs)
        sides = self._pair(corpus)
        if floor:
            self.tools.check_floor()
            if self.tools.floor_problem:
                print(f"  floor skipped: {self.tools.floor_problem}")
            else:
                sides.append(
                    Side(
                        "floor", "floor (read + orjson once)", lambda: self.tools.floor(corpus.jobs)
                    )
                )
        ms = run_sides(sides, runs or self.args.runs, self.tools)
        stats = [side_stats(s, ms[s.key]) for s in sides]
        return ms, stats

    def _baseline_note(self) -> None:
        if self.tools.validator is None:
            print("  baseline skipped: no --validator given; only our own figures")
        if self.tools.skip_ours:
            print("  our side skipped (--skip-ours); only the Benchflow validator")

    def _by_key(self, stats: list[SideStats]) -> dict[str, SideStats]:
        return {s.key: s for s in stats}

    def small(self) -> None:
        corpus = self.corpora.trials(self.sizes.small)
        print(
            f"\n== small: {corpus.n_trials:,} trials, {corpus.stats['bytes'] / MB:.1f} MB "
            f"({corpus.root}) =="
        )
        self._baseline_note()
        ms, stats = self._compare(corpus, floor=True)
        print_table(stats, None, "ours/validator:ours:theirs", "ours/floor:ours:floor")
        by = self._by_key(stats)
        ours, theirs = by.get("ours"), by.get("theirs")
        cpu = ratio(ours.cpu_median_s if ours else None, theirs.cpu_median_s if theirs else None)
        targets = [
            Target(
                f"full review no slower than the validator (wall ratio <= {SMALL_MAX_WALL_RATIO:g})",
                ratio(
                    ours.wall_median_s if ours else None, theirs.wall_median_s if theirs else None
                ),
                SMALL_MAX_WALL_RATIO,
            ),
            Target(
                f"full review CPU at most the validator's (CPU ratio <= {SMALL_MAX_CPU_RATIO:g})",
                cpu,
                SMALL_MAX_CPU_RATIO,
            ),
        ]
        print_targets(targets)
        self.figures["small"] = {"trials": corpus.n_trials, "stats": by}
        notes = check_counts(
            {k: v for k, v in ms.items() if k != "floor"}, corpus.stats["result_json_files"]
        )
        write_results(
            self.args.results,
            "small",
            self.args.quick,
            {
                "corpus": {"path": str(corpus.root), **corpus.stats},
                "stats": [asdict(s) for s in stats],
                "targets": [{**asdict(t), "verdict": t.verdict} for t in targets],
                "notes": notes,
                "runs": _raw(ms),
            },
            self.context,
        )

    def heavy(self) -> None:
        if self.corpora.fixture_job is not None and self.corpora._generator is None:
            try:
                self.corpora.generator()
            except BenchError as exc:
                print(f"\n== heavy: skipped: {exc}")
                return
        corpus = self.corpora.heavy(self.sizes.heavy_exchanges)
        st = corpus.stats
        print(f"\n== heavy: one trial, {self.sizes.heavy_exchanges} exchanges ({corpus.root}) ==")
        print(
            f"  corpus: LLM trajectory {st['llm_bytes'] / MB:.1f} MB, trial JSONL total "
            f"{st['trial_jsonl_bytes'] / MB:.1f} MB, all files {st['bytes'] / MB:.1f} MB"
        )
        self._baseline_note()
        ms, stats = self._compare(corpus)
        print_table(stats, "ours/validator")
        by = self._by_key(stats)
        ours, theirs = by.get("ours"), by.get("theirs")
        o_wall = ours.wall_median_s if ours else None
        o_rss = ours.rss_median_mb if ours else None
        t_wall = theirs.wall_median_s if theirs else None
        t_rss = theirs.rss_median_mb if theirs else None
        targets = [
            Target(
                f"wall ratio ours/validator <= {HEAVY_MAX_WALL_RATIO:g}",
                ratio(o_wall, t_wall),
                HEAVY_MAX_WALL_RATIO,
            ),
            Target(
                "peak RSS ratio ours/validator <= 1/4", ratio(o_rss, t_rss), HEAVY_MAX_RSS_RATIO
            ),
            Target(f"our peak RSS < {HEAVY_MAX_RSS_MB:g} MB", o_rss, HEAVY_MAX_RSS_MB),
        ]
        print_targets(targets)
        self.figures["heavy"] = {"stats": by}
        write_results(
            self.args.results,
            "heavy",
            self.args.quick,
            {
                "corpus": {"path": str(corpus.root), **st},
                "stats": [asdict(s) for s in stats],
                "targets": [{**asdict(t), "verdict": t.verdict} for t in targets],
                "runs": _raw(ms),
            },
            self.context,
        )

    def scale(self) -> None:
        print(f"\n== scale: {', '.join(f'{n:,}' for n in self.sizes.scale)} trials ==")
        self._baseline_note()
        rows: list[dict[str, Any]] = []
        for n in self.sizes.scale:
            corpus = self.corpora.trials(n)
            runs = self._runs_for(n)
            print(
                f"  -- {corpus.n_trials:,} trials, {corpus.stats['bytes'] / MB:.1f} MB, "
                f"{runs} run(s) per tool"
            )
            ms, stats = self._compare(corpus, runs=runs)
            print_table(stats, "ours/validator")
            notes = check_counts(ms, corpus.stats["result_json_files"])
            rows.append(
                {
                    "trials": corpus.n_trials,
                    "runs_per_tool": runs,
                    "corpus": {"path": str(corpus.root), **corpus.stats},
                    "stats": [asdict(s) for s in stats],
                    "notes": notes,
                    "runs": _raw(ms),
                }
            )
        print_scale_summary(rows)
        targets: list[Target] = []
        if len(rows) >= 2 and not self.tools.skip_ours:

            def ours_of(row: dict[str, Any]) -> dict[str, Any]:
                return next(s for s in row["stats"] if s["key"] == "ours")

            ours = [(float(row["trials"]), ours_of(row)) for row in rows]
            span = f"{ours[0][0]:,.0f} -> {ours[-1][0]:,.0f} trials"
            targets = [
                Target(
                    f"linear time: our {scale_time_measure(len(ours))}, {span}, "
                    f"grows <= {SCALE_MAX_GROWTH:g}x",
                    scale_time_growth([(n, st["wall_median_s"]) for n, st in ours]),
                    SCALE_MAX_GROWTH,
                ),
            ]
            mid = ours[min(2, len(ours) - 1)]
            for n, st in sorted({mid[0]: mid[1], ours[-1][0]: ours[-1][1]}.items()):
                targets.append(
                    Target(
                        f"flat memory: our peak RSS, {ours[0][0]:,.0f} -> {n:,.0f} trials, "
                        f"grows <= {SCALE_MAX_GROWTH:g}x",
                        ratio(st["rss_median_mb"], ours[0][1]["rss_median_mb"]),
                        SCALE_MAX_GROWTH,
                    )
                )
            self.figures["scale"] = {int(n): st for n, st in ours}
        print_targets(targets)
        write_results(
            self.args.results,
            "scale",
            self.args.quick,
            {
                "sizes": rows,
                "targets": [{**asdict(t), "verdict": t.verdict} for t in targets],
            },
            self.context,
        )

    def _small_corpus(self) -> Corpus:
        """The small corpus, named, and read once unless ``--no-prewarm``."""
        corpus = self.corpora.trials(self.sizes.small)
        print(f"  corpus: {corpus.n_trials:,} trials ({corpus.root})")
        if not self.args.no_prewarm:
            prewarm(corpus.jobs)
        return corpus

    def _release_ready(self, what: str) -> bool:
        print(f"\n== {what} ==")
        if self.tools.skip_ours:
            print("  skipped: --skip-ours")
            return False
        self.tools.check_release()
        if self.tools.release_problem:
            print(
                f"  skipped: bf-assets release is not available yet: {self.tools.release_problem}"
            )
            return False
        kind = (
            "created by each run" if self.tools.fresh_instance else "a copy of an initialised one"
        )
        print(f"  Dagster instance: SQLite, {kind} (--fresh-instance to change)")
        return True

    def _release_sides(self, corpus: Corpus, extra: Sequence[str] = ()) -> list[Side]:
        """The release and the review of ``corpus``, both given ``extra`` arguments."""
        more = f" {extra[0]}" if extra else ""
        return [
            # Dagster may log a handled exception with its traceback: judge by exit code only.
            Side(
                "release",
                f"bf-assets release{more}",
                lambda: self.tools.release(corpus, extra=extra),
                traceback_is_crash=False,
            ),
            Side(
                "review",
                f"bf-assets review{more}",
                lambda: self.tools.ours_review(corpus.jobs, extra=extra),
            ),
        ]

    def _release_point(
        self, corpus: Corpus, extra: Sequence[str] = (), about: str = ""
    ) -> dict[str, Any]:
        """One size of a release series: the release and the review alternated, their table,
        and the row the series keeps (with how many trials the release exported)."""
        runs = self._runs_for(corpus.n_trials)
        print(
            f"  -- {corpus.n_trials:,} trials, {corpus.stats['bytes'] / MB:.1f} MB, "
            f"{about}{runs} run(s) per command"
        )
        if not self.args.no_prewarm:
            prewarm(corpus.jobs)
        sides = self._release_sides(corpus, extra)
        ms = run_sides(sides, runs, self.tools)
        stats = [side_stats(s, ms[s.key]) for s in sides]
        print_table(stats, "release/review")
        exported = sorted(
            {m.summary["exported"] for m in ms["release"] if m.summary and "exported" in m.summary}
        )
        print(f"  trials exported by the release: {', '.join(map(str, exported)) or '?'}")
        phases = bench_module("phases")
        where = phases.median_phases([m.phases for m in ms["release"]])
        print(f"  {phases.describe(where)}")
        return {
            "trials": corpus.n_trials,
            "exported": exported[0] if len(exported) == 1 else exported,
            "runs_per_tool": runs,
            "corpus": {"path": str(corpus.root), **corpus.stats},
            "stats": [asdict(s) for s in stats],
            "phases": where,
            "runs": _raw(ms),
        }

    def dagster(self) -> None:
        if not self._release_ready("dagster: bf-assets release vs bf-assets review, small corpus"):
            return
        corpus = self._small_corpus()
        sides = self._release_sides(corpus)
        ms = run_sides(sides, self.args.runs, self.tools)
        stats = [side_stats(s, ms[s.key]) for s in sides]
        print_table(stats, "release/review")
        targets = [
            Target(
                f"release within {DAGSTER_MAX_RATIO:g}x of the CLI review (wall ratio)",
                ratio(stats[0].wall_median_s, stats[1].wall_median_s),
                DAGSTER_MAX_RATIO,
            )
        ]
        print_targets(targets)
        write_results(
            self.args.results,
            "dagster",
            self.args.quick,
            {
                "corpus": {"path": str(corpus.root), **corpus.stats},
                "release_cmd": self.tools.release_template,
                "instance": "new per run"
                if self.tools.fresh_instance
                else "copy of an initialised one",
                "stats": [asdict(s) for s in stats],
                "targets": [{**asdict(t), "verdict": t.verdict} for t in targets],
                "runs": _raw(ms),
            },
            self.context,
        )

    def release_scale(self) -> None:
        sizes = ", ".join(f"{n:,}" for n in self.sizes.release)
        if not self._release_ready(
            f"release-scale: bf-assets release vs bf-assets review at {sizes} trials"
        ):
            return
        rows: list[dict[str, Any]] = []
        for n in self.sizes.release:
            rows.append(self._release_point(self.corpora.trials(n)))
        print_release_summary(rows)
        floor_row = self._floor_point()
        floor = release_floor(floor_row, rows)
        print_release_floor(floor)
        series = {int(row["trials"]): {s["key"]: s for s in row["stats"]} for row in rows}
        self.figures["release"] = series
        first = rows[0]["trials"] if rows else 0
        targets = [
            Target(
                f"release/review wall <= {DAGSTER_MAX_RATIO:g}x at {n:,} trials",
                ratio(st["release"]["wall_median_s"], st["review"]["wall_median_s"]),
                DAGSTER_MAX_RATIO,
            )
            for n, st in series.items()
        ] + [
            Target(
                f"release peak RSS, {first:,} -> {n:,} trials, grows <= "
                f"{RELEASE_MAX_RSS_GROWTH:g}x",
                ratio(st["release"]["rss_median_mb"], series[first]["release"]["rss_median_mb"]),
                RELEASE_MAX_RSS_GROWTH,
            )
            for n, st in series.items()
            if n != first
        ]
        print_targets(targets)
        write_results(
            self.args.results,
            "release-scale",
            self.args.quick,
            {
                "release_cmd": self.tools.release_template,
                "instance": "new per run"
                if self.tools.fresh_instance
                else "copy of an initialised one",
                "sizes": rows,
                "floor": {**floor, "run": floor_row},
                "targets": [{**asdict(t), "verdict": t.verdict} for t in targets],
            },
            self.context,
        )

    def _floor_point(self) -> dict[str, Any]:
        """A published release of ``FLOOR_TRIALS`` trials (healthy, exported, with their plan
        and task tree, so every step runs as in a real release), against their review."""
        about = "the release's fixed cost, "
        if self.corpora.fixture_job is not None:
            return self._release_point(self.corpora.trials(FLOOR_TRIALS), about=about)
        corpus = self.corpora.exportable(FLOOR_TRIALS)
        return self._release_point(corpus, _export_args(corpus), about)

    def release_export(self) -> None:
        """``release-scale`` on corpora whose healthy trials are all exported (the curation,
        the shards and the publish gate at scale); figures, no target of the issue."""
        sizes = ", ".join(f"{n:,}" for n in self.sizes.export)
        what = f"release-export: release vs review, every healthy trial exported, at {sizes}"
        if self.corpora.fixture_job is not None:
            print(f"\n== {what} ==\n  skipped: generated corpora only (--fixture-job given)")
            return
        if not self._release_ready(what):
            return
        rows: list[dict[str, Any]] = []
        for n in self.sizes.export:
            corpus = self.corpora.exportable(n)
            cells = f"{corpus.stats.get('plan_cells', '?')} planned cells, "
            rows.append(self._release_point(corpus, _export_args(corpus), cells))
        print_release_summary(rows)
        write_results(
            self.args.results,
            "release-export",
            self.args.quick,
            {"release_cmd": self.tools.release_template, "sizes": rows},
            self.context,
        )

    def cache(self) -> None:
        print("\n== cache: second bf-assets review of an unchanged corpus vs the first ==")
        if self.tools.skip_ours:
            print("  skipped: --skip-ours")
            return
        if not self.tools.has_cache_flag:
            print(
                f"  skipped: `{shlex.join(self.tools.ours)} --help` does not mention "
                f"{self.tools.cache_flag or '(no flag)'} (set --cache-flag)"
            )
            return
        corpus = self._small_corpus()
        holder: dict[str, Path] = {}

        def first() -> Invocation:
            holder["dir"] = Path(tempfile.mkdtemp(prefix="cache-", dir=self.tools.scratch))
            return self.tools.ours_review(corpus.jobs, cache_dir=holder["dir"])

        def second() -> Invocation:
            inv = self.tools.ours_review(corpus.jobs, cache_dir=holder["dir"])
            inv.cleanup.append(holder["dir"])
            return inv

        ms, stats, speedup = self._first_then_second(
            Side("first", "review, 1st (cold cache)", first),
            Side("second", "review, 2nd (same cache)", second),
        )
        targets = [
            Target(
                f"2nd run >= {CACHE_MIN_SPEEDUP:g}x faster (speed-up 1st/2nd)",
                speedup,
                CACHE_MIN_SPEEDUP,
                higher_is_better=True,
            )
        ]
        print_targets(targets)
        write_results(
            self.args.results,
            "cache",
            self.args.quick,
            {
                "corpus": {"path": str(corpus.root), **corpus.stats},
                "stats": [asdict(s) for s in stats],
                "targets": [{**asdict(t), "verdict": t.verdict} for t in targets],
                "runs": _raw(ms),
            },
            self.context,
        )

    def _first_then_second(
        self, first: Side, second: Side
    ) -> tuple[dict[str, list[Measurement]], list[SideStats], float | None]:
        """Each run a first then a second invocation (never alternated: the second runs on what
        the first left): the measurements, their table and the speed-up first/second."""
        sides = [first, second]
        ms = run_sides(sides, self.args.runs, self.tools, alternate=False)
        stats = [side_stats(s, ms[s.key]) for s in sides]
        print_table(stats, "1st/2nd")
        return ms, stats, ratio(stats[0].wall_median_s, stats[1].wall_median_s)

    def release_again(self) -> None:
        if not self._release_ready(
            "release-again: a second bf-assets release of the unchanged small corpus vs the first"
        ):
            return
        corpus = self._small_corpus()
        holder: dict[str, Path] = {}

        def first() -> Invocation:
            inv = self.tools.release(corpus)
            holder["dir"] = inv.cwd
            inv.cleanup.clear()  # the second release runs on what this one leaves
            return inv

        def second() -> Invocation:
            return self.tools.release(corpus, again=holder["dir"])

        ms, stats, speedup = self._first_then_second(
            Side("first", "release, 1st (new instance and warehouse)", first),
            Side("second", "release, 2nd (same instance, warehouse and --out)", second),
        )
        print(f"  speed-up of the second release: {speedup:.3g}x" if speedup else "")
        write_results(
            self.args.results,
            "release-again",
            self.args.quick,
            {
                "corpus": {"path": str(corpus.root), **corpus.stats},
                "release_cmd": self.tools.release_template,
                "stats": [asdict(s) for s in stats],
                "speedup": speedup,
                "runs": _raw(ms),
            },
            self.context,
        )

    def done_when(self) -> list[Goal]:
        """Issue 16's "Done when" targets, judged on the figures of this run."""
        goals = done_when_goals(self.figures, self.sizes)
        print('\n== issue 16 "Done when" (figures from this run) ==')
        if self.args.quick:
            print("  --quick: tiny sizes, the verdicts mean nothing")
        for g in goals:
            if g.value is None:
                print(f"  [{g.verdict:<4}] {g.text}: {g.missing or 'not measured'}")
            else:
                print(f"  [{g.verdict:<4}] {g.text}: {g.value:.3g}x ({g.detail})")
        write_results(
            self.args.results,
            "done-when",
            self.args.quick,
            {"goals": [{**asdict(g), "verdict": g.verdict} for g in goals]},
            self.context,
        )
        return goals


def _get(d: Any, *keys: Any) -> Any:
    for k in keys:
        if d is None:
            return None
        d = d.get(k) if isinstance(d, dict) else getattr(d, k, None)
    return d


def done_when_goals(figures: dict[str, Any], sizes: Sizes) -> list[Goal]:
    """The targets of issue 16's "Done when", from the figures the scenarios left in
    ``figures`` (``small``, ``heavy``, ``scale``, ``release``); a target whose scenario did not
    run (or whose tool was skipped) has no value and says which scenario measures it."""
    goals: list[Goal] = []
    rel = figures.get("release")
    ref_n = sizes.release[0] if sizes.release else 0
    for n in sizes.release[:2]:
        a = _get(rel, n, "release", "wall_median_s")
        b = _get(rel, n, "review", "wall_median_s")
        goals.append(
            Goal(
                f"release / review <= {DAGSTER_MAX_RATIO:g}x at {n:,} trials (wall)",
                ratio(a, b),
                DAGSTER_MAX_RATIO,
                f"release {fmt_s(a)}, review {fmt_s(b)}",
                "needs --scenario release-scale",
            )
        )
    for n in sizes.release[1:]:
        a = _get(rel, n, "release", "rss_median_mb")
        b = _get(rel, ref_n, "release", "rss_median_mb")
        goals.append(
            Goal(
                f"release peak RSS at {n:,} within {RELEASE_MAX_RSS_GROWTH:g}x of {ref_n:,} trials",
                ratio(a, b),
                RELEASE_MAX_RSS_GROWTH,
                f"{fmt_mb(a)} vs {fmt_mb(b)}",
                "needs --scenario release-scale",
            )
        )
    scale = figures.get("scale")
    lo = sizes.scale[0]
    hi = sizes.scale[min(2, len(sizes.scale) - 1)]
    a, b = _get(scale, hi, "rss_median_mb"), _get(scale, lo, "rss_median_mb")
    goals.append(
        Goal(
            f"review peak RSS at {hi:,} within {SCALE_MAX_GROWTH:g}x of {lo:,} trials",
            ratio(a, b),
            SCALE_MAX_GROWTH,
            f"{fmt_mb(a)} vs {fmt_mb(b)}",
            "needs --scenario scale (and our side)",
        )
    )
    small = _get(figures.get("small"), "stats")
    a, b = _get(small, "ours", "cpu_median_s"), _get(small, "theirs", "cpu_median_s")
    floor = _get(small, "floor", "cpu_median_s")
    goals.append(
        Goal(
            f"full review CPU <= the validator's on {sizes.small:,} small trials",
            ratio(a, b),
            SMALL_MAX_CPU_RATIO,
            f"ours {fmt_s(a)}, validator {fmt_s(b)}, floor {fmt_s(floor)} CPU",
            "needs --scenario small with --validator",
        )
    )
    heavy = _get(figures.get("heavy"), "stats")
    a, b = _get(heavy, "ours", "wall_median_s"), _get(heavy, "theirs", "wall_median_s")
    goals.append(
        Goal(
            f"heavy trial <= {HEAVY_MAX_WALL_RATIO:g}x the validator's wall",
            ratio(a, b),
            HEAVY_MAX_WALL_RATIO,
            f"ours {fmt_s(a)}, validator {fmt_s(b)}",
            "needs --scenario heavy with --validator",
        )
    )
    return goals


def print_scale_summary(rows: list[dict[str, Any]]) -> None:
    print(
        f"\n  {'trials':>8}  {'tool':<24} {'wall median':>12} {'CPU median':>11} "
        f"{'CPU ms/trial':>13} {'peak RSS':>10}"
    )
    for row in rows:
        for s in row["stats"]:
            cpu = s["cpu_median_s"]
            per = None if cpu is None else 1000 * cpu / row["trials"]
            print(
                f"  {row['trials']:>8,}  {s['label']:<24} {fmt_s(s['wall_median_s']):>12} "
                f"{fmt_s(cpu):>11} {'-' if per is None else f'{per:.3f}':>13} "
                f"{fmt_mb(s['rss_median_mb']):>10}"
            )


def print_release_summary(rows: list[dict[str, Any]]) -> None:
    if not rows:
        return
    first = {s["key"]: s for s in rows[0]["stats"]}
    print(
        f"\n  {'trials':>8}  {'release wall':>12} {'CPU':>9} {'RSS':>10}  "
        f"{'review wall':>11} {'CPU':>9} {'RSS':>10}  {'rel/rev wall':>12} "
        f"{'rel RSS growth':>14} {'exported':>9}"
    )
    for row in rows:
        by = {s["key"]: s for s in row["stats"]}
        rel, rev = by["release"], by["review"]
        growth = ratio(rel["rss_median_mb"], first["release"]["rss_median_mb"])
        print(
            f"  {row['trials']:>8,}  {fmt_s(rel['wall_median_s']):>12} "
            f"{fmt_s(rel['cpu_median_s']):>9} {fmt_mb(rel['rss_median_mb']):>10}  "
            f"{fmt_s(rev['wall_median_s']):>11} {fmt_s(rev['cpu_median_s']):>9} "
            f"{fmt_mb(rev['rss_median_mb']):>10}  "
            f"{fmt_x(ratio(rel['wall_median_s'], rev['wall_median_s'])):>12} "
            f"{fmt_x(growth):>14} {row.get('exported', '?')!s:>9}"
        )
    phases = bench_module("phases")
    for row in rows:
        print(f"  {row['trials']:>8,}  {phases.describe(row.get('phases'))}")


def _export_args(corpus: Corpus) -> list[str]:
    """The plan and task tree an ``exportable`` corpus is released and reviewed with."""
    return ["--plan", str(corpus.root / EXPORT_PLAN), "--tasks", str(corpus.root / "tasks")]


def release_floor(floor_row: dict[str, Any], rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The release's fixed cost (the wall time of a release and a review of ``FLOOR_TRIALS``
    trials) and, for each size of the series, the 2x budget (twice the review), the share of
    it the fixed cost takes, and the cost of each trial more: ``(wall(n) - wall(floor)) /
    (n - floor)`` for the release and the review, and their ratio (what the release would
    be against the review with no fixed cost at all)."""
    one = {s["key"]: s for s in floor_row["stats"]}
    rel1, rev1 = one["release"]["wall_median_s"], one["review"]["wall_median_s"]
    n1 = int(floor_row["trials"])
    sizes = []
    for row in rows:
        n = int(row["trials"])
        by = {s["key"]: s for s in row["stats"]}
        rel, rev = by["release"]["wall_median_s"], by["review"]["wall_median_s"]
        if None in (rel, rev, rel1, rev1) or n <= n1:
            continue
        budget = DAGSTER_MAX_RATIO * rev
        per_rel = (rel - rel1) / (n - n1)
        per_rev = (rev - rev1) / (n - n1)
        sizes.append(
            {
                "trials": n,
                "budget_s": budget,
                "fixed_share_of_budget": rel1 / budget if budget > 0 else None,
                "release_ms_per_trial": 1000 * per_rel,
                "review_ms_per_trial": 1000 * per_rev,
                "per_trial_ratio": ratio(per_rel, per_rev),
            }
        )
    return {"trials": n1, "release_s": rel1, "review_s": rev1, "sizes": sizes}


def print_release_floor(floor: dict[str, Any]) -> None:
    print(
        f"\n  the release's fixed cost: {floor['trials']:,} trial(s) take "
        f"{fmt_s(floor['release_s'])} to release and {fmt_s(floor['review_s'])} to review"
    )
    for row in floor["sizes"]:
        share = row["fixed_share_of_budget"]
        pct = "-" if share is None else f"{100 * share:.0f} %"
        print(
            f"  {row['trials']:>8,}  {DAGSTER_MAX_RATIO:g}x budget {fmt_s(row['budget_s'])}, "
            f"the fixed cost alone {pct} of it; each trial more: release "
            f"{row['release_ms_per_trial']:.2f} ms, review {row['review_ms_per_trial']:.2f} ms "
            f"({fmt_x(row['per_trial_ratio'])})"
        )


# --------------------------------------------------------------------------------------------
# Entry point
# --------------------------------------------------------------------------------------------


def _sizes(text: str) -> tuple[int, ...]:
    try:
        out = tuple(int(x.replace("_", "")) for x in text.split(",") if x.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a comma-separated list of sizes: {text!r}") from None
    if not out or min(out) < 1:
        raise argparse.ArgumentTypeError(f"sizes must be positive: {text!r}")
    return out


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description="Benchmark bf-assets review against Benchflow's validate_run_artifacts.py.",
    )
    p.add_argument(
        "--validator",
        type=Path,
        help="path to Benchflow's validate_run_artifacts.py (not part of this project); "
        "without it only our own figures are printed",
    )
    p.add_argument(
        "--work",
        type=Path,
        default=DEFAULT_WORK,
        help="where corpora are generated and reused (default: bench/corpora/)",
    )
    p.add_argument(
        "--results",
        type=Path,
        default=DEFAULT_RESULTS,
        help="where raw results are written (default: bench/results/)",
    )
    p.add_argument("--runs", type=int, default=3, help="timed runs per tool (default: 3)")
    p.add_argument(
        "--scale-sizes",
        type=_sizes,
        default=None,
        help="comma-separated corpus sizes of the scale scenario (default 1000,5000,20000,100000; "
        "the third is the flat-memory target's 20,000 point)",
    )
    p.add_argument(
        "--release-sizes",
        type=_sizes,
        default=None,
        help="comma-separated corpus sizes of release-scale (default 2000,20000,100000; the "
        "first is the reference size)",
    )
    p.add_argument(
        "--export-sizes",
        type=_sizes,
        default=None,
        help="comma-separated corpus sizes of release-export (default 2000,20000; the first "
        "is the reference size)",
    )
    p.add_argument(
        "--scale-runs",
        type=int,
        default=1,
        help=f"timed runs per tool at the scale and release-scale points of {BIG_POINT_TRIALS:,} "
        "trials or more (default: 1)",
    )
    p.add_argument(
        "--scenario",
        nargs="+",
        choices=SCENARIOS,
        default=list(DEFAULT_SCENARIOS),
        help="scenarios to run (default: small heavy); a run ends with issue 16's "
        '"Done when" targets judged on whatever figures it measured',
    )
    p.add_argument("--quick", action="store_true", help="tiny sizes, for a smoke test")
    p.add_argument(
        "--small-trials",
        type=int,
        help="override the size of the small corpus (also used by dagster and cache)",
    )
    p.add_argument(
        "--ours-cmd",
        help="our review command, shell-quoted; <jobs dir> --json is appended "
        "(default: the bf-assets console script beside this Python if present, "
        "else `python -m bf_assets.cli.main review`)",
    )
    p.add_argument(
        "--release-cmd",
        help="release command for the dagster scenario; {jobs}, {corpus} and {out} are "
        "substituted (default: the review command with `review` replaced by "
        "`release --runs {jobs} --out {out}`)",
    )
    p.add_argument(
        "--cache-flag",
        default="--cache-dir",
        help="option of `bf-assets review` naming its cache directory (default: --cache-dir); "
        "each run except the cache scenario's second one gets a fresh, empty directory",
    )
    p.add_argument(
        "--fixture-job",
        type=Path,
        help="build the small and scale corpora from copies of this job directory instead of "
        "the generator (baseline checks while the generator does not exist)",
    )
    p.add_argument("--skip-ours", action="store_true", help="measure only the Benchflow validator")
    p.add_argument(
        "--fresh-instance",
        action="store_true",
        help="dagster: each release run creates its Dagster instance from nothing (default: a "
        "copy of one initialised, empty instance)",
    )
    p.add_argument(
        "--no-prewarm",
        action="store_true",
        help="do not read the corpus once before timing (default: pre-warm the page cache)",
    )
    p.add_argument(
        "--timeout", type=float, default=3600.0, help="seconds before a run is killed (3600)"
    )
    args = p.parse_args(argv)
    if args.runs < 1:
        p.error("--runs must be >= 1")
    if args.scale_runs < 1:
        p.error("--scale-runs must be >= 1")
    if args.small_trials is not None and args.small_trials < 1:
        p.error("--small-trials must be >= 1")
    if args.skip_ours and args.validator is None:
        p.error("--skip-ours needs --validator: there would be nothing to measure")
    if args.fixture_job is not None:
        args.fixture_job = args.fixture_job.expanduser().resolve()
        if not args.fixture_job.is_dir():
            p.error(f"--fixture-job {args.fixture_job}: not a directory")
    args.work = args.work.expanduser().resolve()
    args.results = args.results.expanduser().resolve()
    args.scenario = [s for s in SCENARIOS if s in set(args.scenario)]
    return args


def bench_module(name: str) -> ModuleType:
    """``bench/<name>.py``, loaded once by path (this file is run as a script and loaded as
    a module by the tests, so the folder is not a package)."""
    key = f"bench_{name}"
    module = sys.modules.get(key)
    if module is None:
        spec = importlib.util.spec_from_file_location(key, REPO_ROOT / "bench" / f"{name}.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[key] = module  # a dataclass of it looks its module up by name
        spec.loader.exec_module(module)
    return module


def _parallel_probe(rounds: int) -> Any:
    """``bench/machine.py``'s probe."""
    return bench_module("machine").parallel_probe(rounds=rounds)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    sizes = QUICK_SIZES if args.quick else FULL_SIZES
    if args.scale_sizes:
        sizes = replace(sizes, scale=args.scale_sizes)
    if args.release_sizes:
        sizes = replace(sizes, release=args.release_sizes)
    if args.export_sizes:
        sizes = replace(sizes, export=args.export_sizes)
    if args.small_trials is not None:
        sizes = replace(sizes, small=args.small_trials)
    args.work.mkdir(parents=True, exist_ok=True)
    scratch = args.work / ".scratch"
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir()
    try:
        tools = Tools(args, scratch)
        corpora = CorpusFactory(args.work, args.fixture_job)
        # Fail fast, before any corpus is built or any run is timed.
        tools.check_validator()
        tools.check_ours()
        wanted = set(args.scenario)
        needs_trials = bool(wanted & {"small", "scale"}) or (
            not args.skip_ours
            and bool(
                wanted & {"dagster", "cache", "release-scale", "release-again", "release-export"}
            )
        )
        corpora.check_available(
            need_generated=needs_trials,
            need_heavy="heavy" in wanted and args.fixture_job is None,
        )
        probe = _parallel_probe(rounds=1 if args.quick else 3)
        context = {
            "quick": args.quick,
            "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "host": {
                "python": sys.version.split()[0],
                "executable": sys.executable,
                "platform": platform.platform(),
                "cpus": os.cpu_count(),
                # the work done with every core busy over one core's, and how much more CPU
                # the same work costs then (bench/machine.py): the context of CPU figures
                "parallel": probe.to_dict(),
            },
            "ours_cmd": None if args.skip_ours else tools.ours,
            "validator": None if tools.validator is None else str(tools.validator),
            "validator_sha256": tools.validator_sha256,
            "runs_per_tool": args.runs,
            "runs_per_tool_big_points": args.scale_runs,
            "prewarm": not args.no_prewarm,
            "corpus_source": "fixture-copies" if args.fixture_job else "generator",
            "mb": "10**6 bytes; peak RSS is the child's ru_maxrss",
            "cpu": "user + system seconds of the child and its waited-for children (os.wait4)",
        }
        print(
            f"bf-assets bench: scenarios {' '.join(args.scenario)}, {args.runs} run(s) per tool "
            f"({args.scale_runs} at the points of {BIG_POINT_TRIALS:,} trials or more)"
        )
        print(f"  python {context['host']['python']} on {context['host']['platform']}")
        print(
            f"  {probe.cpus} cores do {probe.speedup:.2f}x the work of one when all are busy; "
            f"the same work then costs {probe.cpu_growth:.2f}x the CPU (bench/machine.py)"
        )
        if not args.skip_ours:
            print(f"  ours:   {shlex.join(tools.ours)} <jobs> --json")
        if tools.validator is not None:
            print(f"  theirs: {sys.executable} {tools.validator} <jobs> --json")
        else:
            print("  theirs: baseline skipped (no --validator)")
        bench = Bench(args, sizes, tools, corpora, context)
        for name in args.scenario:
            getattr(bench, name.replace("-", "_"))()
        bench.done_when()
        if tools.failed_runs:
            print(f"\nrun_bench: {tools.failed_runs} run(s) failed (see above)", file=sys.stderr)
            return 1
    except BenchError as exc:
        print(f"run_bench: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("run_bench: interrupted", file=sys.stderr)
        return 130
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
