"""Quarantine file parsing, matching entries to trials, and the effective verdict."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bf_assets.dataset.common import trial_key
from bf_assets.dataset.quarantine import (
    QuarantineEntry,
    QuarantineError,
    apply_quarantine,
    effective_verdict,
    effective_verdicts,
    entry_matches,
    load_quarantine,
    parse_quarantine,
    unmatched_entries,
)
from bf_assets.findings import finding
from bf_assets_tests.review_samples import make_review

QUARANTINE_YAML = """\
- trial: jobs/2026-11-02__10-00-00/citation-check__3f9a0c1d
  action: quarantine
  reason: "suspicious perfect score; reviewing trajectory"
  by: reviewer-handle
  at: 2026-11-03
- trial: 2026-11-02__10-00-00/other__aaaa0000
  action: release
  reason: "catalog checked by hand"
  by: someone
  at: "2026-11-04T10:00:00"
"""


def _entry(trial: str, action: str = "quarantine", at: str = "2026-11-03") -> QuarantineEntry:
    return QuarantineEntry(trial, action, "because", "me", at)


def _raw(**over: Any) -> dict[str, Any]:
    d: dict[str, Any] = {
        "trial": "j/t__1",
        "action": "quarantine",
        "reason": "r",
        "by": "b",
        "at": "2026-01-01",
    }
    d.update(over)
    return {k: v for k, v in d.items() if v is not None}


def test_yaml_file_loads(tmp_path: Path) -> None:
    p = tmp_path / "quarantine.yaml"
    p.write_text(QUARANTINE_YAML)
    a, b = load_quarantine(p)
    assert (a.action, a.by, a.at, a.index) == ("quarantine", "reviewer-handle", "2026-11-03", 1)
    assert (b.action, b.at) == ("release", "2026-11-04T10:00:00")
    assert a.to_dict()["reason"].startswith("suspicious")
    empty = tmp_path / "empty.yaml"
    empty.write_text("")
    assert load_quarantine(empty) == []


@pytest.mark.parametrize(
    ("raw", "needle"),
    [
        (_raw(reason=None), "'reason' must be a non-empty string"),
        (_raw(reason="  "), "'reason' must be a non-empty string"),
        (_raw(by=None), "'by' must be a non-empty string"),
        (_raw(at=None), "'at' (the date of the decision) is required"),
        (_raw(at="yesterday"), "'at' must be an ISO date"),
        (_raw(action="hold"), "'action' must be quarantine or release"),
        (_raw(action=None), "'action' must be a non-empty string"),
        (_raw(trial="/abs/path"), "relative to a run root"),
        (_raw(trial="../escape/t"), "relative to a run root"),
        (_raw(note="x"), "unknown key(s) note"),
    ],
)
def test_bad_entries_raise(raw: dict[str, Any], needle: str) -> None:
    with pytest.raises(QuarantineError) as info:
        parse_quarantine([raw])
    assert needle in str(info.value)
    assert "entry 1" in str(info.value)


def test_bad_documents_raise(tmp_path: Path) -> None:
    with pytest.raises(QuarantineError, match="must be a list"):
        parse_quarantine({"trial": "x"})
    with pytest.raises(QuarantineError, match="must be a mapping"):
        parse_quarantine(["x"])
    p = tmp_path / "q.yaml"
    p.write_text("- trial: [\n")
    with pytest.raises(QuarantineError, match="not valid YAML"):
        load_quarantine(p)


def test_matching_rule_tolerates_prefixes() -> None:
    r = make_review(
        rollout="citation-check__3f9a0c1d", job="2026-11-02__10-00-00", root="/data/runs/jobs"
    )
    for path in (
        "2026-11-02__10-00-00/citation-check__3f9a0c1d",
        "jobs/2026-11-02__10-00-00/citation-check__3f9a0c1d",
        "./jobs/2026-11-02__10-00-00/citation-check__3f9a0c1d/",
        "runs/jobs/2026-11-02__10-00-00/citation-check__3f9a0c1d",
    ):
        assert entry_matches(_entry(path), r), path
    for path in (
        "citation-check__3f9a0c1d",  # the trial name alone is too loose
        "other-root/2026-11-02__10-00-00/citation-check__3f9a0c1d",
        "2026-11-02__10-00-00/citation-check__ffff",
    ):
        assert not entry_matches(_entry(path), r), path
    # a run root named anything, trials under its own jobs/ folder
    r2 = make_review(rollout="t__1", job="jobs/J", root="/somewhere/run-a")
    assert entry_matches(_entry("J/t__1"), r2)
    assert entry_matches(_entry("jobs/J/t__1"), r2)
    assert entry_matches(_entry("run-a/jobs/J/t__1"), r2)


def test_apply_quarantine_and_precedence() -> None:
    a = make_review(rollout="t__a", job="J")
    b = make_review(rollout="t__b", job="J")
    entries = [
        _entry("J/t__a", "release", at="2026-11-01"),
        _entry("J/t__a", "quarantine", at="2026-11-02"),
        _entry("J/t__b", "quarantine", at="2026-11-05"),
        _entry("J/t__b", "release", at="2026-11-05"),  # same date: quarantine wins
        _entry("J/t__zzz"),
    ]
    applied = apply_quarantine([a, b], entries)
    assert applied[trial_key(a)].action == "quarantine"
    assert applied[trial_key(b)].action == "quarantine"
    later = apply_quarantine([a], [*entries[:2], _entry("J/t__a", "release", at="2026-11-09")])
    assert later[trial_key(a)].action == "release"
    assert [e.trial for e in unmatched_entries([a, b], entries)] == ["J/t__zzz"]


def test_ambiguous_release_raises_but_quarantine_holds_all() -> None:
    a = make_review(rollout="t__a", job="J", root="/x/run-a")
    b = make_review(rollout="t__a", job="J", root="/x/run-b")
    held = apply_quarantine([a, b], [_entry("J/t__a")])
    assert set(held) == {trial_key(a), trial_key(b)}
    with pytest.raises(QuarantineError, match="a release must name one trial"):
        apply_quarantine([a, b], [_entry("J/t__a", "release")])
    assert set(apply_quarantine([a, b], [_entry("run-a/J/t__a", "release")])) == {trial_key(a)}


def test_effective_verdict_rules() -> None:
    clean = make_review()
    assert effective_verdict(clean) == "publishable"
    assert effective_verdict(clean, _entry("x")) == "quarantined"
    held = make_review(checks=["HACK_GIT_HISTORY"])
    assert held.verdict == "quarantined"
    assert effective_verdict(held) == "quarantined"
    assert effective_verdict(held, _entry("x", "release")) == "publishable"
    bad = make_review(checks=["HACK_GIT_HISTORY", "HACK_SCORE_WRITE"])
    assert bad.verdict == "rejected"
    assert effective_verdict(bad, _entry("x", "quarantine")) == "rejected"
    # a release never clears a blocker, the gate's or a dataset-level one
    assert effective_verdict(bad, _entry("x", "release")) == "rejected"
    oracle_failed = finding("TASK_ORACLE_FAILED", "oracle failed")
    assert effective_verdict(held, _entry("x", "release"), [oracle_failed]) == "rejected"
    assert effective_verdict(clean, None, [finding("COVERAGE_STALE", "old sha")]) == "publishable"


def test_effective_verdicts_map() -> None:
    a, b = make_review(rollout="t__a"), make_review(rollout="t__b", checks=["ATTR_UNKNOWN"])
    applied = apply_quarantine([a, b], [_entry(f"{b.ref.job}/t__b", "release")])
    extra = {trial_key(a): [finding("TASK_NOOP_PASSED", "noop")]}
    assert effective_verdicts([a, b], applied, extra) == {
        trial_key(a): "rejected",
        trial_key(b): "publishable",
    }


def test_path_parts_are_pathlibs_without_pathlib() -> None:
    import itertools
    from pathlib import PurePosixPath

    from bf_assets.dataset.quarantine import _parts

    def pathlib_parts(path: str) -> tuple[str, ...]:
        parts = PurePosixPath(path.replace("\\", "/")).parts
        return tuple(p for p in parts if p not in ("", "."))

    pieces = ["/", "a", ".", "..", "\\", "b c", "", "jobs"]
    for k in range(6):
        for combo in itertools.product(pieces, repeat=k):
            text = "".join(combo)
            assert _parts(text) == pathlib_parts(text), text


# --------------------------------------------------------------------------- limits


def _entries_yaml(n: int) -> str:
    return "".join(
        f"- trial: J/t__{i}\n  action: quarantine\n  reason: r\n  by: me\n  at: 2026-01-01\n"
        for i in range(n)
    )


def test_entries_past_the_limit_are_refused_where_the_reading_stops(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    p = tmp_path / "q.yaml"
    p.write_text(_entries_yaml(4))
    monkeypatch.setenv("BF_QUARANTINE_MAX_ENTRIES", "4")
    assert len(load_quarantine(p)) == 4
    monkeypatch.setenv("BF_QUARANTINE_MAX_ENTRIES", "3")
    with pytest.raises(QuarantineError) as info:
        load_quarantine(p)
    assert str(info.value) == (
        f"{p}: more than 3 entries: over the limit (BF_QUARANTINE_MAX_ENTRIES raises it)"
    )
    j = tmp_path / "q.json"
    j.write_text(json.dumps([_raw(trial=f"J/t__{i}") for i in range(4)]))
    with pytest.raises(QuarantineError, match=r"4 entries, over the limit of 3"):
        load_quarantine(j)
    with pytest.raises(QuarantineError, match=r"4 entries, over the limit of 3"):
        parse_quarantine([_raw()] * 4)


def test_the_default_entry_limit_holds_a_large_file_in_bounded_memory(tmp_path: Path) -> None:
    """200,000 entries (within the size limit, 8 MiB here): refused at entry 10,001, with
    what was built up to there as the only memory taken."""
    import tracemalloc

    p = tmp_path / "q.yaml"
    entry = "- {trial: J/t, action: quarantine, reason: r, by: me, at: 2026-01-01}\n"
    p.write_text(entry * (8 * 1024 * 1024 // len(entry)))
    tracemalloc.start()
    try:
        with pytest.raises(QuarantineError, match="more than 10,000 entries"):
            load_quarantine(p)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 64 * 1024 * 1024  # the text (8 MiB, read once) and 10,000 small entries


def test_an_alias_bomb_in_an_entry_is_refused(tmp_path: Path) -> None:
    lists = ["&l0 [" + ", ".join(["lol"] * 10) + "]"]
    lists += [f"&l{i} [" + ", ".join([f"*l{i - 1}"] * 10) + "]" for i in range(1, 9)]
    p = tmp_path / "q.yaml"
    p.write_text(f"- trial: [{', '.join(lists)}]\n  action: quarantine\n")
    with pytest.raises(QuarantineError, match="each alias counted as all it repeats"):
        load_quarantine(p)


def test_appending_past_the_limit_changes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from bf_assets.dataset.quarantine import append_entry, new_entry

    p = tmp_path / "q.yaml"
    p.write_text(_entries_yaml(2))
    monkeypatch.setenv("BF_QUARANTINE_MAX_ENTRIES", "3")
    assert len(append_entry(p, new_entry("J/t__x", "quarantine", "r", "me"))) == 3
    before = p.read_text()
    with pytest.raises(QuarantineError, match="holds 3 entries, the limit"):
        append_entry(p, new_entry("J/t__y", "quarantine", "r", "me"))
    assert p.read_text() == before


def test_matching_through_the_index_is_the_matching_rule() -> None:
    """Entries are matched through an index of the trials' last two path parts: every
    entry matches exactly the trials the rule matches them to, by brute force."""
    import itertools

    reviews = [
        make_review(rollout=f"t__{t}", job=job, root=root)
        for root, job, t in itertools.product(
            ("/x/run-a", "/y/run-b", "/run-a"), ("J", "jobs/J", "K"), ("a", "b")
        )
    ]
    texts = [
        "/".join(parts)
        for parts in itertools.product(
            ("", "run-a", "y/run-b", "jobs"), ("", "J", "jobs/J", "K"), ("t__a", "t__b", "J")
        )
    ]
    entries = [_entry(t) for t in dict.fromkeys(x.strip("/") for x in texts) if t]
    applied = apply_quarantine(reviews, entries)
    brute: dict[Any, QuarantineEntry] = {}
    for e in entries:
        for r in reviews:
            if entry_matches(e, r):
                brute.setdefault(trial_key(r), e)
    assert applied == brute
    unmatched = [e for e in entries if not any(entry_matches(e, r) for r in reviews)]
    assert unmatched_entries(reviews, entries) == unmatched and unmatched
