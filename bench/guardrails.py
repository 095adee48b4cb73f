#!/usr/bin/env python3
"""The redesign's guardrails, measured in one run: the code before against the code after.

Both checkouts run side by side, in turns (before, after; then after, before; ...), on the same
corpora, each run a child process timed from outside (wall time, CPU and peak RSS from
``os.wait4``, as in ``bench/run_bench.py``):

- ``bf-assets review --json`` of a ``trials-N`` corpus (``--review-trials``, 2,000): the after
  code's median wall time and peak RSS within 1.2x of the before code's;
- ``bf-assets release`` of an ``exportable-N`` corpus with its plan and task tree
  (``--release-trials``, 20,000): wall time and peak RSS within 1.5x;
- with ``--with-100k``: the after code's release of a ``trials-N`` corpus of ``--big-trials``
  (100,000) completes, with peak RSS within 1.5x of its release of the review's corpus.

Corpora are built (or reused, while their marker matches) by the ``CorpusFactory`` of
``bench/run_bench.py`` in the ``--corpus-from`` checkout (default: the before code), so every
checkout reads the very same trees.  Prints a table with the ratios and a PASS or FAIL per
guardrail and writes ``<results>/guardrails.json``.  No figure from here belongs in a test.
"""

from __future__ import annotations

import argparse
import importlib
import json
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
REPO_ROOT = BENCH_DIR.parent
REVIEW_LIMIT = 1.2
RELEASE_LIMIT = 1.5
BIG_RSS_LIMIT = 1.5
RESULTS_NAME = "guardrails"

# Run in a child by the --corpus-from checkout's Python path: its run_bench's CorpusFactory
# builds or reuses the corpus and the last line of output describes it.
CORPUS_SOURCE = """
import json, sys
from pathlib import Path
checkout, work, kind, n = sys.argv[1:5]
sys.path[:0] = [checkout, str(Path(checkout) / "bench")]
import run_bench
corpus = getattr(run_bench.CorpusFactory(Path(work), None), kind)(int(n))
print(json.dumps({"name": corpus.name, "root": str(corpus.root), "jobs": str(corpus.jobs),
                  "stats": corpus.stats}))
"""


def bench_script(name: str) -> ModuleType:
    """``bench/<name>.py`` as a module (the folder is not a package)."""
    if str(BENCH_DIR) not in sys.path:
        sys.path.insert(0, str(BENCH_DIR))
    return importlib.import_module(name)


@dataclass
class Guardrail:
    text: str
    before: float | None
    after: float | None
    value: float | None  # the ratio (or the figure) judged
    limit: float
    unit: str
    problem: str | None = None  # why there is no value

    @property
    def verdict(self) -> str:
        if self.problem is not None:
            return "FAIL"
        if self.value is None:
            return "n/a"
        return "PASS" if self.value <= self.limit else "FAIL"


def build_corpus(checkout: Path, work: Path, kind: str, n_trials: int) -> Any:
    """The ``kind`` (``trials`` or ``exportable``) corpus of ``n_trials`` under ``work``, built
    by ``checkout``'s bench, as a run_bench Corpus."""
    rb = bench_script("run_bench")
    done = subprocess.run(
        [sys.executable, "-c", CORPUS_SOURCE, str(checkout), str(work), kind, str(n_trials)],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        cwd=checkout,
        check=False,
    )
    lines = done.stdout.strip().splitlines()
    for line in lines[:-1]:
        print(line)
    if done.returncode != 0 or not lines:
        tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
        raise rb.BenchError(
            f"could not build the {kind}-{n_trials} corpus with {checkout}: " + " | ".join(tail)
        )
    doc = json.loads(lines[-1])
    return rb.Corpus(doc["name"], Path(doc["root"]), Path(doc["jobs"]), doc["stats"])


def git_state(checkout: Path) -> dict[str, Any]:
    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(
                ["git", "-C", str(checkout), *args],
                capture_output=True,
                text=True,
                check=False,
                timeout=60,
            )
        except (OSError, subprocess.TimeoutExpired):
            return None
        return done.stdout.strip() if done.returncode == 0 else None

    status = git("status", "--porcelain", "--untracked-files=no")
    return {
        "path": str(checkout),
        "commit": git("rev-parse", "HEAD"),
        "modified": None if status is None else bool(status),
    }


