"""Experiment `depth_regime`: the compositional score against depth, per target (DESIGN §3.7).

For each target, SP networks are trained at each depth of a range × seeds (dense training, SP
`volratio.prune.sp`, then the EMC2 score `volratio.emc2.score_network` under the config's judge),
run through `volratio.runs.sweep` with the run function `depth_point`; per depth the mean score and
loss with t-intervals over the seeds, and the sweet spot (`volratio.depth.sweet_spot`). The PNG
ratio of each target (`volratio.depth.complexity.png_ratio`) and the predictor fitted on sweet spots
(`volratio.depth.fit_predictor`) complete the chapter's test of the depth claims.

`Settings` holds what every run shares (one copy of the defaults: sweeps, the command line
`volratio depth sweep` and the optimizer study use it); `Point` is one run's config.

Chapters: "Depth: a narrow, target-dependent regime" (book/depth.md), "Unknown targets",
"Your own target"; command: `volratio depth sweep`.
"""

from __future__ import annotations

import functools
from dataclasses import asdict, dataclass, fields

import numpy as np
import pandas as pd

from .. import emc2
from ..data.targets import get_target
from ..depth import DepthError, fit_predictor, sweet_spot
from ..depth.complexity import png_ratio
from ..emc2 import DEFAULT_DELTAS, UNIT_DELTAS
from ..judges.registry import JUDGES, check_res
from ..nets import ACTIVATIONS, Arch, CoordMLP
from ..prune import SPConfig, collapsed, sp
from ..prune.similarity_pruning import COMPENSATE
from ..runs import reference, rescore
from ..runs.store import Store
from ..runs.sweep import InProcess, Processes, Sweep, results_dir, run_sweep
from ..train import OPTIMIZERS, PATHS, TrainConfig, train
from ..util.limits import above, at_least, between, nonzero, one_of
from ..util.presets import Presets, configure
from ..util.stats import mean_ci
from ._base import Result, Timer

# The planted targets of the chapter: true depth L* known, PNG ratio computable (width 3 each)
PLANTED = ("planted:1:depth=2,width=3", "planted:2:depth=3,width=3", "planted:3:depth=4,width=3")
# The reference scale's targets: the three Picbreeder targets, and twelve planted ones (L* = 2..7, two
# each, width 3) whose sweet spots are the predictor's training set and the depth claim's planted half
PICBREEDER = ("picbreeder:skull", "picbreeder:butterfly", "picbreeder:apple")
PLANTED_REFERENCE = tuple(f"planted:{s}:depth={2 + (s - 11) // 2},width=3" for s in range(11, 23))


