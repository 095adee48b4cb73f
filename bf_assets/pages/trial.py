"""One trial's review page: verdict, findings next to their evidence, the conversation.

:func:`render_trial` reads the trial's files through one :class:`TrialFiles` (each file
scanned once, only the wanted lines kept) and returns the HTML.  The page size is bounded
by construction: at most ``MAX_WINDOWS`` evidence windows of ``2 * CONTEXT + 1`` clipped
lines, at most ``MAX_STEPS`` clipped steps per trajectory, a bounded file list.
"""

from __future__ import annotations

import shlex
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from bf_assets.dataset.decide import Decision
from bf_assets.dataset.quarantine import QuarantineEntry
from bf_assets.findings import Finding, sort_findings
from bf_assets.pages import conversation as conv
from bf_assets.pages import evidence as ev
from bf_assets.pages.facts import list_files, trial_facts
from bf_assets.pages.html import badge, esc, kv_table, omitted_note, page
from bf_assets.pages.lines import TrialFiles, safe_rel
from bf_assets.pages.scrub import Scrub
from bf_assets.review.record import TrialReview

TRACK_FILES = {conv.LLM_FILE: "llm", conv.ACP_FILE: "acp"}


@dataclass(slots=True)
class PageInput:
    review: TrialReview
    decision: Decision | None = None
    entry: QuarantineEntry | None = None  # the manual decision in force
    entries: Sequence[QuarantineEntry] = ()  # every entry that names the trial
    trial_path: str = ""  # the path to give bf-assets quarantine
    index_href: str = "../index.html"
    report_href: str | None = None


@dataclass(slots=True)
class PageFacts:
    """What a rendered page holds (for tests and the asset's metadata)."""

    windows: int = 0
    steps: int = 0
    findings: int = 0


def _loc(f: Finding) -> str:
    if not f.file:
        return "–"
    return f"{f.file}:{f.line}" if f.line else f.file


def _verdict_badge(v: str) -> str:
    return badge(v, f"v-{v}")


def _export_text(d: Decision | None) -> str:
    if d is None:
        return '<span class="note">no export decision</span>'
    if d.exported:
        return f"{badge('exported', 'v-publishable')} {esc(d.detail)}"
    return f"{badge('excluded: ' + d.reason, 'v-rejected')} {esc(d.detail)}"


def _header(inp: PageInput, scrub: Scrub) -> str:
    r = inp.review
    title = scrub.text(f"{r.ref.job_key}/{r.ref.rollout}")
    links = [f'<a href="{esc(inp.index_href)}">← all trials</a>']
    if inp.report_href:
        links.append(f'<a href="{esc(inp.report_href)}">review report</a>')
    out = [
        '<header class="top">',
        " · ".join(links),
        f"<h1>{esc(title)}</h1>",
        f"<div>{_verdict_badge(r.verdict)} outcome <b>{esc(r.outcome)}</b> · attribution "
        f"<b>{esc(r.attribution)}</b></div>",
        "</header>",
    ]
    if not scrub.clean:
        out.append(
            '<div class="raw-banner">RAW page: trial values are shown uncleaned (secrets and '
            "host paths included). For local use only; do not share.</div>"
        )
    return "\n".join(out)


def _summary(inp: PageInput, scrub: Scrub) -> tuple[str, str]:
    r = inp.review
    ident = r.identity
    rows = [
        ("verdict", _verdict_badge(r.verdict)),
        ("export decision", _export_text(inp.decision)),
        ("outcome", esc(r.outcome)),
        ("healthy / training-ready", esc(f"{r.healthy} / {r.training_ready}")),
        ("attribution", esc(r.attribution)),
        ("reward", esc("–" if r.reward is None else f"{r.reward:g}")),
        ("layout", esc(r.layout)),
    ]
    slot = [
        ("task", ident.task_id),
        ("harness", ident.harness),
        ("model", ident.model),
        ("skill mode", ident.skill_mode),
        ("sandbox", ident.sandbox),
        ("trial index", ident.trial_index),
        ("source ref", ident.source_ref),
        ("task digest", ident.task_digest),
        ("started at", ident.started_at),
        ("job", r.ref.job_key),
        ("path under its run root", r.ref.rel_path),
        # the run root is a host path: only its name on a cleaned page
        ("run root", r.ref.root if not scrub.clean else r.ref.root.rstrip("/").rsplit("/", 1)[-1]),
    ]
    slot_rows = [
        (k, f"<code>{esc(scrub.text(str(v)))}</code>" if v is not None else "–") for k, v in slot
    ]
    return (
        '<section id="summary"><h2>Verdict</h2>' + kv_table(rows) + "</section>",
        '<section id="identity"><h2>Identity and slot</h2>' + kv_table(slot_rows) + "</section>",
    )


