"""Experiment `twins`: Picbreeder networks and their SGD twins.

For each Picbreeder target, three networks of the same architecture draw the same image: the
layerized genome (evolved, sparse), the FER paper's dense network trained with Adam for 100,000
steps (`fer_sgd.npz`), and a dense network trained here with the same recipe — LeCun-normal init,
Adam, the gradient normalised to unit norm, MSE on RGB — at the chosen scale. The chapter
"Picbreeder networks and their SGD twins" shows their feature maps and loss curves.

`run(cfg) -> Result`: `Result.table` has one row per target × network (its MSE at `cfg.res`);
`Result["twins"]` maps each target to its `Twins` (the three networks and the loss curves).

The training entries stay flat (`steps`, `lr`, `lr_apple`, …): FER's recipe trains apple at another
rate, which one nested `TrainConfig` cannot say, and the logging interval follows `steps`.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field

import numpy as np
import pandas as pd
import torch

from .. import emc2
from ..data import picbreeder
from ..data.anchors import ANCHORS
from ..emc2 import DEFAULT_DELTAS
from ..emc2.source import Scoring
from ..judges.registry import JUDGES, check_res
from ..nets import CoordMLP
from ..runs.plan import Chunk
from ..train import PATHS, TrainConfig
from ..train import train as train_network
from ..util.device import device_name
from ..util.limits import above, at_least, nonzero, one_of, parsed_by
from ..util.presets import Presets, configure
from ..util.verdicts import Estimate
from ._base import PAPER, ExperimentError, Result, Trained, unscored


@dataclass
class Config(Presets):
    targets: tuple = ("skull", "butterfly", "apple")  # Picbreeder targets
    res: int = 32  # training resolution (FER: 256)
    steps: int = 800  # Adam steps (FER: 100,000)
    lr: float = 3e-3  # FER: 3e-3 (apple 3e-4); with grad_norm the step size is lr-sized
    lr_apple: float = 3e-4  # FER used a lower rate for apple
    grad_norm: bool = True  # FER: gradient divided by its global L2 norm before each step
    seed: int = 0  # LeCun-normal init seed
    device: str = "auto"  # where ours trains: CUDA when available (the MSEs are taken on the CPU)
    scale: str = "quick"  # the preset this config came from

    # allowed values, checked when a config is parsed (`volratio.util.limits`)
    LIMITS = {"res": at_least(2), "steps": at_least(1), "lr": above(0), "lr_apple": above(0), "seed": at_least(0),
              "targets": one_of("skull", "butterfly", "apple"), "device": parsed_by(device_name)}  # fmt: skip

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


def train(config: Config | None = None) -> Trained:
    """Each target's Picbreeder network, FER's SGD network and our twin trained here, with each
    network's MSE against the target at `res`; extras `twins` (name -> `Twins`)."""
    cfg = config or Config.quick()
    out = {}
    t0 = time.perf_counter()
    for name in cfg.targets:
        pb = picbreeder.layerized(name)
        sgd = picbreeder.fer_network(name, "sgd")
        target = target_at(name, cfg.res)
        ours = CoordMLP(pb.arch, head="hsv", seed=cfg.seed)
        ours.provenance = {"made_by": "volratio.experiments.twins.run", "target": name, "config": asdict(cfg)}
        lr = cfg.lr_apple if name == "apple" else cfg.lr
        tc = TrainConfig(
            steps=cfg.steps, lr=lr, grad_norm=cfg.grad_norm, log_every=max(1, cfg.steps // 200), device=cfg.device
        )
        r = train_network(ours, target, tc)
        mse = {}
        with torch.no_grad():
            for label, net in (("picbreeder", pb), ("fer_sgd", sgd), ("ours", ours)):
                mse[label] = float(((net.render(cfg.res)[0].cpu() - target) ** 2).mean())
        out[name] = Twins(name, pb, sgd, ours, r.steps, r.losses[:, 0], picbreeder.fer_losses(name), mse)
    table = pd.DataFrame(
        [
            {"target": t.name, "network": label, "mse": v, "res": cfg.res}
            for t in out.values()
            for label, v in t.mse.items()
        ]
    )
    return Trained("twins", cfg, table, [cfg.seed], time.perf_counter() - t0, extras={"twins": out})


score = unscored  # the chapter's networks are compared by fit here; their EMC2 is the `twin_point` runs'


def run(config: Config | None = None) -> Result:
    """One row per target × network: its MSE (see `train`)."""
    return score(train(config), PAPER)


TwinsConfig = Config  # the name before volratio.experiments (exercises and old notebooks use it)


def layerization_table(res: int = 256):
    """One row per Picbreeder target: the genome's size, the layerized network's shape and how
    exactly it reproduces the genome's own graph evaluation and `target.png` (float64)."""
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


# ---------------------------------------------------------------------------------------------
# The sixteen-target comparison: one network as a sweep run (the run function `twin_point`)

NETWORKS = ("picbreeder", "twin")  # `network` of a twin point
TWIN_JUDGES = ("anchored", "anchored-ssim", "stability")  # scored on the same perturbed images; the first decides

# allowed values, checked when a config is parsed (`volratio.util.limits`)
LIMITS = {
    "target": one_of(*picbreeder.ALL_NAMES), "network": one_of(*NETWORKS), "res": at_least(2),
    "device": parsed_by(device_name),
    "steps": at_least(1), "lr": above(0), "lr_apple": above(0), "max_params": at_least(1),
    "deltas": nonzero(), "dtype": one_of("float32", "float64"), "seed": at_least(0), "train_path": one_of(*PATHS),
    "anchor": one_of(*ANCHORS),
}  # fmt: skip


@dataclass(frozen=True)
class Point:
    """One network of "Picbreeder vs dense SGD" on any of the sixteen targets, scored on its own.

    `network="picbreeder"` is the target's Picbreeder network (`picbreeder.network`: the layerized
    genome, or the fork's layered network for the thirteen without a genome); `"twin"` is a dense
    network of that network's own architecture (depth, width and per-unit activations) trained here
    with FER's recipe — LeCun-normal init, Adam on the MSE, the gradient divided by its global L2 norm
    before each step — for `steps` steps at `res` (FER: 100,000 steps at 256×256).

    `anchor` is the image every label-anchored judge compares with (`volratio.data.anchors`): "png"
    (the default), the target's `target.png` at `res` — the twin's training image (`training_image`),
    so that the Picbreeder network and its twins are asked about one image; "image", the target's
    own image, for a Picbreeder target its network's exact render (the reading of the stored
    reference runs, whose twins were trained on the PNG all the same)."""

    target: str = "skull"  # any of the sixteen (volratio.data.picbreeder.ALL_NAMES)
    network: str = "twin"  # "picbreeder" or "twin"
    res: int = 64  # training and EMC2 image size
    steps: int = 2000  # the twin's Adam steps (FER: 100,000)
    lr: float = 3e-3  # FER's rate (the normalised gradient makes each step lr-sized)
    lr_apple: float = 3e-4  # FER used a lower rate for apple
    max_params: int | None = None  # every non-zero weight scored, or a seeded uniform subsample of this many
    deltas: tuple = DEFAULT_DELTAS  # perturbation sizes δ, both signs
    judges: tuple = TWIN_JUDGES  # EMC2 judges, each on the same perturbed images; the first is `auc`
    dtype: str = "float32"  # EMC2 engine arithmetic
    seed: int = 0  # the twin's initialisation and the parameter subsample
    device: str = "cpu"  # CPU: bit-for-bit repeatable
    train_path: str = "auto"  # TrainConfig.path of the twin's training
    keep_net: bool = True  # return the network as the artifact `net` (rescoring, the chapter's images)
    anchor: str = "png"  # what the label-anchored judges compare with: "png" (the training image) or "image"

    LIMITS = LIMITS

    def __post_init__(self):
        unknown = [j for j in self.judges if j not in JUDGES]
        if not self.judges or unknown:
            raise ExperimentError(f"judges={list(self.judges)!r}: give one or more of {', '.join(JUDGES)}")
        check_res(self.judges, self.res, f"res = {self.res}: images", ExperimentError)  # before any training

    @property
    def spec(self) -> str:
        """The target spec the judges are asked about, "picbreeder" and the target's name (one of
        `picbreeder.ALL_NAMES`) joined by a colon."""
        return f"picbreeder:{self.target}"

    def verdict_network(self) -> str | None:
        """The network's name in the anchored verdict set (`volratio.calibration.anchored_set`), by
        which the cross-fitted judge "anchored-xfit" scores it with the rule fitted without its
        verdict rows: the Picbreeder network is the set's `picbreeder:TARGET` (the same
        `picbreeder.network`). None for a twin: it is trained here, and the set holds none of this
        run's networks (its SGD networks are FER's, `fer-sgd:TARGET`), so it gets the rule fitted on
        every row. The judge, not this name, decides which names the set holds."""
        return self.spec if self.network == "picbreeder" else None

    def scoring(self) -> Scoring:
        """How the point scores the network it stores: one network, named as the verdict set names it;
        its scores are checked by re-running it (its metrics are named per judge)."""
        return Scoring(self.spec, 1, self.emc2_config(), (self.verdict_network(),))

    def emc2_config(self) -> emc2.EMC2Config:
        """The EMC2 settings the point scores with (rescoring its stored network reuses them)."""
        return emc2.EMC2Config(deltas=tuple(float(d) for d in self.deltas), res=self.res, max_params=self.max_params,
                               seed=self.seed, device=self.device, dtype=self.dtype)  # fmt: skip


def parse_point(config: dict) -> Point:
    return configure(Point(), config, "twin_point")


target_at = picbreeder.target_png  # `target.png` of a target at `res`×`res` (antialiased bilinear)


def training_image(cfg: Point) -> torch.Tensor:
    """`(res, res, 3)` the image the twin of `cfg.target` is trained on: `target.png` at `cfg.res`."""
    return target_at(cfg.target, cfg.res)


def judge_anchor(cfg: Point) -> torch.Tensor | None:
    """The image the label-anchored judges of `cfg` compare with: under `anchor="png"` the training
    image itself (`training_image`, the same array); None under "image" (the judges take the
    target's own image, `volratio.data.anchors.anchor_image`)."""
    return training_image(cfg) if cfg.anchor == "png" else None


def judges_of(net: CoordMLP, cfg: Point) -> list:
    """The judges `cfg.judges` for `net`, anchored as `cfg.anchor` says; the cross-fitted one told
    the network's name in the verdict set (`Point.verdict_network`)."""
    names = list(dict.fromkeys(cfg.judges))
    return emc2.judges_for(
        net, names, cfg.spec, cfg.emc2_config(), anchor=judge_anchor(cfg), network=cfg.verdict_network()
    )


def train_twin(cfg: Point) -> tuple[CoordMLP, np.ndarray, np.ndarray]:
    """The dense twin of `cfg.target`'s Picbreeder network, trained with FER's recipe: `(net, steps,
    losses)`, the loss logged 50 times."""
    arch = picbreeder.network(cfg.target).arch
    net = CoordMLP(arch, head="hsv", seed=cfg.seed)
    lr = cfg.lr_apple if cfg.target == "apple" else cfg.lr
    tc = TrainConfig(steps=cfg.steps, lr=lr, grad_norm=True, log_every=max(1, cfg.steps // 50), path=cfg.train_path,
                     device=cfg.device)  # fmt: skip
    r = train_network(net, training_image(cfg), tc)
    net.provenance = {"made_by": "volratio.experiments.twins.train_twin", "target": cfg.target, "config": asdict(cfg)}
    return net, r.steps, r.losses[:, 0]


def point(config: dict) -> dict:
    """EMC2 of one network of the sixteen-target comparison under each of `judges`, anchored on
    `anchor`. Metrics: `target`, `network`, `arch`, `mse` (against the training image, `target.png`
    at `res`: under `anchor="png"` the base MSE to the anchor), `n_params`, `n_nonzero`,
    `deltas`, `judge` (the first judge) with its `auc`, `auc_se`, `scores`, `base_kept`, and per judge
    `auc_<judge>`, `auc_se_<judge>`, `scores_<judge>`, `base_kept_<judge>`, and under the cross-fitted
    judge `fold_<judge>` (the fold whose rule scored it, "all" for a network without verdict rows);
    for a twin `loss_steps` and `losses` (its training curve). Artifacts: `verdicts_<judge>`
    `(n_params, n_δ)` uint8, `net`."""
    cfg = parse_point(config)
    if cfg.network == "picbreeder":
        net, curve = picbreeder.network(cfg.target), {}
    else:
        net, steps, losses = train_twin(cfg)
        curve = {"loss_steps": [int(s) for s in steps], "losses": [float(x) for x in losses]}
    with torch.no_grad():
        mse = float(((net.render(cfg.res)[0].cpu() - training_image(cfg)) ** 2).mean())
    ec = cfg.emc2_config()
    names = list(dict.fromkeys(cfg.judges))
    by = dict(zip(names, emc2.score(net, judges_of(net, cfg), cfg.target, ec)))
    first = by[cfg.judges[0]]
    out = {
        "target": cfg.target,
        "network": cfg.network,
        "arch": str(net.arch),
        "mse": mse,
        "n_params": int(first.n_params),
        "n_nonzero": int(first.n_nonzero),
        "deltas": [float(d) for d in first.deltas],
        "judge": cfg.judges[0],
        "auc": float(first.auc),
        "auc_se": first.auc_se(),
        "scores": [float(s) for s in first.scores],
        "base_kept": bool(first.base_kept),
        **curve,
    }
    for j, r in by.items():
        out.update(
            {
                f"auc_{j}": float(r.auc),
                f"auc_se_{j}": r.auc_se(),
                f"scores_{j}": [float(s) for s in r.scores],
                f"base_kept_{j}": bool(r.base_kept),
                f"verdicts_{j}": r.verdict_matrix(),
                **({f"fold_{j}": r.judge_settings["fold"]} if "fold" in r.judge_settings else {}),
            }
        )
    if cfg.keep_net:
        out["net"] = net.to("cpu")
    return out


# how `paired` counts a network that never draws its label: "zero" decides the claim (a network that
# does not draw its label scores 0, `volratio.report.evidence`); "excluded" is the reading stated beside it
FAILED = ("excluded", "zero")


def rescored_as(table, rescored, judge: str = "anchored"):
    """`twin_point` rows (`table`, with their store `key`) with their scores under `judge` replaced
    by those of their rescore runs (`rescored`: `volratio.runs.stored.rescore_table` rows of the
    same chunks under one anchor and reading of δ): `auc_<judge>`, `scores_<judge>`,
    `base_kept_<judge>`, `auc_se_<judge>` and `anchor_rmse` (each network's base RMSE to the
    anchor). The standard error is 0 where every non-zero weight was scored (the rescore scored
    every weight, or the run's sample held them all) and NaN otherwise: a rescore stores no
    per-weight verdicts, so the spread its subsample implies under `judge` is not known. A row
    without a rescore run is an `ExperimentError` naming the command that makes it."""
    by = rescored.set_index("source") if len(rescored) else None
    missing = [k for k in table.key if by is None or k not in by.index]
    if missing:
        raise ExperimentError(
            f"{len(missing)} twin runs have no rescore run (e.g. {missing[0]}); rescore their chunks "
            f"(`volratio reference rescore twins16 --judge {judge} --anchor png`, and twins16_picbreeder)"
        )
    out = table.copy()
    r = by.loc[list(table.key)]
    out[f"auc_{judge}"] = r.score.to_numpy()
    out[f"scores_{judge}"] = list(r.scores)
    out[f"base_kept_{judge}"] = r.base_kept.astype(bool).to_numpy()
    every = r.max_params.isna().to_numpy() | (table.n_params >= table.n_nonzero).to_numpy()
    out[f"auc_se_{judge}"] = np.where(every, 0.0, np.nan)
    out["anchor_rmse"] = r.anchor_rmse.to_numpy()
    return out


def paired(table, judge: str = "anchored", z: float = 1.96, failed: str = "excluded"):
    """The sixteen-target comparison, one row per target, from `twin_point` rows (`table`: both
    chunks' rows, `network` "picbreeder" or "twin"): the Picbreeder network's AUC under `judge` with
    the interval its parameter subsample implies (± z·se), its twins' mean AUC with its t-interval,
    `diff` = Picbreeder − twins, and the counts.

    A network that never draws its label (`base_kept_<judge>` False) is a failed network; `failed`
    says how it counts. "excluded" (the deciding reading): the twins' mean is over the twins that
    draw their target, and a target is left out (`used` False, `why` says which) when its
    Picbreeder network does not draw it or no twin does — a network that does not draw its target
    scores 0 under a label-anchored judge, so it would say nothing about robustness. "zero": every
    network counts with AUC 0, and no target is left out."""
    if failed not in FAILED:
        raise ExperimentError(f"failed={failed!r}: choose one of {', '.join(FAILED)}")
    auc, se, kept = f"auc_{judge}", f"auc_se_{judge}", f"base_kept_{judge}"
    if auc not in table:
        raise ExperimentError(f"the twin runs were not scored under {judge!r} (no column {auc!r})")
    rows = []
    for target in dict.fromkeys(table.target):
        sel = table[table.target == target]
        pb, tw = sel[sel.network == "picbreeder"], sel[sel.network == "twin"]
        if len(pb) != 1 or tw.empty:
            continue
        pb = pb.iloc[0]
        drawn = tw[tw[kept].astype(bool)]
        counted = drawn if failed == "excluded" else tw
        twin_auc = counted[auc].where(counted[kept].astype(bool), 0.0)
        pb_auc = float(pb[auc]) if bool(pb[kept]) else 0.0
        row = {"target": target, "arch": pb.arch, "Picbreeder MSE": float(pb.mse), "twins": len(tw),
               "twins drawn": len(drawn), "twin MSE (median)": float(tw.mse.median()),
               "Picbreeder drawn": bool(pb[kept]), "Picbreeder": pb_auc, "Picbreeder lo": pb_auc - z * float(pb[se]),
               "Picbreeder hi": pb_auc + z * float(pb[se])}  # fmt: skip
        if "anchor_rmse" in table:
            row.update({"Picbreeder RMSE": float(pb.anchor_rmse), "twin RMSE (median)": float(tw.anchor_rmse.median())})
        why = ""
        if failed == "excluded":
            why = "" if bool(pb[kept]) else "the Picbreeder network does not draw it"
            why = why or ("" if len(drawn) else "no twin draws it")
        if len(counted):
            e = Estimate.from_samples(twin_auc)
            row.update({"twins mean": e.mean, "twins lo": e.lo, "twins hi": e.hi, "diff": row["Picbreeder"] - e.mean})
        rows.append({**row, "used": not why, "why": why})
    return pd.DataFrame(rows).set_index("target") if rows else pd.DataFrame()


# ---------------------------------------------------------------------------------------------
# The reference plan's chunks (volratio.runs.plan writes them to examples/sweeps/reference.toml)


TWIN_MAX_PARAMS = 1000  # as stored: ≥ every Picbreeder network's non-zero weights; the twins' seeded subsample
TWIN_ANCHOR = "image"  # as stored: the target's own image (the one-anchor reading is each chunk's rescore)


def reference_chunks() -> dict:
    """The chunks of the reference plan that this experiment owns (`volratio.runs.plan.Chunk`: a
    sweep spec and why it runs what it runs): the sixteen-target comparison, each Picbreeder target's
    network and its dense twins (run function twin_point), one run per target and seed."""

    def twin_point(network: str, seeds: list, why: str, notes: dict) -> Chunk:
        config = {"network": network, "max_params": TWIN_MAX_PARAMS, "anchor": TWIN_ANCHOR}
        return Chunk(
            run="twin_point",
            why=why,
            seeds=seeds,
            config=config,
            grid={"target": list(picbreeder.ALL_NAMES)},
            notes=notes,
        )

    return {
        "twins16_picbreeder": twin_point(
            "picbreeder",
            [0],
            why=(
                'Picbreeder vs dense SGD on all sixteen Picbreeder targets (claim "picbreeder-vs-sgd", its '
                "sixteen-target comparison; run function twin_point, no experiment's preset): each target's "
                "Picbreeder network (the layerized genome, or the fork's layered network for the thirteen without"
                " a genome), scored on every non-zero weight (≤ 918) …"
            ),
            notes={
                "max_params": "as stored; ≥ every network's non-zero weights, so every weight is scored",
                "anchor": (
                    "as stored: judged against the target's own image (its render); the one-anchor reading "
                    "(\"png\", the twins' training image) is the chunk's rescore under --anchor png"
                ),
            },
        ),
        "twins16": twin_point(
            "twin",
            [0, 1, 2],
            why=(
                "… against three dense twins per target: the Picbreeder network's own architecture (depth, width,"
                " per-unit activations), FER's recipe (LeCun-normal init, Adam at 3e-3 (apple 3e-4), the gradient"
                " divided by its global L2 norm) for 2,000 steps at 64×64 (FER: 100,000 at 256×256), each scored "
                "on a seeded subsample of 1,000 non-zero weights. Judges in the runs: anchored (the default when "
                "they ran), anchored-ssim, stability, all three on the same perturbed images.\n"
                "Under the default judge, which decides claim 1, both twin chunks are rescored from their stored "
                "networks on the one anchor: `volratio reference rescore twins16_picbreeder --judge anchored-v2 "
                "--anchor png` and `volratio reference rescore twins16 --judge anchored-v2 --anchor png` "
                "(stored), and so under anchored, anchored-ssim and the cross-fitted judge (anchored-xfit): each "
                "Picbreeder network is scored by the rule fitted without its verdict rows, the twins by the "
                "all-rows rule, the fold stored with each score (volratio.runs.score)."
            ),
            notes={
                "max_params": "the seeded subsample the chunk was scored on (twin_point's default is every weight)",
                "anchor": "as stored (see twins16_picbreeder); rescored under --anchor png",
            },
        ),
    }
