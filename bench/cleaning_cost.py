"""Time curation (``build_bundle``) and verification (``verify_bundle``) over a run root.

    .venv/bin/python bench/cleaning_cost.py [RUN_ROOT]   (default data/runs)

Best of three, with the process-wide string caches cleared before each run.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from pathlib import Path

import bf_assets.curate.scan as scan
import bf_assets.redact.clean as clean
from bf_assets.corpus.run import review_trial
from bf_assets.ingest.discovery import discover_trials
from bf_assets.publish.bundle import bundle_reviews
from bf_assets.publish.verify import verify_reviews


def main() -> None:
    root = Path(sys.argv[1] if len(sys.argv) > 1 else "data/runs")
    refs = discover_trials([root])
    reviews = [review_trial(r) for r in refs]
    best = {"curate": float("inf"), "verify": float("inf")}
    for _ in range(3):
        clean._clean_short.cache_clear()
        scan._short_hits.cache_clear()
        tmp = Path(tempfile.mkdtemp())
        t0 = time.perf_counter()
        b = bundle_reviews(reviews, tmp / "s")
        t1 = time.perf_counter()
        rep = verify_reviews(b.path, reviews)
        t2 = time.perf_counter()
        best["curate"] = min(best["curate"], t1 - t0)
        best["verify"] = min(best["verify"], t2 - t1)
        shutil.rmtree(tmp)
    print(f"trials={len(refs)} rows={b.rows} excluded={len(b.excluded)} {rep.summary()}")
    print(f"curate {best['curate']:.2f}s verify {best['verify']:.2f}s (best of 3)")
    print("cleaning", b.stats.to_dict())


if __name__ == "__main__":
    main()