def pair_guardrails(rb: ModuleType, what: str, stats: list[Any], limit: float) -> list[Guardrail]:
    """Wall time and peak RSS of the after code (``stats[1]``) over the before code's."""
    before, after = stats
    problem = None
    if before.ok < before.runs or after.ok < after.runs:
        problem = (
            f"failed runs: before {before.ok}/{before.runs} ok, after {after.ok}/{after.runs} ok"
        )
    return [
        Guardrail(
            f"{what}: wall",
            before.wall_median_s,
            after.wall_median_s,
            rb.ratio(after.wall_median_s, before.wall_median_s),
            limit,
            "s",
            problem,
        ),
        Guardrail(
            f"{what}: peak RSS",
            before.rss_median_mb,
            after.rss_median_mb,
            rb.ratio(after.rss_median_mb, before.rss_median_mb),
            limit,
            "MB",
            problem,
        ),
    ]


def exported_counts(ms: dict[str, list[Any]]) -> dict[str, list[int | None]]:
    return {
        key: [(m.summary or {}).get("exported") if m.ok else None for m in runs]
        for key, runs in ms.items()
    }


def pair_ratios(ms: dict[str, list[Any]]) -> list[dict[str, float | None]]:
    """After over before, round by round (the two ran next to each other)."""
    pairs = zip(ms.get("before", []), ms.get("after", []), strict=False)
    return [
        {
            "wall": a.wall_s / b.wall_s if a.ok and b.ok and b.wall_s else None,
            "peak_rss": a.peak_rss_kib / b.peak_rss_kib
            if a.ok and b.ok and b.peak_rss_kib
            else None,
        }
        for b, a in pairs
    ]


