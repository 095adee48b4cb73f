"""Building a release bundle: curated shards, the card, the report and the manifest in one
folder.

``build_bundle`` takes the dataset review (which decided what is exported) and a candidate
for each exported trial; it selects nothing.  It takes every row (built now, or built
already where its job partition was ingested; streamed, in ``rollout_id`` order), sets the
fields the dataset review decides (``review_verdict``, ``n_findings``, ``finding_checks``)
and writes the Parquet shards of each config; a trial whose row cannot be built, or whose
artifacts duplicate another exported trial's, goes back into the decision
(``DatasetReview.with_curation``), and the card, the review report (``report/``),
``meta/excluded.jsonl`` (every excluded trial with its reason, written a line at a time) and
``meta/manifest.json`` are rendered from that final decision, so all of them name the same
exported trials as the rows.  Then ``meta/checksums.sha256``, and the folder moves to
``<staging_root>/<release digest[:16]>``.  The folder is content-addressed: identical input
gives an identical folder, so publishing it again changes nothing.

Splits: every exported trial goes to the split of its task (``bf_assets.publish.splits``:
``train`` / ``test`` by task hash, fraction and seed from the options, else the plan, else
the defaults; a fraction of 0 gives one split), and so do its ``prime_sft`` and ``trl_sft``
rows.

The ``tasks`` config holds one row per exported task (in its task's split, ``task_id``
order), built from the task's first row in ``rollout_id`` order.

The release tag is written into the card (the load snippet pins it), so it cannot be
derived from a digest over the card itself: the bundle is first sealed with the card's tag
left as a placeholder, the tag is ``<prefix><YYYYMMDD-HHMMSS>-<that draft digest[:12]>``,
and the bundle is sealed again with the tag filled in (card and manifest).  The time is the
release's own (:func:`release_time`: the newest start or end of an exported trial, UTC, or
``BundleOptions.released_at``), never the wall clock, so tags sort by date and identical
input still gives an identical folder; every byte but the tag string is in the draft, so
equal tags still mean equal releases.
"""

from __future__ import annotations

import hashlib
import shutil
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from bf_assets.contract import ReleaseVerdict
from bf_assets.curate.candidate import Candidate
from bf_assets.curate.rows import prime_sft_row, review_fields, task_row, trl_sft_rows
from bf_assets.curate.schema import CONFIGS
from bf_assets.dataset.assemble import DatasetReview, assemble, reason_lines
from bf_assets.dataset.common import TrialKey, trial_key
from bf_assets.dataset.decide import CURATION_ERROR, DUPLICATE, Exclusion
from bf_assets.dataset.reportfiles import REPORT_JSON, REPORT_MD, ReportContext, report_files
from bf_assets.publish.card import LICENSE_PATH, CardFacts, render_card, render_license
from bf_assets.publish.changes import load_previous, release_changes
from bf_assets.publish.excluded import EXCLUDED_PATH, write_excluded
from bf_assets.publish.manifest import (
    CHECKSUMS_PATH,
    MANIFEST_PATH,
    FileRecord,
    build_manifest,
    checksums_text,
    release_digest,
    source_record,
)
from bf_assets.publish.rowbuild import RowSource, default_rows
from bf_assets.publish.shards import (
    MAX_SHARD_BYTES,
    ROW_GROUP_ROWS,
    ShardFile,
    ShardWriter,
    sha256_file,
)
from bf_assets.publish.splits import SplitPlan, assign_splits, resolve_spec
from bf_assets.redact.clean import CleanStats
from bf_assets.review.record import TrialReview

CARD_PATH = "README.md"
KEEP_STAGED = 5


@dataclass(slots=True)
class BundleOptions:
    configs: tuple[str, ...] = tuple(CONFIGS)
    split: str = "train"  # the training split (the only one when nothing is held out)
    test_split: str = "test"
    # Held-out tasks: None takes the plan's ``splits.test_fraction`` (else 0.2); 0 = one split.
    test_fraction: float | None = None
    split_seed: int | None = None  # None takes the plan's ``splits.seed`` (else 0)
    pretty_name: str = "Benchflow agent trajectories (bf-assets)"
    license: str = "other"
    repo_id: str | None = None
    plan_path: str | None = None
    tag_prefix: str = "release-"
    row_group_rows: int = ROW_GROUP_ROWS
    max_shard_bytes: int = MAX_SHARD_BYTES
    keep_staged: int = KEEP_STAGED
    # the manifest of the release this one follows (the card says what changed since)
    previous_manifest: str | None = None
    # the release time in its tag (ISO 8601); None: the newest time of its exported trials
    released_at: str | None = None


