"""Trial review pages without a browser: content, evidence next to its line, escaping,
cleaning, bounded output on a heavy trial, the index, the asset and ``bf-assets show``."""

from __future__ import annotations

import dataclasses
from html.parser import HTMLParser
from pathlib import Path

import dagster as dg
import pytest
from trialkit import ACP_FILE, LLM_FILE, TrialSpec, healthy_spec, peak_traced_memory

from bf_assets.cli.main import main
from bf_assets.corpus.run import review_refs
from bf_assets.dataset.assemble import DatasetReview, assemble
from bf_assets.dataset.common import trial_key
from bf_assets.dataset.quarantine import QuarantineEntry, trial_path
from bf_assets.findings import Finding, sort_findings
from bf_assets.ingest.discovery import discover
from bf_assets.pages.on_demand import SOURCES_FILE, needs_page, sources_beside
from bf_assets.pages.site import page_name, render_on_demand, write_pages
from bf_assets.pages.trial import PageInput, render_trial
from bf_assets.review.options import ReviewOptions
from bf_sample.heavy import write_heavy_trial

REPO = Path(__file__).resolve().parents[1]
SECRET = "sk-ant-api03-" + "Q7x" * 14
HOME_PATH = "/home/alice/private-skills"
HOSTILE = '</pre></td><script>alert("x")</script><img src=x onerror=alert(1)>'


class Anchors(HTMLParser):
    """Ids, local links, script and img tags, and the cited rows of a page."""

    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()
        self.hrefs: list[str] = []
        self.scripts = 0
        self.imgs = 0
        self.cited: set[str] = set()
        self.handlers: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if a.get("id"):
            self.ids.add(a["id"] or "")
        if tag == "a" and (a.get("href") or "").startswith("#"):
            self.hrefs.append((a["href"] or "")[1:])
        if tag == "script":
            self.scripts += 1
        if tag == "img":
            self.imgs += 1
        if tag == "tr" and "cited" in (a.get("class") or ""):
            self.cited.add(a.get("id") or "")
        self.handlers.extend(k for k in a if k.startswith("on"))


def parse(html: str) -> Anchors:
    p = Anchors()
    p.feed(html)
    return p


def review_dataset(*roots: Path, **kw: str) -> DatasetReview:
    found = discover([str(r) for r in roots])
    reviews = review_refs(found.trials, ReviewOptions(tasks_dir=kw.get("tasks")))
    return assemble(reviews, quarantine_path=kw.get("quarantine"))


def page_of(ds: DatasetReview, key: tuple[str, str], *, clean: bool = True) -> str:
    t = next(x for x in ds.trials if trial_key(x) == key)
    inp = PageInput(review=t, decision=ds.decision.get(key), entry=ds.quarantine.get(key))
    html, _ = render_trial(inp, clean=clean)
    return html


def hostile_spec() -> TrialSpec:
    """A trial whose every text is hostile: markup, a secret, a host path, a banned key."""
    spec = healthy_spec(rollout_id='b4d"<i>x')
    assert spec.acp is not None and spec.llm is not None
    spec.acp[1]["text"] = HOSTILE
    call = spec.acp[2]
    call["title"] = "printf '{\"reward\": 1.0}' > /logs/verifier/reward.txt # " + HOSTILE
    call["content"] = [
        {
            "type": "content",
            "content": {"type": "text", "text": f"key {SECRET} in {HOME_PATH}/a.md"},
        }
    ]
    reply = spec.llm[0]["response"]["body"]["choices"][0]["message"]
    reply["content"] = HOSTILE
    reply["reasoning_content"] = "PRIVATE-REASONING-TEXT"
    spec.result["effective_skills_dir"] = HOME_PATH
    spec.result["verifier_error"] = "verifier crashed: " + HOSTILE
    spec.result["verifier_error_category"] = "verifier_failure"
    spec.result["rewards"] = None
    # a banned key holding an object, right after the line a finding is located at
    result: dict = {}
    for k, v in spec.result.items():
        result[k] = v
        if k == "verifier_error":
            result["provider_specific_fields"] = {"inner": "LEAKED-INNER-VALUE", "n": [1, 2]}
    spec.result = result
    return spec.sync()


