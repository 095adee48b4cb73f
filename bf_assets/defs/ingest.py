"""Ingest and gate assets, one partition per job directory.

The bodies only call the core (``bf_assets.ingest.discovery``, ``bf_assets.tables``,
``bf_assets.review``) and turn its results into materialization metadata.
"""

from collections.abc import Mapping

import dagster as dg
import orjson
import pandas as pd

from bf_assets.contract import Outcome, Severity, Verdict
from bf_assets.defs.partitions import job_partitions
from bf_assets.defs.resources import RunRoots
from bf_assets.ingest.discovery import trials_of_job
from bf_assets.review import review_refs, summarize
from bf_assets.tables import audit_frames, raw_frame, validated_frames

PARQUET_IO = "parquet_io_manager"
PREVIEW_ROWS = 10
PREVIEW_COLUMNS = ("rollout", "layout", "task_id", "model", "harness", "n_files")


def _counts(values: Mapping[str, int], vocabulary: type | None = None) -> dict[str, int]:
    """Counts with every value of ``vocabulary`` present (zeros included), in a stable order."""
    out = {str(v): 0 for v in vocabulary} if vocabulary is not None else {}
    for k, n in values.items():
        out[str(k)] = out.get(str(k), 0) + int(n)
    return out


def _n_read_findings(raw: pd.DataFrame) -> int:
    return sum(len(orjson.loads(s)) for s in raw["read_findings"].dropna() if s)


def _preview(raw: pd.DataFrame) -> str:
    if raw.empty:
        return "_no trials_"
    cols = [c for c in PREVIEW_COLUMNS if c in raw.columns]
    return raw.loc[:, cols].head(PREVIEW_ROWS).to_markdown(index=False)


def _checks_table(findings: pd.DataFrame) -> str:
    if findings.empty:
        return "_no findings_"
    table = (
        findings.groupby(["check", "severity"], sort=True)
        .size()
        .reset_index(name="count")
        .sort_values(["count", "check"], ascending=[False, True])
    )
    return table.to_markdown(index=False)


@dg.asset(
    partitions_def=job_partitions,
    io_manager_key=PARQUET_IO,
    group_name="ingest",
    kinds={"pandas", "parquet"},
)
def raw_trials(context: dg.AssetExecutionContext, run_roots: RunRoots) -> dg.Output[pd.DataFrame]:
    """Every trial of one job directory as read from disk: identity, layout, file inventory
    and read findings (one row per trial)."""
    refs = trials_of_job(run_roots.roots, context.partition_key)
    if not refs:
        context.log.warning(f"no trials found for job {context.partition_key!r}")
    df = raw_frame(refs)
    return dg.Output(
        df,
        metadata={
            "dagster/row_count": dg.MetadataValue.int(len(df)),
            "by_layout": dg.MetadataValue.json(_counts(df["layout"].value_counts().to_dict())),
            "read_findings": dg.MetadataValue.int(_n_read_findings(df)),
            "preview": dg.MetadataValue.md(_preview(df)),
        },
    )


@dg.multi_asset(
    partitions_def=job_partitions,
    outs={
        "validated_trials": dg.AssetOut(
            io_manager_key=PARQUET_IO,
            group_name="gate",
            kinds={"pandas", "parquet"},
            description=(
                "One row per trial of the job after the gate: outcome, health, verdict, "
                "attribution and its findings."
            ),
        ),
        "findings": dg.AssetOut(
            io_manager_key=PARQUET_IO,
            group_name="gate",
            kinds={"pandas", "parquet"},
            description="One row per finding (gate and audits) of the job's trials.",
        ),
        "skill_audit": dg.AssetOut(
            io_manager_key=PARQUET_IO,
            group_name="audit",
            kinds={"pandas", "parquet"},
            description=(
                "One row per trial: the harness's startup skill catalog, expected task skills "
                "and task_skills_loading."
            ),
        ),
        "trial_audits": dg.AssetOut(
            io_manager_key=PARQUET_IO,
            group_name="audit",
            kinds={"pandas", "parquet"},
            description=(
                "One row per audit finding: skills, no-skill leakage, reward hacking, verifier "
                "isolation, attribution, paths and provenance."
            ),
        ),
    },
)
def validated_trials(
    context: dg.AssetExecutionContext, run_roots: RunRoots, raw_trials: pd.DataFrame
) -> tuple[
    dg.Output[pd.DataFrame],
    dg.Output[pd.DataFrame],
    dg.Output[pd.DataFrame],
    dg.Output[pd.DataFrame],
]:
    """Review every trial of the job (the gate, then every audit: one pass over each trial's
    files) and return the validated table, its findings, the skill audit and the audit
    findings."""
    refs = trials_of_job(run_roots.roots, context.partition_key)
    reviews = review_refs(refs, run_roots.review_options())
    summary = summarize(reviews)
    validated, findings = validated_frames(reviews)
    skills, audits = audit_frames(reviews)
    if len(raw_trials) != len(validated):
        context.log.warning(
            f"raw_trials has {len(raw_trials)} rows but {len(validated)} trials were reviewed: "
            "the job directory changed since raw_trials was materialized"
        )
    validated_meta = {
        "dagster/row_count": dg.MetadataValue.int(len(validated)),
        "raw_rows": dg.MetadataValue.int(len(raw_trials)),
        "by_outcome": dg.MetadataValue.json(_counts(summary["by_outcome"], Outcome)),
        "by_verdict": dg.MetadataValue.json(_counts(summary["by_verdict"], Verdict)),
        "healthy": dg.MetadataValue.int(summary["healthy"]),
        "training_ready": dg.MetadataValue.int(summary["training_ready"]),
        "release_verdict": dg.MetadataValue.text(summary["release_verdict"]),
        "findings_by_check": dg.MetadataValue.md(_checks_table(findings)),
    }
    findings_meta = {
        "dagster/row_count": dg.MetadataValue.int(len(findings)),
        "by_severity": dg.MetadataValue.json(_counts(summary["findings_by_severity"], Severity)),
    }
    loading = skills["task_skills_loading"].value_counts(dropna=False).to_dict()
    skills_meta = {
        "dagster/row_count": dg.MetadataValue.int(len(skills)),
        "task_skills_loading": dg.MetadataValue.json({str(k): int(v) for k, v in loading.items()}),
        "by_status": dg.MetadataValue.json(
            _counts(skills["status"].fillna("none").value_counts().to_dict())
        ),
    }
    audits_meta = {
        "dagster/row_count": dg.MetadataValue.int(len(audits)),
        "by_check": dg.MetadataValue.md(_checks_table(audits)),
    }
    return (
        dg.Output(validated, output_name="validated_trials", metadata=validated_meta),
        dg.Output(findings, output_name="findings", metadata=findings_meta),
        dg.Output(skills, output_name="skill_audit", metadata=skills_meta),
        dg.Output(audits, output_name="trial_audits", metadata=audits_meta),
    )
