"""Experiment `emc2_bench`: EMC2 scores of Picbreeder, FER's dense SGD, our dense and our SP networks.

For each Picbreeder target, four networks are scored with `volratio.emc2.score` (under
the config's judge, default the calibrated one of `volratio.judges`): the layerized genome (also on its
genome connections alone), the FER paper's dense SGD network, and a dense population trained here
on the three targets at once, before and after SP (`volratio.prune.prune(..., "sp")`).

`run(cfg) -> Result`: `Result.table` is tidy — one row per network × target × δ with S(θ; δ), the
AUC, the judge threshold and counts; extras: `results` ((kind, target) → `EMC2Result`), `genome`
(target → (δ, S, AUC) on the genome connections), `dense`/`sp` (the trained populations).

Chapter: "EMC2-Bench" (book/emc2.md); the claim "picbreeder-vs-sgd".
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass, field, replace

import pandas as pd
import torch

from .. import emc2
from ..data import picbreeder
from ..data.anchors import anchor_image
from ..data.specs import load_network
from ..data.targets import get_target
from ..emc2 import DEFAULT_DELTAS, EMC2Config
from ..emc2.reading import Reading
from ..judges import DEFAULT_JUDGE, JUDGES, check_res
from ..nets import coords
from ..prune import collapsed, prune
from ..prune.similarity_pruning import SPConfig
from ..runs.plan import STORED_JUDGE, Chunk
from ..train import TrainConfig, mse_per_network, new_network
from ..train import train as train_network
from ..util.device import device_name
from ..util.limits import at_least, nonzero, one_of, parsed_by
from ..util.presets import ConfigError, Presets, configure, preset
from ._base import PAPER, ExperimentError, Result, Trained, check_reading, judge_of

# allowed values, checked when a config is parsed (`volratio.util.limits`); None passes where allowed
LIMITS = {
    "res": at_least(2), "deltas": nonzero(), "max_params": at_least(1), "dtype": one_of("float32", "float64"),
    "dense_depth": at_least(1), "dense_width": at_least(1), "judge": one_of(*JUDGES),
    "judges": one_of(*JUDGES), "targets": one_of("skull", "butterfly", "apple"), "device": parsed_by(device_name),
    "seed": at_least(0),
}  # fmt: skip

KINDS = ("Picbreeder", "FER SGD", "dense (ours)", "SP (ours)")


@dataclass(frozen=True)
class Config(Presets):
    targets: tuple = ("skull", "butterfly", "apple")  # Picbreeder targets
    res: int = 32  # image size of the EMC2 renders (the paper's is unknown; FER renders 256)
    deltas: tuple = DEFAULT_DELTAS  # perturbation sizes δ, both signs
    max_params: int | None = None  # EMC2 on every non-zero weight; a number: a seeded subsample of that many
    dtype: str = "float32"  # engine arithmetic (float64 = the exact reference)
    dense_depth: int = 6  # our dense networks: hidden layers
    dense_width: int = 16  # … units per layer
    train: TrainConfig = field(  # … their training (Adam, full batch; "auto" path: the fused kernel on the CPU,
        # else the fast path), on the run's `device`; SP retrains with it too (sp.retrain_steps at
        # sp.retrain_lr_factor × its rate)
        default_factory=lambda: TrainConfig(steps=600, path="auto")
    )
    sp: SPConfig = field(default_factory=SPConfig.quick)  # SP applied to our dense networks; its `seed` and
    # `train` are the run's (`seed`, `train`), never given
    judge: str = DEFAULT_JUDGE  # EMC2 judge (volratio.judges.make_judge): label-anchored on the target image, gated
    judges: tuple = ()  # more judges to score the same perturbed images under (rows of their own; `judge` decides)
    seed: int = 0  # initialisation, SP's choices, the EMC2 subsample and the "ssim" judge's calibration
    device: str = "cpu"  # training and scoring (CPU: bit-for-bit repeatable)
    scale: str = "quick"  # the preset this config came from

    LIMITS = LIMITS
    # entries the run sets itself (`train_config`, `sp_config`): never in the complete config a run is
    # keyed by (`volratio.util.presets.complete`)
    RUN_SET = ("train.device", "sp.seed", "sp.train")

    def __post_init__(self):
        check_res((self.judge, *self.judges), self.res, f"res = {self.res}: images", ExperimentError)  # before any work
        if self.train.device != TrainConfig().device:
            raise ConfigError(
                f"train.device = {self.train.device!r}: the run trains on its `device`; set device instead"
            )
        if self.sp.seed != SPConfig().seed:
            raise ConfigError(f"sp.seed = {self.sp.seed}: the run seeds SP with its own `seed`; set seed instead")
        if self.sp.train != SPConfig().train:
            raise ConfigError("sp.train: the run's SP retrains with its `train`; set train.* instead")

    def train_config(self) -> TrainConfig:
        """The training of our dense networks: `train` on the run's `device`."""
        return replace(self.train, device=self.device)

    def sp_config(self) -> SPConfig:
        """SP as the run uses it: `sp` seeded by `seed`, retraining with `train_config()`."""
        return replace(self.sp, seed=self.seed, train=self.train_config())

    # quick (the book's live scale): a seeded sample of 150 weights per network. Every weight of FER's
    # apple (46,474) alone costs ~10 CPU-minutes per pass at 32×32 (`benchmarks/emc2_engine.py`
    # measures the engine's rate), against seconds for the sample; `max_params=None` scores them all
    QUICK = {"max_params": 150}
    # reference: what chunks emc2 and emc2_dense of examples/sweeps/reference.toml run
    # (its `reference_chunks()` builds them from this preset) — 64×64, 8 δ, up to 5,000 weights per network
    # (every non-zero weight but FER's apple), 2,000 dense steps on the fast path, SP that keeps the fit
    # (10 rounds × 200 steps, 2 units per round, the defaults' compensation, retraining rate and guard),
    # scored under the anchored judge and two more; their manifests hold the CPU time
    REFERENCE = staticmethod(
        lambda: {
            "res": 64,
            "max_params": 5000,
            "train": TrainConfig(steps=2000, path="fast"),
            "sp": SPConfig(rounds=10, retrain_steps=200, per_round=2),
            "judges": ("stability", "anchored-ssim"),
        }
    )
    # every non-zero weight at 256×256, in float64, on a GPU (`--device cpu` of `volratio reference run`
    # runs it on the CPU)
    FULL = staticmethod(
        lambda: {
            "device": "cuda",
            "res": 256,
            "max_params": None,
            "dtype": "float64",
            "train": TrainConfig(steps=10_000, path="auto"),
            "sp": SPConfig.full(),
        }
    )


