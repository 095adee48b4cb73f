"""The dataset review over every job partition: ``coverage``, ``sandbox_parity`` and
``review_report``, three outputs of one assembly (a single multi-asset, so the dataset
review is computed once per run).

``review_report`` holds the dataset review itself (``bf_assets.dataset.assemble.DatasetReview``,
pickled): per-trial effective verdicts, the export decision, the release verdict.  It is the
one decision downstream assets read: ``curated_rollouts`` builds rows for exactly the trials
it exports and the publish checks verify the bundle against it.  The bodies rebuild the
reviews from ``validated_trials`` (the rows of the configured run roots only) and call the
same core the CLI uses, so the UI and ``bf-assets review`` agree; the UI's copy of the
report is written by the same code that writes the one inside a release.
"""

from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import dagster as dg
import pandas as pd

from bf_assets.contract import Verdict
from bf_assets.dataset.assemble import DatasetReview, assemble
from bf_assets.dataset.coverage_svg import coverage_svg, svg_data_uri
from bf_assets.dataset.reportfiles import report_files
from bf_assets.dataset.store import StoreWriter
from bf_assets.defs.conventions import (
    COVERAGE_COLUMNS,
    PARITY_COLUMNS,
    TABLE_COLUMNS,
    code_version,
    column_schema,
    owners,
)
from bf_assets.defs.ingest import PARQUET_IO, numeric_counts
from bf_assets.defs.io_managers import PartitionTables
from bf_assets.defs.resources import RunRoots, local_warehouse
from bf_assets.review.record import TrialReview
from bf_assets.review.tables import reviews_from_frame
from bf_assets.settings import pages_url

ALL_PARTITIONS = {"allow_missing_partitions": True}
DATASET_IO = "dataset_io_manager"
# where a dataset review's store is written before the IO manager places it beside the pickle
STORE_DIR = ".review-store"


def _reviews(
    validated_trials: Mapping[str, pd.DataFrame], roots: list[str], writer: StoreWriter
) -> list[TrialReview]:
    """The slim reviews of every validated row of the configured run roots, partition by
    partition in key order (a partition of the same name under another run root, reviewed by
    another release on this instance, is left out); each whole review goes to ``writer``'s
    store.  Each partition's frame and its whole reviews are let go once read, so memory
    holds one partition's reviews at a time however large the corpus."""
    allowed = {str(Path(r).resolve()) for r in roots}
    out: list[TrialReview] = []
    for key in sorted(validated_trials):
        df = validated_trials[key]  # read now (PartitionTables), let go after this loop
        if df is None or df.empty:
            continue
        ours = [r for r in df["root"].unique() if str(Path(str(r)).resolve()) in allowed]
        mine = df["root"].isin(ours)  # one resolve per distinct root, not per row
        if mine.any():
            out.extend(writer.add_all(reviews_from_frame(df[mine] if not mine.all() else df)))
        del df
    return out


def not_ingested(expected: list[str], loaded: set[str], roots: list[str]) -> list[str]:
    """Registered job partitions under the configured roots that have no table yet."""
    out = []
    for key in expected:
        if key in loaded:
            continue
        head = key.split("/", 1)[0]
        if any(Path(r).name == head and (Path(r).parent / key).is_dir() for r in roots):
            out.append(key)
    return sorted(out)


def flat_frame(rows: Iterable[Mapping[str, Any]], columns: Sequence[str]) -> pd.DataFrame:
    """``rows`` (dicts with the keys ``columns``) as a frame built column by column, with
    nested values as text (a column holding any list, dict or tuple is all text), so the
    Parquet schema stays flat and stable.  Only one column of values is made at a time: a
    frame of dicts would hold every row's dict (some 600 bytes a row) while it is built."""
    table: dict[str, list[Any]] = {c: [] for c in columns}
    appenders = [(c, table[c].append) for c in columns]
    for row in rows:
        for c, add in appenders:
            add(row[c])
    for c, values in table.items():
        if any(isinstance(v, list | dict | tuple) for v in values):
            table[c] = [str(v) for v in values]
    return pd.DataFrame(table, columns=list(columns))


def _dataset(validated_trials: Mapping[str, pd.DataFrame], run_roots: RunRoots) -> DatasetReview:
    writer = StoreWriter(local_warehouse(run_roots.roots) / STORE_DIR)
    try:
        reviews = _reviews(validated_trials, run_roots.roots, writer)
        ds = assemble(
            reviews,
            plan_path=run_roots.plan_path,
            quarantine_path=run_roots.quarantine_path,
            store=writer.store,
        )
        del reviews
    except BaseException:
        writer.store.discard()
        raise
    return ds


def _out(description: str, io_manager_key: str = PARQUET_IO, name: str = "") -> dg.AssetOut:
    return dg.AssetOut(
        owners=owners(),
        code_version=code_version(__name__),
        metadata=column_schema(TABLE_COLUMNS[name]) if name in TABLE_COLUMNS else None,
        io_manager_key=io_manager_key,
        group_name="dataset",
        kinds={"pandas", "parquet"} if io_manager_key == PARQUET_IO else {"python"},
        description=description,
    )


