"""One run of a depth sweep: SP networks of one depth on one target, scored with EMC2.

`Settings` holds what every run of a depth sweep shares (one copy of the defaults: the sweeps, the
command line `volratio depth sweep` and the optimizer study use it), `Point` is one run's config and
`Config` a whole sweep's (targets × depths × seeds, with its presets). The run function `depth_point`
(`point`) trains a population of dense networks, prunes each with SP (`volratio.prune.sp`) and scores
each with EMC2 (`volratio.emc2.score`) under the config's judge.

Chapters: "Depth: a narrow, target-dependent regime" (book/depth.md), "Unknown targets", "Your own
target", "Optimization"; command: `volratio depth sweep`.

The training entries (`steps`, `lr`, `optimizer`, `muon_lr`, `adamw_lr`, `device`, `train_path`)
stay flat, while SP's are nested (`sp`): they are what the depth sweeps and the optimizer study vary
(the optimizer study's runs set `optimizer` and its rates; `volratio depth sweep --steps`), `device`
is EMC2's too, and the one `TrainConfig` is built in one place (`sp_network`).
Nesting them would rename the axes of four stored chunks (876 runs, and the rescore runs that name
them by key) to remove that one copy.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field, fields, replace

import numpy as np

from .. import emc2
from ..data.targets import get_target
from ..emc2 import DEFAULT_DELTAS, UNIT_DELTAS, EMC2Config
from ..emc2.source import Scoring
from ..judges.registry import DEFAULT_JUDGE, JUDGES, check_res
from ..nets import ACTIVATIONS, Arch, CoordMLP
from ..prune import SPConfig, collapsed, sp
from ..train import OPTIMIZERS, PATHS, TrainConfig, train
from ..util.device import device_name
from ..util.limits import above, at_least, nonzero, one_of, parsed_by
from ..util.presets import ConfigError, Presets, complete, configure
from .complexity import png_ratio
from .curves import DepthError

CALIBRATION_SEED = 0  # seeds the "ssim" judge's calibration in every depth run (and its rescores)

# SP of a depth run (the paper gives no τ; ours): τ = 0.9, 2 rounds of 30 retraining steps at 0.1 × the
# training rates, at most 2 units per network per round (most similar first), a removed unit's outgoing
# weights moved onto the units that stay ("span"), a round undone above 2 × the dense MSE (the guard)
DEFAULT_SP = SPConfig(tau=0.9, rounds=2, retrain_steps=30, retrain_lr_factor=0.1, per_round=2, compensate="span",
                      loss_factor=2.0)  # fmt: skip
RUN_SET = ("seed", "train")  # SPConfig entries a depth run sets itself (`Settings.sp_config`), never in its config

# The planted targets of the chapter: true depth L* known, PNG ratio computable (width 3 each)
PLANTED = ("planted:1:depth=2,width=3", "planted:2:depth=3,width=3", "planted:3:depth=4,width=3")
# The reference scale's targets: the three Picbreeder targets, and twelve planted ones (L* = 2..7, two
# each, width 3) whose sweet spots are the predictor's training set and the depth claim's planted half
PICBREEDER = ("picbreeder:skull", "picbreeder:butterfly", "picbreeder:apple")
PLANTED_REFERENCE = tuple(f"planted:{s}:depth={2 + (s - 11) // 2},width=3" for s in range(11, 23))
PLANTED_START_WIDTH = 24  # the sparse regime's start on a planted target: 8 × their W_min = 3
# The reference chunk depth_matched_planted: per planted target, SP's non-zero count at each of its
# depths (L* − 3 .. L* + 3, from 1) — one weight sparsity per target, computed by
# `volratio.experiments.depth_regime.matched_sparsity` from the stored depth_sparse_planted networks'
# sizes (never their scores); tests/test_reference_store.py checks them. The sparse regime's and the
# optimizer study's planted chunks prune to the count at L* (`matched_count_at_true_depth`).
MATCHED_COUNTS = {
    "planted:11:depth=2,width=3": (76, 441, 807, 1172, 1537),
    "planted:12:depth=2,width=3": (55, 319, 583, 847, 1111),
    "planted:13:depth=3,width=3": (70, 407, 744, 1081, 1418, 1755),
    "planted:14:depth=3,width=3": (90, 523, 956, 1389, 1822, 2255),
    "planted:15:depth=4,width=3": (29, 167, 305, 443, 582, 720, 858),
    "planted:16:depth=4,width=3": (80, 465, 851, 1236, 1621, 2006, 2391),
    "planted:17:depth=5,width=3": (104, 189, 275, 361, 447, 532, 618),
    "planted:18:depth=5,width=3": (539, 985, 1430, 1876, 2322, 2768, 3214),
    "planted:19:depth=6,width=3": (1148, 1668, 2188, 2708, 3228, 3748, 4268),
    "planted:20:depth=6,width=3": (966, 1404, 1842, 2279, 2717, 3154, 3592),
    "planted:21:depth=7,width=3": (1086, 1425, 1764, 2102, 2441, 2779, 3118),
    "planted:22:depth=7,width=3": (1096, 1438, 1779, 2121, 2462, 2804, 3146),
}


def matched_count_at_true_depth(target: str) -> int:
    """`MATCHED_COUNTS`'s count of a planted reference target at its true depth L* (its depths run
    L* − 3 .. L* + 3, from 1): where the sparse regime's planted networks still fit."""
    return MATCHED_COUNTS[target][min(3, get_target(target).depth - 1)]


