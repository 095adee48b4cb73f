#!/usr/bin/env python3
"""A corpus that looks like real Benchflow trials, and the review's and the release's
throughput on it against the read floor.

The corpus: ``--trials`` production trials whose sizes are drawn log-uniformly between
``--min-mb`` and ``--max-mb`` (seeded), written by the sample generator's ``write_trial`` with
as many exchanges as reach each size.  As in real runs, nearly all bytes are the trajectories:
the LLM trajectory (every request re-sends the growing conversation) and the ``results.jsonl``
row built from it.  A share of the trials (``--exportable-share``) are passes and fails, which
are healthy and training-ready and fill the slots of the plan beside the jobs; the rest are
timeouts and unhealthy trials with trajectories just as large, which the release excludes.

The measurements: the read floor (every file read once, every JSON file and JSONL line parsed
once with orjson), ``bf-assets review --json`` and ``bf-assets release`` (a fresh Dagster home
and warehouse per run), each as MB/s and trials/s with wall, CPU and peak RSS, and the ratio of
each wall time to the floor's.  Results go to ``<results>/realistic.json``.  No figure from here
belongs in a test.
"""

from __future__ import annotations

import argparse
import importlib
import json
import math
import random
import shutil
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict
from datetime import datetime, timedelta
from pathlib import Path
from types import ModuleType
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
REPO_ROOT = BENCH_DIR.parent
MB = 1_000_000

EXPORTABLE_SCENARIOS = ("pass", "pass", "pass", "fail")
# timeouts and unhealthy trials that still carry full-size trajectories
EXCLUDED_SCENARIOS = (
    "normal_timeout",
    "normal_timeout",
    "normal_timeout",
    "verifier_crash",
    "partial_timeout",
    "missing_rows",
    "bad_llm_line",
    "no_usage",
)
TRIALS_PER_JOB = 10
FIRST_JOB = datetime(2026, 8, 1)
JOB_FORMAT = "%Y-%m-%d__%H-%M-%S"
# the bytes of one tool output: real tool results run from a few hundred bytes to several KB
TOOL_OUTPUT_BYTES = (800, 6000)
SIZE_TOLERANCE = 0.12  # a trial within 12 % of its drawn size is kept
MAX_ATTEMPTS = 6
FIRST_EXCHANGES = 16
RESULTS_NAME = "realistic"


def bench_script(name: str) -> ModuleType:
    """``bench/<name>.py`` as a module (the folder is not a package)."""
    if str(BENCH_DIR) not in sys.path:
        sys.path.insert(0, str(BENCH_DIR))
    return importlib.import_module(name)


def sample_generator() -> ModuleType:
    """The sample-data generator, ``bf_sample.generator``, of this checkout."""
    if str(REPO_ROOT) not in sys.path:
        sys.path.insert(0, str(REPO_ROOT))
    return importlib.import_module("bf_sample.generator")


def generator_parts(gen: ModuleType) -> tuple[Any, Any, tuple[str, ...], dict[str, Any], Any]:
    """``write_trial``, ``planned``, the harness keys, the harnesses and the plan module of
    the generator's package (its sibling modules ``plan``, ``harness`` and ``tasks``)."""
    package = gen.__name__.rsplit(".", 1)[0]
    plan = importlib.import_module(f"{package}.plan")
    harness = importlib.import_module(f"{package}.harness")
    return gen.write_trial, plan.planned, tuple(plan.HARNESSES), harness.HARNESSES, plan


def trial_sizes(n_trials: int, seed: int, min_mb: float, max_mb: float) -> list[int]:
    """``n_trials`` sizes in bytes, log-uniform between ``min_mb`` and ``max_mb``."""
    rng = random.Random(seed)
    lo, hi = math.log(min_mb * MB), math.log(max_mb * MB)
    return [round(math.exp(rng.uniform(lo, hi))) for _ in range(n_trials)]


def dir_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def next_exchanges(points: list[tuple[int, int]], target: int) -> int:
    """The number of exchanges that should give ``target`` bytes, from the sizes measured so
    far: a trial grows with the square of its exchanges (each request re-sends the
    conversation), over a fixed part."""
    n1, s1 = points[-1]
    if len(points) == 1 or points[-2][0] == n1:
        guess = n1 * math.sqrt(target / max(s1, 1))
    else:
        n0, s0 = points[-2]
        slope = (s1 - s0) / (n1 * n1 - n0 * n0)
        if slope <= 0:
            guess = n1 * math.sqrt(target / max(s1, 1))
        else:
            fixed = s1 - slope * n1 * n1
            guess = math.sqrt(max(target - fixed, slope * 4) / slope)
    return max(2, round(guess))


