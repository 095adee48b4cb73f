"""Re-verifying a release bundle before anything is published.

:func:`verify_bundle` trusts nothing the curation step did: it re-hashes every file against
the manifest, refuses files the manifest does not list, re-reads every Parquet shard and runs
:func:`bf_assets.curate.scan.scan_row` on every row (on every core for a large bundle:
:mod:`bf_assets.publish.shardscan`), scans the card, the report, the manifest, the excluded
trials (``meta/excluded.jsonl``, a line at a time) and every other file the manifest lists,
each Markdown file also as it renders (its backslash escapes undone) and every payload
embedded in any of them (a ``data:`` URI such as the report's coverage picture: decoded,
its XML entities too, and scanned like text), and (given the
dataset review) proves the rows are exactly the trials the review decided to export: none
more, and none fewer than the curation outcomes the excluded trials record (``duplicate``,
``curation error``), each row's artifacts unchanged since the review, every trial the
decision excludes listed with its reason (line for line, none more), and the manifest's
release verdict the one that decision gives.  The blocking asset checks and ``published_dataset``
both call it, so the gate holds even for a run that selects only the publish step.

JSON-typed values (``schema.JSON``) come back from a shard as JSON text: ``scan_row`` parses
the JSON columns itself; the tool-call ``arguments`` inside message lists are decoded here
and scanned as values too (keys and every string), and one that is not a JSON object is a
``PUBLISH_SCHEMA`` finding (``datasets`` could not decode it into the dict trainers need).
"""

from __future__ import annotations

import base64
import binascii
import html
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from itertools import zip_longest
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import orjson

from bf_assets.curate.scan import (
    NOT_READY,
    PUBLISH_CHECKS,
    SCHEMA,
    TextCache,
    scan_text,
    scan_value,
    scan_values,
)
from bf_assets.curate.schema import DEFAULT_CONFIG
from bf_assets.dataset.assemble import DatasetReview, reason_lines
from bf_assets.dataset.common import TrialKey, show_key
from bf_assets.dataset.decide import CURATION_REASONS, Decision
from bf_assets.dataset.reportmarkup import markdown_unescaped
from bf_assets.findings import Finding, finding
from bf_assets.publish.bundle import review_exports, worst_verdict
from bf_assets.publish.excluded import (
    EXCLUDED_PATH,
    excluded_line,
    pointed_count,
    pointed_path,
    read_excluded,
)
from bf_assets.publish.manifest import CHECKSUMS_PATH, MANIFEST_PATH
from bf_assets.publish.shards import sha256_file
from bf_assets.publish.shardscan import RowKey, scan_shards
from bf_assets.redact.clean import Cleaner
from bf_assets.redact.scan_memo import ScanMemo
from bf_assets.review.record import TrialReview

VERDICT_CHECK = "release_is_publishable"
MAX_FINDINGS = 50


@dataclass(slots=True)
class GateReport:
    findings: dict[str, list[Finding]] = field(
        default_factory=lambda: {c: [] for c in PUBLISH_CHECKS}
    )
    rows: dict[str, int] = field(default_factory=dict)
    n_excluded: int = 0
    verdict: str = "not_publishable"
    reasons: list[str] = field(default_factory=list)  # the decisive reasons of the verdict
    coverage: dict[str, object] = field(default_factory=dict)  # ratio, floor, slots

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
        why = f" because: {'; '.join(self.reasons)}" if self.reasons else ""
        failed = f"; failed: {', '.join(parts)}" if parts else ""
        return f"release verdict {self.verdict}{why}{failed}"


_SOURCES_OPEN = b'  "source_trials": ['
_LIST_CLOSE = (b"  ],", b"  ]")
_PART_START, _PART_ENDS = b"    {", (b"    }", b"    },")


class _NotInLayout(Exception):
    """A document is not laid out as this package writes it: it is parsed whole."""


