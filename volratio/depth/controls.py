"""Controls for the instruments that decide claims on planted targets: can an instrument see an
effect of size m at all?

An *instrument* is any function `(network, planted target) -> score` that is higher for a more
compositional network: EMC2 under a judge (`emc2_instrument`), the recovery of the planted
primitives and its per-unit reading, raw or above chance (`recovery_instrument`). By name
(`instrument`): "recovery", "per-unit", "recovery-above-chance", "per-unit-above-chance", and
"emc2:JUDGE" for any judge `volratio.judges.make_judge` knows, so a new judge is one more name in
`ControlsConfig.instruments`.

For each planted target the controls are networks whose answer is known by construction:

- **positive**: the planted DAG built into a masked network (`PlantedTarget.graph.layerize`, grey
  head): every live unit computes a node of the DAG and the image is the target's.
- **negative**: dense networks of the planted architecture widened `widen` times, fitted to the
  same image by Adam and by SGD (`steps` full-image steps, `seeds` seeds each), and masked networks
  at initialisation (the planted masks under fresh LeCun-normal weights,
  `volratio.rho.recovery.at_initialisation`).
- **graded**: the planted network and a dense student side by side in one network (`blend`:
  block-diagonal weights, no connection between the blocks), whose output is `(1 − α)` times the
  planted network's output plus `α` times the student's, for α in `shares`. The student
  (`distil`) has the dense controls' architecture and is fitted by Adam to the planted network's
  signed output before the head (the grey head draws `clip(|o|, 0, 1)`, so two fits of the image
  can differ in sign and cancel in a blend; two fits of `o` cannot). α = 0 is the planted network
  exactly (the student's block masked out), α = 1 the student exactly; in between the image stays
  the target's (up to the student's error, the `mse` column of `Controls.table`) while the share of
  it computed by the planted circuit, 1 − α, falls. The order is known by construction: a
  compositional instrument should fall along α. A structural reading of the units sees three
  levels of it only (the planted units alone at α = 0, both blocks' for every 0 < α < 1, the
  student's alone at α = 1); a reading of what the network computes (EMC2 under a judge) sees every α.

What is reported (`summary`): the **control gap** of each instrument, positive − negative, per kind
of negative and for the hardest one (its smallest gap), as the mean over targets with a t-interval
on the targets' means (each target's negatives averaged over seeds first); and its **graded
response**: each target's Spearman ρ between α and the score (a constant series has ρ = 0: it does
not order the series), with the mean over targets and its t-interval. An instrument decides a claim
with smallest effect of interest m only when its gap's lower end is at least 3m; otherwise its row
says "insensitive" (`sensitivity`).

Chapter: "Depth: a narrow, target-dependent regime" (the evidence page's controls table).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import scipy
import torch

from ..data.targets import PlantedTarget, get_target
from ..emc2.scoring import EMC2Config, judges_for, score, target_label
from ..judges import DEFAULT_JUDGE, JUDGES
from ..nets import Arch, CoordMLP, coords
from ..rho import recovery
from ..train import TrainConfig, train
from ..util.limits import at_least, between, check_limits
from ..util.presets import Presets
from ..util.stats import mean_ci
from .curves import DepthError
from .predictor import planted_specs

Instrument = Callable[[CoordMLP, PlantedTarget], float]  # one network (population 1) → its score

DEPTH_TARGETS = tuple(planted_specs(depths=(2, 3, 4, 5, 6, 7), per_depth=2, start_seed=11))  # the depth chunks' 12
NEGATIVES = ("adam", "sgd", "init")  # the kinds of negative control
RECOVERY_READINGS = {  # instrument name → the recovery reading it returns
    "recovery": "recovery",
    "per-unit": "per_unit",
    "recovery-above-chance": "recovery",
    "per-unit-above-chance": "per_unit",
}


@dataclass(frozen=True)
class ControlsConfig(Presets):
    """What the controls build and how the instruments read them (module docstring)."""

    targets: tuple = DEPTH_TARGETS  # planted targets (the 12 of the depth chunks, L* = 2..7, two each)
    res: int = 32  # images, fits and feature maps at res × res
    widen: int = 4  # a dense control has each activation group of the planted architecture × widen units
    steps: int = 400  # full-image optimizer steps of a dense control
    adam_lr: float = 3e-3  # Adam's learning rate (the library's default)
    sgd_lr: float = 3e-2  # SGD's learning rate (momentum 0.9)
    seeds: int = 3  # negative controls of each kind per target
    shares: tuple = (0.0, 0.25, 0.5, 0.75, 1.0)  # the graded series: α, the dense student's share of the output
    # what reads the controls (`instrument`); the judges' EMC2 joins as one more "emc2:JUDGE" name
    instruments: tuple = (
        "recovery",
        "per-unit",
        "recovery-above-chance",
        "per-unit-above-chance",
        f"emc2:{DEFAULT_JUDGE}",
    )
    max_weights: int = 60  # EMC2 scores a seeded sample of this many non-zero weights per network
    deltas: tuple = (-1.0, -0.5, 0.5, 1.0)  # EMC2's δ grid
    level: float = 0.95  # confidence of the intervals over targets
    seed: int = 0  # seeds the dense fits, the networks at initialisation and EMC2's sample of weights

    LIMITS = {"res": at_least(8), "widen": at_least(1), "steps": at_least(1), "adam_lr": between(0, 1, open_lo=True),
              "sgd_lr": between(0, 1, open_lo=True), "seeds": at_least(1), "max_weights": at_least(1),
              "level": between(0, 1, open_lo=True), "seed": at_least(0)}  # fmt: skip

    # the book's live scale and the tests': two targets (L* = 3), one seed of each negative, 16×16
    QUICK = {"targets": DEPTH_TARGETS[2:4], "res": 16, "seeds": 1, "steps": 150, "max_weights": 20}

    def __post_init__(self):
        check_limits(self, "ControlsConfig")
        if not self.targets:
            raise DepthError("ControlsConfig: no targets; name planted targets (planted:SEED:depth=L,width=W)")
        if (
            len(self.shares) < 3
            or any(not 0 <= a <= 1 for a in self.shares)
            or list(self.shares) != sorted(set(self.shares))
        ):
            raise DepthError(f"ControlsConfig: shares {self.shares} must be at least 3 increasing values in [0, 1]")
        for name in self.instruments:
            instrument(name, self)  # an unknown name fails here, before anything trains


# ---------------------------------------------------------------------------------------------
# Instruments


def recovery_instrument(reading: str = "recovery", above_chance: bool = False, res: int = 32) -> Instrument:
    """Recovery (`reading="recovery"`) or per-unit recovery (`"per_unit"`) of the planted primitives
    (`volratio.rho.recovery`), minus its chance level against other planted targets when
    `above_chance`."""
    if reading not in ("recovery", "per_unit"):
        raise DepthError(f"recovery reading {reading!r}: choose 'recovery' or 'per_unit'")
    cfg = recovery.RecoveryConfig(res=res)

    def read(net: CoordMLP, target: PlantedTarget) -> float:
        s = recovery.structure(net, target, cfg)
        if not above_chance:
            return float(getattr(s, reading)[0])
        return float(recovery.above_chance(s, recovery.chance(net, target, cfg))[reading][0])

    return read


def emc2_instrument(judge: str, cfg: EMC2Config) -> Instrument:
    """EMC2's normalised area under the δ-curve under `judge` (0 where the judge does not keep the
    base image), at the settings `cfg`."""
    if judge not in JUDGES:
        raise DepthError(f"instrument emc2:{judge}: unknown judge; known: {', '.join(JUDGES)}")

    def read(net: CoordMLP, target: PlantedTarget) -> float:
        js = judges_for(net, [judge], target.spec, cfg)
        return float(score(net, js, target_label(target.spec), cfg)[0].auc)

    return read


def instrument(name: str, cfg: ControlsConfig) -> Instrument:
    """The instrument called `name` (module docstring) at `cfg`'s resolution and EMC2 settings."""
    if name in RECOVERY_READINGS:
        return recovery_instrument(RECOVERY_READINGS[name], name.endswith("above-chance"), cfg.res)
    kind, _, judge = name.partition(":")
    if kind == "emc2" and judge:
        emc2 = EMC2Config(
            res=cfg.res, deltas=tuple(cfg.deltas), max_params=cfg.max_weights, seed=cfg.seed, device="cpu"
        )
        return emc2_instrument(judge, emc2)
    raise DepthError(f"unknown instrument {name!r}; known: {', '.join(RECOVERY_READINGS)}, emc2:JUDGE")


