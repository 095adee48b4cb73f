"""Docker ↔ Daytona parity: pairing, expected systematic differences, telemetry blockers."""

from __future__ import annotations

from pathlib import Path

from trialkit import LLM_FILE, Trial, healthy_spec

from bf_assets.dataset.common import trial_key
from bf_assets.dataset.parity import DOCKER, ParityReport, sandbox_parity
from bf_assets.review.record import TrialReview
from bf_assets_tests.review_samples import DAYTONA_FILES, DOCKER_FILES, make_review


def _docker_twin(root: Path, rollout_id: str) -> Trial:
    spec = healthy_spec(rollout_id=rollout_id)
    spec.config.update({"environment": "docker", "acp_transport": "docker-stdio"})
    spec.result["sandbox_id"] = None
    spec.sandbox = None
    t = spec.write(root)
    t.write_text("agent/oracle.txt", "solve.sh output")
    t.write_text("artifacts/out.csv", "a,b\n1,2\n")
    return t


def _lacking(rep: ParityReport) -> set[object]:
    """The trials on the backend that lacks the telemetry of a blocker row."""
    return {r.pair.docker if r.lacking == DOCKER else r.pair.daytona for r in rep.blockers}


def _by_item(rows: list) -> dict[str, object]:
    return {r.item: r for r in rows}


def test_pair_built_on_disk_only_expected_differences(runs_root: Path) -> None:
    daytona = healthy_spec(rollout_id="dddd0001").write(runs_root).review()
    docker = _docker_twin(runs_root, "cccc0002").review()
    assert (docker.identity.sandbox, daytona.identity.sandbox) == ("docker", "daytona")
    assert docker.healthy and daytona.healthy
    rep = sandbox_parity([docker, daytona])
    [pair] = rep.pairs
    assert (pair.docker, pair.daytona) == (trial_key(docker), trial_key(daytona))
    rows = _by_item(rep.rows)
    assert set(rows) == {"sandbox.json", "agent/oracle.txt", "artifacts/out.csv"}
    assert all(r.label == "expected" and not r.blocker for r in rep.rows)
    assert rep.blockers == [] and _lacking(rep) == set()
    assert rep.unpaired == []


def test_pair_built_on_disk_telemetry_gap_is_a_blocker(runs_root: Path) -> None:
    daytona_trial = healthy_spec(rollout_id="dddd0001").write(runs_root)
    daytona_trial.drop(LLM_FILE)
    daytona = daytona_trial.review()
    docker = _docker_twin(runs_root, "cccc0002").review()
    rep = sandbox_parity([docker, daytona])
    blockers = rep.blockers
    assert blockers, rep.rows
    assert {r.lacking for r in blockers} == {"daytona"}
    assert LLM_FILE in {r.item for r in blockers}
    assert _lacking(rep) == {trial_key(daytona)}
    outcome = [r for r in rep.rows if r.kind == "outcome"]
    assert outcome and outcome[0].label == "unexpected"  # pass vs unhealthy


def _pair(**dk: object) -> tuple[TrialReview, TrialReview]:
    docker = make_review(sandbox="docker", rollout="t__dk", **dk)  # type: ignore[arg-type]
    daytona = make_review(sandbox="daytona", rollout="t__dt")
    return docker, daytona


def test_unexpected_file_and_outcome_variance() -> None:
    docker, daytona = _pair(files=[*DOCKER_FILES, "verifier/ctrf.json"], outcome="fail")
    rep = sandbox_parity([docker, daytona])
    rows = _by_item(rep.rows)
    assert rows["verifier/ctrf.json"].label == "unexpected"
    assert not rows["verifier/ctrf.json"].blocker
    assert rows["outcome"].label == "variance"  # pass vs fail: both healthy
    assert rep.blockers == []


def test_token_usage_missing_on_one_side_is_a_blocker() -> None:
    docker, daytona = _pair(checks=["GATE_TOKENS_MISSING"], healthy=True)
    rep = sandbox_parity([docker, daytona])
    [row] = rep.blockers
    assert row.kind == "telemetry" and row.lacking == "docker"
    assert row.item == "token usage in result.json"
    assert _lacking(rep) == {trial_key(docker)}


def test_results_file_missing_reported_once() -> None:
    files = [p for p in DAYTONA_FILES if p != "results.jsonl"]
    docker = make_review(sandbox="docker", rollout="t__dk")
    daytona = make_review(
        sandbox="daytona", rollout="t__dt", files=files, checks=["GATE_ROWS_MISSING"]
    )
    rep = sandbox_parity([docker, daytona])
    assert [r.item for r in rep.blockers] == ["results.jsonl"]


def test_pairing_by_trial_index_and_by_order() -> None:
    d1 = make_review(
        sandbox="docker", rollout="d1", trial_index=1, started_at="2026-06-01T01:00:00"
    )
    d2 = make_review(
        sandbox="docker", rollout="d2", trial_index=2, started_at="2026-06-01T00:00:00"
    )
    y2 = make_review(sandbox="daytona", rollout="y2", trial_index=2)
    y3 = make_review(sandbox="daytona", rollout="y3", trial_index=3)
    rep = sandbox_parity([d1, d2, y2, y3])
    assert [(p.index, p.docker[1], p.daytona[1]) for p in rep.pairs] == [(2, "d2", "y2")]
    assert sorted(k[1] for k, _ in rep.unpaired) == ["d1", "y3"]
    # without indices: attempt order, oldest first
    a = make_review(sandbox="docker", rollout="a", started_at="2026-06-01T02:00:00")
    b = make_review(sandbox="docker", rollout="b", started_at="2026-06-01T01:00:00")
    c = make_review(sandbox="daytona", rollout="c", started_at="2026-06-01T05:00:00")
    rep = sandbox_parity([a, b, c])
    assert [(p.index, p.docker[1], p.daytona[1]) for p in rep.pairs] == [(1, "b", "c")]
    assert rep.unpaired == [(trial_key(a), "docker")]


def test_different_logical_trials_are_not_paired() -> None:
    docker = make_review(sandbox="docker", rollout="x", skill_mode="with-skill")
    daytona = make_review(sandbox="daytona", rollout="y", skill_mode="no-skill")
    only_docker = make_review("other", sandbox="docker")
    rep = sandbox_parity([docker, daytona, only_docker])
    assert rep.pairs == [] and rep.rows == [] and rep.unpaired == []


def test_rows_serialise() -> None:
    docker, daytona = _pair()
    [row, *_] = sandbox_parity([docker, daytona]).rows
    d = row.to_dict()
    assert d["docker_trial"] == list(trial_key(docker)) and d["kind"] in {
        "file",
        "telemetry",
        "outcome",
    }
