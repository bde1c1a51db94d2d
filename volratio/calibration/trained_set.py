"""The recipe of the first verdict set's trained networks: SP and the baselines at SP's global sparsity.

The verdicts of `volratio.calibration.reference_verdicts` were given on networks made this way, so the
recipe stays as it was made. Dense networks of the Picbreeder targets (one population: `seeds`
networks per target, member k drawing target k // seeds), SP that keeps the fit, and every baseline
pruned to SP's *global* sparsity network by network: the weight methods to SP's fraction of masked
weights, LLM-Pruner to its fraction of dead units, random-units to its live units per layer, and IMP
from the *initialisation* with rewind step `imp_rewind`, as the Lottery Ticket procedure prescribes.
The book's connectivity chapter matches the baselines to SP per layer instead
(`volratio.experiments.sparse_regime`).

`networks(cfg)` trains them again: `{method: population}` ("dense", "sp", then `methods` in order).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import torch

from ..data.targets import get_target
from ..errors import VolratioError
from ..nets import CoordMLP
from ..prune import BASELINES, PruneError, prune
from ..prune.masks import unit_alive, weight_sparsity
from ..prune.similarity_pruning import SPConfig
from ..train import TrainConfig
from ..train import train as train_network


@dataclass(frozen=True)
class StudyConfig:
    targets: tuple = ("skull", "butterfly", "apple")  # Picbreeder targets
    seeds: int = 3  # networks per target (one population of len(targets) × seeds)
    arch: str = "6;gaussian:10,sin:3,identity:3"  # dense arch of every network (width 16, depth 6)
    res: int = 24  # training resolution
    dense_steps: int = 300  # Adam steps for the dense networks
    lr: float = 3e-3  # Adam learning rate everywhere
    sp: SPConfig = field(  # SP that keeps the fit: at most 4 units per network and round
        default_factory=lambda: SPConfig(tau=0.9, opposite_sign=True, rounds=3, retrain_steps=80, per_round=4)
    )
    retrain_steps: int = 240  # the baselines' fine-tuning after pruning (Wanda included)
    imp_steps: int = 80  # IMP: training per level (T)
    imp_rewind: int = 8  # IMP: rewind step k (0 = the original Lottery Ticket)
    imp_rate: float = 0.2  # IMP: at most this fraction of the remaining weights per level
    methods: tuple = BASELINES  # the baselines pruned to SP's sparsity
    seed: int = 0  # initialisation of the population, and the random baselines' draws
    device: str = "cpu"  # where every training runs
    train_path: str = "eager"  # TrainConfig.path of every training (the set's networks: the eager path)


def networks(cfg: StudyConfig | None = None) -> dict[str, CoordMLP]:
    """The dense population, SP's and each baseline's (see the module docstring). A baseline that cannot
    prune (e.g. it would cut the network at SP's sparsity) raises: the verdict set has every method's."""
    cfg = cfg or StudyConfig()
    T, S = len(cfg.targets), cfg.seeds
    images = torch.stack([get_target(f"picbreeder:{t}").image(cfg.res) for t in cfg.targets for _ in range(S)])
    tc = TrainConfig(lr=cfg.lr, device=cfg.device, path=cfg.train_path)
    init = CoordMLP(cfg.arch, head="hsv", population=T * S, seed=cfg.seed)
    dense = init.copy()
    train_network(dense, images, replace(tc, steps=cfg.dense_steps))
    sp_net = dense.copy()
    prune(sp_net, images, "sp", replace(cfg.sp, train=tc))
    nets = {"dense": dense, "sp": sp_net}
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
    for m in cfg.methods:
        net = (init if m == "imp" else dense).copy()
        try:
            prune(net, images, m, **options[m])
        except PruneError as e:
            raise VolratioError(f"the verdict set's recipe: {m} could not prune: {e}") from e
        nets[m] = net
    return nets