def sensitivity(gap_lo: float, m: float) -> str:
    """An instrument's word for a claim whose smallest effect of interest is `m`: "decides" when its
    control gap (the lower end of its interval, `gap_lo`) is at least 3m, else "insensitive". An
    instrument that cannot tell a network compositional by construction from one that is not by 3m
    cannot call an effect of size m absent."""
    if not np.isfinite(m) or m <= 0:
        raise DepthError(f"smallest effect of interest m = {m!r}: give a finite m > 0")
    if not np.isfinite(gap_lo):
        raise DepthError(f"control gap {gap_lo!r} is not a number: measure the controls first")
    return "decides" if gap_lo >= 3 * m - 1e-12 else "insensitive"  # 3 × 0.1 is 0.30000000000000004


# ---------------------------------------------------------------------------------------------
# The control networks


def planted_network(target: PlantedTarget) -> CoordMLP:
    """The positive control: the planted DAG in a masked network (grey head)."""
    return target.graph.layerize(ink_as_hsv=False).net


def dense_arch(planted: CoordMLP, widen: int) -> Arch:
    """The dense controls' architecture: `planted`'s depth, each of its activation groups × `widen`."""
    return Arch(planted.depth, tuple((a, n * widen) for a, n in planted.arch.groups))


def dense_fit(target: PlantedTarget, planted: CoordMLP, optimizer: str, seed: int, cfg: ControlsConfig) -> CoordMLP:
    """A negative control: a dense network of `planted`'s architecture widened `cfg.widen` times,
    fitted to the target's image by `optimizer` ("adam" or "sgd")."""
    net = CoordMLP(dense_arch(planted, cfg.widen), head=planted.head, seed=seed)
    lr = cfg.adam_lr if optimizer == "adam" else cfg.sgd_lr
    tc = TrainConfig(steps=cfg.steps, optimizer=optimizer, lr=lr, device="cpu", log_every=cfg.steps)
    return train(net, target.image(cfg.res), tc).net