@pytest.fixture
def hostile(runs_root: Path) -> tuple[DatasetReview, tuple[str, str]]:
    hostile_spec().write(runs_root)
    ds = review_dataset(runs_root)
    [t] = ds.trials
    return ds, trial_key(t)


# --------------------------------------------------------------------------- fixtures and sample


def _fixture_roots() -> list[Path]:
    shared = REPO.parent / "shared" / "fixtures"
    roots = [REPO / "data" / "runs" / "jobs"]
    roots += [
        shared / "benchflow-evals",
        shared / "benchflow-writer" / "jobs",
        shared / "harbor-real",
    ]
    return [r for r in roots if r.is_dir()]


@pytest.mark.parametrize("root", _fixture_roots(), ids=lambda p: p.name)
def test_every_held_or_rejected_trial_shows_each_finding_next_to_its_line(root: Path) -> None:
    tasks = REPO / "data" / "runs" / "tasks" if root == REPO / "data" / "runs" / "jobs" else None
    ds = review_dataset(root, tasks=str(tasks) if tasks else "")
    held = [t for t in ds.trials if t.verdict in ("quarantined", "rejected")]
    assert held
    for t in held:
        html = page_of(ds, trial_key(t))
        a = parse(html)
        assert a.scripts == 0 and a.imgs == 0 and not a.handlers
        assert set(a.hrefs) <= a.ids, f"broken anchors in {t.ref.rel_path}"
        for i, f in enumerate(sort_findings(t.findings), start=1):
            assert f"f{i}" in a.ids
            assert f.check in html
            if not f.file:
                continue
            anchor = f"ev{i}"
            assert anchor in a.ids, (t.ref.rel_path, f)
            present = (Path(t.ref.path) / f.file).is_file()
            if f.line and present:
                assert f"{anchor}-L{f.line}" in a.cited
                assert f"{anchor}-L{f.line}" in a.hrefs
            elif present:  # located by its evidence or key, else the head of the file
                assert (
                    any(c.startswith(anchor + "-L") for c in a.cited) or "its first lines" in html
                )


def test_flat_fixture_page_highlights_the_cited_acp_steps(fixtures_dir: Path) -> None:
    ds = review_dataset(fixtures_dir / "benchflow-evals")
    [t] = [x for x in ds.trials if x.ref.rollout == "reward-hack"]
    html = page_of(ds, trial_key(t))
    a = parse(html)
    for check in ("HACK_SCORE_WRITE", "HACK_TEST_SUPPRESSION", "HACK_VERIFIER_TAMPER"):
        assert check in html
    assert 'class="step cited" id="acp-L1"' in html and 'class="step cited" id="acp-L2"' in html
    assert "acp-L1" in a.hrefs and "llm-L2" in a.hrefs  # "in the conversation" links
    assert "mkdir -p results &amp;&amp; printf" in html  # the tool call and its arguments
    assert "skill load" not in html or "debug" in html


# --------------------------------------------------------------------------- hostile data


def test_trial_text_never_injects_markup(hostile: tuple[DatasetReview, tuple[str, str]]) -> None:
    ds, key = hostile
    for clean in (True, False):
        html = page_of(ds, key, clean=clean)
        a = parse(html)
        assert a.scripts == 0 and a.imgs == 0 and not a.handlers
        assert "<script>alert" not in html and "<img src=x" not in html
        assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in html
        assert "<i>x" not in html and "&lt;i&gt;x" in html
        assert "script-src 'none'" in html  # and no script could run anyway
    out = write_pages(ds, Path(ds.trials[0].ref.root).parent / "pages")
    index = out.index.read_text()
    a = parse(index)
    assert a.scripts == 1 and a.imgs == 0 and not a.handlers
    assert "<i>x" not in index
    assert "'sha256-" in index  # the one inline script, pinned by its hash
    name = out.pages[key].name
    assert "<" not in name and '"' not in name


