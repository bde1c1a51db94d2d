"""EMC2-Bench: the perturbation-based compositional score, its exact batched engine, weight sweeps.

For a network θ with non-zero parameters nz(θ), a perturbation size δ and a judge J (following
Do, Shah, Le, Liu 2026):

    S(θ; δ) = (1 / |nz(θ)|) · Σ_{w ∈ nz(θ)} 1[ J(render(θ with w ← w + δ)) keeps the identity ]

Layout (every public name is importable from `volratio.emc2`):

- `engine` — the exact batched perturbation engine (`PerturbationEngine`, `perturbed_images`), its
  reference `naive_render`, and the parameters a score perturbs (`nonzero_params`, `params_of`,
  `subsample`, the δ grids `DEFAULT_DELTAS` and `UNIT_DELTAS`);
- `scoring` — the score: `EMC2Config`, `score` (one `EMC2Result` per judge, with its curve, area
  and per-parameter table), `score_members` (every member of a population), `judges_for` (judges by name for a network), and the steps of a score
  (`render`, `judge_images`, `tabulate`);
- `delta_scale` — how far a perturbation moves a weight: δ (the paper's) or δ × the std of the
  weight's layer (`DELTA_SCALES`, `step_sizes`, `layer_scales`; `EMC2Config.delta_scale`);
- `sweeps` — weight sweeps (`weight_sweep`, `pick_params`) and the images behind a score
  (`judged_examples`);
- `fused` — the C++ perturbation kernel behind `PerturbationEngine(engine="fused")` and
  `EMC2Config(engine=…)` (imported as a module: `volratio.emc2.fused`);
- `change_structure` — the book's own second lens on a change, the structure of the difference
  image (imported as a module: `from volratio.emc2 import change_structure`).

Chapter: "EMC2-Bench" (book/emc2.md); benchmark: benchmarks/emc2_engine.py.
"""

from __future__ import annotations

from .delta_scale import DELTA_SCALES, layer_scales, step_sizes
from .engine import (
    DEFAULT_DELTAS,
    UNIT_DELTAS,
    DisconnectedNetwork,
    PerturbationEngine,
    PerturbationError,
    cache_params,
    naive_render,
    nonzero_params,
    params_of,
    perturbed_copy,
    perturbed_images,
    subsample,
    torch_dtype,
)
from .scoring import (
    EMC2Config,
    EMC2Result,
    Judged,
    Perturbations,
    judge_images,
    judges_for,
    normalised_auc,
    render,
    score,
    score_members,
    summarise,
    tabulate,
    target_label,
)
from .sweeps import JudgedExamples, WeightSweep, judged_examples, pick_params, weight_sweep

__all__ = [
    "DEFAULT_DELTAS",
    "DELTA_SCALES",
    "UNIT_DELTAS",
    "DisconnectedNetwork",
    "EMC2Config",
    "EMC2Result",
    "Judged",
    "JudgedExamples",
    "PerturbationEngine",
    "PerturbationError",
    "Perturbations",
    "WeightSweep",
    "cache_params",
    "judge_images",
    "judged_examples",
    "judges_for",
    "layer_scales",
    "naive_render",
    "nonzero_params",
    "normalised_auc",
    "params_of",
    "perturbed_copy",
    "perturbed_images",
    "pick_params",
    "render",
    "score",
    "score_members",
    "step_sizes",
    "subsample",
    "summarise",
    "tabulate",
    "target_label",
    "torch_dtype",
    "weight_sweep",
]