def _num(v: float | None, unit: str = "") -> str:
    if v is None:
        return "–"
    return (f"{v:,}" if isinstance(v, int) else f"{v:,.4g}") + unit


def _story(r: TrialReview, scrub: Scrub) -> str:
    """How the run ended, beside the review's outcome: the execution state, the recorded
    error, the reward and what it alone says, usage and the verifier's tests."""
    st = r.story
    reward = "–" if r.reward is None else f"{r.reward:g}"
    if st.verifier_outcome:
        reward += f" (a {st.verifier_outcome} by the verifier; the review's outcome: {r.outcome})"
    error = "–"
    if st.exception_type or st.exception_message:
        error = f"<code>{esc(st.exception_type or 'error')}</code>"
        if st.exception_message:
            error += f": {esc(scrub.text(st.exception_message))}"
    rows = [
        ("execution", badge(st.execution or "unknown", f"x-{st.execution or 'unknown'}")),
        ("error", error),
        ("reward", esc(reward)),
        (
            "tokens in / out / cache",
            esc(" / ".join(_num(x) for x in (st.tokens_in, st.tokens_out, st.tokens_cache))),
        ),
        ("cost", esc(_num(st.cost_usd, " USD"))),
        ("wall time", esc(_num(st.wall_time_sec, " s"))),
        ("tool calls", esc(_num(st.tool_calls))),
    ]
    if st.tests_total is not None:
        counts = (
            f"{st.tests_passed if st.tests_passed is not None else '?'} passed, "
            f"{st.tests_failed if st.tests_failed is not None else '?'} failed, "
            f"{st.tests_skipped if st.tests_skipped is not None else '?'} skipped "
            f"of {st.tests_total}"
        )
        rows.append(("verifier tests (verifier/ctrf.json)", esc(counts)))
    if st.judge_score is not None:
        judged = f"{st.judge_score:g}"
        if st.judge_total is not None:
            judged += f" ({st.judge_passed if st.judge_passed is not None else '?'} of "
            judged += f"{st.judge_total} criteria passed)"
        rows.append((f"judge score ({st.judge_source or '?'})", esc(judged)))
    if st.answer_excerpt:
        rows.append(("answer (answer.txt)", esc(scrub.text(st.answer_excerpt))))
    out = ['<section id="story"><h2>How the run ended</h2>', kv_table(rows)]
    if st.failing_tests:
        items = "".join(f"<li><code>{esc(scrub.text(n))}</code></li>" for n in st.failing_tests)
        out.append(f"<h3>Failing tests ({len(st.failing_tests)} shown)</h3><ul>{items}</ul>")
    out.append("</section>")
    return "".join(out)


def _decision(inp: PageInput, scrub: Scrub) -> str:
    parts = ['<section id="decision"><h2>Manual decision</h2>']
    if inp.entry is not None:
        e = scrub.value(inp.entry.to_dict())
        parts.append(
            f"<p>In force: <b>{esc(e['action'])}</b> by <b>{esc(e['by'])}</b> on "
            f"<b>{esc(e['at'])}</b>: {esc(e['reason'])}</p>"
        )
    else:
        parts.append('<p class="note">No quarantine entry names this trial.</p>')
    if len(inp.entries) > 1:
        rows = "".join(
            "<tr>"
            + "".join(f"<td>{esc(x)}</td>" for x in (d["at"], d["action"], d["by"], d["reason"]))
            + "</tr>"
            for d in (scrub.value(e.to_dict()) for e in inp.entries)
        )
        parts.append(
            f"<h3>Every entry naming it</h3><table><tr><th>at</th><th>action</th><th>by</th><th>reason</th></tr>{rows}</table>"
        )
    path = shlex.quote(scrub.text(inp.trial_path or inp.review.ref.rel_path))
    parts.append(
        '<h3>Decide</h3><pre class="mono">'
        + esc(f'bf-assets quarantine hold {path} --reason "…" --by YOUR-NAME')
        + "\n"
        + esc(f'bf-assets quarantine release {path} --reason "…" --by YOUR-NAME')
        + "</pre>"
    )
    if any(f.severity == "blocker" for f in inp.review.findings):
        parts.append('<p class="note">A trial with a blocker cannot be released.</p>')
    parts.append("</section>")
    return "".join(parts)


