"""The publish gate reads the manifest a source record at a time.

Parsed whole, the manifest of a large release (a record per exported trial) was the gate's
largest allocation.  These tests check that the streamed reading gives the document the
whole parse gives (less the records), finds what a whole scan finds, and falls back to the
whole parse for any other layout.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from test_curate_rows import HOST, SECRET
from trialkit import healthy_spec

from bf_assets.curate.scan import scan_value
from bf_assets.publish.bundle import BundleOptions, bundle_reviews
from bf_assets.publish.manifest import MANIFEST_PATH
from bf_assets.publish.verify import GateReport, _load_manifest, _manifest_parts

WRITTEN = orjson.OPT_SORT_KEYS | orjson.OPT_INDENT_2  # as build_manifest writes it


def _bundle(tmp_path: Path, runs_root: Path, n: int = 5) -> Path:
    trials = [healthy_spec(task=f"task-{i}").write(runs_root) for i in range(n)]
    opts = BundleOptions(configs=("rollouts",), test_fraction=0)
    return bundle_reviews([t.review() for t in trials], tmp_path / "s", opts).path


def _rewrite(bundle: Path, doc: dict[str, Any], option: int = WRITTEN) -> Path:
    path = bundle / MANIFEST_PATH
    path.write_bytes(orjson.dumps(doc, option=option) + b"\n")
    return path


def _whole(path: Path) -> tuple[dict[str, Any], set[tuple[str, str | None]]]:
    doc = orjson.loads(path.read_bytes())
    found = {(f.check, f.evidence) for f in scan_value(doc, MANIFEST_PATH)}
    doc.pop("source_trials", None)
    return doc, found


def _streamed(path: Path) -> tuple[dict[str, Any] | None, set[tuple[str, str | None]]]:
    report = GateReport()
    doc = _load_manifest(path.parent.parent, report)
    return doc, {(f.check, f.evidence) for fs in report.findings.values() for f in fs}


def test_records_are_read_one_at_a_time_into_the_same_document(
    tmp_path: Path, runs_root: Path
) -> None:
    bundle = _bundle(tmp_path, runs_root)
    path = bundle / MANIFEST_PATH
    records = orjson.loads(path.read_bytes())["source_trials"]
    assert len(records) == 5
    out: dict[str, Any] = {}
    parts = list(_manifest_parts(path, out))
    assert parts[:-1] == records  # each record, in order, then the rest of the document
    whole, found = _whole(path)
    assert parts[-1] is out["doc"] and out["doc"] == whole
    doc, streamed = _streamed(path)
    assert doc == whole and streamed == found == set()


@pytest.mark.parametrize("last", [False, True])
def test_leaks_in_records_and_in_the_rest_are_found_as_by_a_whole_scan(
    tmp_path: Path, runs_root: Path, last: bool
) -> None:
    bundle = _bundle(tmp_path, runs_root)
    doc = orjson.loads((bundle / MANIFEST_PATH).read_bytes())
    doc["source_trials"][2]["source_ref"] = f"token {SECRET}"
    doc["source_trials"][4]["reasoning_content"] = "private"
    doc["plan"] = {"path": HOST}
    if last:  # no key after source_trials: the line before it loses its comma
        doc = {k: v for k, v in doc.items() if k <= "source_trials"}
    path = _rewrite(bundle, doc)
    out: dict[str, Any] = {}
    assert len(list(_manifest_parts(path, out))) == len(doc["source_trials"]) + 1
    whole, found = _whole(path)
    streamed_doc, streamed = _streamed(path)
    assert streamed_doc == whole
    assert streamed == found
    assert {c for c, _ in found} >= {"PUBLISH_SECRET", "PUBLISH_BANNED_KEY", "PUBLISH_HOST_PATH"}


def test_another_layout_is_parsed_whole(tmp_path: Path, runs_root: Path) -> None:
    bundle = _bundle(tmp_path, runs_root)
    doc = orjson.loads((bundle / MANIFEST_PATH).read_bytes())
    doc["source_trials"][0]["source_ref"] = f"token {SECRET}"
    path = _rewrite(bundle, doc, option=0)  # one line: one part, the whole document
    assert len(list(_manifest_parts(path, {}))) == 1
    whole, found = _whole(path)
    streamed_doc, streamed = _streamed(path)
    assert streamed_doc == whole and streamed == found and found
    doc["source_trials"].append(f"stray {SECRET}")  # a record that is not an object
    path = _rewrite(bundle, doc)
    with pytest.raises(Exception) as info:
        list(_manifest_parts(path, {}))
    assert type(info.value).__name__ == "_NotInLayout"
    whole, found = _whole(path)
    streamed_doc, streamed = _streamed(path)  # parsed whole instead
    assert streamed_doc == whole and streamed == found and found


def test_a_cut_manifest_is_reported_not_json(tmp_path: Path, runs_root: Path) -> None:
    bundle = _bundle(tmp_path, runs_root)
    path = bundle / MANIFEST_PATH
    data = path.read_bytes()
    path.write_bytes(data[: data.index(b'"source_trials"') + 200])  # inside the records
    report = GateReport()
    assert _load_manifest(bundle, report) is None
    assert any("not JSON" in f.message for f in report.findings["PUBLISH_SCHEMA"])
