"""The coverage matrix as an SVG picture, embeddable in Markdown as a data URI.

Rows are task × skill mode, columns harness × model × sandbox × trial index.  A cell is
coloured by its slot state; a blue dot marks a slot with superseded attempts, a dashed
purple outline an unplanned trial, and an empty grid square a combination that is not in
the plan at all.  Every cell carries a ``<title>`` tooltip with the slot and its trial.

Every label and tooltip from trial data or the plan (task, skill mode, harness, model,
sandbox, plan name, trial names) goes through ``clean`` first when one is given (the
published report's cleaning), and is XML-escaped after: a picture shows what the text of
the report around it shows, never more.
"""

from __future__ import annotations

import base64
import math
from collections import Counter
from collections.abc import Callable
from html import escape as _html_escape

from bf_assets.dataset.common import show, show_key
from bf_assets.dataset.coverage import (
    HEALTHY,
    MISSING,
    STALE,
    UNHEALTHY,
    UNPLANNED,
    Coverage,
    SlotRow,
    superseded_text,
)


def escape(text: str) -> str:
    """XML text escaping (``xml.sax.saxutils`` would pull in ``urllib.request``)."""
    return _html_escape(text, quote=False)


def quoteattr(text: str) -> str:
    """A double-quoted XML attribute value."""
    return '"' + _html_escape(text, quote=True) + '"'


COLORS = {
    HEALTHY: "#2e7d32",
    STALE: "#f2a900",
    UNHEALTHY: "#c62828",
    MISSING: "#b0b0b0",
    UNPLANNED: "#ffffff",
}
DUPLICATE_COLOR = "#1565c0"
UNPLANNED_STROKE = "#7b1fa2"
GRID = "#e3e3e3"
INK = "#222222"
FONT = "DejaVu Sans, Verdana, Arial, sans-serif"
CHAR_W = 6.2  # average glyph width at 11px, for sizing
TITLE_CHAR_W = 8.6  # the same for the bold 14px title
LABEL_MAX = 60
ANGLE = 50  # degrees the column labels are rotated (counter-clockwise)
# Past this many (harness, model, sandbox, trial) columns, a column is a (harness, model,
# sandbox) and its square shows the share of each state among the trial slots it folds: a
# plan with hundreds of trials a cell drew a picture megabytes long, which the report and
# the UI's metadata embed.
MAX_COLUMNS = 120
FOLD_ORDER = (HEALTHY, STALE, UNHEALTHY, MISSING, UNPLANNED)