def test_clean_page_hides_secrets_host_paths_and_banned_keys(
    hostile: tuple[DatasetReview, tuple[str, str]],
) -> None:
    ds, key = hostile
    clean, raw = page_of(ds, key), page_of(ds, key, clean=False)
    for leak in (SECRET, HOME_PATH, "LEAKED-INNER-VALUE", "PRIVATE-REASONING-TEXT"):
        assert leak not in clean, leak
    assert SECRET in raw and HOME_PATH in raw and "LEAKED-INNER-VALUE" in raw
    assert "RAW page" in raw and "RAW page" not in clean
    assert "[REDACTED:" in clean
    # the verifier error is located in result.json (the finding cites no line)
    a = parse(clean)
    [i] = [
        n
        for n, f in enumerate(sort_findings(ds.trials[0].findings), start=1)
        if f.check == "GATE_VERIFIER_ERROR"
    ]
    assert any(c.startswith(f"ev{i}-L") for c in a.cited)
    assert "(located)" in clean


# --------------------------------------------------------------------------- big trials


@pytest.fixture(scope="module")
def heavy(tmp_path_factory: pytest.TempPathFactory) -> DatasetReview:
    root = tmp_path_factory.mktemp("heavy") / "jobs"
    write_heavy_trial(root / "2026-06-03__09-00-00", n_exchanges=400)
    return review_dataset(root)


def test_heavy_trial_page_is_small_and_bounded(heavy: DatasetReview, tmp_path: Path) -> None:
    [t] = heavy.trials
    llm = Path(t.ref.path) / LLM_FILE
    assert llm.stat().st_size > 100 * 1024 * 1024  # the 400-exchange trial: ~145 MB
    with peak_traced_memory() as peak:  # its time is measured by bench/pages_bench.py
        res = write_pages(heavy, tmp_path / "pages")
    size = res.pages[trial_key(t)].stat().st_size
    assert size < 300 * 1024
    assert peak[0] < 64 * 1024 * 1024
    html = res.pages[trial_key(t)].read_text()
    assert "400 lines in the file" in html
    assert "lines 9–392 not shown (384 lines)" in html  # the window says what it left out
    assert "skill load: pandas-groupby" in html


def test_a_cited_line_deep_in_a_giant_line_is_shown_around_its_evidence(
    heavy: DatasetReview,
) -> None:
    [t] = heavy.trials
    rows = Path(t.ref.path) / "results.jsonl"
    assert rows.stat().st_size > 100 * 1024 * 1024
    with rows.open("rb") as fh:  # something near the end of the one 145 MB line
        fh.seek(-4000, 2)
        tail = fh.read(4000).decode(errors="replace")
    needle = tail[1000:1040]
    f = Finding("GATE_ROW_SHAPE", "blocker", "test finding", "results.jsonl", 1, needle)
    probe = t.replace(findings=[f], verdict="rejected")
    with peak_traced_memory() as peak:
        html, facts = render_trial(PageInput(review=probe))
    assert facts.windows == 1
    assert needle[:20].replace('"', "&quot;") in html or needle[:20] in html
    assert len(html) < 200 * 1024
    assert peak[0] < 64 * 1024 * 1024


# --------------------------------------------------------------------------- site and index


def test_pages_are_deterministic_and_stale_ones_are_removed(
    runs_root: Path, tmp_path: Path
) -> None:
    healthy_spec().write(runs_root)
    healthy_spec(rollout_id="bbbb2222").write(runs_root)
    ds = review_dataset(runs_root)
    out = tmp_path / "pages"
    first = write_pages(ds, out)
    stale = out / "trials" / "gone-0000000000.html"
    stale.write_text("old")
    snapshot = {p: p.read_bytes() for p in out.rglob("*.html") if p != stale}
    second = write_pages(ds, out)
    assert not stale.exists() and second.removed == 1
    assert {p: p.read_bytes() for p in out.rglob("*.html")} == snapshot
    assert first.index == out / "index.html"
    assert page_name(("jobs/x", "a")) != page_name(("jobs", "x__a"))