def _list_parts(path: Path, opening: bytes, out: dict[str, Any]) -> Iterator[Any]:
    """A JSON document written by orjson with two-space indentation, a part at a time: each
    object of the top-level list that opens with the line ``opening``, then the rest of the
    document, which is also left in ``out["doc"]`` (without that list; the whole document
    when it has no such line).  ``out["last"]`` says whether the list was the document's
    last key.  The list's objects are never all in memory.  :class:`_NotInLayout` when the
    file is laid out otherwise."""
    head: list[bytes] = []
    tail: list[bytes] = []
    part: list[bytes] | None = None
    state = "head"
    with path.open("rb") as fh:
        for raw in fh:
            line = raw.rstrip(b"\n")
            if state == "head":
                if line == opening:
                    state = "parts"
                else:
                    head.append(line)
            elif state == "parts":
                if part is None:
                    if line in _LIST_CLOSE:
                        state = "tail" if line.endswith(b",") else "last"
                    elif line == _PART_START:
                        part = [line]
                    else:
                        raise _NotInLayout
                else:
                    part.append(line)
                    if line in _PART_ENDS:
                        try:
                            yield orjson.loads(b"\n".join(part).rstrip(b","))
                        except orjson.JSONDecodeError:
                            raise _NotInLayout from None
                        part = None
            else:
                tail.append(line)
    if state == "parts":
        raise _NotInLayout
    if state == "last" and head:  # the list was the last key: no comma before it
        head[-1] = head[-1].rstrip(b",")
    try:
        doc = orjson.loads(b"\n".join(head + tail))
    except orjson.JSONDecodeError:
        raise _NotInLayout from None
    if not isinstance(doc, dict):
        raise _NotInLayout
    out["doc"], out["last"] = doc, state == "last"
    yield doc


def _manifest_parts(path: Path, out: dict[str, Any]) -> Iterator[Any]:
    """The manifest as ``build_manifest`` writes it (sorted keys, two-space indentation) a
    part at a time (:func:`_list_parts`): each record of ``source_trials`` (one per exported
    trial), then the rest, so a large manifest is never parsed whole."""
    return _list_parts(path, _SOURCES_OPEN, out)


def _load_manifest(
    bundle: Path, report: GateReport, cache: TextCache | None = None, memo: ScanMemo | None = None
) -> dict[str, Any] | None:
    """The manifest without its per-trial ``source_trials`` (scanned, and read by nothing
    after), its findings added to ``report``; None when it is missing or not a manifest."""
    path = bundle / MANIFEST_PATH
    out: dict[str, Any] = {}
    try:  # a record at a time, as written; any other layout is parsed whole below
        found = scan_values(_manifest_parts(path, out), MANIFEST_PATH, cache, memo)
        doc = out.get("doc")
    except (OSError, _NotInLayout):
        doc = None
    if doc is None:
        try:
            doc = orjson.loads(path.read_bytes())
        except (OSError, orjson.JSONDecodeError) as exc:
            report.add(
                finding(
                    SCHEMA, f"{MANIFEST_PATH} is missing or not JSON: {exc}", file=MANIFEST_PATH
                )
            )
            return None
        found = None
    if not isinstance(doc, dict) or not isinstance(doc.get("files"), list):
        report.add(finding(SCHEMA, f"{MANIFEST_PATH} has no file list", file=MANIFEST_PATH))
        return None
    report.extend(found if found is not None else scan_value(doc, MANIFEST_PATH, cache, memo))
    doc.pop("source_trials", None)  # scanned: nothing later reads it
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


