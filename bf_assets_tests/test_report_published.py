"""The shipped report and card hold only what the export may show.

A release is built from trials whose names, model, plan and quarantine entry are hostile:
raw HTML and Markdown links in a rollout directory name, a model name and the plan name, a
secret in the model name and in a task id (labels of the coverage picture), a secret and a
script in a quarantine reason and its ``by``, and an excluded trial whose finding evidence
holds a marker.  No published byte, decoded pictures included, holds a secret or the
excluded trial's evidence; rendered as CommonMark with raw HTML enabled (as the Hub does),
neither the report nor the card holds a tag, an attribute or a link from trial data, and
each value still reads as itself.  The publish gate reads what a reader of the rendered
files sees: the payload of every ``data:`` URI, and Markdown as it renders.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import re
import shutil
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import orjson
import pytest
from leakproof_corpus import LOWER_ALNUM, Gen, Planted
from test_leakproof_bundle import published_values
from trialkit import TrialSpec, healthy_spec

from bf_assets.corpus.run import review_refs
from bf_assets.dataset.reportfiles import (
    EXCLUDED_FINDING_KEYS,
    EXCLUDED_TRIAL_KEYS,
    REPORT_JSON,
    REPORT_MD,
    ReportContext,
    report_files,
)
from bf_assets.dataset.reportmarkup import md_cell, md_code, md_fence, md_text
from bf_assets.ingest.discovery import discover
from bf_assets.publish.bundle import Bundle, bundle_reviews, review_exports
from bf_assets.publish.manifest import MANIFEST_PATH
from bf_assets.publish.verify import verify_bundle, verify_reviews
from bf_assets.review.options import ReviewOptions
from bf_assets.review.record import TrialReview

JOB = "2026-06-01__00-00-00"
MODEL = "openai/gpt-x"  # trialkit's model
HOSTILE_VALUES = (
    '<img src=x onerror=alert("1")>',
    "<script>alert(1)</script>",
    "[x](javascript:alert(1))",
    "![i](javascript:alert(1))",
    "<javascript:alert(1)>",
    "&lt;b&gt; &#95; &amp;",
    "__init__ *b* ~~s~~ `c` ``d``",
    "a\\|b\\",
    "# heading",
    "- item",
    "1. one",
    "> quote",
    "line one\n<div>\nline three",
    "sk_live_abc_def",
    "task__aaaa1111",
    "<https://example.com>",
    "```",
    "|",
    "_x_",
    "<!-- c -->",
    "]: /x",
)


def markdown() -> Any:
    """A CommonMark renderer with tables and raw HTML on, as the Hub renders a card, that
    takes any link target (markdown-it drops ``javascript:`` ones; not every renderer does)."""
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])
    md.validateLink = lambda url: True
    return md


def visible(rendered: str) -> str:
    """The text a reader sees of rendered HTML (tags dropped, entities undone)."""
    return html.unescape(re.sub(r"<[^>]+>", "", rendered))


def raw_html(text: str) -> list[str]:
    """The raw HTML Markdown ``text`` passes through to the page."""
    tokens = markdown().parse(text)
    inline = [c for t in tokens if t.type == "inline" for c in t.children or []]
    return [t.content for t in tokens if t.type == "html_block"] + [
        c.content for c in inline if c.type == "html_inline"
    ]


@pytest.mark.parametrize("value", HOSTILE_VALUES)
def test_an_escaped_value_renders_as_its_own_text(value: str) -> None:
    one_line = value.replace("\n", " ")
    md = markdown()
    for where, text in (
        ("text", f"A {md_text(value)} Z"),
        ("line start", md_text(value)),
        ("cell", f"| head | next |\n|---|---|\n| {md_cell(value)} | z |\n"),
        ("code span", f"A {md_code(value)} Z"),
        ("code span in a cell", f"| head |\n|---|\n| {md_code(value, in_table=True)} |\n"),
    ):
        tokens = md.parse(text)
        inline = [c for t in tokens if t.type == "inline" for c in t.children or []]
        made = {c.type for c in inline} - {"text", "softbreak", "code_inline"}
        assert not raw_html(text) and not made, (where, text, made)
        assert one_line in visible(md.render(text)), (where, text)
    block = md_fence(value, "sh")
    assert [t.type for t in md.parse(block)] == ["fence"] and md.parse(block)[0].content == (
        value + "\n"
    )


PLAIN_VALUES = (
    "demo-task__aaaa1111",
    "jobs/2026-06-01__00-00-00/demo-task__aaaa1111",
    "openai/gpt-5",
    "anthropic/claude-sonnet-4-5",
    "0.2",
    "with-skill",
    "release-0123456789ab",
    "sk_live_" + Gen(7).s(24),  # a token left whole: the gate reads it as written
)


@pytest.mark.parametrize("value", PLAIN_VALUES)
def test_identifiers_and_tokens_are_written_as_they_are(value: str) -> None:
    assert md_text(value) == md_cell(value) == value


# --------------------------------------------------------------------------- the release


@dataclass
class HostileRelease:
    bundle: Bundle
    reviews: list[TrialReview]
    plan: Path
    quarantine: Path
    secrets: list[Planted]  # never in a published byte
    evidence: str  # the excluded trial's finding evidence: never published
    shown: list[str]  # hostile values each rendered file shows as text


def _swap(value: Any, old: str, new: str) -> Any:
    if isinstance(value, dict):
        return {k: _swap(v, old, new) for k, v in value.items()}
    if isinstance(value, list):
        return [_swap(v, old, new) for v in value]
    return value.replace(old, new) if isinstance(value, str) else value


def _spec(task: str, rollout_id: str) -> TrialSpec:
    """A publishable trial of ``task`` (its skills directory named after it)."""
    spec = healthy_spec(task=task, rollout_id=rollout_id)
    for doc in (spec.config, spec.result):
        doc["effective_skills_dir"] = doc["effective_skills_dir"].replace("demo-task", task)
    return spec


def _secret(name: str, prefix: str, core: str) -> Planted:
    return Planted(name, prefix + core, prefix + core, core)


def build_hostile_release(base: Path) -> HostileRelease:
    """The release of the module docstring, built under ``base``."""
    g = Gen(23)
    in_model = _secret("github pat in the model name", "ghp_", g.s(36))
    in_task = _secret("github pat in a task id", "ghp_", g.s(36))
    in_reason = _secret("stripe key in a quarantine reason", "sk_live_", g.s(24))
    evidence = "evidence-only-" + g.s(10, LOWER_ALNUM)
    model = 'openai/<img src=x onerror=alert("1")>' + in_model.secret
    plan_name = "<svg onload=alert(6)>[p](javascript:alert(7))"
    reason = "<script>alert(4)</script> see key " + in_reason.secret
    by = "<img src=x onerror=alert(5)>"
    root = base / "jobs"
    root.mkdir(parents=True)
    named = _spec("task-a", "aaaa<img src=x onerror=alert(2)>")
    for name in ("config", "result", "llm", "row", "acp"):
        setattr(named, name, _swap(getattr(named, name), MODEL, model))
    named.sync().write(root, JOB)
    task_b = "task-" + in_task.secret
    _spec(task_b, "bbbb2222").write(root, JOB)
    hacked = _spec("task-c", "[x](javascript:alert(3))")  # rejected: writes its own score
    assert hacked.acp is not None
    hacked.acp[2]["title"] = "printf '{\"reward\": 1.0}' > /logs/verifier/reward.txt # " + evidence
    hacked.sync().write(root, JOB)
    _spec("task-d", "dddd4444").write(root, JOB)
    _spec("task-e", "eeee5555").write(root, JOB)  # plain: exported whatever the others are
    quarantine = base / "quarantine.json"
    entry = {
        "trial": f"jobs/{JOB}/task-d__dddd4444",
        "action": "quarantine",
        "reason": reason,
        "by": by,
        "at": "2026-11-03",
    }
    quarantine.write_text(json.dumps([entry]))
    plan = base / "plan.json"
    cells = {
        "tasks": ["task-a", task_b, "task-c", "task-d", "task-e"],
        "harnesses": ["codex-acp"],
        "models": [model, MODEL],
        "skill_modes": ["with-skill"],
        "sandboxes": ["daytona"],
    }
    plan.write_text(json.dumps({"name": plan_name, "matrix": [cells]}))
    reviews = review_refs(discover([str(root)]).trials, ReviewOptions())
    assert any(f.evidence and evidence in f.evidence for r in reviews for f in r.findings), (
        "the excluded trial's finding carries the marker as evidence"
    )
    b = bundle_reviews(
        reviews, base / "staging", plan_path=str(plan), quarantine_path=str(quarantine)
    )
    return HostileRelease(
        bundle=b,
        reviews=reviews,
        plan=plan,
        quarantine=quarantine,
        secrets=[in_model, in_task, in_reason],
        evidence=evidence,
        shown=['<img src=x onerror=alert("1")>', "<script>alert(4)</script>", by],
    )


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> HostileRelease:
    return build_hostile_release(tmp_path_factory.mktemp("hostile"))


DATA_URI = re.compile(r"data:[\w.+-]+/[\w.+-]+;base64,([A-Za-z0-9+/=]+)")


def pictures(text: str) -> list[str]:
    """Every base64 ``data:`` URI in ``text``, decoded."""
    return [base64.b64decode(m).decode("utf-8", "replace") for m in DATA_URI.findall(text)]


def test_no_published_byte_holds_a_label_secret_or_excluded_evidence(
    hostile: HostileRelease,
) -> None:
    path = hostile.bundle.path
    text = published_values(path)
    drawn = [svg for rel in (REPORT_MD, "README.md") for svg in pictures((path / rel).read_text())]
    assert drawn and all("<svg" in svg for svg in drawn)  # the coverage picture is shipped
    everything = "\n".join([text, *drawn])
    for item in hostile.secrets:
        for piece in item.fragments():
            assert piece not in everything, (item.name, piece)
    assert hostile.evidence not in everything
    # the picture is drawn from the cleaned labels: the secret's place is marked, not blank
    assert any("[REDACTED" in svg and "task-" in svg for svg in drawn)
    assert "task-c__[x](javascript:alert(3))" in json.dumps(
        orjson.loads((path / REPORT_JSON).read_bytes())
    )  # the excluded trial is still there, by its identity


def test_an_excluded_trial_is_shown_by_identity_check_and_message(
    hostile: HostileRelease, tmp_path: Path
) -> None:
    doc = orjson.loads((hostile.bundle.path / REPORT_JSON).read_bytes())
    rows = {(t["job"], t["rollout"]): t for t in doc["trials"]}
    hacked = rows[(f"jobs/{JOB}", "task-c__[x](javascript:alert(3))")]
    assert hacked["exported"] is False and hacked["export_reason"] == "rejected"
    assert set(hacked) == {*EXCLUDED_TRIAL_KEYS, "findings", "exported"} | {
        "export_reason",
        "export_detail",
    }
    checks = {f["check"] for f in hacked["findings"]}
    assert "HACK_SCORE_WRITE" in checks
    assert all(set(f) == set(EXCLUDED_FINDING_KEYS) and f["message"] for f in hacked["findings"])
    exported = [t for t in doc["trials"] if t["exported"]]
    assert any(t["task_id"] == "task-e" for t in exported)
    assert all("skills" in t and "reward" in t for t in exported)
    # the local report (it never leaves the machine) keeps every trial whole
    ds, _ = review_exports(
        hostile.reviews,
        plan_path=str(hostile.plan),
        quarantine_path=str(hostile.quarantine),
    )
    report_files(ds, tmp_path, ReportContext(), clean=False)
    local = orjson.loads((tmp_path / REPORT_JSON).read_bytes())
    [whole] = [t for t in local["trials"] if t["rollout"] == hacked["rollout"]]
    assert any(hostile.evidence in (f["evidence"] or "") for f in whole["findings"])
    assert "skills" in whole


class Tags(HTMLParser):
    """Every start tag with its attributes."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


