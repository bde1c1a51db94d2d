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
