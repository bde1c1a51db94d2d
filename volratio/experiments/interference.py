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
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from ..data.specs import load_network
from ..data.targets import get_target
from ..nets import Arch, CoordMLP
from ..prune import SPConfig, sp
from ..runs.plan import Chunk
from ..train import TrainConfig
from ..train import train as train_network
from ..util.limits import at_least, between, parsed_by
from ..util.presets import ConfigError, Presets
from ..welch.interference import network_interference
from ._base import PAPER, Result, Trained, unscored

# SP of the quick scale: SPConfig's defaults (the guard at 2 × the dense MSE, retraining at 0.1 × the
# training rate, removed units' weights moved onto the units that stay) with 5 rounds of 100 steps
DEFAULT_SP = SPConfig(rounds=5, retrain_steps=100)


@dataclass(frozen=True)
class Config(Presets):
    target: str = "picbreeder:skull"  # trained on; a Picbreeder target adds its Picbreeder and FER SGD networks
    dense_arch: str = "6;gaussian:16"  # our dense network
    dense_res: int = 48  # its training resolution
    train: TrainConfig = field(  # training of the dense network (Adam; on the CPU: bit-for-bit repeatable);
        # SP retrains with it too, for sp.retrain_steps at sp.retrain_lr_factor × its rate ("auto" path:
        # the fused kernel on the CPU, else the fast path)
        default_factory=lambda: TrainConfig(steps=600, device="cpu", path="auto")
    )
    taus: tuple = (0.8, 0.9)  # SP thresholds: the dense network is pruned once at each
    sp: SPConfig = field(default_factory=lambda: replace(DEFAULT_SP))  # SP at each of `taus`; its `tau`,
    # `seed` and `train` are the run's (`taus`, `seed`, `train`), never given
    res: int = 64  # grid of the feature maps
    seed: int = 0  # initialisation and SP's choices
    scale: str = "quick"  # the preset this config came from

    # SP entries the run sets itself (`sp_config`): never in the complete config a run is keyed by
    # (`volratio.util.presets.complete`)
    RUN_SET = ("sp.tau", "sp.seed", "sp.train")

    # allowed values, checked when a config is parsed (`volratio.util.limits`)
    LIMITS = {
        "dense_res": at_least(2), "taus": between(0, 1, open_lo=True), "res": at_least(2), "seed": at_least(0),
        "target": parsed_by(get_target), "dense_arch": parsed_by(Arch.parse),
    }  # fmt: skip

    def __post_init__(self):
        if self.sp.tau != SPConfig().tau:
            raise ConfigError(f"sp.tau = {self.sp.tau}: interference prunes at each of `taus`; set taus instead")
        if self.sp.seed != SPConfig().seed:
            raise ConfigError(f"sp.seed = {self.sp.seed}: interference seeds SP with its own `seed`; set seed instead")
        if self.sp.train != SPConfig().train:
            raise ConfigError("sp.train: interference's SP retrains with the run's `train`; set train.* instead")

    def sp_config(self, tau: float) -> SPConfig:
        """SP as the run uses it at threshold `tau`: `sp` seeded by `seed`, retraining with `train`."""
        return replace(self.sp, tau=tau, seed=self.seed, train=self.train)

    # reference: longer training and SP, finer feature maps — what chunk interference of
    # examples/sweeps/reference.toml ran (its `reference_chunks()` builds them from this preset): training on the
    # eager path, SP without the guard, retraining at the training rate, removed units only masked
    # fmt: off
    REFERENCE = staticmethod(lambda: {
        "train": TrainConfig(steps=5000, device="cpu", path="eager"), "res": 128,
        "sp": replace(DEFAULT_SP, rounds=10, retrain_steps=500, loss_factor=None, retrain_lr_factor=1.0,
                      compensate="none"),
    })
    # full: longer still
    FULL = staticmethod(lambda: {
        "train": TrainConfig(steps=20_000, device="cpu", path="auto"), "res": 256,
        "sp": replace(DEFAULT_SP, rounds=30, retrain_steps=2000),
    })
    # fmt: on


def networks(cfg: Config) -> tuple[dict, dict]:
    """`(nets, notes)`: name -> CoordMLP, and what was trained (MSEs, SP summaries with each
    network's `dense_loss`, `final_loss` and `collapsed`)."""
    nets, notes = {}, {"target": cfg.target}
    if cfg.target.startswith("picbreeder:"):  # the data is fetched on first use, or a one-line fix is raised
        name = cfg.target.partition(":")[2]
        nets[f"Picbreeder {name}"] = load_network(f"picbreeder:{name}")
        nets[f"FER SGD {name}"] = load_network(f"fer-sgd:{name}")
    image = get_target(cfg.target).image(cfg.dense_res)
    dense = train_network(CoordMLP(cfg.dense_arch, head="rgb", seed=cfg.seed), image, cfg.train)
    nets[f"dense {cfg.dense_arch}"] = dense.net
    notes["dense_mse"] = float(dense.final_loss[0])
    for tau in cfg.taus:
        pruned = sp(dense.net.select(0), image, cfg.sp_config(tau))  # select() copies: the dense network stays as it is
        nets[f"SP τ={tau}"] = pruned.net
        notes[f"SP τ={tau}"] = pruned.summary()
    return nets, notes


def train(cfg: Config | None = None) -> Trained:
    """The networks and their interference, one row per network × vectors (weights | maps) × layer;
    extras `nets`, `notes`."""
    cfg = cfg or Config.quick()
    t0 = time.perf_counter()
    nets, notes = networks(cfg)
    table = pd.DataFrame(network_interference(nets, res=cfg.res))
    return Trained(
        "interference", cfg, table, [cfg.seed], time.perf_counter() - t0, extras={"nets": nets, "notes": notes}
    )


score = unscored  # interference is measured on the weights, under no judge: only the default reading


def run(cfg: Config | None = None) -> Result:
    """`Result.table`: one row per network × vectors (weights | maps) × layer; extras `nets`, `notes`."""
    return score(train(cfg), PAPER)


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


# ---------------------------------------------------------------------------------------------
# The reference plan's chunks (volratio.runs.plan writes them to examples/sweeps/reference.toml)


def reference_chunks() -> dict:
    """The chunks of the reference plan that this experiment owns (`volratio.runs.plan.Chunk`: a
    sweep spec and why it runs what it runs)."""
    return {
        "interference": Chunk(
            run="interference",
            why=(
                "Interference of learned features against the bound: the interference experiment's reference "
                "preset — the Picbreeder and FER SGD skull networks, a dense 6 × 16 network trained 5,000 steps "
                "and its SP copies (τ = 0.8, 0.9; 10 rounds × 500 steps), feature maps on a 128 × 128 grid — 5 "
                "seeds."
            ),
            seeds=[0, 1, 2, 3, 4],
            threads=1,
            config={"scale": "reference"},
        ),
    }