@dataclass(frozen=True)
class Settings:
    """What every run of a depth sweep shares (one run adds `target`, `depth`, `seed`)."""

    members: int = 3  # networks trained together as one population per run (speed only; seeds = runs × members)
    width: int = 8  # units per hidden layer before pruning
    activation: str = "gaussian"  # one activation for every hidden unit
    res: int = 16  # training, pruning and scoring resolution
    steps: int = 120  # dense training steps (full batch)
    lr: float = 0.01  # learning rate (Adam, AdamW, SGD)
    optimizer: str = "adam"  # adam | adamw | sgd | muon (training and SP retraining)
    muon_lr: float = 0.02  # Muon's learning rate on the hidden matrices (`volratio.train`'s Muon recipe; scaled to match AdamW's RMS)
    adamw_lr: float = 3e-4  # with Muon: AdamW's learning rate on the input and output kernels
    sp: SPConfig = field(default_factory=lambda: replace(DEFAULT_SP))  # SP after training; its `seed` and `train` are
    # the run's (`seed`; the training settings above, at sp.retrain_lr_factor × the rates), never given
    deltas: tuple = UNIT_DELTAS  # EMC2 perturbation sizes (both signs, FER's |Δw| ≤ 1)
    max_params: int | None = None  # EMC2 on every non-zero weight; a number: a seeded subsample of that many
    judge: str = DEFAULT_JUDGE  # EMC2 judge (volratio.judges.make_judge): label-anchored on the target image, gated
    device: str = "cpu"  # sweeps run single-threaded on CPU for bit-for-bit repeatability
    train_path: str = "auto"  # TrainConfig.path of training and SP retraining: "auto" = the fused C++ kernel
    # (volratio.train.fused) on the CPU, the fast path on CUDA. The stored reference chunks ran "fast"

    # allowed values, checked when a config is parsed (`volratio.util.limits`); None passes where allowed
    LIMITS = {
        "members": at_least(1), "width": at_least(1), "activation": one_of(*ACTIVATIONS), "res": at_least(2),
        "steps": at_least(1), "lr": above(0), "optimizer": one_of(*OPTIMIZERS), "muon_lr": above(0),
        "adamw_lr": above(0), "deltas": nonzero(),
        "max_params": at_least(1), "judge": one_of(*JUDGES), "train_path": one_of(*PATHS),
        "depth": at_least(1), "seed": at_least(0), "seeds": at_least(1), "depths": at_least(1),
        "ratio_res": at_least(2), "processes": at_least(1), "tol": at_least(0), "window": at_least(0),
        "target": parsed_by(get_target), "targets": parsed_by(get_target), "device": parsed_by(device_name),
    }  # fmt: skip

    def __post_init__(self):
        check_res(self.judge, self.res, f"res = {self.res}: images", DepthError)  # before any training
        if self.sp.seed != SPConfig().seed:
            raise ConfigError(f"sp.seed = {self.sp.seed}: a depth run seeds SP with its own `seed`; set `seed` instead")
        if self.sp.train != SPConfig().train:
            raise ConfigError(
                "sp.train: a depth run's SP retrains with the run's training settings (optimizer, lr, muon_lr, "
                "adamw_lr, device, train_path; at sp.retrain_lr_factor × the rates); set those instead"
            )

    def shared(self) -> dict:
        """The settings as a sweep's shared config: every entry, SP's as dotted entries (`sp.tau`; a
        run adds `target`, `depth`, `seed`)."""
        names = {f.name for f in fields(Settings)}
        c = {k: v for k, v in complete_point(self).items() if k.partition(".")[0] in names}
        c["deltas"] = [float(x) for x in self.deltas]
        return c

    def sp_config(self, seed: int, train: TrainConfig) -> SPConfig:
        """SP as a run uses it: `sp` seeded by the run's `seed`, retraining with its training settings."""
        return replace(self.sp, seed=seed, train=train)


