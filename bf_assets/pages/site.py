"""Write the pages of a dataset review: ``<out>/index.html`` and ``<out>/trials/*.html``.

The one function the ``trial_pages`` asset and ``bf-assets show`` call.  Every file is
written atomically (temp file + rename); output is deterministic (no clock, sorted);
a full run removes the pages of trials no longer reviewed.  The asset renders the pages a
person needs and keeps what the others are made of for the trial page server, which renders
one when it is first asked for (:mod:`bf_assets.pages.on_demand`, :func:`render_on_demand`);
the index links every trial's page.

Incremental: ``<out>/.pages-state.json`` keeps, per page, a digest of everything the page is
made of (the review and its export decision, the quarantine entries, every file of the trial
by stat, the options and the package's code); a page whose digest is unchanged is not
rendered again.  Many pages are made on every core (``batch.run.pooled_in_order``): workers
are sent small batches of page inputs, each with the page's digest from the last render, a
bounded number at a time; each names, digests and (when changed) renders and writes its
pages and sends back only ``(name, digest, bytes, reused)``, so the step keeps a few hundred
bytes per trial beside the review it was given.  A batch is cleaned with one cleaner that
remembers the strings it cleaned (:class:`bf_assets.pages.cleaner.PageCleaner`).
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
import time
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path

import orjson

from bf_assets.corpus.cache import code_digest
from bf_assets.corpus.run import pooled_in_order
from bf_assets.dataset.assemble import DatasetReview
from bf_assets.dataset.common import TrialKey, trial_key
from bf_assets.dataset.quarantine import entry_matches, trial_path
from bf_assets.files import write_atomic
from bf_assets.ingest.treeprint import in_context
from bf_assets.pages.index import index_parts
from bf_assets.pages.on_demand import (
    needs_page,
    read_input,
    sources_signature,
    writing_sources,
)
from bf_assets.pages.scrub import Scrub
from bf_assets.pages.trial import PageInput, error_page, render_trial
from bf_assets.redact import RULES_ENV
from bf_assets.redact.gitleaks import RULES_DIR
from bf_assets.review.record import TRIAL_ERRORS, TrialReview

INDEX = "index.html"
PAGES_SUBDIR = ("report", "pages")  # the pages' folder under the run roots' warehouse
TRIALS_DIR = "trials"
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def page_name(key: TrialKey, *, clean: bool = True, scrub: Scrub | None = None) -> str:
    """``trials/<readable>-<hash>.html``: the readable part from the (cleaned) job and
    rollout, the hash of the key keeps two trials apart.  ``scrub``: the cleaning to use
    (a cleaning of its own when ``clean`` and none is given)."""
    job, rollout = key
    readable = f"{job}__{rollout}"
    if clean:
        readable = (scrub if scrub is not None and scrub.clean else Scrub(True)).text(readable)
    slug = _UNSAFE.sub("_", readable).strip("._")[-100:] or "trial"
    digest = hashlib.sha256(f"{job}\x00{rollout}".encode()).hexdigest()[:10]
    return f"{TRIALS_DIR}/{slug}-{digest}.html"


class PageFiles(Mapping[TrialKey, Path]):
    """Each written trial's page file, by trial key: held as the page names (``trials/…``)
    under one folder and made into paths when asked (a ``Path`` per trial costs far more)."""

    __slots__ = ("out", "names")

    def __init__(self, out: Path, names: dict[TrialKey, str] | None = None) -> None:
        self.out = out
        self.names: dict[TrialKey, str] = {} if names is None else names

    def __getitem__(self, key: TrialKey) -> Path:
        return self.out / self.names[key]

    def __contains__(self, key: object) -> bool:
        return key in self.names

    def __iter__(self) -> Iterator[TrialKey]:
        return iter(self.names)

    def __len__(self) -> int:
        return len(self.names)

    def __reduce__(self) -> tuple[type[PageFiles], tuple[Path, dict[TrialKey, str]]]:
        return (PageFiles, (self.out, self.names))


@dataclass(slots=True)
class PagesSummary:
    """What a render did, without the page of each trial (what a render in another process
    sends back: a count, not the page map)."""

    out_dir: Path
    index: Path
    n_pages: int = 0
    bytes: int = 0
    largest: int = 0
    seconds: float = 0.0
    removed: int = 0
    reused: int = 0  # pages whose inputs had not changed: not rendered again
    on_demand: int = 0  # pages not rendered: made when asked for (``on_demand``)


@dataclass(slots=True)
class PagesResult(PagesSummary):
    """What a render did, and each trial's page (``pages``)."""

    pages: PageFiles = field(default_factory=lambda: PageFiles(Path()))

    def summary(self) -> PagesSummary:
        return PagesSummary(**{f.name: getattr(self, f.name) for f in fields(PagesSummary)})


