"""The dataset review report in Markdown, in the order of ``checks.md`` §3.

Blockers, Coverage (with the matrix picture), Evidence, Residual risk, then the verdict.

Every value from trial data or user input is written through one
:class:`~bf_assets.dataset.reportmarkup.MarkdownValues` (``values``): cleaned first when the
report is published (its ``clean``), then escaped for Markdown and HTML; the coverage
picture's labels go through the same cleaning.  A trial's findings show their check and
message, never their evidence.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from heapq import nsmallest
from itertools import islice
from typing import Any

from bf_assets.contract import Severity
from bf_assets.dataset.common import (
    TrialKey,
    is_model_trial,
    joined,
    show,
    show_key,
    trial_key,
)
from bf_assets.dataset.coverage import (
    DUPLICATE,
    HEALTHY,
    MISSING,
    STALE,
    UNHEALTHY,
    Coverage,
    SlotRow,
    superseded_text,
)
from bf_assets.dataset.coverage_svg import coverage_svg, svg_data_uri
from bf_assets.dataset.decide import ExportDecision
from bf_assets.dataset.lift_svg import lift_svg
from bf_assets.dataset.parity import ParityReport
from bf_assets.dataset.quarantine import QuarantineEntry, effective_verdicts, unmatched_entries
from bf_assets.dataset.release import ReleaseAssessment
from bf_assets.dataset.reportmarkup import Markdown, MarkdownValues
from bf_assets.dataset.results import ACCEPTED, ResultsTable, results_pieces
from bf_assets.findings import sort_findings
from bf_assets.review.record import TrialReview

ROW_LIMIT = 100
RESIDUAL_RISK = (
    "Sandbox network policy: no artifact proves what the sandbox could reach during the "
    "agent phase (V-NETWORK is static configuration, not a record of traffic).",
    "Git scrubbing: no artifact proves that repository history past the base commit was "
    "removed before the agent ran.",
    "Hidden-test placement: no artifact proves hidden tests and solutions were absent from "
    "agent-readable paths.",
    "Verifier process isolation: Benchflow records no timestamp proving the verifier ran "
    "after the agent and in a process the agent could not touch.",
)


PLAIN = MarkdownValues()  # the local report: values escaped, not cleaned


def _table(
    head: Sequence[str],
    rows: Iterable[Sequence[Any]],
    limit: int = ROW_LIMIT,
    total: int | None = None,
    values: MarkdownValues = PLAIN,
) -> str:
    """A Markdown table of the first ``limit`` rows, each cell written through ``values``;
    the others are counted (``total``: how many ``rows`` would give, so the rest are never
    made), never kept."""
    it = iter(rows)
    shown = list(islice(it, limit))
    if not shown:
        return "_none_\n"
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    out += ["| " + " | ".join(values.cell(x) for x in r) + " |" for r in shown]
    more = total - len(shown) if total is not None else sum(1 for _ in it)
    if more:
        out.append(f"\n… {more} more rows not shown")
    return "\n".join(out) + "\n"


def _lines(parts: Iterable[str]) -> Iterator[str]:
    """``"\n".join(parts)`` a part at a time (each part as it is: a :class:`Markdown` one
    stays one)."""
    for i, p in enumerate(parts):
        if i:
            yield "\n"
        yield p


def _where(file: str | None, line: int | None) -> str:
    if not file:
        return "–"
    return f"{file}:{line}" if line else file


def _blockers(
    reviews: Sequence[TrialReview],
    coverage: Coverage,
    parity: ParityReport | None,
    v: MarkdownValues,
) -> Iterator[str]:
    parts = ["## Blockers: what stops the release\n"]
    ds = [f for f in coverage.findings if f.severity == Severity.BLOCKER]
    trial_rows: list[tuple[str, str, str]] = []
    by_check: dict[str, set[TrialKey]] = defaultdict(set)
    for r in reviews:
        key = trial_key(r)
        fs = [
            f
            for f in sort_findings([*r.findings, *coverage.trial_findings.get(key, [])])
            if f.severity == Severity.BLOCKER
        ]
        for f in fs:
            by_check[f.check].add(key)
        if fs:
            first = fs[0]
            checks = ", ".join(dict.fromkeys(f.check for f in fs))
            where = f" ({_where(first.file, first.line)})" if first.file else ""
            trial_rows.append((show_key(key), checks, f"{first.message}{where}"))
    pblock = parity.blockers if parity is not None else []
    if not ds and not trial_rows and not pblock:
        yield parts[0] + "\nNo blockers.\n"
        return
    if ds:
        parts.append("\n### Dataset-level blockers\n")
        parts.extend(f"- {v.code(f.check)}: {v.text(f.message)}" for f in ds)
        parts.append("")
    if pblock:
        parts.append("\n### Sandbox parity (telemetry populated on one backend only)\n")
        parts.append(
            _table(
                ["pair", "item", "docker", "daytona", "lacking"],
                [(r.pair.label(), r.item, r.docker, r.daytona, r.lacking) for r in pblock],
                values=v,
            )
        )
    if trial_rows:
        parts.append(f"\n### Trials ({len(trial_rows)})\n")
        parts.append("Blocker checks, by the number of trials they reject:\n")
        summary = sorted(by_check.items(), key=lambda kv: (-len(kv[1]), kv[0]))
        parts.append(
            _table(
                ["check", "trials", "example"],
                [(c, len(ks), show_key(sorted(ks)[0])) for c, ks in summary],
                values=v,
            )
        )
        parts.append("\nEach rejected trial and its first blocker:\n")
        parts.append(
            _table(
                ["trial", "blocker checks", "first blocker (where)"],
                nsmallest(ROW_LIMIT, trial_rows),  # sorted(trial_rows)[:ROW_LIMIT]
                total=len(trial_rows),
                values=v,
            )
        )
    yield from parts


def _group_counts(rows: Sequence[SlotRow]) -> list[tuple[Any, ...]]:
    groups: dict[tuple[str, str, int], Counter[str]] = defaultdict(Counter)
    for r in rows:
        g = groups[(show(r.cell.task), show(r.cell.skill_mode), r.trial_index)]
        g["expected"] += 1
        g[r.state] += 1
        g[DUPLICATE] += r.duplicate
    return [
        (t, m, i, g["expected"], g[HEALTHY], g[MISSING], g[UNHEALTHY], g[DUPLICATE], g[STALE])
        for (t, m, i), g in sorted(groups.items())
    ]


def _coverage(
    coverage: Coverage,
    verdicts: Mapping[TrialKey, str],
    quarantine: Mapping[TrialKey, QuarantineEntry],
    reviews: Sequence[TrialReview],
    v: MarkdownValues,
) -> Iterator[str]:
    """The Coverage section's parts (``"\\n"``-joined, :func:`_lines`)."""
    s = coverage.summary
    ratio = coverage.coverage_ratio
    floor = coverage.min_coverage
    name = coverage.plan.name if coverage.plan is not None else None
    yield "## Coverage: the planned runs found\n"
    yield (
        (
            f"Plan **{v.text(name)}**."
            if name
            else "No experiment plan: every observed cell is expected once, none required."
        )
        + f" Expected slots: **{s['expected']}**; healthy {s[HEALTHY]}, stale {s[STALE]}, "
        f"missing {s[MISSING]}, unhealthy {s[UNHEALTHY]}, with duplicates {s[DUPLICATE]} "
        f"({s['superseded']} superseded trials); unplanned trials {s['unplanned']}; "
        f"probe-lane trials {s['probe_trials']}."
    )
    ratio_txt = "n/a" if ratio is None else f"{ratio:.1%}"
    floor_txt = "no floor" if floor is None else f"floor {floor:.0%}"
    below = " — **below the floor**" if coverage.below_floor else ""
    yield (
        f"\nCoverage ratio (fresh healthy / planned slots): **{ratio_txt}** ({floor_txt}){below}.\n"
    )
    if coverage.rows:
        svg = coverage_svg(coverage, clean=v.clean)  # labels cleaned like the text
        # Markdown made of cleaned values: a text cleaner has nothing to read in its base64
        yield Markdown(f"![coverage matrix]({svg_data_uri(svg)})\n")
    yield ("### Slots by task, skill mode and trial\n")
    yield (
        _table(
            [
                "task",
                "skill mode",
                "trial",
                "expected",
                "healthy",
                "missing",
                "unhealthy",
                "duplicate",
                "stale",
            ],
            _group_counts(coverage.planned_rows()),
            limit=400,
            values=v,
        )
    )
    problems = [r for r in coverage.planned_rows() if r.state != HEALTHY or r.duplicate]
    yield ("\n### Slots needing attention\n")
    yield (
        _table(
            ["slot", "state", "required", "cell attempts", "trial", "superseded"],
            (
                (
                    r.label(),
                    r.state + (" + duplicate" if r.duplicate else ""),
                    "yes" if r.required else "no",
                    r.attempts,
                    show_key(r.trial) if r.trial else "–",
                    superseded_text(r) or "–",
                )
                for r in problems
            ),
            total=len(problems),
            values=v,
        )
    )
    if coverage.stale:
        yield ("\n### Stale trials\n")
        yield (
            _table(
                ["trial", "why"],
                [(show_key(k), w) for k, w in sorted(coverage.stale.items())],
                values=v,
            )
        )
    if coverage.unplanned:
        yield ("\n### Unplanned trials (reported, not exported)\n")
        yield from (f"- {v.code(show_key(k))}" for k in coverage.unplanned[:ROW_LIMIT])
        yield ("")
    counts = Counter(verdicts.get(trial_key(r), r.verdict) for r in reviews if is_model_trial(r))
    yield (
        "\n### Held out of the export\n\nEffective verdicts of model trials: "
        + (", ".join(f"{v.text(k)} {n}" for k, n in sorted(counts.items())) or "none")
        + ".\n"
    )
    if quarantine:
        yield (
            _table(
                ["trial", "action", "reason", "by", "at"],
                [
                    (show_key(k), e.action, e.reason, e.by, e.at)
                    for k, e in sorted(quarantine.items())
                ],
                values=v,
            )
        )


