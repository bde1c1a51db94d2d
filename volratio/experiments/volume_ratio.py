"""Experiment `volume_ratio`: ρ(W, L) on Boolean targets and, optionally, the basin model (`volratio.rho`).

A thin wrapper of `volratio.rho`'s public functions, unchanged: `run_boolean` for every Boolean
target of the config (one (W, L) grid each, with intervals) and `basin_grid` for the image setting.
`Result.table`: one row per model × target × (W, L) cell, the rows of `volratio.rho` as they are.

The stored reference cells are read back as the chapter draws them: `stored_grids` (Boolean ρ) and
`stored_basin` (the basin model).

Chapter: "The volume-ratio argument" (book/volume_ratio.md).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace

import pandas as pd

from ..data.targets import get_target
from ..rho.basin import BASIN_JUDGE, BasinConfig, basin_grid
from ..rho.boolean import get_boolean_target
from ..rho.grid import BooleanRhoConfig, run_boolean
from ..rho.sampler import SamplerConfig
from ..runs import stored
from ..runs.plan import Chunk
from ..util.limits import above, at_least, parsed_by
from ..util.presets import Presets
from ._base import PAPER, ExperimentError, Result, Trained, unscored


@dataclass(frozen=True)
class Config(Presets):
    targets: tuple = ("chain:2", "tree:2:2")  # Boolean targets (volratio.rho.boolean specs)
    samples: tuple = (300_000, 600_000)  # networks per (W, L) cell, one entry per target
    Ws: tuple = (1, 2, 3, 4, 6)  # widths
    Ls: tuple = (1, 2, 3, 4)  # depths (threshold layers, output included)
    cells: tuple | None = None  # the (target, W, L) cells of targets × Ws × Ls that run (None: every one);
    # each listed cell runs on its own (`boolean_configs`), cells outside targets × Ws × Ls are left out
    sampler: SamplerConfig = field(default_factory=lambda: SamplerConfig(device="cpu"))  # weights, masks, intervals
    exact: bool = False  # also enumerate exactly where small enough
    until_width: float | None = None  # stop a cell once ρ's relative interval width is ≤ this (None: every sample)
    seed: int = 0  # seeds every cell (volratio.rho.sampler.cell_seed)
    basin_target: str | None = "planted:0:depth=2,width=3"  # planted image target of the basin model (None: skip)
    basin_Ws: tuple = (2, 4, 8)  # basin model widths
    basin_Ls: tuple = (1, 2, 3)  # basin model depths
    basin: BasinConfig = field(default_factory=lambda: BasinConfig.quick(device="cpu", use_emc2=True))  # basin model
    scale: str = "quick"  # the preset this config came from

    # allowed values, checked when a config is parsed (`volratio.util.limits`)
    LIMITS = {"samples": at_least(1), "Ws": at_least(1), "Ls": at_least(1), "until_width": above(0),
              "seed": at_least(0), "basin_Ws": at_least(1), "basin_Ls": at_least(1),
              "targets": parsed_by(get_boolean_target), "basin_target": parsed_by(get_target)}  # fmt: skip

    def check(self) -> None:
        """`cells` holds (target, W, L) triples (`check_limits` runs this)."""
        for c in self.cells or ():
            if not (isinstance(c, (tuple, list)) and len(c) == 3 and isinstance(c[0], str)
                    and all(type(v) is int and v >= 1 for v in c[1:])):  # fmt: skip
                raise ExperimentError(f"cells: {c!r} is not a (target, W, L) triple with W, L ≥ 1")

    # reference: what chunks rho, rho_wmin, rho_deep, rho_deep_wmin and rho_basin of
    # examples/sweeps/reference.toml run (its `reference_chunks()` builds them from this preset). The rule of
    # `BooleanRhoConfig.reference()` — up to 10⁸ networks per cell, a cell stopping once ρ's relative
    # interval width is ≤ 0.1 (checked in chunk order: deterministic) — on `REFERENCE_CELLS`; the basin
    # model with K = 256 on the eager training path. Measured in results/reference/rho*/manifest.json.
    REFERENCE = staticmethod(
        lambda: {
            "targets": tuple(t for t, *_ in REFERENCE_GRIDS),
            "samples": (100_000_000,) * len(REFERENCE_GRIDS),
            "Ls": tuple(range(1, 10)),
            "cells": REFERENCE_CELLS,
            "until_width": 0.1,
            "basin": BasinConfig.quick(device="cpu", use_emc2=True, population=256, train_path="eager"),
        }
    )
    # 10⁸ networks per cell (a GPU), basin K = 256 at 64×64
    FULL = staticmethod(lambda: {"samples": (100_000_000, 100_000_000), "basin": BasinConfig.full(use_emc2=True)})


# The reference cells: per Boolean target, every width × the depths up to past its L*, and beyond them
# the depth axis at W = W_min = 2 (without it the depth fit at W_min has 3 cells, 1 degree of freedom)
REFERENCE_WS = (1, 2, 3, 4, 6)
REFERENCE_GRIDS = (  # (target, depths at every width, further depths at W_min)
    ("chain:2", range(1, 5), range(5, 9)),
    ("tree:2:2", range(1, 5), range(5, 9)),
    ("dag:3:depth=3,arity=2,inputs=3,primitives=3", range(1, 6), range(6, 10)),
)
REFERENCE_CELLS = tuple(
    cell
    for t, Ls, deeper in REFERENCE_GRIDS
    for cell in [(t, W, L) for L in Ls for W in REFERENCE_WS] + [(t, 2, L) for L in deeper]
)


def cells_of(cfg: Config) -> list[tuple]:
    """`(target, samples, W, L)` of every Boolean cell the config runs, in run order."""
    if len(cfg.samples) != len(cfg.targets):
        raise ExperimentError(
            f"samples has {len(cfg.samples)} entries for {len(cfg.targets)} targets; give one per target"
        )
    keep = None if cfg.cells is None else {tuple(c) for c in cfg.cells}
    return [(t, int(n), W, L) for t, n in zip(cfg.targets, cfg.samples) for L in cfg.Ls for W in cfg.Ws
            if keep is None or (t, W, L) in keep]  # fmt: skip


def boolean_configs(cfg: Config) -> list[BooleanRhoConfig]:
    """One `BooleanRhoConfig` per target (its Ws × Ls grid), or with `cells` one per cell."""
    cells = cells_of(cfg)
    if cfg.cells is None:
        grids = [(t, n, tuple(cfg.Ws), tuple(cfg.Ls)) for t, n in zip(cfg.targets, cfg.samples)]
    else:
        grids = [(t, n, (W,), (L,)) for t, n, W, L in cells]
    return [
        replace(
            BooleanRhoConfig(),
            target=t,
            Ws=Ws,
            Ls=Ls,
            samples=int(n),
            sampler=cfg.sampler,
            seed=cfg.seed,
            exact=cfg.exact,
            until_width=cfg.until_width,
            scale=cfg.scale,
        )
        for t, n, Ws, Ls in grids
    ]


def train(cfg: Config | None = None) -> Trained:
    """ρ of the Boolean model and of the basin model, whose judge is its config's (`BASIN_JUDGE`,
    fixed in the model: a reading does not change it). Rows: `model` ("boolean" | "basin"),
    `target` and the rho rows; extras: `boolean` (target → `run_boolean` output; with `cells`, the
    rows of all its cells and the first cell's config), `basin` (rows of `basin_grid`, or [])."""
    cfg = cfg or Config.quick()
    t0 = time.perf_counter()
    boolean = {}
    for c in boolean_configs(cfg):
        out = run_boolean(c)
        if c.target in boolean:
            boolean[c.target]["rows"] += out["rows"]
        else:
            boolean[c.target] = out
    basin = basin_grid(cfg.basin_target, cfg.basin_Ws, cfg.basin_Ls, cfg.basin) if cfg.basin_target else []
    rows = [{"model": "boolean", "target": t, **r} for t, res in boolean.items() for r in res["rows"]]
    rows += [{"model": "basin", "target": cfg.basin_target, **r} for r in basin]
    return Trained(
        "volume_ratio",
        cfg,
        pd.DataFrame(rows),
        [cfg.seed, cfg.basin.seed],
        time.perf_counter() - t0,
        judge=BASIN_JUDGE if basin and cfg.basin.use_emc2 else None,  # the Boolean model has no judge
        extras={"boolean": boolean, "basin": basin},
    )


score = unscored  # ρ is counted, and the basin model fixes its judge: only the default reading


def run(cfg: Config | None = None) -> Result:
    """`Result.table` rows: `model` ("boolean" | "basin"), `target` and the rho rows; extras:
    `boolean`, `basin` (see `train`)."""
    return score(train(cfg), PAPER)


# ---------------------------------------------------------------------------------------------
# The reference scale (stored results)

# Boolean ρ: chain:2 and tree:2:2, their depth axis at W_min, the depth-3 target and its depth axis
RHO_CHUNKS = ("rho", "rho_wmin", "rho_deep", "rho_deep_wmin")
BASIN_CHUNKS = ("rho_basin",)  # the basin model's cells


def stored_grids(root=None, names=RHO_CHUNKS) -> dict:
    """The stored ρ cells of the chunks `names` (those present under `root`) as
    `volratio.rho.run_boolean` outputs, one per target: `{spec: {"target", "L_star", "W_min",
    "rows"}}` with the rows (as `volratio.rho.boolean_grid` returns them: None where there is no
    estimate) in (L, W) order — what book/volume_ratio.md draws."""
    by_target: dict[str, list] = {}
    for r in stored.runs_of(names, root, ExperimentError):
        for row in r["metrics"].get("rows", []):
            if row.get("model") == "boolean":
                by_target.setdefault(row["target"], []).append(
                    {k: v for k, v in row.items() if k not in ("model", "target")}
                )
    out = {}
    for spec, rows in by_target.items():
        bt = get_boolean_target(spec)
        out[spec] = {
            "target": spec,
            "L_star": bt.depth,
            "W_min": bt.width,
            "rows": sorted(rows, key=lambda x: (x["L"], x["W"])),
        }
    return out


def stored_basin(root=None, names=BASIN_CHUNKS) -> dict:
    """The stored basin-model cells of the chunks `names` (those present under `root`), one list of
    `volratio.rho.basin_cell` rows per planted target, in (L, W) order: `{spec: rows}`."""
    out: dict[str, list] = {}
    for r in stored.runs_of(names, root, ExperimentError):
        for row in r["metrics"].get("rows", []):
            if row.get("model") == "basin":
                out.setdefault(row["target"], []).append({k: v for k, v in row.items() if k not in ("model", "target")})
    return {spec: sorted(rows, key=lambda x: (x["L"], x["W"])) for spec, rows in out.items()}


# ---------------------------------------------------------------------------------------------
# The reference plan's chunks (volratio.runs.plan writes them to examples/sweeps/reference.toml)


W_MIN = 2  # the Boolean targets' minimal width: the depth axis beyond each target's depths runs there


def reference_chunks() -> dict:
    """The chunks of the reference plan that this experiment owns (`volratio.runs.plan.Chunk`: a
    sweep spec and why it runs what it runs): the reference preset's cells (`REFERENCE_GRIDS`), one
    run per target × cell, the targets of the same depths in one chunk (their depths at every width,
    and their further depths at W_min in another); and the basin model's cells."""
    ref = Config.reference()
    by_depths: dict = {}  # (depths at every width, further depths at W_min) -> targets
    for t, Ls, deeper in REFERENCE_GRIDS:
        by_depths.setdefault((tuple(Ls), tuple(deeper)), []).append(t)
    ((Ls, deeper), targets), ((deep_Ls, deep_deeper), deep) = by_depths.items()

    def rho(why: str, targets: list, Ls, Ws, notes: "dict | None" = None) -> Chunk:
        """One run per target × cell (one target per run, so one entry of `samples`), the Boolean model only."""
        return Chunk(
            run="volume_ratio",
            why=why,
            seeds=[ref.seed],
            config={"scale": ref.scale, "samples": list(ref.samples[:1]), "basin_Ws": []},
            grid={"targets": [[t] for t in targets], "Ls": [[L] for L in Ls], "Ws": [[W] for W in Ws]},
            notes=notes or {},
        )

    return {
        "rho": rho(
            (
                'ρ(W, L) of the Boolean model (claim "rho-concentrated"): the volume_ratio experiment\'s reference'
                " preset — up to 10⁸ networks per cell, a cell stopping once ρ's relative interval width is ≤ 0.1"
                " — one run per target × cell, so that every run is small enough to re-run in a check. Cells "
                "without compositional solutions run all 10⁸, so each target gets ≥ 10⁸ networks (the store says "
                "how many)."
            ),
            targets,
            Ls,
            REFERENCE_WS,
            notes={
                "samples": "one entry per target: each run has one target",
                "basin_Ws": "the basin model is its own chunk",
            },
        ),
        "rho_wmin": rho(
            (
                'The depth axis at W = W_min = 2 (claim "ρ decays exponentially in depth"): the rho chunk\'s L ≤ 4'
                " leaves the depth fit 3 cells (1 degree of freedom) — its interval ±0.3 per layer however many "
                "networks each cell sees. L = 5..8 at W = 2 makes it 7 cells. Same rule (≤ 10⁸, width 0.1)."
            ),
            targets,
            deeper,
            [W_MIN],
        ),
        "rho_deep": rho(
            (
                "ρ(W, L) of the depth-3 target of the chapter (L* = 3, so depths up to 5 bracket it), same rule. "
                "Its compositional solutions are rarer: most cells run all 10⁸ networks (pilot: 0.2–0.9 CPU-s per"
                " 10⁶ networks, so ~20 CPU-minutes for the 25 cells)."
            ),
            deep,
            deep_Ls,
            REFERENCE_WS,
        ),
        "rho_deep_wmin": rho(
            (
                "The depth axis of the depth-3 target at W = W_min = 2 (L = 6..9): rho_deep's L ≤ 5 leaves its "
                "depth fit 3 cells at W_min (L* = 3, 4, 5; one degree of freedom), as rho for the other two "
                "targets before rho_wmin. Same rule (≤ 10⁸ networks per cell, width 0.1)."
            ),
            deep,
            deep_deeper,
            [W_MIN],
        ),
        "rho_basin": Chunk(
            run="volume_ratio",
            why=(
                "ρ in the image setting (the basin model of book/volume_ratio.md): K = 256 random masked networks"
                " per (W, L) on the planted target planted:0:depth=2,width=3 (L* = 2, W_min = 2), trained as one "
                "population (800 Adam steps at 32×32, mask density 0.75), each classified as a solution (MSE ≤ "
                "2e-3) and compositional (every primitive on its own unit with |corr| ≥ 0.9, and EMC2 AUC ≥ 0.5 "
                "under the calibrated judge). One run per cell; pilot at K = 64: 4 CPU-s for (W, L) = (2, 1), 33 "
                "for (8, 3)."
            ),
            seeds=[ref.seed],
            config={"scale": ref.scale, "targets": [], "samples": [], "basin.population": ref.basin.population},
            grid={"basin_Ws": [[W] for W in ref.basin_Ws], "basin_Ls": [[L] for L in ref.basin_Ls]},
        ),
    }
