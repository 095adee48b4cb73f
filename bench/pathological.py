#!/usr/bin/env python3
"""Time ``bf-assets review`` on pathological trials: blank lines, huge one-line rows, huge
documents.  Each case is one run root holding a healthy trial and one trial with the
pathological file; the review must finish in time linear in the file size and flag the bad
trial (the healthy one stays publishable).

Every review runs as a child process started by a small launcher (as in ``run_bench.py``: a
child inherits its parent's peak RSS at exec time), with its wall time taken around the child
and its peak RSS from ``os.wait4``.  Inputs are written as streams into a temporary directory
(``--work``), one case at a time, and removed after it.

    .venv/bin/python bench/pathological.py                 # every default case, full size
    .venv/bin/python bench/pathological.py --scale 0.1     # a tenth of every size
    .venv/bin/python bench/pathological.py --case blank_llm row_small_steps
    .venv/bin/python bench/pathological.py --code /tmp/old # time another checkout's code

No timing figure from here belongs in a test.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT / "bf_assets_tests"))

MiB = 1024 * 1024
MB = 1_000_000
CHUNK = 4 * MiB

LAUNCHER_SOURCE = """
import json, os, subprocess, sys, time
spec = json.loads(sys.argv[1])
with open(spec["stdout"], "wb") as out, open(spec["stderr"], "wb") as err:
    start = time.perf_counter()
    proc = subprocess.Popen(spec["argv"], stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                            env=spec["env"], cwd=spec["cwd"])
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
print(json.dumps({"wall_s": wall, "exit": os.waitstatus_to_exitcode(status),
                  "maxrss_kib": usage.ru_maxrss}))