def _evidence(
    reviews: Sequence[TrialReview],
    roots: Sequence[str],
    command: str,
    parity: ParityReport | None,
    verdicts: Mapping[TrialKey, str],
    unmatched: Sequence[QuarantineEntry],
    v: MarkdownValues,
) -> str:
    parts = ["## Evidence: what was reviewed, and how to reproduce it\n", "Run roots:\n"]
    parts.extend(f"- {v.code(r)}" for r in roots)
    n_files = sum(len(r.files) for r in reviews)
    size = sum(f.size or 0 for r in reviews for f in r.files)
    layouts = Counter(r.layout for r in reviews)
    parts.append(
        f"\nTrials reviewed: {len(reviews)} ("
        + ", ".join(f"{v.text(k)} {n}" for k, n in sorted(layouts.items()))
        + f"); files inventoried: {n_files} ({size:,} bytes).\n"
    )
    refs = Counter(r.identity.source_ref for r in reviews if r.identity.source_ref)
    digests: dict[str, set[str]] = defaultdict(set)
    for r in reviews:
        if r.identity.task_digest:
            digests[show(r.identity.task_id)].add(r.identity.task_digest)
    parts.append(
        "Source refs: "
        + (", ".join(f"{v.code(k)} ({n})" for k, n in sorted(refs.items())) or "_none recorded_")
        + "."
    )
    multi = {t: d for t, d in digests.items() if len(d) > 1}
    parts.append(
        f"Task digests recorded for {len(digests)} task(s)"
        + (f"; several digests for: {', '.join(map(v.text, sorted(multi)))}" if multi else "")
        + ".\n"
    )
    parts.append("### Trials\n")
    parts.append(
        _table(
            [
                "trial",
                "task",
                "harness",
                "model",
                "skill mode",
                "sandbox",
                "outcome",
                "verdict",
                "files",
            ],
            (
                (
                    show_key(trial_key(r)),
                    r.identity.task_id,
                    r.identity.harness,
                    r.identity.model,
                    r.identity.skill_mode,
                    r.identity.sandbox,
                    r.outcome,
                    verdicts.get(trial_key(r), r.verdict),
                    len(r.files),
                )
                for r in nsmallest(ROW_LIMIT, reviews, key=trial_key)  # sorted(...)[:ROW_LIMIT]
            ),
            total=len(reviews),
            values=v,
        )
    )
    if parity is not None:
        parts.append(
            f"\n### Sandbox parity\n\nDocker/Daytona pairs: {len(parity.pairs)}; unpaired: {len(parity.unpaired)}.\n"
        )
        parts.append(
            _table(
                ["pair", "kind", "item", "docker", "daytona", "label", "blocker"],
                (
                    (
                        r.pair.label(),
                        r.kind,
                        r.item,
                        r.docker,
                        r.daytona,
                        r.label,
                        "yes" if r.blocker else "no",
                    )
                    for r in parity.rows
                ),
                total=len(parity.rows),
                values=v,
            )
        )
    if unmatched:
        parts.append("\n### Quarantine entries that name no reviewed trial\n")
        parts.extend(
            f"- entry {e.index}: {v.code(e.trial)} ({v.text(e.action)}, {v.text(e.by)}, "
            f"{v.text(e.at)})"
            for e in unmatched
        )
        parts.append("")
    parts.append("\n### Reproduce\n\n" + v.fence(command, "sh"))
    return "\n".join(parts)


