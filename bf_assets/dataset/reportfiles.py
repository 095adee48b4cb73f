"""The review report files (``report/review.md`` and ``report/review.json``) of a dataset
review.

One function writes them for every caller: the release bundle (the published copy) and the
warehouse copy the Dagster UI links to (it never leaves the machine).  The report itself is
rendered by :func:`bf_assets.dataset.assemble.report_pieces` in the order ``checks.md`` §3
prescribes, and written a piece at a time, never as one string; the JSON holds the summary
and every trial with its export decision, written one trial at a time.

The published copy holds only what the export may show.  Every value it shows is cleaned
like an export row before it is escaped for Markdown (the coverage picture's labels too),
and each trial the release does not export is there by identity, decision, and its
findings' checks and messages only (:data:`EXCLUDED_TRIAL_KEYS`,
:data:`EXCLUDED_FINDING_KEYS`): never their evidence, the trial's skills or its reward.
The warehouse copy keeps every trial whole.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import chain
from pathlib import Path
from typing import Any

import orjson

from bf_assets.dataset.assemble import DatasetReview, report_pieces
from bf_assets.dataset.common import trial_key
from bf_assets.dataset.reportmarkup import Markdown, md_link, md_text
from bf_assets.files import write_atomic
from bf_assets.review.record import SLOT_FIELDS

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


# What the published report keeps of a trial it does not export: who it is and what the
# review and the export decided, never a value of its data beyond its identity.
EXCLUDED_TRIAL_KEYS = (
    "path",
    "root",
    *SLOT_FIELDS,
    "job",
    "rollout",
    "source_ref",
    "task_digest",
    "started_at",
    "layout",
    "outcome",
    "healthy",
    "training_ready",
    "verdict",
    "attribution",
)
EXPORTED_TRIAL_KEYS = (*EXCLUDED_TRIAL_KEYS, "reward", "skills", "findings")
# An excluded trial's findings: the check and its message, where it points; no evidence.
EXCLUDED_FINDING_KEYS = ("check", "severity", "message", "file", "line")


def published_trial(row: dict[str, Any], exported: bool) -> dict[str, Any]:
    """What the published report shows of a trial's review (``TrialReview.to_json``): the
    keys it knows, and for a trial the release does not export, its identity and its
    findings without their evidence."""
    if exported:
        return {k: row[k] for k in EXPORTED_TRIAL_KEYS if k in row}
    out = {k: row[k] for k in EXCLUDED_TRIAL_KEYS if k in row}
    findings = row.get("findings")
    out["findings"] = [
        {k: f.get(k) for k in EXCLUDED_FINDING_KEYS}
        for f in (findings if isinstance(findings, list) else [])
        if isinstance(f, dict)
    ]
    return out


def _trial_row(ds: DatasetReview, index: int, published: bool = False) -> dict[str, Any]:
    t = ds.trials[index]
    row = t.to_json() if ds.store is None else orjson.loads(ds.trial_json(index))
    d = ds.decision.get(trial_key(t))
    if published:
        row = published_trial(row, d is not None and d.exported)
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


def report_payload(
    ds: DatasetReview, ctx: ReportContext, published: bool = False
) -> dict[str, Any]:
    """The whole report JSON as one value (what :func:`write_report_json` streams);
    ``published``: each trial as the published copy shows it (:func:`published_trial`)."""
    trials = [_trial_row(ds, i, published) for i in range(len(ds.trials))]
    return {**_head(ds, ctx), "trials": trials}


_INDENT = orjson.OPT_INDENT_2


def write_report_json(
    ds: DatasetReview,
    path: Path,
    ctx: ReportContext,
    clean: Callable[[Any], Any] | None = None,
    on_row: Callable[[Any], None] | None = None,
    published: bool = False,
) -> None:
    """``report/review.json`` written one trial at a time (the bytes
    ``orjson.dumps(report_payload(..., published), option=OPT_INDENT_2)`` gives, cleaned
    value by value with ``clean``), so the report of a corpus of any size never sits in
    memory whole; ``on_row`` sees each cleaned value as written (the head, then every trial
    row)."""

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
            yield dumped(_trial_row(ds, i, published)).replace(b"\n", b"\n    ")
            first = False
        yield b"]\n}" if first else b"\n  ]\n}"

    write_atomic(path, chunks())


def report_files(
    ds: DatasetReview,
    out_dir: str | Path,
    ctx: ReportContext,
    *,
    clean: bool,
    links: Sequence[tuple[str, str]] = (),
    on_row: Callable[[Any], None] | None = None,
) -> tuple[Path, Path]:
    """Write ``<out_dir>/report/review.md`` and ``review.json`` (each atomically).  With
    ``clean`` they are the published copy (module docstring): every value cleaned like an
    export row (secrets, host paths, banned keys) before it is escaped, the picture drawn
    from cleaned labels, and the trials the release does not export shown without their
    evidence.  ``links`` (``(text, relative target)``) are listed at the end of the Markdown
    (the UI's copy links the trial pages; the copy in a release links nothing outside it)."""
    cleaner = None
    if clean:
        from bf_assets.redact.clean import Cleaner

        cleaner = Cleaner()  # one cache of cleaned strings for the whole report
    pieces: Iterable[str] = report_pieces(
        ds,
        list(ctx.roots),
        tasks_dir=ctx.tasks_dir,
        plan_path=ctx.plan_path,
        quarantine_path=ctx.quarantine_path,
        clean=cleaner.text if cleaner is not None else None,
    )
    if links:
        tail = "\n## Links\n\n" + "".join(
            f"- [{md_text(text)}]({md_link(target)})\n" for text, target in links
        )
        pieces = chain(pieces, [tail])
    if cleaner is not None:  # and the text as a whole, but the picture (cleaned labels)
        pieces = (p if isinstance(p, Markdown) else cleaner.value(p) for p in pieces)
    out = Path(out_dir)
    md_path, js_path = out / REPORT_MD, out / REPORT_JSON
    write_atomic(md_path, (p.encode("utf-8") for p in pieces))  # a piece at a time
    write_report_json(
        ds,
        js_path,
        ctx,
        cleaner.value if cleaner is not None else None,
        on_row,
        published=clean,
    )
    return md_path, js_path