def _write(path: Path, text: str | Iterable[str]) -> int:
    """Write a page (a string, or its pieces, encoded one at a time) atomically, 0644; the
    folder is made when missing."""
    if isinstance(text, str):
        return write_atomic(path, text.encode("utf-8"))
    return write_atomic(path, (piece.encode("utf-8") for piece in text))


def write_pages(
    ds: DatasetReview,
    out_dir: str | os.PathLike[str],
    *,
    clean: bool = True,
    only: Collection[TrialKey] | None = None,
    report: str | os.PathLike[str] | None = None,
    on_demand: str | os.PathLike[str] | None = None,
) -> PagesResult:
    """Write the index and the page of every trial (or of ``only``); ``report`` is the
    review report to link from the pages.  With ``on_demand`` (a
    sources file, :mod:`bf_assets.pages.on_demand`) and no ``only``, only the pages a person
    needs are rendered (:func:`~bf_assets.pages.on_demand.needs_page`); what the others are
    made of goes to that file, and their pages are rendered when asked for
    (:func:`render_on_demand`).  The index links every trial's page, rendered or not."""
    t0 = time.perf_counter()
    out = Path(out_dir)
    written: dict[TrialKey, str] = {}  # the pages this call wrote (or found unchanged)
    res = PagesResult(out_dir=out, index=out / INDEX, pages=PageFiles(out, written))
    report_rel = os.path.relpath(report, out).replace(os.sep, "/") if report else None
    wanted = set(only) if only is not None else None
    state_path = out / STATE_FILE
    old_state = _load_state(state_path)
    state: dict[str, str] = dict(old_state) if wanted is not None else {}
    naming = Scrub(clean)
    hrefs = {trial_key(t): page_name(trial_key(t), clean=clean, scrub=naming) for t in ds.trials}
    del naming
    job = _Job(
        ds, hrefs, old_state, _Render(out, clean, report_rel, code_digest() + rules_digest())
    )
    if wanted is not None:
        picked: Sequence[int] = [i for i, t in enumerate(ds.trials) if trial_key(t) in wanted]
    elif on_demand is not None:
        picked = _needed(job, Path(on_demand), hrefs)
        res.on_demand = len(ds.trials) - len(picked)
    else:
        picked = range(len(ds.trials))
    for i, (href, digest, n, reused) in zip(picked, _pages(job, picked), strict=True):
        key = trial_key(ds.trials[i])
        written[key] = href
        if digest is not None:
            state[href] = digest
        else:
            state.pop(href, None)
        res.reused += reused
        res.bytes += n
        res.largest = max(res.largest, n)
    _save_state(state_path, state)
    parts = index_parts(ds, hrefs, clean=clean, report_href=report_rel, on_demand=res.on_demand)
    res.bytes += _write(res.index, parts)
    if wanted is None:
        # the pages of trials no longer reviewed, and pages rendered on demand before: the
        # trial may have changed since
        keep = set(written.values())  # the same strings, not new ones
        trials_dir = out / TRIALS_DIR
        if trials_dir.is_dir():
            for p in trials_dir.glob("*.html"):
                if f"{TRIALS_DIR}/{p.name}" not in keep:
                    p.unlink(missing_ok=True)
                    res.removed += 1
    res.seconds = time.perf_counter() - t0
    res.n_pages = len(written)
    return res


def _needed(job: _Job, sources: Path, hrefs: Mapping[TrialKey, str]) -> list[int]:
    """The trials whose pages are rendered now; what every other trial's page is made of is
    written to ``sources``."""
    ds = job.ds
    picked: list[int] = []
    with writing_sources(sources, clean=job.render.clean) as kept:
        for i, t in enumerate(ds.trials):
            key = trial_key(t)
            if needs_page(t, ds.decision.get(key), ds.quarantine.get(key)):
                picked.append(i)
            else:
                kept.add(hrefs[key], _page_input(job, ds.full_trial(i)))
    return picked


ON_DEMAND_TRIES = 3


def render_on_demand(out_dir: str | os.PathLike[str], name: str, sources: Path) -> Path | None:
    """Render and write page ``name`` (``trials/….html``) of the pages in ``out_dir`` from
    the sources file ``sources``; None when it keeps no such page or keeps raw pages (only
    cleaned pages are rendered on demand).  A page rendered while a release replaced the
    sources file is rendered again from the new one."""
    path = Path(out_dir) / name
    for _ in range(ON_DEMAND_TRIES):
        found = read_input(sources, name)
        if found is None or not found[1]:
            return None
        inp, clean, sig = found
        _render_one(inp, path, Scrub(clean))
        if sources_signature(sources) == sig:
            return path
        path.unlink(missing_ok=True)
    return None