def emc2_config(cfg: "Config | Point", member: int = 0) -> EMC2Config:
    """The EMC2 settings of a benchmark config (or one point) for member `member`."""
    return EMC2Config(**_settings(cfg), member=member)


def _settings(cfg: "Config | Point") -> dict:
    """The EMC2 settings of a benchmark config (or one point), every member's."""
    return dict(deltas=tuple(float(d) for d in cfg.deltas), res=cfg.res, max_params=cfg.max_params, seed=cfg.seed,
                device=cfg.device, dtype=cfg.dtype)  # fmt: skip


def judge_threshold(r, label: str) -> float:
    """The threshold the judge of `r` (an `EMC2Result`) applied to `label` (NaN for model judges)."""
    s = r.judge_settings
    if "threshold" in s:  # "ssim": one threshold, calibrated on the network's own image
        return float(s["threshold"])
    th = s.get("thresholds", {})  # "calibrated": per label, "*" for the others
    return float(th.get(label, th.get("*", float("nan"))))


def train_ours(cfg: Config):
    """Our dense population (one member per target) and its SP-pruned copy."""
    images = torch.stack([get_target(f"picbreeder:{n}").image(cfg.res) for n in cfg.targets])  # (T, res, res, 3)
    dense = new_network(
        get_target(f"picbreeder:{cfg.targets[0]}"),
        depth=cfg.dense_depth,
        width=cfg.dense_width,
        population=len(cfg.targets),
        seed=cfg.seed,
    )
    train_network(dense, images, cfg.train_config())
    sp_net = copy.deepcopy(dense)
    prune(sp_net, images, "sp", cfg.sp_config())
    return dense, sp_net, images


def ours_collapsed(dense, sp_net, images, targets) -> dict:
    """`{(kind, target): bool}`: which of our dense and SP networks (member k drew `targets[k]`)
    collapsed (`volratio.prune.collapsed`, against the dense network's MSE)."""
    res, d = int(images.shape[-2]), mse(dense, images)
    out = {}
    for kind, net in (("dense (ours)", dense), ("SP (ours)", sp_net)):
        for k, f in enumerate(collapsed(net, res, d, mse(net, images))):
            out[(kind, targets[k])] = bool(f)
    return out


