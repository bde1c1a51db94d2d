"""Experiment `frames`: low-coherence frames against the Welch bound (DESIGN §3.6).

For every (m, n) of a grid (from n + 1 vectors to past Gerzon's limit, plus ETF sizes), build a
low-coherence frame (`volratio.welch.low_coherence_frame`) and compare its max squared inner
product with the Welch bound and the best bound known here. `Config` is
`volratio.welch.sweep.FrameSweepConfig` with the three presets.

Chapter: "Feature interference and the Welch bound" (book/welch.md).
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass

from ..welch.frames import FrameConfig
from ..welch.sweep import FrameSweepConfig, frame_sweep
from ._base import Result


@dataclass
class Config(FrameSweepConfig):
    scale: str = "quick"  # the preset this config came from

    @classmethod
    def reference(cls, **kw) -> "Config":
        """Reference scale: dims 2..5, Elhage-size ETFs, full frame search (budget ~5 CPU-minutes, an estimate)."""
        return cls(
            **{
                "dims": (2, 3, 4, 5),
                "also": ((10, 5), (16, 6), (14, 7)),
                "frame": FrameConfig(),
                "scale": "reference",
                **kw,
            }
        )


def run(cfg: Config | None = None) -> Result:
    """`Result.table`: one row per (m, n) (`volratio.welch.sweep.frame_sweep`)."""
    import pandas as pd

    cfg = cfg or Config.quick()
    t0 = time.perf_counter()
    table = pd.DataFrame(frame_sweep(cfg))
    return Result("frames", asdict(cfg), table, [cfg.seed], time.perf_counter() - t0)