@dg.multi_asset(
    ins={"validated_trials": dg.AssetIn(metadata=ALL_PARTITIONS)},
    outs={
        "coverage": _out(
            "One row per slot of the experiment plan (or of the observed cells without a plan): "
            "healthy, missing, unhealthy, stale or duplicate, and the attempt that fills it.",
            name="coverage",
        ),
        "sandbox_parity": _out(
            "The same logical trial on Docker and Daytona: which artifact files, telemetry and "
            "outcomes differ (telemetry-presence differences block that backend's new data).",
            name="sandbox_parity",
        ),
        "review_report": _out(
            "The dataset review: per-trial verdicts after coverage and manual quarantine, the "
            "export decision (exported, or excluded with its reason) and the release verdict; "
            "the report (Blockers, Coverage, Evidence, Residual risk, verdict) as Markdown in the "
            "metadata and as report/review.md in the run roots' folder of the warehouse (linking "
            "the trial pages).",
            DATASET_IO,
        ),
    },
)
def dataset_review(
    context: dg.AssetExecutionContext,
    run_roots: RunRoots,
    validated_trials: PartitionTables,
) -> Iterator[dg.Output[Any]]:
    """Assemble the dataset review once over every job partition and give its three views,
    one at a time: each is written by its IO manager before the next is made, so the
    ``coverage`` and ``sandbox_parity`` frames are let go before the dataset review is
    pickled (at 100,000 trials they would be some 50 MB more at that step's peak)."""
    loaded = set(validated_trials)
    ds = _dataset(validated_trials, run_roots)  # lets go of each table once read
    expected = context.asset_partition_keys_for_input("validated_trials")
    ds.not_ingested = not_ingested(list(expected), loaded, run_roots.roots)
    if ds.not_ingested:
        context.log.warning(
            "job directories under the run roots without validated_trials: "
            + ", ".join(ds.not_ingested[:20])
        )
    yield _coverage(ds)
    yield _parity(ds)
    yield _report(ds, run_roots, local_warehouse(run_roots.roots))


def _coverage(ds: DatasetReview) -> dg.Output[pd.DataFrame]:
    rows = flat_frame((r.to_dict() for r in ds.coverage.rows), COVERAGE_COLUMNS)
    svg = coverage_svg(ds.coverage)
    return dg.Output(
        rows,
        output_name="coverage",
        metadata={
            "dagster/row_count": dg.MetadataValue.int(len(rows)),
            "summary": dg.MetadataValue.json(ds.summary()["coverage"]),
            "matrix": dg.MetadataValue.md(f"![coverage matrix]({svg_data_uri(svg)})"),
        },
    )


def _parity(ds: DatasetReview) -> dg.Output[pd.DataFrame]:
    rows = flat_frame((r.to_dict() for r in ds.parity.rows), PARITY_COLUMNS)
    pairs = len(ds.parity.pairs)
    # the frame holds the rows now: the report makes them again, once this frame is written
    # and let go (the two together were the step's peak at 100,000 trials)
    ds.forget_parity()
    blockers = int(rows["blocker"].sum()) if len(rows) else 0  # a column of every frame
    return dg.Output(
        rows,
        output_name="sandbox_parity",
        metadata={
            "dagster/row_count": dg.MetadataValue.int(len(rows)),
            "pairs": dg.MetadataValue.int(pairs),
            "blocking_differences": dg.MetadataValue.int(blockers),
        },
    )


# The report in the asset's metadata (the UI shows it; every event is kept in the instance):
# whole up to this many characters, else its head and where the whole report is.
REPORT_METADATA_CHARS = 100_000
PAGES_INDEX = "pages/index.html"  # the trial pages' index beside the report


def report_excerpt(md_path: Path, limit: int = REPORT_METADATA_CHARS) -> str:
    """The report at ``md_path`` for the metadata: whole, or cut at a line end within
    ``limit`` characters with a last line that says so and where the whole report is."""
    with md_path.open(encoding="utf-8") as fh:
        text = fh.read(limit + 1)
    if len(text) <= limit:
        return text
    head = text[: text.rfind("\n", 0, limit) + 1] or text[:limit]
    return head + f"\n_… the report goes on: the whole of it is `{md_path}` (report_path)._\n"


def ui_links(text: str, md_path: Path) -> str:
    """The report as the UI shows it: its link to the trial pages (relative in the file)
    made an address of the trial page server when ``bf-assets ui`` runs one."""
    url = pages_url(md_path.parent / PAGES_INDEX)
    return text.replace(f"]({PAGES_INDEX})", f"]({url})") if url else text


def _verdict_counts(ds: DatasetReview) -> dict[str, int]:
    """Trials per verdict after coverage and quarantine, every verdict present."""
    seen = Counter(str(t.verdict) for t in ds.trials)
    return {str(v): seen.get(str(v), 0) for v in Verdict}


def _report(ds: DatasetReview, run_roots: RunRoots, report_dir: Path) -> dg.Output[DatasetReview]:
    md_path, js_path = report_files(
        ds,
        report_dir,
        run_roots.report_context(),
        clean=False,
        links=[("Trial review pages (trial_pages)", PAGES_INDEX)],
    )
    decision = ds.decision
    return dg.Output(
        ds,
        output_name="review_report",
        metadata={
            "dagster/row_count": dg.MetadataValue.int(len(ds.trials)),
            "release_verdict": dg.MetadataValue.text(ds.release_verdict),
            "exported": dg.MetadataValue.int(len(decision.exported)),
            "excluded_by_reason": dg.MetadataValue.json(
                {k: v for k, v in decision.counts().items() if k != "exported"}
            ),
            **numeric_counts("decision", ds.decision.counts()),
            **numeric_counts("verdict", _verdict_counts(ds)),
            "summary": dg.MetadataValue.json(ds.summary()),
            "report": dg.MetadataValue.md(ui_links(report_excerpt(md_path), md_path)),
            "report_path": dg.MetadataValue.path(str(md_path)),
            "report_json": dg.MetadataValue.path(str(js_path)),
        },
    )