def train(cfg: Config | None = None) -> Trained:
    """The benchmark's networks: per target the Picbreeder network (layerized genome) and FER's SGD
    network, and our dense population trained here with its SP-pruned copy (`train_ours`), with
    which of ours collapsed. `networks`: `(kind, target) -> (CoordMLP, member)`."""
    cfg = cfg or Config.quick()
    t0 = time.perf_counter()
    networks, layerized = {}, {}
    for name in cfg.targets:
        layerized[name] = picbreeder.layerize(name)
        networks[("Picbreeder", name)] = (layerized[name].net, 0)
        networks[("FER SGD", name)] = (load_network(f"fer-sgd:{name}"), 0)
    dense, sp_net, images = train_ours(cfg)
    for k, name in enumerate(cfg.targets):
        networks[("dense (ours)", name)] = (dense, k)
        networks[("SP (ours)", name)] = (sp_net, k)
    flags = ours_collapsed(dense, sp_net, images, cfg.targets)
    rows = [{"network": kind, "target": name, "collapsed": flags.get((kind, name))} for kind, name in networks]
    return Trained("emc2_bench", cfg, pd.DataFrame(rows), [cfg.seed], time.perf_counter() - t0, networks=networks,
                   extras={"layerized": layerized, "dense": dense, "sp": sp_net, "images": images})  # fmt: skip


def score(trained: Trained, reading: Reading = PAPER) -> Result:
    """Every network of the benchmark scored under `reading`: its judge decides (default: the
    config's `judge`), the config's `judges` are scored beside it on the same perturbed images, and
    the reading's anchor, δ's scale, weights, engine and device apply to the config's EMC2 settings.
    One row per network × target × judge × δ; extras `results` (`(kind, target) -> EMC2Result` under
    the deciding judge) and `genome` (the Picbreeder networks' scores by genome parameter)."""
    check_reading(reading)
    cfg, t0 = trained.config, time.perf_counter()
    judge = judge_of(reading, cfg.judge)
    names = list(dict.fromkeys([judge, *cfg.judges]))
    flags = {(r.network, r.target): r.collapsed for r in trained.table.itertuples()}
    judged, results, genome = {}, {}, {}  # judged: (kind, target) -> {judge: EMC2Result}
    for (kind, name), (net, member) in trained.networks.items():
        spec, ec = f"picbreeder:{name}", EMC2Config(**reading.emc2(_settings(cfg)), member=member)
        anchor = None if reading.anchor == "image" else anchor_image(spec, ec.res, reading.anchor)
        judges = emc2.judges_for(net, names, spec, ec, anchor=anchor)
        judged[(kind, name)] = dict(zip(names, emc2.score(net, judges, name, ec)))
        results[(kind, name)] = judged[(kind, name)][judge]
        if kind == "Picbreeder":
            lay = trained.extras["layerized"][name]
            genome[name] = emc2.summarise(results[(kind, name)].table, emc2.params_of(lay.net, "genome", lay))
    rows = [
        {
            "network": kind,
            "target": name,
            "delta": float(d),
            "S": float(s),
            "auc": float(r.auc),
            "n_params": int(r.n_params),
            "n_nonzero": int(r.n_nonzero),
            "judge": r.judge,
            "threshold": judge_threshold(r, name),
            "collapsed": flags.get((kind, name)),  # our networks: flat image or lost fit; None: not ours
        }
        for (kind, name), by in judged.items()
        for r in by.values()
        for d, s in zip(r.deltas, r.scores)
    ]
    return trained.result(
        pd.DataFrame(rows), judge, time.perf_counter() - t0, extras={"results": results, "genome": genome}
    )


def run(cfg: Config | None = None) -> Result:
    """The benchmark (see the module docstring): its networks trained, then scored."""
    return score(train(cfg), PAPER)


def auc_table(result: Result):
    """AUC per network kind (rows, in `KINDS` order) × target (columns), under the deciding judge."""
    t = (
        result.table[result.table["judge"] == result.judge]
        .drop_duplicates(["network", "target"])
        .pivot(index="network", columns="target", values="auc")
    )
    return t.reindex([k for k in KINDS if k in t.index])


def mse(net, images):
    """`(K,)` MSE of each member of `net` against `images` `(K, res, res, 3)` (numpy), on the network's device."""
    K, res, dev = images.shape[0], images.shape[1], net.weights[0].device
    return mse_per_network(net, coords(res, device=dev), images.reshape(K, -1, 3).to(dev)).detach().cpu().numpy()


