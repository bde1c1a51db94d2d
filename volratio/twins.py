"""Experiment: Picbreeder networks and their SGD twins.

For each Picbreeder target, three networks of the same architecture draw the same image: the
layerized genome (evolved, sparse), the FER paper's dense network trained with Adam for 100,000
steps (`fer_sgd.npz`), and a dense network trained here with the same recipe — LeCun-normal init,
Adam, the gradient normalised to unit norm, MSE on RGB — at the chosen scale. The chapter
"Picbreeder networks and their SGD twins" shows their feature maps and loss curves.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np
import torch

from . import picbreeder
from .nets import CoordMLP
from .train import TrainConfig, train


@dataclass
class TwinsConfig:
    targets: tuple = ("skull", "butterfly", "apple")  # Picbreeder targets
    res: int = 32  # training resolution (FER: 256)
    steps: int = 800  # Adam steps (FER: 100,000)
    lr: float = 3e-3  # FER: 3e-3 (apple 3e-4); with grad_norm the step size is lr-sized
    lr_apple: float = 3e-4  # FER used a lower rate for apple
    grad_norm: bool = True  # FER: gradient divided by its global L2 norm before each step
    seed: int = 0  # LeCun-normal init seed
    scale: str = "quick"

    @classmethod
    def quick(cls, **kw) -> "TwinsConfig":
        return cls(**kw)

    @classmethod
    def full(cls, **kw) -> "TwinsConfig":
        return cls(**{"res": 256, "steps": 100_000, "scale": "full", **kw})


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


def run(config: TwinsConfig | None = None) -> dict[str, Twins]:
    cfg = config or TwinsConfig.quick()
    out = {}
    for name in cfg.targets:
        pb = picbreeder.layerized(name)
        sgd = picbreeder.fer_network(name, "sgd")
        target = torch.nn.functional.interpolate(
            picbreeder.target_image(name).permute(2, 0, 1)[None], size=cfg.res, mode="bilinear", antialias=True
        )[0].permute(1, 2, 0).clamp(0, 1)
        ours = CoordMLP(pb.arch, head="hsv", seed=cfg.seed)
        ours.provenance = {"made_by": "twins.run", "target": name, "config": asdict(cfg)}
        lr = cfg.lr_apple if name == "apple" else cfg.lr
        tc = TrainConfig(steps=cfg.steps, lr=lr, grad_norm=cfg.grad_norm, log_every=max(1, cfg.steps // 200))
        r = train(ours, target, tc)
        mse = {}
        with torch.no_grad():
            for label, net in (("picbreeder", pb), ("fer_sgd", sgd), ("ours", ours)):
                mse[label] = float(((net.render(cfg.res)[0] - target) ** 2).mean())
        out[name] = Twins(name, pb, sgd, ours, r.steps, r.losses[:, 0], picbreeder.fer_losses(name), mse)
    return out
