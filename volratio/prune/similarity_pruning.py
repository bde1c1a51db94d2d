"""Similarity-based pruning (SP), DESIGN §3.3 — the paper's method (Do, Shah, Le, Liu 2026).

Iterative prune → retrain. In each round, for every hidden layer of every network: take the
feature maps of its live units (activations over the pixel grid, `(P, n_live)`); compute their
pairwise cosine similarity; every pair above τ is *redundant*; going through the redundant pairs
from the most similar down, for each pair whose two units are both still present one of the two,
chosen at random, is removed (incoming and outgoing weights masked to zero). Then every network
that lost a unit is retrained. A network stops when none of its pairs is redundant, when it reaches
`target_units`, or when a round pushes its loss above `max_loss` (that round is undone); the run
stops when every network has stopped or after `rounds` rounds.

The paper publishes no value of τ or of any other knob; the defaults below are ours and the
chapter shows how the result moves with τ. Members of a population are pruned independently;
a member that has stopped is frozen (its weights are restored after each shared retraining call).

Chapter: "Connectivity: which connections remain".
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import torch

from ..device import generator
from ..nets import CoordMLP
from ..train import TrainConfig, mse_per_network, train
from .criteria import Calibration, feature_maps, place
from .masks import PruneError, masks_with_units, unit_alive


@dataclass
class SPConfig:
    tau: float = 0.95  # cosine similarity above which two units of one layer are redundant
    centred: bool = False  # compare mean-subtracted maps (Pearson correlation) instead of raw maps
    opposite_sign: bool = False  # also count similarity below −τ (a unit and its negation) as redundant
    cap: int | None = None  # at most this many units removed per layer per round (most similar pairs first); None = all
    rounds: int = 10  # at most this many prune → retrain rounds
    retrain_steps: int = 200  # training steps after each round (0 = no retraining)
    target_units: int | None = None  # stop a network once it has this many live hidden units in all
    max_loss: float | None = None  # undo a round that leaves a network's MSE above this, and stop it
    seed: int = 0  # which unit of each redundant pair goes
    train: TrainConfig = field(default_factory=TrainConfig)  # optimizer for retraining (its `steps` is ignored)

    @classmethod
    def quick(cls, **kw) -> "SPConfig":
        """The chapter's scale: a few short rounds."""
        return cls(**{"rounds": 5, "retrain_steps": 100, **kw})

    @classmethod
    def full(cls, **kw) -> "SPConfig":
        return cls(**{"rounds": 30, "retrain_steps": 2000, **kw})


def similarity(maps: torch.Tensor, centred: bool = False) -> torch.Tensor:
    """Cosine similarity `(n, n)` of the columns of `maps` `(P, n)`. A column of zero norm (a dead
    or — when centred — constant unit) has similarity 0 with everything."""
    x = maps.to(torch.float64)
    if centred:
        x = x - x.mean(dim=0, keepdim=True)
    norm = x.norm(dim=0)
    safe = torch.where(norm > 1e-12, norm, torch.ones_like(norm))
    u = x / safe
    u = torch.where(norm > 1e-12, u, torch.zeros_like(u))
    return u.T @ u


def redundant_pairs(sim: torch.Tensor, tau: float, opposite_sign: bool = False) -> list[tuple[int, int, float]]:
    """Pairs `(i, j, s)`, i < j, with s > τ (or abs(s) > τ), the most similar first."""
    s = sim.abs() if opposite_sign else sim
    iu = torch.triu_indices(s.shape[0], s.shape[0], offset=1)
    vals = s[iu[0], iu[1]]
    hit = torch.nonzero(vals > tau).flatten()
    order = hit[torch.argsort(-vals[hit], stable=True)]
    return [(int(iu[0, t]), int(iu[1, t]), float(vals[t])) for t in order]


