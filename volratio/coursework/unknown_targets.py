"""Checks for the exercises of "Unknown targets" (book/unknown_targets.md): composing a
multi-object scene the way `volratio.data.targets.SceneTarget` does — parts side by side, each drawn at
res // n, vertically centred on a black frame."""

from __future__ import annotations

import numpy as np

from ..data.targets import SceneTarget, get_target
from .check import Check, CourseworkError, array, checker

__all__ = ["check_scene_image"]


def _compose(parts, res: int, top=None, offset: bool = True, fill: float = 0.0) -> np.ndarray:
    n = len(parts)
    cell = res // n
    frame = np.full((res, res, 3), fill)
    top = (res - cell) // 2 if top is None else top
    for i, p in enumerate(parts):
        left = i * cell + ((res - n * cell) // 2 if offset else 0)
        frame[top : top + cell, left : left + cell] = p.image(cell).double().numpy()
    return frame


@checker
def check_scene_image(image, spec: str, res: int) -> Check:
    """The `(res, res, 3)` image of scene target `spec` (`scene:A+B…`), compared with
    `get_target(spec).image(res)`."""
    t = get_target(spec)
    if not isinstance(t, SceneTarget):
        raise CourseworkError(f"{spec!r} is not a scene; give a spec like 'scene:image:camera+image:coffee'")
    ref = t.image(res).double().numpy()
    got = array(image, "your scene")
    if got.shape != ref.shape:
        hint = (
            " — the frame is square: the parts are placed side by side on a res × res canvas"
            if got.ndim == 3 and got.shape[0] != got.shape[1]
            else ""
        )
        return Check("check_scene_image", False, f"shape {got.shape} ≠ {ref.shape}{hint}", ref.shape, got.shape)
    err = float(np.abs(got - ref).max())
    if err <= 1e-6:
        n = len(t.parts)
        return Check(
            "check_scene_image",
            True,
            f"{n} parts of {res // n}×{res // n} px each, centred on a black {res}×{res} frame",
            None,
            None,
        )
    parts, n = list(t.parts), len(t.parts)
    cell = res // n
    variants = {
        "the parts are in the wrong order: part i goes into the i-th cell from the left": _compose(parts[::-1], res),
        f"the parts sit at the top; centre them vertically (top row (res − cell) // 2 = {(res - cell) // 2})": _compose(
            parts, res, top=0
        ),
        "the frame should be black (0) outside the parts": None,
        f"shift the parts right by (res − n·cell) // 2 = {(res - n * cell) // 2} pixel(s) so the row is centred": _compose(
            parts, res, offset=False
        ),
    }
    inside = _compose(parts, res, fill=np.nan)
    outside = np.isnan(inside)
    for why, v in variants.items():
        if v is None:
            if np.abs(got - ref)[~outside].max() <= 1e-6:
                return Check("check_scene_image", False, f"the parts are right, but {why}")
        elif np.abs(got - v).max() <= 1e-6:
            return Check("check_scene_image", False, f"wrong scene: {why}")
    if got.max() > 1.0 + 1e-6:
        return Check("check_scene_image", False, f"values up to {got.max():.3g}: images are floats in [0, 1]")
    r, c, _ = np.unravel_index(np.abs(got - ref).argmax(), ref.shape)
    return Check(
        "check_scene_image",
        False,
        f"max |difference| {err:.3g} at pixel ({r}, {c}); each part is get_target(part).image(res // n) "
        f"= {cell} px, not a crop or resize of a larger image",
    )