def _scan_excluded(
    bundle: Path, manifest: dict[str, Any], listed: set[str], cache: TextCache, report: GateReport
) -> tuple[int, dict[TrialKey, tuple[str, str]]] | None:
    """Scan the excluded-trials file a line at a time (each line's record like any published
    value); ``(lines, curation outcomes it records)``, or ``None`` when it cannot be read."""
    rel = pointed_path(manifest)
    if rel is None or rel not in listed:
        report.add(
            finding(
                SCHEMA,
                f"{MANIFEST_PATH} does not list {EXCLUDED_PATH} as its excluded trials",
                file=MANIFEST_PATH,
            )
        )
        return None
    n = 0
    outcomes: dict[TrialKey, tuple[str, str]] = {}
    try:
        for line in read_excluded(bundle / rel):
            n += 1
            where = f"{rel} line {line.number}"
            rec = line.record
            if rec is None:
                report.add(finding(SCHEMA, f"{where} is not an excluded trial record", file=rel))
                continue
            report.extend(scan_value(rec, where, cache))
            if rec["reason"] in CURATION_REASONS:
                outcomes[(rec["job"], rec["rollout"])] = (
                    rec["reason"],
                    str(rec.get("detail") or ""),
                )
    except OSError as exc:
        report.add(finding(SCHEMA, f"{rel} cannot be read: {exc}", file=rel))
        return None
    if n != pointed_count(manifest):
        report.add(
            finding(
                SCHEMA,
                f"{rel} lists {n} trials, the manifest says {pointed_count(manifest)}",
                file=rel,
            )
        )
    return n, outcomes


def _match_excluded(bundle: Path, excluded: Sequence[Decision], report: GateReport) -> None:
    """The excluded-trials file is, line for line, the decision's excluded trials with their
    reasons (the bytes :func:`excluded_line` gives): none lost, none added, none changed."""
    cleaner = Cleaner()
    try:
        for d, line in zip_longest(excluded, read_excluded(bundle / EXCLUDED_PATH)):
            if line is None:
                what = f"{show_key(d.key)} ({d.reason}) is excluded but not listed"
                report.add(finding(SCHEMA, f"{EXCLUDED_PATH}: {what}", file=EXCLUDED_PATH))
            elif d is None:
                what = f"line {line.number} lists a trial the dataset review does not exclude"
                report.add(finding(SCHEMA, f"{EXCLUDED_PATH} {what}", file=EXCLUDED_PATH))
            elif line.raw != excluded_line(d, cleaner):
                what = f"line {line.number} is not {show_key(d.key)} excluded as {d.reason!r}"
                report.add(finding(SCHEMA, f"{EXCLUDED_PATH} {what}", file=EXCLUDED_PATH))
    except OSError:
        pass  # reported by the scan


TASKS_CONFIG = "tasks"


def _check_tasks(
    keys: list[RowKey], main: list[RowKey], manifest: dict[str, Any], report: GateReport
) -> None:
    """The ``tasks`` config (when the release has it) holds one row for each task of the
    exported rollouts, and no other."""
    if TASKS_CONFIG not in (manifest.get("configs") or {}):
        return
    want = {k.task_id for k in main}
    seen: set[Any] = set()
    for k in keys:
        if k.config != TASKS_CONFIG:
            continue
        if k.task_id not in want or k.task_id in seen:
            what = "a second row of" if k.task_id in seen else "a task of no exported rollout:"
            report.add(finding(NOT_READY, f"{k.file}: {what} task {k.task_id}", file=k.file))
        seen.add(k.task_id)
    for task in sorted(want - seen, key=str):
        report.add(
            finding(SCHEMA, f"task {task} has rollouts but no tasks row", file=MANIFEST_PATH)
        )


