"""Similarity-based pruning (SP) — the paper's method (Do, Shah, Le, Liu 2026).

Iterative prune → retrain. In each round, for every hidden layer of every network: take the
feature maps of its live units (activations over the pixel grid, `(P, n_live)`); compute their
pairwise cosine similarity; every pair above τ is *redundant*; going through the redundant pairs
from the most similar down, for each pair whose two units are both still present one of the two,
chosen at random, is removed (incoming and outgoing weights masked to zero). Then every network
that lost a unit is retrained. A network stops when none of its pairs is redundant, when it reaches
`target_units`, or when a round pushes its loss past the guard (that round is undone); the run
stops when every network has stopped or after `rounds` rounds.

The guard is relative to each network's own dense loss, recorded before the first
round: a round that leaves a network's MSE above `max(loss_factor × dense MSE, loss_floor)` is
undone and the network stops, so SP cannot trade the image for sparsity. `loss_factor = 2` is the
fit criterion of the depth chapter (`volratio.depth.curves.among_fitting`: 2 × the median MSE)
applied to each network's own dense MSE: a looser factor would keep networks that the depth chapter
counts as not fitting. Where even the first round breaks the guard, SP keeps the dense network and
says so (stop reason "loss above loss_factor × dense loss (round undone)"). The floor
`loss_floor = 0.002` (an RMS error of 0.045 per channel, a barely visible change) keeps a
near-perfect dense fit from freezing the network at its first round. `max_loss` is an absolute cap
on top of it (off by default). `loss_factor = None` switches the relative guard off (SP prunes
whatever the similarity allows).

Every result says, per member, its dense and final loss, why it stopped and whether it *collapsed*
(`collapsed`): its final image is (near) constant — every channel's standard deviation over the
pixels below `FLAT_STD` — or its final MSE is above `COLLAPSE_FACTOR × max(dense MSE, loss_floor)`.

The paper publishes no value of τ or of any other knob; the defaults below are ours and the
chapter shows how the result moves with τ. Members of a population are pruned independently;
a member that has stopped is frozen (its weights are restored after each shared retraining call).

Chapter: "Connectivity: which connections remain".
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np
import torch

from ..nets import CoordMLP
from ..train import TrainConfig, mse_per_network, train
from ..util.device import generator
from ..util.limits import above, at_least, between
from ..util.presets import Presets
from .criteria import CalibrationGrid, feature_maps, place
from .masks import PruneError, masks_with_units, unit_alive, weight_sparsity
from .result import PruneResult, record

# the sparse regime's τ schedule (after a first τ = 0.95): thresholds tried in turn once a network has no
# pair above its current one, down to 0 (the most similar pair first at every step)
TAU_SCHEDULE = (0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1, 0.0)


@dataclass
class SPConfig(Presets):
    tau: float = 0.95  # cosine similarity above which two units of one layer are redundant
    centred: bool = False  # compare mean-subtracted maps (Pearson correlation) instead of raw maps
    opposite_sign: bool = False  # also count similarity below −τ (a unit and its negation) as redundant
    cap: int | None = None  # at most this many units removed per layer per round (most similar pairs first); None = all
    per_round: int | None = None  # at most this many units removed per network per round (most similar first)
    rounds: int = 10  # at most this many prune → retrain rounds
    retrain_steps: int = 200  # training steps after each round (0 = no retraining)
    retrain_lr_factor: float = 0.1  # retraining runs at this × the training learning rates (measured choice:
    # module docstring; 1.0 = the training rates)
    compensate: str = "span"  # before a unit goes, its outgoing weights are re-expressed on the units that stay:
    # "span" (least squares of its map on theirs), "twin" (on its redundant partner only), "none" (masked
    # only: its outgoing weights are dropped)
    target_units: int | None = None  # stop a network once it has this many live hidden units in all
    target_nonzeros: int | None = None  # stop a network once it has at most this many non-zero weights
    # (the last round removes the most similar units until the count is reached; e.g. a Picbreeder network's)
    tau_schedule: tuple = ()  # thresholds tried in turn, after `tau`, once a network has no pair above its
    # current one (the τ schedule: most similar pair first at every step); () = a fixed τ
    per_round_fraction: float | None = None  # at most this fraction of a network's live hidden units removed
    # per round (at least one unit); None = no such cap. With a wide start, 0.2 reaches a fifth of the width in ~7 rounds
    max_loss: float | None = None  # absolute cap: undo a round that leaves a network's MSE above this, and stop it
    loss_factor: float | None = 2.0  # undo a round that leaves a network's MSE above this × its dense MSE
    # (at least loss_floor), and stop it; None = no relative guard (measured choice: module docstring)
    loss_floor: float = 0.002  # the relative guard never undoes a round whose MSE stays below this
    backoff: bool = False  # a round the guard undoes is tried again with half as many units for that network
    # (down to one) before the network stops; False: it stops at once
    seed: int = 0  # which unit of each redundant pair goes
    train: TrainConfig = field(default_factory=TrainConfig)  # optimizer for retraining (its `steps` is ignored)

    # allowed values, checked when a config is parsed (`volratio.util.limits`; `check` for the rest)
    LIMITS = {
        "tau": between(0, 1), "cap": at_least(1), "per_round": at_least(1), "rounds": at_least(0),
        "retrain_steps": at_least(0), "retrain_lr_factor": above(0), "target_units": at_least(1),
        "target_nonzeros": at_least(1), "tau_schedule": between(0, 1), "per_round_fraction": between(0, 1, open_lo=True),
        "max_loss": at_least(0), "loss_factor": at_least(1), "loss_floor": at_least(0), "seed": at_least(0),
    }  # fmt: skip

    def __post_init__(self):
        if self.loss_factor is not None and not (np.isfinite(self.loss_factor) and self.loss_factor >= 1.0):
            raise PruneError(
                f"SP loss_factor = {self.loss_factor!r}: give a finite factor ≥ 1 (MSE allowed, relative to "
                "the dense MSE), or None to switch the relative guard off"
            )
        if not (np.isfinite(self.loss_floor) and self.loss_floor >= 0.0):
            raise PruneError(f"SP loss_floor = {self.loss_floor!r}: give a finite MSE ≥ 0")
        if self.max_loss is not None and not (np.isfinite(self.max_loss) and self.max_loss >= 0.0):
            raise PruneError(f"SP max_loss = {self.max_loss!r}: give a finite MSE ≥ 0, or None for no cap")

    def check(self) -> None:
        """Raise `PruneError` naming the bad knob."""
        if not 0.0 <= self.tau <= 1.0:
            raise PruneError(f"SP threshold tau must lie in [0, 1] (a cosine similarity), got {self.tau}")
        if self.compensate not in COMPENSATE:
            raise PruneError(f"SP compensate = {self.compensate!r}: choose one of {', '.join(COMPENSATE)}")
        if self.per_round is not None and (
            isinstance(self.per_round, bool) or not isinstance(self.per_round, int) or self.per_round < 1
        ):
            raise PruneError(f"SP per_round = {self.per_round!r}: give a positive integer, or None for every pair")
        if not (np.isfinite(self.retrain_lr_factor) and self.retrain_lr_factor > 0):
            raise PruneError(f"SP retrain_lr_factor = {self.retrain_lr_factor!r}: give a finite factor > 0")
        taus = self.taus()
        if any(not (0.0 <= t <= 1.0) for t in taus) or any(b >= a for a, b in zip(taus, taus[1:])):
            raise PruneError(
                f"SP tau_schedule = {tuple(self.tau_schedule)!r} after tau = {self.tau}: give thresholds in [0, 1], "
                "each below the one before it (e.g. tau = 0.9, tau_schedule = (0.8, 0.7, 0.6))"
            )
        if self.target_nonzeros is not None and (
            isinstance(self.target_nonzeros, bool)
            or not isinstance(self.target_nonzeros, int)
            or self.target_nonzeros < 1
        ):
            raise PruneError(f"SP target_nonzeros = {self.target_nonzeros!r}: give a positive integer, or None")
        f = self.per_round_fraction
        if f is not None and not (np.isfinite(f) and 0.0 < f <= 1.0):
            raise PruneError(f"SP per_round_fraction = {f!r}: give a fraction in (0, 1], or None")

    def taus(self) -> tuple:
        """The thresholds a network goes through: `tau`, then the schedule's."""
        return (float(self.tau), *(float(t) for t in self.tau_schedule))

    def loss_limit(self, dense_loss) -> np.ndarray:
        """`(K,)` the MSE above which a round is undone, per member (inf: no guard)."""
        dense = np.asarray(dense_loss, dtype=np.float64)
        limit = np.full(dense.shape, np.inf)
        if self.loss_factor is not None:
            limit = np.maximum(self.loss_factor * dense, self.loss_floor)
        if self.max_loss is not None:
            limit = np.minimum(limit, self.max_loss)
        return limit

    QUICK = {"rounds": 5, "retrain_steps": 100}  # the chapter's scale: a few short rounds
    FULL = {"rounds": 30, "retrain_steps": 2000}


