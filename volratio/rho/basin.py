"""The basin model of ρ(W, L) (`volratio.rho`): trained networks on a planted image target.

Instead of sampling random networks, K masked initialisations per (W, L) are trained on a planted
target (`volratio.train`) and each trained network is classified: a *solution* when its final MSE
is small enough, *compositional* when every planted primitive is carried by a hidden unit (and,
with `use_emc2`, when its EMC2 score passes; `volratio.emc2`). See `BasinConfig`.

Chapter: "The volume-ratio argument" (book/volume_ratio.md) and `volratio rho basin`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch

from .. import emc2
from ..data.targets import get_target
from ..nets import CoordMLP
from ..train import PATHS, TrainConfig, train
from ..util.device import generator
from ..util.limits import above, at_least, between, one_of
from ..util.presets import Presets
from . import recovery
from .intervals import Counts, row
from .sampler import RhoError, SamplerConfig, cell_seed


@dataclass(frozen=True)
class BasinConfig(Presets):
    """Train K random masked initialisations per (W, L) on a planted target and classify them.

    A trained network is a *solution* when its final MSE is ≤ `loss_tol`. A solution is
    *compositional* when all planted primitives (the output node included: in a network of depth
    L* a hidden unit of the last layer computes it and the linear head rescales it) can be
    assigned to distinct hidden units (any layer; optimal assignment by
    `volratio.rho.recovery.assigned_correlations`) each with |Pearson correlation| ≥ `threshold`
    between the unit's feature map and the primitive's ground-truth map — and, with `use_emc2`, when its
    EMC2 area under the δ-curve (`volratio.emc2.score`) is ≥ `emc2_threshold`.
    """

    population: int = 16  # K networks per (W, L), trained as one population
    steps: int = 800  # Adam steps
    lr: float = 1e-2  # Adam learning rate (higher than FER's 3e-3: short runs)
    res: int = 32  # training and feature resolution
    p: float = 0.75  # Bernoulli density of the masks on every hidden-layer kernel (the head stays dense)
    activations: tuple = ("gaussian", "sin", "sigmoid")  # the planted targets' activation cycle
    loss_tol: float = 2e-3  # MSE (grey, [0, 1]) below which a network counts as a solution
    threshold: float = 0.9  # |correlation| a unit needs to carry a primitive
    use_emc2: bool = False  # also require the EMC2 criterion (needs volratio.emc2 and a judge)
    emc2_threshold: float = 0.5  # minimum normalised EMC2 AUC when use_emc2
    emc2_params: int | None = 100  # EMC2 scores a seeded subsample of this many non-zero weights per network
    seed: int = 0
    device: str = "auto"
    confidence: float = 0.95
    interval: str = "wilson"
    train_path: str = "auto"  # TrainConfig.path ("auto": the fused kernel on the CPU, else the fast path)

    # allowed values, checked when a config is parsed (`volratio.util.limits`)
    LIMITS = {
        "population": at_least(1), "steps": at_least(1), "lr": above(0), "res": at_least(2),
        "p": between(0, 1, open_lo=True), "loss_tol": above(0), "threshold": between(0, 1),
        "emc2_threshold": between(0, 1), "emc2_params": at_least(1), "seed": at_least(0),
        "confidence": between(0, 1, open_lo=True), "interval": one_of("wilson", "clopper-pearson"),
        "train_path": one_of(*PATHS),
    }  # fmt: skip

    # the book's scale is the defaults (K = 16, 800 steps at 32×32); the full one: K = 256, 5000
    # steps at 64×64, EMC2 on every non-zero weight
    FULL = {"population": 256, "steps": 5000, "res": 64, "emc2_params": None}


def _arch(W: int, L: int, activations) -> str:
    counts = [sum(1 for j in range(W) if j % len(activations) == i) for i in range(len(activations))]
    return f"{L};" + ",".join(f"{a}:{c}" for a, c in zip(activations, counts) if c)


def basin_cell(target, W: int, L: int, cfg: BasinConfig, judge: str | None = None) -> dict:
    """Train K masked networks of width W, depth L on a planted target; one result row. `judge`:
    the EMC2 judge's name when `cfg.use_emc2` (None: `BASIN_JUDGE`)."""
    if isinstance(target, str):
        target = get_target(target)
    if not hasattr(target, "primitive_maps"):
        raise RhoError(f"{getattr(target, 'spec', target)}: the basin model needs a planted target (planted:SEED[:…])")
    K = cfg.population
    s = cell_seed(cfg.seed, W, L, 0)
    g = generator(s)
    arch = _arch(W, L, cfg.activations)
    dims = [4] + [W] * L + [1]
    masks = [
        (torch.rand(K, fi, fo, generator=g) < cfg.p).float() if i < L else torch.ones(K, fi, fo)
        for i, (fi, fo) in enumerate(zip(dims[:-1], dims[1:]))
    ]
    net = CoordMLP(arch, head="grey", population=K, seed=s, masks=masks)
    res = train(
        net,
        target.image(cfg.res),
        TrainConfig(steps=cfg.steps, lr=cfg.lr, device=cfg.device, log_every=max(cfg.steps, 1), path=cfg.train_path),
    )
    net = res.net
    loss = res.final_loss
    sol = loss <= cfg.loss_tol
    prims = target.primitive_maps(cfg.res)  # name → (res, res), the output node included
    with torch.no_grad():
        feats = [f.cpu() for f in net.features(cfg.res)]
    # the structural score's correlations and one-to-one assignment (`volratio.rho.recovery`), here
    # over every planted node (the output included) and every unit
    A = recovery.assigned_correlations(recovery.primitive_correlations(feats, prims))  # (K, n_prim)
    comp = sol & (A.min(axis=1) >= cfg.threshold)
    emc2_auc = None
    if cfg.use_emc2:
        emc2_auc = _emc2_aucs(net, np.nonzero(comp)[0], judge, cfg, getattr(target, "spec", "target"))
        comp = comp & np.array([a is not None and a >= cfg.emc2_threshold for a in emc2_auc])
    c = Counts(K, int(sol.sum()), int(comp.sum()))
    r = row(None, W, L, c, SamplerConfig(confidence=cfg.confidence, interval=cfg.interval))
    r.update(
        final_loss=loss.tolist(),
        primitive_corr=A.tolist(),
        emc2_auc=emc2_auc,
        criterion="correlation+emc2" if cfg.use_emc2 else "correlation",
    )
    return r