@dataclass(frozen=True)
class Settings:
    """What every run of a depth sweep shares (one run adds `target`, `depth`, `seed`)."""

    members: int = 3  # networks trained together as one population per run (speed only; seeds = runs × members)
    width: int = 8  # units per hidden layer before pruning
    activation: str = "gaussian"  # one activation for every hidden unit
    res: int = 16  # training, pruning and scoring resolution
    steps: int = 120  # dense training steps (full batch)
    lr: float = 0.01  # learning rate (Adam, AdamW, SGD)
    optimizer: str = "adam"  # adam | adamw | sgd | muon (training and SP retraining)
    muon_lr: float = 0.02  # Muon's learning rate on the hidden matrices (DESIGN §9; scaled to match AdamW's RMS)
    adamw_lr: float = 3e-4  # with Muon: AdamW's learning rate on the input and output kernels
    tau: float = 0.9  # SP cosine-similarity threshold (the paper gives none; ours)
    sp_rounds: int = 2  # SP prune → retrain rounds (0: no pruning)
    retrain_steps: int = 30  # training steps after each SP round
    retrain_lr_factor: float = 0.1  # SP retrains at this × `lr` (SPConfig.retrain_lr_factor)
    sp_per_round: int | None = 2  # SPConfig.per_round: units removed per network per round, most similar
    # first (None: every redundant pair at once)
    sp_compensate: str = "span"  # SPConfig.compensate: a removed unit's outgoing weights move onto the units
    # that stay ("none": they are dropped)
    sp_loss_factor: float | None = 2.0  # SP's guard (SPConfig.loss_factor): undo a round above this × the dense
    # MSE (None: no guard)
    deltas: tuple = UNIT_DELTAS  # EMC2 perturbation sizes (both signs, FER's |Δw| ≤ 1)
    max_params: int | None = 20  # EMC2 scores a seeded subsample of this many non-zero weights (None = all)
    judge: str = "anchored"  # EMC2 judge (volratio.judges.make_judge): label-anchored on the target image
    device: str = "cpu"  # sweeps run single-threaded on CPU for bit-for-bit repeatability
    train_path: str = "auto"  # TrainConfig.path of training and SP retraining: "auto" = the fused C++ kernel
    # (volratio.train.fused) on the CPU, the fast path on CUDA. The stored reference chunks ran "fast"

    # allowed values, checked when a config is parsed (`volratio.util.limits`); None passes where allowed
    LIMITS = {
        "members": at_least(1), "width": at_least(1), "activation": one_of(*ACTIVATIONS), "res": at_least(2),
        "steps": at_least(1), "lr": above(0), "optimizer": one_of(*OPTIMIZERS), "muon_lr": above(0),
        "adamw_lr": above(0), "tau": between(0, 1, open_lo=True), "sp_rounds": at_least(0),
        "retrain_steps": at_least(0), "retrain_lr_factor": above(0), "sp_per_round": at_least(1),
        "sp_compensate": one_of(*COMPENSATE), "sp_loss_factor": at_least(1), "deltas": nonzero(),
        "max_params": at_least(1), "judge": one_of(*JUDGES), "train_path": one_of(*PATHS),
        "depth": at_least(1), "seed": at_least(0), "seeds": at_least(1), "depths": at_least(1),
        "ratio_res": at_least(2), "processes": at_least(1), "tol": at_least(0), "window": at_least(0),
    }  # fmt: skip

    def __post_init__(self):
        check_res(self.judge, self.res, f"res = {self.res}: images", DepthError)  # before any training

    def shared(self) -> dict:
        """The settings as a sweep's shared config: every entry (a run adds `target`, `depth`, `seed`)."""
        c = {f.name: getattr(self, f.name) for f in fields(Settings)}
        c["deltas"] = [float(x) for x in self.deltas]
        return c


@dataclass(frozen=True)
class Point(Settings):
    """One run of a depth sweep: `members` SP networks of one depth on one target."""

    target: str = "planted:0"  # a volratio.data.targets spec
    depth: int = 3  # hidden layers
    seed: int = 0  # initialisations, SP's choices and the EMC2 subsample
    keep_net: bool = True  # return the population as an artifact


@dataclass(frozen=True)
class Config(Presets, Settings):
    targets: tuple = PLANTED  # targets swept
    depths: tuple = (1, 2, 3, 4, 5)  # hidden layers tried
    window: int | None = None  # a target with a known depth L* (planted) is swept over L* − window ..
    # L* + window (from 1) instead of `depths`; None: every target over `depths`
    seeds: int = 3  # networks per depth (the interval comes from them); a multiple of `members`
    ratio_res: int = 64  # resolution of the PNG compression ratio (one resolution for every target)
    tol: float = 1e-9  # depths whose mean score is within tol of the best are tied
    processes: int = 1  # local worker processes (1: in-process); results do not depend on it
    scale: str = "quick"  # the preset this config came from

    # reference: what chunks depth_picbreeder and depth_planted of examples/sweeps/reference.toml run
    # (tests/test_reference_plan.py compares them) — the Picbreeder targets at depths 2..16, the twelve
    # planted ones at L* ± 3; 64×64, 5 networks, 2,000 steps, 10 SP rounds of 200 steps (the other SP
    # settings are the defaults above), 8 δ on 200 weights
    # fmt: off
    REFERENCE = {"targets": PICBREEDER + PLANTED_REFERENCE, "depths": tuple(range(2, 17)), "window": 3, "seeds": 5,
                 "members": 5, "width": 12, "res": 64, "steps": 2000, "lr": 3e-3, "sp_rounds": 10,
                 "retrain_steps": 200, "max_params": 200, "deltas": DEFAULT_DELTAS,
                 "train_path": "fast"}  # the path the stored chunks were trained on
    # closer to the paper: depths 1..12, 10 seeds, long training, every weight scored
    FULL = {"depths": tuple(range(1, 13)), "seeds": 10, "width": 16, "res": 64, "steps": 5000, "lr": 3e-3,
            "sp_rounds": 10, "retrain_steps": 500, "deltas": DEFAULT_DELTAS, "max_params": None, "members": 1}
    # fmt: on

    def __post_init__(self):
        super().__post_init__()
        if self.seeds % self.members:
            raise DepthError(f"seeds = {self.seeds} is not a multiple of members = {self.members}; make it one")