def print_guardrails(guards: list[Guardrail]) -> None:
    print(f"\n  {'guardrail':<44} {'before':>11} {'after':>11} {'ratio':>8} {'limit':>7}  verdict")
    for g in guards:
        fmt = "{:.2f} s" if g.unit == "s" else "{:.1f} MB"
        before = "-" if g.before is None else fmt.format(g.before)
        after = "-" if g.after is None else fmt.format(g.after)
        value = "-" if g.value is None else f"{g.value:.2f}x"
        print(f"  {g.text:<44} {before:>11} {after:>11} {value:>8} {g.limit:>6.1f}x  {g.verdict}")
        if g.problem:
            print(f"    {g.problem}")


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description="Measure the redesign's guardrails: the code before against the code "
        "after, side by side, in one run.",
    )
    p.add_argument(
        "--before",
        type=Path,
        default=Path("/work/before"),
        help="checkout of the code before (default /work/before)",
    )
    p.add_argument(
        "--after",
        type=Path,
        default=REPO_ROOT,
        help="checkout of the code after (default: the repository this script is in)",
    )
    p.add_argument(
        "--corpus-from",
        type=Path,
        help="checkout whose bench and sample generator build the corpora (default: --before)",
    )
    p.add_argument(
        "--work",
        type=Path,
        default=REPO_ROOT / "bench" / "corpora",
        help="where corpora are built and reused (default bench/corpora/)",
    )
    p.add_argument(
        "--results",
        type=Path,
        default=REPO_ROOT / "bench" / "results",
        help="where guardrails.json is written (default bench/results/)",
    )
    p.add_argument("--review-trials", type=int, default=2000, help="review corpus (2000)")
    p.add_argument(
        "--release-trials", type=int, default=20000, help="exportable release corpus (20000)"
    )
    p.add_argument("--runs", type=int, default=3, help="review runs per checkout (default 3)")
    p.add_argument(
        "--release-runs", type=int, default=2, help="release runs per checkout (default 2)"
    )
    p.add_argument("--skip-release", action="store_true", help="measure the review guardrail only")
    p.add_argument(
        "--with-100k",
        action="store_true",
        help="also release a trials corpus of --big-trials with the after code",
    )
    p.add_argument("--big-trials", type=int, default=100000, help="the big point (100000)")
    p.add_argument(
        "--no-warm-up",
        action="store_true",
        help="no unmeasured review and release of the sample before the measured runs",
    )
    p.add_argument(
        "--timeout", type=float, default=7200.0, help="seconds before a run is killed (7200)"
    )
    args = p.parse_args(argv)
    for name in ("review_trials", "release_trials", "runs", "release_runs", "big_trials"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be >= 1")
    for name in ("before", "after"):
        path = getattr(args, name).expanduser().resolve()
        if not (path / "pyproject.toml").is_file():
            p.error(f"--{name} {path}: not a bf-assets checkout (no pyproject.toml)")
        setattr(args, name, path)
    args.corpus_from = (args.corpus_from or args.before).expanduser().resolve()
    args.work = args.work.expanduser().resolve()
    args.results = args.results.expanduser().resolve()
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    rb = bench_script("run_bench")
    commands = bench_script("checkout_commands")
    args.work.mkdir(parents=True, exist_ok=True)
    scratch = args.work / ".scratch-guardrails"
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir()
    pycache = args.work / ".pycache"  # bytecode of both checkouts, outside them
    before = commands.Checkout(args.before, "before", pycache=pycache)
    after = commands.Checkout(args.after, "after", pycache=pycache)
    doc: dict[str, Any] = {
        "scenario": RESULTS_NAME,
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "before": git_state(args.before),
        "after": git_state(args.after),
        "corpus_from": str(args.corpus_from),
        "mb": "10**6 bytes; peak RSS is the child's ru_maxrss",
        "order": "before, after; then after, before; and so on",
        "points": {},
    }
    guards: list[Guardrail] = []
    try:
        tools = commands.run_context(rb, args.work, scratch, args.timeout)
        print(f"guardrails: before {args.before}, after {args.after}")
        if not args.no_warm_up:
            commands.warm_up(rb, [before, after], scratch, args.timeout)

        def run_point(name: str, corpus: Any, sides: list[Any], runs: int) -> list[Any]:
            rb.prewarm(corpus.jobs)
            print(f"\n{name} ({corpus.n_trials:,} trials, {corpus.stats['bytes'] / 1e6:.0f} MB)")
            ms = rb.run_sides(sides, runs, tools)  # in turns: A B, then B A, ...
            stats = [rb.side_stats(side, ms[side.key]) for side in sides]
            rb.print_table(stats, None)
            doc["points"][name] = {
                "corpus": {"name": corpus.name, "root": str(corpus.root), **corpus.stats},
                "stats": [asdict(s) for s in stats],
                "exported": exported_counts(ms),
                "pair_ratios": pair_ratios(ms),
                "runs": rb._raw(ms),
            }
            return stats

        def both(what: str, invoke: Callable[[Any], Any]) -> list[Any]:
            """One side per checkout, the before code first."""
            return [
                rb.Side(code.label, f"{code.label}: {what}", lambda code=code: invoke(code))
                for code in (before, after)
            ]

        review = build_corpus(args.corpus_from, args.work, "trials", args.review_trials)
        stats = run_point(
            "review",
            review,
            both("review", lambda code: code.review(rb, review.jobs, scratch)),
            args.runs,
        )
        guards += pair_guardrails(rb, f"review {args.review_trials:,}", stats, REVIEW_LIMIT)

        if not args.skip_release:
            export = build_corpus(args.corpus_from, args.work, "exportable", args.release_trials)
            extra = ["--plan", str(export.root / rb.EXPORT_PLAN)]
            extra += ["--tasks", str(export.root / "tasks")]
            stats = run_point(
                "release",
                export,
                both("release", lambda code: code.release(rb, export.jobs, scratch, extra)),
                args.release_runs,
            )
            guards += pair_guardrails(
                rb, f"release {args.release_trials:,} exportable", stats, RELEASE_LIMIT
            )

        if args.with_100k:
            big = build_corpus(args.corpus_from, args.work, "trials", args.big_trials)
            ref = run_point(
                "big-reference",
                review,
                [
                    rb.Side(
                        "after", "after: release", lambda: after.release(rb, review.jobs, scratch)
                    )
                ],
                1,
            )[0]
            point = run_point(
                "big",
                big,
                [rb.Side("after", "after: release", lambda: after.release(rb, big.jobs, scratch))],
                1,
            )[0]
            completed = point.ok == point.runs and ref.ok == ref.runs
            guards.append(
                Guardrail(
                    f"after: release {args.big_trials:,} / {args.review_trials:,}: peak RSS",
                    ref.rss_median_mb,
                    point.rss_median_mb,
                    rb.ratio(point.rss_median_mb, ref.rss_median_mb),
                    BIG_RSS_LIMIT,
                    "MB",
                    None if completed else "a release did not complete",
                )
            )
    except rb.BenchError as exc:
        print(f"guardrails: error: {exc}", file=sys.stderr)
        return 2
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print_guardrails(guards)
    doc["guardrails"] = [{**asdict(g), "verdict": g.verdict} for g in guards]
    doc["passed"] = all(g.verdict != "FAIL" for g in guards)
    args.results.mkdir(parents=True, exist_ok=True)
    path = args.results / f"{RESULTS_NAME}.json"
    path.write_text(json.dumps(doc, indent=2, default=str) + "\n", encoding="utf-8")
    print(f"  raw results: {path}")
    return 0 if doc["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
