"""``meta/excluded.jsonl``: every excluded trial with its reason, a line each, written and
verified a line at a time; a changed, lost, added or leaking line blocks the release."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import orjson
import pytest
from trialkit import build_trial, healthy_spec, oracle_spec, peak_traced_memory

from bf_assets.dataset.decide import Exclusion
from bf_assets.publish.bundle import Bundle, bundle_reviews
from bf_assets.publish.excluded import EXCLUDED_PATH, excluded_line, read_excluded, write_excluded
from bf_assets.publish.manifest import MANIFEST_PATH
from bf_assets.publish.shards import sha256_file
from bf_assets.publish.verify import GateReport, verify_bundle
from bf_assets.publish.verify import verify_reviews as verify_with_plan
from bf_assets.review.record import TrialReview

SECRET = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"


# One trial a cell: of the two attempts of the same slot, one is superseded (without a
# plan repeats are trials of their own).
PLAN = """name: one-trial
matrix:
  - tasks: [demo-task]
    harnesses: [codex-acp]
    models: [openai/gpt-x]
    skill_modes: [with-skill]
    sandboxes: [daytona]
    trials: 1
"""


def _reviews(runs_root: Path) -> list[TrialReview]:
    return [
        build_trial(runs_root, rollout_id="aaaa0001").review(),
        healthy_spec(rollout_id="aaaa0002").write(runs_root).review(),  # the same slot
        oracle_spec().write(runs_root).review(),
    ]


def _plan(tmp_path: Path) -> str:
    path = tmp_path / "plan.yaml"
    path.write_text(PLAN)
    return str(path)


def _bundle(runs_root: Path, tmp_path: Path) -> tuple[Bundle, list[TrialReview]]:
    reviews = _reviews(runs_root)
    return bundle_reviews(reviews, tmp_path / "staging", plan_path=_plan(tmp_path)), reviews


def verify_reviews(bundle_dir: Path, reviews: list[TrialReview]) -> GateReport:
    """The bundle against the dataset review under the plan it was built with (``_plan``
    wrote it beside the staging folder: ``<tmp>/plan.yaml``, ``<tmp>/staging/<bundle>``)."""
    plan = bundle_dir.parent.parent / "plan.yaml"
    return verify_with_plan(bundle_dir, reviews, plan_path=str(plan))


def _reseal(bundle: Path, edit: Callable[[list[bytes]], list[bytes]]) -> None:
    """Rewrite the excluded-trials file with ``edit`` and make the manifest agree with it
    (its checksum, size and count), as a forger would."""
    path = bundle / EXCLUDED_PATH
    lines = edit(path.read_bytes().splitlines(keepends=True))
    path.write_bytes(b"".join(lines))
    doc = orjson.loads((bundle / MANIFEST_PATH).read_bytes())
    for f in doc["files"]:
        if f["path"] == EXCLUDED_PATH:
            f["sha256"], f["bytes"] = sha256_file(path), path.stat().st_size
    doc["excluded_trials"]["trials"] = len(lines)
    (bundle / MANIFEST_PATH).write_bytes(orjson.dumps(doc, option=orjson.OPT_SORT_KEYS))


def test_every_excluded_trial_is_a_line_with_its_reason(runs_root: Path, tmp_path: Path) -> None:
    b, reviews = _bundle(runs_root, tmp_path)
    lines = list(read_excluded(b.path / EXCLUDED_PATH))
    assert [(ln.record or {}).get("reason") for ln in lines] == ["superseded", "oracle"]
    assert [(ln.record or {}).get("rollout") for ln in lines] == [e.rollout for e in b.excluded]
    assert [ln.raw for ln in lines] == [excluded_line(e) for e in b.excluded]
    manifest = orjson.loads((b.path / MANIFEST_PATH).read_bytes())
    assert manifest["excluded_trials"] == {"path": EXCLUDED_PATH, "trials": 2}
    assert "excluded" not in manifest  # the manifest does not grow with them
    assert verify_reviews(b.path, reviews).ok


def test_a_tampered_line_blocks_the_release(runs_root: Path, tmp_path: Path) -> None:
    b, reviews = _bundle(runs_root, tmp_path)
    path = b.path / EXCLUDED_PATH
    path.write_bytes(path.read_bytes().replace(b'"superseded"', b'"duplicate"', 1))
    report = verify_reviews(b.path, reviews)
    assert not report.ok
    assert any("checksum" in f.message for f in report.findings["PUBLISH_SCHEMA"])


def _edited_line(lines: list[bytes]) -> list[bytes]:
    doc = orjson.loads(lines[0])
    doc["reason"] = "unplanned"
    return [orjson.dumps(doc, option=orjson.OPT_SORT_KEYS) + b"\n", *lines[1:]]


@pytest.mark.parametrize(
    ("edit", "says"),
    [
        (_edited_line, "line 1 is not"),  # another reason, checksums forged
        (lambda lines: lines[1:], "is excluded but not listed"),  # a trial lost
        (lambda lines: [*lines, lines[-1]], "does not exclude"),  # a line added
        (lambda lines: [b"not json\n", *lines[1:]], "not an excluded trial record"),
    ],
)
def test_a_resealed_line_that_is_not_the_decision_blocks_the_release(
    runs_root: Path, tmp_path: Path, edit: Callable[[list[bytes]], list[bytes]], says: str
) -> None:
    b, reviews = _bundle(runs_root, tmp_path)
    _reseal(b.path, edit)
    report = verify_reviews(b.path, reviews)
    assert not report.ok
    assert any(says in f.message for f in report.findings["PUBLISH_SCHEMA"]), report.summary()


def test_a_secret_in_a_line_is_found_without_the_decision(runs_root: Path, tmp_path: Path) -> None:
    b, _ = _bundle(runs_root, tmp_path)

    def leak(lines: list[bytes]) -> list[bytes]:
        doc = orjson.loads(lines[0])
        doc["detail"] = f"token {SECRET}"
        return [orjson.dumps(doc) + b"\n", *lines[1:]]

    _reseal(b.path, leak)
    report = verify_bundle(b.path)  # the scan alone, no dataset review to compare with
    assert any(f.file == f"{EXCLUDED_PATH} line 1" for f in report.findings["PUBLISH_SECRET"])
    assert not report.ok


def test_a_count_that_disagrees_with_the_file_blocks_the_release(
    runs_root: Path, tmp_path: Path
) -> None:
    b, _ = _bundle(runs_root, tmp_path)
    doc = orjson.loads((b.path / MANIFEST_PATH).read_bytes())
    doc["excluded_trials"]["trials"] = 1
    (b.path / MANIFEST_PATH).write_bytes(orjson.dumps(doc))
    report = verify_bundle(b.path)
    assert any("the manifest says 1" in f.message for f in report.findings["PUBLISH_SCHEMA"])


def _exclusions(n: int) -> Iterator[Exclusion]:
    slot = ("task", "codex-acp", "gpt-5", "no-skill", "docker", None)
    for i in range(n):
        yield Exclusion(
            "jobs/j", f"t__{i:08d}", f"j/t__{i:08d}", slot, "pass", "publishable", "superseded"
        )


def _write_peak(tmp_path: Path, n: int) -> int:
    path = tmp_path / f"{n}.jsonl"
    with peak_traced_memory() as peak:
        assert write_excluded(path, _exclusions(n)) == n
    assert len(path.read_bytes().splitlines()) == n
    return peak[0]


def _scan_peak(path: Path) -> int:
    with peak_traced_memory() as peak:
        n = sum(1 for ln in read_excluded(path) if ln.record is not None)
    assert n == len(path.read_bytes().splitlines())
    return peak[0]


def test_writing_and_reading_the_file_holds_one_line_at_a_time(tmp_path: Path) -> None:
    # past the bounded caches of cleaned strings (an LRU of 8,192), 4 times the trials: the
    # same buffers and caches, not 4 times the memory
    small, large = _write_peak(tmp_path, 10_000), _write_peak(tmp_path, 40_000)
    assert large < small * 1.25, (small, large)
    small, large = _scan_peak(tmp_path / "10000.jsonl"), _scan_peak(tmp_path / "40000.jsonl")
    assert large < small * 1.25 + 16_000, (small, large)
