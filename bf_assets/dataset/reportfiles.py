"""The review report files (``report/review.md`` and ``report/review.json``) of a dataset
review.

One function writes them for every caller: the release bundle (cleaned like the export rows,
so the report that ships with a release leaks nothing) and the warehouse copy the Dagster UI
links to.  The report itself is rendered by :func:`bf_assets.dataset.assemble.report_pieces`
in the order ``checks.md`` §3 prescribes, and written (and cleaned) a piece at a time, never
as one string; the JSON holds the summary and every trial with its export decision, written
one trial at a time.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import chain
from pathlib import Path
from typing import Any

import orjson

from bf_assets.dataset.assemble import DatasetReview, report_pieces
from bf_assets.dataset.common import trial_key

REPORT_DIR = "report"
REPORT_MD = f"{REPORT_DIR}/review.md"
REPORT_JSON = f"{REPORT_DIR}/review.json"


@dataclass(frozen=True, slots=True)
class ReportContext:
    """What the report's "Reproduce" command needs: the run roots and the review inputs."""

    roots: Sequence[str] = field(default_factory=tuple)
    tasks_dir: str | None = None
    plan_path: str | None = None
    quarantine_path: str | None = None


def _trial_row(ds: DatasetReview, index: int) -> dict[str, Any]:
    t = ds.trials[index]
    row = t.to_json() if ds.store is None else orjson.loads(ds.trial_json(index))
    d = ds.decision.get(trial_key(t))
    if d is not None:
        row["exported"] = d.exported
        row["export_reason"] = d.reason
        row["export_detail"] = d.detail
    return row


def _head(ds: DatasetReview, ctx: ReportContext) -> dict[str, Any]:
    return {
        "release_verdict": ds.release_verdict,
        "roots": list(ctx.roots),
        "summary": ds.summary(),
    }


def report_payload(ds: DatasetReview, ctx: ReportContext) -> dict[str, Any]:
    """The whole report JSON as one value (what :func:`write_report_json` streams)."""
    return {**_head(ds, ctx), "trials": [_trial_row(ds, i) for i in range(len(ds.trials))]}


_INDENT = orjson.OPT_INDENT_2


def write_report_json(
    ds: DatasetReview,
    path: Path,
    ctx: ReportContext,
    clean: Callable[[Any], Any] | None = None,
    on_row: Callable[[Any], None] | None = None,
) -> None:
    """``report/review.json`` written one trial at a time (the bytes
    ``orjson.dumps(report_payload(...), option=OPT_INDENT_2)`` gives, cleaned value by value
    with ``clean``), so the report of a corpus of any size never sits in memory whole;
    ``on_row`` sees each cleaned value as written (the head, then every trial row)."""

    def dumped(value: dict[str, Any]) -> bytes:
        if clean is not None:
            value = clean(value)
        if on_row is not None:
            on_row(value)
        return orjson.dumps(value, option=_INDENT, default=str)

    def chunks() -> Iterator[bytes]:
        lead = dumped(_head(ds, ctx))
        yield b'{\n  "trials": [' if lead == b"{}" else lead[:-2] + b',\n  "trials": ['
        first = True
        for i in range(len(ds.trials)):
            yield b"\n    " if first else b",\n    "
            yield dumped(_trial_row(ds, i)).replace(b"\n", b"\n    ")
            first = False
        yield b"]\n}" if first else b"\n  ]\n}"

    write_atomic(path, chunks())


def write_atomic(path: Path, data: bytes | Iterable[bytes], mode: int = 0o644) -> None:
    """Write ``data`` (bytes, or chunks of them) to ``path`` through a unique temporary file
    and one rename, with ``mode`` (0644 by default: readable by all): a reader sees the old
    file or the new one, never half of one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb", buffering=1 << 20) as fh:
            if isinstance(data, bytes | bytearray | memoryview):
                fh.write(data)
            else:
                for chunk in data:
                    fh.write(chunk)
        os.chmod(tmp, mode)  # 0644: readable like every other published file (mkstemp: 0600)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def report_files(
    ds: DatasetReview,
    out_dir: str | Path,
    ctx: ReportContext,
    *,
    clean: bool,
    links: Sequence[tuple[str, str]] = (),
    on_row: Callable[[Any], None] | None = None,
) -> tuple[Path, Path]:
    """Write ``<out_dir>/report/review.md`` and ``review.json`` (each atomically); with
    ``clean`` every value is cleaned like an export row (secrets, host paths, banned keys).
    ``links`` (``(text, relative target)``) are listed at the end of the Markdown (the UI's
    copy links the trial pages; the copy in a release links nothing outside it)."""
    pieces: Iterable[str] = report_pieces(
        ds,
        list(ctx.roots),
        tasks_dir=ctx.tasks_dir,
        plan_path=ctx.plan_path,
        quarantine_path=ctx.quarantine_path,
    )
    if links:
        tail = "\n## Links\n\n" + "".join(f"- [{text}]({target})\n" for text, target in links)
        pieces = chain(pieces, [tail])
    cleaner = None
    if clean:
        from bf_assets.curate.rowclean import RowCleaner

        # one cache for the whole report; a nested value repeated from row to row (a skill
        # audit, a check's findings) is cleaned once
        cleaner = RowCleaner()
        pieces = map(cleaner.value, pieces)
    out = Path(out_dir)
    md_path, js_path = out / REPORT_MD, out / REPORT_JSON
    write_atomic(md_path, (p.encode("utf-8") for p in pieces))  # a piece at a time
    write_report_json(ds, js_path, ctx, cleaner.value if cleaner is not None else None, on_row)
    return md_path, js_path