# ---------------------------------------------------------------------------------------------
# One run (sweep run function `depth_point`)


def parse_point(config: dict) -> Point:
    """One run's config: `Point` with the entries `config` gives (the others at their defaults)."""
    return configure(Point(), config, "depth_point")


def sp_network(cfg: Point):
    """Train a population of `members` dense networks (independent initialisations drawn from
    `seed`) and prune each with SP; returns `(net, target, image, dense_loss (K,), sp_result)`."""
    target = get_target(cfg.target)
    img = target.image(cfg.res)  # (res, res, 3)
    net = CoordMLP(
        Arch.uniform(cfg.depth, cfg.width, cfg.activation),
        head=getattr(target, "head", "hsv"),
        population=cfg.members,
        seed=cfg.seed,
    )
    tc = TrainConfig(
        steps=cfg.steps,
        optimizer=cfg.optimizer,
        lr=cfg.lr,
        muon_lr=cfg.muon_lr,
        adamw_lr=cfg.adamw_lr,
        device=cfg.device,
        path=cfg.train_path,
    )
    dense = train(net, img, tc).final_loss
    spc = SPConfig(
        tau=cfg.tau,
        rounds=cfg.sp_rounds,
        retrain_steps=cfg.retrain_steps,
        retrain_lr_factor=cfg.retrain_lr_factor,
        compensate=cfg.sp_compensate,
        per_round=cfg.sp_per_round,
        seed=cfg.seed,
        train=tc,
        loss_factor=cfg.sp_loss_factor,
    )
    pr = sp(net, img, spc) if cfg.sp_rounds > 0 else None
    return net, target, img, np.asarray(dense, dtype=np.float64), pr


def sp_metrics(net, cfg: Point, dense_loss, pr) -> dict:
    """Per member: `collapsed` (bool) and `sp_stop` (SP's stop reason; "no pruning" without SP)."""
    if pr is None:
        flags = collapsed(net, cfg.res, dense_loss, dense_loss)
        return {"collapsed": [bool(f) for f in flags], "sp_stop": ["no pruning"] * net.population}
    return {"collapsed": [bool(f) for f in pr.collapsed], "sp_stop": list(pr.extras["stop"])}


def emc2_of(net, cfg: Point, member: int = 0):
    """The EMC2 result of one member (`volratio.emc2.score_network`; SSIM calibration seeded by 0)."""
    ec = emc2.EMC2Config.like(cfg, member=member, dtype="float64")
    return emc2.score_network(net, cfg.target, ec, cfg.judge, calibration_seed=0)


@functools.lru_cache(maxsize=64)
def _png_ratio(target: str, res: int) -> float:
    return float(png_ratio(target, res).ratio)


def point(config: dict) -> dict:
    """SP networks at one depth. Metrics, one list entry per member: `score` (EMC2 AUC), `scores`
    (S per δ), `loss` (MSE after SP), `dense_loss`, `nonzero`, `collapsed` (SP left a flat image
    or lost the fit: `volratio.prune.collapsed`), `sp_stop` (why SP stopped); and `live_units`
    (first member), `judge`, `ratio` (the target's PNG ratio at `res`), `base_kept` (per member:
    the judge says its unperturbed image shows the label). Artifact: `net` (the population)."""
    cfg = parse_point(config)
    net, target, img, dense_loss, pr = sp_network(cfg)
    loss = pr.final_loss if pr is not None else dense_loss
    results = [emc2_of(net, cfg, k) for k in range(net.population)]
    out = {
        "score": [float(r.auc) for r in results],
        "scores": [[float(s) for s in r.scores] for r in results],
        "loss": [float(x) for x in loss],
        "dense_loss": [float(x) for x in dense_loss],
        "nonzero": [int(n) for n in net.nonzero()],
        "live_units": [int(u) for u in net.live_units()[0]],
        "judge": results[0].judge,
        "ratio": _png_ratio(cfg.target, cfg.res),
    }
    out.update(sp_metrics(net, cfg, dense_loss, pr))
    out["base_kept"] = [bool(r.base_kept) for r in results]  # the judge: the member draws the label
    if cfg.keep_net:
        out["net"] = net.to("cpu")
    return out


