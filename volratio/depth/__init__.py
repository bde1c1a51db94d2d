"""Depth: the complexity of a target, the sweet spot of a depth curve, and the depth predictor.

Layout (every public name of `curves` and `predictor` is importable from `volratio.depth`):

- `complexity` — a target's complexity, its PNG compression ratio (`png_ratio`; imported as a
  module: `from volratio.depth import complexity`);
- `curves` — the sweet spot of a depth curve (`sweet_spot`, `SweetSpot`, `peak_effect`) and
  `DepthError`, bad input to a depth sweep or the predictor;
- `predictor` — depth ≈ a + b·ratio (`fit_predictor`, `DepthPredictor`, `r2_interval`), calibrated
  on planted targets of known depth (`planted_specs`, `planted_predictor`).

The depth sweep itself is the experiment `volratio.experiments.depth_regime`; its figures are in
`volratio.report.plots`. Chapters: "Depth: a narrow, target-dependent regime" (book/depth.md),
"Unknown targets" (book/unknown_targets.md); command: `volratio depth`.
"""

from __future__ import annotations

from .curves import DepthError, SweetSpot, peak_effect, sweet_spot
from .predictor import DepthPredictor, fit_predictor, planted_predictor, planted_specs, r2_interval

__all__ = [
    "DepthError",
    "DepthPredictor",
    "SweetSpot",
    "fit_predictor",
    "peak_effect",
    "planted_predictor",
    "planted_specs",
    "r2_interval",
    "sweet_spot",
]