def _cross_check(
    bundle: Path,
    keys: list[RowKey],
    manifest: dict[str, Any],
    recorded: dict[TrialKey, tuple[str, str]] | None,
    dataset: DatasetReview | None,
    rollout_ids: Mapping[TrialKey, str] | None,
    report: GateReport,
) -> str | None:
    """Rows against the decision; returns the release verdict the decision gives."""
    main = [k for k in keys if k.config == DEFAULT_CONFIG]
    ids = {k.rollout_id for k in main}
    _check_tasks(keys, main, manifest, report)
    for k in keys:
        if k.config not in (DEFAULT_CONFIG, TASKS_CONFIG) and k.rollout_id not in ids:
            report.add(
                finding(
                    NOT_READY,
                    f"{k.file}: rollout {k.rollout_id} is not an exported rollout",
                    file=k.file,
                )
            )
    if dataset is None:
        return None
    outcomes = {
        key: v
        for key, v in (recorded or {}).items()
        if (d := dataset.decision.get(key)) is not None and d.exported
    }
    final = dataset.with_curation(outcomes)
    if recorded is not None:
        _match_excluded(bundle, final.decision.excluded, report)
    expected = set(final.exports)
    seen: set[TrialKey] = set()
    for k in main:
        key = (str(k.job), str(k.rollout))
        seen.add(key)
        if key not in expected:
            report.add(
                finding(
                    NOT_READY,
                    f"{k.file}: {key[0]}/{key[1]} is not a trial the dataset review exports",
                    file=k.file,
                )
            )
        elif rollout_ids is not None and rollout_ids.get(key) != k.rollout_id:
            report.add(
                finding(
                    NOT_READY,
                    f"{k.file}: {key[0]}/{key[1]} changed since it was reviewed",
                    file=k.file,
                )
            )
    for key in sorted(expected - seen):
        report.add(
            finding(
                SCHEMA,
                f"{key[0]}/{key[1]} is exported by the dataset review but has no row",
                file=MANIFEST_PATH,
            )
        )
    report.reasons = reason_lines(final.assessment.decisive())
    cov = final.coverage
    report.coverage = {
        "coverage_ratio": cov.coverage_ratio,
        "min_coverage": cov.min_coverage,
        "below_floor": cov.below_floor,
        **cov.summary,
    }
    n_probe = sum(1 for d in final.decision.excluded if d.reason in ("oracle", "probe lane"))
    report.n_excluded = len(final.decision.excluded) - n_probe
    want = worst_verdict(
        final.release_verdict,
        "publishable_with_quarantines" if manifest.get("jobs_not_ingested") else None,
    )
    if manifest.get("release_verdict") != want:
        report.add(
            finding(
                SCHEMA,
                f"the manifest's release verdict {manifest.get('release_verdict')!r} is not "
                f"the dataset review's {want!r}",
                file=MANIFEST_PATH,
            )
        )
    return want


_ROWS_OPEN = b'  "trials": ['


def _scan_json_rows(
    path: Path, rel: str, cache: TextCache, report: GateReport, memo: ScanMemo | None = None
) -> bool:
    """Scan a JSON report written by ``write_report_json`` (two-space indentation, a
    ``trials`` list last) one trial at a time (:func:`_list_parts`), so its size never
    matters: every byte of it is parsed (each row, then the rest) and every value scanned.
    ``False`` (and nothing added) when its rows are not a last ``trials`` list: it is then
    parsed whole.  A document on one line is read whole here, and scanned as the caller's
    whole parse would scan it."""
    out: dict[str, Any] = {}
    try:
        found = [
            f
            for part in _list_parts(path, _ROWS_OPEN, out)
            for f in scan_value(part, rel, cache, memo)
        ]
    except (OSError, _NotInLayout):
        return False
    if not out["last"] and "trials" not in out["doc"]:
        return False  # trials not last, or none: not this layout, parsed whole as before
    report.extend(found)
    return True


# A ``data:`` URI: media type, parameters (``;base64`` among them), then its payload up to
# what ends a URI in Markdown, HTML, JSON or XML text.
DATA_URI = re.compile(
    r"data:([a-z0-9!#$&^_.+-]+/[a-z0-9!#$&^_.+-]+)?((?:;[a-z0-9!#$&^_.+-]+(?:=[^;,\s\"'()<>]*)?)*),"
    r"([^\s\"'()<>\[\]]*)",
    re.IGNORECASE,
)
EMBEDDED_DEPTH = 3  # a payload inside a payload inside a payload is still read
EMBEDDED_BLOCK = 1 << 20