def _middle(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    keep = max(limit - 1, 2)
    head = (keep + 1) // 2
    return text[:head] + "…" + text[len(text) - (keep - head) :]


def _column_label(harness: str, model: str, sandbox: str, index: int | None) -> str:
    """``harness · model · sandbox · #i`` (``all trials`` for a folded column); a long model
    is shortened in the middle."""
    which = "all trials" if index is None else f"#{index}"
    fixed = f"{harness} ·  · {sandbox} · {which}"
    return f"{harness} · {_middle(model, max(LABEL_MAX - len(fixed), 12))} · {sandbox} · {which}"


def _width(text: str, char_w: float = CHAR_W) -> float:
    return len(text) * char_w


RowKey = tuple[str, str]
ColKey = tuple[str, str, str, int]


def _keys(rows: list[SlotRow]) -> tuple[list[RowKey], list[ColKey]]:
    rk = sorted({(show(r.cell.task), show(r.cell.skill_mode)) for r in rows})
    ck = sorted(
        {
            (show(r.cell.harness), show(r.cell.model), show(r.cell.sandbox), r.trial_index)
            for r in rows
        }
    )
    return rk, ck


Clean = Callable[[str], str]


def _same(text: str) -> str:
    return text


def _slot_label(r: SlotRow, clean: Clean) -> str:
    """``SlotRow.label`` of cleaned parts."""
    return " / ".join(clean(show(x)) for x in r.cell.astuple()) + f" #{r.trial_index}"


def _tooltip(r: SlotRow, clean: Clean = _same) -> str:
    lines = [_slot_label(r, clean), f"state: {r.state}" + (" (required)" if r.required else "")]
    if r.trial:
        lines.append(f"trial: {clean(show_key(r.trial))}")
    lines.append(f"attempts in cell: {r.attempts}")
    if r.superseded:
        lines.append("superseded: " + clean(superseded_text(r)))
    return "\n".join(lines)


def _legend(coverage: Coverage) -> list[tuple[str, str, int]]:
    s = coverage.summary
    return [
        (HEALTHY, "healthy", s.get(HEALTHY, 0)),
        (STALE, "stale", s.get(STALE, 0)),
        (UNHEALTHY, "unhealthy", s.get(UNHEALTHY, 0)),
        (MISSING, "missing", s.get(MISSING, 0)),
        ("duplicate", "has superseded attempts", s.get("duplicate", 0)),
        (UNPLANNED, "unplanned trial", s.get(UNPLANNED, 0)),
        ("none", "not in plan", 0),
    ] + (
        [("required", "black border: required slot", 0)]
        if any(r.required for r in coverage.rows)
        else []
    )


def _swatch(kind: str, x: float, y: float, size: float) -> list[str]:
    if kind == "duplicate":
        return [
            f'<rect x="{x}" y="{y}" width="{size}" height="{size}" fill="{COLORS[HEALTHY]}"/>',
            f'<circle cx="{x + size - 4}" cy="{y + 4}" r="3.5" fill="{DUPLICATE_COLOR}" '
            'stroke="#ffffff" stroke-width="1"/>',
        ]
    if kind == UNPLANNED:
        return [
            f'<rect x="{x + 1}" y="{y + 1}" width="{size - 2}" height="{size - 2}" fill="#ffffff" '
            f'stroke="{UNPLANNED_STROKE}" stroke-width="2" stroke-dasharray="3 2"/>'
        ]
    if kind == "required":
        return [
            f'<rect x="{x}" y="{y}" width="{size}" height="{size}" fill="{COLORS[MISSING]}" '
            'stroke="#000000" stroke-width="1.2"/>'
        ]
    if kind == "none":
        return [
            f'<rect x="{x}" y="{y}" width="{size}" height="{size}" fill="#ffffff" stroke="{GRID}"/>'
        ]
    return [f'<rect x="{x}" y="{y}" width="{size}" height="{size}" fill="{COLORS[kind]}"/>']


def _superseded_dot(x: float, y: float, size: float, pad: float) -> str:
    """The dot in a square's top right corner: a slot has superseded attempts."""
    return (
        f'<circle cx="{x + size - pad - 4.5}" cy="{y + pad + 4.5}" r="3.5" '
        f'fill="{DUPLICATE_COLOR}" stroke="#ffffff" stroke-width="1"/>'
    )


def _cell(r: SlotRow, x: float, y: float, size: float, clean: Clean) -> list[str]:
    pad = 1.5
    inner = size - 2 * pad
    out = [f"<g><title>{escape(_tooltip(r, clean))}</title>"]
    if r.state == UNPLANNED:
        out.append(
            f'<rect x="{x + pad + 1}" y="{y + pad + 1}" width="{inner - 2}" height="{inner - 2}" '
            f'fill="#ffffff" stroke="{UNPLANNED_STROKE}" stroke-width="2" stroke-dasharray="3 2"/>'
        )
    else:
        stroke = ' stroke="#000000" stroke-width="1.2"' if r.required else ""
        out.append(
            f'<rect x="{x + pad}" y="{y + pad}" width="{inner}" height="{inner}" '
            f'fill="{COLORS.get(r.state, "#000000")}"{stroke}/>'
        )
    if r.duplicate:
        out.append(_superseded_dot(x, y, size, pad))
    out.append("</g>")
    return out


def coverage_svg(
    coverage: Coverage,
    *,
    cell: int = 24,
    title: str | None = None,
    clean: Clean | None = None,
) -> str:
    """Render the coverage matrix; the picture is sized to the number of rows and columns.
    ``clean`` cleans every label from trial data or the plan before it is drawn (and before
    a long one is shortened)."""
    c = clean or _same
    rows = coverage.rows
    rk, ck = _keys(rows)
    folded = len(ck) > MAX_COLUMNS
    if folded:
        ck = sorted({(h, m, sb, None) for h, m, sb, _ in ck})
    name = c(coverage.plan.name) if coverage.plan is not None else "observed cells (no plan)"
    ratio = coverage.coverage_ratio
    s = coverage.summary
    head = title or (
        f"Coverage — {name}: {s.get(HEALTHY, 0)}/{s.get('expected', 0)} healthy slots"
        + ("" if ratio is None else f" ({ratio:.0%})")
        + ("" if coverage.min_coverage is None else f", floor {coverage.min_coverage:.0%}")
        + (" (trials folded per column)" if folded else "")
    )
    row_labels = [f"{c(t)}  ·  {c(m)}" for t, m in rk]
    col_parts = [(c(h), c(m), c(sb), i) for h, m, sb, i in ck]
    col_labels = [_column_label(*parts) for parts in col_parts]
    sin, cos = math.sin(math.radians(ANGLE)), math.cos(math.radians(ANGLE))
    longest = max((_width(c) for c in col_labels), default=0.0)
    left = 16 + max((_width(r) for r in row_labels), default=0.0) + 10
    header = longest * sin + 16
    title_h = 34
    top = title_h + header
    grid_w = len(ck) * cell
    grid_h = len(rk) * cell
    overhang = max(
        (ci * cell + cell / 2 + 4 + _width(c) * cos - grid_w for ci, c in enumerate(col_labels)),
        default=0.0,
    )
    overhang = max(0.0, overhang)
    legend = _legend(coverage)
    item_w = [
        28 + _width(lab if k in ("none", "required") else f"{lab} ({n})") + 18
        for k, lab, n in legend
    ]
    width = max(
        left + grid_w + overhang + 16, sum(item_w[:4]) + 32, _width(head, TITLE_CHAR_W) + 32
    )
    per_line, line, lines = [], [], 0.0
    for w in item_w:  # wrap legend items to the picture's width
        if line and lines + w > width - 32:
            per_line.append(line)
            line, lines = [], 0.0
        line.append(w)
        lines += w
    per_line.append(line)
    legend_h = 26 * len(per_line) + 14
    height = top + grid_h + 18 + legend_h
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{math.ceil(width)}" '
        f'height="{math.ceil(height)}" viewBox="0 0 {math.ceil(width)} {math.ceil(height)}" '
        f'font-family="{FONT}" font-size="11" role="img" aria-label={quoteattr(head)}>',
        f"<title>{escape(head)}</title>",
        f'<rect x="0" y="0" width="{math.ceil(width)}" height="{math.ceil(height)}" fill="#ffffff"/>',
        f'<text x="16" y="22" font-size="14" font-weight="bold" fill="{INK}">{escape(head)}</text>',
    ]
    for ci, label in enumerate(col_labels):
        x = left + ci * cell + cell / 2 + 4
        y = top - 6
        out.append(
            f'<text x="{x:.1f}" y="{y:.1f}" fill="{INK}" transform="rotate(-{ANGLE} {x:.1f} {y:.1f})">'
            f"<title>{escape(' · '.join(map(str, col_parts[ci])))}</title>{escape(label)}</text>"
        )
    for ri, label in enumerate(row_labels):
        y = top + ri * cell + cell / 2 + 4
        out.append(
            f'<text x="{left - 8}" y="{y:.1f}" text-anchor="end" fill="{INK}">{escape(label)}</text>'
        )
    # grid of possible cells, then separators between tasks and between harnesses
    for ri in range(len(rk)):
        for ci in range(len(ck)):
            out.append(
                f'<rect x="{left + ci * cell + 1.5}" y="{top + ri * cell + 1.5}" '
                f'width="{cell - 3}" height="{cell - 3}" fill="#ffffff" stroke="{GRID}"/>'
            )
    for ri in range(1, len(rk)):
        if rk[ri][0] != rk[ri - 1][0]:
            y = top + ri * cell
            out.append(
                f'<line x1="{left - 4}" y1="{y}" x2="{left + grid_w}" y2="{y}" stroke="#9e9e9e"/>'
            )
    for ci in range(1, len(ck)):
        if ck[ci][:2] != ck[ci - 1][:2]:
            x = left + ci * cell
            out.append(
                f'<line x1="{x}" y1="{top - 4}" x2="{x}" y2="{top + grid_h}" stroke="#9e9e9e"/>'
            )
    groups: dict[tuple[int, int], list[SlotRow]] = {}
    ri_of = {k: i for i, k in enumerate(rk)}
    ci_of = {k: i for i, k in enumerate(ck)}
    for r in rows:
        ri = ri_of[(show(r.cell.task), show(r.cell.skill_mode))]
        index = None if folded else r.trial_index
        ci = ci_of[(show(r.cell.harness), show(r.cell.model), show(r.cell.sandbox), index)]
        if folded:
            groups.setdefault((ri, ci), []).append(r)
        else:
            out.extend(_cell(r, left + ci * cell, top + ri * cell, cell, c))
    for (ri, ci), rs in groups.items():
        out.extend(_folded_cell(rs, left + ci * cell, top + ri * cell, cell, c))
    y = top + grid_h + 24
    i = 0
    for widths in per_line:
        x = 16.0
        for w in widths:
            kind, lab, n = legend[i]
            out.extend(_swatch(kind, x, y, 16))
            text = lab if kind in ("none", "required") else f"{lab} ({n})"
            out.append(f'<text x="{x + 22}" y="{y + 12}" fill="{INK}">{escape(text)}</text>')
            x += w
            i += 1
        y += 26
    out.append("</svg>")
    return "\n".join(out)


