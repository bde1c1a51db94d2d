"""Experiment `frames`: low-coherence frames against the Welch bound (`volratio.welch`).

For every (m, n) of a grid (from n + 1 vectors to past Gerzon's limit, plus ETF sizes), build a
low-coherence frame (`volratio.welch.low_coherence_frame`) and compare its max squared inner
product with the Welch bound and the best bound known here. `Config` is
`volratio.welch.sweep.FrameSweepConfig`, its three presets included.

Chapter: "Feature interference and the Welch bound" (book/welch.md).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import pandas as pd

from ..runs.plan import Chunk
from ..util.limits import at_least
from ..welch.sweep import FrameSweepConfig, frame_sweep
from ._base import PAPER, ExperimentError, Result, Trained, unscored


@dataclass
class Config(FrameSweepConfig):  # its presets: FrameSweepConfig's (the quick scale: the defaults)
    scale: str = "quick"  # the preset this config came from

    # allowed values, checked when a config is parsed (`volratio.util.limits`)
    LIMITS = {"dims": at_least(1), "extra": at_least(0), "seed": at_least(0)}

    def check(self) -> None:
        """`also` holds (m, n) pairs of positive integers (`check_limits` runs this)."""
        for mn in self.also:
            if not (isinstance(mn, (tuple, list)) and len(mn) == 2 and all(type(v) is int and v >= 1 for v in mn)):
                raise ExperimentError(f"also = {self.also!r}: give (m, n) pairs of positive integers, e.g. [[10, 5]]")


def train(cfg: Config | None = None) -> Trained:
    """The frames, one row per (m, n) (`volratio.welch.sweep.frame_sweep`)."""
    cfg = cfg or Config.quick()
    t0 = time.perf_counter()
    table = pd.DataFrame(frame_sweep(cfg))
    seeds = sorted({int(s) for s in table["seed"]}) if len(table) else []  # frame (m, n): seed + m + 100·n
    return Trained("frames", cfg, table, seeds, time.perf_counter() - t0)


score = unscored  # a frame has no EMC2 score: only the default reading


def run(cfg: Config | None = None) -> Result:
    """`Result.table`: one row per (m, n) (`volratio.welch.sweep.frame_sweep`)."""
    return score(train(cfg), PAPER)


# ---------------------------------------------------------------------------------------------
# The reference plan's chunks (volratio.runs.plan writes them to examples/sweeps/reference.toml)


def reference_chunks() -> dict:
    """The chunks of the reference plan that this experiment owns (`volratio.runs.plan.Chunk`: a
    sweep spec and why it runs what it runs)."""
    return {
        "welch_frames": Chunk(
            run="frames",
            why=(
                'The Welch bound (claim "welch-r-le-d"), three chunks, ~12 CPU-minutes together (pilot, one '
                "thread: frames 26 CPU-s, toy model 91 CPU-s per seed, interference 20 CPU-s per seed). "
                "Low-coherence frames against the bound: the frames experiment's reference preset — n = 2..5 with"
                " m from n + 1 to past Gerzon's limit, plus the ETF sizes (10, 5), (16, 6), (14, 7); full frame "
                "search."
            ),
            seeds=[0],
            threads=1,
            config={"scale": "reference"},
        ),
    }
