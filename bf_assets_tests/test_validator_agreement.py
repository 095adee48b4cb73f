"""The gate's healthy / unhealthy call against Benchflow's own validator, trial by trial.

`data/validator_baseline.json` is the recorded output of Benchflow's
`validate_run_artifacts.py --json` (commit 62cc7e41; the script is not part of this project)
on the committed sample jobs and on `fixtures/benchflow-writer/jobs`.  Every trial must get
the same call, except the deliberate fixes listed in DIFFERENCES, each with its reason.
"""

import json
from pathlib import Path

import pytest

from bf_assets.corpus.run import review_roots

REPO = Path(__file__).resolve().parents[1]
BASELINE = json.loads((Path(__file__).parent / "data" / "validator_baseline.json").read_text())

# trial key -> (our healthy call, why we differ from the validator on purpose)
DIFFERENCES = {
    # A wall-clock timeout with a pending tool call: partial_trajectory is true, so the ACP
    # trajectory was salvaged. checks.md's normal_timeout needs complete trajectories; the
    # validator calls any errored row with a consistent not-ready row healthy (V-1).
    "benchflow-writer:2026-06-01__00-00-00/demo-task__cccc3333": (False, "GATE_TRAJECTORY_PARTIAL"),
    "sample:2026-06-01__10-00-00/sales-report__6cad4a26": (False, "GATE_TRAJECTORY_PARTIAL"),
    # The row's reward disagrees with result.json's: the validator never compares them (V-4).
    "sample:2026-06-01__10-00-00/citation-check__f9ebdacc": (False, "GATE_CROSS_MISMATCH"),
}
# Trials the validator never sees: no result.json, so its discovery skips them (V-10).
UNSEEN_BY_VALIDATOR = {"sample:2026-06-02__14-30-00/sales-report__1012f037": "GATE_RESULT_MISSING"}


def _ours(corpus: str, root: Path) -> dict[str, tuple[bool, set[str]]]:
    return {
        f"{corpus}:{t.ref.rel_path}": (t.healthy, {f.check for f in t.findings})
        for t in review_roots([root]).trials
    }


def _compare(ours: dict[str, tuple[bool, set[str]]], corpus: str) -> None:
    theirs = {k: v for k, v in BASELINE["rollouts"].items() if k.startswith(corpus + ":")}
    assert theirs, "baseline has no rollouts for this corpus"
    for key, (healthy, checks) in ours.items():
        if key in UNSEEN_BY_VALIDATOR:
            assert key not in theirs and UNSEEN_BY_VALIDATOR[key] in checks
            continue
        assert key in theirs, f"{key}: found by us, not by the validator"
        if key in DIFFERENCES:
            want, why = DIFFERENCES[key]
            assert healthy is want and theirs[key]["healthy"] is not want and why in checks, key
        else:
            assert healthy is theirs[key]["healthy"], (key, checks, theirs[key]["issues"])
    assert set(theirs) <= set(ours), "the validator found trials we did not"


def test_agrees_with_benchflow_validator_on_the_sample() -> None:
    _compare(_ours("sample", REPO / "data" / "runs" / "jobs"), "sample")


def test_agrees_with_benchflow_validator_on_writer_fixtures(shared_dir: Path) -> None:
    _compare(
        _ours("benchflow-writer", shared_dir / "fixtures" / "benchflow-writer" / "jobs"),
        "benchflow-writer",
    )


@pytest.mark.parametrize("key", sorted(DIFFERENCES))
def test_each_difference_is_still_a_difference(key: str) -> None:
    # A difference that the validator stops making should be removed from DIFFERENCES.
    assert BASELINE["rollouts"][key]["healthy"] is not DIFFERENCES[key][0]
