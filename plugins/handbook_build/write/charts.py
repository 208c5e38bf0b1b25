"""The review-queue page's two pictures, as hand-written SVG: no script draws them, so
they show without JavaScript, and each carries its text alternative (`<title>`, `<desc>`,
`aria-labelledby`) saying in words what the bars say. Every value in them is escaped:
doc ids, state names and numbers are text, never markup.

- `states_chart`: how many docs are in each state, in the runtime's order.
- `staleness_chart`: for each doc, the days since it was last confirmed (approved or
  corroborated by someone who does not own it), against the library's horizon.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape

from handbook.bounds import clip

from .pedigree_view import STATES, state_name

WIDTH = 640
ROW = 22
LABEL = 230
"""Width of the label column; bars start after it."""
BAR_SPACE = 330
COLOURS = {
    "reviewed": "#2e7d32",
    "unreviewed": "#b26a00",
    "stale": "#b26a00",
    "under_approved": "#b26a00",
}
ALARM = "#c62828"
"""Contested, suspect, retired, and a doc past its horizon."""
MAX_STALENESS_ROWS = 40
"""The staleness chart shows the docs longest without confirmation, at most this many."""


def _svg(name: str, title: str, desc: str, height: int, body: list[str]) -> str:
    ids = f"hb-chart-{name}-title hb-chart-{name}-desc"
    return "".join(
        [
            f'<svg xmlns="http://www.w3.org/2000/svg" role="img" aria-labelledby="{ids}" '
            f'width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}">',
            f'<title id="hb-chart-{name}-title">{escape(title)}</title>',
            f'<desc id="hb-chart-{name}-desc">{escape(desc)}</desc>',
            *body,
            "</svg>",
        ]
    )


def _row(y: int, label: str, length: float, colour: str, value: str, css: str) -> str:
    """One bar: its label left of it, its value right of it (all text escaped)."""
    bar = (
        f'<rect x="{LABEL}" y="{y + 4}" width="{length:.1f}" height="{ROW - 8}" '
        f'fill="{colour}" class="hb-bar {css}"/>'
        if length > 0
        else ""
    )
    return (
        f'<g><text x="{LABEL - 8}" y="{y + ROW - 7}" text-anchor="end">{escape(label)}</text>'
        f'{bar}<text x="{LABEL + length + 6:.1f}" y="{y + ROW - 7}">{escape(value)}</text></g>'
    )


def states_chart(counts: Mapping[str, int]) -> str:
    """Docs per state: one bar per state of the runtime's, worst first, zeros included."""
    top = max([*counts.values(), 1])
    body = [
        _row(
            n * ROW,
            state_name(state),
            BAR_SPACE * counts.get(state, 0) / top,
            COLOURS.get(state, ALARM),
            str(counts.get(state, 0)),
            f"hb-bar--{state}",
        )
        for n, state in enumerate(STATES)
    ]
    total = sum(counts.values())
    desc = f"{total} docs: " + ", ".join(f"{counts.get(s, 0)} {state_name(s)}" for s in STATES)
    return _svg("states", "Docs per state", desc, ROW * len(STATES) + 4, body)


def staleness_chart(days: Sequence[tuple[str, int | None]], horizon: int | None) -> str:
    """Days since each doc (id, days or None: never confirmed in its current revision)
    was last confirmed, longest first, never-confirmed docs before all, with the horizon
    (in days) drawn as a dashed line; at most `MAX_STALENESS_ROWS` docs."""
    rows = sorted(days, key=lambda d: (d[1] is not None, -(d[1] or 0), d[0]))
    shown = rows[:MAX_STALENESS_ROWS]
    scale = max([horizon or 0, *(d for _, d in shown if d is not None), 1]) * 1.1
    body = []
    for n, (doc_id, age) in enumerate(shown):
        if age is None:
            body.append(_row(n * ROW, clip(doc_id, 32), 0, ALARM, "not confirmed", ""))
            continue
        past = horizon is not None and age > horizon
        length = max(BAR_SPACE * age / scale, 1.0)
        colour, css = (ALARM, "hb-bar--past") if past else (COLOURS["reviewed"], "hb-bar--within")
        body.append(_row(n * ROW, clip(doc_id, 32), length, colour, f"{age} d", css))
    height = ROW * max(len(shown), 1) + 22
    if horizon is not None:
        x = LABEL + BAR_SPACE * horizon / scale
        body.append(
            f'<line class="hb-horizon" x1="{x:.1f}" x2="{x:.1f}" y1="0" y2="{height - 18}" '
            f'stroke="#777" stroke-dasharray="4 3"/>'
            f'<text x="{x:.1f}" y="{height - 4}" text-anchor="middle">'
            f"horizon {horizon} d</text>"
        )
    return _svg(
        "staleness",
        "Days since each doc was last confirmed",
        _staleness_desc(rows, shown, horizon),
        height,
        body,
    )


def _staleness_desc(
    rows: Sequence[tuple[str, int | None]],
    shown: Sequence[tuple[str, int | None]],
    horizon: int | None,
) -> str:
    against = f"against the {horizon}-day horizon" if horizon is not None else "(no horizon set)"
    which = (
        f"the {len(shown)} longest of {len(rows)} docs" if len(shown) < len(rows) else "each doc"
    )
    parts = []
    for doc_id, age in shown:
        if age is None:
            parts.append(f"{doc_id} not confirmed in its current revision")
        else:
            past = " (past the horizon)" if horizon is not None and age > horizon else ""
            parts.append(f"{doc_id} {age} days{past}")
    return f"Days since {which} was last confirmed, {against}: " + "; ".join(parts) + "."