STATE_FILE = ".pages-state.json"
PARALLEL_MIN_PAGES = 32
BATCH = 32  # pages a worker is given at a time (cleaned with one cleaner)
QUEUED = 2  # batches waiting per worker


@dataclass(frozen=True, slots=True)
class _Render:
    """What every page of one ``write_pages`` is rendered with (sent with each batch)."""

    out: Path
    clean: bool
    report_rel: str | None
    code: str


@dataclass(slots=True)
class _Job:
    """One ``write_pages``: the review, each trial's page name, each page's digest from the
    last render, and what the pages are rendered with."""

    ds: DatasetReview
    hrefs: Mapping[TrialKey, str]
    old_state: dict[str, str]
    render: _Render


Made = tuple[str, str | None, int, bool]  # (page name, digest, bytes, reused)
# a page to make: its input, its name and its digest from the last render (None: none)
Todo = tuple[PageInput, str, str | None]


def _page_input(job: _Job, t: TrialReview) -> PageInput:
    key = trial_key(t)
    report_rel = job.render.report_rel
    return PageInput(
        review=t,
        decision=job.ds.decision.get(key),
        entry=job.ds.quarantine.get(key),
        entries=[e for e in job.ds.entries if entry_matches(e, t)],
        trial_path=trial_path(t),
        index_href="../" + INDEX,
        report_href="../" + report_rel if report_rel else None,
    )


def _todo(job: _Job, i: int) -> Todo:
    inp = _page_input(job, job.ds.full_trial(i))
    href = job.hrefs[trial_key(inp.review)]
    return inp, href, job.old_state.get(href)


def _one_page(render: _Render, todo: Todo, scrub: Scrub) -> Made:
    """One trial's page, rendered and written unless its digest says it is unchanged."""
    inp, href, old = todo
    digest = _page_digest(inp, clean=render.clean, code=render.code)
    path = render.out / href
    if digest is not None and old == digest:
        try:
            st = os.stat(path)
        except OSError:
            st = None
        if st is not None and stat.S_ISREG(st.st_mode):
            return href, digest, st.st_size, True  # unchanged: not rendered again
    return href, digest, _render_one(inp, path, scrub), False


def _batch(render: _Render, todos: list[Todo]) -> list[Made]:
    """A batch of pages, cleaned with one cleaner (text repeated from page to page is
    cleaned once)."""
    scrub = Scrub(render.clean)
    return [_one_page(render, todo, scrub) for todo in todos]


def _pages(job: _Job, picked: Sequence[int]) -> Iterator[Made]:
    """Every picked trial's page, in order.  Many pages on every core: workers are sent
    batches of ``BATCH`` pages to make, at most ``QUEUED`` per worker waiting, so a worker
    holds a few reviews at a time."""
    workers = min(os.cpu_count() or 1, max(1, len(picked) // PARALLEL_MIN_PAGES))
    if workers <= 1:
        scrub = Scrub(job.render.clean)
        for i in picked:
            yield _one_page(job.render, _todo(job, i), scrub)
        return
    batches = ([_todo(job, i) for i in picked[k : k + BATCH]] for k in range(0, len(picked), BATCH))
    calls = ((job.render, todos) for todos in batches)
    for made in pooled_in_order(workers, _batch, calls, ahead=QUEUED):
        yield from made


def rules_digest() -> str:
    """Digest of the secret rules a cleaned page is made with (the shipped rule files and
    the ones ``BF_ASSETS_SECRET_RULES`` names): new rules render every page again."""
    h = hashlib.sha256()
    shipped = sorted(p for p in RULES_DIR.rglob("*") if p.is_file())
    extra = [Path(p) for p in os.environ.get(RULES_ENV, "").split(os.pathsep) if p]
    for p in [*shipped, *extra]:
        h.update(f"{p}\0".encode())
        try:
            h.update(hashlib.sha256(p.read_bytes()).digest())
        except OSError as exc:
            h.update(f"unreadable {exc.errno}".encode())
    return h.hexdigest()


def _page_digest(inp: PageInput, *, clean: bool, code: str) -> str | None:
    """Everything a page is made of; ``None`` when the trial's files cannot be read (then
    the page is always rendered)."""
    from bf_assets.ingest.discovery import trial_fingerprint

    fp = trial_fingerprint(inp.review.ref)
    if fp is None:
        return None
    files = in_context("pages", fp)
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


def _render_one(inp: PageInput, path: Path, scrub: Scrub) -> int:
    try:
        html, _ = render_trial(inp, clean=scrub.clean, scrub=scrub)
    except TRIAL_ERRORS as exc:  # one unreadable trial never stops the others
        html = error_page(inp, exc, clean=scrub.clean, scrub=scrub)
    return _write(path, html)
