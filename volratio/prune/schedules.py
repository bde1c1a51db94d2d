"""Sparsity schedules: plain functions `(ratio, steps) -> list[float]`, the sparsity after each step.

The last entry is always exactly `ratio`. `steps_for_rate` gives the number of geometric steps that
remove at most a fraction `rate` of the remaining weights per step (Lottery Ticket IMP: 20 %).

Chapter: "Connectivity: which connections remain".
"""

from __future__ import annotations

import math

from .masks import check_sparsity


def one_shot(ratio: float, steps: int = 1) -> list[float]:
    """Everything at once."""
    return [check_sparsity(ratio)]


def linear(ratio: float, steps: int) -> list[float]:
    """Equal increments of sparsity."""
    ratio = check_sparsity(ratio)
    n = max(1, int(steps))
    return [ratio * (i + 1) / n for i in range(n - 1)] + [ratio]


def geometric(ratio: float, steps: int) -> list[float]:
    """The same fraction of the *remaining* weights removed at each step (IMP's schedule)."""
    ratio = check_sparsity(ratio)
    n = max(1, int(steps))
    return [1.0 - (1.0 - ratio) ** ((i + 1) / n) for i in range(n - 1)] + [ratio]


def steps_for_rate(ratio: float, rate: float = 0.2) -> int:
    """Fewest geometric steps that remove at most `rate` of the remaining weights per step."""
    ratio = check_sparsity(ratio)
    check_sparsity(rate, "rate")
    if ratio == 0.0 or rate == 0.0:
        return 1
    return max(1, math.ceil(math.log(1.0 - ratio) / math.log(1.0 - rate) - 1e-9))


SCHEDULES = {"one_shot": one_shot, "linear": linear, "geometric": geometric}
