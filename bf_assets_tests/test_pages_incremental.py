"""Trial pages are rendered again only when something they show changed, and many pages
are rendered on every core with the same bytes."""

from __future__ import annotations

import os
from pathlib import Path

from test_pages_core import review_dataset
from trialkit import healthy_spec

from bf_assets.dataset.common import trial_key
from bf_assets.pages import site


def _pages(out: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((out / "trials").glob("*.html"))}


def test_unchanged_pages_are_reused_and_a_changed_trial_is_rendered_again(
    runs_root: Path, tmp_path: Path
) -> None:
    a = healthy_spec(rollout_id="aaaa0001").write(runs_root)
    healthy_spec(task="other-task", rollout_id="bbbb0002").write(runs_root)
    out = tmp_path / "pages"
    first = site.write_pages(review_dataset(runs_root), out)
    assert len(first.pages) == 2 and first.reused == 0
    before = _pages(out)
    again = site.write_pages(review_dataset(runs_root), out)
    assert again.reused == 2 and _pages(out) == before
    # a trial file changes (same size, new content and mtime): only its page is rendered
    result = a.file("result.json")
    st = result.stat()
    result.write_text(result.read_text().replace("0", "0", 1))
    os.utime(result, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    third = site.write_pages(review_dataset(runs_root), out)
    assert third.reused == 1
    # the code the page is made with changes: everything is rendered again
    site_code = site.code_digest
    try:
        site.code_digest = lambda: "new code"  # type: ignore[assignment]
        assert site.write_pages(review_dataset(runs_root), out).reused == 0
    finally:
        site.code_digest = site_code  # type: ignore[assignment]


def test_pages_rendered_on_every_core_are_the_same_bytes(
    runs_root: Path, tmp_path: Path, monkeypatch: object
) -> None:
    for i in range(6):
        healthy_spec(task=f"task-{i}", rollout_id=f"cccc000{i}").write(runs_root)
    ds = review_dataset(runs_root)
    serial = tmp_path / "serial"
    site.write_pages(ds, serial)
    parallel = tmp_path / "parallel"
    old = site.PARALLEL_MIN_PAGES
    site.PARALLEL_MIN_PAGES = 2
    try:
        res = site.write_pages(ds, parallel)
    finally:
        site.PARALLEL_MIN_PAGES = old
    assert set(res.pages) == {trial_key(t) for t in ds.trials}
    assert _pages(parallel) == _pages(serial)


def test_the_result_names_each_page_and_travels_by_pickle(tmp_path: Path) -> None:
    """``PagesResult.pages`` (held as page names, made into paths when asked) gives each
    trial's written file, and survives the pipe from a background render (pickle)."""
    import pickle

    from bf_assets.pages.site import PageFiles

    out = tmp_path / "pages"
    files = PageFiles(out, {("job", "r1"): "trials/a-1.html", ("job", "r2"): "trials/b-2.html"})
    assert len(files) == 2 and ("job", "r1") in files and ("job", "r3") not in files
    assert files[("job", "r2")] == out / "trials" / "b-2.html"
    assert dict(files) == {
        ("job", "r1"): out / "trials/a-1.html",
        ("job", "r2"): out / "trials/b-2.html",
    }
    back = pickle.loads(pickle.dumps(files))
    assert isinstance(back, PageFiles) and dict(back) == dict(files)
