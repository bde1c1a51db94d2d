"""The anchor of a target: the one image a label-anchored judge compares every network with.

A comparison between networks trained on one target asks each of them the same question about the
same image. `anchor_image(target_spec, res, anchor)` gives that image at the scoring resolution:

- "image": the target's own image (`volratio.data.targets.get_target(spec).image(res)`), which for
  a `picbreeder:NAME` target is the Picbreeder network's exact render, point-sampled at `res`;
- "png": for a `picbreeder:NAME` target, its published `target.png` resampled to `res` with an
  antialiased bilinear filter (`volratio.data.picbreeder.target_png`) — the image the dense twins of
  the Picbreeder networks are trained on, so that the twins and the Picbreeder network are judged
  against the image the twins were fitted to, and neither side is compared with its own render.

Chapter: "EMC2-Bench" (book/emc2.md), the sixteen-target comparison.
"""

from __future__ import annotations

import torch

from ..errors import VolratioError
from . import picbreeder
from .targets import get_target

ANCHORS = ("image", "png")  # what a label-anchored judge compares with; the first is the target's own image


def anchor_image(target_spec: str, res: int, anchor: str = "image") -> torch.Tensor:
    """`(res, res, 3)` in [0, 1]: the image of `target_spec` a label-anchored judge compares with
    under `anchor` (see the module docstring). "png" applies to `picbreeder:NAME` targets only."""
    if anchor == "image":
        return get_target(target_spec).image(res)
    if anchor == "png":
        kind, _, name = str(target_spec).partition(":")
        if kind != "picbreeder" or name not in picbreeder.ALL_NAMES:
            raise VolratioError(
                f"anchor 'png' is a Picbreeder target's target.png; {target_spec!r} is not picbreeder:NAME "
                f"with NAME one of {', '.join(picbreeder.ALL_NAMES)} — use anchor 'image'"
            )
        return picbreeder.target_png(name, res)
    raise VolratioError(f"anchor must be one of {', '.join(ANCHORS)}, got {anchor!r}")