def choose_removals(pairs, gen: torch.Generator, cap: int | None = None) -> list[tuple[int, float]]:
    """Walk the pairs (most similar first); for each whose two units are both still present, remove
    one of the two at random. Returns `(unit, similarity)` in the order removed."""
    gone: set[int] = set()
    out = []
    for i, j, s in pairs:
        if cap is not None and len(out) >= cap:
            break
        if i in gone or j in gone:
            continue
        u = i if float(torch.rand((), generator=gen)) < 0.5 else j
        gone.add(u)
        out.append((u, s))
    return out


def sp_round(
    net: CoordMLP, calib: Calibration, cfg: SPConfig, gen: torch.Generator, active: list[bool]
) -> tuple[list[torch.Tensor], list[int]]:
    """One pruning step (no retraining): the new masks and the units removed per network."""
    if not 0.0 <= cfg.tau <= 1.0:
        raise PruneError(f"SP threshold tau must lie in [0, 1] (a cosine similarity), got {cfg.tau}")
    feats = feature_maps(net, calib.grid)  # per layer (K, P, W)
    alive = unit_alive(net.masks)
    new_alive = [a.clone() for a in alive]
    removed = [0] * net.population
    for k in range(net.population):
        if not active[k]:
            continue
        cands = []  # (similarity, layer, unit)
        for l, f in enumerate(feats):
            idx = torch.nonzero(alive[l][k]).flatten()
            if len(idx) < 2:
                continue
            sim = similarity(f[k][:, idx], cfg.centred)
            for u, s in choose_removals(redundant_pairs(sim, cfg.tau, cfg.opposite_sign), gen, cfg.cap):
                cands.append((s, l, int(idx[u])))
        if cfg.target_units is not None:
            budget = max(0, sum(int(a[k].sum()) for a in alive) - cfg.target_units)
            cands = sorted(cands, key=lambda c: -c[0])[:budget]
        for _, l, u in cands:
            new_alive[l][k, u] = False
        removed[k] = len(cands)
    return masks_with_units(net.masks, new_alive), removed


def sp(net: CoordMLP, image: torch.Tensor, cfg: SPConfig | None = None):
    """Run SP on `net` (in place) against `image` `(res, res, 3)` or `(K, res, res, 3)`."""
    from . import PruneResult, record

    cfg = cfg or SPConfig()
    calib = Calibration.from_image(image, place(net, cfg.train))
    gen = generator(cfg.seed)
    K = net.population
    active = [True] * K
    stop = ["rounds"] * K
    history = [record(net, calib, 0, removed=[0] * K)]
    tcfg = TrainConfig(**{**asdict(cfg.train), "steps": cfg.retrain_steps})
    for r in range(1, cfg.rounds + 1):
        if cfg.target_units is not None:
            for k in range(K):
                if active[k] and sum(net.live_units()[k]) <= cfg.target_units:
                    active[k], stop[k] = False, "target size"
        masks, removed = sp_round(net, calib, cfg, gen, active)
        for k in range(K):
            if active[k] and removed[k] == 0:
                active[k], stop[k] = False, "no redundant pair"
        if not any(removed):
            break
        saved_w = [w.detach().clone() for w in net.weights]
        saved_m = [m.clone() for m in net.masks]
        for i, m in enumerate(masks):
            net.set_mask(i, m)
        if cfg.retrain_steps > 0:
            train(net, image, tcfg)
        changed = [removed[k] > 0 for k in range(K)]
        with torch.no_grad():
            loss = mse_per_network(net, calib.grid, calib.target).cpu().numpy()
            for k in range(K):
                undo = not changed[k] or (cfg.max_loss is not None and loss[k] > cfg.max_loss)
                if undo:
                    for w, sw in zip(net.weights, saved_w):
                        w[k] = sw[k]
                    for i, sm in enumerate(saved_m):
                        net.masks[i][k] = sm[k]
                if changed[k] and cfg.max_loss is not None and loss[k] > cfg.max_loss:
                    active[k], stop[k] = False, "loss above max_loss (round undone)"
                    removed[k] = 0
        history.append(record(net, calib, r, removed=removed))
    return PruneResult(net, "sp", asdict(cfg), history, extras={"stop": stop})
