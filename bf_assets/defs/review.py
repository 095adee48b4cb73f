"""Dataset-level review assets over every job partition: ``coverage``, ``sandbox_parity`` and
``review_report`` (per-trial verdicts and the release verdict), three views of one assembly
(a single multi-asset, so the dataset review is computed once per run).

The bodies rebuild the reviews from ``validated_trials`` and call the same core the CLI
uses (``bf_assets.dataset.assemble``), so the UI and ``bf-assets review`` agree.
"""

from pathlib import Path

import dagster as dg
import pandas as pd

from bf_assets.dataset.assemble import DatasetReview, assemble, report_markdown
from bf_assets.dataset.picture import coverage_svg, svg_data_uri
from bf_assets.defs.ingest import PARQUET_IO
from bf_assets.defs.resources import REPO_ROOT, RunRoots
from bf_assets.review.tables import VALIDATED_COLUMNS, reviews_from_frame, validated_frames

ALL_PARTITIONS = {"allow_missing_partitions": True}
REPORT_DIR = REPO_ROOT / "data" / "reports"


def _all(validated_trials: dict[str, pd.DataFrame]) -> pd.DataFrame:
    frames = [df for _, df in sorted(validated_trials.items()) if df is not None and not df.empty]
    return (
        pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=VALIDATED_COLUMNS)
    )


def _flat(rows: pd.DataFrame) -> pd.DataFrame:
    """Nested values as text, so the Parquet schema stays flat and stable."""
    for col in rows.columns:
        if rows[col].map(lambda v: isinstance(v, list | dict | tuple)).any():
            rows[col] = rows[col].map(str)
    return rows


def _dataset(validated_trials: dict[str, pd.DataFrame], run_roots: RunRoots) -> DatasetReview:
    reviews = reviews_from_frame(_all(validated_trials))
    return assemble(
        reviews, plan_path=run_roots.plan_path, quarantine_path=run_roots.quarantine_path
    )


def _out(description: str) -> dg.AssetOut:
    return dg.AssetOut(
        io_manager_key=PARQUET_IO,
        group_name="audit",
        kinds={"pandas", "parquet"},
        description=description,
    )


@dg.multi_asset(
    ins={"validated_trials": dg.AssetIn(metadata=ALL_PARTITIONS)},
    outs={
        "coverage": _out(
            "One row per slot of the experiment plan (or of the observed cells without a plan): "
            "healthy, missing, unhealthy, stale or duplicate, and the attempt that fills it."
        ),
        "sandbox_parity": _out(
            "The same logical trial on Docker and Daytona: which artifact files, telemetry and "
            "outcomes differ (telemetry-presence differences block that backend's new data)."
        ),
        "review_report": _out(
            "Per-trial verdicts after coverage and manual quarantine, and the release verdict; "
            "the report (Blockers, Coverage, Evidence, Residual risk, verdict) as Markdown in the "
            "metadata and in data/reports/review.md."
        ),
    },
)
def dataset_review(
    context: dg.AssetExecutionContext,
    run_roots: RunRoots,
    validated_trials: dict[str, pd.DataFrame],
) -> tuple[dg.Output[pd.DataFrame], dg.Output[pd.DataFrame], dg.Output[pd.DataFrame]]:
    """Assemble the dataset review once over every job partition and return its three views."""
    ds = _dataset(validated_trials, run_roots)
    return _coverage(ds), _parity(ds), _report(ds, run_roots)


def _coverage(ds: DatasetReview) -> dg.Output[pd.DataFrame]:
    rows = _flat(pd.DataFrame([r.to_dict() for r in ds.coverage.rows]))
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
    rows = _flat(
        pd.DataFrame([r.to_dict() for r in ds.parity.rows])
        if ds.parity.rows
        else pd.DataFrame(columns=["pair", "kind", "item", "docker", "daytona", "label", "blocker"])
    )
    blockers = int(rows["blocker"].sum()) if "blocker" in rows and len(rows) else 0
    return dg.Output(
        rows,
        output_name="sandbox_parity",
        metadata={
            "dagster/row_count": dg.MetadataValue.int(len(rows)),
            "pairs": dg.MetadataValue.int(len(ds.parity.pairs)),
            "blocking_differences": dg.MetadataValue.int(blockers),
        },
    )


def _report(ds: DatasetReview, run_roots: RunRoots) -> dg.Output[pd.DataFrame]:
    md = report_markdown(
        ds,
        run_roots.roots,
        plan_path=run_roots.plan_path,
        quarantine_path=run_roots.quarantine_path,
    )
    out_dir = Path(REPORT_DIR)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "review.md").write_text(md, encoding="utf-8")
    validated, _ = validated_frames(ds.trials)
    return dg.Output(
        validated,
        output_name="review_report",
        metadata={
            "dagster/row_count": dg.MetadataValue.int(len(validated)),
            "release_verdict": dg.MetadataValue.text(ds.release_verdict),
            "summary": dg.MetadataValue.json(ds.summary()),
            "report": dg.MetadataValue.md(md),
            "report_path": dg.MetadataValue.path(str(out_dir / "review.md")),
        },
    )
