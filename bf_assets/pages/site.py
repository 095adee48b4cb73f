"""Write the pages of a dataset review: ``<out>/index.html`` and ``<out>/trials/*.html``.

The one function the ``trial_pages`` asset and ``bf-assets show`` call.  Every file is
written atomically (temp file + rename); output is deterministic (no clock, sorted);
a full run removes the pages of trials no longer reviewed.

Incremental: ``<out>/.pages-state.json`` keeps, per page, a digest of everything the page is
made of (the review and its export decision, the quarantine entries, every file of the trial
by stat, the options and the package's code); a page whose digest is unchanged is not
rendered again.  Many pages are rendered on every core (``batch.run.fork_pool``).
"""

from __future__ import annotations

import hashlib
import os
import re
import time
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path

import orjson

from bf_assets.batch.cache import code_digest, trial_fingerprint
from bf_assets.batch.run import fork_pool
from bf_assets.dataset.assemble import DatasetReview
from bf_assets.dataset.common import TrialKey, trial_key
from bf_assets.dataset.quarantine import entry_matches, trial_path
from bf_assets.dataset.reportfiles import write_atomic
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
    reused: int = 0  # pages whose inputs had not changed: not rendered again


def _write(path: Path, text: str) -> int:
    data = text.encode("utf-8")
    write_atomic(path, data)
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
    state_path = out / STATE_FILE
    old_state = _load_state(state_path)
    state: dict[str, str] = dict(old_state) if wanted is not None else {}
    todo: list[tuple[PageInput, Path]] = []
    code = code_digest()
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
        path = out / hrefs[key]
        digest = _page_digest(inp, clean=clean, code=code)
        state[hrefs[key]] = digest
        res.pages[key] = path
        if digest is not None and old_state.get(hrefs[key]) == digest and path.is_file():
            n = path.stat().st_size  # unchanged: not rendered again
            res.reused += 1
        else:
            todo.append((inp, path))
            continue
        res.bytes += n
        res.largest = max(res.largest, n)
    for n in _render_all(todo, clean=clean):
        res.bytes += n
        res.largest = max(res.largest, n)
    _save_state(state_path, {k: v for k, v in state.items() if v is not None})
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


STATE_FILE = ".pages-state.json"
PARALLEL_MIN_PAGES = 32


def _page_digest(inp: PageInput, *, clean: bool, code: str) -> str | None:
    """Everything a page is made of; ``None`` when the trial's files cannot be read (then
    the page is always rendered)."""
    files = trial_fingerprint(inp.review.ref, "pages")
    if files is None:
        return None
    h = hashlib.sha256(f"{code}\0{clean}\0{files}\0".encode())
    h.update(orjson.dumps(inp.review.to_json(), option=orjson.OPT_SORT_KEYS, default=str))
    h.update(orjson.dumps(inp.decision.to_dict() if inp.decision else None, default=str))
    h.update(
        repr((inp.entry, inp.entries, inp.trial_path, inp.index_href, inp.report_href)).encode()
    )
    return h.hexdigest()


def _load_state(path: Path) -> dict[str, str]:
    try:
        doc = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return {}
    return {str(k): str(v) for k, v in doc.items()} if isinstance(doc, dict) else {}


def _save_state(path: Path, state: dict[str, str]) -> None:
    _write(path, orjson.dumps(state, option=orjson.OPT_SORT_KEYS).decode())


def _render_one(inp: PageInput, path: Path, clean: bool) -> int:
    try:
        html, _ = render_trial(inp, clean=clean)
    except TRIAL_ERRORS as exc:  # one unreadable trial never stops the others
        html = error_page(inp, exc, clean=clean)
    return _write(path, html)


def _render_chunk(items: list[tuple[PageInput, Path]], clean: bool) -> list[int]:
    return [_render_one(inp, path, clean) for inp, path in items]


def _render_all(todo: list[tuple[PageInput, Path]], *, clean: bool) -> list[int]:
    """Render and write every page of ``todo``; the sizes written.  Large batches on every
    core (each worker writes its own pages)."""
    workers = min(os.cpu_count() or 1, max(1, len(todo) // PARALLEL_MIN_PAGES))
    if workers <= 1:
        return [_render_one(inp, path, clean) for inp, path in todo]
    size = max(1, len(todo) // (workers * 4))
    chunks = [todo[i : i + size] for i in range(0, len(todo), size)]
    out: list[int] = []
    with fork_pool(workers) as pool:
        for sizes in pool.map(_render_chunk, chunks, [clean] * len(chunks)):
            out.extend(sizes)
    return out