FLAT_STD = 0.02  # an image whose every channel has a std over the pixels below this is flat (≈ 5/255)
COLLAPSE_FACTOR = 10.0  # a final MSE above this × max(dense MSE, floor) has lost the image


@torch.no_grad()
def flat_images(net: CoordMLP, res: int, tol: float = FLAT_STD) -> np.ndarray:
    """`(K,)` True where member k renders a (near) constant image: every channel's standard
    deviation over the `res × res` pixels is below `tol`."""
    img = net.render(res).to(torch.float64)  # (K, res, res, 3)
    std = img.reshape(img.shape[0], -1, img.shape[-1]).std(dim=1)  # (K, 3)
    return (std.max(dim=1).values < tol).cpu().numpy()


def collapsed(
    net: CoordMLP,
    res: int,
    dense_loss,
    final_loss,
    floor: float = 0.002,
    factor: float = COLLAPSE_FACTOR,
    tol: float = FLAT_STD,
) -> np.ndarray:
    """`(K,)` True where member k has *collapsed*: its image is flat (`flat_images`) or its final MSE
    is above `factor × max(dense MSE, floor)`. Used by SP's result and by the connectivity chapter
    for every pruning method."""
    dense = np.maximum(np.asarray(dense_loss, dtype=np.float64), floor)
    final = np.asarray(final_loss, dtype=np.float64)
    return flat_images(net, res, tol) | ~(final <= factor * dense)


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