def _findings(
    findings: Sequence[tuple[Finding, str | None]],
    windows: dict[str, ev.Window],
    shown_steps: dict[str, set[int]],
    scrub: Scrub,
) -> str:
    if not findings:
        return '<section id="findings"><h2>Findings</h2><p class="note">No findings.</p></section>'
    rows = []
    for i, (f, anchor) in enumerate(findings, start=1):
        w = windows.get(anchor) if anchor else None
        loc = esc(scrub.text(_loc(f)))
        if w is not None and w.line is not None and w.problem is None:
            loc = f'<a class="cite" href="#{w.line_id(w.line)}">{loc}</a>'
            if w.how == "located":
                loc += ' <span class="note">(located)</span>'
        elif w is not None:
            loc = f'<a class="cite" href="#{w.anchor}">{loc}</a>'
        rel = safe_rel(f.file) if f.file else None
        src = TRACK_FILES.get(rel or "")
        if src and f.line and f.line in shown_steps.get(src, set()):
            loc += f' · <a href="#{src}-L{f.line}">in the conversation</a>'
        evid = f"<pre>{esc(scrub.text(f.evidence))}</pre>" if f.evidence else ""
        rows.append(
            f'<tr id="f{i}"><td>{badge(f.severity, "s-" + f.severity)}</td>'
            f"<td><code>{esc(f.check)}</code></td><td>{esc(scrub.text(f.message))}{evid}</td>"
            f'<td class="mono">{loc}</td></tr>'
        )
    return (
        f'<section id="findings"><h2>Findings ({len(findings)})</h2><table>'
        "<tr><th>severity</th><th>check</th><th>message and evidence</th><th>cites</th></tr>"
        + "".join(rows)
        + "</table></section>"
    )


def _window_html(w: ev.Window, f: Finding, i: int, scrub: Scrub) -> str:
    where = esc(scrub.text(w.file))
    head = (
        f'<div class="win" id="{w.anchor}"><h3><a href="#f{i}">{esc(f.check)}</a> · '
        f"<code>{where}</code>" + (f":{w.line}" if w.line else "") + "</h3>"
    )
    if w.note:
        head += f'<p class="note">{esc(w.note)}</p>'
    if w.problem is not None:
        return head + f'<p class="problem">{esc(scrub.text(w.problem))}</p></div>'
    rows = []
    for ln in w.lines:
        cls = ' class="cited"' if ln.cited else ""
        rows.append(
            f'<tr id="{w.line_id(ln.number)}"{cls}><td class="n">{ln.number}</td>'
            f'<td class="t">{esc(ln.text)}{omitted_note(ln.omitted)}</td></tr>'
        )
    return head + f'<table class="src">{"".join(rows)}</table></div>'


def _skills(r: TrialReview, scrub: Scrub) -> str:
    s = scrub.value(r.skills or {})
    out = ['<section id="skills"><h2>Skill catalog</h2>']
    if not s:
        out.append('<p class="note">No skill audit recorded.</p></section>')
        return "".join(out)
    src = s.get("source_file")
    where = f"{src}:{s.get('line')}" if src and s.get("line") else (src or "–")
    rows = [
        ("status", esc(s.get("catalog_status"))),
        ("format", esc(s.get("catalog_format") or "–")),
        ("recovered from", f"<code>{esc(where)}</code> ({esc(s.get('catalog_source') or '–')})"),
        ("skill mode", esc(s.get("skill_mode") or "–")),
        ("task skills loading", esc(s.get("task_skills_loading"))),
        ("audit status", esc(s.get("status"))),
        ("catalog sha256", f"<code>{esc(s.get('catalog_sha256') or '–')}</code>"),
    ]
    out.append(kv_table(rows))
    names = [str(x) for x in s.get("skills") or []]
    expected = {str(x) for x in s.get("expected_task_skills") or []}
    loaded = {str(x) for x in s.get("loaded_task_skills") or []}
    missing = [str(x) for x in s.get("missing_task_skills") or []]
    if names:
        items = []
        for n in names:
            mark = " " + badge("task skill", "skill") if n in expected or n in loaded else ""
            items.append(f"<li><code>{esc(n)}</code>{mark}</li>")
        out.append(f"<h3>Skills in the catalog ({len(names)})</h3><ul>{''.join(items)}</ul>")
    else:
        out.append('<p class="note">No skill recovered from the startup prompt.</p>')
    if expected:
        out.append(
            "<p>Expected task skills: "
            + ", ".join(f"<code>{esc(x)}</code>" for x in sorted(expected))
            + "</p>"
        )
    if missing:
        out.append(
            '<p class="problem">Missing from the catalog: '
            + ", ".join(f"<code>{esc(x)}</code>" for x in missing)
            + "</p>"
        )
    reasons = s.get("manual_review_reasons") or []
    if reasons:
        out.append("<p>Manual review: " + esc("; ".join(str(x) for x in reasons)) + "</p>")
    out.append("</section>")
    return "".join(out)


