"""``bf-assets``: review run roots without a Dagster instance, or run the release build.

Exit codes of ``review``: 0 when every trial is healthy and publishable, 1 when some are
not, 2 on bad usage or an internal error (a crash is never exit 1).

Bad input and a machine that cannot do the work are one line on stderr and exit 2, never a
traceback: a plan or quarantine file over its limits or not valid (checked before anything
is reviewed), a run root that cannot be listed, and a place that cannot be written (a full
disk, a read-only folder: :func:`environment_error`).
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import errno
import itertools
import os
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, NoReturn, TextIO

import orjson

if TYPE_CHECKING:  # the review code is imported only when a review actually runs
    from bf_assets.corpus.run import ReviewReport
    from bf_assets.ingest.discovery import TrialRef

EXIT_OK, EXIT_UNHEALTHY, EXIT_ERROR = 0, 1, 2


class _UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # argparse exits 2 on its own; keep one path
        self.print_usage(sys.stderr)
        raise _UsageError(message)


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="bf-assets",
        description="Review Benchflow / SkillsBench trials and build the training dataset.",
    )
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser(
        "review", help="review run roots trial by trial (no Dagster instance needed)"
    )
    r.add_argument(
        "paths", nargs="+", metavar="PATH", help="run roots (jobs directories) to review"
    )
    r.add_argument("--json", action="store_true", help='print {"trials": [...], "summary": {...}}')
    r.add_argument(
        "--tasks", metavar="DIR", help="task tree (<tasks>/<task>/environment/skills/*/SKILL.md)"
    )
    r.add_argument("--plan", metavar="FILE", help="experiment plan (plan.yaml)")
    r.add_argument("--quarantine", metavar="FILE", help="quarantine registry (quarantine.yaml)")
    r.add_argument(
        "--workers", type=int, metavar="N", help="worker processes (default: every core)"
    )
    r.add_argument(
        "--cache-dir",
        metavar="DIR",
        help="reuse the reviews of unchanged trials (keyed by trial fingerprints; never stale)",
    )
    rel = sub.add_parser(
        "release", help="run the release build through Dagster (project-local instance)"
    )
    rel.add_argument(
        "--runs", nargs="+", metavar="DIR", default=[], help="run roots (default data/runs/jobs)"
    )
    rel.add_argument("--tasks", metavar="DIR", help="task tree")
    rel.add_argument("--plan", metavar="FILE", help="experiment plan (plan.yaml)")
    rel.add_argument("--quarantine", metavar="FILE", help="quarantine registry (quarantine.yaml)")
    rel.add_argument(
        "--out", metavar="DIR", help="where the dataset and report go (default data/published)"
    )
    rel.add_argument(
        "--hub-repo", metavar="ID", help="Hub dataset repo to publish to (token from HF_TOKEN)"
    )
    rel.add_argument(
        "--reread",
        action="store_true",
        help="read every job directory again (by default a job directory whose files and "
        "tables are as the last release left them is not read again)",
    )
    _person_parsers(sub)
    from bf_assets.cli import ui

    ui.add_parsers(sub)
    return p


def _person_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``show`` and ``quarantine hold|release`` (``bf_assets.cli.trial_commands``)."""
    sh = sub.add_parser("show", help="write a trial's review page (HTML) and print its path")
    sh.add_argument("trial", metavar="TRIAL", help="trial path under a run root (or its directory)")
    _corpus_flags(sh)
    sh.add_argument("--quarantine", metavar="FILE", help="quarantine registry (quarantine.yaml)")
    sh.add_argument("--out", metavar="DIR", help="pages folder (default <warehouse>/report/pages)")
    sh.add_argument("--raw", action="store_true", help="do not clean trial values (local use only)")
    sh.add_argument("--open", action="store_true", help="open the page in a browser")
    q = sub.add_parser(
        "quarantine", help="hold or release a trial: append a checked entry to quarantine.yaml"
    )
    qs = q.add_subparsers(dest="decision", required=True)
    for name, text in (
        ("hold", "hold the trial out of the export until someone releases it"),
        ("release", "release a held trial (never one with a blocker finding)"),
    ):
        d = qs.add_parser(name, help=text)
        d.add_argument("trial", metavar="TRIAL", help="trial path under a run root")
        d.add_argument("--reason", required=True, help="why (written into the entry)")
        d.add_argument("--by", required=True, help="who decides (written into the entry)")
        d.add_argument(
            "--file",
            metavar="FILE",
            help="quarantine file (default $BF_QUARANTINE, else ./quarantine.yaml)",
        )
        _corpus_flags(d)


