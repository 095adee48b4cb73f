"""The card and the manifest say what changed since the previous release (added, removed,
re-reviewed, verdict flips), read from its manifest; unchanged input stays byte-identical."""

from __future__ import annotations

import json
from pathlib import Path

from trialkit import build_trial, healthy_spec

from bf_assets.dataset.decide import Exclusion
from bf_assets.publish.bundle import BundleOptions, bundle_reviews
from bf_assets.publish.changes import Previous, release_changes
from bf_assets.publish.local import LocalFolderTarget
from bf_assets.publish.manifest import MANIFEST_PATH


def _release(reviews: list, tmp: Path, out: Path, name: str):  # type: ignore[no-untyped-def]
    opts = BundleOptions(previous_manifest=str(out / MANIFEST_PATH))
    b = bundle_reviews(reviews, tmp / name, opts)
    LocalFolderTarget(out).publish(b.path, b.tag)
    return b, json.loads((out / MANIFEST_PATH).read_text())


def test_the_changelog_follows_the_releases(tmp_path: Path, runs_root: Path) -> None:
    out = tmp_path / "published"
    a = build_trial(runs_root, rollout_id="aaaa0001")
    b1, m1 = _release([a.review()], tmp_path, out, "s1")
    assert m1["changes"] is None
    assert "first release" in (out / "README.md").read_text()
    # unchanged input: the same bytes, no new release
    again, m1b = _release([a.review()], tmp_path, out, "s2")
    assert again.digest == b1.digest and m1b == m1
    # a second task is added
    other = healthy_spec(task="other-task", rollout_id="bbbb0002").write(runs_root)
    _, m2 = _release([a.review(), other.review()], tmp_path, out, "s3")
    ch = m2["changes"]
    assert ch["previous_release"] == m1["release_tag"]
    assert ch["added"] == [f"{other.review().ref.job_key}/{other.path.name}"]
    assert ch["removed"] == [] and ch["re_reviewed"] == [] and ch["verdict_flips"] == []
    card = (out / "README.md").read_text()
    assert "## Changes since the previous release" in card and "1 added to the export" in card


def _exclusion(rollout: str, verdict: str, reason: str) -> Exclusion:
    slot = ("task", "codex-acp", "gpt", "no-skill", "docker", None)
    return Exclusion("jobs/j", rollout, f"j/{rollout}", slot, "fail", verdict, reason)


def test_removed_re_reviewed_and_flipped_trials() -> None:
    manifest = {
        "release_tag": "release-aaa",
        "release_verdict": "publishable",
        "source_trials": [
            {"job": "jobs/j", "rollout": "t1", "rollout_id": "sha256:1"},
            {"job": "jobs/j", "rollout": "t2", "rollout_id": "sha256:2"},
        ],
        "changes": None,
    }
    held = [{"job": "jobs/j", "rollout": "t3", "verdict": "rejected", "reason": "rejected"}]
    prev = Previous.of(manifest, held)
    sources = [
        {"job": "jobs/j", "rollout": "t1", "rollout_id": "sha256:1b"},  # artifacts changed
        {"job": "jobs/j", "rollout": "t3", "rollout_id": "sha256:3"},  # now publishable
    ]
    excluded = [_exclusion("t2", "quarantined", "quarantined")]
    ch = release_changes(prev, sources, excluded)
    assert ch is not None
    assert ch["added"] == ["jobs/j/t3"]
    assert ch["removed"] == ["jobs/j/t2 (quarantined)"]
    assert ch["re_reviewed"] == ["jobs/j/t1"]
    assert ch["verdict_flips"] == [
        "jobs/j/t2: publishable -> quarantined",
        "jobs/j/t3: rejected -> publishable",
    ]
    # the same trials as the release in place: its own changelog is kept
    same = [_exclusion("t3", "rejected", "rejected")]
    assert release_changes(prev, manifest["source_trials"], same) is None
