"""The run-level cache of ``bf-assets review --cache-dir``: an unchanged corpus is answered
from the stored output without reviewing a trial; any change under a run root (a file
edited, added, removed or renamed, even with its mtime restored), a changed plan, or a
damaged entry makes it review again, and the output is then the fresh one."""

import json
import os
from pathlib import Path

import pytest
from trialkit import Trial, healthy_spec

from bf_assets.batch import runcache
from bf_assets.batch.runcache import RunCache, RunKey
from bf_assets.cli import main as cli

ROWS = "results.jsonl"
PLAN = """\
name: p
matrix:
  - tasks: [demo-task]
    harnesses: [codex]
    models: [m]
    skill_modes: [with-skill]
    sandboxes: [docker]
    trials: {trials}
"""


@pytest.fixture
def corpus(tmp_path: Path) -> list[Trial]:
    root = tmp_path / "runs"
    return [healthy_spec(rollout_id=f"aaaa{i:04d}").write(root) for i in range(2)]


@pytest.fixture
def reviews(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the reviews that actually ran (a run-level miss)."""
    import bf_assets.batch.run as review_mod

    seen: list[int] = []
    real = review_mod.review_roots

    def counting(*a, **k):
        seen.append(1)
        return real(*a, **k)

    monkeypatch.setattr(review_mod, "review_roots", counting)
    return seen


def _review(root: Path, cache: Path, capsysbinary, *extra: str) -> tuple[int, bytes]:
    code = cli.main(["review", str(root), "--json", "--cache-dir", str(cache), *extra])
    out, _ = capsysbinary.readouterr()
    return code, out


def _verdicts(out: bytes) -> dict[str, str]:
    return {t["rollout"]: t["verdict"] for t in json.loads(out)["trials"]}


def test_unchanged_corpus_is_answered_from_the_cache(
    corpus: list[Trial], tmp_path: Path, capsysbinary, reviews: list[int]
) -> None:
    root = corpus[0].root
    first = _review(root, tmp_path / "c", capsysbinary)
    second = _review(root, tmp_path / "c", capsysbinary)
    assert reviews == [1]  # the second run reviewed nothing
    assert second == first and first[0] == 0
    assert len(json.loads(second[1])["trials"]) == 2


def _edit(trial: Trial, keep_mtime: bool) -> None:
    path = trial.file(ROWS)
    st = os.stat(path)
    text = path.read_text()
    changed = text.replace('"training_ready": true', '"training_ready": null')
    assert changed != text and len(changed) == len(text)
    path.write_text(changed)
    if keep_mtime:
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


@pytest.mark.parametrize("change", ["edit", "edit_keep_mtime", "add", "remove", "rename"])
def test_any_change_under_a_root_reviews_again(
    corpus: list[Trial], tmp_path: Path, capsysbinary, reviews: list[int], change: str
) -> None:
    root = corpus[0].root
    code, out = _review(root, tmp_path / "c", capsysbinary)
    assert code == 0 and set(_verdicts(out).values()) == {"publishable"}
    victim = corpus[1]
    if change.startswith("edit"):
        _edit(victim, keep_mtime=change == "edit_keep_mtime")
    elif change == "add":
        healthy_spec(rollout_id="bbbb0000").write(root)
    elif change == "remove":
        victim.drop(ROWS)
    else:
        victim.file(ROWS).rename(victim.file("results.jsonl.old"))
    code2, out2 = _review(root, tmp_path / "c", capsysbinary)
    assert reviews == [1, 1]  # reviewed again
    fresh = cli.main(["review", str(root), "--json"])  # no cache at all
    fresh_out, _ = capsysbinary.readouterr()
    assert (code2, out2) == (fresh, fresh_out)  # never the stale answer
    if change == "add":
        assert len(_verdicts(out2)) == 3
    else:
        assert code2 == 1 and _verdicts(out2)[victim.path.name] == "rejected"


def test_a_changed_plan_is_a_miss(
    corpus: list[Trial], tmp_path: Path, capsysbinary, reviews: list[int]
) -> None:
    plan = tmp_path / "plan.yaml"
    plan.write_text(PLAN.format(trials=1))
    root = corpus[0].root
    first = _review(root, tmp_path / "c", capsysbinary, "--plan", str(plan))
    assert first[0] in (0, 1)  # a valid plan: the review ran and its output was kept
    _review(root, tmp_path / "c", capsysbinary, "--plan", str(plan))
    assert reviews == [1]
    plan.write_text(PLAN.format(trials=2))
    _review(root, tmp_path / "c", capsysbinary, "--plan", str(plan))
    assert reviews == [1, 1]


def test_a_damaged_entry_is_never_served(
    corpus: list[Trial], tmp_path: Path, capsysbinary, reviews: list[int]
) -> None:
    root = corpus[0].root
    first = _review(root, tmp_path / "c", capsysbinary)
    [blob] = (tmp_path / "c" / "runs").glob("*.out")
    blob.write_bytes(blob.read_bytes().replace(b"publishable", b"rejected!!!"))
    again = _review(root, tmp_path / "c", capsysbinary)
    assert reviews == [1, 1] and again == first


def test_output_of_a_corpus_changing_during_the_review_is_not_kept(
    corpus: list[Trial], tmp_path: Path, capsysbinary, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = corpus[0].root
    real_state = RunCache.state
    calls: list[int] = []

    def state_then_edit(self: RunCache) -> str | None:
        calls.append(1)
        value = real_state(self)
        if len(calls) == 1:  # right after the state was taken, before any trial is read
            _edit(corpus[1], keep_mtime=True)
        return value

    monkeypatch.setattr(RunCache, "state", state_then_edit)
    _review(root, tmp_path / "c", capsysbinary)
    assert not list((tmp_path / "c" / "runs").glob("*.json"))  # nothing stored
    assert not list((tmp_path / "c" / "runs").glob("*.tmp"))  # and no spool left behind


def test_state_covers_link_targets(tmp_path: Path) -> None:
    root = tmp_path / "runs"
    root.mkdir()
    outside = tmp_path / "elsewhere.json"
    outside.write_text("{}")
    (root / "link.json").symlink_to(outside)
    before = runcache.roots_state([str(root)])
    outside.write_text("[]")
    assert runcache.roots_state([str(root)]) != before


def test_key_depends_on_mode_and_roots(tmp_path: Path) -> None:
    a = RunKey(mode="json", roots=(str(tmp_path),)).digest()
    assert a != RunKey(mode="table", roots=(str(tmp_path),)).digest()
    assert a != RunKey(mode="json", roots=(str(tmp_path / "x"),)).digest()
