"""``trial_pages``: the review pages of the trials a person needs, and an index of every trial.

The pages are written by the same core function as ``bf-assets show``
(:func:`bf_assets.pages.site.write_pages`), cleaned like the export, into
``<warehouse>/<run roots>/report/pages/`` beside the review report.  Only the trials a person
needs to look at are rendered (:func:`bf_assets.pages.on_demand.needs_page`: not
publishable, a finding above ``info``, excluded from the export, or a quarantine entry in
force); the page of every other trial is rendered by the trial page server of
``bf-assets ui`` the first time it is asked for, and by ``bf-assets show``.  The index links
every trial.  The materialization's metadata links the index: a path, and a URL the UI opens
(on the trial page server, else a ``file://`` URL).
"""

import dagster as dg

from bf_assets.dataset.assemble import DatasetReview
from bf_assets.defs.conventions import code_version, owners
from bf_assets.defs.resources import RunRoots, local_warehouse
from bf_assets.pages.on_demand import sources_beside
from bf_assets.pages.site import PAGES_SUBDIR, write_pages
from bf_assets.settings import pages_url


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
    """The static HTML page of each trial a person needs to look at (verdict, findings next
    to the lines they cite, the conversation around the cited steps, skill catalog, tokens
    and timing), the others rendered when asked for, and an index of every trial with
    quarantined and rejected trials first, filterable by check id, harness and task."""
    out = local_warehouse(run_roots.roots).joinpath(*PAGES_SUBDIR)
    report = out.parent / "review.md"
    res = write_pages(
        review_report,
        out,
        report=report if report.is_file() else None,
        on_demand=sources_beside(out),
    ).summary()
    n_q = sum(1 for t in review_report.trials if t.verdict == "quarantined")
    n_r = sum(1 for t in review_report.trials if t.verdict == "rejected")
    context.log.info(
        f"rendered {res.n_pages} trial pages in {res.seconds:.1f} s, "
        f"{res.on_demand} on demand: {res.index}"
    )
    return dg.MaterializeResult(
        metadata={
            "index": dg.MetadataValue.path(str(res.index)),
            "index_url": dg.MetadataValue.url(pages_url(res.index) or res.index.resolve().as_uri()),
            "pages": dg.MetadataValue.int(res.n_pages),
            "pages_on_demand": dg.MetadataValue.int(res.on_demand),
            "quarantined": dg.MetadataValue.int(n_q),
            "rejected": dg.MetadataValue.int(n_r),
            "bytes": dg.MetadataValue.int(res.bytes),
            "largest_page_bytes": dg.MetadataValue.int(res.largest),
            "seconds": dg.MetadataValue.float(round(res.seconds, 3)),
            "removed_stale_pages": dg.MetadataValue.int(res.removed),
        }
    )
