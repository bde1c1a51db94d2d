"""Experiment `volume_ratio`: ρ(W, L) on Boolean targets and, optionally, the basin model (DESIGN §3.5).

A thin wrapper of `volratio.rho`'s public functions, unchanged: `run_boolean` for every Boolean
target of the config (one (W, L) grid each, with intervals) and `basin_grid` for the image setting.
`Result.table`: one row per model × target × (W, L) cell, the rows of `volratio.rho` as they are.

Chapter: "The volume-ratio argument" (book/volume_ratio.md).
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field, replace

from ..rho.basin import BasinConfig, basin_grid
from ..rho.grid import BooleanRhoConfig, run_boolean
from ..rho.sampler import SamplerConfig
from ._base import ExperimentError, Presets, Result


@dataclass(frozen=True)
class Config(Presets):
    targets: tuple = ("chain:2", "tree:2:2")  # Boolean targets (volratio.rho.boolean specs)
    samples: tuple = (300_000, 600_000)  # networks per (W, L) cell, one entry per target
    Ws: tuple = (1, 2, 3, 4, 6)  # widths
    Ls: tuple = (1, 2, 3, 4)  # depths (threshold layers, output included)
    sampler: SamplerConfig = field(default_factory=lambda: SamplerConfig(device="cpu"))  # weights, masks, intervals
    exact: bool = False  # also enumerate exactly where small enough
    until_width: float | None = None  # stop a cell once ρ's relative interval width is ≤ this (None: every sample)
    seed: int = 0  # seeds every cell (volratio.rho.sampler.cell_seed)
    basin_target: str | None = "planted:0:depth=2,width=3"  # planted image target of the basin model (None: skip)
    basin_Ws: tuple = (2, 4, 8)  # basin model widths
    basin_Ls: tuple = (1, 2, 3)  # basin model depths
    basin: BasinConfig = field(default_factory=lambda: BasinConfig.quick(device="cpu", use_emc2=True))  # basin model
    scale: str = "quick"  # the preset this config came from

    # reference (≥ 10⁸ networks per target): the rule of `BooleanRhoConfig.reference()` —
    # up to 10⁸ networks per cell, a cell stopping once ρ's relative interval width is ≤ 0.1
    # (checked in chunk order: deterministic); basin K = 64. Boolean part measured in
    # results/reference/rho/manifest.json.
    REFERENCE = staticmethod(
        lambda: {
            "samples": (100_000_000, 100_000_000),
            "until_width": 0.1,
            "basin": BasinConfig.quick(device="cpu", use_emc2=True, population=64),
        }
    )
    # 10⁸ networks per cell (a GPU), basin K = 256 at 64×64
    FULL = staticmethod(lambda: {"samples": (100_000_000, 100_000_000), "basin": BasinConfig.full(use_emc2=True)})


# A sweep config (`scale` + overrides) stored before the fast training path means the eager one by
# leaving it out; `volratio.experiments` applies this to every whole-experiment run config
LEGACY = {"basin.train_path": "eager"}


def boolean_configs(cfg: Config) -> list[BooleanRhoConfig]:
    """One `BooleanRhoConfig` per target."""
    if len(cfg.samples) != len(cfg.targets):
        raise ExperimentError(
            f"samples has {len(cfg.samples)} entries for {len(cfg.targets)} targets; give one per target"
        )
    return [
        replace(
            BooleanRhoConfig(),
            target=t,
            Ws=tuple(cfg.Ws),
            Ls=tuple(cfg.Ls),
            samples=int(n),
            sampler=cfg.sampler,
            seed=cfg.seed,
            exact=cfg.exact,
            until_width=cfg.until_width,
            scale=cfg.scale,
        )
        for t, n in zip(cfg.targets, cfg.samples)
    ]


def run(cfg: Config | None = None) -> Result:
    """`Result.table` rows: `model` ("boolean" | "basin"), `target` and the rho rows; extras:
    `boolean` (target → `run_boolean` output), `basin` (rows of `basin_grid`, or [])."""
    import pandas as pd

    cfg = cfg or Config.quick()
    t0 = time.perf_counter()
    boolean = {c.target: run_boolean(c) for c in boolean_configs(cfg)}
    basin = basin_grid(cfg.basin_target, cfg.basin_Ws, cfg.basin_Ls, cfg.basin) if cfg.basin_target else []
    rows = [{"model": "boolean", "target": t, **r} for t, res in boolean.items() for r in res["rows"]]
    rows += [{"model": "basin", "target": cfg.basin_target, **r} for r in basin]
    return Result(
        "volume_ratio",
        asdict(cfg),
        pd.DataFrame(rows),
        [cfg.seed, cfg.basin.seed],
        time.perf_counter() - t0,
        extras={"boolean": boolean, "basin": basin},
    )
