"""Welch bounds, frames, and the interference of learned features .

For m unit vectors v_1 … v_m in ℝⁿ or ℂⁿ and every order k ≥ 1 (Welch 1974),

    max_{i≠j} |⟨vᵢ, vⱼ⟩|^{2k}  ≥  ( m / C(n+k−1, k) − 1 ) / (m − 1),

with equality at k = 1 iff the vectors form an equiangular tight frame (ETF). Vectors are the
*rows* of an (m, n) array throughout; everything is float64 numpy (complex128 for complex frames)
so that ETFs meet the bound to ~1e-12.

Layout (every public name of the bounds, frames, sweep and interference modules is importable
from `volratio.welch`):

- `bounds` — `welch_bound`, `welch_bound_exact`, `welch_bound_sq`, `best_bound`,
  `orthoplex_bound`, `gerzon_limit`;
- `frames` — measures of any set of vectors (`coherence`, `max_sq_inner`, `mean_sq_inner`,
  `frame_potential`, `is_tight`, `is_equiangular`, `is_etf`, `tightness`), known ETFs
  (`known_etfs`: simplices, icosahedron, Paley, harmonic, Naimark complements) and numerical
  low-coherence frames (`low_coherence_frame`, `FrameConfig`, `FrameResult`);
- `sweep` — the chapter's frame experiment: `FrameSweepConfig` with its presets, `frame_sweep`,
  `REAL_ETF_SIZES`;
- `interference` — a trained network's features against the bound: `layer_interference`,
  `LayerInterference`, `network_interference`;
- `superposition` — the superposition toy model (Elhage et al. 2022): `ToyConfig`, `train_toy`,
  `feature_interference` (import it as a module: it needs torch; not re-exported here).

Used by the chapter "Feature interference and the Welch bound" (book/welch.md) and by
`volratio welch …`.
"""

from __future__ import annotations

from .bounds import (
    MAX_BINOMIAL,
    best_bound,
    gerzon_limit,
    orthoplex_bound,
    welch_bound,
    welch_bound_exact,
    welch_bound_sq,
)
from .frames import (
    DIFFERENCE_SETS,
    FrameConfig,
    FrameResult,
    Tightness,
    alternating_projection,
    as_frame,
    coherence,
    frame_from_gram,
    frame_potential,
    frame_potential_bound,
    gram,
    harmonic_frame,
    icosahedron_frame,
    is_equiangular,
    is_etf,
    is_tight,
    known_etfs,
    low_coherence_frame,
    max_sq_inner,
    mean_sq_inner,
    naimark_complement,
    orthonormal_frame,
    paley_frame,
    simplex_frame,
    smooth_max_descent,
    tightness,
)
from .interference import LayerInterference, layer_interference, network_interference
from .sweep import REAL_ETF_SIZES, FrameSweepConfig, frame_sweep

__all__ = [
    # bounds
    "MAX_BINOMIAL",
    "welch_bound_exact",
    "welch_bound",
    "welch_bound_sq",
    "gerzon_limit",
    "orthoplex_bound",
    "best_bound",
    # frames: measures
    "as_frame",
    "gram",
    "max_sq_inner",
    "mean_sq_inner",
    "coherence",
    "frame_potential",
    "frame_potential_bound",
    "is_tight",
    "is_equiangular",
    "is_etf",
    "Tightness",
    "tightness",
    # frames: known ETFs
    "frame_from_gram",
    "orthonormal_frame",
    "simplex_frame",
    "icosahedron_frame",
    "paley_frame",
    "DIFFERENCE_SETS",
    "harmonic_frame",
    "naimark_complement",
    "known_etfs",
    # frames: numerical construction
    "FrameConfig",
    "FrameResult",
    "alternating_projection",
    "smooth_max_descent",
    "low_coherence_frame",
    # sweep
    "REAL_ETF_SIZES",
    "FrameSweepConfig",
    "frame_sweep",
    # interference
    "LayerInterference",
    "layer_interference",
    "network_interference",
]