@dataclass(slots=True)
class Bundle:
    path: Path
    files: list[FileRecord]  # every published file, manifest and checksums included
    digest: str
    tag: str
    verdict: str
    rows: dict[str, int]
    exported: list[tuple[str, str, str]]  # (job, rollout, rollout_id)
    excluded: list[Exclusion]
    split_rows: dict[str, dict[str, int]] = field(default_factory=dict)  # config -> split -> rows
    stats: CleanStats = field(default_factory=CleanStats)
    dataset: DatasetReview | None = None  # the final decision (after curation outcomes)

    @property
    def manifest_sha256(self) -> str:
        return next(f.sha256 for f in self.files if f.path == MANIFEST_PATH)


_VERDICT_RANK = {v.value: i for i, v in enumerate(ReleaseVerdict)}  # worst first


def worst_verdict(*verdicts: str | None) -> str:
    return min((v for v in verdicts if v), key=_VERDICT_RANK.__getitem__)


def _file_record(root: Path, rel: str, **extra: Any) -> FileRecord:
    p = root / rel
    return FileRecord(rel, sha256_file(p), p.stat().st_size, **extra)


def _plan_sha(path: str | None) -> str | None:
    if not path or not Path(path).is_file():
        return None
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _utc(text: Any) -> datetime | None:
    """An ISO 8601 timestamp as an aware UTC datetime (naive ones read as UTC), or None."""
    if not isinstance(text, str) or not text.strip():
        return None
    try:
        t = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    return (t if t.tzinfo else t.replace(tzinfo=UTC)).astimezone(UTC)


def release_time(times: Sequence[Any], released_at: str | None = None) -> str:
    """``YYYYMMDD-HHMMSS`` (UTC) of a release: ``released_at`` when given, else the newest
    of ``times`` (the exported trials' starts and ends); zeros when none is a timestamp."""
    given = _utc(released_at)
    parsed = [t for t in map(_utc, times) if t is not None]
    newest = given or (max(parsed) if parsed else None)
    return newest.strftime("%Y%m%d-%H%M%S") if newest else "00000000-000000"


def release_tag(prefix: str, time: str, digest: str) -> str:
    """``<prefix><YYYYMMDD-HHMMSS>-<digest[:12]>``: tags of one prefix sort by release time."""
    return f"{prefix}{time}-{digest[:12]}"


def _write_rows(
    tmp: Path,
    selected: list[Candidate],
    opts: BundleOptions,
    stats: CleanStats,
    splits: SplitPlan,
    outcomes: RowSource,
) -> tuple[
    dict[str, dict[str, list[ShardFile]]],
    list[dict[str, Any]],
    list[dict[str, Any]],
    dict[TrialKey, tuple[str, str]],
    list[Any],
]:
    writers = {
        (c, split): ShardWriter(
            tmp,
            c,
            split,
            row_group_rows=opts.row_group_rows,
            max_shard_bytes=opts.max_shard_bytes,
        )
        for c in opts.configs
        for split in splits.names
    }
    configs = set(opts.configs)
    sources: list[dict[str, Any]] = []
    card_rows: list[dict[str, Any]] = []
    failed: dict[TrialKey, tuple[str, str]] = {}
    seen: dict[str, Candidate] = {}
    tasks: dict[str, tuple[str, dict[str, Any]]] = {}  # task id -> (split, tasks row)
    times: list[Any] = []
    ordered = sorted(selected, key=lambda c: (c.rollout_id, c.job, c.rollout))
    for cand, built in outcomes(ordered, "trl_sft" in configs):
        rid = cand.rollout_id
        if rid in seen:
            first = seen[rid]
            failed[cand.key] = (DUPLICATE, f"same artifacts as {first.job}/{first.rollout}")
            continue
        if isinstance(built, str):
            failed[cand.key] = (CURATION_ERROR, built)
            continue
        row, steps = built.row, built.steps
        row.update(review_fields(cand))  # the dataset review's word, whenever the row was built
        stats.add(built.stats)
        seen[rid] = cand
        split = splits.split_of(cand.slot[0])
        if "rollouts" in configs:
            writers["rollouts", split].write(row)
        if "prime_sft" in configs:
            writers["prime_sft", split].write(prime_sft_row(row))
        if "trl_sft" in configs:
            for r in trl_sft_rows(row, (orjson.loads(b) for b in steps)):
                writers["trl_sft", split].write(r)
        if "tasks" in configs and row["task_id"] not in tasks:
            tasks[row["task_id"]] = (split, task_row(row))
        times += [row["started_at"], row["finished_at"]]
        sources.append(source_record(cand, rid, row["results_sha256"]))
        card_rows.append(
            {k: row[k] for k in ("task_id", "harness", "model", "skill_mode", "outcome")}
        )
    for _, (split, trow) in sorted(tasks.items()):
        writers["tasks", split].write(trow)
    shards: dict[str, dict[str, list[ShardFile]]] = {c: {} for c in opts.configs}
    for (c, split), w in writers.items():
        shards[c][split] = w.close()
    return shards, sources, card_rows, failed, times


