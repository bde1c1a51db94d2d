"""The volume-ratio claim read off a measured ρ(W, L) grid, live or stored.

A grid (`volratio.rho.run_boolean`'s result: one row per cell with its samples, solutions,
compositional solutions, ρ and its interval, and the target's (W_min, L*)) and the decay fits of
`volratio.rho.decay_fit` along W, along L and jointly give the paper's three predictions as checks:

- ρ = 0 below (W_min(L), L*): no network that cannot hold the target's DAG is compositional;
- ρ is highest at (W_min, L*): no cell's lower bound is above the peak's upper bound;
- ρ decays exponentially away from it, in width and in depth (`decay_verdict` on the fitted rate).

`claims.rho_concentrated` decides the claim from these checks; `numbers` gives the values the
chapter's prose quotes.
"""

from __future__ import annotations

import numpy as np

from ...rho import decay_verdict
from ...rho.boolean import BooleanTarget

FITS = (("W", "lambda_W", "width"), ("L", "lambda_L", "depth"), ("WL", "lambda_L", "joint"))  # along, rate, name


def measured(row: dict) -> bool:
    """Whether a cell has a ρ (stored grids keep NaN for a cell with no solution)."""
    return row["rho"] is not None and row["rho"] == row["rho"]


def below(res: dict, target: BooleanTarget) -> list[dict]:
    """The cells too small for the target: shallower than L*, or narrower than its W_min at that depth."""
    return [
        r for r in res["rows"] if r["L"] < res["L_star"] or (r["L"] > 1 and r["W"] < (target.min_width(r["L"]) or 0))
    ]


def checks(res: dict, target: BooleanTarget, fits: dict) -> list[tuple[str, bool, str]]:
    """The paper's three predictions on one grid: `(prediction, holds, the numbers)` each.
    `fits`: the target's decay fits by direction ("W", "L")."""
    rows, wmin, lstar = res["rows"], res["W_min"], res["L_star"]
    small = below(res, target)
    out = [
        (
            "ρ = 0 below (W_min(L), L*)",
            all(r["compositional"] == 0 for r in small),
            f"{sum(r['solutions'] for r in small)} solutions there, {sum(r['compositional'] for r in small)} compositional",
        )
    ]
    known = [r for r in rows if r["rho"] is not None and r["solutions"] >= 5]
    best = max(known, key=lambda r: r["lo"])
    peak = next(r for r in rows if (r["W"], r["L"]) == (wmin, lstar))
    beats = [r for r in known if r["lo"] > peak["hi"]]
    out.append(
        (
            f"ρ highest at (W_min, L*) = ({wmin}, {lstar})",
            not beats,
            f"ρ(W_min, L*) = {peak['rho']:.3f} [{peak['lo']:.3f}, {peak['hi']:.3f}]; best lower bound at "
            f"(W={best['W']}, L={best['L']}): {best['rho']:.3f} [{best['lo']:.3f}, {best['hi']:.3f}]; "
            f"{len(beats)} cell(s) significantly above the peak",
        )
    )
    for along, name, what in (("W", "lambda_W", "width (L = L*)"), ("L", "lambda_L", "depth (W = W_min)")):
        lam = fits[along][name]
        out.append(
            (
                f"ρ decays exponentially in {what}",
                decay_verdict(lam) == "decays",
                "not enough measured cells"
                if lam is None
                else f"rate λ = {lam['rate']:.3f} per unit, 95% interval [{lam['lo']:.3f}, {lam['hi']:.3f}] "
                f"({len(fits[along]['cells'])} cells, χ²/dof {fits[along]['chi2_per_dof']:.1f})",
            )
        )
    return out


def numbers(res: dict, target: BooleanTarget, fits: dict, widest: int) -> dict[str, str]:
    """The values the chapter's reading of one grid quotes, by name: networks sampled, solutions and
    compositional ones below (W_min, L*), ρ at the peak, each decay rate and its χ²/dof, ρ along W at
    L*, along L at W_min and along L at W = `widest`, how often a network at W_min computes the
    target, and the median half-width of the cells' intervals."""
    rows, wmin, lstar = res["rows"], res["W_min"], res["L_star"]
    small = below(res, target)
    peak = next(r for r in rows if (r["W"], r["L"]) == (wmin, lstar))
    out = {
        "networks": f"{sum(r['samples'] for r in rows):,}",
        "below-solutions": f"{sum(r['solutions'] for r in small):,}",
        "below-compositional": f"{sum(r['compositional'] for r in small):,}",
        "peak": f"{peak['rho']:.3g} [{peak['lo']:.3g}, {peak['hi']:.3g}]",
    }
    for along, name, tag in FITS:
        lam, chi2 = fits[along][name], fits[along].get("chi2_per_dof")
        out[tag] = "—" if lam is None else f"{lam['rate']:.2f} [{lam['lo']:.2f}, {lam['hi']:.2f}]"
        out[f"{tag}-chi2"] = "—" if chi2 is None else f"{chi2:.1f}"
    along_w = sorted((r["W"], r["rho"]) for r in rows if r["L"] == lstar and r["W"] >= wmin and measured(r))
    at_wmin = sorted(((r["L"], r) for r in rows if r["W"] == wmin and r["L"] >= lstar), key=lambda t: t[0])
    along_l = [(L, r["rho"]) for L, r in at_wmin if measured(r)]
    at_widest = sorted((r["L"], r["rho"]) for r in rows if r["W"] == widest and r["L"] >= lstar and measured(r))
    out |= {
        "rho-W": ", ".join(f"{v:.3g}" for _, v in along_w),
        "W": ", ".join(str(w) for w, _ in along_w),
        "rho-L": ", ".join(f"{v:.3g}" for _, v in along_l),
        "L": f"{along_l[0][0]}…{along_l[-1][0]}" if along_l else "—",
        "rho-widest": ", ".join(f"{v:.3g}" for _, v in at_widest),
    }
    for end, (L, r) in (("first", at_wmin[0]), ("last", at_wmin[-1])):  # how often a network computes the target
        out[f"sol-{end}"] = f"{r['solutions'] / r['samples']:.1e} at L = {L}"
    out["half"] = f"{np.median([(r['hi'] - r['lo']) / 2 for r in rows if measured(r)]):.2g}"
    return out
