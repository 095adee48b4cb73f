"""``bf-assets quarantine hold|release``: checked against the reviewed corpus, appended
atomically, and the next release does exactly what the entry says."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import pytest
import yaml
from trialkit import healthy_spec

from bf_assets.cli.main import main
from bf_assets.dataset.quarantine import (
    QuarantineError,
    append_entry,
    load_quarantine,
    new_entry,
)
from bf_assets.ingest.discovery import discover
from bf_assets.publish.bundle import bundle_reviews
from bf_assets.review.options import ReviewOptions

GOOD = "jobs/2026-06-01__00-00-00/demo-task__aaaa1111"
BROKEN = "jobs/2026-06-01__00-00-00/demo-task__bbbb2222"


@pytest.fixture
def corpus(runs_root: Path) -> Path:
    """One publishable trial and one with a blocker (the verifier crashed)."""
    healthy_spec().write(runs_root)
    broken = healthy_spec(rollout_id="bbbb2222")
    broken.result.update(
        rewards=None,
        verifier_error="verifier crashed: boom",
        verifier_error_category="verifier_failure",
    )
    broken.sync().write(runs_root)
    return runs_root


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def decide(corpus: Path, file: Path, action: str, trial: str, reason: str = "checked") -> list[str]:
    return [
        "quarantine",
        action,
        trial,
        "--reason",
        reason,
        "--by",
        "tester",
        "--file",
        str(file),
        "--runs",
        str(corpus),
    ]


def exported(corpus: Path, file: Path, tmp: Path) -> tuple[set[str], str]:
    from bf_assets.corpus.run import review_refs

    reviews = review_refs(discover([str(corpus)]).trials, ReviewOptions())
    bundle = bundle_reviews(reviews, tmp / "staging", quarantine_path=str(file))
    card = (bundle.path / "README.md").read_text()
    return {rollout for _, rollout, _ in bundle.exported}, card


def test_hold_then_release_changes_the_next_release(
    corpus: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    file = tmp_path / "quarantine.yaml"
    code, out, err = run(capsys, *decide(corpus, file, "hold", GOOD, "suspicious perfect score"))
    assert code == 0, err
    assert "verdict: publishable -> quarantined" in out
    assert "next release: excluded: quarantined (manual quarantine)" in out
    assert "before this entry: exported" in out
    [entry] = load_quarantine(file)
    assert (entry.trial, entry.action, entry.reason, entry.by) == (
        GOOD,
        "quarantine",
        "suspicious perfect score",
        "tester",
    )
    assert datetime.fromisoformat(entry.at).date() == datetime.now().date()
    assert file.read_text().startswith("# Manual quarantine decisions")
    rows, card = exported(corpus, file, tmp_path / "a")
    assert "demo-task__aaaa1111" not in rows
    assert (
        "## Manual review decisions (1)" in card
        and GOOD in card
        and "suspicious perfect score" in card
    )

    # released the same day: the later entry wins
    code, out, err = run(capsys, *decide(corpus, file, "release", GOOD, "trajectory reviewed"))
    assert code == 0, err
    assert "verdict: quarantined -> publishable" in out
    assert "next release: exported" in out
    assert [e.action for e in load_quarantine(file)] == ["quarantine", "release"]
    rows, card = exported(corpus, file, tmp_path / "b")
    assert "demo-task__aaaa1111" in rows
    assert "## Manual review decisions (2)" in card and "trajectory reviewed" in card


def test_release_of_a_blocker_is_refused(
    corpus: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    file = tmp_path / "quarantine.yaml"
    code, _, err = run(capsys, *decide(corpus, file, "release", BROKEN))
    assert code == 2
    assert "refusing to release" in err and "GATE_VERIFIER_ERROR" in err
    assert not file.exists()
    # holding it is allowed, and says it changes nothing yet
    code, out, _ = run(capsys, *decide(corpus, file, "hold", BROKEN))
    assert code == 0 and "already rejected" in out


def test_a_typo_is_an_error_naming_near_matches(
    corpus: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    file = tmp_path / "quarantine.yaml"
    code, _, err = run(capsys, *decide(corpus, file, "hold", GOOD.replace("aaaa1111", "aaaa1112")))
    assert code == 2
    assert "names no reviewed trial" in err and f"did you mean {GOOD}" in err
    assert not file.exists()
    code, _, err = run(capsys, *decide(corpus, file, "hold", "../etc/passwd"))
    assert code == 2 and "names no reviewed trial" in err


def test_other_ways_to_name_the_trial(
    corpus: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    file = tmp_path / "q.yaml"
    for given in (
        "demo-task__aaaa1111",
        "2026-06-01__00-00-00/demo-task__aaaa1111",
        str(corpus / "2026-06-01__00-00-00" / "demo-task__aaaa1111"),
    ):
        code, _, err = run(capsys, *decide(corpus, file, "hold", given))
        assert code == 0, err
    assert {e.trial for e in load_quarantine(file)} == {GOOD}  # always the canonical path


def test_existing_text_and_comments_are_kept(
    corpus: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    file = tmp_path / "quarantine.yaml"
    old = (
        "# reviewed by the data team\n"
        f"- trial: {BROKEN}   # the crash\n"
        "  action: quarantine\n  reason: 'crash: look later'\n  by: someone\n  at: 2026-11-03"
    )
    file.write_text(old)
    code, _, err = run(capsys, *decide(corpus, file, "hold", GOOD, "reason with: colon # and hash"))
    assert code == 0, err
    text = file.read_text()
    assert text.startswith(old + "\n")
    entries = load_quarantine(file)
    assert [e.trial for e in entries] == [BROKEN, GOOD]
    assert entries[1].reason == "reason with: colon # and hash"


def test_json_files_get_a_json_entry(
    tmp_path: Path, corpus: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    file = tmp_path / "quarantine.json"
    file.write_text("[]")
    code, _, err = run(capsys, *decide(corpus, file, "hold", GOOD))
    assert code == 0, err
    data = json.loads(file.read_text())
    assert [d["trial"] for d in data] == [GOOD] and set(data[0]) == {
        "trial",
        "action",
        "reason",
        "by",
        "at",
    }


def test_a_file_that_cannot_be_appended_to_is_left_alone(tmp_path: Path) -> None:
    file = tmp_path / "quarantine.yaml"
    file.write_text("[]  # flow style\n")
    with pytest.raises(QuarantineError, match="cannot append"):
        append_entry(file, new_entry(GOOD, "quarantine", "r", "me"))
    assert file.read_text() == "[]  # flow style\n"
    file.write_text("- trial: x\n  action: nope\n")
    with pytest.raises(QuarantineError):
        append_entry(file, new_entry(GOOD, "quarantine", "r", "me"))
    assert file.read_text() == "- trial: x\n  action: nope\n"


def test_a_later_entry_in_the_file_is_not_silently_overridden(
    corpus: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    file = tmp_path / "quarantine.yaml"
    file.write_text(
        f"- trial: {GOOD}\n  action: quarantine\n  reason: future\n  by: x\n  at: 2999-01-01\n"
    )
    before = file.read_text()
    code, _, err = run(capsys, *decide(corpus, file, "release", GOOD))
    assert code == 2 and "dated later" in err
    assert file.read_text() == before


def test_the_entry_is_written_whole(tmp_path: Path) -> None:
    file = tmp_path / "sub" / "q.yaml"
    entry = new_entry(GOOD, "release", "ok", "me", at=datetime(2026, 11, 3, 9, 30, 5))
    [got] = append_entry(file, entry)
    assert got.at == "2026-11-03T09:30:05"
    assert yaml.safe_load(file.read_text()) == [
        {
            "trial": GOOD,
            "action": "release",
            "reason": "ok",
            "by": "me",
            "at": datetime(2026, 11, 3, 9, 30, 5),
        }
    ]
    hidden = {p.name for p in file.parent.iterdir() if p.name.startswith(".")}
    assert hidden <= {".q.yaml.lock"}  # no temp file left, at most the appends' lock
