"""Experiment `optimizers`: Adam vs Muon vs SGD at the sweet spot (Muon's recipe: `volratio.train`).

At one target and depth (the sweet spot of its depth sweep), SP networks are trained and pruned
with each optimizer — Adam; Muon (`torch.optim.Muon` on the hidden W×W matrices, AdamW on the input
and output kernels, the standard recipe of `volratio.train`); SGD with momentum — over several
seeds, through `volratio.runs.sweep` (run function `optimizer_point`). Each run reports the final loss,
the compositional score (EMC2 AUC, default judge) and the sharpness (top Hessian eigenvalue,
`volratio.train.flatness`); `summarise` gives mean and t-interval per optimizer.

Chapter: "Optimization: Adam, Muon, SGD" (book/optimization.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import pandas as pd

from ..data.picbreeder import NONZEROS
from ..data.targets import get_target
from ..depth import point as depth_point
from ..depth import sparse_point as sparse_depth
from ..emc2.reading import Reading
from ..nets import CoordMLP
from ..runs import sixteen, stored
from ..runs.depth_sweep import depth_sweep, rescored
from ..runs.plan import Chunk, as_stored, changes
from ..runs.registry import stored_config
from ..runs.sweep import Sweep, results_dir, run_sweep
from ..train.flatness import top_eigenvalue
from ..util.limits import at_least, one_of, parsed_by
from ..util.presets import Presets, configure
from ..util.stats import mean_ci
from ._base import PAPER, ExperimentError, Result, Timer, Trained, check_reading, unscored

# learning rates per optimizer (Muon's own lr and its AdamW lr are TrainConfig's defaults)
DEFAULT_CASES = (
    {"optimizer": "adam", "lr": 0.01},
    {"optimizer": "muon"},
    {"optimizer": "sgd", "lr": 0.1},
)
# the reference grid: Adam at three rates; Muon at three rates on the hidden matrices with AdamW 3e-3 on
# the input and output kernels (at the library defaults' rates Muon leaves these deep networks near a
# constant image). `lr` 3e-3 is the depth sweep's rate (unused by Muon)
REFERENCE_CASES = tuple(
    [{"optimizer": "adam", "lr": lr} for lr in (1e-3, 3e-3, 1e-2)]
    + [{"optimizer": "muon", "muon_lr": lr, "adamw_lr": 3e-3, "lr": 3e-3} for lr in (3e-4, 1e-3, 3e-3)]
)


@dataclass(frozen=True)
class Point(depth_point.Point):
    """One run: one SP network trained with `optimizer`, plus its sharpness."""

    members: int = 1  # one network per run (more seeds, not more members)
    hessian_iters: int = 30  # power-iteration steps for the sharpness
    keep_net: bool = False  # return the network as an artifact

    LIMITS = {**depth_point.Settings.LIMITS, "members": one_of(1), "hessian_iters": at_least(1)}


complete_point = depth_point.complete_point  # a run's complete config: SP's entries but its seed and optimizer


def parse_point(config: dict) -> Point:
    cfg = configure(Point(), config, "optimizer_point")
    if cfg.members != 1:
        raise ExperimentError("optimizer_point trains one network per run (members = 1); use more seeds")
    return cfg


def point(config: dict) -> dict:
    """`depth_point` with the config's `optimizer` (adam | muon | sgd) and, in addition, the
    sharpness: top Hessian eigenvalue of the final MSE (`volratio.train.flatness.top_eigenvalue`).
    `collapsed` and `sp_stop` as in `depth_point`."""
    cfg = parse_point(config)
    net, target, img, dense_loss, pr = depth_point.sp_network(cfg)
    loss = float(pr.final_loss[0]) if pr is not None else float(dense_loss[0])
    res = depth_point.emc2_of(net, cfg)
    eig = top_eigenvalue(net, img, iters=cfg.hessian_iters, seed=cfg.seed)
    out = {
        "score": float(res.auc),
        "scores": [float(s) for s in res.scores],
        "loss": loss,
        "dense_loss": float(dense_loss[0]),
        "nonzero": int(net.nonzero()[0]),
        "sharpness": float(eig.value),
        "sharpness_iters": int(eig.iters),
        "judge": res.judge,
    }
    out.update({k: v[0] for k, v in depth_point.sp_metrics(net, cfg, dense_loss, pr).items()})  # of the one network
    out["base_kept"] = bool(res.base_kept)  # the judge: the network draws the label
    if cfg.keep_net:
        out["net"] = net.to("cpu")
    return out


@dataclass(frozen=True)
class SparsePoint(sparse_depth.SparsePoint):
    """One run in the sparse regime: one wide network trained with `optimizer`, pruned by unguarded
    SP (retraining with the same optimizer) and scored at its fit point
    (`volratio.depth.sparse_point`), plus the sharpness there."""

    members: int = 1  # one network per run (more seeds, not more members)
    hessian_iters: int = 50  # power-iteration steps for the sharpness

    LIMITS = {**sparse_depth.SparsePoint.LIMITS, "members": one_of(1), "hessian_iters": at_least(1)}


def parse_sparse_point(config: dict) -> SparsePoint:
    return configure(SparsePoint(), config, "sparse_optimizer_point")


complete_sparse_point = sparse_depth.complete_sparse_point


def sparse_point(config: dict) -> dict:
    """`sparse_depth_point` (one network) with the config's `optimizer`, and the sharpness of the
    network at its fit point (`volratio.train.flatness.top_eigenvalue`). Its metrics are per-member
    lists of one entry, as `sparse_depth_point`'s, so rescoring and the readers treat both alike."""
    cfg = parse_sparse_point(config)
    out, net, img = sparse_depth.fit_point_run(cfg)
    eig = top_eigenvalue(net, img, iters=cfg.hessian_iters, seed=cfg.seed)
    out.update(sharpness=float(eig.value), sharpness_iters=int(eig.iters))
    return out


