"""Training budget that lets deep networks fit: dense MSE against depth and training steps.

The depth claims compare networks of different depths; the comparison means something only when
every depth has fitted its target about as well. `run(cfg)` trains, per target and depth, a
population of dense networks (the depth sweep's architecture: `width` units, one activation) for
`max(checkpoints)` full-batch steps and records the MSE of each member at every checkpoint;
`budget_table` gives, per target, checkpoint and depth, the median MSE and its ratio to the best
depth's median at that checkpoint — the number a training budget is chosen by ("every depth within
a factor F of the best"). The run function `fit_budget` (`point`) is one target at one depth, for
sweeps: chunk `depth_budget` of `examples/sweeps/reference.toml` stores it at the reference scale;
`stored_table` reads it back.

Chapter: "Depth: a narrow, target-dependent regime" (book/depth.md).

The training entries stay flat (`lr`, `device`, `train_path`): the steps and the logging interval
come from `checkpoints`, so a nested `TrainConfig` would carry two entries the run must overrule.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd

from ..data.targets import get_target
from ..errors import VolratioError
from ..nets import ACTIVATIONS, Arch, CoordMLP
from ..runs import stored
from ..runs.registry import complete
from ..train import PATHS, TrainConfig, train
from ..util.limits import above, at_least, one_of
from ..util.presets import configure
from ._base import ExperimentError


@dataclass(frozen=True)
class Config:
    targets: tuple = ("picbreeder:skull", "picbreeder:butterfly", "picbreeder:apple")  # target specs
    depths: tuple = (2, 6, 10, 14)  # hidden layers tried
    width: int = 12  # units per hidden layer (the depth sweep's reference width)
    activation: str = "gaussian"  # one activation for every hidden unit
    res: int = 64  # training resolution
    members: int = 5  # networks per (target, depth), trained together as one population
    checkpoints: tuple = (2000, 4000, 6000)  # steps at which each member's MSE is recorded
    lr: float = 3e-3  # Adam's learning rate (the depth sweep's reference rate)
    train_path: str = "auto"  # TrainConfig.path: "auto" = the fused kernel on the CPU, else the fast path
    seed: int = 0  # initialisations
    device: str = "cpu"  # CPU: bit-for-bit repeatable

    # allowed values, checked when a config is parsed (`volratio.util.limits`)
    LIMITS = {"depths": at_least(1), "width": at_least(1), "activation": one_of(*ACTIVATIONS), "res": at_least(2),
              "members": at_least(1), "checkpoints": at_least(1), "lr": above(0), "train_path": one_of(*PATHS),
              "seed": at_least(0)}  # fmt: skip

    def __post_init__(self):
        if not self.checkpoints or min(self.checkpoints) < 1 or list(self.checkpoints) != sorted(self.checkpoints):
            raise VolratioError(f"checkpoints must be increasing positive step counts, got {self.checkpoints}")
        if not self.depths or min(self.depths) < 1:
            raise VolratioError(f"depths must be positive, got {self.depths}")


def _mse_at_checkpoints(spec: str, depth: int, cfg: Config) -> dict[int, list[float]]:
    """`{steps: [MSE of each member]}` of one population of `cfg.members` dense networks."""
    target = get_target(spec)
    net = CoordMLP(
        Arch.uniform(int(depth), cfg.width, cfg.activation),
        head=getattr(target, "head", "hsv"),
        population=cfg.members,
        seed=cfg.seed,
    )
    every = int(np.gcd.reduce(np.asarray(cfg.checkpoints)))
    tc = TrainConfig(steps=max(cfg.checkpoints), lr=cfg.lr, log_every=every, device=cfg.device, path=cfg.train_path)
    tr = train(net, target.image(cfg.res), tc)
    out = {}
    for step in cfg.checkpoints:
        i = int(np.flatnonzero(tr.steps == step)[0]) if (tr.steps == step).any() else -1
        out[int(step)] = [float(x) for x in tr.losses[i]]
    return out


def _rows(spec: str, depth: int, by_step: dict) -> list[dict]:
    return [{"target": spec, "depth": int(depth), "member": k, "steps": int(step), "mse": float(mse)}
            for step, losses in by_step.items() for k, mse in enumerate(losses)]  # fmt: skip


def run(cfg: Config):
    """One row per (target, depth, member, checkpoint): `mse`. A pandas DataFrame (config in `.attrs`)."""
    rows = [r for spec in cfg.targets for d in cfg.depths for r in _rows(spec, d, _mse_at_checkpoints(spec, d, cfg))]
    df = pd.DataFrame(rows)
    df.attrs["config"] = asdict(cfg)
    return df


# ---------------------------------------------------------------------------------------------
# One run (sweep run function `fit_budget`): one target at one depth


def parse_point(config: dict) -> tuple[str, int, Config]:
    """`(target, depth, Config)` of one run; the config's other entries are `Config`'s fields."""
    config = dict(config)
    missing = [k for k in ("target", "depth") if k not in config]
    if missing:
        raise ExperimentError(f"fit_budget: give {' and '.join(missing)} (one target at one depth per run)")
    spec, depth = str(config.pop("target")), config.pop("depth")
    if int(depth) != depth or int(depth) < 1:
        raise ExperimentError(f"fit_budget: depth must be a positive integer, got {depth!r}")
    return spec, int(depth), configure(Config(targets=(spec,), depths=(int(depth),)), config, "fit_budget")


def complete_point(parsed: tuple) -> dict:
    """The complete config of one run (what its store key hashes; `volratio.runs.registry.complete`): its
    target and depth, and every entry of `Config` but the lists they replace."""
    spec, depth, cfg = parsed
    rest = {k: v for k, v in complete(cfg).items() if k not in ("targets", "depths")}
    return {"target": spec, "depth": depth, **rest}


def point(config: dict) -> dict:
    """Metrics: `mse` — `{str(steps): [MSE of each member]}` — and `steps` (the checkpoints)."""
    spec, depth, cfg = parse_point(config)
    by_step = _mse_at_checkpoints(spec, depth, cfg)
    return {"mse": {str(k): v for k, v in by_step.items()}, "steps": sorted(by_step)}


def stored_table(name: str = "depth_budget", root=None):
    """The rows of `run` from the stored runs of chunk `name` (under `root`, default
    `results/reference`)."""
    recs = stored.runs_of([name], root, error=VolratioError)
    rows = [r for rec in recs for r in _rows(rec["config"]["target"], rec["config"]["depth"],
                                            {int(k): v for k, v in rec["metrics"]["mse"].items()})]  # fmt: skip
    return pd.DataFrame(rows)


def budget_table(df):
    """Per target, steps and depth: the median MSE over members, and its ratio to the best depth's
    median at the same steps (1 = the best depth)."""
    med = df.groupby(["target", "steps", "depth"])["mse"].median().rename("median_mse").reset_index()
    best = med.groupby(["target", "steps"])["median_mse"].transform("min")
    med["ratio_to_best"] = med["median_mse"] / best
    return med