def distil(planted: CoordMLP, seed: int, cfg: ControlsConfig) -> CoordMLP:
    """A dense student of `planted`: the dense controls' architecture, fitted by Adam (`cfg.steps`
    full-grid steps at `cfg.adam_lr`) to `planted`'s signed output before the head on the `cfg.res`
    grid."""
    net = CoordMLP(dense_arch(planted, cfg.widen), head=planted.head, seed=seed)
    grid = coords(cfg.res)
    with torch.no_grad():
        want = planted(grid)  # (1, res², n_out)
    opt = torch.optim.Adam(net.parameters(), lr=cfg.adam_lr)
    for step in range(cfg.steps):
        opt.zero_grad()
        loss = ((net(grid) - want) ** 2).mean()
        if not torch.isfinite(loss):
            raise DepthError(f"distil: the student's loss is {loss.item()} at step {step}; lower adam_lr")
        loss.backward()
        opt.step()
    net.apply_masks_()
    return net


def blend(planted: CoordMLP, dense: CoordMLP, share: float) -> CoordMLP:
    """`planted` and `dense` side by side in one network, no weight between them, drawing `(1 −
    share)` × planted's output + `share` × dense's (before the head). A block whose share is 0 is
    masked out, so `blend(p, d, 0)` computes `p` and `blend(p, d, 1)` computes `d` with their own
    non-zero weights. Both must be single networks of the same depth and head."""
    if planted.population != 1 or dense.population != 1:
        raise DepthError("blend: give single networks (population 1)")
    if planted.depth != dense.depth or planted.head != dense.head or planted.n_inputs != dense.n_inputs:
        raise DepthError(
            f"blend: {planted.arch} ({planted.head}) and {dense.arch} ({dense.head}) differ in depth, head or inputs"
        )
    if not 0 <= share <= 1:
        raise DepthError(f"blend: share {share!r} must lie in [0, 1]")
    # the blend's layer: per activation, the planted network's units of it, then the dense one's
    acts = list(dict.fromkeys(a for net in (planted, dense) for a, _ in net.arch.groups))
    count = [dict(net.arch.groups) for net in (planted, dense)]
    groups = tuple((a, count[0].get(a, 0) + count[1].get(a, 0)) for a in acts)
    first = dict(zip(acts, np.cumsum([0] + [n for _, n in groups])))  # activation → its first column
    cols = [  # each network's units, in its own order → their columns in the blend
        [first[a] + (count[0].get(a, 0) if b else 0) + i for a, n in net.arch.groups for i in range(n)]
        for b, net in enumerate((planted, dense))
    ]
    arch = Arch(planted.depth, groups)
    W, n_out = arch.width, planted.weights[-1].shape[2]
    dims = [planted.n_inputs] + [W] * arch.depth + [n_out]
    kernels = [torch.zeros(1, i, o, dtype=torch.float64) for i, o in zip(dims[:-1], dims[1:])]
    masks = [torch.zeros_like(k) for k in kernels]
    scale = (1.0 - share, share)
    for b, net in enumerate((planted, dense)):
        if scale[b] == 0:
            continue
        c = torch.tensor(cols[b])
        rows = [torch.arange(net.n_inputs)] + [c] * net.depth  # each kernel's input units in the blend
        outs = [c] * net.depth + [torch.arange(n_out)]  # … and its output units
        for i, (w, m) in enumerate(zip(net.weights, net.masks)):
            f = scale[b] if i == net.depth else 1.0  # the output kernel carries the block's share
            kernels[i][0, rows[i][:, None], outs[i][None, :]] = w[0].detach().double() * f
            masks[i][0, rows[i][:, None], outs[i][None, :]] = m[0].detach().double()
    return CoordMLP.from_kernels(arch, kernels, head=planted.head, masks=masks, dtype=planted.weights[0].dtype)


