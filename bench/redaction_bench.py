"""The redactor measured on both sides: secrets caught, and what it redacts on real data.

    .venv/bin/python bench/redaction_bench.py [--fixtures DIR] [--seed N] [--rounds N]
        [--show N] [--time]

(a) Secrets of vendors no rule in ``bf_assets/redact`` names, generated (seeded) in every
    syntax a trajectory holds them (``bf_assets_tests/unlisted_corpus.py``): how many are
    redacted whole, how many leak whole or in part (any 8-character piece of the random part
    surviving is a leak), with and without the structural rules; look-alikes that must
    survive.
(b) Every text file under the fixtures directory (real public trials; default
    ``/work/shared/fixtures``), which holds no planted secret: each span the redactor
    replaces, with its kind and a masked context (the span's first 4 characters, then ``*``),
    so a reader can judge whether it is wrong.  Spans the structural rules add are marked.
``--time``: the cost of ``redact_text`` over the fixture strings and over the generated corpus,
with and without the structural rules (best of 3).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bf_assets_tests"))

from unlisted_corpus import corpus, look_alikes  # noqa: E402

from bf_assets.redact import default_rules  # noqa: E402
from bf_assets.redact.engine import PLACEHOLDER, RuleSet  # noqa: E402
from bf_assets.redact.structural import STRUCTURAL_RULES  # noqa: E402

TEXT_SUFFIXES = {".json", ".jsonl", ".txt", ".log", ".md", ".yaml", ".yml", ".toml", ".py", ""}


def rule_sets() -> tuple[RuleSet, RuleSet]:
    """The rule set in force and the same without the structural rules."""
    full = default_rules()
    ours = {id(r) for r in STRUCTURAL_RULES}
    without = RuleSet([r for r in full.rules if id(r) not in ours], full.global_allow)
    return full, without


def caught(rules: RuleSet, seed: int, rounds: int) -> tuple[Counter[str], list[tuple[str, str]]]:
    counts: Counter[str] = Counter()
    leaks: list[tuple[str, str]] = []
    for p in corpus(seed, rounds):
        out = rules.redact(p.text)
        leak = p.leak(out)
        counts[leak or "caught"] += 1
        if leak:
            leaks.append((p.name, leak))
    return counts, leaks


def strings_of(value: object) -> list[str]:
    """Every string in a parsed JSON value, as the cleaner sees them (keys included)."""
    out: list[str] = []
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, str):
            out.append(v)
        elif isinstance(v, dict):
            out.extend(k for k in v if isinstance(k, str))
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)
    return out


def fixture_strings(root: Path) -> list[tuple[str, str]]:
    """``(file, string)`` for every string of every text file (JSON parsed, JSONL by line)."""
    out: list[tuple[str, str]] = []
    for path in sorted(root.rglob("*")):
        if not path.is_file() or path.suffix not in TEXT_SUFFIXES:
            continue
        rel = str(path.relative_to(root))
        text = path.read_text(encoding="utf-8", errors="replace")
        docs: list[object] = []
        try:
            if path.suffix == ".jsonl":
                docs = [json.loads(line) for line in text.splitlines() if line.strip()]
            elif path.suffix == ".json":
                docs = [json.loads(text)]
        except ValueError:
            docs = []
        if docs:
            for d in docs:
                out.extend((rel, s) for s in strings_of(d))
        else:
            out.append((rel, text))
    return out


def masked(text: str, s: int, e: int, width: int = 40) -> str:
    secret = text[s:e]
    shown = secret[:4] + "*" * min(12, max(0, len(secret) - 4))
    ctx = text[max(0, s - width) : s] + "«" + shown + "»" + text[e : e + width]
    return ctx.replace("\n", "⏎")


def redactions(rules: RuleSet, strings: list[tuple[str, str]]) -> list[tuple[str, str, str]]:
    out = []
    for rel, text in strings:
        for s, e, _, kind in rules.spans(text):
            out.append((rel, kind, masked(text, s, e)))
    return out


def best_of(fn: object, n: int = 3) -> float:
    best = float("inf")
    for _ in range(n):
        t = time.process_time()
        fn()  # type: ignore[operator]
        best = min(best, time.process_time() - t)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--fixtures", type=Path, default=Path("/work/shared/fixtures"))
    ap.add_argument("--seed", type=int, default=36)
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--show", type=int, default=200, help="redactions listed for (b)")
    ap.add_argument("--time", action="store_true")
    ap.add_argument(
        "--extra",
        type=Path,
        action="append",
        default=[],
        help="more text without secrets (source trees, docs): structural spans listed",
    )
    ap.add_argument("--extra-chars", type=int, default=20_000_000)
    args = ap.parse_args()
    full, without = rule_sets()

    print(f"(a) secrets of unlisted vendors and shapes (generated, seed {args.seed})")
    for label, rules in (("with structural rules", full), ("without", without)):
        counts, leaks = caught(rules, args.seed, args.rounds)
        total = sum(counts.values())
        print(
            f"  {label:22s} caught {counts['caught']}/{total} "
            f"({100 * counts['caught'] / total:.1f} %), leaked whole {counts['whole']}, "
            f"in part {counts['partial']}"
        )
        if label.startswith("with"):
            for name, n in Counter(f"{n} ({k})" for n, k in leaks).most_common(20):
                print(f"    leak: {name} x{n}")
    alikes = look_alikes()
    changed = [t for t in alikes if full.redact(t) != t]
    print(f"  look-alikes kept byte for byte: {len(alikes) - len(changed)}/{len(alikes)}")
    for t in changed:
        print(f"    changed: {full.redact(t)[:120]!r}")

    if args.fixtures.is_dir():
        strings = fixture_strings(args.fixtures)
        n_chars = sum(len(s) for _, s in strings)
        print(
            f"\n(b) real trials without planted secrets: {len(strings)} strings, "
            f"{n_chars:,} characters under {args.fixtures}"
        )
        got = redactions(full, strings)
        base = {(r, m) for r, _, m in redactions(without, strings)}
        kinds = Counter(k for _, k, _ in got)
        new = [g for g in got if (g[0], g[2]) not in base]
        print(
            f"  spans redacted: {len(got)} ({dict(kinds)}); added by the structural rules: {len(new)}"
        )
        for rel, kind, ctx in got[: args.show]:
            mark = "+" if (rel, kind, ctx) in new else " "
            print(f"  {mark} {kind:24s} {rel[-60:]}: {ctx}")
        if args.time:
            texts = [s for _, s in strings]
            for label, rules in (("with structural rules", full), ("without", without)):
                t = best_of(lambda r=rules: [r.redact(x) for x in texts])
                print(f"  time {label:22s} {t * 1000:8.1f} ms ({n_chars / t / 1e6:.1f} M chars/s)")
    else:
        print(f"\n(b) skipped: {args.fixtures} is absent")

    for extra in args.extra:
        strings, n_chars = [], 0
        for path in sorted(extra.rglob("*")):
            if n_chars > args.extra_chars:
                break
            if path.is_file() and path.suffix in {
                ".py",
                ".md",
                ".rst",
                ".txt",
                ".json",
                ".toml",
                ".cfg",
                ".yaml",
                ".yml",
            }:
                text = path.read_text(encoding="utf-8", errors="replace")
                strings.append((str(path.relative_to(extra)), text))
                n_chars += len(text)
        got = [g for g in redactions(full, strings)]
        base = {(r, m) for r, _, m in redactions(without, strings)}
        new = [g for g in got if (g[0], g[2]) not in base]
        print(
            f"\n(b+) {extra}: {len(strings)} files, {n_chars:,} characters; structural spans: {len(new)}"
        )
        for rel, kind, ctx in new[: args.show]:
            print(f"  + {kind:24s} {rel[-60:]}: {ctx}")

    if args.time:
        texts = [p.text for p in corpus(args.seed, args.rounds)] + alikes
        big = "\n".join(texts) * 20
        print(f"\n  generated corpus: {len(texts)} strings; one text of {len(big):,} characters")
        for label, rules in (("with structural rules", full), ("without", without)):
            t1 = best_of(lambda r=rules: [r.redact(x) for x in texts])
            t2 = best_of(lambda r=rules: r.redact(big))
            print(
                f"  time {label:22s} per string {t1 * 1000:7.1f} ms, "
                f"one text {t2 * 1000:7.1f} ms ({len(big) / t2 / 1e6:.1f} M chars/s)"
            )
    _ = PLACEHOLDER


if __name__ == "__main__":
    main()