def _facts(r: TrialReview, scrub: Scrub) -> str:
    facts = trial_facts(r.ref.path, r.ref.root)
    out = ['<section id="tokens"><h2>Tokens and timing</h2>']
    if facts.problem:
        out.append(f'<p class="note">{esc(scrub.text(facts.problem))}</p>')
    out.append('<div style="display:flex;gap:24px;flex-wrap:wrap"><div style="flex:1">')
    out.append("<h3>Tokens</h3>" + kv_table([(k, esc(scrub.text(v))) for k, v in facts.tokens]))
    out.append('</div><div style="flex:1">')
    out.append("<h3>Timing</h3>" + kv_table([(k, esc(scrub.text(v))) for k, v in facts.timing]))
    out.append("</div></div></section>")
    return "".join(out)


def _part_html(p: conv.Part) -> str:
    title = esc(p.title or p.role)
    if p.skill is not None:
        title += " " + badge(f"skill load: {p.skill}", "skill")
    body = f"<pre>{esc(p.body)}{omitted_note(p.omitted, 'characters')}</pre>" if p.body else ""
    if p.kind == "system":
        return (
            f'<div class="part system"><details><summary>{title} (startup prompt)</summary>'
            f"{body}</details></div>"
        )
    if p.kind == "note" and not p.title:
        return f'<div class="part note"><span class="note">{esc(p.body)}</span></div>'
    return (
        f'<div class="part {esc(p.kind)} {esc(p.role)}"><div class="ti">{title}</div>{body}</div>'
    )


def _track_html(t: conv.Track, cites: dict[int, list[int]], findings: Sequence[Finding]) -> str:
    out = [f'<h3 id="{t.source}">{esc(t.title)} · <code>{esc(t.file)}</code></h3>']
    if t.problem is not None:
        out.append(f'<p class="note">{esc(t.problem)}</p>')
        return "".join(out)
    steps = [x for x in t.items if isinstance(x, conv.Step)]
    out.append(
        f'<p class="muted">{t.lines:,} lines in the file; {len(steps)} shown: the first and '
        "last, and the lines around every cited one.</p>"
    )
    for item in t.items:
        if isinstance(item, conv.Gap):
            n = item.last - item.first + 1
            extra = (
                f"; {item.cited} cited line(s) among them, see the findings" if item.cited else ""
            )
            out.append(
                f'<div class="gap">… lines {item.first:,}–{item.last:,} not shown ({n:,} '
                f"{'line' if n == 1 else 'lines'}){extra}</div>"
            )
            continue
        cited = cites.get(item.line, [])
        cls = "step cited" if cited else "step"
        links = "".join(f'<a href="#f{i}">{esc(findings[i - 1].check)}</a>' for i in cited)
        head = f'<div class="hd">{esc(item.label)}'
        if item.meta:
            head += f' <span class="muted">· {esc(" · ".join(item.meta))}</span>'
        if links:
            head += f' <span class="cites">cited by {links}</span>'
        head += "</div>"
        body = "".join(_part_html(p) for p in item.parts)
        if item.problem:
            body = f'<p class="problem">{esc(item.problem)}</p>' + body
        out.append(f'<div class="{cls}" id="{t.source}-L{item.line}">{head}{body}</div>')
    return "".join(out)


