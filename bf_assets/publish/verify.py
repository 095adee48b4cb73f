"""Re-verifying a release bundle before anything is published.

:func:`verify_bundle` trusts nothing the curation step did: it re-hashes every file against
the manifest, refuses files the manifest does not list, re-reads every Parquet shard and
runs :func:`bf_assets.curate.scan.scan_row` on every row, scans the card and the manifest,
and (given the reviewed trials) re-runs the selection to prove every row comes from the
newest exportable attempt of its slot.  The blocking asset checks and ``published_dataset``
both call it, so the gate holds even for a run that selects only the publish step.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import pyarrow.parquet as pq

from bf_assets.curate.scan import (
    NOT_READY,
    PUBLISH_CHECKS,
    SCHEMA,
    TextCache,
    scan_row,
    scan_text,
    scan_value,
)
from bf_assets.curate.schema import CONFIGS, DEFAULT_CONFIG, arrow_schema
from bf_assets.curate.select import Candidate, select_exports
from bf_assets.findings import Finding, finding
from bf_assets.publish.bundle import release_verdict
from bf_assets.publish.manifest import CHECKSUMS_PATH, MANIFEST_PATH
from bf_assets.publish.shards import sha256_file

VERDICT_CHECK = "release_verdict_not_not_publishable"
MAX_FINDINGS = 50
SCAN_BATCH_ROWS = 4


@dataclass(slots=True)
class GateReport:
    findings: dict[str, list[Finding]] = field(
        default_factory=lambda: {c: [] for c in PUBLISH_CHECKS}
    )
    rows: dict[str, int] = field(default_factory=dict)
    n_excluded: int = 0
    verdict: str = "not_publishable"

    def add(self, f: Finding) -> None:
        bucket = self.findings.setdefault(f.check, [])
        if len(bucket) < MAX_FINDINGS:
            bucket.append(f)

    def extend(self, fs: Sequence[Finding]) -> None:
        for f in fs:
            self.add(f)

    def passed(self, check: str) -> bool:
        if check == VERDICT_CHECK:
            return self.verdict != "not_publishable"
        return not self.findings.get(check)

    @property
    def failed(self) -> list[str]:
        ids = [c for c in PUBLISH_CHECKS if not self.passed(c)]
        return ids + ([VERDICT_CHECK] if not self.passed(VERDICT_CHECK) else [])

    @property
    def ok(self) -> bool:
        return not self.failed

    def summary(self) -> str:
        if self.ok:
            return f"release verdict {self.verdict}; every publish check passed"
        parts = [
            f"{c} ({len(self.findings.get(c, []))})" for c in self.failed if c != VERDICT_CHECK
        ]
        return f"release verdict {self.verdict}; failed: {', '.join(parts) or VERDICT_CHECK}"


def _load_manifest(bundle: Path, report: GateReport) -> dict[str, Any] | None:
    try:
        doc = orjson.loads((bundle / MANIFEST_PATH).read_bytes())
    except (OSError, orjson.JSONDecodeError) as exc:
        report.add(
            finding(SCHEMA, f"{MANIFEST_PATH} is missing or not JSON: {exc}", file=MANIFEST_PATH)
        )
        return None
    if not isinstance(doc, dict) or not isinstance(doc.get("files"), list):
        report.add(finding(SCHEMA, f"{MANIFEST_PATH} has no file list", file=MANIFEST_PATH))
        return None
    report.extend(scan_value(doc, MANIFEST_PATH))
    return doc


def _check_files(
    bundle: Path, manifest: dict[str, Any], report: GateReport
) -> list[dict[str, Any]]:
    listed = {str(f.get("path")): f for f in manifest["files"] if isinstance(f, dict)}
    present = {
        p.relative_to(bundle).as_posix() for p in bundle.rglob("*") if p.is_file() or p.is_symlink()
    }
    for rel in sorted(present - set(listed) - {MANIFEST_PATH, CHECKSUMS_PATH}):
        report.add(finding(SCHEMA, f"{rel} is in the bundle but not in the manifest", file=rel))
    for rel, rec in sorted(listed.items()):
        p = bundle / rel
        if p.is_symlink() or not p.is_file():
            report.add(finding(SCHEMA, f"{rel} is listed in the manifest but missing", file=rel))
        elif sha256_file(p) != rec.get("sha256") or p.stat().st_size != rec.get("bytes"):
            report.add(finding(SCHEMA, f"{rel} does not match its manifest checksum", file=rel))
    return [listed[r] for r in sorted(listed) if r.startswith("data/") and r in present]


def _scan_shard(
    bundle: Path, rec: dict[str, Any], report: GateReport, cache: TextCache
) -> list[dict[str, Any]]:
    """Scan one shard; return the ``(job, rollout, rollout_id, …)`` keys of its rows."""
    rel, config = str(rec["path"]), rec.get("config")
    if config not in CONFIGS or not rel.startswith(f"data/{config}/"):
        report.add(finding(SCHEMA, f"{rel} is not a shard of a known config", file=rel))
        return []
    try:
        pf = pq.ParquetFile(bundle / rel)
    except Exception as exc:  # pyarrow raises several types for a corrupt file
        report.add(finding(SCHEMA, f"{rel} is not a readable Parquet file: {exc}", file=rel))
        return []
    expected = arrow_schema(config)
    if not pf.schema_arrow.equals(expected, check_metadata=False):
        report.add(finding(SCHEMA, f"{rel} does not have the published {config} schema", file=rel))
        return []
    keys = []
    n = 0
    for batch in pf.iter_batches(batch_size=SCAN_BATCH_ROWS):
        for row in batch.to_pylist():
            n += 1
            report.extend(scan_row(row, config, where=f"{rel} row {n}", cache=cache))
            keys.append({k: row.get(k) for k in ("rollout_id", "job", "rollout")})
    if n != rec.get("rows"):
        report.add(
            finding(SCHEMA, f"{rel} has {n} rows, the manifest says {rec.get('rows')}", file=rel)
        )
    report.rows[config] = report.rows.get(config, 0) + n
    return [{**k, "config": config, "file": rel} for k in keys]


def _cross_check(
    keys: list[dict[str, Any]], candidates: Sequence[Candidate] | None, report: GateReport
) -> None:
    main = [k for k in keys if k["config"] == DEFAULT_CONFIG]
    ids = {k["rollout_id"] for k in main}
    for k in keys:
        if k["config"] != DEFAULT_CONFIG and k["rollout_id"] not in ids:
            report.add(
                finding(
                    NOT_READY,
                    f"{k['file']}: rollout {k['rollout_id']} is not an exported rollout",
                    file=k["file"],
                )
            )
    if candidates is None:
        return
    selected, excluded = select_exports(candidates)
    allowed = {(c.job, c.rollout): c.rollout_id for c in selected}
    for k in main:
        key = (k["job"], k["rollout"])
        if key not in allowed:
            report.add(
                finding(
                    NOT_READY,
                    f"{k['file']}: {key[0]}/{key[1]} is not the newest exportable attempt of its slot",
                    file=k["file"],
                )
            )
        elif allowed[key] != k["rollout_id"]:
            report.add(
                finding(
                    NOT_READY,
                    f"{k['file']}: {key[0]}/{key[1]} changed since it was reviewed",
                    file=k["file"],
                )
            )
    report.n_excluded = max(report.n_excluded, len(candidates) - len(main))


def verify_bundle(
    bundle_dir: str | Path,
    candidates: Sequence[Candidate] | None = None,
    dataset_verdict: str | None = None,
) -> GateReport:
    """Every ``PUBLISH_*`` check and the release verdict for the bundle on disk."""
    bundle = Path(bundle_dir)
    report = GateReport()
    manifest = _load_manifest(bundle, report)
    if manifest is None:
        return report
    shards = _check_files(bundle, manifest, report)
    for rel in ("README.md", CHECKSUMS_PATH):
        p = bundle / rel
        if p.is_file():
            report.extend(scan_text(p.read_text(encoding="utf-8", errors="replace"), rel))
        else:
            report.add(finding(SCHEMA, f"{rel} is missing", file=rel))
    cache: TextCache = {}  # text repeated across steps, rows and configs is scanned once
    keys = [k for rec in shards for k in _scan_shard(bundle, rec, report, cache)]
    report.n_excluded = sum(
        len(v) for k in ("excluded", "jobs_not_ingested") if isinstance(v := manifest.get(k), list)
    )
    _cross_check(keys, candidates, report)
    problems = sum(len(v) for v in report.findings.values())
    report.verdict = release_verdict(
        report.rows.get(DEFAULT_CONFIG, 0), report.n_excluded, problems, dataset_verdict
    )
    return report
