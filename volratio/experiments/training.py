"""Run function `train`: train a population of coordinate MLPs on a target (the basic sweep run).

Config entries (a spec's `[config]`/`[grid]`, validated by `parse_train` before any run starts):
`target`, `res`, `arch` or `depth`/`width`/`activation`, `head`, `population`, `artifacts` (see
`Config`) and any field of `volratio.train.TrainConfig` (`steps`, `optimizer`, `lr`, `grad_norm`,
`device`, …). Metrics: `final_loss` and `best_loss` (mean over the population), `final_loss_min`
(best network), `n_params` (non-zero weights per network), `depth`, `width`, `steps`, `device`
(where it trained). Artifacts: `net` (the trained population), `image` (its render,
`(K, res, res, 3)`), `losses` (`(steps + 1, K)` loss curve).

Used by `examples/sweeps/quick.toml` and the chapter "Rerunning at scale on a cluster".
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import numpy as np

from ..data.targets import get_target
from ..nets import ACTIVATIONS, Arch, CoordMLP
from ..runs.registry import complete
from ..train import TrainConfig
from ..train import train as train_net
from ..util.device import resolve_device
from ..util.limits import at_least, one_of, parsed_by
from ..util.presets import configure
from ._base import ExperimentError

ARTIFACTS = ("net", "image", "losses")


@dataclass(frozen=True)
class Config:
    seed: int = 0  # seeds the initialisation (training itself is full-batch and deterministic)
    target: str = "planted:0"  # a `volratio.data.targets.get_target` spec
    res: int = 32  # training resolution
    arch: str | None = None  # an arch string "L;act:n,…"; None: `depth` × `width` of `activation`
    depth: int = 3  # hidden layers (without `arch`)
    width: int = 8  # units per hidden layer (without `arch`)
    activation: str = "gaussian"  # one activation for every unit (without `arch`)
    head: str | None = None  # "hsv", "rgb" or "grey"; None: the target's
    population: int = 1  # K networks trained at once
    artifacts: tuple = ARTIFACTS  # which artifacts to return
    train: TrainConfig = field(default_factory=TrainConfig)  # the optimizer (its fields sit flat in a spec)

    # allowed values, checked when a config is parsed (`volratio.util.limits`)
    LIMITS = {"seed": at_least(0), "res": at_least(2), "depth": at_least(1), "width": at_least(1),
              "activation": one_of(*ACTIVATIONS), "head": one_of("hsv", "rgb", "grey"), "population": at_least(1),
              "artifacts": one_of(*ARTIFACTS), "target": parsed_by(get_target), "arch": parsed_by(Arch.parse)}  # fmt: skip

    def __post_init__(self):
        bad = [a for a in self.artifacts if a not in ARTIFACTS]
        if bad:
            raise ExperimentError(f"train: unknown artifacts {bad}; choose from {list(ARTIFACTS)}")


def parse_train(config: dict) -> Config:
    """The run's `Config` from a flat spec config (TrainConfig fields sit at the top level)."""
    cfg = dict(config)
    if "arch" in cfg:
        given = sorted({"depth", "width", "activation"} & set(cfg))
        if given:
            raise ExperimentError(f"train: config gives both `arch` and {given}; give one or the other")
    tfields = {f.name for f in dataclasses.fields(TrainConfig)} - {"progress"}
    own = {f.name for f in dataclasses.fields(Config)} - {"train"}
    unknown = set(cfg) - tfields - own
    if unknown:
        raise ExperimentError(
            f"train: unknown config entries {sorted(unknown)}; a train run takes {sorted(own)} and {sorted(tfields)}"
        )
    tc = configure(TrainConfig(), {k: cfg.pop(k) for k in list(cfg) if k in tfields}, "train")
    return configure(Config(train=tc), cfg, "train")


def complete_train(cfg: Config) -> dict:
    """The complete flat config of a parsed one (what its store key hashes; `volratio.runs.registry.complete`):
    every entry, TrainConfig's at the top level, and `arch` or `depth`/`width`/`activation`, whichever it uses."""
    out = {k: v for k, v in complete(cfg).items() if not k.startswith("train.")}
    out.update({k: v for k, v in complete(cfg.train).items() if k != "progress"})
    for name in ("depth", "width", "activation") if cfg.arch is not None else ("arch",):
        del out[name]
    return out


def train(config: dict) -> dict:
    """Train as `config` says; see the module docstring for what comes back."""
    cfg = parse_train(config)
    target = get_target(cfg.target)
    arch = Arch.parse(cfg.arch) if cfg.arch is not None else Arch.uniform(cfg.depth, cfg.width, cfg.activation)
    head = cfg.head or getattr(target, "head", "hsv")
    net = CoordMLP(arch, head=head, population=cfg.population, seed=cfg.seed)
    result = train_net(net, target.image(cfg.res), cfg.train)
    losses = np.asarray(result.losses, dtype=np.float64)  # (n_logged, K)
    final = losses[-1]  # (K,)
    out = {
        "final_loss": float(final.mean()),
        "final_loss_min": float(final.min()),
        "best_loss": float(losses.min(axis=0).mean()),
        "n_params": int(sum(result.net.nonzero()) // cfg.population),
        "depth": arch.depth,
        "width": arch.width,
        "steps": int(result.steps[-1]),
        # the device that trained it: with device="auto" the key does not say, and CPU and CUDA
        # results differ in the last bits (and, through chaotic training, sometimes more)
        "device": resolve_device(cfg.train.device).type,
    }
    if "net" in cfg.artifacts:
        out["net"] = result.net.to("cpu")
    if "image" in cfg.artifacts:
        out["image"] = result.net.render(cfg.res).detach().cpu().numpy()  # (K, res, res, 3)
    if "losses" in cfg.artifacts:
        out["losses"] = losses
    return out