def _year(sources: Sequence[dict[str, Any]]) -> str | None:
    """Year of the newest exported trial's start (``YYYY…`` timestamps), for the citation."""
    years = [str(s.get("started_at") or "")[:4] for s in sources]
    years = [y for y in years if len(y) == 4 and y.isdigit()]
    return max(years) if years else None


def build_bundle(
    dataset: DatasetReview,
    candidates: Mapping[TrialKey, Candidate],
    staging_root: str | Path,
    options: BundleOptions | None = None,
    *,
    report: ReportContext | None = None,
    not_ingested: Sequence[str] = (),
    outcomes: RowSource = default_rows,
) -> Bundle:
    """Curate the trials ``dataset`` exports (``candidates[key]`` for each) into a
    content-addressed release folder under ``staging_root``; ``outcomes`` gives each one's
    row (built now, or read back from where its partition built it:
    :class:`~bf_assets.publish.rowbuild.StoredRows`)."""
    opts = options or BundleOptions()
    root = Path(staging_root)
    root.mkdir(parents=True, exist_ok=True)
    tmp = root / f".tmp-{uuid.uuid4().hex}"
    tmp.mkdir()
    try:
        selected: list[Candidate] = []
        missing: dict[TrialKey, tuple[str, str]] = {}
        for d in dataset.decision.exported:
            cand = candidates.get(d.key)
            if cand is None:
                missing[d.key] = (CURATION_ERROR, "the trial's files are not available")
            else:
                selected.append(cand)
        stats = CleanStats()
        spec = resolve_spec(
            test_fraction=opts.test_fraction,
            seed=opts.split_seed,
            plan=dataset.plan,
            train=opts.split,
            test=opts.test_split,
        )
        splits = assign_splits((str(c.slot[0]) for c in selected), spec)
        shards, sources, card_rows, failed, times = _write_rows(
            tmp, selected, opts, stats, splits, outcomes
        )
        final = dataset.with_curation({**missing, **failed})
        excluded = final.decision.excluded
        split_rows = {
            c: {split: sum(s.rows for s in files) for split, files in per.items()}
            for c, per in shards.items()
        }
        rows = {c: sum(per.values()) for c, per in split_rows.items()}
        verdict = worst_verdict(
            final.release_verdict,
            ReleaseVerdict.PUBLISHABLE_WITH_QUARANTINES.value if not_ingested else None,
        )
        reasons = reason_lines(final.assessment.decisive())
        jobs = sorted({d.job for d in final.decision.decisions})
        split_doc = splits.to_dict()
        changes = release_changes(load_previous(opts.previous_manifest), sources, excluded)
        facts = CardFacts(
            pretty_name=opts.pretty_name,
            license=opts.license,
            verdict=verdict,
            configs=rows,
            rows=card_rows,
            excluded=excluded,
            stats=stats,
            jobs=jobs,
            source_refs=sorted({s["source_ref"] for s in sources if s.get("source_ref")}),
            repo_id=opts.repo_id,
            not_ingested=list(not_ingested),
            dataset_reasons=reasons,
            decisions=[e.to_dict() for e in final.entries],
            split_files={
                c: {split: [f.path for f in files] for split, files in per.items()}
                for c, per in shards.items()
            },
            split_rows=split_rows,
            splits=split_doc,
            license_file=LICENSE_PATH if opts.license == "other" else None,
            year=_year(sources),
            changes=changes,
            results=final.results(),
        )
        report_files(final, tmp, report or ReportContext(), clean=True)
        write_excluded(tmp / EXCLUDED_PATH, excluded)
        content = [
            _file_record(tmp, s.path, config=s.config, split=s.split, rows=s.rows)
            for c in opts.configs
            for split in splits.names
            for s in shards[c][split]
        ]
        facts = replace(
            facts,
            split_bytes={
                c: {
                    split: sum(r.bytes for r in content if (r.config, r.split) == (c, split))
                    for split in splits.names
                }
                for c in opts.configs
            },
        )
        if facts.license_file:
            (tmp / facts.license_file).write_text(render_license(facts), encoding="utf-8")
            content.append(_file_record(tmp, facts.license_file))
        content += [_file_record(tmp, p) for p in (REPORT_MD, REPORT_JSON, EXCLUDED_PATH)]

        def seal(card: CardFacts) -> tuple[list[FileRecord], str]:
            """Card, manifest and checksums over ``content``; the release digest."""
            (tmp / CARD_PATH).write_text(render_card(card), encoding="utf-8")
            files = [*content, _file_record(tmp, CARD_PATH)]
            manifest = build_manifest(
                verdict=verdict,
                files=files,
                configs=split_rows,
                sources=sources,
                excluded=excluded,
                stats=stats,
                jobs=jobs,
                plan_sha256=_plan_sha(opts.plan_path),
                not_ingested=list(not_ingested),
                dataset_verdict=final.release_verdict,
                dataset_reasons=reasons,
                splits=split_doc,
                release_tag=card.tag,
                changes=changes,
            )
            (tmp / MANIFEST_PATH).parent.mkdir(parents=True, exist_ok=True)
            (tmp / MANIFEST_PATH).write_bytes(manifest)
            files.append(_file_record(tmp, MANIFEST_PATH))
            (tmp / CHECKSUMS_PATH).write_bytes(checksums_text((f.path, f.sha256) for f in files))
            files.append(_file_record(tmp, CHECKSUMS_PATH))
            return files, release_digest((f.path, f.sha256) for f in files)

        _, draft = seal(facts)
        tag = release_tag(opts.tag_prefix, release_time(times, opts.released_at), draft)
        files, digest = seal(replace(facts, tag=tag))
        final_dir = root / digest[:16]
        same = final_dir / MANIFEST_PATH
        if same.is_file() and same.read_bytes() == (tmp / MANIFEST_PATH).read_bytes():
            pass  # the same release is staged already (content-addressed): keep that one
        else:
            if final_dir.exists():
                shutil.rmtree(final_dir)
            tmp.replace(final_dir)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    _prune(root, keep=opts.keep_staged, current=final_dir)
    return Bundle(
        path=final_dir,
        files=files,
        digest=digest,
        tag=tag,
        verdict=verdict,
        rows=rows,
        split_rows=split_rows,
        exported=[(s["job"], s["rollout"], s["rollout_id"]) for s in sources],
        excluded=excluded,
        stats=stats,
        dataset=final,
    )


