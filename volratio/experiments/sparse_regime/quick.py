"""The sparse regime's protocol over several targets at once, as the connectivity chapter runs it live.

`run_targets(cfg, targets, reading, emc2_config)` runs `cfg` (one target per population) for each
target and scores it under `reading`: one `Result` whose table has a `target` column, with extras
`nets` (`{target: {(method, checkpoint): population}}`), `images` (`{target: images}`), `config` and
`emc2` (the EMC2 settings it was scored at). `summary` tabulates a table's columns per target and
method (mean and t-interval over members); `tau_sensitivity` and `sp_ablation` prune the same dense
networks again with SP changed, as `train` prunes them (one stage: towards `target_nonzeros` within
`sp.rounds` rounds; a config with checkpoints on the way is refused).

Chapter: "Connectivity: which connections remain" (the near-dense preset at the quick scale), and its
evidence page (SP's fit-keeping changes).
"""

from __future__ import annotations

import time
from dataclasses import asdict, replace

import numpy as np
import pandas as pd

from ...emc2 import EMC2Config
from ...emc2.reading import Reading
from ...prune import prune
from ...prune.criteria import member_mse
from ...prune.masks import weight_sparsity
from ...train import TrainConfig
from ...util.stats import mean_ci
from .._base import PAPER, ExperimentError, Result
from . import Config, score, score_population, score_settings, train

# The chapter's EMC2 at the quick scale: a seeded 40 weights per network at 24×24 (every weight of its
# 72 near-dense networks under a judge would take several CPU-minutes)
QUICK_EMC2 = replace(score_settings(), res=24, max_params=40)


def run_targets(cfg: Config, targets, reading: Reading = PAPER, emc2_config: EMC2Config | None = None) -> Result:
    """`cfg` trained and scored once per target of `targets` (target specs; `cfg.target` is replaced),
    under `reading` at `emc2_config` (default `QUICK_EMC2`; `score`), as one `Result` (see the module
    docstring); its seconds are the runs' together."""
    targets = list(targets)
    if not targets:
        raise ExperimentError("run_targets: give one or more target specs, e.g. ['picbreeder:skull']")
    ec = emc2_config or QUICK_EMC2
    t0, tables, nets, images = time.time(), [], {}, {}
    for t in targets:
        trained = train(replace(cfg, target=t))
        tables.append(score(trained, reading, ec).table.assign(target=t))
        nets[t], images[t] = trained.networks, trained.extras["images"]
    return Result("sparse_regime", asdict(cfg), pd.concat(tables, ignore_index=True),
                  [cfg.seed + k for k in range(cfg.members)], time.time() - t0, reading.judge,
                  extras={"nets": nets, "images": images, "config": cfg, "emc2": ec})  # fmt: skip


def summary(table: pd.DataFrame, columns=("loss_ratio", "sparsity", "emc2_auc"), level: float = 0.95):
    """Per target and method, over the checkpoint rows (`kind` "checkpoint"): the mean of each column
    and its t-interval over the members, as strings `mean [lo, hi]` (a single number where the
    members agree), targets and methods in the table's order; `n` counts the networks measured and,
    where a baseline could not be matched, `failed` those it could not prune."""
    t = table[table.kind == "checkpoint"]
    cols = [c for c in columns if c in t.columns]
    out = []
    for (target, method), g in t.groupby(["target", "method"], sort=False):
        ok = g[g["failed"].isna()] if "failed" in g else g  # a network a method could not prune has no metrics
        row = {"target": target, "method": method, "n": len(ok)}
        if "failed" in t:
            row["failed"] = len(g) - len(ok)
        for c in cols:
            m, lo, hi = mean_ci(ok[c].astype(float), level)
            row[c] = f"{m:.3f} [{lo:.3f}, {hi:.3f}]" if hi > lo else f"{m:.3f}"
        out.append(row)
    return pd.DataFrame(out)


def unit_sparsity(table: pd.DataFrame) -> pd.Series:
    """Per checkpoint row, the fraction of the dense network's hidden units that no longer reach the
    output (its `live_units` against the dense row of the same target and member)."""
    t = table[table.kind == "checkpoint"]
    dense = {(r.target, r.member): sum(r.live_units) for r in t[t.method == "dense"].itertuples()}
    return pd.Series([1.0 - sum(u) / dense[(tg, m)] for tg, m, u in zip(t.target, t.member, t.live_units)], t.index)