def _corpus_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--runs",
        nargs="+",
        metavar="DIR",
        default=[],
        help="run roots (default $BF_RUN_ROOTS, else data/runs/jobs)",
    )
    p.add_argument("--tasks", metavar="DIR", help="task tree (default $BF_TASKS_DIR)")
    p.add_argument("--plan", metavar="FILE", help="experiment plan (default $BF_PLAN)")
    p.add_argument("--workers", type=int, metavar="N", help="worker processes")
    p.add_argument("--cache-dir", metavar="DIR", help="reuse the reviews of unchanged trials")


class _Progress:
    """Trials done / found and the current job, on stderr, only on a terminal."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.enabled = stream.isatty()
        self.last = 0

    def __call__(self, done: int, total: int, ref: TrialRef) -> None:
        if not self.enabled or (done != total and done - self.last < max(1, total // 200)):
            return
        self.last = done
        self.stream.write(f"\r\x1b[Kreviewing {done}/{total} trials  job {ref.job_key}")
        if done == total:
            self.stream.write("\n")
        self.stream.flush()


def _table(report: ReviewReport, out: BinaryIO) -> None:
    """One row per trial, then the summary; the column widths are measured in a first pass
    over the trials (no row is kept)."""
    head = ("PATH", "OUTCOME", "VERDICT", "ATTRIBUTION", "FINDINGS")
    widths = [len(h) for h in head[:4]]
    for row in _rows(report):
        widths = [max(w, len(c)) for w, c in zip(widths, row, strict=False)]
    widths = [min(60, w) for w in widths]
    for r in itertools.chain([head], _rows(report)):
        cells = [r[i][-widths[i] :].ljust(widths[i]) for i in range(4)]
        _line(out, "  ".join(cells) + "  " + r[4])
    s = report.summary
    _line(out, "")
    _line(
        out, f"trials {s['trials']}  healthy {s['healthy']}  training-ready {s['training_ready']}"
    )
    _line(out, "outcomes  " + "  ".join(f"{k} {v}" for k, v in s["by_outcome"].items()))
    _line(out, "verdicts  " + "  ".join(f"{k} {v}" for k, v in s["by_verdict"].items()))
    for path, reason in report.skipped:
        _line(out, f"not a trial: {path} ({reason})")
    _line(out, f"release verdict: {s['release_verdict']}")
    for reason in s.get("release_reasons") or ():
        _line(out, f"why:             {reason}")


def _rows(report: ReviewReport) -> Iterator[tuple[str, str, str, str, str]]:
    for t in report.final_trials():
        blockers = sorted({f.check for f in t.findings if f.severity == "blocker"})
        others = sorted({f.check for f in t.findings if f.severity != "blocker"} - set(blockers))
        text = ", ".join(blockers) + (
            (" | " if blockers else "") + ", ".join(others) if others else ""
        )
        yield (t.ref.rel_path, t.outcome, t.verdict, t.attribution, text or "-")


def _line(out: BinaryIO, text: str) -> None:
    out.write(text.encode("utf-8", "surrogateescape") + b"\n")


def _write_json(report: ReviewReport, out: BinaryIO) -> None:
    """``{"trials": [...], "summary": {...}}`` written one trial at a time (no second copy of
    every trial in memory)."""
    out.write(b'{\n  "trials": [')
    for n, data in enumerate(report.trial_json()):
        out.write(b"\n    " if n == 0 else b",\n    ")
        out.write(data)
    out.write(b'\n  ],\n  "summary": ')
    out.write(orjson.dumps(report.summary))
    out.write(b"\n}\n")


def _check_run_root(p: str) -> None:
    """A run root must be a directory this process can list."""
    if not Path(p).is_dir():
        raise _UsageError(f"run root {p!r} is not a directory")
    try:
        os.scandir(p).close()
    except OSError as exc:
        raise _UsageError(f"run root {p!r} cannot be listed: {exc.strerror or exc}") from None


def _check_input_files(args: argparse.Namespace) -> None:
    """The plan and quarantine files, read and checked (limits included) before anything is
    reviewed: a bad file is a usage error now, not after the whole review."""
    for flag in ("plan", "quarantine"):
        v = getattr(args, flag)
        if v and not Path(v).is_file():
            raise _UsageError(f"--{flag} {v!r} is not a file")
    if not (args.plan or args.quarantine):
        return
    from bf_assets.dataset import PlanError, QuarantineError, load_plan, load_quarantine

    try:
        if args.plan:
            load_plan(args.plan)
        if args.quarantine:
            load_quarantine(args.quarantine)
    except (PlanError, QuarantineError) as exc:
        raise _UsageError(str(exc)) from None


def _utf8_path(p: str, what: str) -> None:
    """Trial names that are not UTF-8 are escaped in the output; a run root's own path is
    the operator's choice: it must be UTF-8."""
    try:
        os.path.abspath(p).encode("utf-8")
    except UnicodeEncodeError:
        raise _UsageError(f"{what} {p!r} is not a UTF-8 path") from None