def complete_point(cfg: Settings) -> dict:
    """The complete config of one run (what its store key hashes; `volratio.util.presets.complete`):
    every entry, SP's as dotted entries (`sp.tau`) but for those the run sets itself (`RUN_SET`)."""
    return {k: v for k, v in complete(cfg).items() if not (k.startswith("sp.") and k.split(".")[1] in RUN_SET)}


@dataclass(frozen=True)
class Point(Settings):
    """One run of a depth sweep: `members` SP networks of one depth on one target."""

    target: str = "planted:0"  # a volratio.data.targets spec
    depth: int = 3  # hidden layers
    seed: int = 0  # initialisations, SP's choices and the EMC2 subsample
    keep_net: bool = True  # return the population as an artifact

    def scoring(self) -> Scoring:
        """How the run scores the population it stores (`emc2_of`): none of its networks is in the
        anchored verdict set (its run trains them), and its scores are the metrics `SCORE_METRICS`."""
        members = int(self.members)
        return Scoring(self.target, members, emc2_config(self, 0), (None,) * members, SCORE_METRICS)


@dataclass(frozen=True)
class Config(Presets, Settings):
    targets: tuple = PLANTED  # targets swept
    depths: tuple = (1, 2, 3, 4, 5)  # hidden layers tried
    window: int | None = None  # a target with a known depth L* (planted) is swept over L* − window ..
    # L* + window (from 1) instead of `depths`; None: every target over `depths`
    seeds: int = 3  # networks per depth (the interval comes from them); a multiple of `members`
    ratio_res: int = 64  # resolution of the PNG compression ratio (one resolution for every target)
    tol: float = 1e-9  # depths whose mean score is within tol of the best are tied
    processes: int = 1  # local worker processes (1: in-process); results do not depend on it
    scale: str = "quick"  # the preset this config came from

    # reference: what chunks depth_picbreeder and depth_planted of examples/sweeps/reference.toml run
    # (depth_regime.reference_chunks() builds them from this preset) — the Picbreeder targets at depths 2..16, the twelve
    # planted ones at L* ± 3; 64×64, 5 networks, 2,000 steps, 10 SP rounds of 200 steps (the other SP
    # settings are DEFAULT_SP's), 8 δ on 200 weights
    # fmt: off
    @staticmethod
    def REFERENCE() -> dict:
        """The reference preset's entries (what the stored depth chunks ran)."""
        return {"targets": PICBREEDER + PLANTED_REFERENCE, "depths": tuple(range(2, 17)), "window": 3, "seeds": 5,
                "members": 5, "width": 12, "res": 64, "steps": 2000, "lr": 3e-3,
                "sp": replace(DEFAULT_SP, rounds=10, retrain_steps=200), "max_params": 200, "deltas": DEFAULT_DELTAS,
                "train_path": "fast"}  # the path the stored chunks were trained on

    # closer to the paper: depths 1..12, 10 seeds, long training, every weight scored
    @staticmethod
    def FULL() -> dict:
        """The full preset's entries (closer to the paper)."""
        return {"depths": tuple(range(1, 13)), "seeds": 10, "width": 16, "res": 64, "steps": 5000, "lr": 3e-3,
                "sp": replace(DEFAULT_SP, rounds=10, retrain_steps=500), "deltas": DEFAULT_DELTAS,
                "max_params": None, "members": 1}
    # fmt: on

    def __post_init__(self):
        super().__post_init__()
        if self.seeds % self.members:
            raise DepthError(f"seeds = {self.seeds} is not a multiple of members = {self.members}; make it one")


# ---------------------------------------------------------------------------------------------
# One run (sweep run function `depth_point`)


def parse_point(config: dict) -> Point:
    """One run's config: `Point` with the entries `config` gives (the others at their defaults)."""
    return configure(Point(), config, "depth_point")


def sp_network(cfg: Point, on_round=None):
    """Train a population of `members` dense networks (independent initialisations drawn from
    `seed`) and prune each with SP (`on_round`: SP's per-round callback, `volratio.prune.sp`); returns
    `(net, target, image, dense_loss (K,), sp_result)`."""
    target = get_target(cfg.target)
    img = target.image(cfg.res)  # (res, res, 3)
    net = CoordMLP(
        Arch.uniform(cfg.depth, cfg.width, cfg.activation),
        head=getattr(target, "head", "hsv"),
        population=cfg.members,
        seed=cfg.seed,
    )
    tc = TrainConfig(
        steps=cfg.steps,
        optimizer=cfg.optimizer,
        lr=cfg.lr,
        muon_lr=cfg.muon_lr,
        adamw_lr=cfg.adamw_lr,
        device=cfg.device,
        path=cfg.train_path,
    )
    dense = train(net, img, tc).final_loss
    pr = sp(net, img, cfg.sp_config(cfg.seed, tc), on_round=on_round) if cfg.sp.rounds > 0 else None
    return net, target, img, np.asarray(dense, dtype=np.float64), pr