STALE_TMP_SECONDS = 6 * 3600  # a build that old was killed: its folder is a leftover


def _prune(root: Path, *, keep: int, current: Path) -> None:
    """Keep the newest ``keep`` bundles; clear temporary folders of builds killed long ago
    (a build still running elsewhere is younger than ``STALE_TMP_SECONDS``)."""
    now = time.time()
    for p in root.glob(".tmp-*"):
        try:
            if now - p.stat().st_mtime > STALE_TMP_SECONDS:
                shutil.rmtree(p, ignore_errors=True)
        except OSError:
            continue
    staged = [
        p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".") and p != current
    ]
    staged.sort(key=lambda p: p.stat().st_mtime, reverse=True)
    for old in staged[max(0, keep - 1) :]:
        shutil.rmtree(old, ignore_errors=True)


def bundle_reviews(
    reviews: Sequence[TrialReview],
    staging_root: str | Path,
    options: BundleOptions | None = None,
    *,
    plan_path: str | None = None,
    quarantine_path: str | None = None,
    report: ReportContext | None = None,
) -> Bundle:
    """Reviewed trials to a release bundle without Dagster: the dataset review decides, then
    :func:`build_bundle` curates what it exports (candidates from the reviews themselves)."""
    ds, candidates = review_exports(reviews, plan_path=plan_path, quarantine_path=quarantine_path)
    return build_bundle(ds, candidates, staging_root, options, report=report)


def review_exports(
    reviews: Sequence[TrialReview],
    *,
    plan_path: str | None = None,
    quarantine_path: str | None = None,
) -> tuple[DatasetReview, dict[TrialKey, Candidate]]:
    """The dataset review of ``reviews`` (in a canonical order, so the release does not
    depend on the order they come in) and a candidate for each trial it exports."""
    ordered = sorted(reviews, key=lambda t: (t.ref.job_key, t.ref.rel_path, t.ref.rollout))
    ds = assemble(ordered, plan_path=plan_path, quarantine_path=quarantine_path)
    exported = set(ds.exports)
    candidates = {
        key: Candidate.from_review(t) for t in ds.trials if (key := trial_key(t)) in exported
    }
    return ds, candidates
