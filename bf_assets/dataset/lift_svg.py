"""The skill lift as an SVG heatmap: tasks down, harness · model · skill mode across.

A square is green for a positive lift and red for a negative one, stronger the larger it
is, and shows its value; a white square is a combination with no lift (an arm missing).
The last row is the overall lift of each column.  Every label and tooltip from trial data
goes through ``clean`` first when one is given (the published report's cleaning) and is
XML-escaped after, like the coverage picture (:mod:`bf_assets.dataset.coverage_svg`).
"""

from __future__ import annotations

import math
from collections.abc import Callable

from bf_assets.dataset.coverage_svg import FONT, GRID, INK, TITLE_CHAR_W, escape, quoteattr
from bf_assets.dataset.results import ACCEPTED, NO_SKILL, Lift, ResultsTable

CHAR_W = 6.2
LABEL_MAX = 60
ANGLE = 50
OVERALL = "all tasks"


def _middle(text: str, limit: int = LABEL_MAX) -> str:
    if len(text) <= limit:
        return text
    head = (limit - 1 + 1) // 2
    return text[:head] + "…" + text[len(text) - (limit - 1 - head) :]


def _same(text: str) -> str:
    return text


def lift_color(lift: float) -> str:
    """Green for a positive lift, red for a negative one, white at zero."""
    x = max(-1.0, min(1.0, lift))
    base = (46, 125, 50) if x >= 0 else (198, 40, 40)
    w = abs(x)
    r, g, b = (round(255 + (c - 255) * w) for c in base)
    return f"#{r:02x}{g:02x}{b:02x}"


def lift_svg(
    table: ResultsTable,
    *,
    population: str = ACCEPTED,
    clean: Callable[[str], str] | None = None,
    cell: int = 44,
) -> str:
    """The heatmap of ``population``'s lifts (``scored`` or ``accepted``)."""
    c = clean or _same
    lifts = [lf for lf in table.lifts if lf.population == population]
    per_task = [lf for lf in lifts if lf.task is not None]
    cols = sorted({(c(lf.harness), c(lf.model), lf.treatment) for lf in lifts})
    rows = sorted({c(lf.task) for lf in per_task if lf.task is not None})
    if lifts:
        rows.append(OVERALL)
    at: dict[tuple[str, tuple[str, str, str]], Lift] = {}
    for lf in lifts:
        row = OVERALL if lf.task is None else c(lf.task)
        at[(row, (c(lf.harness), c(lf.model), lf.treatment))] = lf
    head = f"Skill lift ({population} trials): pass rate minus {NO_SKILL}"
    col_labels = [_middle(f"{h} · {m} · {t}") for h, m, t in cols]
    row_labels = [_middle(r) for r in rows]
    sin, cos = math.sin(math.radians(ANGLE)), math.cos(math.radians(ANGLE))
    longest = max((len(x) * CHAR_W for x in col_labels), default=0.0)
    left = 16 + max((len(x) * CHAR_W for x in row_labels), default=0.0) + 10
    top = 34 + longest * sin + 16
    grid_w, grid_h = len(cols) * cell, len(rows) * cell
    overhang = max(
        (
            i * cell + cell / 2 + 4 + len(x) * CHAR_W * cos - grid_w
            for i, x in enumerate(col_labels)
        ),
        default=0.0,
    )
    width = math.ceil(
        max(left + grid_w + max(0.0, overhang) + 16, len(head) * TITLE_CHAR_W + 32, 240)
    )
    height = math.ceil(top + grid_h + (24 if not lifts else 16))
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="{FONT}" font-size="11" role="img" '
        f"aria-label={quoteattr(head)}>",
        f"<title>{escape(head)}</title>",
        f'<rect x="0" y="0" width="{width}" height="{height}" fill="#ffffff"/>',
        f'<text x="16" y="22" font-size="14" font-weight="bold" fill="{INK}">{escape(head)}</text>',
    ]
    if not lifts:
        out.append(
            f'<text x="16" y="{top:.0f}" fill="{INK}">no task ran both a skill mode and '
            f"{NO_SKILL}</text>"
        )
    for i, label in enumerate(col_labels):
        x, y = left + i * cell + cell / 2 + 4, top - 6
        out.append(
            f'<text x="{x:.1f}" y="{y:.1f}" fill="{INK}" '
            f'transform="rotate(-{ANGLE} {x:.1f} {y:.1f})">'
            f"<title>{escape(' · '.join(cols[i]))}</title>{escape(label)}</text>"
        )
    for j, label in enumerate(row_labels):
        y = top + j * cell + cell / 2 + 4
        weight = ' font-weight="bold"' if rows[j] == OVERALL else ""
        out.append(
            f'<text x="{left - 8}" y="{y:.1f}" text-anchor="end" fill="{INK}"{weight}>'
            f"{escape(label)}</text>"
        )
    for j, row in enumerate(rows):
        for i, col in enumerate(cols):
            x, y = left + i * cell, top + j * cell
            lf = at.get((row, col))
            if lf is None:
                out.append(
                    f'<rect x="{x + 1.5}" y="{y + 1.5}" width="{cell - 3}" height="{cell - 3}" '
                    f'fill="#ffffff" stroke="{GRID}"/>'
                )
                continue
            tip = (
                f"{row} · {' · '.join(col)}\nlift {lf.lift:+.2f} "
                f"[{lf.low:+.2f}, {lf.high:+.2f}]\n{lf.treated} vs {lf.control} trials"
            )
            ink = "#ffffff" if abs(lf.lift) > 0.55 else INK
            out += [
                f"<g><title>{escape(tip)}</title>",
                f'<rect x="{x + 1.5}" y="{y + 1.5}" width="{cell - 3}" height="{cell - 3}" '
                f'fill="{lift_color(lf.lift)}" stroke="{GRID}"/>',
                f'<text x="{x + cell / 2:.1f}" y="{y + cell / 2 + 4:.1f}" text-anchor="middle" '
                f'fill="{ink}">{lf.lift:+.2f}</text>',
                "</g>",
            ]
    out.append("</svg>")
    return "\n".join(out)
