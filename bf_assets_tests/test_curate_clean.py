"""Cleaning and scanning short strings through the process-wide caches."""

from bf_assets.curate.clean import CleanStats, clean_text, clean_value
from bf_assets.curate.scan import scan_value, text_hits

SECRET = "key sk-ant-" + "a1B2" * 8
PATH = "/home/alice/work/run.log"


def test_every_occurrence_of_a_cached_string_is_counted() -> None:
    stats = CleanStats()
    value = {"a": [SECRET, SECRET], "b": {"c": SECRET, "d": PATH}, "e": PATH}
    out = clean_value(value, stats)
    again = CleanStats()
    assert clean_value(value, again) == out
    assert stats.to_dict() == again.to_dict()
    assert stats.redactions["anthropic_key"] == 3
    assert sum(stats.host_paths.values()) == 2
    assert SECRET not in str(out) and PATH not in str(out)
    cleaned, red, paths = clean_text(SECRET)
    assert cleaned == out["a"][0] and red["anthropic_key"] == 1 and not paths


def test_cached_scans_report_every_place() -> None:
    kinds, paths = text_hits(SECRET + " " + PATH)
    assert kinds and paths
    first = scan_value({"x": SECRET}, "row 1")
    second = scan_value({"y": SECRET}, "row 2")
    assert [f.check for f in first] == [f.check for f in second] == ["PUBLISH_SECRET"]
    assert first[0].file == "row 1" and second[0].file == "row 2"
