"""The decay of ρ away from (W_min, L*): a binomial regression of the grid's counts, and its verdict.

`decay_fit` fits logit ρ(W, L) = a − λ_W·(W − W_min) − λ_L·(L − L*) to a grid's compositional and
solution counts (maximum likelihood), with intervals on the decay rates λ; `decay_verdict` reads a
rate's interval as "decays", "grows" or "no decay shown".

Chapter: "The volume-ratio argument" (book/volume_ratio.md), its verdicts (`volratio.report.claims`).
"""

from __future__ import annotations

import numpy as np
import scipy

from .boolean import BooleanTarget
from .sampler import RhoError


def decay_fit(rows: list[dict], target: BooleanTarget, along: str = "WL", confidence: float = 0.95) -> dict:
    """Fit the decay of ρ away from (W_min, L*): a binomial regression of the compositional
    count k on the solution count s of each cell (maximum likelihood, logit link),

        logit ρ(W, L) = a − λ_W·(W − W_min) − λ_L·(L − L*),

    so where ρ is small, ρ ∝ exp(−λ_W ΔW − λ_L ΔL): λ is the exponential decay rate per unit of
    width or depth (the logit keeps ρ ≤ 1 near the peak, where ρ can be close to 1). Cells with
    solutions but no compositional one count (as k = 0), cells without solutions carry no
    information. `along="W"`: the cells at L = L*, W ≥ W_min (the width axis through the peak);
    `"L"`: W = W_min, L ≥ L* (the depth axis); `"WL"`: the whole support (L ≥ L*,
    W ≥ W_min(L)), both rates at once. The covariance (inverse Fisher information) is scaled by
    the Pearson χ²/dof when that exceeds 1 — the cells scatter more than binomial counts allow,
    i.e. the log-linear form does not fit them — so the intervals are not narrower than the data
    support. Returns the rates with `confidence` t-intervals, ρ at the peak from the fit, χ²/dof
    and the cells used. Used by the chapter's verdicts (`decay_verdict`)."""
    if along not in ("W", "L", "WL"):
        raise RhoError(f"along={along!r}: use 'W', 'L' or 'WL'")
    Wm, Ls_ = target.width, target.depth

    def in_scope(r):
        if along == "W":
            return r["L"] == Ls_ and r["W"] >= Wm
        if along == "L":
            return r["W"] == Wm and r["L"] >= Ls_
        return r["L"] >= Ls_ and r["W"] >= (target.min_width(r["L"]) or 0)

    cells = [r for r in rows if in_scope(r) and r["solutions"] > 0]
    names = [n for n in ("W", "L") if n in along]
    res = {
        "W_min": Wm,
        "L_star": Ls_,
        "along": along,
        "cells": [(r["W"], r["L"]) for r in cells],
        "confidence": confidence,
        "lambda_W": None,
        "lambda_L": None,
        "dof": len(cells) - 1 - len(names),
    }
    X = np.array([[1.0] + [-(r[n] - (Wm if n == "W" else Ls_)) for n in names] for r in cells]).reshape(
        -1, 1 + len(names)
    )
    k = np.array([r["compositional"] for r in cells], dtype=float)
    s = np.array([r["solutions"] for r in cells], dtype=float)
    if res["dof"] < 1 or np.linalg.matrix_rank(X) < X.shape[1] or k.sum() == 0:
        return {**res, "note": f"{len(cells)} cells with solutions, {int(k.sum())} compositional: too few to fit"}
    beta = np.zeros(X.shape[1])
    for _ in range(100):  # iteratively reweighted least squares (Newton's method for the logit model)
        p = scipy.special.expit(X @ beta)
        w = np.maximum(s * p * (1 - p), 1e-12)
        step = np.linalg.solve(X.T @ (X * w[:, None]), X.T @ (k - s * p))
        beta = beta + step
        if np.abs(step).max() < 1e-10:
            break
    else:
        return {**res, "note": "the fit does not converge (the counts separate perfectly along an axis)"}
    p = scipy.special.expit(X @ beta)
    info = X.T @ (X * (s * p * (1 - p))[:, None])
    chi2 = float(((k - s * p) ** 2 / np.maximum(s * p * (1 - p), 1e-300)).sum())
    cov = np.linalg.inv(info) * max(1.0, chi2 / res["dof"])
    tq = float(scipy.stats.t.ppf(0.5 + confidence / 2, res["dof"]))
    res.update(chi2_per_dof=chi2 / res["dof"], peak_rho=float(scipy.special.expit(beta[0])))
    for i, n in enumerate(names, start=1):
        se = float(np.sqrt(cov[i, i]))
        res[f"lambda_{n}"] = {
            "rate": float(beta[i]),
            "lo": float(beta[i] - tq * se),
            "hi": float(beta[i] + tq * se),
            "se": se,
        }
    return res


def decay_verdict(rate: dict | None) -> str:
    """From a fitted rate's interval: 'decays' (above 0), 'grows' (below 0), 'no decay shown'
    (contains 0: any decay is slower than the interval's upper end) or 'not measured'."""
    if rate is None:
        return "not measured"
    return "decays" if rate["lo"] > 0 else "grows" if rate["hi"] < 0 else "no decay shown"