def choose_removals(pairs, gen: torch.Generator, cap: int | None = None, with_twin: bool = False) -> list[tuple]:
    """Walk the pairs (most similar first); for each whose two units are both still present, remove
    one of the two at random. Returns `(unit, similarity)` in the order removed (`with_twin`:
    `(unit, similarity, the other unit of its pair)`)."""
    gone: set[int] = set()
    out = []
    for i, j, s in pairs:
        if cap is not None and len(out) >= cap:
            break
        if i in gone or j in gone:
            continue
        u, v = (i, j) if float(torch.rand((), generator=gen)) < 0.5 else (j, i)
        gone.add(u)
        out.append((u, s, v) if with_twin else (u, s))
    return out


COMPENSATE = ("span", "twin", "none")


@dataclass(frozen=True)
class Removal:
    """Unit `unit` of hidden layer `layer` of member `member` goes; `twin` is the unit it duplicated."""

    member: int
    layer: int
    unit: int
    twin: int
    similarity: float


def sp_round(
    net: CoordMLP,
    calib: CalibrationGrid,
    cfg: SPConfig,
    gen: torch.Generator,
    active: list[bool],
    per_round: list | None = None,
    level: list[int] | None = None,
) -> tuple[list[torch.Tensor], list[int], list[Removal]]:
    """One pruning step (no retraining, no weight change): the new masks, the number of units removed
    per network and the removals themselves (for `compensate`). `per_round[k]`: network k's cap on
    units this round (None: `cfg.per_round`). `level[k]`: the index of network k's current threshold
    in `cfg.taus()`; a network with no redundant pair at its threshold moves down the schedule, in
    place, until one has a pair or the schedule ends (None: every network at `cfg.tau`, no schedule)."""
    cfg.check()
    feats = feature_maps(net, calib.grid)  # per layer (K, P, W)
    alive = unit_alive(net.masks)
    new_alive = [a.clone() for a in alive]
    removed = [0] * net.population
    plan: list[Removal] = []
    taus = cfg.taus() if level is not None else (cfg.tau,)
    for k in range(net.population):
        if not active[k]:
            continue
        sims = []  # per layer: (live unit indices, their similarity matrix)
        for l, f in enumerate(feats):
            idx = torch.nonzero(alive[l][k]).flatten()
            if len(idx) >= 2:
                sims.append((l, idx, similarity(f[k][:, idx], cfg.centred)))
        while True:
            tau = taus[level[k]] if level is not None else cfg.tau
            cands = []  # (similarity, layer, unit, twin)
            for l, idx, sim in sims:
                pairs = redundant_pairs(sim, tau, cfg.opposite_sign)
                for u, s, v in choose_removals(pairs, gen, cfg.cap, with_twin=True):
                    cands.append((s, l, int(idx[u]), int(idx[v])))
            if cands or level is None or level[k] + 1 >= len(taus):
                break
            level[k] += 1
        cands = sorted(cands, key=lambda c: -c[0])  # the most similar pairs first, across layers
        if cfg.target_units is not None:
            budget = max(0, sum(int(a[k].sum()) for a in alive) - cfg.target_units)
            cands = cands[:budget]
        cap = cfg.per_round if per_round is None else per_round[k]
        if cfg.per_round_fraction is not None:
            live = sum(int(a[k].sum()) for a in alive)
            frac_cap = max(1, int(cfg.per_round_fraction * live))
            cap = frac_cap if cap is None else min(cap, frac_cap)
        if cap is not None:
            cands = cands[:cap]
        if cfg.target_nonzeros is not None:
            cands = cands[: _removals_to_reach(net.masks, k, cands, cfg.target_nonzeros)]
        for s, l, u, v in cands:
            new_alive[l][k, u] = False
            plan.append(Removal(k, l, u, v, float(s)))
        removed[k] = len(cands)
    return masks_with_units(net.masks, new_alive), removed, plan