def _decoded(params: str, payload: str) -> str | None:
    """A ``data:`` URI's payload as text (bytes that are not UTF-8 replaced, so text inside
    a binary picture is still read); None when it does not decode."""
    if ";base64" in params.lower():
        body = re.sub(r"\s+", "", unquote(payload))
        body += "=" * (-len(body) % 4)
        try:
            raw = base64.b64decode(body.replace("-", "+").replace("_", "/"), validate=True)
        except (binascii.Error, ValueError):
            return None
        return raw.decode("utf-8", errors="replace")
    return unquote(payload)


def embedded_texts(text: str, depth: int = EMBEDDED_DEPTH) -> Iterator[tuple[str, str]]:
    """``(what, text)`` of every payload embedded in ``text``: each ``data:`` URI decoded,
    its XML and HTML entities undone when it holds any, and the payloads inside those, to
    ``depth`` levels."""
    if depth <= 0 or "data:" not in text.lower():
        return
    for m in DATA_URI.finditer(text):
        if not m.group(3):
            continue
        what = f"data URI ({m.group(1) or 'text/plain'})"
        inner = _decoded(m.group(2), m.group(3))
        if inner is None:
            continue
        yield what, inner
        plain = html.unescape(inner) if "&" in inner else inner
        if plain != inner:
            yield f"{what}, entities undone", plain
        for sub, deeper in embedded_texts(plain, depth - 1):
            yield f"{what} > {sub}", deeper


def _scan_as(text: str, rel: str, what: str, report: GateReport) -> None:
    """``text`` (a form of file ``rel``: ``what``) scanned like text; its findings name
    ``rel`` as their file and say which form of it they were found in."""
    for f in scan_text(text, f"{rel} ({what})"):
        report.add(replace(f, file=rel))


def _scan_embedded(text: str, rel: str, report: GateReport) -> None:
    """Every payload embedded in ``text`` (:func:`embedded_texts`) scanned like text."""
    for what, inner in embedded_texts(text):
        _scan_as(inner, rel, what, report)


def _scan_embedded_lines(path: Path, rel: str, report: GateReport) -> None:
    """:func:`_scan_embedded` over a file of any size (the manifest, the excluded trials, a
    JSON report), read a block of whole lines at a time: a block that holds no ``data:``
    is passed over (a payload never spans lines in the files this package writes)."""
    try:
        with path.open("rb") as fh:
            rest = b""
            while block := fh.read(EMBEDDED_BLOCK):
                block = rest + block
                cut = block.rfind(b"\n") + 1
                block, rest = block[:cut], block[cut:]
                if b"data:" in block.lower():
                    _scan_embedded(block.decode("utf-8", errors="replace"), rel, report)
            if rest and b"data:" in rest.lower():
                _scan_embedded(rest.decode("utf-8", errors="replace"), rel, report)
    except OSError:
        pass  # reported by the scan that reads it


def _published_texts(manifest: dict[str, Any], listed: set[str]) -> list[str]:
    """The published files read as text: the card, the checksums, and every other listed
    file but the shards, the manifest and the excluded trials (each scanned on its own)."""
    own = {"README.md", CHECKSUMS_PATH, MANIFEST_PATH, pointed_path(manifest) or EXCLUDED_PATH}
    others = sorted(r for r in listed if r not in own and not r.startswith("data/"))
    return ["README.md", CHECKSUMS_PATH, *others]


def _json_document(text: str) -> Any:
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return None  # scanned as text instead


