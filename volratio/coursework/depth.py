"""Checks for the exercises of "Depth: a narrow, target-dependent regime" (book/depth.md): the PNG
compression ratio, the linear depth predictor and the sweet spot of a score table
(`volratio.depth`)."""

from __future__ import annotations

import io
import math

import numpy as np
import scipy
from PIL import Image

from ..data.targets import get_target
from ..depth import fit_predictor, sweet_spot
from ..depth.complexity import png_ratio
from ..util.images import to_uint8
from .check import (
    Check,
    CourseworkError,
    checker,
    close,
    number,
)

__all__ = ["check_depth_fit", "check_png_ratio", "check_sweet_spot"]


def _png_variant(img, optimize: bool, level: int) -> int:
    buf = io.BytesIO()
    Image.fromarray(to_uint8(img), mode="RGB").save(buf, format="PNG", optimize=optimize, compress_level=level)
    return len(buf.getvalue())


@checker
def check_png_ratio(answer, target: str, res: int = 64) -> Check:
    """The PNG compression ratio raw bytes / PNG bytes of target spec `target` at `res`: uint8 RGB,
    Pillow, `optimize=True`, `compress_level=9` (`volratio.depth.complexity.png_ratio`)."""
    got = number(answer, "your ratio")
    c = png_ratio(target, res)
    if close(got, c.ratio, rtol=1e-9):
        return Check(
            "check_png_ratio",
            True,
            f"{target} at {res}×{res}: {c.raw_bytes} raw / {c.png_bytes} PNG bytes = {c.ratio:.4f} (Pillow {c.pillow})",
            c.ratio,
            got,
        )
    img = get_target(target).image(res)
    png_default = _png_variant(img, False, 6)
    wrong = {
        "you inverted it: the ratio is raw bytes / PNG bytes (higher = simpler image)": c.png_bytes / c.raw_bytes,
        f"you counted one byte per pixel; raw RGB has 3 × {res}² = {c.raw_bytes} bytes": c.ratio / 3,
        "you saved with Pillow's defaults; use optimize=True, compress_level=9 so every ratio is comparable": c.raw_bytes
        / png_default,
        f"you counted 4 bytes per float pixel channel; quantise to uint8 first ({c.raw_bytes} raw bytes)": c.ratio * 4,
    }
    for why, v in wrong.items():
        if close(got, v, rtol=1e-6):
            return Check("check_png_ratio", False, f"your ratio {got:.4f} ≠ {c.ratio:.4f}: {why}", c.ratio, got)
    return Check(
        "check_png_ratio",
        False,
        f"your ratio {got:.4f} ≠ {c.ratio:.4f} ({c.raw_bytes} raw / {c.png_bytes} PNG bytes) — quantise with "
        "floor(clip(x, 0, 1)·255 + 0.5) to uint8 RGB and save as PNG in memory",
        c.ratio,
        got,
    )


@checker
def check_depth_fit(intercept, slope, r2, ratios, depths) -> Check:
    """The least-squares line depth ≈ a + b·ratio through `(ratios, depths)` and its R²
    (`volratio.depth.fit_predictor`)."""
    a, b, q = number(intercept, "intercept"), number(slope, "slope"), number(r2, "R²")
    p = fit_predictor(ratios, depths)
    ref = {"intercept": p.a, "slope": p.b, "r2": p.r2}
    got = {"intercept": a, "slope": b, "r2": q}
    if all(close(got[k], ref[k], rtol=1e-6, atol=1e-9) for k in ref):
        return Check(
            "check_depth_fit", True, f"depth ≈ {p.a:.3f} + {p.b:.3f}·ratio, R² = {p.r2:.3f} (n = {p.n})", ref, got
        )
    inv = scipy.stats.linregress(np.asarray(depths, float), np.asarray(ratios, float))
    if close(b, inv.slope, rtol=1e-6) and close(a, inv.intercept, rtol=1e-6):
        why = "you regressed the ratio on the depth; the predictor is depth = a + b·ratio (x = ratio, y = depth)"
    elif close(a, p.b, rtol=1e-6) and close(b, p.a, rtol=1e-6):
        why = "intercept and slope are swapped"
    elif close(q, math.sqrt(p.r2), rtol=1e-6):
        why = "that is |r|, the correlation; R² is its square"
    else:
        bad = [k for k in ref if not close(got[k], ref[k], rtol=1e-6, atol=1e-9)]
        why = ", ".join(f"{k} {got[k]:.4f} ≠ {ref[k]:.4f}" for k in bad)
    return Check("check_depth_fit", False, why, ref, got)


@checker
def check_sweet_spot(answer, depths, scores, tol: float = 1e-9) -> Check:
    """The sweet spot of a score-vs-depth curve: the shallowest depth whose mean score (over seeds,
    the columns of `scores`) is within `tol` of the best (`volratio.depth.sweet_spot`)."""
    d = [int(x) for x in depths]
    ss = sweet_spot(d, scores, tol=tol, n_boot=0)
    if ss.flat:
        raise CourseworkError("this curve is flat (no sweet spot); give scores that vary with depth")
    got = number(answer, "your sweet spot")
    if got == ss.depth:
        return Check(
            "check_sweet_spot", True, f"sweet spot at depth {ss.depth} (mean score {max(ss.means):.3f})", ss.depth, got
        )
    means = np.asarray(ss.means)
    if int(got) == int(np.argmax(means)) and int(got) not in d:
        why = f"{int(got)} is the *index* of the best depth; the depth there is {d[int(np.argmax(means))]}"
    elif int(got) in ss.tied:
        why = f"depths {ss.tied} tie for the best mean; report the shallowest, {ss.depth} (the smallest network that reaches the peak)"
    elif int(got) == d[int(np.argmin(means))]:
        why = "that is the depth with the *lowest* mean score"
    elif np.ndim(scores) == 2 and int(got) in ss.per_seed:
        why = "that is one seed's best depth; average the scores over seeds (the columns) first"
    else:
        why = f"mean scores per depth are {dict(zip(d, np.round(means, 4).tolist()))}"
    return Check("check_sweet_spot", False, f"your sweet spot {got:g} ≠ {ss.depth}: {why}", ss.depth, got)
