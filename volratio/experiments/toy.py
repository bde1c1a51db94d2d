"""Run function `toy`: gradient descent on a random least-squares problem, in numpy (milliseconds).

It checks that a cluster is set up right (`volratio sweep` with `run = "toy"`) without torch on the
workers. Used by `examples/sweeps/*.toml`, the tests and the chapter "Rerunning at scale on a
cluster".
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..util.limits import above, at_least
from ..util.presets import configure
from ._base import ExperimentError


@dataclass(frozen=True)
class Config:
    seed: int = 0  # draws the problem
    n: int = 32  # unknowns (the problem has 2n equations)
    steps: int = 200  # gradient steps
    lr: float = 0.1  # step size

    # allowed values, checked when a config is parsed (`volratio.util.limits`)
    LIMITS = {"seed": at_least(0), "n": at_least(1), "steps": at_least(0), "lr": above(0)}

    def __post_init__(self):
        if self.n < 1 or self.steps < 0 or not self.lr > 0:
            raise ExperimentError(
                f"toy: need n ≥ 1, steps ≥ 0, lr > 0 (got n={self.n}, steps={self.steps}, lr={self.lr})"
            )


def parse_toy(config: dict) -> Config:
    return configure(Config(), config, "toy")


def toy(config: dict) -> dict:
    """Metrics: `loss` (final), `loss0` (initial); artifact `x` (the solution)."""
    cfg = parse_toy(config)
    rng = np.random.default_rng(cfg.seed)
    n = cfg.n
    a = rng.standard_normal((2 * n, n)) / np.sqrt(2 * n)  # (2n, n)
    b = rng.standard_normal(2 * n)  # (2n,)
    x = np.zeros(n)
    loss0 = float(np.mean((a @ x - b) ** 2))
    for _ in range(cfg.steps):
        x -= cfg.lr * 2 * a.T @ (a @ x - b) / len(b)
    return {"loss": float(np.mean((a @ x - b) ** 2)), "loss0": loss0, "x": x}