def _export(decision: ExportDecision, v: MarkdownValues) -> str:
    """The export decision: how many trials are exported, and each excluded one with why."""
    exported = decision.exported
    excluded = decision.excluded
    counts = Counter(d.reason for d in excluded)
    parts = [
        f"\n### Export\n\n**{len(exported)}** trials exported; {len(excluded)} excluded"
        + (
            ": " + ", ".join(f"{v.text(k)} {n}" for k, n in sorted(counts.items()))
            if counts
            else ""
        )
        + ".\n"
    ]
    parts.append(
        _table(
            ["trial", "reason", "detail"],
            ((show_key(d.key), d.reason, d.detail) for d in excluded),
            total=len(excluded),
            values=v,
        )
    )
    return "\n".join(parts) + "\n"


def _residual(
    coverage: Coverage,
    reviews: Sequence[TrialReview],
    parity: ParityReport | None,
    v: MarkdownValues,
) -> str:
    parts = ["## Residual risk: what this review cannot rule out\n"]
    parts.extend(f"- {r}" for r in RESIDUAL_RISK)
    tasks = sorted(
        {r.identity.task_id for r in reviews if is_model_trial(r) and r.identity.task_id}
    )
    no_oracle = [t for t in tasks if t not in coverage.oracle_tasks]
    no_noop = [t for t in tasks if t not in coverage.noop_tasks]
    if no_oracle:
        parts.append(
            f"- No oracle lane for {len(no_oracle)} task(s) "
            f"({', '.join(map(v.text, no_oracle[:10]))}"
            f"{', …' if len(no_oracle) > 10 else ''}): a broken verifier or environment is not ruled out."
        )
    if no_noop:
        parts.append(
            f"- No no-op lane for {len(no_noop)} task(s): a verifier passable without doing the task is not ruled out."
        )
    if parity is not None and parity.unpaired:
        parts.append(
            f"- {len(parity.unpaired)} trial(s) on Docker or Daytona have no counterpart on the other backend: their parity is unchecked."
        )
    return "\n".join(parts) + "\n"


