"""The depth claims, read from the store: the optimum at L*, the PNG-ratio predictor, and the
judge-free recovery of the planted primitives.

Both depth claims are decided in the sparse regime, on every non-zero weight of every stored
network (the fused kernel's every-weight rescores):

- **the depth optimum** on the planted targets pruned by SP to one weight sparsity per target
  (chunk `depth_matched_planted`), by the claim's statistic: the score at L* minus the better of
  its shallower and deeper sides;
- **the predictor** on the sparse regime's sweet spots at each network's fit point (chunks
  `depth_sparse_planted` and `depth_sparse_picbreeder`): fitted on the planted targets, checked on
  the Picbreeder targets it never saw;
- **judge-free**: the same statistic with the recovery of the planted primitives in place of the
  EMC2 AUC (`volratio.rho.recovery`), on the same stored networks, without training.
"""

from __future__ import annotations

from dataclasses import replace
from functools import cache

import pandas as pd

from ...data.targets import get_target
from ...experiments import depth_regime
from ...rho import recovery
from .. import claims, evidence
from . import EVERY

SPARSE_CHUNKS, MATCHED_CHUNKS = depth_regime.SPARSE_CHUNKS, depth_regime.MATCHED_CHUNKS
RATIO_RES = 64  # the resolution the PNG ratio of a target is measured at
SPARSE_SPOT = "measured sweet spot in the sparse regime (each network at its fit point)"
RECOVERY = recovery.RecoveryConfig()  # maps at 64×64, margin 0.1, 4 control targets, seed 0


@cache
def sparse_curves(judge: str = "anchored", delta_scale: str = "absolute") -> dict:
    """Each sparse-regime target's depth curve at its networks' fit points, under `judge`."""
    return depth_regime.stored_curves(SPARSE_CHUNKS, reading=EVERY.but(judge=judge, delta_scale=delta_scale))


@cache
def matched_curves(judge: str, delta_scale: str = "absolute") -> dict:
    """Each planted target's depth curve at its one sparsity, under `judge`."""
    return depth_regime.stored_curves(MATCHED_CHUNKS, reading=EVERY.but(judge=judge, delta_scale=delta_scale))


def true_depths() -> dict[str, int]:
    """The planted targets of the sparse regime and the depth L* of each one's DAG."""
    return {t: get_target(t).depth for t in sparse_curves() if t.startswith("planted:")}


@cache
def _matched_sparsity() -> pd.DataFrame:
    table = depth_regime.sparsity_table(SPARSE_CHUNKS).loc[list(true_depths())]
    return depth_regime.matched_sparsity(table)


def matched_sparsity() -> pd.DataFrame:
    """Per planted target and depth: the one weight sparsity its networks are compared at."""
    return _matched_sparsity().copy()


def matched_where() -> str:
    at = _matched_sparsity()
    return (
        f"decided in the sparse regime at one weight sparsity per target ({at.sparsity.min():.2f}–"
        f"{at.sparsity.max():.2f}), every depth pruned there by SP"
    )


def optimum(judge: str, delta_scale: str = "absolute"):
    """The depth-optimum claim under `judge`, δ read as `delta_scale`, on the planted networks at one
    sparsity per target. Returns the verdict and the counts `claims.depth_optimum` reports."""
    return claims.depth_optimum(
        matched_curves(judge, delta_scale),
        true_depths(),
        scale="reference",
        judge=judge,
        stored=True,
        detail=f"{matched_where()}; every non-zero weight scored",
    )


def offsets(judge: str) -> pd.Series:
    """The mean score over the planted targets by depth − L*, at one sparsity per target."""
    curves, true = matched_curves(judge), true_depths()
    rows = [(d - true[t], m) for t in true for d, m in zip(curves[t].depths, curves[t].spot.means)]
    return pd.DataFrame(rows, columns=["depth − L*", "score"]).groupby("depth − L*").score.mean()


def predictor(judge: str, delta_scale: str = "absolute"):
    """The PNG-ratio claim under `judge`: the predictor fitted on the planted sweet spots and checked
    on the held-out Picbreeder ones. Returns the verdict and the check."""
    curves = sparse_curves(judge, delta_scale)
    check = depth_regime.check_predictor(
        curves,
        fit_on=[t for t in curves if t.startswith("planted:")],
        held_out=[t for t in curves if t.startswith("picbreeder:")],
        res=RATIO_RES,
    )
    return claims.png_ratio_linear(
        check.fit, scale="reference", check=check, what=SPARSE_SPOT, stored=True, judge=judge
    ), check


@cache
def recovery_curves(cfg: recovery.RecoveryConfig = RECOVERY) -> dict:
    """Each planted target's recovery and monosemanticity, and their chance levels, per depth: the
    stored networks at one sparsity per target, scored without training."""
    return depth_regime.recovery_curves(MATCHED_CHUNKS, cfg=cfg)


def judge_free(field: str = "score", cfg: recovery.RecoveryConfig = RECOVERY):
    """The depth claim's pooled statistic on one reading of the recovery curves (`score`: recovery;
    `chance_other`, `chance_init`: its chance levels). Returns (verdict word, rows, decision, pooled)."""
    curves = recovery_curves(cfg)
    true = {t: get_target(t).depth for t in curves}
    rows, _ = claims.depth_rows(
        {t: replace(c, score=getattr(c, field)) for t, c in curves.items()}, true, zero_undrawn=False
    )
    return evidence.decide_pooled("depth-optimum", rows, "L*", ["shallower", "deeper"], "per setting")
