"""One walk per release: ``bf_assets.ingest.pinned`` answers an ingest run's trials from it."""

from __future__ import annotations

from pathlib import Path

import pytest

from bf_assets.ingest import discovery
from bf_assets.ingest.pinned import pinned_discovery, trials_of_jobs
from bf_sample.generator import generate_corpus


@pytest.fixture(scope="module")
def jobs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    corpus = tmp_path_factory.mktemp("pinned")
    generate_corpus(corpus, 230, seed=5)  # three job directories
    return corpus / "jobs"


def _count_walks(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """Walks of a run root (the whole walk, or the walk of the way to some job directories)."""
    walks: list[object] = []
    real = discovery._walk_root
    monkeypatch.setattr(discovery, "_walk_root", lambda *a: walks.append(a) or real(*a))
    return walks


def test_inside_the_pin_a_run_gets_its_jobs_trials_in_walk_order_without_walking(
    jobs: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    trials = discovery.discover_trials([jobs])
    keys = sorted({t.job_key for t in trials})
    assert len(keys) == 3
    walks = _count_walks(monkeypatch)
    with pinned_discovery([str(jobs)], trials):
        # another spelling of the same root still finds the pin
        got = trials_of_jobs([str(jobs / ".")], [keys[2], keys[0]])
        assert got == [t for t in trials if t.job_key in {keys[0], keys[2]}]
        assert trials_of_jobs([jobs], ["no-such-job"]) == []
    assert walks == []
    # outside it (the UI, the sensor), a run walks the way to its jobs and sees new trials
    assert trials_of_jobs([jobs], keys) == trials
    assert len(walks) == 1


def test_the_pin_is_for_its_roots_only_and_is_undone_on_exit(
    jobs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    trials = discovery.discover_trials([jobs])
    walks = _count_walks(monkeypatch)
    other = tmp_path / "other"
    other.mkdir()
    with pytest.raises(RuntimeError), pinned_discovery([jobs], trials[:5]):
        assert trials_of_jobs([jobs], {trials[0].job_key}) == trials[:5]
        assert trials_of_jobs([other], {trials[0].job_key}) == []  # walked: not pinned
        raise RuntimeError("a failed release")
    assert len(walks) == 1
    assert trials_of_jobs([jobs], {trials[0].job_key}) == [
        t for t in trials if t.job_key == trials[0].job_key
    ]
    assert len(walks) == 2


def test_unpinning_inside_the_block_ends_the_pin_and_keeps_nothing(
    jobs: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import gc
    import weakref

    class Walk(list):  # a list that can be watched with a weak reference
        pass

    trials = Walk(discovery.discover_trials([jobs]))
    key = trials[0].job_key
    want = [t for t in trials if t.job_key == key]
    gone = weakref.ref(trials)
    walks = _count_walks(monkeypatch)
    with pinned_discovery([jobs], trials) as pin:
        del trials
        gc.collect()
        assert gone() is None  # the pin keeps its index, not the list it was given
        assert trials_of_jobs([jobs], [key]) == want and walks == []
        pin.unpin()
        assert trials_of_jobs([jobs], [key]) == want and len(walks) == 1
        pin.unpin()  # twice is once
    assert trials_of_jobs([jobs], [key]) == want and len(walks) == 2
