"""The trial pages of a one-process release are made in the background while curation and
the publish checks run (``bf_assets.pages.early``): the same bytes as rendering them in the
step, and never a render of another review or a failed one."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
from prockit import alive

from bf_assets.batch.run import review_refs
from bf_assets.cli.main import main
from bf_assets.dataset.assemble import DatasetReview, assemble
from bf_assets.defs import pages as pages_asset
from bf_assets.ingest.discovery import discover_trials
from bf_assets.pages import early
from bf_assets.pages.site import PagesSummary, write_pages
from bf_assets.review.options import ReviewOptions
from bf_sample.generator import generate_corpus


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("early")
    generate_corpus(root, 40, seed=11)
    return root


def _dataset(corpus: Path) -> DatasetReview:
    refs = discover_trials([corpus / "jobs"])
    return assemble(review_refs(refs, ReviewOptions(tasks_dir=str(corpus / "tasks"))))


def _files(out: Path) -> dict[str, bytes]:
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}


def _assert_the_steps_pages(
    got: PagesSummary | None, ds: DatasetReview, tmp_path: Path, report: Path
) -> None:
    """``got``, the background pages in ``tmp_path/a``, are the 40 pages the step would
    write (rendered here into ``tmp_path/b``), byte for byte."""
    assert isinstance(got, PagesSummary) and got.n_pages == len(ds.trials) == 40
    want = write_pages(ds, tmp_path / "b", report=report)
    assert _files(tmp_path / "a") == _files(tmp_path / "b")
    assert (got.bytes, got.largest) == (want.bytes, want.largest)
    assert got.n_pages == want.n_pages == len(want.pages)
    assert not hasattr(got, "pages")  # the count came back, not every trial's page name


def test_background_pages_are_the_pages_the_step_would_write(corpus: Path, tmp_path: Path) -> None:
    ds = _dataset(corpus)
    report = tmp_path / "review.md"
    report.write_text("# report\n")
    assert not early.offer(ds)  # outside a release that allows it: nothing starts
    with early.pages_alongside(tmp_path / "a", report):
        assert early.offer(ds)
        assert not early.offer(ds)  # one at a time
        got = early.collect(ds, tmp_path / "a", report)
    _assert_the_steps_pages(got, ds, tmp_path, report)


def test_a_render_of_another_review_or_folder_is_stopped_not_used(
    corpus: Path, tmp_path: Path
) -> None:
    ds, other = _dataset(corpus), _dataset(corpus)
    report = tmp_path / "review.md"
    with early.pages_alongside(tmp_path / "a", report):
        assert early.offer(ds)
        assert early.collect(other, tmp_path / "a", report) is None
        assert not early._RUNNING
        assert early.offer(ds)
        assert early.collect(ds, tmp_path / "elsewhere", report) is None
        assert early.offer(ds)
    assert not early._RUNNING  # the block stopped the render nobody collected


def test_a_failed_background_render_is_not_used(
    corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    ds = _dataset(corpus)

    def broken(*_a: object, **_k: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(early, "write_pages", broken)
    with early.pages_alongside(tmp_path / "a", tmp_path / "review.md"):
        assert early.offer(ds)
        with caplog.at_level("WARNING", logger="bf_assets.pages"):
            assert early.collect(ds, tmp_path / "a", tmp_path / "review.md") is None
    # the step's log says why it renders the pages itself
    assert "background trial pages failed (OSError: disk full)" in caplog.text


def test_a_release_killed_outright_takes_its_background_render_along(tmp_path: Path) -> None:
    """SIGKILL of the release leaves nothing of it to stop the render: the kernel ends the
    render (and with it its page workers' group) when its parent dies."""
    if not sys.platform.startswith("linux"):
        pytest.skip("PR_SET_PDEATHSIG is Linux's")
    pidfile = tmp_path / "render.pid"
    script = tmp_path / "release.py"
    script.write_text(
        "import os, time\n"
        "from bf_assets.dataset.assemble import assemble\n"
        "from bf_assets.pages import early\n"
        "def slow(ds, out, **kw):\n"
        f"    open({str(pidfile)!r}, 'w').write(str(os.getpid()))\n"
        "    time.sleep(300)\n"
        "early.write_pages = slow\n"
        f"with early.pages_alongside({str(tmp_path / 'pages')!r}, {str(tmp_path / 'r.md')!r}):\n"
        "    assert early.offer(assemble([]))\n"
        "    time.sleep(300)\n"
    )
    proc = subprocess.Popen([sys.executable, str(script)])
    for _ in range(600):
        if pidfile.is_file() and pidfile.read_text():
            break
        time.sleep(0.05)
    render = int(pidfile.read_text())
    assert alive(render)
    proc.kill()
    proc.wait(timeout=60)
    for _ in range(400):
        if not alive(render):
            break
        time.sleep(0.05)
    assert not alive(render)


def _release_pages(corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``bf-assets release`` of the corpus on a new instance and warehouse under
    ``tmp_path``: the folder of its trial pages."""
    for name, sub in (("DAGSTER_HOME", "home"), ("BF_WAREHOUSE", "wh"), ("BF_STAGING_DIR", "st")):
        monkeypatch.setenv(name, str(tmp_path / sub))
    monkeypatch.setenv("BF_RUN_ROOTS", "")
    argv = ["release", "--runs", str(corpus / "jobs"), "--tasks", str(corpus / "tasks")]
    assert main([*argv, "--out", str(tmp_path / "out")]) in (0, 3)
    (pages,) = (tmp_path / "wh").glob("roots-*/report/pages")
    return pages


def test_a_release_collects_its_pages_from_the_background(
    corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    in_step: list[object] = []
    real = pages_asset.write_pages
    monkeypatch.setattr(
        pages_asset, "write_pages", lambda *a, **k: in_step.append(a) or real(*a, **k)
    )
    pages = _release_pages(corpus, tmp_path, monkeypatch)
    assert in_step == []  # the step collected the background's pages
    assert len(list((pages / "trials").glob("*.html"))) == 40
    assert (pages / "index.html").is_file()
    # the pages' digests came from the release's tree book (removed when it ended) and are
    # those a render walking every trial takes: nothing is rendered again
    assert not (pages.parent / ".trial-trees.bin").exists()
    ds = early.read_review(pages.parent.parent / "review_report.pickle")
    assert real(ds, pages, report=pages.parent / "review.md").reused == 40


def test_a_release_whose_tree_book_cannot_be_written_still_publishes_every_page(
    corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from bf_assets.batch import ingest_state

    def full(*_a: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(ingest_state, "write_book", full)
    pages = _release_pages(corpus, tmp_path, monkeypatch)
    assert len(list((pages / "trials").glob("*.html"))) == 40  # walked, not taken from a book
    assert not (pages.parent / ".trial-trees.bin").exists()


def test_the_index_is_written_a_row_at_a_time(corpus: Path, tmp_path: Path) -> None:
    from bf_assets.dataset.common import trial_key
    from bf_assets.pages.index import index_parts
    from bf_assets.pages.site import page_name

    ds = _dataset(corpus)
    hrefs = {trial_key(t): page_name(trial_key(t)) for t in ds.trials}
    parts = list(index_parts(ds, hrefs, report_href="../review.md"))
    assert len(parts) >= len(ds.trials)  # a piece a row: never the whole table at once
    rows = [p for p in parts if p.startswith("<tr data-checks=")]
    assert len(rows) == len(ds.trials)
    assert all(p.count("<tr data-checks=") <= 1 for p in parts)  # no piece holds two rows
    res = write_pages(ds, tmp_path / "pages")
    assert (tmp_path / "pages" / "index.html").read_text(encoding="utf-8") == "".join(
        index_parts(ds, {k: page_name(k) for k in res.pages})
    )


def _persisted(corpus: Path, tmp_path: Path) -> tuple[DatasetReview, Path]:
    """A dataset review with its store, written as the warehouse IO manager writes it."""
    from upath import UPath

    from bf_assets.dataset.store import StoreWriter
    from bf_assets.defs.io_managers import PickleUPathIOManager

    refs = discover_trials([corpus / "jobs"])
    writer = StoreWriter(tmp_path / "store")
    reviews = review_refs(refs, ReviewOptions(tasks_dir=str(corpus / "tasks")))
    ds = assemble(writer.add_all(reviews))
    ds.store = writer.store
    path = tmp_path / "wh" / "review_report.pickle"
    path.parent.mkdir(parents=True)
    PickleUPathIOManager(base_path=UPath(path.parent)).dump_to_path(None, ds, UPath(path))  # type: ignore[arg-type]
    return ds, path


def test_a_review_on_disk_is_rendered_by_a_new_process_reading_the_file(
    corpus: Path, tmp_path: Path
) -> None:
    """Not a fork of the release: the render reads the persisted review (and its store) in an
    interpreter of its own, and writes the bytes the step would."""
    ds, path = _persisted(corpus, tmp_path)
    report = tmp_path / "review.md"
    report.write_text("# report\n")
    with early.pages_alongside(tmp_path / "a", report):
        assert early.offer(ds, path)
        render = early._RUNNING[0].proc
        assert isinstance(render, early._Spawned)  # not a multiprocessing fork
        got = early.collect(ds, tmp_path / "a", report)
    _assert_the_steps_pages(got, ds, tmp_path, report)


def test_a_render_of_a_file_that_is_not_a_review_fails_and_is_not_used(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    ds = assemble([])
    bad = tmp_path / "review_report.pickle"
    bad.write_bytes(b"not a pickle")
    with early.pages_alongside(tmp_path / "a", tmp_path / "review.md"):
        assert early.offer(ds, bad)
        with caplog.at_level("WARNING", logger="bf_assets.pages"):
            assert early.collect(ds, tmp_path / "a", tmp_path / "review.md") is None
    assert "background trial pages failed (UnpicklingError" in caplog.text


def test_an_uncollected_render_process_is_stopped_with_its_group(
    corpus: Path, tmp_path: Path
) -> None:
    ds, path = _persisted(corpus, tmp_path)
    with early.pages_alongside(tmp_path / "a", tmp_path / "review.md"):
        assert early.offer(ds, path)
        pid = early._RUNNING[0].proc.pid
        assert alive(pid)
    # the block stopped it (and waited for it): nothing of it is left
    assert not early._RUNNING and not alive(pid)