def _files_html(r: TrialReview, scrub: Scrub) -> str:
    files, more = list_files(r.ref.path)
    rows = "".join(
        f"<tr><td><code>{esc(scrub.text(p))}</code></td><td>{'' if s is None else f'{s:,}'}</td>"
        f"<td>{esc(k)}</td></tr>"
        for p, s, k in files
    )
    tail = f'<p class="note">… {more} more entries not listed</p>' if more else ""
    return (
        '<section id="files"><h2>Files</h2>'
        f"<table><tr><th>path</th><th>bytes</th><th>kind</th></tr>{rows}</table>{tail}</section>"
    )


def render_trial(
    inp: PageInput, *, clean: bool = True, scrub: Scrub | None = None
) -> tuple[str, PageFacts]:
    """The page of one trial and what it holds; ``scrub``: the cleaning to render with (one
    of its own when not given), matching ``clean``."""
    r = inp.review
    scrub = _scrub(clean, scrub)
    facts = PageFacts()
    findings = sort_findings(r.findings)
    facts.findings = len(findings)
    cited: dict[str, list[int]] = defaultdict(list)  # track source -> cited lines
    cites: dict[str, dict[int, list[int]]] = defaultdict(lambda: defaultdict(list))
    for i, f in enumerate(findings, start=1):
        rel = safe_rel(f.file) if f.file else None
        src = TRACK_FILES.get(rel or "")
        if src and f.line:
            cited[src].append(f.line)
            cites[src][f.line].append(i)
    with TrialFiles(r.ref.path, r.ref.root) as files:
        planned = ev.plan(files, findings)
        for rel, src in TRACK_FILES.items():
            conv.want(files, rel, cited.get(src, []))
        windows = {
            anchor: ev.build_window(files, f, anchor, scrub) for f, anchor in planned if anchor
        }
        tracks = [
            conv.build_track(files, src, rel, cited.get(src, []), scrub)
            for rel, src in TRACK_FILES.items()
        ]
    tracks.sort(key=lambda t: 0 if t.source == "llm" else 1)
    shown: dict[str, set[int]] = {
        t.source: {x.line for x in t.items if isinstance(x, conv.Step)} for t in tracks
    }
    facts.windows = len(windows)
    facts.steps = sum(len(s) for s in shown.values())
    verdict, identity = _summary(inp, scrub)
    body = [_header(inp, scrub), "<main>", verdict, _story(r, scrub)]
    body.append(_findings(planned, windows, shown, scrub))
    if windows:
        body.append('<section id="evidence"><h2>Evidence</h2>')
        for i, (f, anchor) in enumerate(planned, start=1):
            if anchor:
                body.append(_window_html(windows[anchor], f, i, scrub))
        body.append("</section>")
    body.extend([_decision(inp, scrub), identity])
    body.append(_skills(r, scrub))
    body.append(_facts(r, scrub))
    body.append('<section id="conversation"><h2>Conversation</h2>')
    body.extend(_track_html(t, cites.get(t.source, {}), findings) for t in tracks)
    body.append("</section>")
    body.append(_files_html(r, scrub))
    body.append("</main>")
    title = scrub.text(f"{r.ref.rollout} · {r.verdict}")
    return page(title, "\n".join(body)), facts


def error_page(
    inp: PageInput, exc: BaseException, *, clean: bool = True, scrub: Scrub | None = None
) -> str:
    """The page of a trial whose files could not be read for it: the verdict and findings
    are still shown, without evidence."""
    scrub = _scrub(clean, scrub)
    r = inp.review
    findings = [(f, None) for f in sort_findings(r.findings)]
    body = [
        _header(inp, scrub),
        "<main>",
        f'<section><p class="problem">The trial\'s files could not be read for this page: '
        f"{esc(scrub.text(type(exc).__name__ + ': ' + str(exc)))}</p></section>",
        *_summary(inp, scrub),
        _story(r, scrub),
        _findings(findings, {}, {}, scrub),
        _decision(inp, scrub),
        "</main>",
    ]
    return page(scrub.text(f"{r.ref.rollout} · {r.verdict}"), "\n".join(body))


def _scrub(clean: bool, given: Scrub | None) -> Scrub:
    """``given`` when it cleans as ``clean`` says, else a cleaning of its own."""
    return given if given is not None and given.clean == clean else Scrub(clean)
