"""The optimizer study: Adam vs Muon vs SGD at the sweet spot (DESIGN §3.8, §9).

At one target and depth (the sweet spot of its depth sweep), SP networks are trained and pruned
with each optimizer — Adam; Muon (`torch.optim.Muon` on the hidden W×W matrices, AdamW on the input
and output kernels, the standard recipe of `volratio.train`); SGD with momentum — over several
seeds, through `volratio.sweep` (run function `volratio.depth_runs:optimizer_point`). Each run
reports the final loss, the compositional score (EMC2 AUC, default judge) and the sharpness (top
Hessian eigenvalue, `volratio.flatness`); `summarise` gives mean and t-interval per optimizer.

Chapter: "Optimization: Adam, Muon, SGD" (book/optimization.md).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from .depth import DepthSweepConfig, mean_ci

# learning rates per optimizer (Muon's own lr and its AdamW lr are TrainConfig's defaults, DESIGN §9)
DEFAULT_CASES = (
    {"optimizer": "adam", "lr": 0.01},
    {"optimizer": "muon"},
    {"optimizer": "sgd", "lr": 0.1},
)


@dataclass
class OptimizerStudyConfig:
    target: str = "planted:1:depth=3,width=3"  # the target
    depth: int = 3  # the depth studied (the sweet spot of the target's depth sweep; Muon needs ≥ 2)
    seeds: int = 3  # seeds per optimizer
    cases: tuple = DEFAULT_CASES  # optimizers and their learning rates
    hessian_iters: int = 20  # power-iteration steps for the sharpness
    base: DepthSweepConfig = field(default_factory=DepthSweepConfig.quick)  # width, res, steps, SP, EMC2

    @classmethod
    def quick(cls, **kw) -> "OptimizerStudyConfig":
        return cls(**kw)

    @classmethod
    def full(cls, **kw) -> "OptimizerStudyConfig":
        return cls(**{"seeds": 10, "hessian_iters": 100, "base": DepthSweepConfig.full(), **kw})


def make_sweep(cfg: OptimizerStudyConfig, name: str = "optimizers"):
    from .sweep import Sweep

    base = cfg.base.run_config()
    base.pop("optimizer")
    base.pop("lr")
    base.update(target=cfg.target, depth=int(cfg.depth), hessian_iters=int(cfg.hessian_iters), lr=0.01, members=1)
    return Sweep(run="volratio.depth_runs:optimizer_point", config=base, cases=tuple(dict(c) for c in cfg.cases),
                 seeds=int(cfg.seeds), name=name)


def summarise(table, level: float = 0.95):
    """One row per optimizer: mean and t-interval of loss, score and sharpness over seeds."""
    import pandas as pd

    done = table[table["status"] == "done"]
    rows = []
    for opt, g in done.groupby("optimizer", sort=False):
        row = {"optimizer": opt, "n": len(g)}
        for col in ("loss", "score", "sharpness"):
            m, lo, hi = mean_ci(g[col].to_numpy(float), level)
            row.update({col: m, f"{col}_lo": lo, f"{col}_hi": hi})
        rows.append(row)
    return pd.DataFrame(rows)


def run_study(cfg: OptimizerStudyConfig | None = None, out=None, executor=None, progress: bool | None = False):
    """Run (or read) the study; returns `(summary DataFrame, report)`."""
    from .sweep import results_dir, run_sweep

    cfg = cfg or OptimizerStudyConfig.quick()
    report = run_sweep(make_sweep(cfg), out or results_dir("optimizers"), executor, progress=progress)
    return summarise(report.table), report


def config_json(cfg: OptimizerStudyConfig) -> dict:
    return asdict(cfg)