def _folded_cell(rs: list[SlotRow], x: float, y: float, size: float, clean: Clean) -> list[str]:
    """The square of a folded column: a band per state, as tall as its share of the slots,
    a black border when a slot is required and the dot when one has superseded attempts."""
    pad = 1.5
    inner = size - 2 * pad
    counts = Counter(r.state for r in rs)
    order = [*FOLD_ORDER, *sorted(k for k in counts if k not in FOLD_ORDER)]
    c = rs[0].cell
    where = " · ".join(
        clean(show(v)) for v in (c.task, c.skill_mode, c.harness, c.model, c.sandbox)
    )
    tip = [
        where,
        f"{len(rs)} trial slots: " + ", ".join(f"{k} {counts[k]}" for k in order if counts[k]),
    ]
    if any(r.required for r in rs):
        tip.append(f"required: {sum(r.required for r in rs)}")
    if any(r.duplicate for r in rs):
        tip.append(f"with superseded attempts: {sum(r.duplicate for r in rs)}")
    out = [f"<g><title>{escape(chr(10).join(tip))}</title>"]
    top = y + pad
    for state in order:
        if not counts[state]:
            continue
        h = inner * counts[state] / len(rs)
        fill = UNPLANNED_STROKE if state == UNPLANNED else COLORS.get(state, "#000000")
        out.append(
            f'<rect x="{x + pad}" y="{top:.2f}" width="{inner}" height="{h:.2f}" fill="{fill}"/>'
        )
        top += h
    if any(r.required for r in rs):
        out.append(
            f'<rect x="{x + pad}" y="{y + pad}" width="{inner}" height="{inner}" fill="none" '
            'stroke="#000000" stroke-width="1.2"/>'
        )
    if any(r.duplicate for r in rs):
        out.append(_superseded_dot(x, y, size, pad))
    out.append("</g>")
    return out


def svg_data_uri(svg: str) -> str:
    return "data:image/svg+xml;base64," + base64.b64encode(svg.encode("utf-8")).decode("ascii")
