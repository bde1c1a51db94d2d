"""The depth regime and the depth predictor (DESIGN §3.7, §9; Do, Shah, Le, Liu 2026).

- **Image complexity** `png_ratio`: quantise the target to uint8 RGB at a fixed size, save it with
  Pillow to memory with `optimize=True` (zlib level 9); ratio = raw bytes / PNG bytes. The sizes
  depend on the zlib build (Pillow ≥ 11.1 wheels use zlib-ng), so every ratio carries the Pillow
  version, and ratios are only compared at one resolution (the ~60-byte header biases tiny images).
- **Depth sweep** `depth_sweep`: SP networks at each depth of a range × seeds on a target, run
  through `volratio.sweep` (run function `volratio.depth_runs:depth_point`); per depth the mean
  compositional score (EMC2 AUC, default judge) and loss with t-intervals over the seeds.
- **Sweet spot** `sweet_spot`: the argmax of the mean score over depth; depths whose mean lies
  within `tol` of the maximum are *tied* (the shallowest tied depth is reported — the smallest
  network that reaches the peak); a curve whose means all lie within `tol` is *flat* and has no
  sweet spot (depth `None`). The interval is the 5–95% range of the argmax over bootstrap
  resamples of the seeds.
- **Depth predictor** `fit_predictor`: least squares depth ≈ a + b·ratio with R², standard errors,
  the confidence band of the mean and the prediction interval (Student t, `scipy.stats`), and the
  leave-one-out error; `DepthPredictor.predict` gives the depth of a new target.

Chapters: "Depth: a narrow, target-dependent regime" (book/depth.md), "Unknown targets"
(book/unknown_targets.md); command: `volratio depth`.
"""

from __future__ import annotations

import io
from dataclasses import asdict, dataclass, field

import numpy as np

from .errors import VolratioError
from .stats import mean_ci  # noqa: F401  (also re-exported: chapters call depth.mean_ci)


class DepthError(VolratioError, ValueError):
    """Bad input to a depth sweep or the depth predictor."""


# ---------------------------------------------------------------------------------------------
# Image complexity: the PNG compression ratio


def pillow_version() -> str:
    import PIL

    return PIL.__version__


def to_uint8(image) -> np.ndarray:
    """`(res, res, 3)` uint8 RGB from an image in [0, 1] (torch or numpy; grey `(res, res)` or
    `(res, res, 1)` is repeated to RGB). Rounds half away from zero after clipping."""
    a = np.asarray(image.detach().cpu().numpy() if hasattr(image, "detach") else image, dtype=np.float64)
    if a.ndim == 2:
        a = a[..., None]
    if a.ndim != 3 or a.shape[-1] not in (1, 3):
        raise DepthError(f"image has shape {a.shape}; give (res, res, 3) or (res, res) in [0, 1]")
    if a.shape[-1] == 1:
        a = np.repeat(a, 3, axis=-1)
    return np.floor(np.clip(a, 0.0, 1.0) * 255.0 + 0.5).astype(np.uint8)


def png_bytes(image) -> tuple[int, int]:
    """`(png_bytes, raw_bytes)` of an image saved as 8-bit RGB PNG with Pillow, `optimize=True`."""
    from PIL import Image

    u8 = to_uint8(image)  # (res, res, 3) uint8
    buf = io.BytesIO()
    Image.fromarray(u8, mode="RGB").save(buf, format="PNG", optimize=True, compress_level=9)
    return len(buf.getvalue()), int(u8.nbytes)


@dataclass
class Complexity:
    target: str
    ratio: float  # raw bytes / PNG bytes (higher = simpler image)
    png_bytes: int
    raw_bytes: int
    res: int
    pillow: str  # Pillow version: PNG sizes depend on its zlib build

    def to_json(self) -> dict:
        return asdict(self)


def png_ratio(target, res: int = 64) -> Complexity:
    """The PNG compression ratio of a target spec (or target object, or image array) at `res`."""
    from .targets import get_target

    if isinstance(target, str):
        name, img = target, get_target(target).image(res)
    elif hasattr(target, "image"):
        name, img = getattr(target, "spec", str(target)), target.image(res)
    else:
        name, img = "image", target
        res = int(np.asarray(img.shape)[0])
    png, raw = png_bytes(img)
    return Complexity(name, raw / png, png, raw, int(res), pillow_version())


