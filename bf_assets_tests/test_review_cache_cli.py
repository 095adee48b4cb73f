"""``bf-assets review --cache-dir``: a second review of an unchanged corpus reads no trial
again and prints the same output; any change under a run root (a file edited, added,
removed or renamed, even with its mtime restored), a changed plan, or a damaged entry gives
the output a review without the cache gives."""

import json
import os
from pathlib import Path

import pytest
from trialkit import Trial, healthy_spec

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
def scans(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the trials actually read (cache misses)."""
    import bf_assets.review.trial as review_mod

    seen: list[int] = []
    real = review_mod.scan_trial

    def counting(*a, **k):
        seen.append(1)
        return real(*a, **k)

    monkeypatch.setattr(review_mod, "scan_trial", counting)
    return seen


def _review(root: Path, cache: Path | None, capsysbinary, *extra: str) -> tuple[int, bytes]:
    cached = ["--cache-dir", str(cache)] if cache is not None else []
    code = cli.main(["review", str(root), "--json", *cached, *extra])
    out, _ = capsysbinary.readouterr()
    return code, out


def _verdicts(out: bytes) -> dict[str, str]:
    return {t["rollout"]: t["verdict"] for t in json.loads(out)["trials"]}


def test_unchanged_corpus_is_answered_from_the_cache(
    corpus: list[Trial], tmp_path: Path, capsysbinary, scans: list[int]
) -> None:
    root = corpus[0].root
    first = _review(root, tmp_path / "c", capsysbinary)
    assert len(scans) == 2
    second = _review(root, tmp_path / "c", capsysbinary)
    assert len(scans) == 2  # the second run read no trial
    assert second == first == _review(root, None, capsysbinary) and first[0] == 0
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
    corpus: list[Trial], tmp_path: Path, capsysbinary, change: str
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
    again = _review(root, tmp_path / "c", capsysbinary)
    assert again == _review(root, None, capsysbinary)  # never the stale answer
    if change == "add":
        assert len(_verdicts(again[1])) == 3
    else:
        assert again[0] == 1 and _verdicts(again[1])[victim.path.name] == "rejected"


def test_a_changed_plan_gives_the_new_plans_output(
    corpus: list[Trial], tmp_path: Path, capsysbinary
) -> None:
    plan = tmp_path / "plan.yaml"
    plan.write_text(PLAN.format(trials=1))
    root = corpus[0].root
    first = _review(root, tmp_path / "c", capsysbinary, "--plan", str(plan))
    assert first[0] in (0, 1)
    plan.write_text(PLAN.format(trials=2))
    again = _review(root, tmp_path / "c", capsysbinary, "--plan", str(plan))
    assert again == _review(root, None, capsysbinary, "--plan", str(plan)) != first


def test_a_damaged_entry_is_never_served(
    corpus: list[Trial], tmp_path: Path, capsysbinary, scans: list[int]
) -> None:
    root = corpus[0].root
    first = _review(root, tmp_path / "c", capsysbinary)
    entries = sorted((tmp_path / "c").rglob("*.json"))
    assert len(entries) == 2
    entries[0].write_bytes(entries[0].read_bytes()[:-7])  # torn
    entries[1].write_bytes(b"\xff" + entries[1].read_bytes())  # not JSON
    again = _review(root, tmp_path / "c", capsysbinary)
    assert again == first and len(scans) == 4  # both read again
