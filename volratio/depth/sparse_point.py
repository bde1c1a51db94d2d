"""One run of a depth sweep in the sparse regime: wide networks pruned by SP to their fit point.

The depth chunks of the reference scale (`volratio.depth.point`) prune width-12 networks under SP's
2× guard, which keeps them almost dense (`volratio.experiments.depth_regime.sparsity_table`). The paper's claim
is about *sparse* networks, so this run starts over-parameterised and prunes as the sparse regime
does (`volratio.experiments.sparse_regime`): SP unguarded, most similar pair first down a τ schedule,
at most a fifth of the live units per round, towards `sp.target_nonzeros` (a Picbreeder network's
non-zero count; None: as far as the rounds go). Pruned that far, most networks no longer fit
(SP's end point: its column in `sparsity_table`), so each member is scored at its **fit
point** (`volratio.prune.fit_point.SparsestFit`): its sparsest round whose MSE ≤ max(`fit_factor` ×
its dense MSE, `fit_floor`) — the criterion the sparse regime's frontier is read at (`at_fit`). The
depth claim is then decided on networks each as sparse as SP can make them while they still draw
their target.

`SparsePoint` is `volratio.depth.point.Point` with the regime's defaults and the fit criterion, so
everything that reads depth runs (the curves, `volratio reference rescore`, the deciders) reads
these. Metrics: those of `depth_point` (`score`, `scores`, `loss`, `dense_loss`, `nonzero`, …), and
per member `sparsity` (weight sparsity of the scored network), `dense_nonzero`, `fit_round` (the
round of the fit point; 0 = the dense network), `end_nonzero` and `end_loss` (where SP itself ended).

`read_at = "end"` scores SP's end state instead of the fit point: SP stops each member at
`sp.target_nonzeros` (or just under it: it removes whole units), so networks of two settings are
compared at one non-zero count, whether or not they still fit there (`loss` is then the end state's).
The optimizer study's matched comparison reads its networks so (`volratio.experiments.optimizers`).

Run function `sparse_depth_point`; chunk `depth_sparse` of examples/sweeps/reference.toml; chapter
"Depth: a narrow, target-dependent regime" (book/depth.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from ..prune import collapsed
from ..prune.fit_point import SparsestFit
from ..prune.similarity_pruning import TAU_SCHEDULE, SPConfig
from ..util.limits import at_least, one_of
from ..util.presets import ConfigError, configure, keyed_when_set
from .point import Point, complete_point, emc2_of, png_ratio_at, sp_network

# SP of the sparse regime (volratio.experiments.sparse_regime): τ = 0.95 first, then down the τ
# schedule (the most similar pair first at every threshold), mean-centred maps, at most a fifth of a
# network's live units per round, 40 rounds of 200 retraining steps at 0.3 × lr, no guard
REGIME_SP = SPConfig(tau=0.95, tau_schedule=TAU_SCHEDULE, centred=True, rounds=40, retrain_steps=200,
                     retrain_lr_factor=0.3, per_round_fraction=0.2, compensate="span", loss_factor=None)  # fmt: skip


@dataclass(frozen=True)
class SparsePoint(Point):
    """One run: `members` wide networks of one depth, pruned by unguarded SP, scored at their fit point."""

    width: int = 48  # over-parameterised start (the Picbreeder networks need a few units per layer)
    res: int = 64  # training, pruning and scoring resolution
    steps: int = 2000  # dense Adam steps
    lr: float = 3e-3  # Adam (SP retrains at sp.retrain_lr_factor × this)
    sp: SPConfig = field(
        default_factory=lambda: replace(REGIME_SP)
    )  # unguarded, τ schedule; `target_nonzeros` per target
    fit_factor: float = 2.0  # the fit point: the sparsest round with MSE ≤ max(fit_factor × dense MSE, fit_floor)
    fit_floor: float = 0.002  # … an RMS error of 0.045 per channel (SP's guard floor)
    max_params: int | None = 1000  # EMC2 on every non-zero weight up to 1,000 per network, else a seeded sample
    # of 1,000 (`volratio reference rescore … --every-weight --engine fused` scores every weight)
    train_path: str = "fused"  # the fused C++ training kernel (CPU)
    read_at: str = keyed_when_set("fit")  # the state scored: "fit", each member's fit point;
    # "end", where SP stopped (at `sp.target_nonzeros`: networks compared at one non-zero count)

    LIMITS = {**Point.LIMITS, "fit_factor": at_least(1), "fit_floor": at_least(0), "read_at": one_of("fit", "end")}

    def __post_init__(self):
        super().__post_init__()
        if self.sp.loss_factor is not None or self.sp.max_loss is not None:
            raise ConfigError(
                "sparse_depth_point: SP runs unguarded (sp.loss_factor = None, sp.max_loss = None); the fit "
                "criterion is fit_factor / fit_floor, read off the whole trajectory"
            )


def parse_sparse_point(config: dict) -> SparsePoint:
    """One run's config: `SparsePoint` with the entries `config` gives (the others at their defaults)."""
    return configure(SparsePoint(), config, "sparse_depth_point")


def complete_sparse_point(cfg: SparsePoint) -> dict:
    """The complete config a run is keyed with (`volratio.depth.point.complete_point`)."""
    return complete_point(cfg)


def sparse_point(config: dict) -> dict:
    """Wide SP networks at one depth, each scored at its fit point (module docstring)."""
    out, _, _ = fit_point_run(parse_sparse_point(config))
    return out


def fit_point_run(cfg: SparsePoint):
    """`(metrics, net, image)`: train `cfg`'s population, prune it by SP, restore each member's fit
    point (or, with `cfg.read_at = "end"`, keep SP's end state) and score it (the metrics of the module
    docstring; the network as artifact `net` where `cfg.keep_net`). Shared by `sparse_point` and the
    optimizer study's sparse run (`volratio.experiments.optimizers.sparse_point`)."""
    keeper = SparsestFit(cfg.fit_factor, cfg.fit_floor)
    net, target, img, dense_loss, pr = sp_network(cfg, on_round=keeper)
    if cfg.read_at == "fit":
        keeper.restore(net)
    loss = np.asarray(keeper.loss if cfg.read_at == "fit" else keeper.end_loss, dtype=np.float64)
    results = [emc2_of(net, cfg, k) for k in range(net.population)]
    total = [int(sum(m[k].numel() for m in net.masks)) for k in range(net.population)]
    nonzero = [int(n) for n in net.nonzero()]
    out = {
        "score": [float(r.auc) for r in results],
        "scores": [[float(s) for s in r.scores] for r in results],
        "loss": [float(x) for x in loss],
        "dense_loss": [float(x) for x in dense_loss],
        "nonzero": nonzero,
        "dense_nonzero": total,
        "sparsity": [1.0 - n / t for n, t in zip(nonzero, total)],
        "fit_round": [int(r) for r in keeper.round],
        "end_nonzero": [int(n) for n in keeper.end_nonzero],
        "end_loss": [float(x) for x in keeper.end_loss],
        "live_units": [int(u) for u in net.live_units()[0]],
        "judge": results[0].judge,
        "ratio": png_ratio_at(cfg.target, cfg.res),
        "collapsed": [bool(f) for f in collapsed(net, cfg.res, dense_loss, loss)],
        "sp_stop": list(pr.extras["stop"]),
        "base_kept": [bool(r.base_kept) for r in results],
    }
    if cfg.keep_net:
        out["net"] = net.to("cpu")
    return out, net, img
