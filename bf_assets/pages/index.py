"""The index of the trial pages: every trial, the ones a person must look at first.

Quarantined trials first (they wait for a person), then rejected ones, then the rest; each
row links to its page.  Filters by check id, harness, task and verdict, and a text search,
run in a small inline script (no library, nothing loaded).  The coverage matrix follows,
each slot linked to the page of the trial that fills it (or the unhealthy attempt shown).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

from bf_assets.dataset.assemble import DatasetReview
from bf_assets.dataset.common import TrialKey, trial_key
from bf_assets.findings import sort_findings
from bf_assets.pages.html import badge, esc, page_parts
from bf_assets.pages.scrub import Scrub
from bf_assets.review.record import TrialReview

ORDER = {"quarantined": 0, "rejected": 1}

FILTER_JS = """
(function () {
  var rows = Array.prototype.slice.call(document.querySelectorAll('#trials tbody tr'));
  var sel = {
    check: document.getElementById('f-check'), harness: document.getElementById('f-harness'),
    task: document.getElementById('f-task'), verdict: document.getElementById('f-verdict')
  };
  var text = document.getElementById('f-text');
  var count = document.getElementById('shown');
  function apply() {
    var shown = 0;
    var q = text.value.trim().toLowerCase();
    rows.forEach(function (tr) {
      var ok = true;
      var c = sel.check.value;
      if (c && (' ' + tr.getAttribute('data-checks') + ' ').indexOf(' ' + c + ' ') < 0) ok = false;
      if (sel.harness.value && tr.getAttribute('data-harness') !== sel.harness.value) ok = false;
      if (sel.task.value && tr.getAttribute('data-task') !== sel.task.value) ok = false;
      if (sel.verdict.value && tr.getAttribute('data-verdict') !== sel.verdict.value) ok = false;
      if (q && tr.textContent.toLowerCase().indexOf(q) < 0) ok = false;
      tr.classList.toggle('hidden', !ok);
      if (ok) shown += 1;
    });
    count.textContent = String(shown);
  }
  Object.keys(sel).forEach(function (k) { sel[k].addEventListener('change', apply); });
  text.addEventListener('input', apply);
  apply();
})();
""".strip()


def _options(name: str, label: str, values: Sequence[str]) -> str:
    opts = "".join(f'<option value="{esc(v)}">{esc(v)}</option>' for v in values)
    return (
        f'<label>{esc(label)}<select id="f-{name}"><option value="">all</option>{opts}'
        "</select></label>"
    )


def index_parts(
    ds: DatasetReview,
    hrefs: Mapping[TrialKey, str],
    *,
    clean: bool = True,
    report_href: str | None = None,
    on_demand: int = 0,
) -> Iterator[str]:
    """The index a piece at a time (a row each): the filters above the table need every
    trial's check ids, harness and task, so the trials are gone over twice, and no more than
    a row is ever held (a 100,000-trial index is tens of MB).  ``on_demand``: how many of
    the linked pages are rendered when first asked for (the index says how to open them)."""
    scrub = Scrub(clean)
    trials = sorted(
        ds.trials,
        key=lambda t: (ORDER.get(t.verdict, 2), t.ref.job_key, t.ref.rollout, t.ref.rel_path),
    )
    checks: set[str] = set()
    harnesses: set[str] = set()
    tasks: set[str] = set()
    verdicts: set[str] = set()
    for t in trials:
        checks.update(f.check for f in t.findings)
        harnesses.add(scrub.text(t.identity.harness or "–"))
        tasks.add(scrub.text(t.identity.task_id or "–"))
        verdicts.add(t.verdict)
    n_q = sum(1 for t in trials if t.verdict == "quarantined")
    n_r = sum(1 for t in trials if t.verdict == "rejected")
    head = [
        '<header class="top"><h1>Trial review pages</h1>',
        f"<div>{len(trials)} trials · {n_q} quarantined · {n_r} rejected · release verdict "
        f"<b>{esc(ds.release_verdict)}</b>",
    ]
    if report_href:
        head.append(f' · <a href="{esc(report_href)}">review report</a>')
    head.append("</div></header>")
    if not clean:
        head.append(
            '<div class="raw-banner">RAW pages: uncleaned trial values. Local use only.</div>'
        )
    filters = (
        '<div class="filters">'
        + _options("check", "check id", sorted(checks))
        + _options("harness", "harness", sorted(harnesses))
        + _options("task", "task", sorted(tasks))
        + _options("verdict", "verdict", sorted(verdicts))
        + '<label>search<input id="f-text" type="search" placeholder="rollout, model, …"></label>'
        + f'<span>showing <span id="shown" class="count">{len(trials)}</span> of {len(trials)}</span>'
        + "</div>"
    )
    before = [
        *head,
        "<main>",
        '<section id="list"><h2>Trials</h2>',
        '<p class="muted">Quarantined trials first (they wait for a person), then rejected ones.</p>',
        *(
            [
                f'<p class="note">The pages of {on_demand} {"trial" if on_demand == 1 else "trials"}'
                " exported clean are rendered when "
                "first opened through the trial page server of <code>bf-assets ui</code>, or "
                "with <code>bf-assets show TRIAL</code>.</p>"
            ]
            if on_demand
            else []
        ),
        filters,
    ]

    def body() -> Iterator[str]:
        yield "\n".join(before) + "\n"
        yield (
            '<table id="trials"><thead><tr><th>verdict</th><th>export</th><th>trial</th>'
            "<th>task</th><th>harness</th><th>model</th><th>skill mode</th><th>sandbox</th>"
            "<th>outcome</th><th>checks</th><th>manual</th></tr></thead><tbody>"
        )
        for t in trials:
            yield _row(ds, t, hrefs, scrub)
        yield "</tbody></table>\n</section>\n" + _coverage(ds, hrefs, scrub) + "\n</main>"

    yield from page_parts("Trial review pages", body(), script=FILTER_JS)


def _row(ds: DatasetReview, t: TrialReview, hrefs: Mapping[TrialKey, str], scrub: Scrub) -> str:
    key = trial_key(t)
    d = ds.decision.get(key)
    fs = sort_findings(t.findings)
    ids = list(dict.fromkeys(f.check for f in fs))
    harness = scrub.text(t.identity.harness or "–")
    task = scrub.text(t.identity.task_id or "–")
    name = esc(scrub.text(t.ref.rollout))
    href = hrefs.get(key)
    link = f'<a href="{esc(href)}">{name}</a>' if href else name
    link += f'<br><span class="muted">{esc(scrub.text(t.ref.job_key))}</span>'
    worst = {f.check: f.severity for f in reversed(fs)}
    check_html = " ".join(f'<code class="s-{esc(worst[c])}">{esc(c)}</code>' for c in ids[:8]) + (
        f" <span class='muted'>+{len(ids) - 8}</span>" if len(ids) > 8 else ""
    )
    entry = ds.quarantine.get(key)
    manual = esc(f"{entry.action} by {scrub.text(entry.by)}") if entry else ""
    export = esc(d.reason) if d else ""
    return (
        f'<tr data-checks="{esc(" ".join(ids))}" data-harness="{esc(harness)}" '
        f'data-task="{esc(task)}" data-verdict="{esc(t.verdict)}">'
        f"<td>{badge(t.verdict, 'v-' + t.verdict)}</td><td>{export}</td><td>{link}</td>"
        f"<td>{esc(task)}</td><td>{esc(harness)}</td>"
        f"<td>{esc(scrub.text(t.identity.model or '–'))}</td>"
        f"<td>{esc(t.identity.skill_mode or '–')}</td><td>{esc(t.identity.sandbox or '–')}</td>"
        f"<td>{esc(t.outcome)}</td><td>{check_html}</td><td>{manual}</td></tr>"
    )


def _coverage(ds: DatasetReview, hrefs: Mapping[TrialKey, str], scrub: Scrub) -> str:
    rows = []
    for row in ds.coverage.rows:
        trial = ""
        if row.trial is not None:
            name = esc(scrub.text(f"{row.trial[0]}/{row.trial[1]}"))
            href = hrefs.get(row.trial)
            trial = f'<a href="{esc(href)}">{name}</a>' if href else name
        extra = f" (+{len(row.superseded)} superseded)" if row.superseded else ""
        rows.append(
            f"<tr><td>{esc(scrub.text(row.label()))}</td><td>{esc(row.state)}</td>"
            f"<td>{row.attempts}</td><td>{'yes' if row.required else 'no'}</td>"
            f"<td>{trial}{esc(extra)}</td></tr>"
        )
    if not rows:
        return '<section id="coverage"><h2>Coverage</h2><p class="note">No slots.</p></section>'
    return (
        '<section id="coverage"><h2>Coverage</h2><table><tr><th>slot</th><th>state</th>'
        "<th>attempts</th><th>required</th><th>trial</th></tr>"
        + "".join(rows)
        + "</table></section>"
    )