def mask_nonzeros(masks: list[torch.Tensor]) -> list[int]:
    """Per member, the number of mask entries that are 1 (the weights a network may use)."""
    return [int(sum((m[k] != 0).sum() for m in masks)) for k in range(masks[0].shape[0])]


def _removals_to_reach(masks: list[torch.Tensor], k: int, cands: list, target: int) -> int:
    """How many of `cands` (in order) network k removes to come down to `target` non-zero mask
    entries: the fewest that reach it, or all of them when they do not."""
    live = [(m[k] != 0) for m in masks]  # (in, out) per layer
    left = int(sum(x.sum() for x in live))
    for n, (_, l, u, _) in enumerate(cands, start=1):
        if left <= target:
            return n - 1
        left -= int(live[l][:, u].sum()) + int(live[l + 1][u, :].sum())
        live[l][:, u] = False
        live[l + 1][u, :] = False
    return len(cands)


@torch.no_grad()
def compensate(net: CoordMLP, calib: CalibrationGrid, plan: list[Removal], how: str = "span") -> None:
    """Re-express each removed unit's contribution on the units of its layer that stay, in place, before
    its weights are masked: with `a_u` its map over the calibration grid and `A` the maps of the units
    that stay, `β = argmin ‖A β − a_u‖²` ("span"; "twin": `A` is its redundant partner's map alone), and
    the outgoing weights of those units grow by `β ⊗ w_u` — only where their outgoing mask is 1, so no
    pruned connection comes back. The next layer's input changes by `(a_u − A β) w_u`, the part of the
    unit that no other unit of its layer carries; SP's retraining then starts from there."""
    if how == "none" or not plan:
        return
    feats = feature_maps(net, calib.grid)
    alive = unit_alive(net.masks)
    gone = [a.clone() for a in alive]
    for r in plan:  # the units that stay: alive before the round and not removed in it
        gone[r.layer][r.member, r.unit] = False
    twin_of = {(r.member, r.layer, r.unit): r.twin for r in plan}
    for r in plan:
        k, l = r.member, r.layer
        if how == "twin":
            keep = [_staying_twin(r, twin_of, gone)]
        else:
            keep = torch.nonzero(gone[l][k]).flatten().tolist()
        if not keep:
            continue
        A = feats[l][k][:, keep].detach().cpu().double()
        b = feats[l][k][:, r.unit].detach().cpu().double()
        beta = torch.linalg.lstsq(A, b[:, None], driver="gelsd").solution[:, 0]  # rank-revealing: ties are safe
        beta = beta.to(net.weights[0].device)
        if not torch.all(torch.isfinite(beta)):
            continue  # nothing to re-express on (the maps carry no signal); the unit is only masked
        w, m = net.weights[l + 1], net.masks[l + 1]
        delta = beta[:, None] * w[k, r.unit].double()[None, :]
        w[k, keep] += (delta * m[k, keep].double()).to(w.dtype)


