"""Pruning: similarity-based pruning (SP) and the baselines, behind one interface.

The paper's connectivity claim (Do, Shah, Le, Liu 2026): compositionality depends on *which*
connections remain, not on how many — standard pruners (Lottery Ticket, Wanda, LLM-Pruner) score 0
on EMC2-Bench and only SP scores above 0. This package builds the tools that test it.

Layout (shaped like `torch.nn.utils.prune` / Torch-Pruning, STYLE.md):

- `criteria` — importance criteria: small objects returning a score per weight or unit;
- `masks` — pure functions from scores and the previous mask to the new mask (exact counts),
  unit ↔ weight masks, and the sparsity accounting (`sparsity_report`);
- `schedules` — `(ratio, steps) -> list[float]`;
- `similarity_pruning` — SP; `baselines` — IMP with rewinding, Wanda, LLM-Pruner-style Taylor, magnitude, random,
  random units matched to another network.

Every method is `fn(net, image, config) -> PruneResult`; it prunes the population `net` in place
(each member independently; masks are `net.masks`, the weights under them exactly zero) and
retrains with `volratio.train.train`. `prune(net, image, "sp", tau=0.9)` dispatches by name.

Chapter: "Connectivity: which connections remain"; command: `volratio prune`.
"""

from __future__ import annotations

from dataclasses import fields, replace

from ..nets import CoordMLP
from ..train import TrainConfig
from .baselines import (
    IMPConfig,
    LLMPrunerConfig,
    MagnitudeConfig,
    RandomConfig,
    RandomUnitsConfig,
    WandaConfig,
    imp,
    llm_pruner,
    magnitude,
    matched_counts,
    random_units,
    random_weights,
    wanda,
)
from .criteria import CalibrationGrid, Magnitude, RandomScore, Taylor, Wanda, feature_maps
from .masks import (
    PruneError,
    apportion,
    masks_with_units,
    matched_weight_counts,
    nonzero_per_kernel,
    sparsity_report,
    unit_alive,
    unit_masks,
    weight_masks,
    weight_sparsity,
)
from .result import PruneResult, record
from .schedules import geometric, linear, one_shot, steps_for_rate
from .similarity_pruning import (
    COLLAPSE_FACTOR,
    FLAT_STD,
    SPConfig,
    collapsed,
    flat_images,
    redundant_pairs,
    similarity,
    sp,
)

# method name -> (config class, function)
METHODS = {
    "sp": (SPConfig, sp),
    "imp": (IMPConfig, imp),
    "wanda": (WandaConfig, wanda),
    "llm-pruner": (LLMPrunerConfig, llm_pruner),
    "magnitude": (MagnitudeConfig, magnitude),
    "random": (RandomConfig, random_weights),
    "random-units": (RandomUnitsConfig, random_units),
}
BASELINES = tuple(m for m in METHODS if m != "sp")  # the methods SP is compared with, at matched sparsity


def make_config(method: str, **options):
    """The config of `method` with `options` set (unknown options raise, naming the valid ones)."""
    if method not in METHODS:
        raise PruneError(f"unknown pruning method {method!r}; choose one of {', '.join(METHODS)}")
    cls = METHODS[method][0]
    names = {f.name for f in fields(cls)}
    bad = sorted(set(options) - names)
    if bad:
        raise PruneError(f"method {method!r} has no option {', '.join(bad)}; its options: {', '.join(sorted(names))}")
    return cls(**options)


def prune(net: CoordMLP, image, method: str, config=None, **options) -> PruneResult:
    """Prune `net` in place with `method` ("sp", "imp", "wanda", "llm-pruner", "magnitude",
    "random", "random-units") against the target `image`; options override the config's fields."""
    cfg = config if config is not None else make_config(method, **options)
    if config is not None and options:
        cfg = replace(config, **options)
    return METHODS[method][1](net, image, cfg)


__all__ = [
    "METHODS",
    "PruneResult",
    "PruneError",
    "prune",
    "make_config",
    "record",
    "sparsity_report",
    "SPConfig",
    "IMPConfig",
    "WandaConfig",
    "LLMPrunerConfig",
    "MagnitudeConfig",
    "RandomConfig",
    "RandomUnitsConfig",
    "sp",
    "imp",
    "wanda",
    "llm_pruner",
    "magnitude",
    "random_weights",
    "random_units",
    "CalibrationGrid",
    "Magnitude",
    "Wanda",
    "Taylor",
    "RandomScore",
    "feature_maps",
    "similarity",
    "redundant_pairs",
    "collapsed",
    "flat_images",
    "FLAT_STD",
    "COLLAPSE_FACTOR",
    "weight_masks",
    "matched_weight_counts",
    "nonzero_per_kernel",
    "unit_masks",
    "unit_alive",
    "masks_with_units",
    "apportion",
    "weight_sparsity",
    "matched_counts",
    "one_shot",
    "linear",
    "geometric",
    "steps_for_rate",
    "TrainConfig",
]
