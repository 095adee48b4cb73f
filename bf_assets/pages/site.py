"""Write the pages of a dataset review: ``<out>/index.html`` and ``<out>/trials/*.html``.

The one function the ``trial_pages`` asset and ``bf-assets show`` call.  Every file is
written atomically (temp file + rename); output is deterministic (no clock, sorted);
a full run removes the pages of trials no longer reviewed.
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
import time
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path

from bf_assets.dataset.assemble import DatasetReview
from bf_assets.dataset.common import TrialKey, trial_key
from bf_assets.dataset.quarantine import entry_matches, trial_path
from bf_assets.pages.index import render_index
from bf_assets.pages.scrub import Scrub
from bf_assets.pages.trial import PageInput, error_page, render_trial
from bf_assets.review.record import TRIAL_ERRORS

INDEX = "index.html"
TRIALS_DIR = "trials"
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def page_name(key: TrialKey, *, clean: bool = True) -> str:
    """``trials/<readable>-<hash>.html``: the readable part from the (cleaned) job and
    rollout, the hash of the key keeps two trials apart."""
    job, rollout = key
    readable = f"{job}__{rollout}"
    if clean:
        readable = Scrub(True).text(readable)
    slug = _UNSAFE.sub("_", readable).strip("._")[-100:] or "trial"
    digest = hashlib.sha256(f"{job}\x00{rollout}".encode()).hexdigest()[:10]
    return f"{TRIALS_DIR}/{slug}-{digest}.html"


@dataclass(slots=True)
class PagesResult:
    out_dir: Path
    index: Path
    pages: dict[TrialKey, Path] = field(default_factory=dict)
    bytes: int = 0
    largest: int = 0
    seconds: float = 0.0
    removed: int = 0


def _write(path: Path, text: str) -> int:
    data = text.encode("utf-8")
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return len(data)


def write_pages(
    ds: DatasetReview,
    out_dir: str | os.PathLike[str],
    *,
    clean: bool = True,
    only: Collection[TrialKey] | None = None,
    report: str | os.PathLike[str] | None = None,
) -> PagesResult:
    """Write the index and the page of every trial (or of ``only``); ``report`` is the
    review report to link from the pages."""
    t0 = time.perf_counter()
    out = Path(out_dir)
    res = PagesResult(out_dir=out, index=out / INDEX)
    hrefs = {trial_key(t): page_name(trial_key(t), clean=clean) for t in ds.trials}
    report_rel = os.path.relpath(report, out).replace(os.sep, "/") if report else None
    wanted = set(only) if only is not None else None
    for t in ds.trials:
        key = trial_key(t)
        if wanted is not None and key not in wanted:
            continue
        inp = PageInput(
            review=t,
            decision=ds.decision.get(key),
            entry=ds.quarantine.get(key),
            entries=[e for e in ds.entries if entry_matches(e, t)],
            trial_path=trial_path(t),
            index_href="../" + INDEX,
            report_href="../" + report_rel if report_rel else None,
        )
        try:
            html, _ = render_trial(inp, clean=clean)
        except TRIAL_ERRORS as exc:  # one unreadable trial never stops the others
            html = error_page(inp, exc, clean=clean)
        path = out / hrefs[key]
        n = _write(path, html)
        res.pages[key] = path
        res.bytes += n
        res.largest = max(res.largest, n)
    linked = {
        k: h
        for k, h in hrefs.items()
        if k in res.pages or wanted is not None and (out / h).is_file()
    }
    index = render_index(ds, linked, clean=clean, report_href=report_rel)
    res.bytes += _write(res.index, index)
    if wanted is None:
        keep = {p.name for p in res.pages.values()}
        trials_dir = out / TRIALS_DIR
        if trials_dir.is_dir():
            for p in trials_dir.glob("*.html"):
                if p.name not in keep:
                    p.unlink(missing_ok=True)
                    res.removed += 1
    res.seconds = time.perf_counter() - t0
    return res