def _staying_twin(r: Removal, twin_of: dict, stays: list[torch.Tensor]) -> int:
    """The unit that stays at the end of `r`'s chain of twins: a removed unit's twin may itself be
    removed in the same round (copies a → b → c), and its contribution then goes to c."""
    u = r.twin
    while not stays[r.layer][r.member, u]:
        u = twin_of[(r.member, r.layer, u)]
    return u


def sp(net: CoordMLP, image: torch.Tensor, cfg: SPConfig | None = None, on_round=None):
    """Run SP on `net` (in place) against `image` `(res, res, 3)` or `(K, res, res, 3)`. The result's
    `extras`: `stop` (why each member stopped), `members` (per member: `dense_loss`, `final_loss`,
    `collapsed`, `stop`), `loss_limit` (the guard's MSE per member; inf: none) and `attempts` (per
    round, the units each member tried to remove, undone rounds included).

    `on_round(r, net, loss)`, if given, is called before the first round (r = 0, the dense MSE) and
    after every round once the guard has decided (`loss` `(K,)`: each member's MSE then), e.g. to keep
    each member's sparsest fitting state (`volratio.prune.fit_point.SparsestFit`)."""
    cfg = cfg or SPConfig()
    cfg.check()
    calib = CalibrationGrid.from_image(image, place(net, cfg.train))
    gen = generator(cfg.seed)
    K = net.population
    active = [True] * K
    stop = ["rounds"] * K
    history = [record(net, calib, 0, removed=[0] * K)]
    dense_loss = np.asarray(history[0]["loss"])
    if on_round is not None:
        on_round(0, net, dense_loss)
    limit = cfg.loss_limit(dense_loss)  # (K,)
    tcfg = cfg.train.finetune(cfg.retrain_steps, cfg.retrain_lr_factor)
    cap = [cfg.per_round] * K  # per network: units a round may remove (halved by the guard with backoff)
    level = [0] * K  # per network: its current threshold in cfg.taus()
    check_target(net, cfg)
    attempts = []  # per round: the units each network tried to remove
    for r in range(1, cfg.rounds + 1):
        for k in range(K):
            if active[k] and _at_target(net, k, cfg):
                active[k], stop[k] = False, "target size"
        masks, removed, plan = sp_round(net, calib, cfg, gen, active, cap, level)
        attempts.append(list(removed))
        for k in range(K):
            if active[k] and removed[k] == 0:
                active[k], stop[k] = False, "no redundant pair"
        if not any(removed):
            break
        saved_w = [w.detach().clone() for w in net.weights]
        saved_m = [m.clone() for m in net.masks]
        compensate(net, calib, plan, cfg.compensate)
        for i, m in enumerate(masks):
            net.set_mask(i, m)
        if cfg.retrain_steps > 0:
            train(net, image, tcfg)
        changed = [removed[k] > 0 for k in range(K)]
        with torch.no_grad():
            loss = mse_per_network(net, calib.grid, calib.target).cpu().numpy()
            for k in range(K):
                over = changed[k] and (loss[k] > limit[k] or (np.isnan(loss[k]) and np.isfinite(limit[k])))
                if not changed[k] or over:
                    for w, sw in zip(net.weights, saved_w):
                        w[k] = sw[k]
                    for i, sm in enumerate(saved_m):
                        net.masks[i][k] = sm[k]
                if over and cfg.backoff and removed[k] > 1:
                    cap[k] = removed[k] // 2  # undone; the next round tries half as many units
                    removed[k] = 0
                elif over:
                    absolute = cfg.max_loss is not None and not loss[k] <= cfg.max_loss  # NaN: either
                    why = "max_loss" if absolute else "loss_factor × dense loss"
                    active[k], stop[k] = False, f"loss above {why} (round undone)"
                    removed[k] = 0
        history.append(record(net, calib, r, removed=removed, tau=[cfg.taus()[i] for i in level]))
        if on_round is not None:
            on_round(r, net, np.asarray(history[-1]["loss"]))
    for k in range(K):
        if active[k] and _at_target(net, k, cfg):
            stop[k] = "target size"
    final = np.asarray(history[-1]["loss"])
    flags = collapsed(net, calib_res(image), dense_loss, final, floor=cfg.loss_floor)
    sparsity, nonzeros = weight_sparsity(net.masks), mask_nonzeros(net.masks)
    members = [
        {
            "dense_loss": float(dense_loss[k]),
            "final_loss": float(final[k]),
            "collapsed": bool(flags[k]),
            "stop": stop[k],
            "sparsity": float(sparsity[k]),
            "nonzeros": int(nonzeros[k]),
            "tau": cfg.taus()[level[k]],
        }
        for k in range(K)
    ]
    extras = {"stop": stop, "members": members, "loss_limit": [float(x) for x in limit], "attempts": attempts}
    return PruneResult(net, "sp", asdict(cfg), history, extras=extras)


