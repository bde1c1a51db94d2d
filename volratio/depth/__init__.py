"""Depth: a target's complexity, depth curves and their sweet spot, the depth predictor, one depth run.

Layout (the names below without a module prefix are importable from `volratio.depth`):

- `complexity` — a target's complexity, its PNG compression ratio (`png_ratio`; imported as a
  module: `from volratio.depth import complexity`);
- `curves` — the sweet spot of a depth curve (`sweet_spot`, `SweetSpot`, `peak_effect`), one
  target's curve over a sweep's networks (`curves.DepthCurve`, read from a results table with
  `curves.curves_from_table`) and `DepthError`, bad input to a depth sweep or the predictor;
- `predictor` — depth ≈ a + b·ratio (`fit_predictor`, `DepthPredictor`, `r2_interval`), calibrated
  on planted targets of known depth (`planted_specs`, `planted_predictor`);
- `point` — one run of a depth sweep (the run function `depth_point`: SP networks of one depth on
  one target, scored with EMC2) and the sweep's settings (`point.Settings`, `point.Config`;
  imported as a module: `from volratio.depth import point`);
- `controls` — the controls of the instruments that decide claims on planted targets (the planted
  DAG, dense fits and masks at initialisation, a graded series of known order; each instrument's
  control gap, its graded response and the 3m rule, `controls.sensitivity`; imported as a module).
- `stored_controls` — the controls measured once and stored in `data/controls` (by
  `tools/planted_controls.py`), read back as the evidence page's controls table (imported as a module).

The sweep runs through `volratio.runs.depth_sweep`; the chapter's experiment is
`volratio.experiments.depth_regime`; its figures are in `volratio.report.plots`. Chapters: "Depth: a
narrow, target-dependent regime" (book/depth.md), "Unknown targets" (book/unknown_targets.md);
command: `volratio depth`.
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
