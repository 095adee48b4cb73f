"""``python -m bf_sample OUT [--seed N]``: regenerate the sample jobs root."""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

from bf_sample.generator import generate_jobs_root


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bf_sample", description=__doc__)
    parser.add_argument("out", type=Path, help="jobs root to (re)write, e.g. data/runs")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    out: Path = args.out
    for name in ("jobs", "tasks", "sample-manifest.json"):  # only what the generator owns
        target = out / name
        if target.is_dir():
            shutil.rmtree(target)
        elif target.exists():
            target.unlink()
    plans = generate_jobs_root(out, seed=args.seed)
    print(f"wrote {len(plans)} trials to {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
