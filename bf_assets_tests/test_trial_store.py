"""The release's dataset review keeps slim reviews in memory and each whole review in a store
file: every output made from it (the report JSON and Markdown, the trial pages' inputs, the
decision) is exactly what the dataset review of the whole reviews gives, and the store
travels with the pickled review from one step (or process) to the next."""

from __future__ import annotations

import pickle
from pathlib import Path

import orjson
import pytest
from trialkit import build_trial, quarantine_first_trial
from upath import UPath

from bf_assets.corpus.run import review_refs
from bf_assets.dataset.assemble import assemble, report_markdown
from bf_assets.dataset.reportfiles import ReportContext, report_files
from bf_assets.dataset.store import StoreWriter, TrialStore
from bf_assets.defs.io_managers import PickleUPathIOManager
from bf_assets.ingest.discovery import discover
from bf_assets.review.options import ReviewOptions
from bf_sample.generator import generate_corpus


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("store")
    generate_corpus(out, 60, seed=5)
    return out


@pytest.fixture(scope="module")
def reviews(corpus: Path) -> list:
    return review_refs(discover([corpus / "jobs"]).trials, ReviewOptions(workers=1))


def _stored(reviews: list, tmp_path: Path, quarantine: str):
    writer = StoreWriter(tmp_path / "store")
    return assemble(writer.add_all(reviews), quarantine_path=quarantine, store=writer.store)


def test_stored_review_gives_the_whole_reviews_outputs(
    corpus: Path, reviews: list, tmp_path: Path
) -> None:
    q = str(quarantine_first_trial(corpus, tmp_path))
    full = assemble(reviews, quarantine_path=q)
    ds = _stored(reviews, tmp_path, q)
    # the dataset review changed some trials (coverage findings, the quarantine), so the
    # stored JSON is patched on the way out for those
    assert full.coverage.trial_findings
    assert any(t.verdict == "quarantined" for t in full.trials)
    for i, t in enumerate(full.trials):
        assert orjson.loads(ds.trial_json(i)) == t.to_json()
        whole = ds.full_trial(i)
        assert whole.findings == t.findings and whole.skills == t.skills
        assert whole.verdict == t.verdict and whole.ref == t.ref
    assert ds.decision.counts() == full.decision.counts()
    assert ds.exports == full.exports
    assert report_markdown(ds, ["r"]) == report_markdown(full, ["r"])
    a = report_files(full, tmp_path / "a", ReportContext(roots=("r",)), clean=True)
    b = report_files(ds, tmp_path / "b", ReportContext(roots=("r",)), clean=True)
    assert [p.read_bytes() for p in a] == [p.read_bytes() for p in b]
    # what stays in memory: no messages (but blockers'), evidence, inventories or skills
    kept = [f for t in ds.trials for f in t.findings if not f.check.startswith("COVERAGE_")]
    assert kept and all(f.evidence is None for f in kept)
    assert all(f.message == "" for f in kept if f.severity != "blocker")
    assert all(not t.skills for t in ds.trials)


def test_reviews_without_inventory_are_kept_as_slim_reviews(
    corpus: Path, reviews: list, tmp_path: Path
) -> None:
    """The release's reviews (rebuilt from the warehouse tables) have no inventory: each is
    kept slim, with nothing of its own but its values, and every output is still the whole
    reviews' one, also after a pickle round trip."""
    from dataclasses import replace

    bare = [t.replace(files=[]) for t in reviews]
    q = str(quarantine_first_trial(corpus, tmp_path))
    full = assemble(bare, quarantine_path=q)
    ds = _stored(bare, tmp_path, q)
    assert all(not t.whole and t.own is None for t in ds.trials)
    back = pickle.loads(pickle.dumps(ds))
    assert all(not t.whole and t.own is None for t in back.trials)
    for got in (ds, back):
        for i, t in enumerate(full.trials):
            assert orjson.loads(got.trial_json(i)) == t.to_json()
            whole = got.full_trial(i)
            assert whole == t.replace(identity=replace(t.identity, sources={}))
            assert got.trials[i].ref.path == t.ref.path
            assert got.trials[i].identity.slot() == t.identity.slot()
        assert got.decision.decisions == full.decision.decisions
        assert got.release_verdict == full.release_verdict
        assert report_markdown(got, ["r"]) == report_markdown(full, ["r"])
    a = report_files(full, tmp_path / "a", ReportContext(roots=("r",)), clean=True)
    b = report_files(back, tmp_path / "b", ReportContext(roots=("r",)), clean=True)
    assert [p.read_bytes() for p in a] == [p.read_bytes() for p in b]
    # trials the dataset review changed share their new state with equal ones
    changed = [t.state for t in ds.trials if t.findings and t.findings[-1].check.startswith("C")]
    same = {(s.outcome, s.healthy, s.verdict, s.attribution, id(s.findings)) for s in changed}
    assert len({id(s) for s in changed}) == len(same)


def test_a_pickled_review_reads_its_store_beside_the_pickle(
    corpus: Path, reviews: list, tmp_path: Path
) -> None:
    ds = _stored(reviews, tmp_path, str(quarantine_first_trial(corpus, tmp_path)))
    want = [ds.trial_json(i) for i in range(len(ds.trials))]
    temp = ds.store.path
    manager = PickleUPathIOManager(base_path=UPath(tmp_path / "wh"))
    path = UPath(tmp_path / "wh" / "review_report.pickle")
    path.parent.mkdir(parents=True)
    manager.dump_to_path(None, ds, path)  # type: ignore[arg-type]
    beside = list(path.parent.glob("review_report.pickle.trials-*"))
    assert len(beside) == 1 and not temp.exists()  # moved, not copied
    # another process: a new manager unpickles and reads the same file
    again = PickleUPathIOManager(base_path=UPath(tmp_path / "wh")).load_from_path(None, path)  # type: ignore[arg-type]
    assert [again.trial_json(i) for i in range(len(again.trials))] == want
    # a later review pickled at the same place replaces the old store file
    ds2 = _stored(reviews, tmp_path, str(quarantine_first_trial(corpus, tmp_path)))
    manager.dump_to_path(None, ds2, path)  # type: ignore[arg-type]
    left = list(path.parent.glob("review_report.pickle.trials-*"))
    assert left == [path.parent / ds2.store.file_name(path.name)]
    assert ds2.trial_json(0) == want[0]  # the object in hand follows its file