# ---------------------------------------------------------------------------------------------
# Sweet spot


@dataclass
class SweetSpot:
    depth: int | None  # the shallowest depth whose mean score is within tol of the best; None if flat
    tied: list  # every depth within tol of the best mean
    flat: bool  # all means within tol: no sweet spot
    interval: tuple  # (lo, hi): 5–95% range of the bootstrap argmax over seeds (None, None) if flat
    per_seed: list  # argmax depth of each seed's own curve (shallowest of its ties)
    means: list  # mean score per depth
    peak_contrast: float  # best mean − mean of the others (how pronounced the peak is)

    def to_json(self) -> dict:
        return asdict(self)


def _argmax_shallowest(depths: np.ndarray, means: np.ndarray, tol: float) -> tuple[int, list]:
    best = np.nanmax(means)
    tied = [int(d) for d, m in zip(depths, means) if m >= best - tol]
    return min(tied), tied


def sweet_spot(depths, scores, tol: float = 1e-9, n_boot: int = 1000, seed: int = 0) -> SweetSpot:
    """The sweet spot of a score-vs-depth curve. `scores`: `(n_depths, n_seeds)` (a 1-D array is one
    seed). Ties and flat curves: see the module docstring."""
    d = np.asarray(depths, dtype=np.int64)
    s = np.asarray(scores, dtype=np.float64)
    if s.ndim == 1:
        s = s[:, None]
    if s.shape[0] != len(d) or len(d) == 0:
        raise DepthError(f"scores have {s.shape[0]} rows for {len(d)} depths; give one row per depth")
    if len(set(d.tolist())) != len(d):
        raise DepthError(f"depths {d.tolist()} repeat; give each depth once")
    means = np.nanmean(s, axis=1)  # (n_depths,)
    if not np.isfinite(means).any():
        raise DepthError("every score is NaN; nothing to maximise")
    per_seed = [_argmax_shallowest(d, s[:, j], tol)[0] for j in range(s.shape[1]) if np.isfinite(s[:, j]).any()]
    flat = bool(np.nanmax(means) - np.nanmin(means) <= tol)
    contrast = float(np.nanmax(means) - np.nanmean(np.delete(means, np.nanargmax(means)))) if len(d) > 1 else 0.0
    if flat:
        return SweetSpot(None, [int(x) for x in d], True, (None, None), per_seed, means.tolist(), contrast)
    depth, tied = _argmax_shallowest(d, means, tol)
    rng = np.random.default_rng(seed)
    boots = []
    for _ in range(n_boot if s.shape[1] > 1 else 0):
        cols = rng.integers(0, s.shape[1], s.shape[1])
        boots.append(_argmax_shallowest(d, np.nanmean(s[:, cols], axis=1), tol)[0])
    lo, hi = (int(np.percentile(boots, 5, method="lower")), int(np.percentile(boots, 95, method="higher"))) if boots else (depth, depth)
    return SweetSpot(depth, tied, False, (lo, hi), per_seed, means.tolist(), contrast)


# ---------------------------------------------------------------------------------------------
# The depth predictor


@dataclass
class DepthPredictor:
    a: float  # intercept
    b: float  # slope (depth per unit of compression ratio)
    r2: float
    n: int
    se_a: float
    se_b: float
    sigma: float  # residual standard deviation (n − 2 degrees of freedom)
    x_mean: float
    sxx: float  # Σ (x − x̄)²
    level: float  # confidence level of the bands
    loo_errors: list  # leave-one-out prediction minus truth, per point
    loo_rmse: float
    loo_mae: float
    x: list = field(default_factory=list)
    y: list = field(default_factory=list)
    names: list = field(default_factory=list)

    def _t(self) -> float:
        from scipy import stats

        return float(stats.t.ppf(0.5 + self.level / 2, self.n - 2)) if self.n > 2 else float("inf")

    def predict(self, ratio) -> dict:
        """Predicted depth at `ratio` (scalar or array): `depth` (a + b·ratio), the confidence band
        of the mean (`band_lo`, `band_hi`) and the prediction interval for one new target
        (`pi_lo`, `pi_hi`)."""
        x = np.asarray(ratio, dtype=np.float64)
        yhat = self.a + self.b * x
        h = 1.0 / self.n + (x - self.x_mean) ** 2 / self.sxx if self.sxx > 0 else np.full_like(x, np.inf)
        t = self._t()
        band = t * self.sigma * np.sqrt(h)
        pi = t * self.sigma * np.sqrt(1.0 + h)
        out = {"depth": yhat, "band_lo": yhat - band, "band_hi": yhat + band, "pi_lo": yhat - pi, "pi_hi": yhat + pi}
        return {k: (float(v) if np.ndim(v) == 0 else v) for k, v in out.items()}

    def to_json(self) -> dict:
        return asdict(self)