def _pruned_again(result: Result, target: str, over: dict):
    """SP from `target`'s dense networks of `result` again, with the SP settings `over` changed, as
    `train` prunes them: `(net, prune result, dense MSE per member)`."""
    cfg = result["config"]
    if cfg.checkpoints:
        raise ExperimentError(
            f"SP pruned again: the run has checkpoints {list(cfg.checkpoints)} on the way; give a config without "
            "(checkpoints = ()), as the near-dense preset has"
        )
    dense, images = result["nets"][target][("dense", "dense")], result["images"][target]
    tc = TrainConfig(lr=cfg.lr, device=cfg.device, path=cfg.train_path)
    net = dense.copy()
    pr = prune(net, images, "sp", replace(cfg.sp, **over, target_nonzeros=cfg.target_nonzeros or None, train=tc))
    return net, pr, np.asarray(member_mse(dense, images))


def tau_sensitivity(result: Result, taus=(0.8, 0.95)) -> pd.DataFrame:
    """SP's threshold τ moved: every target's dense networks of `result` pruned again with the run's τ
    and with each of `taus` (the run's τ reproduces its SP networks), one row per τ with the means over
    every network of the weight and unit sparsity and of MSE ÷ the dense MSE, the EMC2 AUC under the
    run's judge at the run's EMC2 settings, and how many networks stopped for lack of a redundant pair."""
    cfg, judge = result["config"], result.judge
    if judge is None:
        raise ExperimentError("tau_sensitivity: score the run under a judge first (run_targets with a Reading)")
    rows = []
    for tau in sorted({float(cfg.sp.tau), *map(float, taus)}):
        nets = {t: _pruned_again(result, t, {"tau": tau}) for t in result["nets"]}
        aucs = [a for t, (net, _, _) in nets.items()
                for a in score_population(net, t, [judge], result["emc2"])[f"auc_{judge}"]]  # fmt: skip
        rows.append({"τ": tau,
                     "sparsity": np.mean([s for net, _, _ in nets.values() for s in weight_sparsity(net.masks)]),
                     "unit sparsity": np.mean([s for _, pr, _ in nets.values() for s in pr.summary()["unit_sparsity"]]),
                     "MSE ÷ dense": np.mean([x for _, pr, d in nets.values() for x in np.asarray(pr.final_loss) / d]),
                     "EMC2 AUC": float(np.mean(aucs)),
                     "stopped: no redundant pair": sum(s == "no redundant pair" for _, pr, _ in nets.values()
                                                       for s in pr.extras["stop"])})  # fmt: skip
    return pd.DataFrame(rows).set_index("τ")


# SP without its fit-keeping changes (no guard, retraining at the training rate, units only masked,
# every redundant pair at once), and each of the four changes added in turn (`sp_ablation`)
_AT_ONCE = {"per_round": None, "per_round_fraction": None}  # no cap on the units a round removes
SP_STEPS = {
    "masked only, no guard": {"loss_factor": None, "retrain_lr_factor": 1.0, "compensate": "none", **_AT_ONCE},
    "+ guard (2× dense MSE)": {"loss_factor": 2.0, "retrain_lr_factor": 1.0, "compensate": "none", **_AT_ONCE},
    "+ retraining at 0.1 × lr": {"loss_factor": 2.0, "retrain_lr_factor": 0.1, "compensate": "none", **_AT_ONCE},
    "+ compensation (span)": {"loss_factor": 2.0, "retrain_lr_factor": 0.1, "compensate": "span", **_AT_ONCE},
    "+ 4 units per round": {"loss_factor": 2.0, "retrain_lr_factor": 0.1, "compensate": "span", **_AT_ONCE,
                            "per_round": 4},
}  # fmt: skip


def sp_ablation(result: Result, steps: dict = SP_STEPS) -> pd.DataFrame:
    """SP's fit-keeping changes one at a time: every target's dense networks of `result` pruned again
    with each entry of `steps` (label -> SPConfig changes; the run's τ, rounds and retraining steps
    kept). One row per entry: the mean weight and unit sparsity, the median of MSE after SP ÷ dense MSE,
    the share of collapsed networks and how many stopped at the guard. No EMC2."""
    rows = []
    for label, over in steps.items():
        per = [_pruned_again(result, t, over) for t in result["nets"]]
        rows.append({"SP": label,
                     "sparsity": float(np.mean([s for net, _, _ in per for s in weight_sparsity(net.masks)])),
                     "unit sparsity": float(np.mean([s for _, pr, _ in per for s in pr.summary()["unit_sparsity"]])),
                     "MSE ÷ dense (median)": float(np.median([x for _, pr, d in per
                                                              for x in np.asarray(pr.final_loss) / d])),
                     "collapsed": float(np.mean([c for _, pr, _ in per for c in pr.collapsed])),
                     "stopped at the guard": sum("round undone" in s for _, pr, _ in per
                                                 for s in pr.extras["stop"])})  # fmt: skip
    return pd.DataFrame(rows).set_index("SP")
