"""Experiment `twins`: Picbreeder networks and their SGD twins.

For each Picbreeder target, three networks of the same architecture draw the same image: the
layerized genome (evolved, sparse), the FER paper's dense network trained with Adam for 100,000
steps (`fer_sgd.npz`), and a dense network trained here with the same recipe — LeCun-normal init,
Adam, the gradient normalised to unit norm, MSE on RGB — at the chosen scale. The chapter
"Picbreeder networks and their SGD twins" shows their feature maps and loss curves.

`run(cfg) -> Result`: `Result.table` has one row per target × network (its MSE at `cfg.res`);
`Result["twins"]` maps each target to its `Twins` (the three networks and the loss curves).
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field

import numpy as np
import torch

from ..data import picbreeder
from ..nets import CoordMLP
from ..train import TrainConfig, train
from ._base import Presets, Result


@dataclass
class Config(Presets):
    targets: tuple = ("skull", "butterfly", "apple")  # Picbreeder targets
    res: int = 32  # training resolution (FER: 256)
    steps: int = 800  # Adam steps (FER: 100,000)
    lr: float = 3e-3  # FER: 3e-3 (apple 3e-4); with grad_norm the step size is lr-sized
    lr_apple: float = 3e-4  # FER used a lower rate for apple
    grad_norm: bool = True  # FER: gradient divided by its global L2 norm before each step
    seed: int = 0  # LeCun-normal init seed
    scale: str = "quick"  # the preset this config came from

    # reference: 64×64, 5,000 steps — budget ~0.3 CPU-hours (an estimate: not run here)
    REFERENCE = {"res": 64, "steps": 5000}
    # FER's recipe: 256×256, 100,000 steps
    FULL = {"res": 256, "steps": 100_000}


@dataclass
class Twins:
    name: str
    picbreeder: CoordMLP  # layerized genome
    fer_sgd: CoordMLP  # the FER paper's dense SGD network
    ours: CoordMLP  # trained here
    our_steps: np.ndarray
    our_losses: np.ndarray  # MSE at our resolution
    fer_losses: np.ndarray  # FER's per-step MSE (256×256)
    mse: dict = field(default_factory=dict)  # each network's MSE against the target at config.res


def run(config: Config | None = None) -> Result:
    import pandas as pd

    cfg = config or Config.quick()
    out = {}
    t0 = time.perf_counter()
    for name in cfg.targets:
        pb = picbreeder.layerized(name)
        sgd = picbreeder.fer_network(name, "sgd")
        target = (
            torch.nn.functional.interpolate(
                picbreeder.target_image(name).permute(2, 0, 1)[None], size=cfg.res, mode="bilinear", antialias=True
            )[0]
            .permute(1, 2, 0)
            .clamp(0, 1)
        )
        ours = CoordMLP(pb.arch, head="hsv", seed=cfg.seed)
        ours.provenance = {"made_by": "volratio.experiments.twins.run", "target": name, "config": asdict(cfg)}
        lr = cfg.lr_apple if name == "apple" else cfg.lr
        tc = TrainConfig(steps=cfg.steps, lr=lr, grad_norm=cfg.grad_norm, log_every=max(1, cfg.steps // 200))
        r = train(ours, target, tc)
        mse = {}
        with torch.no_grad():
            for label, net in (("picbreeder", pb), ("fer_sgd", sgd), ("ours", ours)):
                mse[label] = float(((net.render(cfg.res)[0] - target) ** 2).mean())
        out[name] = Twins(name, pb, sgd, ours, r.steps, r.losses[:, 0], picbreeder.fer_losses(name), mse)
    table = pd.DataFrame(
        [
            {"target": t.name, "network": label, "mse": v, "res": cfg.res}
            for t in out.values()
            for label, v in t.mse.items()
        ]
    )
    return Result("twins", asdict(cfg), table, [cfg.seed], time.perf_counter() - t0, extras={"twins": out})


TwinsConfig = Config  # the name before volratio.experiments (exercises and old notebooks use it)


def layerization_table(res: int = 256):
    """One row per Picbreeder target: the genome's size, the layerized network's shape and how
    exactly it reproduces the genome's own graph evaluation and `target.png` (float64)."""
    import pandas as pd

    rows = []
    for name in picbreeder.NAMES:
        lay = picbreeder.layerize(name, dtype=torch.float64)
        fer = picbreeder.fer_network(name, "layered")
        g = picbreeder.genome(name)
        img = lay.net.render(res)[0]  # (res, res, 3)
        rows.append(
            {
                "target": name,
                "genome nodes": len(g.nodes),
                "genome links": len(g.links),
                "longest path": g.depth(),
                "depth": lay.net.depth,
                "width": lay.net.width,
                "non-zero": lay.net.nonzero()[0],
                "cache copies": lay.n_cache_weights,
                "FER layered (depth, width, non-zero)": (fer.depth, fer.width, fer.nonzero()[0]),
                "max |layered − graph|": float((img - g.render(res)).abs().max()),
                "MAE vs target.png": float((img - picbreeder.target_image(name).double()).abs().mean()),
            }
        )
    return pd.DataFrame(rows).set_index("target")


@torch.no_grad()
def genome_maps(name: str, res: int = 32) -> list[np.ndarray]:
    """Feature maps of the genome's own nodes (cache copies left out), per layer `(n_nodes, res, res)`."""
    lay = picbreeder.layerize(name)
    feats = lay.net.features(res)  # per layer (1, res, res, W)
    return [
        feats[layer - 1][0][..., [c for _, c in units]].permute(2, 0, 1).numpy()
        for layer, units in lay.node_units().items()
    ]
