"""The frame sweep: a low-coherence frame for every (m, n) of a grid, the chapter's frame experiment.

`FrameSweepConfig` is the grid (dimensions n, m from n + 1 to past Gerzon's limit, extra ETF sizes)
with its `quick` / `reference` / `full` presets; `frame_sweep` builds every frame (`volratio.welch.frames`) and
returns one row per (m, n) against the bounds; `REAL_ETF_SIZES` marks the sizes where a real ETF
is known to exist. The experiment `frames` (`volratio.experiments.frames`) runs it.

Chapter: "Feature interference and the Welch bound" (book/welch.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..util.presets import Presets
from .bounds import gerzon_limit
from .frames import FrameConfig, low_coherence_frame

# Real ETFs with m > n known to exist for n ≤ 7 (Fickus and Mixon's tables, 2015): the simplex
# (n+1, n), and (6,3), (10,5), (16,6), (14,7), (28,7). The frame experiment marks these sizes.
REAL_ETF_SIZES: frozenset[tuple[int, int]] = frozenset(
    {(n + 1, n) for n in range(1, 8)} | {(6, 3), (10, 5), (16, 6), (14, 7), (28, 7)}
)


@dataclass
class FrameSweepConfig(Presets):
    """The chapter's frame experiment: a low-coherence frame for every (m, n) on a grid."""

    dims: tuple[int, ...] = (2, 3, 4)  # the dimensions n of the grid
    extra: int = 2  # m runs from n+1 to Gerzon's limit n(n+1)/2 plus this many
    also: tuple[tuple[int, int], ...] = ((10, 5), (16, 6))  # further (m, n) to build (ETF sizes)
    seed: int = 0  # one seed per sweep; frame (m, n) uses seed + m + 100·n
    frame: FrameConfig = field(default_factory=lambda: FrameConfig(ap_iters=500, restarts=2, descent_steps=800))
    scale: str = "custom"  # preset name, printed by the chapter

    # the presets (also the experiment `frames`'s, `volratio.experiments.frames`); the quick scale is
    # the defaults. Functions, so that every preset gets a FrameConfig of its own.
    # reference: dims 2..5, Elhage-size ETFs, full frame search (budget ~5 CPU-minutes, an estimate)
    REFERENCE = staticmethod(
        lambda: {"dims": (2, 3, 4, 5), "also": ((10, 5), (16, 6), (14, 7)), "frame": FrameConfig()}
    )
    # full: n up to 6, the n = 7 ETF sizes, the frame search at its own defaults
    FULL = staticmethod(lambda: {"dims": (2, 3, 4, 5, 6), "also": ((14, 7), (28, 7)), "frame": FrameConfig()})

    def sizes(self) -> list[tuple[int, int]]:
        grid = [(m, n) for n in self.dims for m in range(n + 1, gerzon_limit(n) + self.extra + 1)]
        return grid + [mn for mn in self.also if mn not in grid]


def frame_sweep(config: FrameSweepConfig | None = None) -> list[dict]:
    """Build a frame for every size of the sweep; one row per (m, n) with the achieved max squared
    inner product, the Welch bound, the best lower bound known here, their ratios, and whether a
    real ETF of that size is known to exist."""
    cfg = config or FrameSweepConfig.quick()
    rows = []
    for m, n in cfg.sizes():
        r = low_coherence_frame(m, n, seed=cfg.seed + m + 100 * n, config=cfg.frame)
        rows.append(
            {**r.summary(), "best_ratio": r.max_sq_inner / r.best_bound, "etf_exists": (m, n) in REAL_ETF_SIZES}
        )
    return rows