def _results(table: ResultsTable, v: MarkdownValues) -> list[str]:
    """The Results section; the lift picture is drawn from cleaned labels and is a piece of
    its own (:class:`Markdown`)."""
    svg = lift_svg(table, population=ACCEPTED, clean=v.clean)
    picture = Markdown(f"![skill lift heatmap]({svg_data_uri(svg)})\n")
    return results_pieces(table, v.cell, v.text, picture=picture)


def _reasons(a: ReleaseAssessment, v: MarkdownValues) -> str:
    decisive = a.decisive()
    lines = ["Decided by:"] + [f"- {v.text(r.text())}" for r in decisive[:ROW_LIMIT]]
    if len(decisive) > ROW_LIMIT:
        lines.append(f"- … {len(decisive) - ROW_LIMIT} more")
    lines.append(
        "\nAll reasons by kind: " + ", ".join(f"{v.text(k)} {n}" for k, n in a.counts().items())
    )
    return "\n".join(lines) + "\n"


def report_parts(
    reviews: Sequence[TrialReview],
    coverage: Coverage,
    parity: ParityReport | None,
    quarantine: Mapping[TrialKey, QuarantineEntry] | None,
    release_verdict: str,
    roots: Sequence[str],
    command: str,
    *,
    verdicts: Mapping[TrialKey, str] | None = None,
    assessment: ReleaseAssessment | None = None,
    entries: Sequence[QuarantineEntry] = (),
    title: str = "bf-assets dataset review",
    decision: ExportDecision | None = None,
    clean: Callable[[str], str] | None = None,
    results: ResultsTable | None = None,
) -> Iterator[str]:
    """The report a piece at a time (:func:`render_report` is their concatenation), so it is
    written, and cleaned, without ever being one string.  ``verdicts`` defaults to the
    effective verdicts after ``quarantine`` and the coverage findings; ``assessment`` (from
    ``assess_release``) explains the verdict; ``entries`` are the full quarantine file, to
    list entries that matched nothing.  ``clean`` (the published report) cleans every value
    from trial data or user input, the picture's labels included, before it is escaped.
    ``results`` (``bf_assets.dataset.results``) adds the Results section after Coverage."""
    v = MarkdownValues(clean)
    applied = dict(quarantine or {})
    if verdicts is None:
        verdicts = effective_verdicts(reviews, applied, coverage.trial_findings)
    unmatched = unmatched_entries(reviews, entries) if entries else []
    yield f"# {v.text(title)}\n"
    yield "\n"
    yield from _lines(_blockers(reviews, coverage, parity, v))
    yield "\n"
    yield from _lines(_coverage(coverage, verdicts, applied, reviews, v))
    if decision is not None:
        yield _export(decision, v)
    if results is not None:
        yield "\n"
        yield from _results(results, v)
    yield "\n"
    yield _evidence(reviews, roots, command, parity, verdicts, unmatched, v)
    yield "\n"
    yield _residual(coverage, reviews, parity, v)
    yield f"\n## Verdict: may this dataset be published?\n\n**{v.text(release_verdict)}**\n"
    if assessment is not None and assessment.reasons:
        yield "\n" + _reasons(assessment, v)


render_report = joined(report_parts)
