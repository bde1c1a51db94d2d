"""The compositional volume ratio ρ(W, L): Monte Carlo, exact enumeration, and the basin model.

**Boolean model**. Random masked threshold networks of width W and depth L on the
n input bits of a compositional Boolean target (a DAG of threshold gates, `boolean`). A network is
a **solution** if its output table equals the target's. A solution is **compositional** when every
unit that influences the output computes a node of the target's DAG (an input or a primitive) or
its negation, and reads only units computing that node's children or the node itself (a copy).
"Influences": the unit has a non-zero weight into a unit that influences (the output does, by
definition), and flipping the unit's function — in every unit of its layer that computes the same
function or its negation, together, so that redundant copies count — changes that consumer at some
input; constant units only shift biases and never influence. Other solutions are **fractured**.
ρ(W, L) = P(compositional | solution); the absolute volumes P(solution) and P(compositional) are
reported too, with Wilson or Clopper–Pearson intervals (`scipy.stats.binomtest`).

Consequences of the definition proved in the chapter and checked by the tests: ρ = 0 when L < L*
or when W is below the embedding width `target.min_width(L)`.

**Basin model**: trained instead of sampled networks on a planted image target;
see `basin.BasinConfig` / `basin.basin_cell`.

Layout (every public name of the sampler, intervals, montecarlo, enumeration, grid, decay and basin
modules is importable from `volratio.rho`):

- `boolean` — the Boolean targets: `BooleanTarget`, `get_boolean_target`, `input_table`, `tree`,
  `chain`, `random_dag` (import it as a module; not re-exported here);
- `bitslice` — the bit-sliced engine: truth tables as uint64 words, its sampler and random-stream
  contract, worker pools (a module; not re-exported here);
- `sampler` — the float sampler and the classifier: `SamplerConfig`, `Nets`, `sample_networks`,
  `forward`, `classify`, `layer_dims`, `n_params`, `cell_seed`, `RhoError`;
- `intervals` — `Counts`, `interval`, `row`, `networks_for_width`;
- `montecarlo` — one cell by either engine with its stopping rules: `count`, `estimate`;
- `enumeration` — exact enumeration of small cells: `exact`, `Exact`;
- `grid` — a (W, L) grid and the chapter's experiment presets: `boolean_grid`,
  `BooleanRhoConfig`, `run_boolean`, `rows_to_grid`;
- `decay` — the decay rate of ρ away from (W_min, L*): `decay_fit`, `decay_verdict`;
- `basin` — the basin model: `BasinConfig`, `basin_cell`, `basin_grid`, `basin_table`,
  `basin_checks`, `BASIN_JUDGE`;
- `recovery` — the judge-free structural score on planted targets (recovery of the planted
  primitives, monosemanticity, their chance levels); its `primitive_correlations` and
  `assigned_correlations`, which the basin model calls, are re-exported here (the rest: import it
  as a module);
- `theory` — the volume-ratio theorem in closed form (sympy): `clean_volume`,
  `clean_volume_value`, `theory_grid`, `support_zero`, `copy_factor` (a module; not re-exported).

References: Valle-Pérez et al. 2019 and Mingard et al. 2021 (sampling the parameter–function map
of random networks on all Boolean inputs); Do et al. 2026 (the volume-ratio argument). Used by the
chapter "The volume-ratio argument" (book/volume_ratio.md) and `volratio rho`.
"""

from __future__ import annotations

from .basin import (
    BASIN_JUDGE,
    BasinConfig,
    basin_cell,
    basin_checks,
    basin_grid,
    basin_table,
)
from .decay import decay_fit, decay_verdict
from .enumeration import Exact, exact
from .grid import BooleanRhoConfig, boolean_grid, rows_to_grid, run_boolean
from .intervals import Counts, networks_for_width, row
from .montecarlo import MAX_INPUTS, count, estimate
from .recovery import assigned_correlations, primitive_correlations
from .sampler import (
    Nets,
    RhoError,
    SamplerConfig,
    cell_seed,
    classify,
    forward,
    inputs,
    layer_dims,
    n_params,
    sample_networks,
)

__all__ = [
    # sampler
    "RhoError",
    "SamplerConfig",
    "Nets",
    "sample_networks",
    "inputs",
    "forward",
    "classify",
    "layer_dims",
    "n_params",
    "cell_seed",
    # intervals
    "Counts",
    "row",
    "networks_for_width",
    # montecarlo
    "MAX_INPUTS",
    "count",
    "estimate",
    # enumeration
    "Exact",
    "exact",
    # grid
    "boolean_grid",
    "BooleanRhoConfig",
    "run_boolean",
    "rows_to_grid",
    # decay
    "decay_fit",
    "decay_verdict",
    # basin
    "BasinConfig",
    "basin_cell",
    "basin_grid",
    "basin_table",
    "basin_checks",
    "BASIN_JUDGE",
    # recovery (the shared assignment)
    "primitive_correlations",
    "assigned_correlations",
]
