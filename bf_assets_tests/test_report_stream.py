"""``report/review.json`` is written one trial at a time, with the exact bytes of the whole
document dumped at once (cleaned or not), and with every cleaned row handed to the scan."""

from __future__ import annotations

from pathlib import Path

import orjson
from trialkit import build_trial, healthy_spec

from bf_assets.dataset.reportfiles import (
    REPORT_JSON,
    ReportContext,
    report_files,
    report_payload,
    write_report_json,
)
from bf_assets.publish.bundle import review_exports
from bf_assets.redact.clean import clean_value

SECRET = "sk-ant-api03-" + "Zx9Qw8Er7Ty6Ui5Op4As3Df2Gh1Jk0LzXcVbNm-AAAA"


def _dataset(runs_root: Path):  # type: ignore[no-untyped-def]
    reviews = [build_trial(runs_root, rollout_id="aaaa0001").review()]
    reviews.append(healthy_spec(task="other-task", rollout_id="bbbb0002").write(runs_root).review())
    return review_exports(reviews)[0]


def test_streamed_json_is_the_whole_document_byte_for_byte(runs_root: Path, tmp_path: Path) -> None:
    ds = _dataset(runs_root)
    ctx = ReportContext(roots=[str(runs_root / "jobs")])
    plain = tmp_path / "plain.json"
    write_report_json(ds, plain, ctx)
    want = orjson.dumps(report_payload(ds, ctx), option=orjson.OPT_INDENT_2, default=str)
    assert plain.read_bytes() == want
    cleaned = tmp_path / "cleaned.json"
    rows: list[object] = []
    write_report_json(ds, cleaned, ctx, clean_value, rows.append)
    want_clean = orjson.dumps(
        clean_value(report_payload(ds, ctx)), option=orjson.OPT_INDENT_2, default=str
    )
    assert cleaned.read_bytes() == want_clean
    doc = orjson.loads(cleaned.read_bytes())
    assert rows == [{k: v for k, v in doc.items() if k != "trials"}, *doc["trials"]]
    assert len(doc["trials"]) == 2


def test_a_report_without_trials_is_still_the_whole_document(tmp_path: Path) -> None:
    ds = review_exports([])[0]
    ctx = ReportContext()
    p = tmp_path / "r.json"
    write_report_json(ds, p, ctx)
    assert p.read_bytes() == orjson.dumps(report_payload(ds, ctx), option=orjson.OPT_INDENT_2)
    assert orjson.loads(p.read_bytes())["trials"] == []


def test_the_shipped_report_leaks_nothing(runs_root: Path, tmp_path: Path) -> None:
    ds = _dataset(runs_root)
    ctx = ReportContext(roots=[str(runs_root), f"/srv/{SECRET}"])
    report_files(ds, tmp_path / "raw", ctx, clean=False)
    raw = (tmp_path / "raw" / REPORT_JSON).read_bytes()
    assert SECRET.encode() in raw and str(runs_root).encode() in raw  # what cleaning removes
    report_files(ds, tmp_path / "shipped", ctx, clean=True)
    data = (tmp_path / "shipped" / REPORT_JSON).read_bytes()
    assert SECRET.encode() not in data and SECRET[13:30].encode() not in data
    assert str(runs_root).encode() not in data


def _tampered_bundle(runs_root: Path, tmp_path: Path, compact: bool) -> Path:
    from bf_assets.publish.bundle import bundle_reviews

    reviews = [
        build_trial(runs_root, rollout_id="aaaa0001").review(),
        healthy_spec(task="other-task", rollout_id="bbbb0002").write(runs_root).review(),
    ]
    b = bundle_reviews(reviews, tmp_path / "staging")
    path = b.path / REPORT_JSON
    doc = orjson.loads(path.read_bytes())
    doc["trials"][-1]["export_detail"] = f"token {SECRET}"
    option = 0 if compact else orjson.OPT_INDENT_2
    path.write_bytes(orjson.dumps(doc, option=option))
    return b.path


def test_verify_scans_every_row_of_a_report_of_any_layout(runs_root: Path, tmp_path: Path) -> None:
    from bf_assets.publish.verify import verify_bundle

    for compact in (False, True):
        bundle = _tampered_bundle(
            runs_root / ("c" if compact else "i"), tmp_path / str(compact), compact
        )
        report = verify_bundle(bundle)
        secrets = [f for f in report.findings["PUBLISH_SECRET"] if f.file == REPORT_JSON]
        assert secrets, f"compact={compact}: {report.summary()}"
        assert not report.ok


def test_a_clean_report_verifies_row_by_row(runs_root: Path, tmp_path: Path) -> None:
    from bf_assets.publish.bundle import bundle_reviews
    from bf_assets.publish.verify import _scan_json_rows, verify_bundle

    reviews = [build_trial(runs_root, rollout_id="aaaa0001").review()]
    b = bundle_reviews(reviews, tmp_path / "staging")
    assert verify_bundle(b.path).ok
    from bf_assets.publish.verify import GateReport

    assert _scan_json_rows(b.path / REPORT_JSON, REPORT_JSON, {}, GateReport())  # its layout


def test_the_markdown_is_written_a_piece_at_a_time(
    runs_root: Path, tmp_path: Path, monkeypatch
) -> None:
    import bf_assets.dataset.reportfiles as rf
    from bf_assets.dataset.assemble import report_markdown

    ds = _dataset(runs_root)
    ctx = ReportContext(roots=[str(runs_root / "jobs")])
    chunks: dict[str, list[bytes]] = {}
    real = rf.write_atomic

    def spy(path: Path, data) -> None:  # type: ignore[no-untyped-def]
        data = [data] if isinstance(data, bytes) else list(data)
        chunks[path.name] = data
        real(path, data)

    monkeypatch.setattr(rf, "write_atomic", spy)
    md, _ = report_files(ds, tmp_path, ctx, clean=False, links=[("pages", "pages/index.html")])
    whole = md.read_bytes()
    assert whole.startswith(report_markdown(ds, ctx.roots).encode())
    assert whole.endswith(b"\n## Links\n\n- [pages](pages/index.html)\n")
    pieces = chunks["review.md"]
    assert len(pieces) > 10 and max(map(len, pieces)) < len(whole) * 0.75  # never one string


def test_a_table_formats_only_the_rows_it_shows() -> None:
    from bf_assets.dataset.report import _table

    made: list[int] = []

    def rows():  # type: ignore[no-untyped-def]
        for i in range(10_000):
            made.append(i)
            yield (f"t{i}", "superseded")

    text = _table(["trial", "reason"], rows(), limit=5, total=10_000)
    assert len(made) == 5 and "… 9995 more rows not shown" in text
    assert _table(["a"], iter([("x",)] * 7), limit=5).endswith("… 2 more rows not shown\n")