@dataclass
class Controls:
    """The controls measured on the planted targets: one row per (target, control, seed, α, instrument)."""

    config: ControlsConfig
    table: pd.DataFrame = field(repr=False)  # target, control, seed, share, instrument, score, mse


def image_mse(net: CoordMLP, target: PlantedTarget, res: int) -> float:
    """Mean squared error of `net`'s image against the target's, RGB in [0, 1]."""
    with torch.no_grad():
        return float(((net.render(res)[0].double() - target.image(res).double()) ** 2).mean())


def control_networks(target: PlantedTarget, cfg: ControlsConfig) -> list[tuple[str, int, float, CoordMLP]]:
    """Every control network of `target`: `(control, seed, α, network)`, the positive first, then the
    negatives of each kind, then the graded series (α = NaN outside it)."""
    planted = planted_network(target)
    nan = float("nan")
    out = [("positive", 0, nan, planted)]
    for seed in range(cfg.seed, cfg.seed + cfg.seeds):
        out += [(opt, seed, nan, dense_fit(target, planted, opt, seed, cfg)) for opt in ("adam", "sgd")]
        out.append(("init", seed, nan, recovery.at_initialisation(planted, seed)))
    student = distil(planted, cfg.seed, cfg)
    out += [("graded", cfg.seed, float(a), blend(planted, student, a)) for a in cfg.shares]
    return out