def sp_metrics(net, cfg: Point, dense_loss, pr) -> dict:
    """Per member: `collapsed` (bool) and `sp_stop` (SP's stop reason; "no pruning" without SP)."""
    if pr is None:
        flags = collapsed(net, cfg.res, dense_loss, dense_loss)
        return {"collapsed": [bool(f) for f in flags], "sp_stop": ["no pruning"] * net.population}
    return {"collapsed": [bool(f) for f in pr.collapsed], "sp_stop": list(pr.extras["stop"])}


# the metrics a run stores about its scores, one entry per member (re-computed by `results verify`)
SCORE_METRICS = ("score", "scores", "base_kept")


def emc2_config(cfg: Settings, member: int = 0) -> EMC2Config:
    """The EMC2 settings of a run's member `member`: the run's δ, resolution, subsample and device,
    float64 arithmetic (the exact engine)."""
    return EMC2Config(deltas=tuple(float(d) for d in cfg.deltas), res=cfg.res, max_params=cfg.max_params,
                      seed=cfg.seed, member=member, device=cfg.device, dtype="float64")  # fmt: skip


def emc2_of(net, cfg: Point, member: int = 0):
    """The EMC2 result of one member under `cfg.judge` (`volratio.emc2.score`; the "ssim" judge's
    calibration seeded by `CALIBRATION_SEED`)."""
    ec = emc2_config(cfg, member)
    js = emc2.judges_for(net, [cfg.judge], cfg.target, ec, calibration_seed=CALIBRATION_SEED)
    return emc2.score(net, js, emc2.target_label(cfg.target), ec)[0]


@functools.lru_cache(maxsize=64)
def png_ratio_at(target: str, res: int) -> float:
    """The PNG compression ratio of `target` at `res` (`volratio.depth.complexity.png_ratio`), cached."""
    return float(png_ratio(target, res).ratio)


def point(config: dict) -> dict:
    """SP networks at one depth. Metrics, one list entry per member: `score` (EMC2 AUC), `scores`
    (S per δ), `loss` (MSE after SP), `dense_loss`, `nonzero`, `collapsed` (SP left a flat image
    or lost the fit: `volratio.prune.collapsed`), `sp_stop` (why SP stopped); and `live_units`
    (first member), `judge`, `ratio` (the target's PNG ratio at `res`), `base_kept` (per member:
    the judge says its unperturbed image shows the label). Artifact: `net` (the population)."""
    cfg = parse_point(config)
    net, target, img, dense_loss, pr = sp_network(cfg)
    loss = pr.final_loss if pr is not None else dense_loss
    results = [emc2_of(net, cfg, k) for k in range(net.population)]
    out = {
        "score": [float(r.auc) for r in results],
        "scores": [[float(s) for s in r.scores] for r in results],
        "loss": [float(x) for x in loss],
        "dense_loss": [float(x) for x in dense_loss],
        "nonzero": [int(n) for n in net.nonzero()],
        "live_units": [int(u) for u in net.live_units()[0]],
        "judge": results[0].judge,
        "ratio": png_ratio_at(cfg.target, cfg.res),
    }
    out.update(sp_metrics(net, cfg, dense_loss, pr))
    out["base_kept"] = [bool(r.base_kept) for r in results]  # the judge: the member draws the label
    if cfg.keep_net:
        out["net"] = net.to("cpu")
    return out


# ---------------------------------------------------------------------------------------------
# The depths of a sweep


MAX_SWEEP_DEPTH = 256  # deeper coordinate networks than this are far outside the regime studied


def parse_depths(text: str) -> tuple:
    """`"2..6"` → (2, 3, 4, 5, 6); `"1,3,5"` → (1, 3, 5)."""
    try:
        if ".." in text:
            a, b = text.split("..")
            out = tuple(range(int(a), int(b) + 1))
        else:
            out = tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise DepthError(f"depths {text!r}: write A..B (e.g. 1..6) or a comma-separated list (e.g. 1,3,5)") from None
    if not out or min(out) < 1 or max(out) > MAX_SWEEP_DEPTH:
        raise DepthError(f"depths {text!r}: give at least one depth, each in [1, {MAX_SWEEP_DEPTH}]")
    return out


def depths_of(target: str, cfg: Config) -> tuple:
    """The depths `target` is swept over: `cfg.depths`, or with `cfg.window` the depths around a
    planted target's L* (from 1)."""
    true = getattr(get_target(target), "depth", None) if cfg.window is not None else None
    if true is None:
        return tuple(cfg.depths)
    return tuple(range(max(1, true - cfg.window), true + cfg.window + 1))
