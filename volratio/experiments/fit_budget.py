"""Training budget that lets deep networks fit: dense MSE against depth and training steps.

The depth claims compare networks of different depths; the comparison means something only when
every depth has fitted its target about as well. `run(cfg)` trains, per target and depth, a
population of dense networks (the depth sweep's architecture: `width` units, one activation) for
`max(checkpoints)` full-batch steps and records the MSE of each member at every checkpoint;
`budget_table` gives, per target, checkpoint and depth, the median MSE and its ratio to the best
depth's median at that checkpoint — the number a training budget is chosen by ("every depth within
a factor F of the best").

Chapter: "Depth: a narrow, target-dependent regime" (book/depth.md).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from ..errors import VolratioError


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
    train_path: str = "fast"  # TrainConfig.path (volratio.fast_train)
    seed: int = 0  # initialisations
    device: str = "cpu"  # CPU: bit-for-bit repeatable

    def __post_init__(self):
        if not self.checkpoints or min(self.checkpoints) < 1 or list(self.checkpoints) != sorted(self.checkpoints):
            raise VolratioError(f"checkpoints must be increasing positive step counts, got {self.checkpoints}")
        if not self.depths or min(self.depths) < 1:
            raise VolratioError(f"depths must be positive, got {self.depths}")


def run(cfg: Config):
    """One row per (target, depth, member, checkpoint): `mse`. A pandas DataFrame (config in `.attrs`)."""
    import pandas as pd

    from ..data.targets import get_target
    from ..nets import Arch, CoordMLP
    from ..train import TrainConfig, train

    rows = []
    every = int(np.gcd.reduce(np.asarray(cfg.checkpoints)))
    for spec in cfg.targets:
        target = get_target(spec)
        img = target.image(cfg.res)
        for depth in cfg.depths:
            net = CoordMLP(
                Arch.uniform(depth, cfg.width, cfg.activation),
                head=getattr(target, "head", "hsv"),
                population=cfg.members,
                seed=cfg.seed,
            )
            tc = TrainConfig(steps=max(cfg.checkpoints), lr=cfg.lr, log_every=every, device=cfg.device,
                             path=cfg.train_path)  # fmt: skip
            tr = train(net, img, tc)
            for step in cfg.checkpoints:
                i = int(np.flatnonzero(tr.steps == step)[0]) if (tr.steps == step).any() else -1
                for k, mse in enumerate(tr.losses[i]):
                    rows.append({"target": spec, "depth": depth, "member": k, "steps": step, "mse": float(mse)})
    df = pd.DataFrame(rows)
    df.attrs["config"] = asdict(cfg)
    return df


def budget_table(df):
    """Per target, steps and depth: the median MSE over members, and its ratio to the best depth's
    median at the same steps (1 = the best depth)."""
    med = df.groupby(["target", "steps", "depth"])["mse"].median().rename("median_mse").reset_index()
    best = med.groupby(["target", "steps"])["median_mse"].transform("min")
    med["ratio_to_best"] = med["median_mse"] / best
    return med
