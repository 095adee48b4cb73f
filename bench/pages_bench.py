"""Trial pages at scale: CPU, wall and peak memory of one ``write_pages`` and the page hashes.

    python bench/pages_bench.py prepare RUN_ROOT... --ds DS.pickle [--tasks DIR]
    python bench/pages_bench.py run --ds DS.pickle --out PAGES [--hashes H.json]

``prepare`` reviews the run roots once and keeps the dataset review (so ``run`` measures the
pages alone); ``run`` writes the pages in a child process and reports that process tree's
user+sys CPU (``os.wait4``), wall, the child's resident memory before ``write_pages`` and its
peak, and the workers' peak; ``--hashes`` writes the sha256 of every page written.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import pickle
import resource
import subprocess
import sys
import threading
import time
from pathlib import Path


def _status(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])  # kB
    return 0


def _pss_kb(pid: int | str) -> int:
    try:
        text = Path(f"/proc/{pid}/smaps_rollup").read_text()
    except OSError:
        return 0
    for line in text.splitlines():
        if line.startswith("Pss:"):
            return int(line.split()[1])
    return 0


def _children() -> list[str]:
    out: list[str] = []
    for task in Path("/proc/self/task").iterdir():
        with contextlib.suppress(OSError):
            out.extend((task / "children").read_text().split())
    return out


class PssSampler(threading.Thread):
    """The largest proportional set size of this process and its children together."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.peak_kb = 0
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.wait(0.1):
            total = _pss_kb("self") + sum(_pss_kb(c) for c in _children())
            self.peak_kb = max(self.peak_kb, total)


def prepare(args: argparse.Namespace) -> None:
    from bf_assets.corpus.run import review_refs
    from bf_assets.dataset.assemble import assemble
    from bf_assets.ingest.discovery import discover
    from bf_assets.review.options import ReviewOptions

    found = discover(args.roots)
    reviews = review_refs(found.trials, ReviewOptions(tasks_dir=args.tasks, plan_path=args.plan))
    ds = assemble(reviews, plan_path=args.plan, quarantine_path=args.quarantine)
    Path(args.ds).write_bytes(pickle.dumps(ds, protocol=pickle.HIGHEST_PROTOCOL))
    print(f"{len(ds.trials)} trials -> {args.ds}")


def child(args: argparse.Namespace) -> None:
    ds = pickle.loads(Path(args.ds).read_bytes())
    from bf_assets.pages.site import write_pages

    rss0 = _status("VmRSS")
    pss0 = _pss_kb("self")
    me = resource.getrusage(resource.RUSAGE_SELF)
    cpu0 = me.ru_utime + me.ru_stime
    sampler = PssSampler()
    sampler.start()
    t0 = time.perf_counter()
    res = write_pages(ds, args.out, clean=not args.raw)
    wall = time.perf_counter() - t0
    sampler.done.set()
    sampler.join()
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = {
        "pages": len(res.pages),
        "cpu_before_write_pages_s": round(cpu0, 3),
        "reused": res.reused,
        "bytes": res.bytes,
        "write_pages_wall_s": round(wall, 3),
        "rss_before_mb": round(rss0 / 1024, 1),
        "rss_peak_mb": round(_status("VmHWM") / 1024, 1),
        "workers_peak_mb": round(kids.ru_maxrss / 1024, 1),
        "pss_before_mb": round(pss0 / 1024, 1),
        "tree_pss_peak_mb": round(sampler.peak_kb / 1024, 1),
    }
    print(json.dumps(out))


def run(args: argparse.Namespace) -> None:
    cmd = [sys.executable, __file__, "_child", "--ds", args.ds, "--out", args.out]
    if args.raw:
        cmd.append("--raw")
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE)
    assert proc.stdout is not None
    text = proc.stdout.read()
    _, status, ru = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    if status != 0:
        sys.exit(f"child failed: {status}")
    rep = json.loads(text)
    rep.update(
        process_wall_s=round(wall, 3),
        cpu_s=round(ru.ru_utime + ru.ru_stime, 3),
        user_s=round(ru.ru_utime, 3),
        sys_s=round(ru.ru_stime, 3),
    )
    print(json.dumps(rep))
    if args.hashes:
        out = Path(args.out)
        hashes = {
            str(p.relative_to(out)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(out.rglob("*.html"))
        }
        Path(args.hashes).write_text(json.dumps(hashes, indent=0, sort_keys=True))


def main() -> None:
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("prepare")
    p.add_argument("roots", nargs="+")
    p.add_argument("--ds", required=True)
    p.add_argument("--tasks")
    p.add_argument("--plan")
    p.add_argument("--quarantine")
    for name in ("run", "_child"):
        r = sub.add_parser(name)
        r.add_argument("--ds", required=True)
        r.add_argument("--out", required=True)
        r.add_argument("--raw", action="store_true")
        r.add_argument("--hashes")
    args = ap.parse_args()
    {"prepare": prepare, "run": run, "_child": child}[args.cmd](args)


if __name__ == "__main__":
    main()
