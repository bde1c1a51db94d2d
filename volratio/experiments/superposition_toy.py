"""Experiment `superposition`: the toy model of superposition against the Welch bound (`volratio.welch`).

The sweep over feature sparsity is trained as one population (`volratio.welch.superposition.train_toy`);
per instance, the interference of its represented features against the Welch bound at (r, m) and
its final loss. `Config` is `volratio.welch.superposition.ToyConfig`, its presets included, with the quick
scale as its defaults and the CPU as its device.

Chapter: "Feature interference and the Welch bound" (book/welch.md).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import pandas as pd

from ..runs.plan import Chunk
from ..welch.superposition import ToyConfig, train_toy
from ._base import PAPER, Result, Trained, unscored


@dataclass
class Config(ToyConfig):  # its presets: ToyConfig's QUICK / REFERENCE / FULL
    steps: int = 3000  # Adam steps (ToyConfig.QUICK's; the reference and full presets: Elhage et al.'s 10,000)
    batch: int = 512  # samples per step and instance (ToyConfig.QUICK's; reference and full: Elhage et al.'s 1024)
    device: str = "cpu"  # CPU: the numbers repeat bit for bit
    scale: str = "quick"  # the preset this config came from


def train(cfg: Config | None = None, *, threshold: float = 0.5) -> Trained:
    """The toy model trained, one row per instance (sparsity × replica): interference, bound, final
    loss; extras: `toy` (the `ToyResult`)."""
    cfg = cfg or Config.quick()
    t0 = time.perf_counter()
    toy = train_toy(cfg)
    table = pd.DataFrame(toy.interference(threshold=threshold))
    table["final_loss"] = toy.final_loss
    return Trained("superposition", cfg, table, [cfg.seed], time.perf_counter() - t0, extras={"toy": toy})


score = unscored  # the toy model has no EMC2 score: only the default reading


def run(cfg: Config | None = None, *, threshold: float = 0.5) -> Result:
    """`Result.table`: one row per instance (sparsity × replica): interference, bound, final loss;
    extras: `toy` (the `ToyResult`)."""
    return score(train(cfg, threshold=threshold), PAPER)


# ---------------------------------------------------------------------------------------------
# The reference plan's chunks (volratio.runs.plan writes them to examples/sweeps/reference.toml)


def reference_chunks() -> dict:
    """The chunks of the reference plan that this experiment owns (`volratio.runs.plan.Chunk`: a
    sweep spec and why it runs what it runs)."""
    return {
        "welch_toy": Chunk(
            run="superposition",
            why=(
                "The toy model of superposition (n = 20 features, m = 5): the superposition experiment's "
                "reference preset — Elhage et al.'s 10,000 Adam steps at batch 1024, 7 sparsity levels × 3 "
                "replicas — 5 seeds."
            ),
            seeds=[0, 1, 2, 3, 4],
            threads=1,
            config={"scale": "reference", "device": "cpu"},
        ),
    }
