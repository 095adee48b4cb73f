"""Ingest and gate assets, one partition per job directory.

``raw_trials``, ``validated_trials``, ``findings``, ``skill_audit`` and ``trial_audits`` are
one multi-asset (op ``ingest_trials``): the op finds its own partitions' trials and reads
each once, for its file inventory and its review
(``bf_assets.corpus.inventory.review_with_inventory``); the graph still shows
``raw_trials`` → the other four.  Any subset can be materialized (``raw_trials`` alone reads
the inventory only).  A run may cover several job partitions (a backfill's runs of up to
``BF_BACKFILL_PARTITIONS_PER_RUN`` partitions, the runs of ``bf-assets release`` and of a
scale-out's ranges of up to ``BF_INGEST_RUN_TRIALS`` trials): the trials of every partition
are reviewed in one batch, the Parquet IO manager writes one file per partition, and every
partition gets its own metadata.

The bodies only call the core (``bf_assets.ingest.discovery``, ``bf_assets.review.tables``,
``bf_assets.review``) and turn its results into materialization metadata.
"""

from collections import Counter
from collections.abc import Iterator, Mapping, Sequence

import dagster as dg
import orjson
import pandas as pd

from bf_assets.contract import Outcome, Severity, Verdict
from bf_assets.corpus.inventory import review_with_inventory
from bf_assets.corpus.summary import summarize
from bf_assets.defs.conventions import TABLE_COLUMNS, code_version, column_schema, owners
from bf_assets.defs.partitions import job_partitions
from bf_assets.defs.ranges import backfill_partitions_per_run
from bf_assets.defs.resources import RunRoots
from bf_assets.ingest.discovery import group_jobs, trials_in_jobs
from bf_assets.review.record import TrialReview
from bf_assets.review.tables import audit_frames, raw_frame, validated_frames

PARQUET_IO = "parquet_io_manager"
JOB_FINGERPRINT = "job_fingerprint"  # raw_trials partition metadata: the job dir as ingested
PREVIEW_ROWS = 10
PREVIEW_COLUMNS = ("rollout", "layout", "task_id", "model", "harness", "n_files")
RAW = "raw_trials"
REVIEWED = ("validated_trials", "findings", "skill_audit", "trial_audits")
Meta = dict[str, dg.MetadataValue]


def _counts(values: Mapping[str, int], vocabulary: type | None = None) -> dict[str, int]:
    """Counts with every value of ``vocabulary`` present (zeros included), in a stable order."""
    out = {str(v): 0 for v in vocabulary} if vocabulary is not None else {}
    for k, n in values.items():
        out[str(k)] = out.get(str(k), 0) + int(n)
    return out


def numeric_counts(prefix: str, counts: Mapping[str, int]) -> Meta:
    """One int metadata entry per value (``<prefix>/<value>``): numbers the UI plots over
    materializations, where a JSON blob is only text."""
    return {f"{prefix}/{k}": dg.MetadataValue.int(int(n)) for k, n in counts.items()}


def _n_read_findings(raw: pd.DataFrame) -> int:
    return sum(len(orjson.loads(s)) for s in raw["read_findings"].dropna() if s)


def _preview(raw: pd.DataFrame) -> str:
    """The first rows as a Markdown table (built directly: a table per partition of a
    100,000-trial release must cost next to nothing)."""
    if raw.empty:
        return "_no trials_"
    cols = [c for c in PREVIEW_COLUMNS if c in raw.columns]
    head = raw.loc[:, cols].head(PREVIEW_ROWS)

    def cell(v: object) -> str:
        text = "" if v is None or (isinstance(v, float) and v != v) else str(v)
        return text.replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += [
        "| " + " | ".join(cell(v) for v in row) + " |" for row in head.itertuples(index=False)
    ]
    return "\n".join(lines)


def _check_counts(findings: pd.DataFrame) -> dict[str, int]:
    """``{"CHECK (severity)": count}``, most frequent first (a plain count over two columns:
    cheap enough for every partition of a 100,000-trial release)."""
    if findings.empty:
        return {}
    counts = Counter(
        zip(findings["check"].astype(str), findings["severity"].astype(str), strict=True)
    )
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    return {f"{check} ({severity})": n for (check, severity), n in ranked}