def check_target(net: CoordMLP, cfg: SPConfig) -> None:
    """Refuse a `target_nonzeros` no network of `net` can come down to by removing units, or one
    that is not below its current count."""
    if cfg.target_nonzeros is None:
        return
    have = mask_nonzeros(net.masks)
    if cfg.target_nonzeros >= min(have):
        raise PruneError(
            f"SP target_nonzeros = {cfg.target_nonzeros} is not below the network's {min(have)} non-zero weights: "
            "give a smaller target (or prune a larger network)"
        )
    floor = len(net.masks)  # unit removal keeps one unit per hidden layer: at least one weight per layer
    if cfg.target_nonzeros < floor:
        raise PruneError(
            f"SP target_nonzeros = {cfg.target_nonzeros}: removing units leaves at least {floor} weights "
            "(one unit per hidden layer); give a larger target"
        )


def _at_target(net: CoordMLP, k: int, cfg: SPConfig) -> bool:
    """Network k has reached `target_units` or `target_nonzeros`."""
    if cfg.target_units is not None and sum(int(a[k].sum()) for a in unit_alive(net.masks)) <= cfg.target_units:
        return True
    return cfg.target_nonzeros is not None and mask_nonzeros(net.masks)[k] <= cfg.target_nonzeros


def calib_res(image: torch.Tensor) -> int:
    """The side of a target image `(res, res, 3)` or `(K, res, res, 3)`."""
    return int(image.shape[-2])