MARKDOWN_TAGS = {
    *[
        "p",
        "h1",
        "h2",
        "h3",
        "h4",
        "ul",
        "ol",
        "li",
        "strong",
        "em",
        "code",
        "pre",
        "table",
        "thead",
        "tbody",
        "tr",
        "th",
        "td",
        "a",
        "img",
        "br",
    ],
}


def rendered_files(release: HostileRelease) -> dict[str, str]:
    """The report and the card body as Markdown (what the Hub renders of each)."""
    path = release.bundle.path
    card = (path / "README.md").read_text().split("---\n", 2)[2]
    return {REPORT_MD: (path / REPORT_MD).read_text(), "README.md": card}


@pytest.mark.parametrize("rel", [REPORT_MD, "README.md"])
def test_the_report_and_card_render_no_markup_from_trial_data(
    hostile: HostileRelease, rel: str
) -> None:
    text = rendered_files(hostile)[rel]
    assert not raw_html(text), raw_html(text)[:5]
    page = markdown().render(text)
    parsed = Tags()
    parsed.feed(page)
    assert {t for t, _ in parsed.tags} <= MARKDOWN_TAGS, {t for t, _ in parsed.tags}
    for tag, attrs in parsed.tags:
        assert not [a for a in attrs if a.startswith("on")], (tag, attrs)
        if tag == "a":
            assert attrs.get("href") == "LICENSE", attrs  # the card's one link
        if tag == "img":
            assert (attrs.get("src") or "").startswith("data:image/svg+xml;base64,"), attrs
    seen = visible(page)
    for value in hostile.shown:
        assert value in seen, value
    if rel == REPORT_MD:  # names the card does not list: a rollout, the plan
        assert "aaaa<img src=x onerror=alert(2)>" in seen
        assert "task-c__[x](javascript:alert(3))" in seen
        assert "<svg onload=alert(6)>[p](javascript:alert(7))" in seen