def _raw_meta(raw: pd.DataFrame) -> Meta:
    return {
        "dagster/row_count": dg.MetadataValue.int(len(raw)),
        "by_layout": dg.MetadataValue.json(_counts(Counter(raw["layout"].astype(str)))),
        "read_findings": dg.MetadataValue.int(_n_read_findings(raw)),
        "preview": dg.MetadataValue.md(_preview(raw)),
    }


def _reviewed_meta(
    reviews: Sequence[TrialReview], tables: Mapping[str, pd.DataFrame], raw_rows: int
) -> dict[str, Meta]:
    """Metadata of the four reviewed tables of one partition."""
    validated, findings = tables["validated_trials"], tables["findings"]
    skills, audits = tables["skill_audit"], tables["trial_audits"]
    summary = summarize(reviews)
    loading = skills["task_skills_loading"].value_counts(dropna=False).to_dict()
    return {
        "validated_trials": {
            "dagster/row_count": dg.MetadataValue.int(len(validated)),
            "raw_rows": dg.MetadataValue.int(raw_rows),
            "by_outcome": dg.MetadataValue.json(_counts(summary["by_outcome"], Outcome)),
            "by_verdict": dg.MetadataValue.json(_counts(summary["by_verdict"], Verdict)),
            **numeric_counts("outcome", _counts(summary["by_outcome"], Outcome)),
            **numeric_counts("verdict", _counts(summary["by_verdict"], Verdict)),
            "healthy": dg.MetadataValue.int(summary["healthy"]),
            "training_ready": dg.MetadataValue.int(summary["training_ready"]),
            "release_verdict": dg.MetadataValue.text(summary["release_verdict"]),
            "findings_by_check": dg.MetadataValue.json(_check_counts(findings)),
        },
        "findings": {
            "dagster/row_count": dg.MetadataValue.int(len(findings)),
            "by_severity": dg.MetadataValue.json(
                _counts(summary["findings_by_severity"], Severity)
            ),
        },
        "skill_audit": {
            "dagster/row_count": dg.MetadataValue.int(len(skills)),
            "task_skills_loading": dg.MetadataValue.json(
                {str(k): int(v) for k, v in loading.items()}
            ),
            "by_status": dg.MetadataValue.json(
                _counts(skills["status"].fillna("none").value_counts().to_dict())
            ),
        },
        "trial_audits": {
            "dagster/row_count": dg.MetadataValue.int(len(audits)),
            "by_check": dg.MetadataValue.json(_check_counts(audits)),
        },
    }


def _split(df: pd.DataFrame, keys: Sequence[str]) -> dict[str, pd.DataFrame]:
    """The rows of each partition (its job key in the ``job`` column), in key order."""
    if len(keys) == 1:
        return {keys[0]: df}
    groups = dict(tuple(df.groupby("job", sort=False))) if len(df) else {}
    return {k: groups[k] if k in groups else df.iloc[0:0] for k in keys}


def _partition_meta(
    keys: Sequence[str],
    selected: set[str],
    tables: Mapping[str, pd.DataFrame],
    reviews: Sequence[TrialReview] | None,
) -> dict[str, dict[str, Meta]]:
    """``{asset: {partition: metadata}}`` for the selected assets."""
    split = {name: _split(df, keys) for name, df in tables.items()}
    by_job: dict[str, list[TrialReview]] = {k: [] for k in keys}
    for t in reviews or ():
        by_job.setdefault(t.ref.job_key, []).append(t)
    out: dict[str, dict[str, Meta]] = {name: {} for name in selected}
    for k in keys:
        raw_k = split[RAW][k]
        if RAW in selected:
            out[RAW][k] = _raw_meta(raw_k)
        if reviews is not None:
            part = {name: split[name][k] for name in REVIEWED}
            for name, meta in _reviewed_meta(by_job[k], part, len(raw_k)).items():
                if name in selected:
                    out[name][k] = meta
    return out


