"""The trial pages' index is written a row at a time, and is the index rendered whole."""

from __future__ import annotations

from pathlib import Path

import pytest

from bf_assets.corpus.run import review_refs
from bf_assets.dataset.assemble import DatasetReview, assemble
from bf_assets.ingest.discovery import discover_trials
from bf_assets.pages.site import write_pages
from bf_assets.review.options import ReviewOptions
from bf_sample.generator import generate_corpus


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> DatasetReview:
    root = tmp_path_factory.mktemp("index-rows")
    generate_corpus(root, 40, seed=11)
    refs = discover_trials([root / "jobs"])
    return assemble(review_refs(refs, ReviewOptions(tasks_dir=str(root / "tasks"))))


def test_the_index_is_written_a_row_at_a_time(dataset: DatasetReview, tmp_path: Path) -> None:
    from bf_assets.dataset.common import trial_key
    from bf_assets.pages.index import index_parts
    from bf_assets.pages.site import page_name

    ds = dataset
    hrefs = {trial_key(t): page_name(trial_key(t)) for t in ds.trials}
    parts = list(index_parts(ds, hrefs, report_href="../review.md"))
    assert len(parts) >= len(ds.trials)  # a piece a row: never the whole table at once
    rows = [p for p in parts if p.startswith("<tr data-checks=")]
    assert len(rows) == len(ds.trials)
    assert all(p.count("<tr data-checks=") <= 1 for p in parts)  # no piece holds two rows
    res = write_pages(ds, tmp_path / "pages")
    written = (tmp_path / "pages" / "index.html").read_text(encoding="utf-8")
    assert written == "".join(index_parts(ds, {k: page_name(k) for k in res.pages}))
