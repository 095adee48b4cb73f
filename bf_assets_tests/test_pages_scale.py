"""Trial pages for many trials: the same bytes however they are made (lines served from
memory or streamed, pages rendered on one core or in workers that remember cleaned text),
every page still cleaned, and one bad trial never failing the batch."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
from test_pages_core import HOME_PATH, SECRET, review_dataset
from trialkit import healthy_spec

from bf_assets.dataset.common import trial_key
from bf_assets.pages import lines, site
from bf_assets.pages.lines import TrialFiles
from bf_assets.redact import clean as clean_module


@pytest.fixture
def parallel(monkeypatch: pytest.MonkeyPatch) -> None:
    """Forked workers even for a handful of pages, in batches of one."""
    monkeypatch.setattr(site, "PARALLEL_MIN_PAGES", 1)
    monkeypatch.setattr(site, "BATCH", 1)


def _scan_everything(trial: Path, root: Path, rel: str, n_lines: int) -> dict[str, object]:
    needles = [b"needle", b"dle\n", b"spans\nlines", b'"key"', b"x" * 40, b"absent"]
    with TrialFiles(str(trial), str(root)) as files:
        files.want(rel, [2, 5, 7, n_lines + 3], head=2, tail=2, needles=needles)
        scan = files.scan(rel)
        got: dict[str, object] = {
            "lines": scan.lines,
            "size": scan.size,
            "spans": {n: scan.span(n) for n in range(0, n_lines + 2)},
            "found": dict(scan.found),
        }
        for n in range(1, n_lines + 2):
            for limit in (0, 1, 5, 64, 10_000):
                got[f"read {n} {limit}"] = files.read(rel, n, limit)
            got[f"at {n}"] = files.read_at(rel, n, 3, 7)
            got[f"find {n}"] = [files.find_in_line(rel, n, nd) for nd in needles]
    return got


def test_a_file_read_whole_gives_what_streaming_it_gives(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "jobs"
    trial = root / "job" / "trial"
    trial.mkdir(parents=True)
    body = (
        b"first line\n"
        b"a needle here\r\n"
        b"\n"
        b'{"key": "' + b"x" * 3000 + b'"}\n'
        b"the needle spans\nlines\n"
        b"ends in a need"
        b"le\n"
        b"dle\n"
        b"last line, no newline"
    )
    (trial / "f.jsonl").write_bytes(body)
    n_lines = body.count(b"\n") + 1
    whole = _scan_everything(trial, root, "f.jsonl", n_lines)
    monkeypatch.setattr(lines, "WHOLE_FILE", 0)  # every file streamed
    streamed = _scan_everything(trial, root, "f.jsonl", n_lines)
    assert whole == streamed
    assert whole["found"] == {b"needle": 2, b"dle\n": 7, b'"key"': 4, b"x" * 40: 4}


def test_a_secret_repeated_on_many_pages_is_cleaned_on_every_one(
    runs_root: Path, tmp_path: Path, parallel: None
) -> None:
    for i in range(5):
        spec = healthy_spec(task=f"task-{i}", rollout_id=f"dddd000{i}")
        assert spec.acp is not None
        spec.acp[1]["text"] = f"key {SECRET} in {HOME_PATH}/a.md"  # the same text every time
        spec.write(runs_root)
    res = site.write_pages(review_dataset(runs_root), tmp_path / "pages")
    assert len(res.pages) == 5
    for path in res.pages.values():
        page = path.read_text()
        assert SECRET not in page and HOME_PATH not in page
        assert "[REDACTED:" in page


def test_one_trial_that_fails_to_render_gets_an_error_page_and_the_batch_goes_on(
    runs_root: Path, tmp_path: Path, parallel: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    for i in range(4):
        healthy_spec(task=f"task-{i}", rollout_id=f"eeee000{i}").write(runs_root)
    ds = review_dataset(runs_root)
    bad = trial_key(ds.trials[2])
    real = site.render_trial

    def render(
        inp: site.PageInput, *, clean: bool = True, scrub: site.Scrub | None = None
    ) -> object:
        if trial_key(inp.review) == bad:
            raise OSError("the disk went away")
        return real(inp, clean=clean, scrub=scrub)

    monkeypatch.setattr(site, "render_trial", render)  # the forked workers inherit it
    res = site.write_pages(ds, tmp_path / "pages")
    assert len(res.pages) == 4
    for key, path in res.pages.items():
        page = path.read_text()
        assert ("could not be read for this page" in page) == (key == bad)
        assert "the disk went away" in page or key != bad


def test_a_new_quarantine_entry_or_raw_pages_render_again(
    runs_root: Path, tmp_path: Path, parallel: None
) -> None:
    for i in range(3):
        healthy_spec(task=f"task-{i}", rollout_id=f"ffff000{i}").write(runs_root)
    out = tmp_path / "pages"
    assert site.write_pages(review_dataset(runs_root), out).reused == 0
    assert site.write_pages(review_dataset(runs_root), out).reused == 3
    q = tmp_path / "quarantine.yaml"
    q.write_text(
        "- trial: 2026-06-01__00-00-00/task-1__ffff0001\n  action: quarantine\n"
        "  reason: looks odd\n  by: tester\n  at: 2026-11-03\n"
    )
    held = site.write_pages(review_dataset(runs_root, quarantine=str(q)), out)
    assert held.reused == 2
    page = next(p for k, p in held.pages.items() if k[1] == "task-1__ffff0001").read_text()
    assert "looks odd" in page
    assert site.write_pages(review_dataset(runs_root, quarantine=str(q)), out).reused == 3
    raw = site.write_pages(review_dataset(runs_root, quarantine=str(q)), out, clean=False)
    assert raw.reused == 0


def test_pages_are_world_readable_and_leave_no_temporary_file(
    runs_root: Path, tmp_path: Path, parallel: None
) -> None:
    for i in range(3):
        healthy_spec(task=f"task-{i}", rollout_id=f"abab000{i}").write(runs_root)
    out = tmp_path / "pages"
    site.write_pages(review_dataset(runs_root), out)
    site.write_pages(review_dataset(runs_root), out)
    files = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file())
    assert [f for f in files if not f.endswith(".html")] == [".pages-state.json"]
    assert len(files) == 5
    for p in out.rglob("*.html"):
        assert stat.S_IMODE(p.stat().st_mode) == 0o644


def test_new_secret_rules_render_every_page_again_and_redact_there(
    runs_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "acme_" + "k3y9" * 6
    for i in range(2):
        spec = healthy_spec(task=f"task-{i}", rollout_id=f"acac000{i}")
        assert spec.acp is not None
        spec.acp[1]["text"] = f"the team key is {secret}"
        spec.write(runs_root)
    out = tmp_path / "pages"
    first = site.write_pages(review_dataset(runs_root), out)
    assert all(secret in p.read_text() for p in first.pages.values())  # no rule knows it yet
    rules = tmp_path / "extra.toml"
    rules.write_text(
        "[[rules]]\nid = \"acme-key\"\nregex = '''\\bacme_[a-z0-9]{24}\\b'''\n"
        'keywords = ["acme_"]\n'
    )
    monkeypatch.setenv("BF_ASSETS_SECRET_RULES", str(rules))
    clean_module._clean_short.cache_clear()  # a release is a new process: no cleaned text kept
    again = site.write_pages(review_dataset(runs_root), out)
    assert again.reused == 0
    for p in again.pages.values():
        page = p.read_text()
        assert secret not in page and "[REDACTED:acme-key]" in page