@dataclass(frozen=True)
class Config(Presets):
    target: str = "planted:3:depth=3,width=3"  # the target (planted: known depth L* = 3)
    depth: int | None = None  # the depth studied; None: the sweet spot of an Adam depth sweep over base.depths
    seeds: int = 3  # seeds per optimizer
    cases: tuple = DEFAULT_CASES  # optimizers and their learning rates
    hessian_iters: int = 20  # power-iteration steps for the sharpness
    keep_nets: bool = False  # each run stores its network (artifact `net`: rescoring, the chapter's images)
    base: depth_point.Config = field(
        default_factory=lambda: depth_point.Config.quick(depths=(2, 3, 4, 5))
    )  # width, res, steps, SP, EMC2
    scale: str = "quick"  # the preset this config came from

    # allowed values, checked when a config is parsed (`volratio.util.limits`)
    LIMITS = {"depth": at_least(1), "seeds": at_least(1), "hessian_iters": at_least(1), "target": parsed_by(get_target)}

    def check(self) -> None:
        """Each of `cases` is a table of `optimizer_point` entries (`check_limits` runs this)."""
        for i, case in enumerate(self.cases):
            if not isinstance(case, dict):
                raise ExperimentError(f'cases[{i}] = {case!r}: give a table of entries, e.g. {{optimizer = "adam"}}')
            configure(Point(), dict(case), f"cases[{i}]")

    # reference: 5 seeds on the depth-regime reference settings (one network per run, trained on the
    # fused kernel), a learning-rate grid per optimizer — what chunk optimizers of
    # examples/sweeps/reference.toml runs at each Picbreeder target's measured sweet spot
    # (its `reference_chunks()` builds them from this preset); ~22 CPU-s per run at depth 14
    REFERENCE = staticmethod(
        lambda: {
            "seeds": 5,
            "hessian_iters": 50,
            "cases": REFERENCE_CASES,
            "keep_nets": True,
            "base": depth_point.Config.reference(depths=(2, 3, 4, 5, 6), members=1, window=None, train_path="fused"),
        }
    )
    FULL = staticmethod(
        lambda: {"seeds": 10, "hessian_iters": 100, "base": depth_point.Config.full(depths=(2, 3, 4, 5, 6))}
    )


