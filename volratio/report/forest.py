"""A claim's deciding effect, drawn: a small forest plot as inline SVG.

A `Forest` holds the numbers a verdict was decided on — one row per measured quantity, its
estimate and interval — and the claim's threshold (the line the rows are read against). A
`volratio.report.render.Verdict` that carries one shows it under its badge (`Verdict.html`), so the claims
page, which pastes each verdict as HTML, shows the figure with it: no image files, and the same
figure whichever page the verdict is pasted into.
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass

from ..errors import VolratioError

# layout of the drawing, in pixels: the label column grows with the longest label (up to MAX_LABEL_W)
PLOT_W, LABEL_W, MAX_LABEL_W, ROW_H, TOP, BOTTOM = 280, 140, 300, 15, 6, 30
CHAR_W = 5.6  # about one character of the 10 px sans-serif labels
COLOURS = ("#0072b2", "#d55e00", "#009e73", "#cc79a7", "#555555")  # colour-blind-safe, by row group


@dataclass(frozen=True)
class Row:
    label: str  # what was measured, e.g. "skull: Picbreeder"
    mean: float
    lo: float  # the interval's ends (lo = hi = mean: a point without an interval)
    hi: float
    group: int = 0  # colour index: rows of one group share a colour


@dataclass(frozen=True)
class Forest:
    rows: tuple  # of Row, drawn top to bottom
    xlabel: str  # the quantity on the axis
    threshold: float | None = None  # the claim's line (dashed), None when the rows are read against each other
    threshold_label: str = ""  # what the line means, e.g. "claim: below 0.05"

    def __post_init__(self):
        if not self.rows:
            raise VolratioError("a forest plot needs at least one row")
        for r in self.rows:
            if not all(math.isfinite(x) for x in (r.mean, r.lo, r.hi)) or not r.lo <= r.mean <= r.hi:
                raise VolratioError(f"forest row {r.label!r}: need finite lo ≤ mean ≤ hi, got {r.lo}, {r.mean}, {r.hi}")

    def limits(self) -> tuple[float, float]:
        """The axis range: every interval and the threshold, with a margin."""
        xs = [x for r in self.rows for x in (r.lo, r.hi)] + ([self.threshold] if self.threshold is not None else [])
        lo, hi = min(xs), max(xs)
        pad = 0.06 * (hi - lo) if hi > lo else max(abs(lo) * 0.1, 0.05)
        return lo - pad, hi + pad

    def svg(self) -> str:
        """The plot as one `<svg>` element (text escaped)."""
        lo, hi = self.limits()
        label_w = max(LABEL_W, min(MAX_LABEL_W, round(CHAR_W * max(len(r.label) for r in self.rows)) + 12))
        plot_w = PLOT_W
        width = label_w + plot_w + 12
        height = TOP + ROW_H * len(self.rows) + BOTTOM + (12 if self.threshold is not None else 0)

        def x(v: float) -> float:
            return label_w + (v - lo) / (hi - lo) * plot_w

        out = [
            f'<svg class="forest" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
            f'viewBox="0 0 {width} {height}" style="max-width:100%;height:auto" font-family="sans-serif" font-size="10" role="img" '
            f'aria-label="{html.escape(self.xlabel)}">'
        ]
        axis_y = TOP + ROW_H * len(self.rows)
        for t in ticks(lo, hi):
            out.append(f'<line x1="{x(t):.1f}" y1="{TOP}" x2="{x(t):.1f}" y2="{axis_y}" stroke="#e4e4e4"/>')
            out.append(f'<text x="{x(t):.1f}" y="{axis_y + 11}" text-anchor="middle" fill="#444">{t:g}</text>')
        out.append(f'<line x1="{label_w}" y1="{axis_y}" x2="{label_w + plot_w}" y2="{axis_y}" stroke="#888"/>')
        if self.threshold is not None:
            tx = x(self.threshold)
            out.append(f'<line x1="{tx:.1f}" y1="{TOP - 2}" x2="{tx:.1f}" y2="{axis_y}" stroke="#c00" '
                       'stroke-dasharray="4,3"/>')  # fmt: skip
        for i, r in enumerate(self.rows):
            y = TOP + ROW_H * i + ROW_H / 2
            c = COLOURS[r.group % len(COLOURS)]
            out.append(f'<text x="{label_w - 6}" y="{y + 3.5:.1f}" text-anchor="end" fill="#222">'
                       f"{html.escape(r.label)}</text>")  # fmt: skip
            if r.hi > r.lo:
                out.append(f'<line x1="{x(r.lo):.1f}" y1="{y:.1f}" x2="{x(r.hi):.1f}" y2="{y:.1f}" stroke="{c}" '
                           'stroke-width="1.6"/>')  # fmt: skip
            out.append(f'<circle cx="{x(r.mean):.1f}" cy="{y:.1f}" r="3" fill="{c}"/>')
        lines = [self.xlabel] + ([f"dashed line: {self.threshold_label}"] if self.threshold is not None else [])
        for k, line in enumerate(lines):
            out.append(f'<text x="4" y="{axis_y + 24 + 12 * k}" fill="#222">{html.escape(line)}</text>')
        out.append("</svg>")
        return "".join(out)


def ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    """About `n` round tick values inside [lo, hi]."""
    step = 10 ** math.floor(math.log10((hi - lo) / n))
    for m in (1, 2, 5, 10):
        if (hi - lo) / (m * step) <= n + 0.5:
            step *= m
            break
    first = math.ceil(lo / step) * step
    return [round(first + k * step, 12) for k in range(int((hi - first) / step + 1e-9) + 1)]