# ---------------------------------------------------------------------------------------------
# The sweep


MAX_SWEEP_DEPTH = 256  # deeper coordinate networks than this are far outside the regime studied


def parse_depths(text: str) -> tuple:
    """`"2..6"` → (2, 3, 4, 5, 6); `"1,3,5"` → (1, 3, 5)."""
    try:
        if ".." in text:
            a, b = text.split("..")
            out = tuple(range(int(a), int(b) + 1))
        else:
            out = tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise DepthError(f"depths {text!r}: write A..B (e.g. 1..6) or a comma-separated list (e.g. 1,3,5)") from None
    if not out or min(out) < 1 or max(out) > MAX_SWEEP_DEPTH:
        raise DepthError(f"depths {text!r}: give at least one depth, each in [1, {MAX_SWEEP_DEPTH}]")
    return out


def depths_of(target: str, cfg: Config) -> tuple:
    """The depths `target` is swept over: `cfg.depths`, or with `cfg.window` the depths around a
    planted target's L* (from 1)."""
    true = getattr(get_target(target), "depth", None) if cfg.window is not None else None
    if true is None:
        return tuple(cfg.depths)
    return tuple(range(max(1, true - cfg.window), true + cfg.window + 1))


def make_sweep(targets, cfg: Config, name: str = "depth"):
    """The `volratio.runs.sweep.Sweep` of a depth sweep: targets × depths (`depths_of`) × seeds."""
    targets = [targets] if isinstance(targets, str) else list(targets)
    seeds = int(cfg.seeds) // int(cfg.members)
    if cfg.window is None:
        grid = {"target": targets, "depth": list(cfg.depths)}
        return Sweep(run="depth_point", config=cfg.shared(), grid=grid, seeds=seeds, name=name)
    cases = [{"target": t, "depth": d} for t in targets for d in depths_of(t, cfg)]
    return Sweep(run="depth_point", config=cfg.shared(), cases=cases, seeds=seeds, name=name)


@dataclass
class DepthCurve:
    target: str
    depths: list
    score: np.ndarray  # (n_depths, n_seeds) EMC2 AUC of each SP network
    loss: np.ndarray  # (n_depths, n_seeds) final MSE after SP
    dense_loss: np.ndarray  # (n_depths, n_seeds) MSE before SP
    nonzero: np.ndarray  # (n_depths, n_seeds) non-zero weights after SP
    spot: object  # volratio.depth.SweetSpot
    kept: np.ndarray | None = None  # (n_depths, n_seeds) 1 where the judge said the network draws its label,
    # 0 where not, NaN where the row does not record it (a results table made without a judge's verdicts)

    def __post_init__(self):
        if self.kept is None:
            self.kept = np.full(np.shape(self.score), np.nan)

    def summary(self, level: float = 0.95) -> list[dict]:
        """One row per depth: mean score and loss with t-intervals over seeds (the score's interval
        clipped to [0, 1], the range of an EMC2 score)."""
        rows = []
        for i, d in enumerate(self.depths):
            s, sl, ss = mean_ci(self.score[i], level)
            sl, ss = max(sl, 0.0), min(ss, 1.0)
            m, ml, mh = mean_ci(self.loss[i], level)
            rows.append(
                {
                    "target": self.target,
                    "depth": int(d),
                    "score": s,
                    "score_lo": sl,
                    "score_hi": ss,
                    "loss": m,
                    "loss_lo": ml,
                    "loss_hi": mh,
                    "nonzero": float(np.mean(self.nonzero[i])),
                    "drawn": _finite_mean(self.kept[i]),  # share of networks whose own image shows the label
                }
            )
        return rows

    def fitting(self, max_loss: float, tol: float = 1e-9) -> "DepthCurve":
        """This curve restricted to the networks that fit their target: every network whose final
        MSE exceeds `max_loss` (or is not finite) is left out at that depth (its score, losses and
        weight count set to NaN), and the sweet spot is recomputed over the rest. A network that
        failed to fit draws a crude image that survives single-weight changes, so its EMC2 score
        says little about composition; the paper's protocol has no such cut-off (ours)."""
        if not np.isfinite(max_loss) or max_loss <= 0:
            raise DepthError(f"max_loss = {max_loss!r}: give a positive MSE")
        keep = np.isfinite(self.loss) & (self.loss <= max_loss)
        if not keep.any():
            raise DepthError(f"{self.target}: no network has MSE ≤ {max_loss:g}; raise max_loss")

        def cut(a):
            return np.where(keep, a, np.nan)

        score = cut(self.score)
        return DepthCurve(self.target, self.depths, score, cut(self.loss), cut(self.dense_loss), cut(self.nonzero),
                          sweet_spot(self.depths, score, tol=tol), cut(self.kept))  # fmt: skip