def write_sized_trial(
    write_trial: Any,
    job_dir: Path,
    plan: Any,
    target: int,
    tool_output_bytes: int,
    seed: int,
    bounds: tuple[int, int],
) -> tuple[int, int]:
    """Write ``plan``'s rollout with as many exchanges as bring it near ``target`` bytes (and
    inside ``bounds``); return (exchanges, bytes)."""
    low = max(bounds[0], round(target * (1 - SIZE_TOLERANCE)))
    high = min(bounds[1], round(target * (1 + SIZE_TOLERANCE)))
    points: list[tuple[int, int]] = []
    tried: dict[int, int] = {}
    n = FIRST_EXCHANGES
    for _ in range(MAX_ATTEMPTS):
        rdir = job_dir / plan.rollout
        shutil.rmtree(rdir, ignore_errors=True)
        write_trial(job_dir, plan, n_exchanges=n, tool_output_bytes=tool_output_bytes, seed=seed)
        size = dir_bytes(rdir)
        tried[n] = size
        if low <= size <= high:
            return n, size
        points.append((n, size))
        n = next_exchanges(points, target)
        if n in tried:
            break
    # the closest size inside the bounds, else the closest at all
    inside = {k: v for k, v in tried.items() if bounds[0] <= v <= bounds[1]} or tried
    n = min(inside, key=lambda k: abs(inside[k] - target))
    shutil.rmtree(job_dir / plan.rollout, ignore_errors=True)
    write_trial(job_dir, plan, n_exchanges=n, tool_output_bytes=tool_output_bytes, seed=seed)
    return n, dir_bytes(job_dir / plan.rollout)