def test_index_lists_held_trials_first_with_filter_data(runs_root: Path, tmp_path: Path) -> None:
    healthy_spec().write(runs_root)
    healthy_spec(rollout_id="cccc3333").write(runs_root)
    q = tmp_path / "quarantine.yaml"
    q.write_text(
        "- trial: 2026-06-01__00-00-00/demo-task__cccc3333\n  action: quarantine\n"
        "  reason: looks odd\n  by: tester\n  at: 2026-11-03\n"
    )
    ds = review_dataset(runs_root, quarantine=str(q))
    res = write_pages(ds, tmp_path / "pages")
    index = res.index.read_text()
    assert index.index("demo-task__cccc3333") < index.index("demo-task__aaaa1111")
    assert 'data-verdict="quarantined"' in index and 'data-harness="codex-acp"' in index
    assert '<option value="SKILL_EXPECTED_UNKNOWN">' in index or "<option value=" in index
    assert "quarantine by tester" in index
    page = next(p for k, p in res.pages.items() if k[1].endswith("cccc3333")).read_text()
    assert "looks odd" in page and "In force: <b>quarantine</b>" in page
    assert "Coverage" in index and 'href="trials/' in index


def test_trial_pages_asset_links_its_index(
    runs_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from bf_assets.defs.pages import trial_pages

    healthy_spec().write(runs_root)
    ds = review_dataset(runs_root)
    monkeypatch.setenv("BF_WAREHOUSE", str(tmp_path / "wh"))
    from bf_assets.defs.resources import RunRoots, local_warehouse

    roots = RunRoots(roots=[str(runs_root)])
    result = trial_pages(context=dg.build_asset_context(), run_roots=roots, review_report=ds)
    meta = result.metadata or {}
    index = Path(meta["index"].value)  # type: ignore[union-attr]
    # beside the UI's report, in the run roots' own part of the warehouse
    want = local_warehouse(roots.roots) / "report" / "pages" / "index.html"
    assert index == want and index.is_file()
    assert str(index).startswith(str(tmp_path / "wh"))
    assert meta["index_url"].value == index.resolve().as_uri()  # type: ignore[union-attr]
    # a clean exported trial: its page waits to be asked for, and the index links it
    assert meta["pages"].value == 0  # type: ignore[union-attr]
    assert meta["pages_on_demand"].value == 1  # type: ignore[union-attr]
    [t] = ds.trials
    assert f'href="{page_name(trial_key(t))}"' in index.read_text()
    sources = local_warehouse(roots.roots) / SOURCES_FILE
    assert sources.is_file() and "report" not in sources.relative_to(tmp_path).parts


def _flagged_and_clean(runs_root: Path, tmp_path: Path) -> DatasetReview:
    """Two healthy trials, the second held by a person (quarantined): one needs a page."""
    healthy_spec().write(runs_root)
    healthy_spec(rollout_id="cccc3333").write(runs_root)
    q = tmp_path / "quarantine.yaml"
    q.write_text(
        "- trial: 2026-06-01__00-00-00/demo-task__cccc3333\n  action: quarantine\n"
        "  reason: looks odd\n  by: tester\n  at: 2026-11-03\n"
    )
    return review_dataset(runs_root, quarantine=str(q))


ON_DEMAND_NOTE = (
    '<p class="note">The pages of 1 trial exported clean are rendered when first opened through '
    "the trial page server of <code>bf-assets ui</code>, or with <code>bf-assets show TRIAL</code>."
    "</p>\n"
)


def test_a_release_renders_the_pages_a_person_needs_and_the_rest_on_demand(
    runs_root: Path, tmp_path: Path
) -> None:
    ds = _flagged_and_clean(runs_root, tmp_path)
    held, clean = sorted(ds.trials, key=lambda t: t.verdict != "quarantined")
    everything = write_pages(ds, tmp_path / "all" / "pages")
    out = tmp_path / "wh" / "report" / "pages"
    sources = sources_beside(out)
    res = write_pages(ds, out, on_demand=sources)
    assert (res.n_pages, res.on_demand) == (1, 1)
    assert set(res.pages) == {trial_key(held)}
    waiting = page_name(trial_key(clean))
    assert not (out / waiting).exists()
    # the index links every trial the same way, rendered or not, and says how to open them
    index = res.index.read_text()
    assert index.replace(ON_DEMAND_NOTE, "") == everything.index.read_text()
    assert ON_DEMAND_NOTE in index and f'href="{waiting}"' in index
    # asked for, the waiting page is the page a full render makes
    assert render_on_demand(out, waiting, sources) == out / waiting
    assert (out / waiting).read_bytes() == everything.pages[trial_key(clean)].read_bytes()
    assert render_on_demand(out, "trials/no-such-trial-0000000000.html", sources) is None
    # the next release drops the pages made on demand (the trial may have changed since)
    again = write_pages(ds, out, on_demand=sources)
    assert not (out / waiting).exists() and again.removed == 1
    assert again.reused == 1 and (out / page_name(trial_key(held))).is_file()


def test_only_cleaned_pages_are_rendered_on_demand(runs_root: Path, tmp_path: Path) -> None:
    ds = _flagged_and_clean(runs_root, tmp_path)
    out = tmp_path / "raw" / "pages"
    res = write_pages(ds, out, clean=False, on_demand=sources_beside(out))
    assert res.on_demand == 1
    [clean] = [t for t in ds.trials if t.verdict == "publishable"]
    name = page_name(trial_key(clean), clean=False)
    assert render_on_demand(out, name, sources_beside(out)) is None
    assert not (out / name).exists()


NEEDS_PAGE_CASES = [
    # (effective verdict, severities of its findings, export reason, entry in force) -> rendered
    ("publishable", [], "exported", False, False),
    ("publishable", ["info"], "exported", False, False),
    ("publishable", ["warning"], "exported", False, True),
    ("publishable", [], "superseded", False, True),
    ("publishable", [], "not training-ready", False, True),
    ("publishable", [], None, False, True),
    ("publishable", [], "exported", True, True),  # a person released it: they look again
    ("quarantined", ["quarantine"], "quarantined", False, True),
    ("rejected", ["blocker"], "rejected", False, True),
]


@pytest.mark.parametrize(("verdict", "severities", "reason", "entry", "rendered"), NEEDS_PAGE_CASES)
def test_which_trials_a_release_renders(
    runs_root: Path,
    verdict: str,
    severities: list[str],
    reason: str | None,
    entry: bool,
    rendered: bool,
) -> None:
    healthy_spec().write(runs_root)
    ds = review_dataset(runs_root)
    [t] = ds.trials
    fs = [Finding("SOME_CHECK", s, "a finding", "result.json", 1, "") for s in severities]
    t = t.replace(verdict=verdict, findings=fs)
    d = ds.decision.get(trial_key(t))
    assert d is not None and d.exported
    decision = None if reason is None else dataclasses.replace(d, reason=reason)
    held = QuarantineEntry(trial_path(t), "release", "fine", "tester", "2026-11-03")
    assert needs_page(t, decision, held if entry else None) is rendered


def test_show_prints_the_page_and_names_near_matches(
    runs_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    healthy_spec().write(runs_root)
    out = tmp_path / "pages"
    trial = "jobs/2026-06-01__00-00-00/demo-task__aaaa1111"
    assert main(["show", trial, "--runs", str(runs_root), "--out", str(out)]) == 0
    path = Path(capsys.readouterr().out.strip())
    assert path.is_file() and path.parent == (out / "trials").resolve()
    assert (out / "index.html").is_file()
    assert "demo-task__aaaa1111" in path.read_text()
    assert main(["show", trial[:-1] + "2", "--runs", str(runs_root), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert (
        "names no reviewed trial" in err
        and "did you mean jobs/2026-06-01__00-00-00/demo-task__aaaa1111" in err
    )
    assert main(["show", trial, "--runs", str(runs_root), "--out", str(out), "--raw"]) == 0
    assert "RAW page" in Path(capsys.readouterr().out.strip()).read_text()


def test_acp_file_absent_is_said_not_crashed(runs_root: Path) -> None:
    t = healthy_spec().write(runs_root)
    t.drop(ACP_FILE)
    ds = review_dataset(runs_root)
    html = page_of(ds, trial_key(ds.trials[0]))
    assert "acp_trajectory.jsonl is absent" in html
    assert "Model exchanges" in html and LLM_FILE in html


# --------------------------------------------------------------------------- file access


def test_cited_files_outside_the_trial_or_special_are_not_opened(
    runs_root: Path, tmp_path: Path
) -> None:
    import os

    from trialkit import deadline

    t = healthy_spec().write(runs_root)
    os.mkfifo(t.path / "verifier" / "fifo.txt")
    outside = tmp_path / "outside.txt"
    outside.write_text("SECRET-OUTSIDE\n")
    (t.path / "artifacts" / "link.txt").symlink_to(outside)
    ds = review_dataset(runs_root)
    [r] = ds.trials
    probe = r.replace(
        findings=[
            Finding("GATE_UNREADABLE", "blocker", "fifo", "verifier/fifo.txt", 1),
            Finding("GATE_UNREADABLE", "blocker", "link", "artifacts/link.txt", 1),
            Finding("GATE_UNREADABLE", "blocker", "up", "../../../etc/passwd", 1),
            Finding("GATE_UNREADABLE", "blocker", "past the end", "result.json", 10_000),
        ],
    )
    with deadline(10):
        html, facts = render_trial(PageInput(review=probe))
    assert "SECRET-OUTSIDE" not in html and "root:" not in html
    assert "not a regular file" in html and "leaves the run root" in html
    assert "past the end of the file" in html
    assert facts.windows == 3  # the ../ path gets no window at all


def test_a_long_line_is_clipped_and_the_window_says_so(runs_root: Path) -> None:
    t = healthy_spec().write(runs_root)
    big = "x" * (3 * 1024 * 1024)
    t.append_line(ACP_FILE, '{"type": "agent_message", "text": "' + big + '"}')
    ds = review_dataset(runs_root)
    [r] = ds.trials
    probe = r.replace(findings=[Finding("HACK_SUSPECTED", "quarantine", "m", ACP_FILE, 4)])
    html, _ = render_trial(PageInput(review=probe))
    assert len(html) < 200 * 1024
    assert "bytes not shown" in html and "characters not shown" in html


def test_a_page_made_while_a_release_replaced_its_sources_is_made_again(
    runs_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from bf_assets.pages import site

    ds = _flagged_and_clean(runs_root, tmp_path)
    out = tmp_path / "wh" / "report" / "pages"
    sources = sources_beside(out)
    write_pages(ds, out, on_demand=sources)
    [clean] = [t for t in ds.trials if t.verdict == "publishable"]
    name = page_name(trial_key(clean))
    made: list[Path] = []
    real = site._render_one

    def render_during_a_release(inp: PageInput, path: Path, clean: bool) -> int:
        made.append(path)
        n = real(inp, path, clean)
        if len(made) == 1:  # a release replaces the sources (and drops pages made on demand)
            write_pages(ds, out, on_demand=sources)
        return n

    monkeypatch.setattr(site, "_render_one", render_during_a_release)
    assert render_on_demand(out, name, sources) == out / name
    assert made == [out / name, out / name] and (out / name).is_file()