"""


# --------------------------------------------------------------------------- inputs


def _repeat(fh: IO[bytes], unit: bytes, total: int) -> None:
    """Write ``unit`` repeated to ``total`` bytes (whole units), in big chunks."""
    per = max(1, CHUNK // len(unit))
    block = unit * per
    left = total // len(unit)
    while left >= per:
        fh.write(block)
        left -= per
    fh.write(unit * left)


def _good_and_bad(root: Path) -> tuple[Any, Any]:
    from trialkit import healthy_spec

    good = healthy_spec(rollout_id="good0001").write(root)
    bad = healthy_spec(rollout_id="bad00001").write(root)
    return good, bad


def _append(path: Path, unit: bytes, size: int) -> None:
    with path.open("ab") as fh:
        _repeat(fh, unit, size)


SMALL_STEP = json.dumps(
    {
        "prompt": [{"role": "user", "content": "hi"}],
        "completion": [{"role": "assistant", "content": "ok"}],
        "reward": 0,
    }
).encode()


def _row_with(path: Path, write_middle: Callable[[IO[bytes]], None], where: str) -> None:
    """Rewrite the trial's one-line row with ``write_middle`` writing into it: ``steps``
    (the trajectory's items), ``head`` (a top-level key before the trajectory) or ``tail``."""
    row = json.loads(path.read_text())
    steps = row.pop("trajectory")
    head = json.dumps(row)[:-1].encode()  # without the closing brace
    with path.open("wb") as fh:
        fh.write(head)
        if where == "head":
            fh.write(b', "pad": ')
            write_middle(fh)
        fh.write(b', "trajectory": [')
        fh.write(b", ".join(json.dumps(s).encode() for s in steps))
        if where == "steps":
            fh.write(b", ")
            write_middle(fh)
        fh.write(b"]")
        if where == "tail":
            fh.write(b', "pad": ')
            write_middle(fh)
        fh.write(b"}\n")


def case_blank_llm(root: Path, size: int) -> None:
    """Blank lines appended to the LLM trajectory."""
    _, bad = _good_and_bad(root)
    _append(bad.file("trajectory/llm_trajectory.jsonl"), b"\n", size)


def case_spaces_acp(root: Path, size: int) -> None:
    """Lines of spaces and tabs (whitespace only) appended to the ACP trajectory."""
    _, bad = _good_and_bad(root)
    _append(bad.file("trajectory/acp_trajectory.jsonl"), b"\n" + b" \t" * 30 + b"\r", size)


def case_blank_rows(root: Path, size: int) -> None:
    """Blank lines after the row of ``results.jsonl``."""
    _, bad = _good_and_bad(root)
    _append(bad.file("results.jsonl"), b"\n", size)


def case_long_line_llm(root: Path, size: int) -> None:
    """One LLM trajectory line far over the line cap (a huge request body)."""
    _, bad = _good_and_bad(root)
    with bad.file("trajectory/llm_trajectory.jsonl").open("ab") as fh:
        fh.write(b'\n{"request": {"body": {"messages": [{"role": "user", "content": "')
        _repeat(fh, b"abcdefgh", size)
        fh.write(b'"}]}}, "response": {}}')


def case_row_small_steps(root: Path, size: int) -> None:
    """A one-line row whose trajectory holds a huge number of small steps."""
    _, bad = _good_and_bad(root)

    def middle(fh: IO[bytes]) -> None:
        _repeat(fh, SMALL_STEP + b", ", size)
        fh.write(SMALL_STEP)

    _row_with(bad.file("results.jsonl"), middle, "steps")


def case_row_mid_steps(root: Path, size: int) -> None:
    """A one-line row of steps of about 2 KB (fewer than the step cap), each step's prompt
    its own (nothing shared with the previous step)."""
    _, bad = _good_and_bad(root)
    step = json.dumps(
        {
            "prompt": [{"role": "user", "content": "q" * 1000}, {"role": "tool", "content": "1"}],
            "completion": [{"role": "assistant", "content": "a" * 900}],
            "reward": 0,
        }
    ).encode()

    def middle(fh: IO[bytes]) -> None:
        _repeat(fh, step + b", ", size)
        fh.write(step)

    _row_with(bad.file("results.jsonl"), middle, "steps")


def case_row_big_string(root: Path, size: int) -> None:
    """A one-line row with one step holding a huge string."""
    _, bad = _good_and_bad(root)

    def middle(fh: IO[bytes]) -> None:
        fh.write(b'{"prompt": [{"role": "user", "content": "')
        _repeat(fh, b"abcdefgh", size)
        fh.write(b'"}], "completion": []}')

    _row_with(bad.file("results.jsonl"), middle, "steps")


def case_row_big_array(root: Path, size: int) -> None:
    """A one-line row with a huge top-level array of small values after its trajectory."""
    _, bad = _good_and_bad(root)

    def middle(fh: IO[bytes]) -> None:
        fh.write(b"[")
        _repeat(fh, b'1, "a", ', size)
        fh.write(b"0]")

    _row_with(bad.file("results.jsonl"), middle, "tail")


def case_row_spaces(root: Path, size: int) -> None:
    """A one-line row with a huge run of whitespace inside its trajectory."""
    _, bad = _good_and_bad(root)

    def middle(fh: IO[bytes]) -> None:
        _repeat(fh, b" ", size)
        fh.write(SMALL_STEP)

    _row_with(bad.file("results.jsonl"), middle, "steps")


def case_row_deep_steps(root: Path, size: int) -> None:
    """A one-line row of small steps, each nested 300 levels deep."""
    _, bad = _good_and_bad(root)
    deep = b'{"prompt": [], "x": ' + b"[" * 300 + b"]" * 300 + b"}"

    def middle(fh: IO[bytes]) -> None:
        _repeat(fh, deep + b", ", size)
        fh.write(deep)

    _row_with(bad.file("results.jsonl"), middle, "steps")


def case_big_document(root: Path, size: int) -> None:
    """A ``result.json`` just under the document cap, most of it one array of small values."""
    _, bad = _good_and_bad(root)
    doc = json.loads(bad.file("result.json").read_text())
    text = json.dumps(doc)[:-1].encode()
    with bad.file("result.json").open("wb") as fh:
        fh.write(text + b', "pad": [')
        _repeat(fh, b'1, "a", ', size)
        fh.write(b"0]}")


@dataclass(frozen=True)
class Case:
    name: str
    build: Callable[[Path, int], None]
    size: int  # bytes of pathological content at scale 1
    default: bool = True


CASES = [
    Case("blank_llm", case_blank_llm, 200 * MiB),
    Case("spaces_acp", case_spaces_acp, 200 * MiB),
    Case("blank_rows", case_blank_rows, 200 * MiB),
    Case("long_line_llm", case_long_line_llm, 150 * MB),
    Case("row_small_steps", case_row_small_steps, 150 * MB),
    Case("row_mid_steps", case_row_mid_steps, 150 * MB),
    Case("row_big_string", case_row_big_string, 150 * MB),
    Case("row_big_array", case_row_big_array, 150 * MB),
    Case("row_spaces", case_row_spaces, 150 * MB),
    Case("row_deep_steps", case_row_deep_steps, 150 * MB),
    Case("big_document", case_big_document, 60 * MiB),
    Case("row_500mb", case_row_small_steps, 500 * MB, default=False),
]


# --------------------------------------------------------------------------- timing


def _tree_bytes(root: Path) -> int:
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file())