def among_fitting(curves: dict, factor: float = 2.0, tol: float = 1e-9) -> tuple[dict, dict]:
    """Each curve restricted to the networks that fit (`DepthCurve.fitting`), with a cut-off
    relative to the target: MSE ≤ `factor` × the median final MSE of all the target's networks
    (targets differ in how well they can be fitted at all). Returns `(curves, cutoffs)`, both
    keyed by target."""
    if not np.isfinite(factor) or factor <= 0:
        raise DepthError(f"factor = {factor!r}: give a positive multiple of the median MSE")
    cutoffs = {t: float(factor * np.nanmedian(c.loss)) for t, c in curves.items()}
    return {t: c.fitting(cutoffs[t], tol) for t, c in curves.items()}, cutoffs


def networks_table(table):
    """One row per network of a depth sweep's results table (a run of `members` networks holds
    lists; network id = "seed.member")."""
    rows = []
    for _, r in table[table["status"] == "done"].iterrows():
        vals = {c: r[c] for c in ("score", "loss", "dense_loss", "nonzero")}
        n = len(vals["score"]) if isinstance(vals["score"], (list, tuple, np.ndarray)) else None
        kept = r.get("base_kept")  # absent (or NaN) in a table made without a judge's verdicts
        if not isinstance(kept, (list, tuple, np.ndarray)) and (kept is None or _isnan(kept)):
            kept = [np.nan] * n if n else np.nan
        vals["kept"] = np.asarray(kept, dtype=np.float64).tolist() if n else float(kept)
        for k in range(n or 1):
            rows.append(
                {
                    "target": r["target"],
                    "depth": int(r["depth"]),
                    "net": f"{r['seed']}.{k}",
                    "key": r["key"],
                    "member": k,
                    **{c: (v[k] if n else v) for c, v in vals.items()},
                }
            )
    return pd.DataFrame(rows)


def curves_from_table(table, tol: float = 1e-9) -> dict[str, DepthCurve]:
    """Depth curves from a depth sweep's results table (one per target; one column per network)."""
    if table[table["status"] == "done"].empty:
        raise DepthError("the depth sweep has no finished runs; see `volratio results DIR --tracebacks`")
    flat = networks_table(table)
    twice = flat[flat.duplicated(["target", "depth", "net"], keep=False)]
    if len(twice):
        r = twice.iloc[0]
        n = int(((twice.target == r.target) & (twice.depth == r.depth) & (twice.net == r.net)).sum())
        raise DepthError(
            f"network {r['net']} of {r['target']} at depth {r['depth']} appears {n} times (e.g. two stored "
            "chunks holding the same runs, judged differently); read one of them"
        )
    out = {}
    for tgt, g in flat.groupby("target", sort=False):
        depths = sorted(g["depth"].unique().tolist())
        nets = sorted(g["net"].unique().tolist())
        grids = {
            col: g.pivot_table(index="depth", columns="net", values=col, aggfunc="first")
            .reindex(index=depths, columns=nets)
            .to_numpy(dtype=np.float64)
            for col in ("score", "loss", "dense_loss", "nonzero", "kept")
        }  # each (n_depths, n_networks)
        out[tgt] = DepthCurve(
            tgt,
            depths,
            grids["score"],
            grids["loss"],
            grids["dense_loss"],
            grids["nonzero"],
            sweet_spot(depths, grids["score"], tol=tol),
            grids["kept"],
        )
    return out


