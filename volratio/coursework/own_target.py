"""Checks for the exercises of "Bringing your own target" (book/own_target.md): flattening an
image with transparent pixels onto a background — what the `file:` loader's error message asks
for — compared with Pillow's `Image.alpha_composite`."""

from __future__ import annotations

import numpy as np
from PIL import Image

from .check import Check, CourseworkError, array, checker

__all__ = ["check_flattened"]


@checker
def check_flattened(image, rgba, background=(255, 255, 255)) -> Check:
    """`image`: the `(H, W, 4)` uint8 RGBA array `rgba` composited over the opaque colour
    `background` (0–255 per channel), as float RGB `(H, W, 3)` in [0, 1]; accepted within one
    grey level of `Image.alpha_composite`."""
    src = np.asarray(rgba)
    if src.ndim != 3 or src.shape[-1] != 4 or src.dtype != np.uint8:
        raise CourseworkError(f"rgba should be an (H, W, 4) uint8 array, got {src.shape} {src.dtype}")
    bg = Image.new("RGBA", (src.shape[1], src.shape[0]), tuple(int(v) for v in background) + (255,))
    ref = np.asarray(Image.alpha_composite(bg, Image.fromarray(src, "RGBA")).convert("RGB"), dtype=np.float64) / 255
    got = array(image, "your image")
    if got.shape != ref.shape:
        hint = " — drop the alpha channel after compositing" if got.shape == src.shape else ""
        return Check("check_flattened", False, f"shape {got.shape} ≠ {ref.shape}{hint}", ref.shape, got.shape)
    if got.max() > 1 + 1e-6:
        return Check(
            "check_flattened",
            False,
            f"values up to {got.max():.4g}: a target is floats in [0, 1] — divide 8-bit values by 255",
        )
    tol = 1.0 / 255 + 1e-6  # Pillow rounds to 8 bits
    err = np.abs(got - ref).max()
    if err <= tol:
        return Check(
            "check_flattened",
            True,
            f"{int((src[..., 3] < 255).sum())} non-opaque pixels composited onto "
            f"{tuple(background)}; max |difference| {err:.1e}",
        )
    a = src[..., 3:].astype(np.float64) / 255
    rgb = src[..., :3].astype(np.float64) / 255
    wrong = {
        "the alpha channel was dropped, not applied: the colour of a transparent pixel is meaningless": rgb,
        "that is composited onto black: add background · (1 − alpha)": rgb * a,
        "alpha is reversed: alpha = 255 is opaque (the pixel's own colour), 0 is fully transparent": rgb * (1 - a)
        + np.asarray(background) / 255 * a,
    }
    for why, v in wrong.items():
        if np.abs(got - v).max() <= tol:
            return Check("check_flattened", False, f"wrong image: {why}")
    r, c = np.unravel_index(np.abs(got - ref).max(-1).argmax(), ref.shape[:2])
    return Check(
        "check_flattened",
        False,
        f"pixel ({r}, {c}) with RGBA {src[r, c].tolist()} should be {np.round(ref[r, c], 4).tolist()}, got "
        f"{np.round(got[r, c], 4).tolist()} — out = colour · α + background · (1 − α), α = alpha / 255",
    )