NO_TASK_TREE = (
    "warning: no task tree (--tasks DIR): skills cannot be checked, so with-skill trials "
    "stay quarantined as unproven"
)


def _warn_no_task_tree() -> None:
    """One line on stderr, whatever the output format."""
    sys.stderr.write(f"bf-assets: {NO_TASK_TREE}\n")
    sys.stderr.flush()


def _review(args: argparse.Namespace) -> int:
    for p in args.paths:
        _check_run_root(p)
        _utf8_path(p, "run root")
    for flag in ("tasks",):
        v = getattr(args, flag)
        if v and not Path(v).is_dir():
            raise _UsageError(f"--{flag} {v!r} is not a directory")
    if args.workers is not None and args.workers < 1:
        raise _UsageError("--workers must be at least 1")
    _check_input_files(args)
    if args.cache_dir:
        _check_cache_dir(Path(args.cache_dir))
    from bf_assets.corpus.run import review_roots
    from bf_assets.review.options import ReviewOptions

    opts = ReviewOptions(
        tasks_dir=args.tasks,
        plan_path=args.plan,
        quarantine_path=args.quarantine,
        workers=args.workers,
        cache_dir=args.cache_dir,
    )
    from bf_assets.dataset import PlanError, QuarantineError

    try:
        report = review_roots(args.paths, opts, progress=_Progress(sys.stderr), slim=True)
    except (PlanError, QuarantineError) as exc:
        raise _UsageError(str(exc)) from exc
    try:
        code = _print_review(args, report)
    finally:
        report.close()
    if not args.tasks:  # after the work: an error is the only line it prints
        _warn_no_task_tree()
    return code


def _check_cache_dir(folder: Path) -> None:
    """A cache folder on a full disk is an error (one line, exit 2) before the review
    starts; one that cannot be written for another reason is left unused (a cache that
    cannot be written only costs time)."""
    import tempfile

    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=folder) as fh:
            fh.write(bytes(4096))
            fh.flush()
            os.fsync(fh.fileno())
    except OSError as exc:
        if exc.errno in (errno.ENOSPC, errno.EDQUOT):
            raise


def _print_review(args: argparse.Namespace, report: ReviewReport) -> int:
    code = EXIT_OK if report.all_publishable() else EXIT_UNHEALTHY
    if args.json:
        _write_json(report, sys.stdout.buffer)
    else:
        _table(report, sys.stdout.buffer)
    sys.stdout.flush()
    return code


EXIT_BLOCKED = 3


def _release(args: argparse.Namespace) -> int:
    """Exit 0 published, 3 blocked by the publish gate, 2 on any error."""
    for p in args.runs:
        _check_run_root(p)
    if not args.runs:
        from bf_assets.settings import default_run_root

        if not default_run_root().is_dir():
            raise _UsageError(
                f"no run roots: pass --runs DIR (the default {default_run_root()} does not exist)"
            )
    if args.tasks and not Path(args.tasks).is_dir():
        raise _UsageError(f"--tasks {args.tasks!r} is not a directory")
    _check_input_files(args)
    from bf_assets.cli.progress import Phases
    from bf_assets.cli.release import BLOCKED, PUBLISHED, UnwritablePlace, run_release
    from bf_assets.settings import default_tasks_root

    try:
        result = run_release(
            args.runs,
            args.out,
            args.hub_repo,
            tasks=args.tasks,
            plan=args.plan,
            quarantine=args.quarantine,
            reread=args.reread,
            progress=Phases(),
        )
    except UnwritablePlace as exc:
        raise _UsageError(str(exc)) from None
    if not args.tasks and (args.runs or not default_tasks_root().is_dir()):
        _warn_no_task_tree()  # after the work: an error is the only line it prints
    print(f"release verdict: {result.verdict}")
    if result.read_partitions or result.reused_partitions:
        print(
            f"job partitions:  {result.read_partitions} read, {result.reused_partitions} "
            "unchanged since the last release"
        )
    if result.exported is not None:
        held = ", ".join(f"{k} {v}" for k, v in sorted(result.excluded.items())) or "none"
        print(f"trials exported: {result.exported} (excluded: {held})")
    for reason in result.reasons:
        print(f"why:             {reason}")
    if result.status == PUBLISHED:
        print(f"dataset folder:  {result.out_dir}")
    elif result.hub_moved:  # the local folder kept its release, but the Hub did not stay put
        print(f"dataset folder:  {result.out_dir} (unchanged: still the previous release)")
    else:
        print(f"dataset folder:  {result.out_dir} (unchanged: nothing was published)")
    if result.hub_url:
        print(f"hub dataset:     {result.hub_url} (commit {result.hub_commit}, tag {result.tag})")
    elif result.hub_state:
        print(f"hub dataset:     {result.hub_state}")
    what = "review report:  " if result.status == PUBLISHED else "blocked attempt:"
    print(f"{what} {result.report_md}")
    print(f"report (JSON):   {result.report_json}")
    if result.status == PUBLISHED:
        return EXIT_OK
    if result.status == BLOCKED:
        checks = ", ".join(result.failed_checks) or "the publish step's own verification"
        sys.stderr.write(
            f"bf-assets: the publish gate blocked the release ({checks}); nothing was published\n"
        )
        return EXIT_BLOCKED
    sys.stderr.write(f"bf-assets: the release failed: {result.message or 'see the run log'}\n")
    return EXIT_ERROR


