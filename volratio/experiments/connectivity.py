"""Experiment `connectivity`: SP against every baseline at matched sparsity (`volratio.prune`).

For each target and seed a dense network is trained; SP prunes it; every baseline prunes the *same*
dense network to SP's sparsity, network by network:

- weight methods (IMP, Wanda, magnitude, random) to SP's fraction of masked weights;
- LLM-Pruner to SP's fraction of dead hidden units;
- random units to SP's live units *per layer* (the control for "which" versus "how many").

IMP, as in the Lottery Ticket procedure, starts from the dense network's *initialisation* (θ₀),
not from its trained weights, and rewinds to step k of its own training. Every network — the dense
one included — is then scored with EMC2 (`volratio.emc2.score`) under the config's judge
(`volratio.judges.make_judge`). All targets × seeds form one
population, trained and pruned at once; every member is pruned independently.

`run(config) -> Result` (a table with one row per target × seed × method; extras `nets`, `images`).
The book does not run it: its chapter "Connectivity: which connections remain" runs the sparse regime's
protocol (`volratio.experiments.sparse_regime`, the near-dense preset `NEAR_DENSE` at the quick scale),
where every baseline is matched to SP per layer, not to its global sparsity. It is the recipe of the
trained networks of the judges' verdict set (`volratio.calibration.reference_verdicts`).

Its training entries stay flat (`lr`, `device`, `train_path`, and a step count per phase:
`dense_steps`, `retrain_steps`, `imp_steps`): one rate, device and path serve the dense training,
SP's retraining and every baseline's fine-tuning, each phase with its own steps, and `device` is
EMC2's too. A nested `TrainConfig` would hold the steps of one phase only and its device would be
set from the run's (`interference` and `emc2_bench` nest theirs: one training, one step count).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace

import pandas as pd
import torch

from .. import emc2
from ..data.anchors import anchor_image
from ..data.picbreeder import ALL_NAMES, fer_arch
from ..data.targets import get_target
from ..emc2 import DEFAULT_DELTAS
from ..emc2.reading import Reading
from ..judges.registry import DEFAULT_JUDGE, JUDGES, check_res
from ..nets import CoordMLP
from ..prune import BASELINES, PruneError, collapsed, prune  # BASELINES: the methods SP is compared with
from ..prune.criteria import member_mse
from ..prune.masks import unit_alive, weight_sparsity
from ..prune.similarity_pruning import SPConfig
from ..train import PATHS, TrainConfig
from ..train import train as train_network
from ..util.device import device_name
from ..util.limits import above, at_least, between, nonzero, one_of, parsed_by
from ..util.presets import Presets
from ._base import PAPER, ExperimentError, Result, Trained, arch_spec, check_reading, judge_of, unscored


@dataclass
class Config(Presets):
    targets: tuple = ("skull", "butterfly", "apple")  # Picbreeder targets
    seeds: int = 3  # networks per target (one population; their seeds are seed, seed + 1, …)
    arch: str = "6;gaussian:10,sin:3,identity:3"  # dense arch of every network (width 16, depth 6); or
    # "picbreeder": the target's own Picbreeder architecture (FER's layered form, `picbreeder.fer_arch`),
    # trained densely from a random init; a population shares one arch, so then give exactly one target
    res: int = 24  # training and feature-map resolution
    dense_steps: int = 300  # Adam steps for the dense networks
    lr: float = 3e-3  # Adam learning rate everywhere
    sp: SPConfig = field(  # SP that keeps the fit: at most 4 units per network and round (SPConfig's other defaults)
        default_factory=lambda: SPConfig(tau=0.9, opposite_sign=True, rounds=3, retrain_steps=80, per_round=4)
    )
    retrain_steps: int = (
        240  # baselines' fine-tuning after pruning (Wanda included): SP's rounds × retrain_steps, an equal budget
    )
    imp_steps: int = 80  # IMP: training per level (T)
    imp_rewind: int = 8  # IMP: rewind step k (0 = the original Lottery Ticket)
    imp_rate: float = 0.2  # IMP: at most this fraction of the remaining weights per level
    methods: tuple = BASELINES  # baselines to run (SP always runs: it sets the sparsity)
    emc2: bool = True  # score every network with EMC2
    judge: str = DEFAULT_JUDGE  # EMC2 judge (volratio.judges.make_judge): label-anchored and gated, or another
    judges: tuple = ()  # more judges to score the same perturbed images under (columns emc2_auc:<judge>, base_kept:<judge>)
    emc2_res: int = 24  # EMC2 image size
    emc2_params: int | None = None  # EMC2 on every non-zero weight; a number: a seeded subsample of that many
    deltas: tuple = DEFAULT_DELTAS  # EMC2 perturbation sizes
    seed: int = 0  # initialisation of the population; the table's seed of member k is seed + k % seeds
    device: str = "auto"  # CUDA when available
    keep_nets: bool = (
        False  # as a sweep run: store every population (dense, SP, each baseline) as artifact net_<method>
    )
    train_path: str = "auto"  # TrainConfig.path of every training and retraining ("auto": fused on the CPU, else fast)
    scale: str = "quick"  # the preset this config came from

    # allowed values, checked when a config is parsed (`volratio.util.limits`); None passes where allowed
    LIMITS = {
        "seeds": at_least(1), "res": at_least(2), "dense_steps": at_least(1), "lr": above(0),
        "retrain_steps": at_least(0), "imp_steps": at_least(1), "imp_rewind": at_least(0),
        "imp_rate": between(0, 1, open_lo=True), "methods": one_of(*BASELINES), "judge": one_of(*JUDGES),
        "judges": one_of(*JUDGES), "emc2_res": at_least(2), "emc2_params": at_least(1), "deltas": nonzero(),
        "seed": at_least(0), "train_path": one_of(*PATHS), "targets": one_of(*ALL_NAMES), "arch": parsed_by(arch_spec),
        "device": parsed_by(device_name),
    }  # fmt: skip

    def __post_init__(self):
        if self.emc2:  # before any training
            check_res((self.judge, *self.judges), self.emc2_res, f"emc2_res = {self.emc2_res}: images", ExperimentError)

    # quick (the book's live scale): a seeded sample of 40 weights per network. Every weight of its 72
    # networks (9 dense 6 × 16 networks of 1,392 weights, and their pruned copies) costs ~30 CPU-s per
    # dense network under three judges at 24×24, several CPU-minutes in all; `emc2_params=None` scores them all
    QUICK = dict(emc2_params=40)
    # reference: 64×64, 5 seeds, 2,000 dense steps on the fast path, equal fine-tuning budgets: SP 5 rounds ×
    # 100 steps (at most 4 units per round, an undone round retried with half as many), every baseline 500 steps
    # after pruning (IMP: 300 steps per level from its rewind point, as the Lottery Ticket procedure prescribes)
    # — 8 δ on 300 weights per network under the anchored judge and two more on the same images. No chunk of
    # the reference plan runs it: there the near-dense check is the sparse regime's (`sparse_regime.NEAR_DENSE`)
    # fmt: off
    REFERENCE = dict(targets=("skull", "butterfly", "apple"), seeds=5, res=64, dense_steps=2000, retrain_steps=500,
                     imp_steps=300, imp_rewind=30,
                     sp=SPConfig(tau=0.9, opposite_sign=True, rounds=5, retrain_steps=100, per_round=4, backoff=True),
                     emc2_res=64, emc2_params=300, judge="anchored", judges=("anchored-ssim", "stability"),
                     device="cpu", keep_nets=True, train_path="fast")
    # larger: 128×128, long training, 10 seeds, every parameter scored (hours on a CPU); equal budgets
    FULL = dict(seeds=10, res=128, dense_steps=10_000, retrain_steps=10_000, imp_steps=3000, imp_rewind=300,
                sp=SPConfig(tau=0.9, opposite_sign=True, rounds=20, retrain_steps=500, per_round=4), emc2_res=128, emc2_params=None)
    # fmt: on


def train(config: Config | None = None, *, progress=None) -> Trained:
    """Train, then prune with SP and the baselines at matched sparsity (see the module docstring):
    one row per network × method, its fit and size, no score yet. `progress`: optional callable
    taking a message string."""
    cfg = config or Config()
    say = progress or (lambda msg: None)
    t0 = time.time()
    T, S = len(cfg.targets), cfg.seeds
    arch = _arch(cfg)
    images = torch.stack([get_target(f"picbreeder:{t}").image(cfg.res) for t in cfg.targets for _ in range(S)])
    tc = TrainConfig(lr=cfg.lr, device=cfg.device, path=cfg.train_path)
    init = CoordMLP(arch, head="hsv", population=T * S, seed=cfg.seed)
    dense = init.copy()
    train_network(dense, images, replace(tc, steps=cfg.dense_steps))
    say("dense networks trained")
    nets = {"dense": dense}
    sp_net = dense.copy()
    sp_res = prune(sp_net, images, "sp", replace(cfg.sp, train=tc))
    nets["sp"] = sp_net
    stop = sp_res.extras["stop"]
    say("SP done")
    s_w = [float(x) for x in weight_sparsity(sp_net.masks)]
    L, W = sp_net.depth, sp_net.width
    s_u = [1.0 - int(sum(a[k].sum() for a in unit_alive(sp_net.masks))) / (L * W) for k in range(T * S)]
    # the baselines fine-tune at SP's retraining rate (equal budgets); IMP trains from its rewind point
    common = dict(retrain_steps=cfg.retrain_steps, train=tc.finetune(0, cfg.sp.retrain_lr_factor))
    options = {
        "imp": dict(sparsity=s_w, rate=cfg.imp_rate, rewind_step=cfg.imp_rewind, train_steps=cfg.imp_steps, train=tc),
        "wanda": dict(sparsity=s_w, **common),
        "llm-pruner": dict(sparsity=s_u, **common),
        "magnitude": dict(sparsity=s_w, **common),
        "random": dict(sparsity=s_w, seed=cfg.seed, **common),
        "random-units": dict(match=sp_net, seed=cfg.seed, **common),
    }
    failed = {}  # method -> why it could not reach SP's sparsity (e.g. it would cut a whole kernel)
    for m in cfg.methods:
        net = (init if m == "imp" else dense).copy()
        try:
            prune(net, images, m, **options[m])
        except PruneError as e:
            failed[m] = str(e)
            say(f"{m} failed: {e}")
            continue
        nets[m] = net
        say(f"{m} done")
    rows = []
    for m, why in failed.items():  # recorded, not dropped: one row per network, no metrics
        rows += [
            {"target": cfg.targets[k // S], "seed": cfg.seed + k % S, "member": k, "method": m, "failed": why}
            for k in range(T * S)
        ]
    dense_loss = member_mse(dense, images)
    for method, net in nets.items():
        rep_loss = member_mse(net, images)
        live = net.live_units()
        nz = net.nonzero()
        ws = weight_sparsity(net.masks)
        flags = collapsed(net, cfg.res, dense_loss, rep_loss)
        for k in range(T * S):
            rows.append(
                {
                    "target": cfg.targets[k // S],
                    "seed": cfg.seed + k % S,
                    "member": k,
                    "method": method,
                    "loss": float(rep_loss[k]),
                    "sparsity": float(ws[k]),
                    "nonzero": nz[k],
                    "live_units": live[k],
                    "unit_sparsity": 1.0 - sum(live[k]) / (L * W),
                    "sp_stop": stop[k] if method == "sp" else "",
                    # the dense network's MSE, and whether this one collapsed (flat image or lost fit)
                    "dense_loss": float(dense_loss[k]),
                    "collapsed": bool(flags[k]),
                }
            )
    return Trained(
        "connectivity",
        cfg,
        pd.DataFrame(rows),
        [cfg.seed + s for s in range(S)],  # the seeds the rows name (member k: seed + k % S)
        time.time() - t0,
        networks=nets,
        extras={"nets": nets, "images": images, "config": cfg},
    )


def score(trained: Trained, reading: Reading = PAPER, *, progress=None) -> Result:
    """EMC2 of every trained network (`cfg.emc2`; a failed method's rows score NaN) under `reading`:
    its judge decides (default: the config's `judge`), the config's `judges` are scored beside it on
    the same perturbed images, and the reading's anchor, δ's scale, weights, engine and device apply
    to the config's EMC2 settings. Columns added: `emc2_auc`, `emc2_scores`, `judge`, per judge
    `base_kept:<judge>` and the other judges' `emc2_auc:<judge>`. Without `cfg.emc2`, the default
    reading only: the training's rows as they are."""
    check_reading(reading)
    cfg = trained.config
    if not cfg.emc2:
        return unscored(trained, reading)
    t0 = time.time()
    judge = judge_of(reading, cfg.judge)
    table = trained.table.copy()
    auc, curves, extra = [], [], []
    for row in table.to_dict("records"):
        if row["method"] not in trained.networks:  # it could not reach SP's sparsity: no network
            auc.append(float("nan"))
            curves.append([])
            extra.append({})
            continue
        by = score_judged(trained.networks[row["method"]], row["member"], row["target"], cfg, reading)
        r = by[judge]
        auc.append(r.auc)
        curves.append([float(x) for x in r.scores])
        extra.append({f"base_kept:{j}": bool(rj.base_kept) for j, rj in by.items()}
                     | {f"emc2_auc:{j}": rj.auc for j, rj in by.items() if j != judge})  # fmt: skip
    table["emc2_auc"] = auc
    table["emc2_scores"] = curves
    table["judge"] = judge
    for name in dict.fromkeys(k for e in extra for k in e):  # whether each judge saw its label; other judges' AUC
        table[name] = [e.get(name) for e in extra]
    (progress or (lambda msg: None))("EMC2 scored")
    return trained.result(table, judge, time.time() - t0)  # `judges`: more judges' columns on the same images


def run(config: Config | None = None, *, progress=None) -> Result:
    """Train, prune with SP and the baselines at matched sparsity, score (see the module docstring).
    `progress`: optional callable taking a message string."""
    return score(train(config, progress=progress), PAPER, progress=progress)


def _arch(cfg: Config) -> str:
    """The architecture string of the run: `cfg.arch`, or the target's Picbreeder architecture."""
    if cfg.arch != "picbreeder":
        return cfg.arch
    if len(cfg.targets) != 1:
        raise ExperimentError(
            f'arch = "picbreeder" needs exactly one target (a population shares one architecture), not '
            f"{len(cfg.targets)}: run one target per run (e.g. a sweep over targets)"
        )

    return fer_arch(cfg.targets[0])


def score_judged(net: CoordMLP, member: int, target: str, cfg: Config, reading: Reading = PAPER) -> dict:
    """EMC2 of one member under the reading's judge (default `cfg.judge`) and each of `cfg.judges`
    (the images rendered once): `{judge: EMC2Result}`."""
    ec = _emc2_config(cfg, member, reading)
    names = list(dict.fromkeys([judge_of(reading, cfg.judge), *cfg.judges]))
    spec = f"picbreeder:{target}"
    anchor = None if reading.anchor == "image" else anchor_image(spec, ec.res, reading.anchor)
    return dict(zip(names, emc2.score(net, emc2.judges_for(net, names, spec, ec, anchor=anchor), target, ec)))


def _emc2_config(cfg: Config, member: int, reading: Reading = PAPER) -> emc2.EMC2Config:
    """The EMC2 settings of member `member` (float32 engine arithmetic) under `reading`."""
    own = dict(deltas=tuple(float(d) for d in cfg.deltas), res=cfg.emc2_res, max_params=cfg.emc2_params,
               seed=cfg.seed, device=cfg.device, dtype="float32")  # fmt: skip
    return emc2.EMC2Config(**reading.emc2(own), member=member)


def score_member(net: CoordMLP, member: int, target: str, cfg: Config):
    """EMC2 of one member under `cfg.judge` (`volratio.emc2.score`)."""
    ec = _emc2_config(cfg, member)
    return emc2.score(net, emc2.judges_for(net, [cfg.judge], f"picbreeder:{target}", ec), target, ec)[0]