# ---------------------------------------------------------------------------------------------
# One network as a sweep run (the reference store)

NETWORKS = {"picbreeder": "Picbreeder", "fer-sgd": "FER SGD"}  # `network` of a point → the table's kind


@dataclass(frozen=True)
class Point:
    """One network of the benchmark scored on its own: the run function `emc2_point`."""

    target: str = "skull"  # Picbreeder target
    network: str = "picbreeder"  # "picbreeder" (the layerized genome) or "fer-sgd" (FER's dense SGD network)
    res: int = 64  # image size of the EMC2 renders
    deltas: tuple = DEFAULT_DELTAS  # perturbation sizes δ, both signs
    max_params: int | None = None  # seeded uniform subsample of non-zero weights (None = every one)
    dtype: str = "float32"  # engine arithmetic
    seed: int = 0  # the subsample and the "ssim" judge's calibration
    device: str = "cpu"  # CPU: bit-for-bit repeatable
    judge: str = DEFAULT_JUDGE  # EMC2 judge (volratio.judges.make_judge): label-anchored on the target image, gated

    LIMITS = LIMITS

    def __post_init__(self):
        if self.network not in NETWORKS:
            raise ExperimentError(f"network={self.network!r}: choose one of {', '.join(NETWORKS)}")
        if self.target not in ("skull", "butterfly", "apple"):
            raise ExperimentError(f"target={self.target!r}: choose skull, butterfly or apple")

        if self.judge not in JUDGES:
            raise ExperimentError(f"judge={self.judge!r}: choose one of {', '.join(JUDGES)}")
        check_res(self.judge, self.res, f"res = {self.res}: images", ExperimentError)  # before any work


def parse_point(config: dict) -> Point:
    return configure(Point(), config, "emc2_point")


def network_of(cfg: Point):
    """The network a `Point` scores: the layerized genome or FER's SGD network of its target."""
    return picbreeder.layerize(cfg.target).net if cfg.network == "picbreeder" else load_network(f"fer-sgd:{cfg.target}")


def point(config: dict) -> dict:
    """EMC2 of one network. Metrics: `scores` (S per δ), `auc`, `auc_se` (standard error of the AUC
    from the parameter subsample, finite-population corrected: 0 when every weight is scored),
    `n_params`, `n_nonzero`, `judge`, `threshold`; under the cross-fitted judge ("anchored-xfit")
    `fold`, the fold whose rule scored it ("all" for a network without verdict rows). Artifact:
    `verdicts` `(n_params, n_δ)` uint8."""

    cfg = parse_point(config)
    spec = f"picbreeder:{cfg.target}"
    net = network_of(cfg)
    ec = emc2_config(cfg)
    # the network's name in the anchored verdict set: the cross-fitted judge leaves its rows out
    js = emc2.judges_for(net, [cfg.judge], spec, ec, network=f"{cfg.network}:{cfg.target}")
    r = emc2.score(net, js, cfg.target, ec)[0]
    return {
        "target": cfg.target,
        "network": NETWORKS[cfg.network],
        "deltas": [float(d) for d in r.deltas],
        "scores": [float(s) for s in r.scores],
        "auc": float(r.auc),
        "auc_se": r.auc_se(),
        "n_params": int(r.n_params),
        "n_nonzero": int(r.n_nonzero),
        "judge": r.judge,
        "threshold": judge_threshold(r, cfg.target),
        "verdicts": r.verdict_matrix(),
        **({"fold": r.judge_settings["fold"]} if "fold" in r.judge_settings else {}),  # the cross-fitted judge's
    }


def parse_dense_point(config: dict) -> Config:
    """A `Config` from a preset (`scale`, default reference) and overrides (`seed`, `train.steps`, …)."""
    over = dict(config)
    return preset(Config, over.pop("scale", "reference"), **over)