def depth_sweep(
    targets, cfg: Config | None = None, out=None, executor=None, tol: float | None = None, progress: bool | None = False
):
    """Run (or read) the depth sweep of `targets`; returns `(curves: dict target -> DepthCurve, report)`.
    `out`: the results store (default `volratio.runs.sweep.results_dir("depth")`); `executor`: default
    `Processes(cfg.processes)`."""
    cfg = cfg or Config.quick()
    if executor is None:
        executor = Processes(cfg.processes) if cfg.processes > 1 else InProcess()
    report = run_sweep(make_sweep(targets, cfg), out or results_dir("depth"), executor, progress=progress)
    return curves_from_table(report.table, cfg.tol if tol is None else tol), report


def spot_table(curves: dict, true_depths: dict | None = None):
    """One row per target: its sweet spot, bootstrap interval, per-seed argmax, best mean score, peak
    contrast, the score drop one layer shallower and one deeper, the MSE at the spot and the median
    over the other depths of their mean MSE (a spot that fits much worse than the rest is suspect:
    a network that failed to fit its target can keep its crude image under every perturbation)."""
    rows = []
    for t, c in curves.items():
        sp, m = c.spot, np.array(c.spot.means)
        i = None if sp.depth is None else c.depths.index(sp.depth)

        def drop(j, i=i, m=m):
            return (m[i] - m[j]) if i is not None and 0 <= j < len(m) else np.nan

        rows.append(
            {
                "target": t,
                "L*": (true_depths or {}).get(t),
                "networks": int(np.isfinite(c.score).sum()),  # scored networks (all depths)
                "sweet spot": sp.depth,
                "bootstrap 90%": sp.interval,
                "per seed": sp.per_seed,
                "best score": np.nanmax(m),
                "peak − rest": sp.peak_contrast,
                "score drop, one layer less": drop(i - 1) if i is not None else np.nan,
                "score drop, one layer more": drop(i + 1) if i is not None else np.nan,
                "MSE at spot": _finite_mean(c.loss[i]) if i is not None else np.nan,
                "drawn at spot": _finite_mean(c.kept[i]) if i is not None else np.nan,
                "MSE elsewhere (median)": (
                    float(np.nanmedian([_finite_mean(c.loss[j]) for j in range(len(m)) if j != i]))
                    if i is not None and len(m) > 1
                    else np.nan
                ),
            }
        )
    return pd.DataFrame(rows).set_index("target")


def _isnan(x) -> bool:
    try:
        return bool(np.isnan(x))
    except TypeError:
        return False


def _finite_mean(a) -> float:
    a = np.asarray(a, dtype=np.float64)
    a = a[np.isfinite(a)]
    return float(a.mean()) if a.size else float("nan")


def curve_frame(curves: dict):
    """Tidy rows: one per target × depth (means and intervals over seeds)."""
    return pd.DataFrame([row for c in curves.values() for row in c.summary()])


def run(cfg: Config | None = None, *, out=None, executor=None) -> Result:
    """The chapter's experiment: the depth sweep of `cfg.targets`, the PNG ratio of each, and the
    predictor of sweet-spot depth from the ratio (fitted where ≥ 3 targets have a sweet spot).
    `Result.table`: one row per target × depth; extras: `curves`, `report`, `ratios`, `predictor`."""
    cfg = cfg or Config.quick()
    with Timer() as t:
        curves, report = depth_sweep(cfg.targets, cfg, out=out, executor=executor)
        ratios = {tg: png_ratio(tg, cfg.ratio_res) for tg in cfg.targets}
        spots = {tg: c.spot.depth for tg, c in curves.items() if c.spot.depth is not None}
        predictor = (
            fit_predictor([ratios[tg].ratio for tg in spots], list(spots.values()), names=list(spots))
            if len(spots) >= 3 and np.ptp([ratios[tg].ratio for tg in spots]) > 0
            else None
        )
    table = curve_frame(curves)
    table["ratio"] = [ratios[tg].ratio for tg in table["target"]]
    table["true_depth"] = [getattr(get_target(tg), "depth", None) for tg in table["target"]]
    table["sweet_spot"] = [curves[tg].spot.depth for tg in table["target"]]
    seeds = sorted({int(s) for s in report.table["seed"]}) if "seed" in report.table else []
    return Result(
        "depth_regime",
        asdict(cfg),
        table,
        seeds,
        t.seconds,
        judge=cfg.judge,
        extras={"curves": curves, "report": report, "ratios": ratios, "predictor": predictor},
    )