def _person(args: argparse.Namespace) -> int:
    from bf_assets.cli import trial_commands

    progress = _Progress(sys.stderr)
    try:
        if args.command == "show":
            return trial_commands.show(args, progress)
        return trial_commands.quarantine(args, progress)
    except trial_commands.DecideError as exc:
        raise _UsageError(str(exc)) from None


def _dagster_services(args: argparse.Namespace) -> int:
    from bf_assets.cli import ui

    try:
        return ui.ui(args)
    except ui.ServiceUsageError as exc:
        raise _UsageError(str(exc)) from None


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; its exit code.  Called without ``argv`` (the ``bf-assets`` command,
    ``python -m``), the process then ends at once (:func:`exit_now`)."""
    code = _command(argv)
    if argv is None:
        exit_now(code)
    return code


def exit_now(code: int) -> NoReturn:
    """End the process with ``code`` once its output is flushed and its exit handlers have run
    (every file, lock, database and worker of a command is closed by then), without the
    interpreter's teardown: freeing every object one by one took a second or more after a
    large release, for nothing anyone sees."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    atexit._run_exitfuncs()
    os._exit(code)


def _command(argv: Sequence[str] | None) -> int:
    try:
        args = build_parser().parse_args(argv)
        if args.command == "review":
            return _review(args)
        if args.command == "release":
            return _release(args)
        if args.command in ("show", "quarantine"):
            return _person(args)
        if args.command == "ui":
            return _dagster_services(args)
        raise _UsageError(f"unknown command {args.command!r}")
    except _UsageError as exc:
        sys.stderr.write(f"bf-assets: error: {exc}\n")
        return EXIT_ERROR
    except KeyboardInterrupt:
        sys.stderr.write("bf-assets: interrupted\n")
        return EXIT_ERROR
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_ERROR
    except Exception as exc:  # an internal error is exit 2, never 1
        from concurrent.futures import BrokenExecutor

        if isinstance(exc, BrokenExecutor):  # a worker process was lost (killed, out of memory)
            sys.stderr.write(f"bf-assets: stopped: {exc}\n")
            return EXIT_ERROR
        why = environment_error(exc)
        if why is not None:  # the machine, not the code: one line, no traceback
            sys.stderr.write(f"bf-assets: error: {why}\n")
            return EXIT_ERROR
        import traceback  # only here: its import is not on the review path

        sys.stderr.write("bf-assets: internal error\n")
        traceback.print_exc(file=sys.stderr)
        return EXIT_ERROR


# What a place that cannot be written (or read) looks like, by errno.
_PLACE_ERRNOS = frozenset(
    {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM, errno.EFBIG}
)
# The same, as SQLite (the Dagster instance's databases) words it.
_SQLITE_PLACE_ERRORS = (
    "database or disk is full",
    "attempt to write a readonly database",
    "unable to open database file",
    "disk i/o error",
)


def environment_error(exc: BaseException) -> str | None:
    """One line for an error that is about the machine, not the code: a full disk, a
    read-only or forbidden folder (an ``OSError`` of that kind anywhere in ``exc``'s chain
    of causes), or a Dagster database SQLite cannot write; None for anything else."""
    seen: set[int] = set()
    e: BaseException | None = exc
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        if isinstance(e, OSError) and e.errno in _PLACE_ERRNOS:
            where = f": {e.filename}" if e.filename else ""
            return f"{e.strerror or e}{where}"
        text = str(e).lower()
        for needle in _SQLITE_PLACE_ERRORS:
            if needle in text:
                home = os.environ.get("DAGSTER_HOME") or "the Dagster home"
                return f"the Dagster instance's database under {home} cannot be written: {needle}"
        e = e.__cause__ or e.__context__
    return None


if __name__ == "__main__":
    raise SystemExit(main())