def test_the_gate_finds_nothing_to_block_in_the_escaped_release(hostile: HostileRelease) -> None:
    report = verify_reviews(
        hostile.bundle.path,
        hostile.reviews,
        plan_path=str(hostile.plan),
        quarantine_path=str(hostile.quarantine),
    )
    for check in ("PUBLISH_SECRET", "PUBLISH_HOST_PATH", "PUBLISH_BANNED_KEY"):
        assert not report.findings[check], (check, report.findings[check])


# --------------------------------------------------------------------------- the gate


@pytest.fixture(scope="module")
def clean_bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("clean")
    (base / "jobs").mkdir()
    trial = _spec("task-a", "aaaa1111").write(base / "jobs", JOB)
    b = bundle_reviews([trial.review()], base / "staging")
    assert verify_bundle(b.path).ok
    return b.path


def _copy(bundle: Path, tmp_path: Path) -> Path:
    out = tmp_path / "bundle"
    shutil.copytree(bundle, out)
    return out


def _relist(bundle: Path, rel: str) -> None:
    """The manifest's record of ``rel`` made to match its bytes (added when missing)."""
    doc = orjson.loads((bundle / MANIFEST_PATH).read_bytes())
    data = (bundle / rel).read_bytes()
    rec = {"path": rel, "sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)}
    doc["files"] = [f for f in doc["files"] if f["path"] != rel] + [rec]
    (bundle / MANIFEST_PATH).write_bytes(orjson.dumps(doc, option=orjson.OPT_INDENT_2))


def _secret_findings(bundle: Path, rel: str) -> list[str]:
    report = verify_bundle(bundle)
    return [f.message for f in report.findings["PUBLISH_SECRET"] if f.file == rel]


def _stripe(seed: int) -> str:
    return "sk_live_" + Gen(seed).s(24)


def test_the_gate_decodes_the_picture_of_the_report(clean_bundle: Path, tmp_path: Path) -> None:
    bundle = _copy(clean_bundle, tmp_path)
    md = (bundle / REPORT_MD).read_text()
    svg, lift = pictures(md)  # the coverage matrix and the skill lift heatmap
    assert "Coverage" in svg and "Skill lift" in lift
    planted = svg.replace("</svg>", f"<text>key {_stripe(1)}</text></svg>")
    uri = base64.b64encode(planted.encode()).decode()
    (bundle / REPORT_MD).write_text(DATA_URI.sub(f"data:image/svg+xml;base64,{uri}", md))
    _relist(bundle, REPORT_MD)
    assert _stripe(1) not in (bundle / REPORT_MD).read_text()
    found = _secret_findings(bundle, REPORT_MD)
    assert any("data URI (image/svg+xml)" in m for m in found), found


def test_the_gate_reads_the_card_as_it_renders(clean_bundle: Path, tmp_path: Path) -> None:
    bundle = _copy(clean_bundle, tmp_path)
    card = (bundle / "README.md").read_text()
    escaped = md_text(f"Note: {_stripe(2)} ").replace("_", "\\_")  # split by escapes
    encoded = "data:text/plain," + "%73%6b" + _stripe(3)[2:]  # percent-encoded
    (bundle / "README.md").write_text(card + f"\n{escaped}\n\n![x]({encoded})\n")
    _relist(bundle, "README.md")
    found = _secret_findings(bundle, "README.md")
    assert any("(as rendered)" in m for m in found), found
    assert any("data URI (text/plain)" in m for m in found), found


def test_the_gate_scans_every_listed_file(clean_bundle: Path, tmp_path: Path) -> None:
    bundle = _copy(clean_bundle, tmp_path)
    (bundle / "report" / "notes.txt").write_text(f"deploy key {_stripe(4)}\n")
    _relist(bundle, "report/notes.txt")
    (bundle / "CITATION.cff").write_text(f"token: {_stripe(5)}\n")
    _relist(bundle, "CITATION.cff")
    assert _secret_findings(bundle, "report/notes.txt")
    assert _secret_findings(bundle, "CITATION.cff")


def test_the_gate_decodes_payloads_in_the_json_report_and_the_manifest(
    clean_bundle: Path, tmp_path: Path
) -> None:
    bundle = _copy(clean_bundle, tmp_path)
    uri = "data:text/plain;base64," + base64.b64encode(f"key {_stripe(6)}".encode()).decode()
    path = bundle / REPORT_JSON
    doc = orjson.loads(path.read_bytes())
    doc["trials"][-1]["export_detail"] = f"see {uri}"
    path.write_bytes(orjson.dumps(doc, option=orjson.OPT_INDENT_2))  # the report's layout
    _relist(bundle, REPORT_JSON)
    manifest = orjson.loads((bundle / MANIFEST_PATH).read_bytes())
    manifest["dataset_reasons"] = [*manifest.get("dataset_reasons", []), uri]
    (bundle / MANIFEST_PATH).write_bytes(orjson.dumps(manifest, option=orjson.OPT_INDENT_2))
    assert any("data URI (text/plain)" in m for m in _secret_findings(bundle, REPORT_JSON))
    assert any("data URI (text/plain)" in m for m in _secret_findings(bundle, MANIFEST_PATH))