def test_store_round_trip_and_bad_input(tmp_path: Path) -> None:
    store = TrialStore(tmp_path)
    assert store.append(b'{"a":1}', "publishable") == 0
    assert store.append(b"{}", "rejected") == 1
    assert (store.get(0), store.get(1)) == (b'{"a":1}', b"{}")
    assert store.stored_verdict(1) == "rejected"
    copy = pickle.loads(pickle.dumps(store))
    assert copy.get(0) == b'{"a":1}'
    store.path.write_bytes(b"{")  # truncated behind its back: a clear error, not bad data
    with pytest.raises(OSError, match="truncated"):
        copy.get(0)
    copy.discard()
    store.discard()


def test_a_pickled_review_is_the_same_review_in_chunks_of_trials(
    monkeypatch, runs_root: Path
) -> None:
    import bf_assets.dataset.common as common

    reviews = [build_trial(runs_root, rollout_id=f"aaaa{i:04d}").review() for i in range(5)]
    ds = assemble(reviews)
    monkeypatch.setattr(common, "PICKLE_CHUNK", 2)
    state = ds.__getstate__()
    assert len(state["trial_chunks"]) == 3 and "trials" not in state  # 2 + 2 + 1
    assert len(ds.decision.__getstate__()) == 3
    back = pickle.loads(pickle.dumps(ds))
    assert back.trials == ds.trials and len(back.trials) == 5
    assert back.decision.decisions == ds.decision.decisions
    assert all(back.decision[d.key] == d for d in ds.decision.decisions)  # the index too
    assert back.release_verdict == ds.release_verdict and back.coverage == ds.coverage
    assert report_markdown(back, ["r"]) == report_markdown(ds, ["r"])


def _pickles(path: Path) -> list:
    """Every pickle in the file, one after the other."""
    out = []
    with path.open("rb") as fh:
        while True:
            try:
                out.append(pickle.load(fh))
            except EOFError:
                return out


def test_the_warehouse_pickle_is_a_head_then_chunks_and_reads_back_whole(
    monkeypatch, reviews: list, tmp_path: Path
) -> None:
    import bf_assets.dataset.common as common

    ds = _stored(reviews, tmp_path, "")
    assert ds.parity.rows, "the corpus should have Docker/Daytona pairs"
    monkeypatch.setattr(common, "PICKLE_CHUNK", 7)
    manager = PickleUPathIOManager(base_path=UPath(tmp_path / "wh"))
    path = UPath(tmp_path / "wh" / "review_report.pickle")
    path.parent.mkdir(parents=True)
    manager.dump_to_path(None, ds, path)  # type: ignore[arg-type]
    n_trials, n_decisions = len(ds.trials), len(ds.decision.decisions)
    parts = _pickles(Path(path))
    head = parts[0]
    assert isinstance(head, common.PartedHead)
    want = (-(-n_trials // 7), -(-n_decisions // 7))
    assert head.chunks == want and len(parts) == 1 + sum(want)  # each chunk its own pickle
    assert all(len(p) <= 7 for p in parts[1:])
    # the head holds neither the trials, nor the decisions, nor sandbox parity (made again)
    assert head.head.trials == [] and head.head.decision.decisions == []
    assert head.head._parity is None
    # another process reads the whole review back
    back = PickleUPathIOManager(base_path=UPath(tmp_path / "wh")).load_from_path(None, path)  # type: ignore[arg-type]
    assert back.trials == ds.trials and back.decision.decisions == ds.decision.decisions
    assert all(back.decision[d.key] == d for d in ds.decision.decisions)  # the index too
    assert back.assessment.reasons.decision is back.decision  # linked, not a second copy
    assert list(back.assessment.reasons) == list(ds.assessment.reasons)
    assert back.release_verdict == ds.release_verdict and back.exports == ds.exports
    assert back.parity.rows == ds.parity.rows and back.parity.pairs == ds.parity.pairs
    assert report_markdown(back, ["r"]) == report_markdown(ds, ["r"])
    assert [back.trial_json(i) for i in range(n_trials)] == [
        ds.trial_json(i) for i in range(n_trials)
    ]


def test_a_plain_object_is_one_pickle_and_old_files_still_read(tmp_path: Path) -> None:
    from bf_assets.dataset.common import dump_parted, load_parted

    path = tmp_path / "x.pickle"
    with path.open("wb") as fh:
        dump_parted({"a": [1, 2]}, fh)
    assert _pickles(path) == [{"a": [1, 2]}]
    with path.open("rb") as fh:
        assert load_parted(fh) == {"a": [1, 2]}
    # an empty part is no chunk at all
    from bf_assets.dataset.assemble import assemble

    empty = assemble([])
    with path.open("wb") as fh:
        dump_parted(empty, fh)
    parts = _pickles(path)
    assert len(parts) == 1 and parts[0].chunks == (0, 0)
    with path.open("rb") as fh:
        back = load_parted(fh)
    assert back.trials == [] and back.release_verdict == empty.release_verdict