def dense_point(config: dict) -> dict:
    """Our dense population (one member per target) and its SP-pruned copy for one seed, each
    member scored on every non-zero weight (or `max_params`): the run function `emc2_dense`.
    Metrics: `rows`, one per network × target (`network`, `target`, `auc`, `auc_se`, `scores`,
    `deltas`, `n_params`, `n_nonzero`, `threshold`, `mse`, `seed`, `collapsed`; under the
    cross-fitted judge `fold`, "all": the rule fitted on every verdict row)."""
    cfg = parse_dense_point(config)
    dense, sp_net, images = train_ours(cfg)
    flags = ours_collapsed(dense, sp_net, images, cfg.targets)
    rows = []
    for kind, net in (("dense (ours)", dense), ("SP (ours)", sp_net)):
        losses = mse(net, images)
        for k, name in enumerate(cfg.targets):
            ec = emc2_config(cfg, k)
            # no network name: our networks are in no verdict row, so the cross-fitted judge uses
            # the rule fitted on every row (its fold "all", stored below)
            r = emc2.score(net, emc2.judges_for(net, [cfg.judge], f"picbreeder:{name}", ec), name, ec)[0]
            rows.append(
                {
                    "network": kind,
                    "target": name,
                    "seed": cfg.seed,
                    "auc": float(r.auc),
                    "auc_se": r.auc_se(),
                    "deltas": [float(d) for d in r.deltas],
                    "scores": [float(s) for s in r.scores],
                    "n_params": int(r.n_params),
                    "n_nonzero": int(r.n_nonzero),
                    "judge": r.judge,
                    "threshold": judge_threshold(r, name),
                    "mse": float(losses[k]),
                    "collapsed": flags[(kind, name)],
                    **({"fold": r.judge_settings["fold"]} if "fold" in r.judge_settings else {}),
                }
            )
    return {"rows": rows}


# ---------------------------------------------------------------------------------------------
# The reference plan's chunks (volratio.runs.plan writes them to examples/sweeps/reference.toml)


# The one network of chunk emc2 scored on a seeded subsample (the preset's `max_params`): FER's apple,
# 46,474 weights; every other network is scored on every non-zero weight.
SUBSAMPLED = ("fer-sgd", "apple")


def reference_chunks() -> dict:
    """The chunks of the reference plan that this experiment owns (`volratio.runs.plan.Chunk`: a
    sweep spec and why it runs what it runs): the reference preset's networks, each scored under the
    preset's judges, the cross-fitted judge and the default one (each judge a run)."""
    ref = Config.reference()
    judges = [STORED_JUDGE, *ref.judges, "anchored-xfit", DEFAULT_JUDGE]
    return {
        "emc2": Chunk(
            run="emc2_point",
            why=(
                'EMC2 of the three Picbreeder networks and FER\'s three SGD networks (claim "picbreeder-vs-sgd"), '
                "as the emc2_bench experiment's reference preset scores them: 64×64, 8 δ, every non-zero weight "
                "except FER's apple (46,474 weights; a seeded uniform subsample of 5,000, its AUC's standard "
                "error in the run's `auc_se`). Judges: the label-anchored default, the second label-anchored "
                "judge (SSIM instead of RMSE) and the self-anchored `stability` measure (how much the verdict "
                "depends on the judge); the networks are fixed, so another judge is another cheap run.\n"
                'Claim 1 under the cross-fitted judge too ("anchored-xfit"): each run stores its fold (emc2_point'
                " names its networks picbreeder:TARGET and fer-sgd:TARGET, as the verdict set does; emc2_dense's "
                'networks are in no verdict row: fold "all"). The twin chunks: volratio.runs.score.'
            ),
            seeds=(ref.seed,),
            cases=[
                {"network": n, "target": t, **({"max_params": ref.max_params} if (n, t) == SUBSAMPLED else {})}
                for n in NETWORKS
                for t in ref.targets
            ],
            config={"res": ref.res},
            grid={"judge": judges},
        ),
        "emc2_dense": Chunk(
            run="emc2_dense",
            why=(
                'Our own dense networks on the Picbreeder targets (claim "picbreeder-vs-sgd", its "dense SGD" '
                "side trained here): the emc2_bench experiment's reference preset — a population of 3 (one per "
                "target), depth 6 × width 16, 2,000 Adam steps at 64×64, then SP — scored on every non-zero "
                "weight (≤ 1,392 per network, under the preset's 5,000 cap), 5 seeds, one run per seed. SP keeps "
                "the fit as in the depth chunks (10 rounds × 200 steps at 0.1 × lr, 2 units per round, "
                "compensation, the 2× guard). Judges as chunk emc2 (each judge a run: training is repeated, bit "
                "for bit, for the second)."
            ),
            seeds=[0, 1, 2, 3, 4],
            threads=1,
            config={
                "scale": "reference",
                "train.path": "fast",
                "sp.loss_factor": 2.0,
                "sp.retrain_lr_factor": 0.1,
                "sp.compensate": "span",
                "sp.per_round": 2,
                "sp.rounds": 10,
                "sp.retrain_steps": 200,
            },
            grid={"judge": judges},
        ),
    }
