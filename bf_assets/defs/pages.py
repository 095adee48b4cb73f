"""``trial_pages``: the review page of every trial and their index, from the dataset review.

The pages are written by the same core function as ``bf-assets show``
(:func:`bf_assets.pages.site.write_pages`), cleaned like the export, into
``<warehouse>/<run roots>/report/pages/`` beside the review report; the materialization's metadata links
the index: a path, and a URL the UI opens (on the trial page server of ``bf-assets ui``,
else a ``file://`` URL).
"""

import dagster as dg

from bf_assets.batch.places import pages_url
from bf_assets.dataset.assemble import DatasetReview
from bf_assets.defs.conventions import code_version, owners
from bf_assets.defs.resources import RunRoots, local_warehouse
from bf_assets.pages.site import PAGES_SUBDIR, write_pages


@dg.asset(
    ins={"review_report": dg.AssetIn()},
    group_name="dataset",
    kinds={"html"},
    owners=owners(),
    code_version=code_version(__name__),
)
def trial_pages(
    context: dg.AssetExecutionContext, run_roots: RunRoots, review_report: DatasetReview
) -> dg.MaterializeResult:
    """One static HTML page per reviewed trial (verdict, findings next to the lines they
    cite, the conversation around the cited steps, skill catalog, tokens and timing) and an
    index with quarantined and rejected trials first, filterable by check id, harness and task."""
    out = local_warehouse(run_roots.roots).joinpath(*PAGES_SUBDIR)
    report = out.parent / "review.md"
    res = write_pages(review_report, out, report=report if report.is_file() else None).summary()
    n_q = sum(1 for t in review_report.trials if t.verdict == "quarantined")
    n_r = sum(1 for t in review_report.trials if t.verdict == "rejected")
    context.log.info(f"wrote {res.n_pages} trial pages in {res.seconds:.1f} s: {res.index}")
    return dg.MaterializeResult(
        metadata={
            "index": dg.MetadataValue.path(str(res.index)),
            "index_url": dg.MetadataValue.url(pages_url(res.index) or res.index.resolve().as_uri()),
            "pages": dg.MetadataValue.int(res.n_pages),
            "quarantined": dg.MetadataValue.int(n_q),
            "rejected": dg.MetadataValue.int(n_r),
            "bytes": dg.MetadataValue.int(res.bytes),
            "largest_page_bytes": dg.MetadataValue.int(res.largest),
            "seconds": dg.MetadataValue.float(round(res.seconds, 3)),
            "removed_stale_pages": dg.MetadataValue.int(res.removed),
        }
    )