def _shard_rows(
    bundle: Path,
    shards: Sequence[dict[str, Any]],
    report: GateReport,
    cache: TextCache,
    memo: ScanMemo,
) -> list[RowKey]:
    """Every shard row scanned (:func:`bf_assets.publish.shardscan.scan_shards`), its
    findings and counts added to ``report`` shard by shard, in order; the keys of the rows."""
    keys: list[RowKey] = []
    for s in scan_shards(bundle, shards, cache, memo, MAX_FINDINGS):
        report.extend(s.findings)
        keys.extend(s.keys)
        s.keys.clear()
        if s.rows is None:
            continue
        if s.rows != s.declared:
            msg = f"{s.rel} has {s.rows} rows, the manifest says {s.declared}"
            report.add(finding(SCHEMA, msg, file=s.rel))
        report.rows[s.config] = report.rows.get(s.config, 0) + s.rows
    return keys


def verify_bundle(
    bundle_dir: str | Path,
    dataset: DatasetReview | None = None,
    rollout_ids: Mapping[TrialKey, str] | None = None,
) -> GateReport:
    """Every ``PUBLISH_*`` check and the release verdict for the bundle on disk
    (``dataset``: the review that decided the export; ``rollout_ids``: each trial's
    artifact digest as reviewed)."""
    bundle = Path(bundle_dir)
    report = GateReport()
    cache: TextCache = {}  # text repeated across steps, rows and configs is scanned once
    memo = ScanMemo()  # and a parsed object repeated across them is walked once
    manifest = _load_manifest(bundle, report, cache, memo)
    if manifest is None:
        return report
    shards = _check_files(bundle, manifest, report)
    listed = {str(f.get("path")) for f in manifest["files"] if isinstance(f, dict)}
    texts = _published_texts(manifest, listed)
    for rel in texts:
        p = bundle / rel
        if not p.is_file():
            report.add(finding(SCHEMA, f"{rel} is missing", file=rel))
            continue
        if rel.endswith(".json") and _scan_json_rows(p, rel, cache, report, memo):
            _scan_embedded_lines(p, rel, report)
            continue  # a report in its own layout: scanned one trial at a time
        text = p.read_text(encoding="utf-8", errors="replace")
        doc = _json_document(text) if rel.endswith(".json") else None
        if doc is not None:  # a JSON report: every string of it, repeated ones scanned once
            report.extend(scan_value(doc, rel, cache, memo))
        else:
            report.extend(scan_text(text, rel))
        if rel.endswith(".md"):  # as it renders: a value's backslash escapes undone
            rendered = markdown_unescaped(text)
            if rendered != text:
                _scan_as(rendered, rel, "as rendered", report)
            text = rendered
        _scan_embedded(text, rel, report)
    for rel in (MANIFEST_PATH, pointed_path(manifest) or EXCLUDED_PATH):
        if rel in listed or rel == MANIFEST_PATH:
            _scan_embedded_lines(bundle / rel, rel, report)
    keys = _shard_rows(bundle, shards, report, cache, memo)
    scanned = _scan_excluded(bundle, manifest, listed, cache, report)
    not_ingested = manifest.get("jobs_not_ingested")
    report.n_excluded = (scanned[0] if scanned else 0) + (
        len(not_ingested) if isinstance(not_ingested, list) else 0
    )
    recorded = scanned[1] if scanned else None
    decided = _cross_check(bundle, keys, manifest, recorded, dataset, rollout_ids, report)
    problems = sum(len(v) for v in report.findings.values())
    if problems or report.rows.get(DEFAULT_CONFIG, 0) == 0:
        report.verdict = "not_publishable"
    else:
        report.verdict = decided or str(manifest.get("release_verdict") or "not_publishable")
    return report


def verify_reviews(
    bundle_dir: str | Path,
    reviews: Sequence[TrialReview],
    *,
    plan_path: str | None = None,
    quarantine_path: str | None = None,
) -> GateReport:
    """:func:`verify_bundle` against the dataset review of ``reviews`` (what the Dagster
    checks do with the warehouse tables), without Dagster."""
    ds, candidates = review_exports(reviews, plan_path=plan_path, quarantine_path=quarantine_path)
    return verify_bundle(bundle_dir, ds, {k: c.rollout_id for k, c in candidates.items()})
