"""What keeps the release's memory and events bounded on a large corpus: the report in the
asset metadata is an excerpt past a size, and one cleaner for a whole report keeps a bounded
amount of cleaned text."""

from __future__ import annotations

from pathlib import Path

from bf_assets.defs.review import report_excerpt
from bf_assets.redact import clean


def test_a_long_report_goes_into_the_metadata_as_its_head_and_where_the_rest_is(
    tmp_path: Path,
) -> None:
    md = tmp_path / "review.md"
    md.write_text("# Report\n" + "".join(f"| trial {i} | ok |\n" for i in range(5000)))
    whole = md.read_text()
    assert report_excerpt(md, limit=len(whole)) == whole  # short enough: whole
    cut = report_excerpt(md, limit=1000)
    head, note = cut.rsplit("\n\n", 1)
    assert len(head) <= 1000 and whole.startswith(head + "\n")  # cut at a line end
    assert str(md) in note and "goes on" in note


def test_a_cleaner_keeps_a_bounded_amount_of_cleaned_text(monkeypatch) -> None:
    monkeypatch.setattr(clean, "CACHE_MAX_CHARS", 20_000)
    c = clean.Cleaner()
    texts = [f"line {i} " + "x" * 1000 for i in range(100)]
    assert [c.text(t) for t in texts] == texts  # nothing to clean: unchanged
    assert c.texts.chars <= 20_000 and len(c.texts.entries) <= 20
    secret = "token ghp_" + "A1b2C3d4E5" * 4 + " " + "y" * 400
    assert "ghp_" not in c.text(secret)  # still cleaned after the cache was cleared
