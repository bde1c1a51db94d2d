"""The baselines SP is compared with, behind the same interface as SP
(`volratio.prune.similarity_pruning`).

| method | items | procedure | reference |
| --- | --- | --- | --- |
| `magnitude` | weights | global or layer-wise `|w|`, one shot or a schedule, then fine-tune | Han et al. 2015 |
| `imp` | weights | train; global magnitude, 20 % of the remaining per level; rewind survivors to step k; retrain; repeat (k = 0: the original Lottery Ticket) | Frankle & Carbin 2019; Frankle et al. 2020 |
| `wanda` | weights | `|w|·‖X‖`, compared within each output unit, the same ratio in every layer, layers in order (later layers see the pruned earlier ones), no weight update | Sun et al. 2024 |
| `llm-pruner` | units | group Taylor importance (first order or param_mix), lowest groups removed, then fine-tune | Ma et al. 2023 |
| `random` | weights | uniformly at random at the requested sparsity | control |
| `random-units` | units | the same number of live units per layer as another network, chosen at random | control: *which* vs *how many* |

Sparsity: for weight methods, the fraction of all weights that are masked (`round(s · n)` exactly);
for unit methods, the fraction of hidden units (L·W) that are dead. The weight methods also take
`match` instead: another network of the same shape (SP's result), whose non-zero count they reach
exactly in every kernel (`masks.matched_weight_counts`), so a baseline is matched per layer. Every config's `retrain_steps`
fine-tunes after each pruning step with `volratio.train.train` (masks stay applied).

Chapter: "Connectivity: which connections remain".
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace

import numpy as np
import torch

from ..nets import CoordMLP
from ..train import TrainConfig, train
from .criteria import CalibrationGrid, Magnitude, RandomScore, Taylor, Wanda, place
from .masks import (
    PruneError,
    check_not_empty,
    kernel_counts,
    matched_weight_counts,
    per_member,
    row_mask,
    unit_alive,
    unit_masks,
    weight_masks,
)
from .result import PruneResult, record
from .schedules import SCHEDULES, geometric, steps_for_rate


def _schedule(name: str, sparsity, steps: int, K: int, what: str = "sparsity") -> list[list[float]]:
    """Per step, the sparsity of each of the K networks (`sparsity`: one number or one per network)."""
    if name not in SCHEDULES:
        raise PruneError(f"unknown schedule {name!r}; use one of {', '.join(SCHEDULES)}")
    per = [SCHEDULES[name](s, steps) for s in per_member(sparsity, K, what)]
    return [list(level) for level in zip(*per)]


def _retrain(net: CoordMLP, image, base: TrainConfig, steps: int) -> None:
    if steps > 0:
        train(net, image, TrainConfig(**{**asdict(base), "steps": int(steps)}))


def _set_masks(net: CoordMLP, masks) -> None:
    for i, m in enumerate(masks):
        net.set_mask(i, m)


def _prunable(net: CoordMLP, exclude_output: bool) -> list[bool]:
    return [not (exclude_output and i == net.n_kernels - 1) for i in range(net.n_kernels)]


# ---------------------------------------------------------------------------------------------
# Weight pruning


@dataclass
class MagnitudeConfig:
    sparsity: float = 0.5  # fraction of all weights masked at the end (or one value per network)
    scope: str = "global"  # global | layer
    schedule: str = "one_shot"  # one_shot | linear | geometric
    steps: int = 1  # pruning steps of the schedule
    retrain_steps: int = 200  # fine-tuning after each pruning step
    exclude_output: bool = False  # never prune the output kernel
    match: object = None  # a network (or its masks) whose per-kernel non-zero counts to reach exactly, in
    # one step with the layer scope, instead of `sparsity` (e.g. SP's result: a baseline matched per layer)
    train: TrainConfig = field(default_factory=TrainConfig)  # fine-tuning optimizer (steps ignored)


@dataclass
class RandomConfig:
    sparsity: float = 0.5  # fraction of all weights masked (or one value per network)
    retrain_steps: int = 200  # fine-tuning after pruning
    seed: int = 0  # which weights
    match: object = None  # as MagnitudeConfig.match: per-kernel non-zero counts of another network, exactly
    train: TrainConfig = field(default_factory=TrainConfig)


@dataclass
class WandaConfig:
    sparsity: float = (
        0.5  # fraction of all weights masked, the same in every kernel and output unit (or one per network)
    )
    retrain_steps: int = 0  # Wanda itself updates no weight; > 0 adds fine-tuning afterwards
    match: object = None  # as MagnitudeConfig.match: per-kernel non-zero counts of another network, exactly
    train: TrainConfig = field(default_factory=TrainConfig)


def weight_counts_to_match(net: CoordMLP, match) -> np.ndarray:
    """`(K, n_kernels)` masked weights per kernel that leave `net` with the per-kernel non-zero counts
    of `match`: a `CoordMLP`, its masks, or those counts themselves (`(K, n_kernels)` ints)."""
    if isinstance(match, CoordMLP):
        return matched_weight_counts(net.masks, match.masks)
    if isinstance(match, (list, tuple)) and match and isinstance(match[0], torch.Tensor):
        return matched_weight_counts(net.masks, list(match))
    want = np.asarray(match)
    if want.shape != (net.population, net.n_kernels) or want.dtype.kind not in "iu":
        raise PruneError(
            f"match: give a network, its masks, or ({net.population}, {net.n_kernels}) non-zero counts per kernel, "
            f"not an array of shape {want.shape}"
        )
    ref = [torch.zeros_like(m) for m in net.masks]
    for k in range(net.population):
        for i, n in enumerate(want[k]):
            ref[i][k].view(-1)[: int(n)] = 1  # any layout with these counts: only the counts are read
    return matched_weight_counts(net.masks, ref)


def _recorded(cfg, net: CoordMLP, counts: np.ndarray):
    """`cfg` as a result records it: a matched network as its per-kernel non-zero counts."""
    if cfg.match is None:
        return asdict(cfg)
    sizes = np.array([m[0].numel() for m in net.masks])
    return asdict(replace(cfg, match=(sizes[None, :] - counts).tolist()))


def _weight_loop(net, image, criterion, cfg, scope, prunable, name):
    calib = CalibrationGrid.from_image(image, place(net, cfg.train))
    history = [record(net, calib, 0)]
    if cfg.match is not None:  # one step to the matched per-kernel counts
        counts = weight_counts_to_match(net, cfg.match)
        _set_masks(net, weight_masks(criterion.scores(net, calib), net.masks, None, "layer", prunable, counts))
        _retrain(net, image, cfg.train, cfg.retrain_steps)
        history.append(record(net, calib, 1))
        return PruneResult(net, name, _recorded(cfg, net, counts), history)
    steps = getattr(cfg, "steps", 1)
    for r, s in enumerate(_schedule(getattr(cfg, "schedule", "one_shot"), cfg.sparsity, steps, net.population), 1):
        _set_masks(net, weight_masks(criterion.scores(net, calib), net.masks, s, scope, prunable))
        _retrain(net, image, cfg.train, cfg.retrain_steps)
        history.append(record(net, calib, r))
    return PruneResult(net, name, asdict(cfg), history)


def magnitude(net: CoordMLP, image, cfg: MagnitudeConfig | None = None):
    cfg = cfg or MagnitudeConfig()
    if cfg.scope not in ("global", "layer"):
        raise PruneError(f"magnitude scope must be global or layer, got {cfg.scope!r}")
    return _weight_loop(net, image, Magnitude(), cfg, cfg.scope, _prunable(net, cfg.exclude_output), "magnitude")


def random_weights(net: CoordMLP, image, cfg: RandomConfig | None = None):
    cfg = cfg or RandomConfig()
    return _weight_loop(net, image, RandomScore(cfg.seed), cfg, "global", None, "random")


def wanda(net: CoordMLP, image, cfg: WandaConfig | None = None):
    """Wanda, layer by layer: kernel i is scored with the activations of the network whose kernels
    below i are already pruned, then every output unit of kernel i loses its lowest-scored weights."""
    cfg = cfg or WandaConfig()
    calib = CalibrationGrid.from_image(image, place(net, cfg.train))
    history = [record(net, calib, 0)]
    if cfg.match is not None:
        counts = weight_counts_to_match(net, cfg.match)  # (K, n_kernels)
    else:
        counts = kernel_counts(net.masks, cfg.sparsity)
    crit = Wanda()
    for i in range(net.n_kernels):
        score = crit.scores(net, calib)[i]  # (K, fan_in, fan_out), with kernels < i pruned
        m = net.masks[i].clone()
        for k in range(net.population):
            m[k] = row_mask(score[k], net.masks[i][k], int(counts[k, i]))
        check_not_empty([m])
        net.set_mask(i, m)
    _retrain(net, image, cfg.train, cfg.retrain_steps)
    history.append(record(net, calib, 1))
    return PruneResult(net, "wanda", _recorded(cfg, net, counts), history)


# ---------------------------------------------------------------------------------------------
# Iterative magnitude pruning with rewinding (Lottery Ticket)


@dataclass
class IMPConfig:
    sparsity: float = 0.8  # final fraction of all weights masked (or one value per network)
    rate: float = 0.2  # fraction of the remaining weights removed per level (Frankle & Carbin: 20 %)
    rewind_step: int = 0  # k: survivors are reset to their value after k training steps (0 = original LTH)
    train_steps: int = 600  # T: training per level (the first level trains 0 → T, later ones k → T)
    exclude_output: bool = False  # never prune the output kernel
    train: TrainConfig = field(default_factory=TrainConfig)  # optimizer (steps ignored)
    match: object = None  # as MagnitudeConfig.match, instead of `sparsity`: every kernel's count is reached
    # at the last level, each level keeping the same geometric share of what it prunes in every kernel


def imp_levels(net: CoordMLP, cfg: IMPConfig) -> list:
    """Per level, what `weight_masks` takes: `(sparsity per network, None)` for the global schedule,
    or `(None, counts)` with `(K, n_kernels)` masked counts rising geometrically to the matched ones."""
    if cfg.match is None:
        svec = per_member(cfg.sparsity, net.population)
        n = steps_for_rate(max(svec), cfg.rate)
        return [(list(lv), None) for lv in zip(*[geometric(s, n) for s in svec])]
    final = weight_counts_to_match(net, cfg.match)  # (K, n_kernels) masked at the end
    sizes = np.array([m[0].numel() for m in net.masks], dtype=float)
    keep = (sizes - final) / sizes  # fraction kept per kernel at the end
    n = steps_for_rate(float((final.sum(1) / sizes.sum()).max()), cfg.rate)
    levels = []
    for lv in range(1, n + 1):
        masked = np.rint(sizes * (1 - keep ** (lv / n))).astype(np.int64)
        levels.append((None, np.maximum(masked, levels[-1][1]) if levels else masked))
    levels[-1] = (None, final)
    return levels


def imp(net: CoordMLP, image, cfg: IMPConfig | None = None):
    """Lottery-ticket IMP. `net` is θ₀ — pass the *untrained* initialisation for the original
    procedure (a trained network is also accepted and is then its own θ₀). The weights θ_k are
    taken after k steps of the first training run; every level masks the lowest-magnitude 20 % of
    the surviving weights (globally), resets survivors to θ_k and trains T − k steps.
    Each call of `train` starts a fresh optimizer, so the run 0 → k → T restarts Adam's moments at k.
    `extras["theta_k"]` holds θ_k and `extras["rewound"]` the weights at the start of the last level."""
    cfg = cfg or IMPConfig()
    if not 0 <= cfg.rewind_step <= cfg.train_steps:
        raise PruneError(f"rewind_step must lie in [0, train_steps={cfg.train_steps}], got {cfg.rewind_step}")
    calib = CalibrationGrid.from_image(image, place(net, cfg.train))
    k_steps = int(cfg.rewind_step)
    _retrain(net, image, cfg.train, k_steps)
    theta_k = [w.detach().clone() for w in net.weights]
    _retrain(net, image, cfg.train, cfg.train_steps - k_steps)
    history = [record(net, calib, 0)]
    levels = imp_levels(net, cfg)
    scope = "global" if cfg.match is None else "layer"
    prunable = _prunable(net, cfg.exclude_output)
    rewound = None
    for r, (s, counts) in enumerate(levels, 1):
        _set_masks(net, weight_masks(Magnitude().scores(net), net.masks, s, scope, prunable, counts))
        with torch.no_grad():
            for w, t in zip(net.weights, theta_k):
                w.copy_(t)
            net.apply_masks_()
        rewound = [w.detach().clone() for w in net.weights]
        _retrain(net, image, cfg.train, cfg.train_steps - k_steps)
        history.append(record(net, calib, r))
    recorded = asdict(cfg) if cfg.match is None else _recorded(cfg, net, levels[-1][1])
    levels = [s if counts is None else counts.tolist() for s, counts in levels]
    return PruneResult(net, "imp", recorded, history, extras={"theta_k": theta_k, "rewound": rewound, "levels": levels})


# ---------------------------------------------------------------------------------------------
# Unit pruning


@dataclass
class LLMPrunerConfig:
    sparsity: float = 0.5  # fraction of the hidden units (L·W) dead at the end (or one value per network)
    variant: str = "first"  # Taylor importance: first | param_mix
    n_batches: int = 16  # calibration batches for param_mix's Fisher term
    scope: str = "layer"  # layer: the same fraction of units in every layer (LLM-Pruner) | global
    schedule: str = "one_shot"  # one_shot | linear | geometric
    steps: int = 1  # pruning steps of the schedule
    retrain_steps: int = 200  # fine-tuning after each step (LLM-Pruner's recovery stage)
    train: TrainConfig = field(default_factory=TrainConfig)
    match: object = None  # as RandomUnitsConfig.match, instead of `sparsity`: one step to another
    # network's live units per layer, the lowest-importance groups removed


@dataclass
class RandomUnitsConfig:
    match: object = None  # a CoordMLP, or per-network per-layer live-unit counts [[n_0, …, n_{L-1}], …]
    sparsity: float | None = None  # without `match`: fraction of hidden units dead, spread by `scope`
    scope: str = "layer"  # layer | global (only without `match`)
    seed: int = 0  # which units
    retrain_steps: int = 200  # fine-tuning after pruning
    train: TrainConfig = field(default_factory=TrainConfig)


def llm_pruner(net: CoordMLP, image, cfg: LLMPrunerConfig | None = None):
    cfg = cfg or LLMPrunerConfig()
    crit = Taylor(cfg.variant, cfg.n_batches)
    calib = CalibrationGrid.from_image(image, place(net, cfg.train))
    history = [record(net, calib, 0)]
    if cfg.match is not None:
        counts = matched_counts(cfg.match, net)
        _set_masks(net, unit_masks(crit.scores(net, calib), net.masks, counts=counts))
        _retrain(net, image, cfg.train, cfg.retrain_steps)
        history.append(record(net, calib, 1))
        return PruneResult(net, "llm-pruner", asdict(replace(cfg, match=counts)), history)
    for r, s in enumerate(_schedule(cfg.schedule, cfg.sparsity, cfg.steps, net.population, "unit sparsity"), 1):
        _set_masks(net, unit_masks(crit.scores(net, calib), net.masks, sparsity=s, scope=cfg.scope))
        _retrain(net, image, cfg.train, cfg.retrain_steps)
        history.append(record(net, calib, r))
    return PruneResult(net, "llm-pruner", asdict(cfg), history)


def matched_counts(match, net: CoordMLP) -> list[list[int]]:
    """Per network of `net`, the live units per hidden layer to copy from `match` (a network with
    one member, broadcast, or as many members as `net`; or explicit counts)."""
    if isinstance(match, CoordMLP):
        if match.depth != net.depth:
            raise PruneError(f"cannot match a network of depth {match.depth} to one of depth {net.depth}")
        counts = [[int(a[k].sum()) for a in unit_alive(match.masks)] for k in range(match.population)]
    else:
        counts = [list(map(int, row)) for row in match]
    if len(counts) == 1:
        counts = counts * net.population
    if len(counts) != net.population:
        raise PruneError(
            f"the matched network has {len(counts)} members but this population has {net.population}; "
            "give one member (broadcast) or the same number"
        )
    return counts


def random_units(net: CoordMLP, image, cfg: RandomUnitsConfig | None = None):
    cfg = cfg or RandomUnitsConfig()
    calib = CalibrationGrid.from_image(image, place(net, cfg.train))
    history = [record(net, calib, 0)]
    scores = RandomScore(cfg.seed, level="unit").scores(net)
    if cfg.match is not None:
        masks = unit_masks(scores, net.masks, counts=matched_counts(cfg.match, net))
    elif cfg.sparsity is not None:
        masks = unit_masks(scores, net.masks, sparsity=cfg.sparsity, scope=cfg.scope)
    else:
        raise PruneError("random-units needs a network to match (--match NET) or a unit sparsity (--sparsity S)")
    _set_masks(net, masks)
    _retrain(net, image, cfg.train, cfg.retrain_steps)
    history.append(record(net, calib, 1))
    if isinstance(cfg.match, CoordMLP):  # record the counts, not a copy of the network
        cfg = replace(cfg, match=matched_counts(cfg.match, net))
    return PruneResult(net, "random-units", asdict(cfg), history)