# The basin criterion's EMC2 judge when none is named: "calibrated" (similarity to the solution's own
# render, per-label thresholds of the first verdict set). The anchored judge has no verdicts on
# planted targets; stored basin runs (results/reference/rho_basin) name no judge and mean this one.
BASIN_JUDGE = "calibrated"


def _emc2_aucs(net, members, judge, cfg: BasinConfig, target_spec: str = "target") -> list:
    """Normalised EMC2 AUC of the chosen members (None for the others), each scored by
    `volratio.emc2.score` (the one EMC2 path) on its own unperturbed image with the label
    "target": `judge` is a `volratio.judges.make_judge` name (None: `BASIN_JUDGE`; "ssim" is
    calibrated per member, seeded by `cfg.seed`)."""
    out = [None] * net.population
    for k in members:
        ec = emc2.EMC2Config.quick(
            member=int(k), res=cfg.res, device=cfg.device, max_params=cfg.emc2_params, seed=cfg.seed
        )
        js = emc2.judges_for(net, [judge or BASIN_JUDGE], target_spec, ec, calibration_seed=cfg.seed)
        out[int(k)] = emc2.score(net, js, "target", ec)[0].auc
    return out


def basin_grid(target, Ws, Ls, cfg: BasinConfig = BasinConfig(), judge: str | None = None) -> list[dict]:
    """`basin_cell` over a (W, L) grid."""
    t = get_target(target) if isinstance(target, str) else target
    return [basin_cell(t, W, L, cfg, judge) for L in Ls for W in Ws]


def basin_table(rows: list[dict], loss_tol: float, threshold: float):
    """A basin grid as a table: per (W, L) the networks trained (`samples`), the solutions, those
    that also pass the correlation criterion alone (`corr-only`: MSE ≤ `loss_tol` and every
    primitive on a unit with |corr| ≥ `threshold`), the compositional ones (the row's criterion)
    and ρ with its interval."""

    def corr_only(r):
        return sum(
            1 for loss, a in zip(r["final_loss"], r["primitive_corr"]) if loss <= loss_tol and min(a) >= threshold
        )

    df = pd.DataFrame(rows)
    df["corr-only"] = [int(corr_only(r)) for r in rows]
    df["rho (95% CI)"] = ["—" if r["rho"] is None else f"{r['rho']:.2f} [{r['lo']:.2f}, {r['hi']:.2f}]" for r in rows]
    return df[["W", "L", "samples", "solutions", "corr-only", "compositional", "rho (95% CI)"]]


def basin_checks(rows: list[dict], depth: int, w_min: int) -> list[tuple[str, bool, str]]:
    """The two statements the volume-ratio chapter tests on a basin grid of a planted target with
    true depth `depth` (L*) and width `w_min`, each as (statement, holds, numbers): no network
    shallower than L* is compositional, and every wider cell at L* has ρ significantly below
    ρ(W_min, L*) (its interval entirely under the peak's)."""
    cell = {(r["W"], r["L"]): r for r in rows}
    if (w_min, depth) not in cell:
        raise RhoError(f"the basin grid has no cell (W_min, L*) = ({w_min}, {depth}); add W = {w_min} and L = {depth}")
    shallow = [r for r in rows if r["L"] < depth]
    checks = [
        (
            "ρ = 0 below L*",
            all(r["compositional"] == 0 for r in shallow),
            f"{sum(r['solutions'] for r in shallow)} shallow solutions, "
            f"{sum(r['compositional'] for r in shallow)} compositional",
        )
    ]
    peak = cell[(w_min, depth)]
    wide = [cell[(W, depth)] for W in sorted({W for W, L in cell if L == depth}) if W > w_min]

    def show(r):
        return "no solutions" if r["rho"] is None else f"{r['rho']:.2f} [{r['lo']:.2f}, {r['hi']:.2f}]"

    below = peak["rho"] is not None and all(r["rho"] is not None and r["hi"] < peak["lo"] for r in wide)
    checks.append(
        (
            "ρ decays with W at L* (every wider cell significantly below the peak)",
            bool(wide) and below,
            f"ρ(W_min, L*) = {show(peak)}; wider at L*: " + ", ".join(f"W={r['W']}: {show(r)}" for r in wide),
        )
    )
    return checks
