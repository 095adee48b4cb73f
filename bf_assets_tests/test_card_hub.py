"""The card's load snippet against a Hub-compatible server: every config and split by tag."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hubserver import HubServer
from test_card_release import no_progress_threads  # noqa: F401 (autouse fixture)
from test_publish_bundle import cands
from test_publish_hub import REPO, WRITE, hub, server, target  # noqa: F401 (fixtures)
from trialkit import healthy_spec

from bf_assets.curate.schema import CONFIGS
from bf_assets.publish.bundle import BundleOptions, bundle_reviews


def test_every_config_and_split_loads_by_the_tag_the_card_pins(
    hub: HubServer,  # noqa: F811
    tmp_path: Path,
) -> None:
    datasets = pytest.importorskip("datasets")
    root = tmp_path / "jobs"
    root.mkdir()
    trials = [
        healthy_spec(task=f"task-{i}", rollout_id=f"{i:04d}cccc").write(root) for i in range(4)
    ]
    b = bundle_reviews(
        cands(*trials), tmp_path / "s", BundleOptions(repo_id=REPO, test_fraction=0.5)
    )
    card = (b.path / "README.md").read_text()
    tag = re.search(r'TAG = "([^"]+)"', card)
    assert tag and tag.group(1) == b.tag
    target(hub).publish(b.path, b.tag)
    assert b.tag in hub.repo(REPO).tags
    for config in CONFIGS:
        dd = datasets.load_dataset(
            REPO, config, revision=tag.group(1), cache_dir=str(tmp_path / "c"), token=WRITE
        )
        assert {s: dd[s].num_rows for s in dd} == b.split_rows[config]
        assert sorted(dd) == ["test", "train"]
    trl = datasets.load_dataset(
        REPO, "trl_sft", split="test", revision=b.tag, cache_dir=str(tmp_path / "c"), token=WRITE
    )
    call = trl[0]["completion"][0]["tool_calls"]
    assert call is None or isinstance(call[0]["function"]["arguments"], dict)