def _outs() -> dict[str, dg.AssetOut]:
    def out(name: str, group: str, description: str) -> dg.AssetOut:
        return dg.AssetOut(
            owners=owners(),
            code_version=code_version(__name__),
            metadata=column_schema(TABLE_COLUMNS[name]),
            io_manager_key=PARQUET_IO,
            group_name=group,
            kinds={"pandas", "parquet"},
            description=description,
            is_required=False,
        )

    outs = {
        RAW: out(
            RAW,
            "ingest",
            "Every trial of one job directory as read from disk: identity, layout, file "
            "inventory and read findings (one row per trial).",
        ),
        "validated_trials": out(
            "validated_trials",
            "gate",
            "One row per trial of the job after the gate: outcome, health, verdict, "
            "attribution and its findings.",
        ),
        "findings": out(
            "findings", "gate", "One row per finding (gate and audits) of the job's trials."
        ),
        "skill_audit": out(
            "skill_audit",
            "audit",
            "One row per trial: the harness's startup skill catalog, expected task skills "
            "and task_skills_loading.",
        ),
        "trial_audits": out(
            "trial_audits",
            "audit",
            "One row per audit finding: skills, no-skill leakage, reward hacking, verifier "
            "isolation, attribution, paths and provenance.",
        ),
    }
    return outs


@dg.multi_asset(
    name="ingest_trials",
    partitions_def=job_partitions,
    outs=_outs(),
    internal_asset_deps={
        RAW: set(),
        **{name: {dg.AssetKey(RAW)} for name in REVIEWED},
    },
    can_subset=True,
    # a backfill over many job partitions is several bounded runs (one per range of
    # ``BF_BACKFILL_PARTITIONS_PER_RUN`` partitions), as ``bf-assets release`` ingests
    backfill_policy=dg.BackfillPolicy.multi_run(backfill_partitions_per_run()),
)
def ingest_trials(
    context: dg.AssetExecutionContext, run_roots: RunRoots
) -> Iterator[dg.Output[pd.DataFrame]]:
    """Read every trial of the run's job partitions once: the raw inventory, then the review
    (the gate and every audit) and its tables: validated trials, findings, the skill audit
    and the audit findings."""
    keys = list(context.partition_keys)
    refs = trials_in_jobs(run_roots.roots, keys)
    found = {t.job_key for t in refs}
    for k in keys:
        if k not in found:
            context.log.warning(f"no trials found for job {k!r}")
    # What the sensor compares a job directory against, taken before the trials are read,
    # so an edit during the read is a change.
    watched = {job.key: job.fingerprint for job in group_jobs(refs)}
    selected = set(context.op_execution_context.selected_output_names)
    reviews: list[TrialReview] | None = None
    if selected == {RAW}:
        tables = {RAW: raw_frame(refs)}
    else:
        reviews, raw = review_with_inventory(refs, run_roots.review_options())
        validated, findings = validated_frames(reviews)
        skills, audits = audit_frames(reviews)
        tables = {
            RAW: raw,
            "validated_trials": validated,
            "findings": findings,
            "skill_audit": skills,
            "trial_audits": audits,
        }
    meta = _partition_meta(keys, selected, tables, reviews)
    reviews = None  # hold only the tables while they are written
    for key, fingerprint in watched.items():
        if RAW in meta and key in meta[RAW]:
            meta[RAW][key][JOB_FINGERPRINT] = dg.MetadataValue.text(fingerprint)
    for name in [RAW, *REVIEWED]:
        if name not in selected:
            continue
        if len(keys) == 1:
            yield dg.Output(tables[name], output_name=name, metadata=meta[name][keys[0]])
            continue
        for k, m in meta[name].items():
            context.add_asset_metadata(m, asset_key=dg.AssetKey(name), partition_key=k)
        yield dg.Output(tables[name], output_name=name)


# The five tables come from one op; both names stay importable (definitions, tests).
raw_trials = ingest_trials
validated_trials = ingest_trials
