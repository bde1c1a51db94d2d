"""ρ(W, L) over a grid of the Boolean model: the rows, the experiment config and its presets.

`boolean_grid` estimates every (W, L) cell of a grid (`volratio.rho.montecarlo.estimate`), adds
the exact values where enumeration is small enough (`volratio.rho.enumeration`) and the theory's
closed-form lower bound (`volratio.rho.theory`); `BooleanRhoConfig` is the chapter's heatmap
experiment with its `quick` / `reference` / `full` presets and `run_boolean` runs it;
`rows_to_grid` lays grid rows out as an array for plotting.

Chapter: "The volume-ratio argument" (book/volume_ratio.md) and `volratio rho boolean`.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

from .. import __version__
from ..util.presets import Presets
from .boolean import BooleanTarget, get_boolean_target
from .enumeration import exact
from .intervals import networks_for_width, row
from .montecarlo import estimate
from .sampler import RhoError, SamplerConfig
from .theory import clean_volume_value


def boolean_grid(
    target: BooleanTarget,
    Ws,
    Ls,
    samples: int,
    cfg: SamplerConfig = SamplerConfig(),
    seed: int = 0,
    with_exact: bool = False,
    with_theory: bool = True,
    max_exact: int = 3**13,
    until_width: float | None = None,
    budget_s: float | None = None,
    width: float = 0.5,
    progress: bool = False,
) -> list[dict]:
    """One row per (W, L): Monte Carlo counts, ρ with interval, absolute volumes, and where
    available the exact values and the theory's closed-form lower bound (`volratio.rho.theory`).
    `until_width`, `budget_s` (per cell): see `estimate`; every row also reports its run
    (`elapsed_s`, `stopped`, `rel_width`) and the networks it would need for a relative interval
    width `width` (`until_width` when given) at its current estimates (`networks_for_width`)."""
    rows = []
    width = until_width or width
    for L in Ls:
        for W in Ws:
            c, info = estimate(target, W, L, samples, cfg, seed, until_width, budget_s, progress)
            r = row(target, W, L, c, cfg)
            r.update(
                engine=cfg.engine,
                elapsed_s=info["elapsed_s"],
                stopped=info["stopped"],
                rel_width=None if math.isinf(info["rel_width"]) else info["rel_width"],
                width_target=width,
                networks_for_width=networks_for_width(c, width, cfg.confidence),
            )
            if with_exact:
                try:
                    e = exact(target, W, L, cfg, max_configs=max_exact)
                    r["exact"] = {"rho": e.rho, "p_solution": e.p_solution, "p_compositional": e.p_compositional}
                except RhoError:
                    r["exact"] = None  # too large to enumerate
            if with_theory:
                r["theory"] = clean_volume_value(target, W, L, cfg)
            rows.append(r)
    return rows


@dataclass(frozen=True)
class BooleanRhoConfig(Presets):
    """One ρ(W, L) grid of the Boolean model — the experiment of the chapter's heatmaps."""

    target: str = "chain:2"  # a Boolean target spec (volratio.rho.boolean)
    Ws: tuple = (1, 2, 3, 4, 6)  # widths
    Ls: tuple = (1, 2, 3, 4)  # depths (threshold layers, output included)
    samples: int = 100_000  # networks per (W, L)
    sampler: SamplerConfig = SamplerConfig()  # weights, masks, density, intervals
    seed: int = 0
    exact: bool = False  # also enumerate exactly where ≤ 3^13 configurations
    scale: str = "quick"
    until_width: float | None = None  # stop a cell once ρ's relative interval width is ≤ this (bits engine)
    budget_s: float | None = None  # stop a cell after this many seconds (bits engine)

    # the book's scale: up to 2·10⁶ networks per cell, each cell stopping once ρ's relative interval
    # width is ≤ 0.2, on 2 worker processes
    QUICK = {"samples": 2_000_000, "until_width": 0.2, "sampler": SamplerConfig(workers=2)}
    # up to 10⁸ networks per cell, each stopping once ρ's relative interval width is ≤ 0.1
    # (deterministic: the stopping rule is checked in chunk order), on 2 worker processes; pass
    # `budget_s` to cap each cell's time instead (then the counts depend on the machine). About an
    # hour for a 30-cell grid on 2 cores (bits engine, ~3·10⁶ networks/s)
    REFERENCE = {"samples": 100_000_000, "until_width": 0.1, "sampler": SamplerConfig(workers=2)}
    # 10⁹ networks per cell, stopping at relative width 0.05 (hours on 2 cores)
    FULL = {"samples": 1_000_000_000, "until_width": 0.05, "sampler": SamplerConfig(workers=2)}


def run_boolean(cfg: BooleanRhoConfig) -> dict:
    """Run a grid; the result carries its config, the target's L* and W_min, and the rows."""
    t = get_boolean_target(cfg.target)
    rows = boolean_grid(
        t,
        cfg.Ws,
        cfg.Ls,
        cfg.samples,
        cfg.sampler,
        cfg.seed,
        with_exact=cfg.exact,
        until_width=cfg.until_width,
        budget_s=cfg.budget_s,
    )
    return {
        "target": t.spec,
        "L_star": t.depth,
        "W_min": t.width,
        "rows": rows,
        "config": asdict(cfg),
        "version": __version__,
    }


def rows_to_grid(rows: list[dict], key: str, Ws, Ls) -> np.ndarray:
    """Values of `key` from grid rows as an array (len(Ls), len(Ws)); None → NaN."""
    out = np.full((len(Ls), len(Ws)), np.nan)
    for r in rows:
        v = r.get(key)
        if v is not None and r["W"] in Ws and r["L"] in Ls:
            out[list(Ls).index(r["L"]), list(Ws).index(r["W"])] = v
    return out