def load_nets(report) -> dict:
    """`(target, depth) -> CoordMLP`: the population of the first finished run of each grid point,
    read from the sweep's store (the runs keep their networks: `keep_net`)."""
    store, out = Store(report.store), {}
    for _, r in report.table[report.table["status"] == "done"].iterrows():
        out.setdefault((r["target"], int(r["depth"])), store.artifact(r["key"], "net"))
    return out


# ---------------------------------------------------------------------------------------------
# The reference scale (stored results)

REFERENCE_CHUNKS = ("depth_picbreeder", "depth_planted")  # chunks of examples/sweeps/reference.toml


def stored_curves(
    names=REFERENCE_CHUNKS, root=None, tol: float = 1e-9, judge: str | None = None
) -> dict[str, DepthCurve]:
    """Depth curves from the stored reference chunks `names` (those present under `root`, default
    `results/reference`): one per target, one column per network (seed.member). `judge`: score every
    network under this judge — the runs' own scores where they were judged by it, else the chunk's
    rescore runs (`volratio reference rescore CHUNK --judge NAME`); a run without one is an error."""
    stored = stored_judged(names, root, judge)
    rows = [
        {
            "status": "done",
            "key": r["key"],
            "seed": r["config"]["seed"],
            "target": r["config"]["target"],
            "depth": r["config"]["depth"],
            **{c: r["metrics"][c] for c in ("score", "loss", "dense_loss", "nonzero")},
            "base_kept": r["metrics"].get("base_kept"),
        }
        for r in stored
    ]
    return curves_from_table(pd.DataFrame(rows), tol)


def fit_table(curves: dict):
    """Per target and depth: the median dense MSE over the networks (before SP), its ratio to the
    best depth's median (1 = the best depth; the training budget is chosen so that this stays within
    a stated factor), the median MSE after SP and its ratio to the dense one, and the share of
    networks whose unperturbed image the judge says shows the label (`drawn`; NaN where not recorded)."""
    rows = []
    for t, c in curves.items():
        dense = np.nanmedian(c.dense_loss, axis=1)
        for i, d in enumerate(c.depths):
            rows.append({"target": t, "depth": int(d), "dense MSE (median)": float(dense[i]),
                         "× best depth": float(dense[i] / np.nanmin(dense)),
                         "MSE after SP (median)": float(np.nanmedian(c.loss[i])),
                         "after SP ÷ dense (median)": float(np.nanmedian(c.loss[i] / c.dense_loss[i])),
                         "drawn": _finite_mean(c.kept[i])})  # fmt: skip
    return pd.DataFrame(rows).set_index(["target", "depth"])


def stored_images(names=REFERENCE_CHUNKS, root=None, judge: str | None = None, targets=None, res: int = 64) -> dict:
    """What was scored: per target, `{"depths", "images", "kept", "score", "loss"}` with one list per
    depth of one entry per stored network — its render at `res` (`(res, res, 3)` numpy), whether the
    judge said its unperturbed image shows the label, its EMC2 AUC and its MSE. Reads the networks the
    runs stored (`keep_net`); a run without one is an error."""
    out: dict = {}
    for r in stored_judged(names, root, judge):
        t = r["config"]["target"]
        if targets is not None and t not in targets:
            continue
        if "net" not in r.get("artifacts", {}):
            raise DepthError(f"run {r['key']} ({t}, depth {r['config']['depth']}) stored no network (keep_net)")
        imgs = CoordMLP.load(r["artifacts"]["net"]).render(res).numpy()
        m = r["metrics"]
        e = out.setdefault(t, {"depths": [], "images": [], "kept": [], "score": [], "loss": []})
        e["depths"].append(int(r["config"]["depth"]))
        e["images"].append(list(imgs))
        e["kept"].append(list(m.get("base_kept", [None] * len(imgs))))
        e["score"].append(list(m["score"]))
        e["loss"].append(list(m["loss"]))
    for e in out.values():  # by depth
        order = np.argsort(e["depths"], kind="stable")
        for k in e:
            e[k] = [e[k][i] for i in order]
    return out


