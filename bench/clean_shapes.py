"""Cleaning before and after a change, on the strings of real or generated trials.

    .venv/bin/python bench/clean_shapes.py [--before REV] ROOT...

``--before`` (default ``main``) names the git revision whose ``bf_assets/redact/clean.py``
is the baseline (loaded from git next to this checkout's).  Every string of every JSON and
JSONL file under the roots (keys included; a line that does not parse is a string) is
cleaned by both: the script prints what each replaced (host paths per placeholder, inline
reasoning per kind), every distinct change between the two, and the CPU time of each on the
distinct strings (best of three), with the host-path and inline-reasoning parts apart.
"""

from __future__ import annotations

import argparse
import difflib
import subprocess
import sys
import time
import types
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

import bf_assets.redact.clean as after
from bf_assets.redact.inline_reasoning import reasoning_spans

REPO = Path(__file__).resolve().parent.parent


def baseline(rev: str) -> types.ModuleType:
    src = subprocess.run(
        ["git", "-C", str(REPO), "show", f"{rev}:bf_assets/redact/clean.py"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    module = types.ModuleType("clean_before")
    sys.modules[module.__name__] = module
    exec(compile(src, f"{rev}:clean.py", "exec"), module.__dict__)
    return module


def strings_under(roots: list[Path]) -> list[str]:
    out: list[str] = []

    def walk(v: Any) -> None:
        if isinstance(v, str):
            out.append(v)
        elif isinstance(v, dict):
            for k, x in v.items():
                out.append(k)
                walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)

    for root in roots:
        for p in sorted(root.rglob("*")):
            if not p.is_file() or p.suffix not in (".json", ".jsonl", ".txt", ".md", ".log"):
                continue
            text = p.read_text(errors="replace")
            try:
                walk(orjson.loads(text))
                continue
            except orjson.JSONDecodeError:
                pass
            for line in text.splitlines():
                try:
                    walk(orjson.loads(line))
                except orjson.JSONDecodeError:
                    out.append(line)
    return list(dict.fromkeys(out))


def cpu_ms(fn: Callable[[str], object], strings: list[str]) -> float:
    best = float("inf")
    for _ in range(3):
        t = time.process_time()
        for s in strings:
            fn(s)
        best = min(best, time.process_time() - t)
    return best * 1000


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("roots", nargs="+", type=Path)
    ap.add_argument("--before", default="main")
    args = ap.parse_args()
    before = baseline(args.before)
    strings = strings_under(args.roots)
    print(f"{len(strings)} distinct strings, {sum(map(len, strings)) / 1e6:.2f} M chars")
    totals = {"before": before.CleanStats(), "after": after.CleanStats()}
    changes: Counter[tuple[str, str]] = Counter()
    for s in strings:
        a, sa = before._clean_string(s)
        b, sb = after._clean_string(s)
        totals["before"].add(sa)
        totals["after"].add(sb)
        if a != b:
            ops = difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes()
            for op, i1, i2, j1, j2 in ops:
                if op != "equal":
                    changes[(a[max(0, i1 - 30) : i2 + 10], b[max(0, j1 - 30) : j2 + 10])] += 1
    for name, st in totals.items():
        print(f"{name}: host paths {dict(st.host_paths)}, reasoning {dict(st.reasoning)}")
    print(f"{sum(changes.values())} changes, {len(changes)} distinct")
    for (a, b), n in changes.most_common():
        print(f"  {n} x {a!r} -> {b!r}")
    for label, fn in (
        (f"clean {args.before}", before._clean_string),
        ("clean", after._clean_string),
        (f"host paths {args.before}", before.strip_host_paths),
        ("host paths", after.strip_host_paths),
        ("inline reasoning", reasoning_spans),
    ):
        print(f"{label:24s} {cpu_ms(fn, strings):8.1f} ms CPU")


if __name__ == "__main__":
    main()
