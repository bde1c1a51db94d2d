"""Experiment `interference`: the interference of learned features against the Welch bound (`volratio.welch`).

Per hidden layer of a set of networks, the coherence of its live units' weight vectors and feature
maps against the Welch bound for their (r, d) (`volratio.welch.network_interference`). The networks:
for a Picbreeder target, its layerized Picbreeder network and FER's dense SGD network (the data is
fetched on first use); a dense network trained here on the target; and that network pruned with SP
at two thresholds.

Chapter: "Feature interference and the Welch bound" (book/welch.md).
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd

from ..data.specs import load_network
from ..data.targets import get_target
from ..nets import Arch, CoordMLP
from ..prune import SPConfig, sp
from ..prune.similarity_pruning import COMPENSATE
from ..train import PATHS, TrainConfig, train
from ..util.device import device_name
from ..util.limits import above, at_least, between, one_of, parsed_by
from ..util.presets import Presets
from ..welch.interference import network_interference
from ._base import Result


@dataclass(frozen=True)
class Config(Presets):
    target: str = "picbreeder:skull"  # trained on; a Picbreeder target adds its Picbreeder and FER SGD networks
    dense_arch: str = "6;gaussian:16"  # our dense network
    dense_res: int = 48  # its training resolution
    steps: int = 600  # Adam steps
    taus: tuple = (0.8, 0.9)  # SP thresholds
    sp_rounds: int = 5  # SP rounds (SPConfig.quick)
    sp_retrain: int = 100  # retraining steps per round
    sp_loss_factor: float | None = 2.0  # SP's guard (SPConfig.loss_factor; None: off)
    sp_retrain_lr_factor: float = 0.1  # SP retrains at this × the training rate (SPConfig; 1.0 in stored runs)
    sp_compensate: str = "span"  # SPConfig.compensate ("none" in stored runs)
    res: int = 64  # grid of the feature maps
    seed: int = 0  # initialisation and SP's choices
    device: str = "cpu"  # CPU: bit-for-bit repeatable
    train_path: str = "auto"  # TrainConfig.path of training and SP retraining ("auto": fused on the CPU, else fast)
    scale: str = "quick"  # the preset this config came from

    # allowed values, checked when a config is parsed (`volratio.util.limits`)
    LIMITS = {
        "dense_res": at_least(2), "steps": at_least(1), "taus": between(0, 1, open_lo=True), "sp_rounds": at_least(0),
        "sp_retrain": at_least(0), "sp_loss_factor": at_least(1), "sp_retrain_lr_factor": above(0),
        "sp_compensate": one_of(*COMPENSATE), "res": at_least(2), "seed": at_least(0), "train_path": one_of(*PATHS),
        "target": parsed_by(get_target), "dense_arch": parsed_by(Arch.parse), "device": parsed_by(device_name),
    }  # fmt: skip

    # reference: longer training and SP, finer feature maps — what chunk interference of
    # examples/sweeps/reference.toml ran (tests/test_reference_plan.py compares them), with its SP
    # (`REFERENCE_SP`: no guard, retraining at the training rate, removed units only masked) on the eager path
    REFERENCE = staticmethod(lambda: {"steps": 5000, "sp_rounds": 10, "sp_retrain": 500, "res": 128, **REFERENCE_SP})
    # full: longer still
    FULL = {"steps": 20_000, "sp_rounds": 30, "sp_retrain": 2000, "res": 256}


# The SP of the reference preset: the stored chunk `interference` ran SP without the guard, retraining
# at the training rate, removed units only masked, on the eager training path
REFERENCE_SP = {
    "sp_loss_factor": None,
    "train_path": "eager",
    "sp_retrain_lr_factor": 1.0,
    "sp_compensate": "none",
}


def networks(cfg: Config) -> tuple[dict, dict]:
    """`(nets, notes)`: name -> CoordMLP, and what was trained (MSEs, SP summaries with each
    network's `dense_loss`, `final_loss` and `collapsed`)."""
    nets, notes = {}, {"target": cfg.target}
    if cfg.target.startswith("picbreeder:"):  # the data is fetched on first use, or a one-line fix is raised
        name = cfg.target.partition(":")[2]
        nets[f"Picbreeder {name}"] = load_network(f"picbreeder:{name}")
        nets[f"FER SGD {name}"] = load_network(f"fer-sgd:{name}")
    image = get_target(cfg.target).image(cfg.dense_res)
    dense = train(
        CoordMLP(cfg.dense_arch, head="rgb", seed=cfg.seed),
        image,
        TrainConfig(steps=cfg.steps, device=cfg.device, path=cfg.train_path),
    )
    nets[f"dense {cfg.dense_arch}"] = dense.net
    notes["dense_mse"] = float(dense.final_loss[0])
    for tau in cfg.taus:
        scfg = SPConfig(
            tau=tau,
            rounds=cfg.sp_rounds,
            retrain_steps=cfg.sp_retrain,
            retrain_lr_factor=cfg.sp_retrain_lr_factor,
            compensate=cfg.sp_compensate,
            seed=cfg.seed,
            train=TrainConfig(device=cfg.device, path=cfg.train_path),
            loss_factor=cfg.sp_loss_factor,
        )
        pruned = sp(dense.net.select(0), image, scfg)  # select() copies: the dense network stays as it is
        nets[f"SP τ={tau}"] = pruned.net
        notes[f"SP τ={tau}"] = pruned.summary()
    return nets, notes


def run(cfg: Config | None = None) -> Result:
    """`Result.table`: one row per network × vectors (weights | maps) × layer; extras `nets`, `notes`."""
    cfg = cfg or Config.quick()
    t0 = time.perf_counter()
    nets, notes = networks(cfg)
    table = pd.DataFrame(network_interference(nets, res=cfg.res))
    return Result(
        "interference",
        asdict(cfg),
        table,
        [cfg.seed],
        time.perf_counter() - t0,
        judge=None,
        extras={"nets": nets, "notes": notes},
    )


def summary(table):
    """Per network × reading (`vectors`): how many layers, in how many the bound is active (r > d),
    the median of mean/bound and max/bound over those, and the average mean and max interference
    over all layers with ≥ 2 vectors. With a `seed` column (several runs), per network × reading ×
    seed; average that over seeds for one row per network."""

    def one(g):
        act = g[g.bound > 0]
        return pd.Series({
            "layers": len(g),
            "layers with r > d": len(act),
            "mean/bound where r > d (median)": (act.mean_sq_inner / act.bound).median() if len(act) else np.nan,
            "max/bound where r > d (median)": (act.max_sq_inner / act.bound).median() if len(act) else np.nan,
            "mean interference (avg over layers)": g.mean_sq_inner.mean(),
            "max interference (avg over layers)": g.max_sq_inner.mean(),
        })  # fmt: skip

    by = ["network", "vectors"] + (["seed"] if "seed" in table else [])
    cols = ["bound", "mean_sq_inner", "max_sq_inner"]
    return table.dropna(subset=["max_sq_inner"]).groupby(by, sort=False)[cols].apply(one)