def build_realistic(
    root: Path, n_trials: int, seed: int, min_mb: float, max_mb: float, share: float
) -> dict[str, Any]:
    """Write the corpus under ``root`` (``jobs/``, ``tasks/``, the plan, a manifest) and
    return its figures."""
    rb = bench_script("run_bench")
    gen = sample_generator()
    write_trial, planned, harness_keys, harnesses, plan_module = generator_parts(gen)
    tasks_module = importlib.import_module(gen.__name__.rsplit(".", 1)[0] + ".tasks")
    tasks_module.write_tasks(root / "tasks")
    rng = random.Random(seed)
    sizes = trial_sizes(n_trials, seed, min_mb, max_mb)
    bounds = (round(min_mb * MB), round(max_mb * MB))
    used: set[str] = set()
    trials: list[dict[str, Any]] = []
    for i, target in enumerate(sizes):
        job = (FIRST_JOB + timedelta(hours=i // TRIALS_PER_JOB)).strftime(JOB_FORMAT)
        exportable = rng.random() < share
        scenario = rng.choice(EXPORTABLE_SCENARIOS if exportable else EXCLUDED_SCENARIOS)
        harness = rng.choice(harness_keys)
        task = rng.choice(tasks_module.TASK_NAMES)
        while True:
            hex8 = f"{rng.getrandbits(32):08x}"
            if hex8 not in used:
                used.add(hex8)
                break
        plan = planned(
            job=job,
            rollout=f"{task}__{hex8}",
            task=task,
            harness=harness,
            model=harnesses[harness].model,
            skill_mode=rng.choice(plan_module.SKILL_MODES),
            sandbox=rng.choice(plan_module.SANDBOXES),
            scenario=scenario,
        )
        tool_bytes = rng.randint(*TOOL_OUTPUT_BYTES)
        exchanges, size = write_sized_trial(
            write_trial,
            root / "jobs" / job,
            plan,
            target,
            tool_bytes,
            rng.getrandbits(32),
            bounds,
        )
        trials.append(
            {
                **plan.to_dict(),
                "exportable_scenario": exportable,
                "target_bytes": target,
                "bytes": size,
                "exchanges": exchanges,
                "tool_output_bytes": tool_bytes,
            }
        )
        print(
            f"    trial {i + 1}/{n_trials}: {size / MB:6.1f} MB, {exchanges} exchanges, {scenario}",
            flush=True,
        )
    cells = rb.write_export_plan(root / rb.EXPORT_PLAN, trials)
    (root / "realistic-manifest.json").write_text(
        json.dumps({"seed": seed, "trials": trials}, indent=2) + "\n", encoding="utf-8"
    )
    trial_bytes = [t["bytes"] for t in trials]
    return {
        "trials": n_trials,
        "plan_cells": cells,
        "exportable_scenarios": sum(1 for t in trials if t["exportable_scenario"]),
        "trial_mb_min": min(trial_bytes) / MB,
        "trial_mb_median": sorted(trial_bytes)[len(trial_bytes) // 2] / MB,
        "trial_mb_max": max(trial_bytes) / MB,
    }


def trajectory_share(jobs: Path) -> float:
    """The share of the corpus's bytes in trajectory files (``trajectory/``, ``results.jsonl``,
    ``trainer/``)."""
    total = traj = 0
    for path in jobs.rglob("*"):
        if not path.is_file():
            continue
        size = path.stat().st_size
        total += size
        if path.name == "results.jsonl" or path.parent.name in ("trajectory", "trainer"):
            traj += size
    return traj / total if total else 0.0


def realistic_corpus(
    work: Path, n_trials: int, seed: int, min_mb: float, max_mb: float, share: float
) -> Any:
    """The corpus under ``work`` (reused while its marker matches), as a run_bench Corpus."""
    rb = bench_script("run_bench")
    gen = sample_generator()
    sources = [*Path(gen.__file__ or "").parent.glob("*.py"), Path(__file__)]
    spec = {
        "kind": "realistic",
        "n_trials": n_trials,
        "seed": seed,
        "min_mb": min_mb,
        "max_mb": max_mb,
        "exportable_share": share,
        "source_digest": rb._source_digest(sources),
    }
    factory = rb.CorpusFactory(work, None)

    def build(root: Path) -> dict[str, Any]:
        return build_realistic(root, n_trials, seed, min_mb, max_mb, share)

    return factory._ensure(f"realistic-{n_trials}", spec, build)


def throughput(stats: Any, corpus: Any, floor: Any) -> dict[str, Any]:
    """MB/s and trials/s of one command's median wall time, and its wall and CPU time over
    the floor's (the CPU ratio holds on a busy machine, where wall times stretch)."""
    wall, cpu = stats.wall_median_s, stats.cpu_median_s
    return {
        **asdict(stats),
        "mb_per_s": None if not wall else corpus.stats["bytes"] / MB / wall,
        "trials_per_s": None if not wall else corpus.n_trials / wall,
        "wall_over_floor": None
        if not wall or not floor.wall_median_s
        else wall / floor.wall_median_s,
        "cpu_over_floor": None if not cpu or not floor.cpu_median_s else cpu / floor.cpu_median_s,
    }


def exported(ms: list[Any]) -> int | None:
    for m in ms:
        if m.ok and m.summary and isinstance(m.summary.get("exported"), int):
            return int(m.summary["exported"])
    return None


def print_throughput(rb: ModuleType, rows: list[dict[str, Any]]) -> None:
    print(
        f"\n  {'':<24} {'MB/s':>8} {'trials/s':>9} {'wall':>9} {'CPU':>9} {'peak RSS':>10} "
        f"{'wall/floor':>10} {'CPU/floor':>9} {'exported':>9}"
    )
    for row in rows:
        mbs, tps = row["mb_per_s"], row["trials_per_s"]
        exports = row.get("exported")
        print(
            f"  {row['label']:<24} {'-' if mbs is None else f'{mbs:.1f}':>8} "
            f"{'-' if tps is None else f'{tps:.2f}':>9} {rb.fmt_s(row['wall_median_s']):>9} "
            f"{rb.fmt_s(row['cpu_median_s']):>9} {rb.fmt_mb(row['rss_median_mb']):>10} "
            f"{rb.fmt_x(row['wall_over_floor']):>10} {rb.fmt_x(row['cpu_over_floor']):>9} "
            f"{'-' if exports is None else exports:>9}"
        )


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description="Generate a corpus of realistic, 1-50 MB Benchflow trials and measure the "
        "review's and the release's throughput on it against the read floor.",
    )
    p.add_argument("--trials", type=int, default=80, help="trials in the corpus (default 80)")
    p.add_argument("--min-mb", type=float, default=1.0, help="smallest trial, MB (default 1)")
    p.add_argument("--max-mb", type=float, default=50.0, help="largest trial, MB (default 50)")
    p.add_argument(
        "--exportable-share",
        type=float,
        default=0.6,
        help="share of trials that are passes or fails, exported by a release (default 0.6)",
    )
    p.add_argument("--seed", type=int, default=0, help="seed of sizes and trials (default 0)")
    p.add_argument("--runs", type=int, default=1, help="timed runs per command (default 1)")
    p.add_argument(
        "--work",
        type=Path,
        default=REPO_ROOT / "bench" / "corpora",
        help="where the corpus is generated and reused (default bench/corpora/)",
    )
    p.add_argument(
        "--results",
        type=Path,
        default=REPO_ROOT / "bench" / "results",
        help="where realistic.json is written (default bench/results/)",
    )
    p.add_argument(
        "--skip-release", action="store_true", help="measure the floor and the review only"
    )
    p.add_argument(
        "--no-warm-up",
        action="store_true",
        help="no unmeasured review and release of the sample before the measured runs",
    )
    p.add_argument(
        "--timeout", type=float, default=3600.0, help="seconds before a run is killed (3600)"
    )
    args = p.parse_args(argv)
    if args.trials < 1 or args.runs < 1:
        p.error("--trials and --runs must be >= 1")
    if not 0 < args.min_mb <= args.max_mb:
        p.error("need 0 < --min-mb <= --max-mb")
    if not 0 <= args.exportable_share <= 1:
        p.error("--exportable-share must be between 0 and 1")
    args.work = args.work.expanduser().resolve()
    args.results = args.results.expanduser().resolve()
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    rb = bench_script("run_bench")
    commands = bench_script("checkout_commands")
    args.work.mkdir(parents=True, exist_ok=True)
    scratch = args.work / ".scratch-realistic"
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir()
    try:
        corpus = realistic_corpus(
            args.work, args.trials, args.seed, args.min_mb, args.max_mb, args.exportable_share
        )
        share = trajectory_share(corpus.jobs)
        print(
            f"realistic corpus: {corpus.n_trials} trials, {corpus.stats['bytes'] / MB:.0f} MB, "
            f"trials {corpus.stats['trial_mb_min']:.1f}-{corpus.stats['trial_mb_max']:.1f} MB "
            f"(median {corpus.stats['trial_mb_median']:.1f}), {100 * share:.1f} % of bytes in "
            f"trajectories, {corpus.stats['exportable_scenarios']} exportable scenarios"
        )
        rb.prewarm(corpus.jobs)
        code = commands.Checkout(REPO_ROOT, "this checkout", pycache=args.work / ".pycache")
        tools = commands.run_context(rb, args.work, scratch, args.timeout)
        if not args.no_warm_up:
            commands.warm_up(rb, [code], scratch, args.timeout)
        extra = ["--plan", str(corpus.root / rb.EXPORT_PLAN), "--tasks", str(corpus.root / "tasks")]
        sides = [
            rb.Side("floor", "read floor", lambda: code.floor(rb, corpus.jobs)),
            rb.Side(
                "review",
                "bf-assets review --json",
                lambda: code.review(rb, corpus.jobs, scratch, extra),
            ),
        ]
        if not args.skip_release:
            sides.append(
                rb.Side(
                    "release",
                    "bf-assets release",
                    lambda: code.release(rb, corpus.jobs, scratch, extra),
                )
            )
        ms = rb.run_sides(sides, args.runs, tools)
        stats = [rb.side_stats(side, ms[side.key]) for side in sides]
        rows = [throughput(s, corpus, stats[0]) for s in stats]
        for row in rows:
            row["exported"] = exported(ms[row["key"]])
        print_throughput(rb, rows)
        args.results.mkdir(parents=True, exist_ok=True)
        path = args.results / f"{RESULTS_NAME}.json"
        doc = {
            "scenario": RESULTS_NAME,
            "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "corpus": {
                "root": str(corpus.root),
                **corpus.stats,
                "mb": corpus.stats["bytes"] / MB,
                "trajectory_share": share,
            },
            "runs_per_command": args.runs,
            "mb": "10**6 bytes; peak RSS is the child's ru_maxrss",
            "stats": rows,
            "runs": rb._raw(ms),
        }
        path.write_text(json.dumps(doc, indent=2, default=str) + "\n", encoding="utf-8")
        print(f"  raw results: {path}")
        if tools.failed_runs:
            print(f"realistic_corpus: {tools.failed_runs} run(s) failed", file=sys.stderr)
            return 1
    except rb.BenchError as exc:
        print(f"realistic_corpus: error: {exc}", file=sys.stderr)
        return 2
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