def measure(cfg: ControlsConfig, instruments: dict[str, Instrument] | None = None, progress=None) -> Controls:
    """Build the controls of every target of `cfg` and read each with every instrument: those named in
    `cfg.instruments`, or `instruments` (name → function) when given. `progress(target)`: called as
    each target starts."""
    instruments = instruments or {n: instrument(n, cfg) for n in cfg.instruments}
    targets = [get_target(spec) for spec in cfg.targets]  # every target checked before anything trains
    for spec, target in zip(cfg.targets, targets):
        if not isinstance(target, PlantedTarget):
            raise DepthError(f"{spec}: the controls need a planted target (planted:SEED:depth=L,width=W)")
    rows = []
    for spec, target in zip(cfg.targets, targets):
        if progress:
            progress(spec)
        for control, seed, share, net in control_networks(target, cfg):
            mse = image_mse(net, target, cfg.res)
            for name, read in instruments.items():
                rows.append(dict(target=spec, control=control, seed=seed, share=share, instrument=name,
                                 score=read(net, target), mse=mse))  # fmt: skip
    return Controls(cfg, pd.DataFrame(rows))


# ---------------------------------------------------------------------------------------------
# Summaries


def spearman(share, score) -> float:
    """Spearman ρ between α and the score along one graded series; 0 where the score is constant
    (the series is not ordered at all)."""
    score = np.asarray(score, dtype=np.float64)
    if np.ptp(score) == 0:
        return 0.0
    return float(scipy.stats.spearmanr(share, score).statistic)


def summary(controls: Controls) -> pd.DataFrame:
    """Per instrument: the positive control's mean, each kind of negative's, the gap to each and to
    the hardest (`gap_*`, with `_lo`/`_hi` ends over targets), and the graded response (the mean
    Spearman ρ between α and the score over targets, `graded_rho`, its ends, and the share of targets
    whose series falls, `graded_falls`)."""
    t, level = controls.table, controls.config.level
    out = []
    for name, d in t.groupby("instrument", sort=False):
        by = d[d.control != "graded"].groupby(["target", "control"]).score.mean().unstack()  # (targets, controls)
        row = {"instrument": name, "targets": len(by), "positive": by["positive"].mean()}
        gaps = {k: by["positive"] - by[k] for k in NEGATIVES}
        gaps["hardest"] = pd.concat(gaps, axis=1).min(axis=1)
        for k, g in gaps.items():
            if k != "hardest":
                row[k] = by[k].mean()
            row[f"gap_{k}"], row[f"gap_{k}_lo"], row[f"gap_{k}_hi"] = mean_ci(g.to_numpy(), level)
        g = d[d.control == "graded"]
        rho = np.array([spearman(s.share, s.score) for _, s in g.groupby("target", sort=False)])
        mean, lo, hi = mean_ci(rho, level)
        # a mean of correlations lies in [−1, 1]: its t-interval is clipped there, never shown outside it
        row["graded_rho"], row["graded_rho_lo"], row["graded_rho_hi"] = mean, max(lo, -1.0), min(hi, 1.0)
        row["graded_falls"] = float((rho < 0).mean())
        out.append(row)
    return pd.DataFrame(out).set_index("instrument")


def graded_means(controls: Controls) -> pd.DataFrame:
    """The graded series' mean score over targets: (α, instrument), and the images' mean MSE."""
    g = controls.table[controls.table.control == "graded"]
    means = g.pivot_table(index="share", columns="instrument", values="score", aggfunc="mean", sort=False)
    return means.assign(mse=g.groupby("share").mse.mean())


def decisions(controls: Controls, m: dict[str, float]) -> pd.Series:
    """Per instrument named in `m` (instrument → its claim's smallest effect of interest): "decides" or
    "insensitive", read from the lower end of its gap to the hardest negative (`sensitivity`)."""
    s = summary(controls)
    missing = sorted(set(m) - set(s.index))
    if missing:
        raise DepthError(f"no controls measured for {', '.join(missing)}; measured: {', '.join(s.index)}")
    return pd.Series({k: sensitivity(s.loc[k, "gap_hardest_lo"], v) for k, v in m.items()}, name="sensitivity")