def _ols(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    xm, ym = x.mean(), y.mean()
    sxx = ((x - xm) ** 2).sum()
    b = ((x - xm) * (y - ym)).sum() / sxx
    return float(ym - b * xm), float(b)


def fit_predictor(ratios, depths, names=None, level: float = 0.95) -> DepthPredictor:
    """Least-squares fit of depth ≈ a + b·ratio, with R², the t-based bands and leave-one-out errors."""
    from scipy import stats

    x = np.asarray(ratios, dtype=np.float64)
    y = np.asarray(depths, dtype=np.float64)
    keep = np.isfinite(x) & np.isfinite(y)
    x, y = x[keep], y[keep]
    names = [n for n, k in zip(names, keep) if k] if names is not None else []
    if len(x) < 3:
        raise DepthError(f"the predictor needs at least 3 (ratio, depth) points with finite values, got {len(x)}")
    if np.ptp(x) == 0:
        raise DepthError("every ratio is the same; the slope is undefined — use targets of different complexity")
    lr = stats.linregress(x, y)
    n = len(x)
    resid = y - (lr.intercept + lr.slope * x)
    sigma = float(np.sqrt((resid ** 2).sum() / (n - 2))) if n > 2 else 0.0
    loo = []
    for i in range(n):
        m = np.arange(n) != i
        a_i, b_i = _ols(x[m], y[m]) if np.ptp(x[m]) > 0 else (float(y[m].mean()), 0.0)
        loo.append(float(a_i + b_i * x[i] - y[i]))
    loo = np.asarray(loo)
    return DepthPredictor(
        a=float(lr.intercept), b=float(lr.slope), r2=float(lr.rvalue ** 2), n=n, se_a=float(lr.intercept_stderr),
        se_b=float(lr.stderr), sigma=sigma, x_mean=float(x.mean()), sxx=float(((x - x.mean()) ** 2).sum()),
        level=level, loo_errors=loo.tolist(), loo_rmse=float(np.sqrt((loo ** 2).mean())),
        loo_mae=float(np.abs(loo).mean()), x=x.tolist(), y=y.tolist(), names=list(names),
    )


# ---------------------------------------------------------------------------------------------
# The depth sweep (through volratio.sweep)


@dataclass
class DepthSweepConfig:
    depths: tuple = (1, 2, 3, 4, 5)  # hidden layers tried
    seeds: int = 3  # independent initialisations per depth (the interval comes from them)
    members: int = 3  # of these, how many train together as one population (a multiple of `seeds`; speed only)
    width: int = 8  # units per hidden layer before pruning
    activation: str = "gaussian"  # one activation for every hidden unit
    res: int = 16  # training, pruning and scoring resolution
    steps: int = 120  # dense training steps (Adam, full batch)
    lr: float = 0.01  # Adam learning rate
    optimizer: str = "adam"  # adam | adamw | sgd | muon (training and SP retraining)
    muon_lr: float = 0.02  # Muon's learning rate on the hidden matrices (DESIGN §9); its AdamW part: TrainConfig
    tau: float = 0.9  # SP cosine-similarity threshold (the paper gives none; ours)
    sp_rounds: int = 2  # SP prune → retrain rounds
    retrain_steps: int = 30  # training steps after each SP round
    deltas: tuple = (-1.0, -0.5, 0.5, 1.0)  # EMC2 perturbation sizes (both signs, FER's |Δw| ≤ 1)
    max_params: int | None = 20  # EMC2 scores a seeded subsample of this many non-zero weights (None = all)
    judge: str = "ssim"  # the offline default judge, calibrated per network
    device: str = "cpu"  # sweeps run single-threaded on CPU for bit-for-bit repeatability

    @classmethod
    def quick(cls, **kw) -> "DepthSweepConfig":
        """The book's scale: 16×16, 3 seeds, short training, 2 SP rounds, 20 scored weights."""
        return cls(**kw)

    @classmethod
    def full(cls, **kw) -> "DepthSweepConfig":
        """Closer to the paper: 64×64, 10 seeds, long training, every weight scored."""
        return cls(**{"depths": tuple(range(1, 13)), "seeds": 10, "width": 16, "res": 64, "steps": 5000,
                      "lr": 3e-3, "sp_rounds": 10, "retrain_steps": 500, "deltas": (-2.0, -1.0, -0.5, -0.25, 0.25, 0.5, 1.0, 2.0),
                      "max_params": None, "members": 1, **kw})

    def run_config(self) -> dict:
        """The config shared by every run of the sweep (without depth, seed and target)."""
        c = asdict(self)
        for k in ("depths", "seeds"):
            c.pop(k)
        if self.seeds % self.members:
            raise DepthError(f"seeds = {self.seeds} is not a multiple of members = {self.members}; make it one")
        c["deltas"] = [float(x) for x in self.deltas]
        return c


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


MAX_SWEEP_DEPTH = 256  # deeper coordinate networks than this are far outside the regime studied


def make_sweep(targets, cfg: DepthSweepConfig, name: str = "depth"):
    """The `volratio.sweep.Sweep` of a depth sweep: targets × depths × seeds."""
    from .sweep import Sweep

    targets = [targets] if isinstance(targets, str) else list(targets)
    return Sweep(run="volratio.depth_runs:depth_point", config=cfg.run_config(),
                 grid={"target": targets, "depth": list(cfg.depths)}, seeds=int(cfg.seeds) // int(cfg.members), name=name)


@dataclass
class DepthCurve:
    target: str
    depths: list
    score: np.ndarray  # (n_depths, n_seeds) EMC2 AUC of each SP network
    loss: np.ndarray  # (n_depths, n_seeds) final MSE after SP
    dense_loss: np.ndarray  # (n_depths, n_seeds) MSE before SP
    nonzero: np.ndarray  # (n_depths, n_seeds) non-zero weights after SP
    spot: SweetSpot

    def summary(self, level: float = 0.95) -> list[dict]:
        """One row per depth: mean score and loss with t-intervals over seeds (the score's interval
        clipped to [0, 1], the range of an EMC2 score)."""
        rows = []
        for i, d in enumerate(self.depths):
            s, sl, ss = mean_ci(self.score[i], level)
            sl, ss = max(sl, 0.0), min(ss, 1.0)
            l, ll, lh = mean_ci(self.loss[i], level)
            rows.append({"target": self.target, "depth": int(d), "score": s, "score_lo": sl, "score_hi": ss,
                         "loss": l, "loss_lo": ll, "loss_hi": lh, "nonzero": float(np.mean(self.nonzero[i]))})
        return rows


def _explode(done):
    """One row per network: a run that trained `members` networks holds lists; network id =
    (seed, member)."""
    rows = []
    for _, r in done.iterrows():
        vals = {c: r[c] for c in ("score", "loss", "dense_loss", "nonzero")}
        n = len(vals["score"]) if isinstance(vals["score"], (list, tuple, np.ndarray)) else None
        for k in range(n or 1):
            rows.append({"target": r["target"], "depth": int(r["depth"]), "net": f"{r['seed']}.{k}",
                         **{c: (v[k] if n else v) for c, v in vals.items()}})
    import pandas as pd

    return pd.DataFrame(rows)


def curves_from_table(table, tol: float = 1e-9) -> dict[str, DepthCurve]:
    """Depth curves from a depth sweep's results table (one per target; one column per network)."""
    done = table[table["status"] == "done"]
    if done.empty:
        raise DepthError("the depth sweep has no finished runs; see `volratio results DIR --tracebacks`")
    flat = _explode(done)
    out = {}
    for tgt, g in flat.groupby("target", sort=False):
        depths = sorted(g["depth"].unique().tolist())
        nets = sorted(g["net"].unique().tolist())

        def grid(col):
            p = g.pivot_table(index="depth", columns="net", values=col, aggfunc="first")
            return p.reindex(index=depths, columns=nets).to_numpy(dtype=np.float64)

        sc = grid("score")
        out[tgt] = DepthCurve(tgt, depths, sc, grid("loss"), grid("dense_loss"), grid("nonzero"),
                              sweet_spot(depths, sc, tol=tol))
    return out


def depth_sweep(targets, cfg: DepthSweepConfig | None = None, out=None, executor=None, tol: float = 1e-9,
                progress: bool | None = False):
    """Run (or read) the depth sweep of `targets`; returns `(curves: dict target -> DepthCurve, report)`."""
    from .sweep import results_dir, run_sweep

    cfg = cfg or DepthSweepConfig.quick()
    sweep = make_sweep(targets, cfg)
    report = run_sweep(sweep, out or results_dir("depth"), executor, progress=progress)
    return curves_from_table(report.table, tol), report


def planted_specs(depths=(2, 3, 4, 5), per_depth: int = 3, width: int = 3, start_seed: int = 0) -> list[str]:
    """Planted targets spanning `depths`, `per_depth` seeds each: `planted:SEED:depth=L,width=W`."""
    out = []
    s = start_seed
    for L in depths:
        for _ in range(per_depth):
            out.append(f"planted:{s}:depth={L},width={width}")
            s += 1
    return out


def planted_predictor(specs=None, res: int = 64, level: float = 0.95) -> tuple[DepthPredictor, list[Complexity]]:
    """The predictor calibrated on planted targets' true depths L* (no training needed):
    L* ≈ a + b·ratio. The default calibration set of `volratio depth predict`."""
    from .targets import get_target

    specs = specs or planted_specs()
    for s in specs:
        if getattr(get_target(s), "kind", None) != "planted":
            raise DepthError(
                f"calibration target {s!r} is not a planted target; the predictor is fitted on known depths L*, "
                "so give planted:SEED[:depth=…] specs (or leave --calibration out for the default set)"
            )
    cx = [png_ratio(s, res) for s in specs]
    depths = [get_target(s).depth for s in specs]
    return fit_predictor([c.ratio for c in cx], depths, names=list(specs), level=level), cx


# ---------------------------------------------------------------------------------------------
# Figures


def plot_curves(curves: dict, ax=None, title: str = "", true_depths: dict | None = None):
    """Mean EMC2 score vs depth per target with 95% t-intervals over seeds; the sweet spot marked
    (and the true depth L*, dashed, where `true_depths` gives it)."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(6.4, 3.6))
    for i, (name, c) in enumerate(curves.items()):
        rows = c.summary()
        d = [r["depth"] for r in rows]
        m = np.array([r["score"] for r in rows])
        lo, hi = np.array([r["score_lo"] for r in rows]), np.array([r["score_hi"] for r in rows])
        line, = ax.plot(d, m, "o-", label=name, ms=4)
        ax.fill_between(d, lo, hi, color=line.get_color(), alpha=0.15)
        if c.spot.depth is not None:
            ax.plot([c.spot.depth], [m[d.index(c.spot.depth)]], "*", color=line.get_color(), ms=12)
        if true_depths and name in true_depths:
            ax.axvline(true_depths[name], color=line.get_color(), ls="--", lw=0.8)
    ax.set_xlabel("depth L (hidden layers)")
    ax.set_ylabel("EMC2 score (AUC)")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7)
    return ax


def plot_predictor(pred: DepthPredictor, ax=None, title: str = "", xlabel: str = "PNG compression ratio",
                   ylabel: str = "depth"):
    """The points, the fitted line, its confidence band and the prediction interval."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(5, 3.6))
    x = np.asarray(pred.x)
    grid = np.linspace(x.min() - 0.05 * np.ptp(x), x.max() + 0.05 * np.ptp(x), 100)
    p = pred.predict(grid)
    ax.fill_between(grid, p["pi_lo"], p["pi_hi"], color="C0", alpha=0.1, label=f"{pred.level:.0%} prediction interval")
    ax.fill_between(grid, p["band_lo"], p["band_hi"], color="C0", alpha=0.25, label=f"{pred.level:.0%} confidence band")
    ax.plot(grid, p["depth"], "C0-", label=f"{pred.a:.2f} + {pred.b:.3f}·ratio (R² = {pred.r2:.2f})")
    ax.plot(x, pred.y, "ko", ms=4)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7)
    return ax