def stored_network(target: str, depth: int, member: int = 0, names=REFERENCE_CHUNKS, root=None):
    """The stored network `member` (0-based, of the run's population) of `target` at `depth` from the
    chunks `names` (a `CoordMLP` of population 1), e.g. to show what its perturbations look like
    (`volratio.emc2.judged_examples`)."""
    runs = [r for r in reference.stored_records(names, root, error=DepthError)
            if r["config"]["target"] == target and int(r["config"]["depth"]) == int(depth)]  # fmt: skip
    if not runs:
        raise DepthError(f"no stored run of {target} at depth {depth} in {names}")
    if "net" not in runs[0].get("artifacts", {}):
        raise DepthError(f"run {runs[0]['key']} ({target}, depth {depth}) stored no network (keep_net)")
    net = CoordMLP.load(runs[0]["artifacts"]["net"])
    if not 0 <= int(member) < net.population:
        raise DepthError(
            f"member {member} out of range: the run stored {net.population} networks (0..{net.population - 1})"
        )
    return net.select(int(member))


def stored_judged(names, root=None, judge: str | None = None) -> list[dict]:
    """The stored runs of the chunks `names` (`volratio.runs.reference.stored_records`), each run's
    `score`, `scores` and `base_kept` those under `judge` (default: the runs' own judge)."""
    stored = reference.stored_records(names, root, error=DepthError)
    if judge is None:
        judged = sorted({str(r["metrics"].get("judge")) for r in stored})
        if len(judged) > 1:
            raise DepthError(
                f"the stored runs of {', '.join([names] if isinstance(names, str) else names)} were judged "
                f"differently ({', '.join(judged)}); read chunks judged alike, or give judge=NAME to score "
                "them all under one judge (rescored where needed)"
            )
        return stored
    names = [names] if isinstance(names, str) else list(names)
    root = reference.DEFAULT_ROOT if root is None else root
    by_source = {
        r["config"]["source"]["key"]: r["metrics"]
        for n in names
        if n in reference.chunks(root)
        for r in rescore.records(n, judge, root)
    }
    out = []
    for r in stored:
        if r["metrics"].get("judge") == judge:
            out.append(r)
            continue
        m = by_source.get(r["key"])
        if m is None:
            raise DepthError(
                f"run {r['key']} of {r['config']['target']} at depth {r['config']['depth']} has no scores under "
                f"judge {judge!r}; rescore its chunk (`volratio reference rescore CHUNK --judge {judge}`)"
            )
        metrics = {**r["metrics"], **{c: m[c] for c in ("score", "scores", "base_kept")}, "judge": judge}
        out.append({**r, "metrics": metrics})
    return out


@dataclass
class PredictorCheck:
    """The PNG-ratio predictor fitted on measured sweet spots and checked on held-out targets."""

    fit: object  # volratio.depth.DepthPredictor: sweet spot ≈ a + b·ratio on the fitting targets
    held_out: list  # one dict per held-out target: ratio, measured spot, prediction and its interval

    @property
    def inside(self) -> int:
        """Held-out targets whose measured sweet spot lies inside the 95% prediction interval."""
        return sum(r["inside"] for r in self.held_out)


def check_predictor(curves: dict, fit_on, held_out, res: int = 64) -> PredictorCheck:
    """Fit sweet-spot depth ≈ a + b·(PNG ratio at `res`) on the targets `fit_on` (their measured
    sweet spots in `curves`) and predict each target of `held_out` (e.g. fit on planted targets,
    validate on the Picbreeder ones). Targets without a sweet spot (flat curves) are left out."""
    fit_on = [t for t in fit_on if t in curves and curves[t].spot.depth is not None]
    pred = fit_predictor(
        [_png_ratio(t, res) for t in fit_on], [curves[t].spot.depth for t in fit_on], names=fit_on
    )  # DepthError below 3 targets
    rows = []
    for t in held_out:
        if t not in curves or curves[t].spot.depth is None:
            continue
        ratio = _png_ratio(t, res)
        p = pred.predict(ratio)
        spot = curves[t].spot.depth
        rows.append(
            {
                "target": t,
                "ratio": ratio,
                "measured sweet spot": spot,
                "predicted": p["depth"],
                "prediction interval": (p["pi_lo"], p["pi_hi"]),
                "error (layers)": p["depth"] - spot,
                "inside": bool(p["pi_lo"] <= spot <= p["pi_hi"]),
            }
        )
    return PredictorCheck(pred, rows)
