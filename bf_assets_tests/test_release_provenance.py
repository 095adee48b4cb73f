"""What a real ``bf-assets release`` publishes is what its review read and may show: a trial
file rewritten between the review and the building of its rows excludes that trial (a
curation error naming the file), and a trial named by a credential-shaped string is excluded
with a finding that names it; in both cases the other trials publish and no published byte holds the change or
the secret."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from leakproof_corpus import Gen
from trialkit import FINISHED, ROWS_FILE, Trial, TrialSpec, healthy_spec

from bf_assets.defs import curate as curate_defs
from bf_assets_tests.releasekit import isolated_release


def _spec(task: str, rollout_id: str = "aaaa1111") -> TrialSpec:
    """A publishable trial of ``task`` (its skills directory is the task's own)."""
    spec = healthy_spec(task=task, rollout_id=rollout_id)
    skills = f"/srv/bench/tasks/{task}/environment/skills"
    spec.config["effective_skills_dir"] = skills
    spec.result["effective_skills_dir"] = skills
    return spec.sync()


def _release(monkeypatch: pytest.MonkeyPatch, base: Path, runs: Path) -> tuple[int, Path]:
    tasks = base / "tasks"
    tasks.mkdir(exist_ok=True)
    out = base / "out"
    monkeypatch.setenv("HF_HUB_DISABLE_TELEMETRY", "1")
    return isolated_release(monkeypatch, base, runs, tasks, out), out


def _published(out: Path) -> list[tuple[str, bytes]]:
    root = out.resolve()
    return [(str(p.relative_to(root)), p.read_bytes()) for p in root.rglob("*") if p.is_file()]


def _excluded(out: Path) -> dict[str, dict[str, Any]]:
    lines = (out / "meta" / "excluded.jsonl").read_text().splitlines()
    return {rec["rollout"]: rec for rec in map(json.loads, lines)}


def _exported_rollouts(out: Path) -> set[str]:
    report = json.loads((out / "report" / "review.json").read_text())
    return {t["rollout"] for t in report["trials"] if t["exported"]}


@pytest.mark.parametrize(
    ("rel", "old", "new"),
    [
        ("result.json", FINISHED.encode(), FINISHED.replace("10:01", "19:59").encode()),
        (ROWS_FILE, b'"stop_condition": "agent_completed"', b'"stop_condition": "agent_complete!"'),
    ],
    ids=["result.json", "results.jsonl"],
)
def test_a_file_rewritten_after_the_review_is_not_published(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, rel: str, old: bytes, new: bytes
) -> None:
    runs = tmp_path / "jobs"
    runs.mkdir()
    keep = [_spec(t).write(runs) for t in ("alpha", "beta")]
    victim = _spec("gamma").write(runs)
    real = curate_defs.exportable_candidates

    def rewrite_then_hand_over(*args: Any, **kwargs: Any) -> Any:
        # after the review, before the partition builds its rows: same size, same mtime,
        # other bytes
        if victim.file(rel).read_bytes().count(new) == 0:
            victim.rewrite_in_place(rel, old, new)
        return real(*args, **kwargs)

    monkeypatch.setattr(curate_defs, "exportable_candidates", rewrite_then_hand_over)
    code, out = _release(monkeypatch, tmp_path, runs)
    assert code == 0
    assert victim.file(rel).read_bytes().count(new) == 1  # the rewrite happened
    assert _exported_rollouts(out) >= {t.path.name for t in keep}
    rec = _excluded(out)[victim.path.name]
    assert rec["reason"] == "curation error"
    assert rec["detail"] == f"{rel} changed since the trial was reviewed"
    rows = (out / "README.md").read_text()
    assert victim.path.name in rows and "curation error" in rows
    for name, data in _published(out):
        assert new not in data, f"the rewritten {rel} reached {name}"


def test_a_secret_in_a_trial_name_excludes_that_trial_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    g = Gen(29)
    in_task, in_dir = "ghp_" + g.s(36), "ghp_" + g.s(36)
    runs = tmp_path / "jobs"
    runs.mkdir()
    keep = [_spec(t).write(runs) for t in ("alpha", "delta")]
    by_task: Trial = _spec(f"beta-{in_task}").write(runs)
    by_dir: Trial = _spec("gamma", rollout_id=in_dir).write(runs)
    assert in_task in by_task.path.name and in_dir in by_dir.path.name

    code, out = _release(monkeypatch, tmp_path, runs)
    assert code == 0
    exported = _exported_rollouts(out)
    assert exported == {t.path.name for t in keep}

    report = json.loads((out / "report" / "review.json").read_text())
    named = {
        t["task_id"]: [f for f in t["findings"] if f["check"] == "IDENTITY_SECRET"]
        for t in report["trials"]
    }
    # the task id is shown redacted (the structural rule may take the ``beta-`` prefix too)
    (task_key,) = [k for k in named if "[REDACTED:" in k]
    assert in_task not in task_key
    # the task id is named (the rollout name, which holds it, may be named too)
    assert "the task id" in [f["message"].split(" carries")[0] for f in named[task_key]]
    assert len(named["gamma"]) == 1 and named["gamma"][0]["severity"] == "blocker"
    assert "[REDACTED:" in named["gamma"][0]["message"]
    excluded = _excluded(out)
    flagged = [r for r in excluded.values() if "IDENTITY_SECRET" in r["detail"]]
    assert len(flagged) == 2 and all(r["reason"] == "rejected" for r in flagged)
    assert all("[REDACTED:" in r["rollout"] for r in flagged)
    for name, data in _published(out):
        for secret in (in_task, in_dir):
            for piece in (secret, secret[4:12], secret[-8:]):
                assert piece.encode() not in data, f"a piece of a trial-name secret in {name}"