def make_sweep(cfg: Config, name: str = "optimizers"):
    if cfg.depth is None:
        raise ExperimentError("make_sweep needs the depth: give Config(depth=…) or let run() find the sweet spot")
    base = replace(cfg.base, members=1).shared()
    base.pop("optimizer")
    base.pop("lr")
    base.update(target=cfg.target, depth=int(cfg.depth), hessian_iters=int(cfg.hessian_iters), lr=0.01, members=1,
                keep_net=bool(cfg.keep_nets))  # fmt: skip
    return Sweep(
        run="optimizer_point", config=base, cases=tuple(dict(c) for c in cfg.cases), seeds=int(cfg.seeds), name=name
    )


def summarise(table, level: float = 0.95):
    """One row per optimizer: mean and t-interval of loss, score and sharpness over seeds."""
    done = table[table["status"] == "done"]
    rows = []
    for opt, g in done.groupby("optimizer", sort=False):
        row = {"optimizer": opt, "n": len(g)}
        for col in ("loss", "score", "sharpness"):
            m, lo, hi = mean_ci(g[col].to_numpy(float), level)
            row.update({col: m, f"{col}_lo": lo, f"{col}_hi": hi})
        rows.append(row)
    return pd.DataFrame(rows)


def sweet_spot(cfg: Config, out=None):
    """`(depth, curve, report)`: the sweet spot of an Adam depth sweep of `cfg.target` over
    `cfg.base.depths` (a flat curve falls back to the target's true depth, else the middle depth)."""
    curves, report = depth_sweep(cfg.target, cfg.base, out=out or results_dir("optimizers-depth"))
    curve = curves[cfg.target]
    fallback = getattr(get_target(cfg.target), "depth", None) or curve.depths[len(curve.depths) // 2]
    return (curve.spot.depth if curve.spot.depth is not None else fallback), curve, report


def train(cfg: Config | None = None, *, out=None, executor=None, progress: bool | None = False) -> Trained:
    """Run (or read) the study, at `cfg.depth` or at the sweet spot found first (`sweet_spot`): each
    run trains, prunes and scores its networks under the config's judge (`point`). Table: one row per
    optimizer (means and intervals); extras: `runs` (one row per run), `report`, `depth` (the depth
    studied), `curve` (the depth curve, when it was swept)."""
    cfg = cfg or Config.quick()
    with Timer() as t:
        curve = spot_report = None
        if cfg.depth is None:
            spot, curve, spot_report = sweet_spot(cfg)
            cfg = replace(cfg, depth=spot)
        report = run_sweep(make_sweep(cfg), out or results_dir("optimizers"), executor, progress=progress)
    return Trained(
        "optimizers",
        cfg,
        summarise(report.table),
        list(range(cfg.seeds)),
        t.seconds,
        judge=cfg.base.judge,
        extras={
            "runs": report.table,
            "report": report,
            "depth": cfg.depth,
            "curve": curve,
            "depth_report": spot_report,
        },
    )


def score(trained: Trained, reading: Reading = PAPER) -> Result:
    """The study as its runs scored it (the default reading), or their stored networks scored under a
    reading's judge without training again (`volratio.runs.depth_sweep.rescored`), summarised per
    optimizer; the depth studied stays the one the training chose."""
    check_reading(reading)
    if reading.judge is None:
        return unscored(trained, reading)
    with Timer() as t:
        runs = rescored(trained.extras["report"], reading)
    return trained.result(summarise(runs), reading.judge, t.seconds, {"runs": runs})


def run(cfg: Config | None = None, *, out=None, executor=None, progress: bool | None = False) -> Result:
    """The study (see `train`). `Result.table`: one row per optimizer (means and intervals); extras:
    `runs` (one row per run), `report`, `depth`, `curve`."""
    return score(train(cfg, out=out, executor=executor, progress=progress), PAPER)


# ---------------------------------------------------------------------------------------------
# The reference scale (stored results)

REFERENCE_CHUNKS = ("optimizers",)  # chunks of examples/sweeps/reference.toml
# the study in the sparse regime (run function sparse_optimizer_point): wide networks pruned by
# unguarded SP, each scored at its fit point, at the depths of the sparse depth sweep's intervals
SPARSE_CHUNKS = ("optimizers_sparse", "optimizers_sparse_butterfly")
# the matched comparison that decides the claim: each cell's best settings (by dense MSE) rerun on the
# same seeds, SP stopped at one non-zero count per cell (`matched_counts`) and read there (`read_at = "end"`)
MATCHED_CHUNKS = ("optimizers_matched",)


def stored_runs(
    names=REFERENCE_CHUNKS,
    root=None,
    reading: Reading = stored.OWN,
):
    """The stored `optimizer_point` runs of `names` (under `root`, default `results/reference`): one
    row per run with `target`, `depth`, `optimizer`, `lr` (the learning rate that optimizer tunes:
    Muon's `muon_lr`, else `lr`), `adamw_lr` (Muon's AdamW part; NaN otherwise), `setting` (the
    learning rates in words), `seed`, `loss` (the scored network's MSE), `dense_loss` (before SP),
    `nonzero` (the scored network's non-zero weights), `sparsity` (its weight sparsity; NaN where the
    run did not record it: `optimizer_point`), `score`, `drawn` (the judge said the network draws its
    label; None where the run did not record it), `collapsed` (SP's flag on the scored network; None
    where the run did not record it), `sharpness`, `cpu_s`, `key` (the run's), `net` (the stored
    network's file, `CoordMLP.load`; None where the run kept none). Reads `optimizer_point` runs (`REFERENCE_CHUNKS`)
    and `sparse_optimizer_point` runs (`SPARSE_CHUNKS`: one-entry lists per metric) alike. `reading`
    (`volratio.emc2.reading.Reading`): the runs' own scores by default, else their scores under the
    reading (the chunk's score runs where the runs' own differ; `volratio.runs.stored.judged`)."""
    runs = (
        stored.runs_of(names, root, ExperimentError)
        if reading.own
        else stored.judged(names, root, reading, ExperimentError)
    )
    rows = []
    for r in runs:
        cfg = stored_config(r)
        m = r["metrics"]
        muon = cfg.optimizer == "muon"
        rows.append({"target": cfg.target, "depth": cfg.depth, "optimizer": cfg.optimizer,
                     "lr": cfg.muon_lr if muon else cfg.lr, "adamw_lr": cfg.adamw_lr if muon else float("nan"),
                     "setting": f"lr {cfg.muon_lr:g}, AdamW {cfg.adamw_lr:g}" if muon else f"lr {cfg.lr:g}",
                     "seed": cfg.seed,
                     "loss": _first(m["loss"]), "dense_loss": _first(m["dense_loss"]),
                     "nonzero": int(_first(m["nonzero"])), "sparsity": _first(m.get("sparsity", float("nan"))),
                     "score": _first(m["score"]), "drawn": _one(m.get("base_kept")),
                     "collapsed": _one(m.get("collapsed")), "sharpness": m["sharpness"], "cpu_s": r["cpu_s"],
                     "key": r["key"], "net": r.get("artifacts", {}).get("net")})  # fmt: skip
    return pd.DataFrame(rows)


def by_setting(runs) -> pd.DataFrame:
    """What each learning-rate setting did, per target, depth and optimizer (rows of `stored_runs`):
    the seeds, the median dense MSE, the median MSE of the scored network, its median non-zero
    weights and weight sparsity, the mean EMC2 AUC and the share the judge says draw their label."""
    return runs.groupby(["target", "depth", "optimizer", "setting"], sort=False).agg(
        seeds=("seed", "nunique"), dense_mse=("dense_loss", "median"), mse=("loss", "median"),
        nonzero=("nonzero", "median"), sparsity=("sparsity", "median"), score=("score", "mean"),
        drawn=("drawn", "mean"))  # fmt: skip


def mosaic(runs, res: int = 64, nonzero: bool = False) -> dict:
    """The arguments of `volratio.report.plots.image_grid` for the stored networks of `runs` (rows of
    `stored_runs`): one row per optimizer and setting, the seeds of each target (and depth, where a
    target was run at several) side by side, framed by the judge's verdict on the unperturbed image,
    captioned with the EMC2 score (and, with `nonzero`, the network's non-zero weights). Every run must
    have kept its network."""
    if runs.net.isna().any():
        raise ExperimentError("mosaic: some runs kept no network (keep_net = false); rerun them with keep_net")
    several = runs.groupby("target").depth.nunique()
    cells = list(dict.fromkeys(zip(runs.target, runs.depth)))
    rows, frames, caps, labels = [], [], [], []
    for (opt, setting), g in runs.groupby(["optimizer", "setting"], sort=False):
        row, fr, cp = [], [], []
        for t, d in cells:
            for r in g[(g.target == t) & (g.depth == d)].sort_values("seed").itertuples():
                row.append(CoordMLP.load(r.net).render(res)[0].detach().numpy())
                fr.append(None if r.drawn is None else bool(r.drawn))
                cp.append(f"{r.score:.2f}" + (f" · {r.nonzero:,}" if nonzero else ""))
        rows.append(row), frames.append(fr), caps.append(cp), labels.append(f"{opt}, {setting}")
    n = max(len(r) for r in rows) // len(cells)
    names = [t.split(":")[-1] + (f" @ {d}" if several[t] > 1 else "") for t, d in cells]
    cols = [name if k == n // 2 else "" for name in names for k in range(n)]
    return {"rows": rows, "row_labels": labels, "col_labels": cols, "frames": frames, "captions": caps}


def _first(score) -> float:
    """A run's metric: a float (an `optimizer_point` run), or a one-entry list (its rescore; a
    `sparse_optimizer_point` run)."""
    return float(score[0]) if isinstance(score, (list, tuple)) else float(score)


def _one(kept):
    """A run's `base_kept`: one bool (an `optimizer_point` run), or a one-entry list (its rescore)."""
    if isinstance(kept, (list, tuple)):
        return bool(kept[0]) if len(kept) == 1 else None
    return None if kept is None else bool(kept)


def matched_counts(runs) -> pd.DataFrame:
    """The non-zero count each cell's optimizers are compared at, from the fit-point runs `runs` (rows
    of `stored_runs` over `SPARSE_CHUNKS`): per target and depth, each optimizer's best setting by
    dense MSE (`at_best_lr`), the median non-zero count of its networks at their fit points, and the
    smaller of the two — the sparser optimizer's count, at which SP then stops both (chunk
    optimizers_matched). Reads the networks' sizes only, never their scores. Columns `target`,
    `depth`, `adam`, `muon` (the settings), `adam_nonzero`, `muon_nonzero`, `count`."""
    rows = []
    for key, summary in at_best_lr(runs, loss="dense_loss").items():
        target = key.split(" @ ")[0]
        row = {"target": target}
        for r in summary.itertuples():
            g = runs[(runs.target == target) & (runs.depth == r.depth) & (runs.optimizer == r.optimizer)
                     & (runs.setting == r.setting)]  # fmt: skip
            row.update(
                {"depth": int(r.depth), r.optimizer: r.setting, f"{r.optimizer}_nonzero": int(g.nonzero.median())}
            )
        row["count"] = min(row["adam_nonzero"], row["muon_nonzero"])
        rows.append(row)
    return pd.DataFrame(rows)[["target", "depth", "adam", "muon", "adam_nonzero", "muon_nonzero", "count"]]


def at_best_lr(runs, level: float = 0.95, loss: str = "loss") -> dict:
    """`{target: summary}`: per target (and depth, where a target was run at several: keys
    "target @ L"), each optimizer at its best learning-rate setting — the one with the lowest mean of
    column `loss` over seeds — summarised as `summarise` does, with `loss` as the loss (plus
    `setting`, `lr`, `depth`, `settings`, the grid tried, and `bracketed`: the best rate is interior to
    that grid). Chosen on the loss only, never on the score. `loss="dense_loss"` for the sparse
    regime, whose scored network's MSE is set by the fit criterion rather than by the optimizer."""
    out = {}
    several = runs.groupby("target").depth.nunique()
    for (target, depth), g in runs.groupby(["target", "depth"], sort=False):
        g = g.assign(loss=g[loss])
        rows = []
        for _, go in g.groupby("optimizer", sort=False):
            means = go.groupby("lr")["loss"].mean()
            best = go.groupby("setting", sort=False)["loss"].mean().idxmin()
            chosen = go[go.setting == best]
            s = summarise(chosen.assign(status="done"), level).iloc[0].to_dict()
            lr = chosen.lr.iloc[0]
            rows.append({**s, "setting": best, "lr": lr, "depth": int(depth), "settings": list(dict.fromkeys(go.setting)),
                         "bracketed": bool(means.index.min() < lr < means.index.max())})  # fmt: skip
        out[f"{target} @ {depth}" if several[target] > 1 else target] = pd.DataFrame(rows)
    return out


# ---------------------------------------------------------------------------------------------
# The reference plan's chunks (volratio.runs.plan writes them to examples/sweeps/reference.toml)


# Each Picbreeder target's reference sweet spot under the label-anchored judge, read from chunk
# depth_picbreeder when it finished (a result, which the preset cannot hold; tests/test_reference_store.py
# checks them against the stored depth curves): the optimizers chunk runs the preset there.
SWEET_SPOTS = {"picbreeder:skull": 4, "picbreeder:butterfly": 11, "picbreeder:apple": 3}

# The sparse-regime studies (run function sparse_optimizer_point): the preset's settings from wider
# starts (planted: 8 × their W_min = 3), under the judge of their day (optimizers_planted: the default)
SPARSE_WIDTH = {"picbreeder": 48, "planted": depth_point.PLANTED_START_WIDTH}
SPARSE_JUDGE = {"picbreeder": "anchored", "planted": "anchored-v2"}
SPARSE_SEEDS = (0, 1, 2)
# The fit-point cells (target, depth): the depths of depth_sparse_picbreeder's bootstrap 90% interval of
# the sweet spot; the butterfly's, (8, 12), is its own chunk, at every swept depth inside it
SPARSE_CELLS = (("picbreeder:skull", 6), ("picbreeder:skull", 8), ("picbreeder:apple", 6))
BUTTERFLY_CELLS = tuple(("picbreeder:butterfly", d) for d in (8, 10, 12))
# Their learning rates, bracketed by a dense pilot: Adam's, and Muon's on the hidden matrices with AdamW
# at ADAMW_LR on the input and output kernels
ADAM_LRS = (3e-3, 1e-2, 3e-2)
MUON_LRS = (1e-3, 3e-3, 1e-2)
ADAMW_LR = 1e-2
# optimizers_matched: per cell, the non-zero count SP stops both optimizers at (`matched_counts`: the
# sparser optimizer's median fit-point count; tests/test_reference_store.py checks them) and each
# optimizer's best setting by dense MSE in the fit-point chunks: (count, Adam's lr, Muon's muon_lr)
MATCHED = {
    ("picbreeder:skull", 6): (5604, 3e-3, 3e-3),
    ("picbreeder:skull", 8): (6153, 3e-3, 3e-3),
    ("picbreeder:apple", 6): (2816, 1e-3, 3e-3),
    ("picbreeder:butterfly", 8): (2984, 3e-3, 3e-3),
    ("picbreeder:butterfly", 10): (12174, 3e-3, 1e-3),
    ("picbreeder:butterfly", 12): (3351, 3e-3, 3e-3),
}
# optimizers_planted: the six planted targets of L* = 3..5, each at L* and pruned to chunk
# depth_matched_planted's count there (volratio.depth.point.MATCHED_COUNTS), at the matched chunk's settings
PLANTED_COUNTS = {t: depth_point.matched_count_at_true_depth(t) for t in depth_point.PLANTED_REFERENCE[2:8]}
PLANTED_SETTING = (3e-3, 3e-3)  # Adam's lr, Muon's muon_lr


def _adam(lr: float) -> dict:
    return {"optimizer": "adam", "lr": lr}


def _muon(lr: float) -> dict:
    return {"optimizer": "muon", "muon_lr": lr, "adamw_lr": ADAMW_LR}


def _at_fit_point(cells, settings) -> list:
    """One case per cell (target, depth) × setting: SP down towards the target's Picbreeder count,
    each network read at its fit point."""
    return [
        {"target": t, "depth": d, "sp.target_nonzeros": NONZEROS[t.partition(":")[2]], **s}
        for t, d in cells
        for s in settings
    ]


def _at_count(cells: dict) -> list:
    """Per cell `{(target, depth): (count, Adam's lr, Muon's muon_lr)}` one case per optimizer: SP stops
    at `count` and the network is read there."""
    return [
        {"target": t, "depth": d, "sp.target_nonzeros": n, "read_at": "end", **s}
        for (t, d), (n, adam, muon) in cells.items()
        for s in (_adam(adam), _muon(muon))
    ]


def reference_chunks() -> dict:
    """The chunks of the reference plan that this experiment owns (`volratio.runs.plan.Chunk`: a
    sweep spec and why it runs what it runs): the reference preset's sweep (`make_sweep`) at each
    target's `SWEET_SPOTS` depth, under the judge it was stored under; the sparse-regime studies run
    the grids and counts their comments give."""
    ref = Config.reference()
    near = make_sweep(replace(ref, target=next(iter(SWEET_SPOTS)), depth=1))
    shared = {k: v for k, v in near.config.items() if k not in ("target", "depth")}

    def study(why: str, cases: list, kind: str = "picbreeder") -> Chunk:
        """A chunk of the sparse-regime studies: `cases` from a start of `kind`'s width, with the preset's
        device, δ, stored networks and sharpness steps."""
        config = {"width": SPARSE_WIDTH[kind], "device": shared["device"], "judge": SPARSE_JUDGE[kind],
                  **{k: shared[k] for k in ("deltas", "keep_net", "hessian_iters")}}  # fmt: skip
        return Chunk(run="sparse_optimizer_point", why=why, seeds=SPARSE_SEEDS, cases=cases, config=config)

    grid = [*map(_adam, ADAM_LRS), *map(_muon, MUON_LRS)]
    planted = {(t, get_target(t).depth): (n, *PLANTED_SETTING) for t, n in PLANTED_COUNTS.items()}
    return {
        "optimizers": Chunk(
            run="optimizer_point",
            why=(
                'Muon against Adam (claim "muon-above-adam"), the optimizers experiment\'s reference preset at '
                "each Picbreeder target's reference sweet spot under the label-anchored judge, read from chunk "
                "depth_picbreeder when it finished (skull 4, butterfly 11, apple 3), with the depth chunks' "
                "settings (SP that keeps the fit, 10 × 200 steps) and one network per run (`optimizer_point`: SP "
                "network, stored; EMC2 under the anchored judge; the sharpness, top Hessian eigenvalue by 50 "
                "power-iteration steps). Learning-rate grid: Adam lr ∈ {1e-3, 3e-3, 1e-2}; Muon "
                "(torch.optim.Muon, lr scaled to match AdamW's update RMS) on the hidden matrices ∈ {3e-4, 1e-3, "
                "3e-3} with AdamW 3e-3 on the input and output kernels (Muon at the library defaults' 0.005–0.05 "
                "with AdamW 3e-4 left every network of a pilot at depth 14 near a constant image). The chapter "
                "compares each optimizer at its best setting by final loss. 90 runs (3 targets × 6 settings × 5 "
                "seeds), trained on the fused kernel (volratio.train.fused: the same optimizers, several times "
                "faster on a CPU)."
            ),
            seeds=tuple(range(ref.seeds)),
            cases=[{"target": t, "depth": d, **c} for t, d in SWEET_SPOTS.items() for c in near.cases],
            config=changes("optimizer_point", as_stored(shared)),
        ),
        "optimizers_sparse": study(
            (
                'Muon against Adam in the sparse regime (claim "muon-above-adam"; run function '
                "sparse_optimizer_point, volratio.experiments.optimizers.sparse_point): one network per run, as "
                "depth_sparse_picbreeder's — width 48, SP unguarded down the τ schedule towards the Picbreeder "
                "count, retraining with the run's own optimizer, scored at its fit point — plus its sharpness (50"
                " power-iteration steps). Where: the depths of depth_sparse_picbreeder's bootstrap 90% interval "
                "of the sweet spot (every weight, anchored judge): apple (6, 6) picks depth 6; skull (6, 8) is "
                "run at both. Butterfly's (8, 12) is chunk optimizers_sparse_butterfly. Learning rates, bracketed"
                " by a dense pilot (skull 6, butterfly 12, one seed; best Adam 1e-2–3e-2, best Muon 3e-3 with "
                "AdamW 1e-2): Adam lr ∈ {3e-3, 1e-2, 3e-2}, extended by 1e-3 (the last lines of cases) when "
                "Adam's best mean dense MSE fell on 3e-3, the grid's edge, and for apple by 3e-4 when it then "
                "fell on 1e-3; Muon on the hidden matrices ∈ {1e-3, 3e-3, 1e-2} with AdamW 1e-2 on the input and "
                "output kernels. Each optimizer is read at the setting of lowest mean *dense* MSE (the fit "
                "point's MSE is set by the fit criterion). 66 runs (3 cells × 7 settings × 3 seeds, and apple's "
                "Adam 3e-4), ~55–95 CPU-s each."
            ),
            [
                *_at_fit_point(SPARSE_CELLS, grid),
                *_at_fit_point(SPARSE_CELLS, [_adam(1e-3)]),  # Adam's best on the grid's edge, 3e-3
                *_at_fit_point(SPARSE_CELLS[2:], [_adam(3e-4)]),  # apple's then on 1e-3
            ],
        ),
        "optimizers_sparse_butterfly": study(
            (
                "The butterfly's cell of the sparse optimizer study: depth_sparse_picbreeder's interval for the "
                "butterfly is (8, 12), so it is run at all three swept depths inside it, 8, 10 and 12, with "
                "optimizers_sparse's settings and grids: Adam lr ∈ {1e-3, 3e-3, 1e-2, 3e-2}; Muon ∈ {1e-3, 3e-3, "
                "1e-2} with AdamW 1e-2, extended by Muon 3e-4 at depth 10 (the last line of cases) where Muon's "
                "best mean dense MSE fell on 1e-3, the grid's edge. 66 runs (3 depths × 7 settings × 3 seeds, and"
                " that one), ~80–160 CPU-s each."
            ),
            [
                *_at_fit_point(BUTTERFLY_CELLS, [_adam(1e-3), *grid]),
                *_at_fit_point(BUTTERFLY_CELLS[1:2], [_muon(3e-4)]),  # Muon's best on the grid's edge, 1e-3
            ],
        ),
        "optimizers_matched": study(
            (
                'Muon against Adam at one non-zero count per cell (claim "muon-above-adam", its deciding '
                'comparison; run function sparse_optimizer_point with read_at = "end"). optimizers_sparse and '
                "_butterfly read each network at its own fit point, so the two optimizers' networks differ in "
                "size (Muon's are sparser in most cells). Here each cell's two best settings (by dense MSE, as "
                "there) are rerun on the same seeds, SP stops both at one count and the networks are scored "
                "there, fitting or not: the count is the sparser optimizer's median fit-point count in the "
                "fit-point chunks (`volratio.experiments.optimizers.matched_counts`, which reads the networks' "
                "sizes, never their scores; tests/test_reference_store.py checks these cases against it). 36 runs "
                "(6 cells × 2 optimizers × 3 seeds); SP stops earlier than in the fit-point chunks."
            ),
            _at_count(MATCHED),
        ),
        "optimizers_planted": study(
            (
                "Judge-free instruments on planted targets (the recovery of the planted primitives by the hidden "
                "units, `volratio.rho.recovery`): six planted targets of known depth L* (3, 4, 5; width 3), each "
                "at L* and pruned to the non-zero count of `depth_matched_planted` at L* (where its networks "
                "still fit). Muon against Adam, at the optimizers_matched chunk's settings, every network stored:"
                " 36 runs."
            ),
            _at_count(planted),
            "planted",
        ),
        **{
            name: study(
                sixteen.why(
                    "muon-above-adam",
                    names,
                    "Step one: Adam and Muon at the rule's depth and settings (`sixteen.MUON_SETTINGS`), SP towards the "
                    "fork network's count, each network read at its fit point; step two reruns both at the sparser "
                    "optimizer's median fit-point count.",
                ),
                sixteen.muon_fit_cases(names),
            )
            for name, names in sixteen.MUON_FIT_CHUNKS.items()
        },
    }
