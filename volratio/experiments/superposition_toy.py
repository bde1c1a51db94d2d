"""Experiment `superposition`: the toy model of superposition against the Welch bound (`volratio.welch`).

The sweep over feature sparsity is trained as one population (`volratio.welch.superposition.train_toy`);
per instance, the interference of its represented features against the Welch bound at (r, m) and
its final loss. `Config` is `volratio.welch.superposition.ToyConfig` with the three presets.

Chapter: "Feature interference and the Welch bound" (book/welch.md).
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass

import pandas as pd

from ..welch.superposition import ToyConfig, train_toy
from ._base import Result


@dataclass
class Config(ToyConfig):  # its presets: Presets, through ToyConfig
    steps: int = 3000  # Adam steps (the reference and full presets: Elhage et al.'s 10,000)
    batch: int = 512  # samples per step and instance (the reference and full presets: Elhage et al.'s 1024)
    device: str = "cpu"  # CPU: the numbers repeat bit for bit
    scale: str = "quick"  # the preset this config came from

    QUICK = {}  # the quick scale is the defaults above

    # reference: Elhage et al.'s training length (10,000 steps, batch 1024), 3 replicas (budget ~10
    # CPU-minutes, an estimate)
    REFERENCE = {"steps": 10_000, "batch": 1024, "replicas": 3}
    # full: Elhage et al.'s settings, 13 sparsity levels, 3 replicas each (`ToyConfig.full()`)
    FULL = staticmethod(
        lambda: {k: v for k, v in vars(ToyConfig.full()).items() if k in ("sparsities", "replicas", "steps", "batch")}
    )


def run(cfg: Config | None = None, *, threshold: float = 0.5) -> Result:
    """`Result.table`: one row per instance (sparsity × replica): interference, bound, final loss;
    extras: `toy` (the `ToyResult`)."""
    cfg = cfg or Config.quick()
    t0 = time.perf_counter()
    toy = train_toy(cfg)
    table = pd.DataFrame(toy.interference(threshold=threshold))
    table["final_loss"] = toy.final_loss
    return Result(
        "superposition", asdict(cfg), table, [cfg.seed], time.perf_counter() - t0, judge=None, extras={"toy": toy}
    )
