"""Counts of a ρ(W, L) cell and their binomial intervals: ρ = P(compositional | solution).

`Counts` holds a cell's networks, solutions and compositional solutions; the intervals are the
library's Wilson or Clopper–Pearson interval (`volratio.util.stats.binomial_interval`); `row` turns a
cell's counts into one result row (ρ and the absolute volumes P(solution), P(compositional), each
with its interval); `networks_for_width` says how many networks a cell needs for a given relative
interval width of ρ.

Chapter: "The volume-ratio argument" (book/volume_ratio.md).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import scipy

from ..util.stats import binomial_interval
from .boolean import BooleanTarget
from .sampler import SamplerConfig


@dataclass
class Counts:
    samples: int = 0
    solutions: int = 0
    compositional: int = 0

    def __iadd__(self, other: "Counts") -> "Counts":
        self.samples += other.samples
        self.solutions += other.solutions
        self.compositional += other.compositional
        return self


def _rel_width(c: Counts, cfg: SamplerConfig) -> float:
    """(hi − lo) / ρ̂ of ρ's interval; inf while no compositional solution is seen."""
    if not c.compositional:
        return math.inf
    lo, hi = binomial_interval(c.compositional, c.solutions, cfg.confidence, cfg.interval)
    return (hi - lo) / (c.compositional / c.solutions)


def networks_for_width(c: Counts, width: float, confidence: float = 0.95) -> float | None:
    """Networks a cell needs for a relative width `width` of ρ's Wilson interval, at the cell's
    current estimates of ρ and P(solution); None while no compositional solution is seen."""
    if not c.compositional:
        return None
    rho, p_sol = c.compositional / c.solutions, c.solutions / c.samples
    z = float(scipy.stats.norm.ppf(0.5 + confidence / 2))

    def rel(s):  # Wilson width / rho at s solutions
        return 2 * z * math.sqrt(rho * (1 - rho) / s + z * z / (4 * s * s)) / (1 + z * z / s) / rho

    lo, hi = 1.0, 2.0
    while rel(hi) > width:
        lo, hi = hi, hi * 2
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if rel(mid) > width else (lo, mid)
    return hi / p_sol


def row(target: BooleanTarget, W: int, L: int, c: Counts, cfg: SamplerConfig) -> dict:
    """One result row (the JSON schema of `volratio rho boolean`)."""
    rho = c.compositional / c.solutions if c.solutions else None
    lo, hi = binomial_interval(c.compositional, c.solutions, cfg.confidence, cfg.interval)
    s_lo, s_hi = binomial_interval(c.solutions, c.samples, cfg.confidence, cfg.interval)
    k_lo, k_hi = binomial_interval(c.compositional, c.samples, cfg.confidence, cfg.interval)
    return {
        "W": W,
        "L": L,
        "samples": c.samples,
        "solutions": c.solutions,
        "compositional": c.compositional,
        "rho": rho,
        "lo": lo,
        "hi": hi,
        "p_solution": c.solutions / c.samples if c.samples else None,
        "p_solution_ci": [s_lo, s_hi],
        "p_compositional": c.compositional / c.samples if c.samples else None,
        "p_compositional_ci": [k_lo, k_hi],
        "confidence": cfg.confidence,
        "interval": cfg.interval,
    }