def run_review(root: Path, code: Path | None, timeout: float, scratch: Path) -> dict[str, Any]:
    env = dict(os.environ)
    if code is not None:
        env["PYTHONPATH"] = str(code)
    argv = [sys.executable, "-m", "bf_assets.cli", "review", str(root), "--json"]
    spec = {
        "argv": argv,
        "env": env,
        "cwd": str(code or REPO_ROOT),  # ``-m`` imports from the working directory first
        "stdout": str(scratch / "out.json"),
        "stderr": str(scratch / "err.txt"),
    }
    launcher = subprocess.Popen(
        [sys.executable, "-I", "-S", "-c", LAUNCHER_SOURCE, json.dumps(spec)],
        stdout=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        out, _ = launcher.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(launcher.pid, signal.SIGKILL)
        launcher.communicate()
        return {"wall_s": timeout, "exit": None, "maxrss_kib": None, "timed_out": True}
    result = json.loads(out)
    result["verdicts"] = _verdicts(scratch / "out.json")
    result["stderr"] = (scratch / "err.txt").read_text(errors="replace")[-400:]
    return result


def _verdicts(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return {}
    return {
        t["rollout"].rsplit("__", 1)[-1]: [
            t["verdict"],
            sorted({f["check"] for f in t["findings"] if f["severity"] == "blocker"}),
        ]
        for t in data["trials"]
    }


def _cases(names: list[str] | None) -> Iterator[Case]:
    for c in CASES:
        if (names and c.name in names) or (not names and c.default):
            yield c


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--case", nargs="+", choices=[c.name for c in CASES], help="cases to run")
    p.add_argument("--scale", type=float, default=1.0, help="multiply every input size")
    p.add_argument("--timeout", type=float, default=1800.0, help="seconds per review")
    p.add_argument("--work", type=Path, default=None, help="where inputs are written")
    p.add_argument("--code", type=Path, default=None, help="review with bf_assets from here")
    p.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = p.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="bf-pathological-", dir=args.work))
    rows = []
    try:
        print(
            f"{'case':16s} {'input MB':>9s} {'wall s':>8s} {'MB/s':>7s} {'peak RSS MB':>11s}  verdicts"
        )
        for case in _cases(args.case):
            root = work / case.name / "runs"
            size = int(case.size * args.scale)
            case.build(root, size)
            total = _tree_bytes(root)
            res = run_review(root, args.code, args.timeout, work)
            shutil.rmtree(work / case.name)
            rss = res["maxrss_kib"] / 1024 if res.get("maxrss_kib") else float("nan")
            wall = res["wall_s"]
            mark = " (timed out)" if res.get("timed_out") else ""
            print(
                f"{case.name:16s} {total / MB:9.1f} {wall:8.2f} {total / MB / wall:7.1f} "
                f"{rss:11.1f}  {res.get('verdicts', '')}{mark}",
                flush=True,
            )
            if res.get("exit") not in (0, 1, None):
                print(f"  exit {res['exit']}: {res.get('stderr', '')}", flush=True)
            rows.append({"case": case.name, "input_bytes": total, **res})
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if args.json is not None:
        args.json.write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
