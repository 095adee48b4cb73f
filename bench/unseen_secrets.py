"""Default-deny, measured: fake credentials of made-up vendors through a release bundle.

Plants the seeded corpus of ``bf_assets_tests/unseen_corpus.py`` (vendors invented at run
time, in every context and encoding) into publishable trials, builds the release bundle as
a release does, and prints, per encoding and in all, how many credentials reached a
published byte whole or in part (an 8-character inner piece, searched raw and through every
decoding), and how many look-alikes were changed.

    .venv/bin/python bench/unseen_secrets.py [--seed N] [--per-context N]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections import Counter
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1] / "bf_assets_tests"
sys.path.insert(0, str(TESTS))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=101)
    ap.add_argument("--per-context", type=int, default=3)
    args = ap.parse_args()

    from test_default_deny_unseen import decoded_views, leaked
    from test_leakproof_bundle import planted_trial, published_values
    from trialkit import healthy_spec
    from unseen_corpus import ENCODINGS, NARROW, unseen_corpus, unseen_look_alikes

    from bf_assets.publish.bundle import bundle_reviews

    encodings = {**ENCODINGS, **NARROW}
    corpus = unseen_corpus(args.seed, args.per_context, encodings)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp, "runs")
        root.mkdir()
        locs = ("tool-output", "tool-argument", "completion")
        trials = [
            planted_trial(root, loc, "\n".join(p.text for p in corpus[i :: len(locs)]))
            for i, loc in enumerate(locs)
        ]
        alike = healthy_spec(task="unseen-look-alikes", rollout_id="cccc3333")
        alike.llm[1]["request"]["body"]["messages"][-1]["content"] = "\n".join(unseen_look_alikes())
        trials.append(alike.rebuild_steps().sync().write(root))
        bundle = bundle_reviews([t.review() for t in trials], Path(tmp, "staging"))
        text = published_values(bundle.path)
    views = decoded_views(text)
    total: Counter[str] = Counter()
    leaks: Counter[str] = Counter()
    for p in corpus:
        enc = next(e for e in encodings if f" {e} " in f" {p.name} ")
        total[enc] += 1
        if leaked(p, views):
            leaks[enc] += 1
    print(f"{'encoding':<14} {'planted':>7} {'leaked':>7} {'caught':>7}")
    for enc in encodings:
        print(f"{enc:<14} {total[enc]:>7} {leaks[enc]:>7} {total[enc] - leaks[enc]:>7}")
    n, k = sum(total.values()), sum(leaks.values())
    print(f"{'all':<14} {n:>7} {k:>7} {n - k:>7}  ({100 * (n - k) / n:.1f} % caught)")
    changed = [s for s in unseen_look_alikes() if s not in text]
    print(f"look-alikes changed: {len(changed)} of {len(unseen_look_alikes())}")
    for s in changed:
        print("  changed:", s[:80])
    print(f"excluded trials: {len(bundle.excluded)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
