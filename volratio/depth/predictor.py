"""The depth predictor: depth ≈ a + b·(PNG compression ratio) (Do, Shah, Le, Liu 2026).

`fit_predictor`: least squares depth ≈ a + b·ratio (the PNG compression ratio,
`volratio.depth.complexity`) with R², standard errors, the confidence band of the mean and the
prediction interval (Student t, `scipy.stats`), and the leave-one-out error;
`DepthPredictor.predict` gives the depth of a new target; `planted_predictor` calibrates it on
planted targets of known depth; `r2_interval` bootstraps R².

Chapters: "Depth: a narrow, target-dependent regime" (book/depth.md), "Unknown targets"
(book/unknown_targets.md); command: `volratio depth predict`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np
import scipy

from ..data.targets import get_target
from .complexity import Complexity, png_ratio
from .curves import DepthError


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
        return float(scipy.stats.t.ppf(0.5 + self.level / 2, self.n - 2)) if self.n > 2 else float("inf")

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
    x = np.asarray(ratios, dtype=np.float64)
    y = np.asarray(depths, dtype=np.float64)
    keep = np.isfinite(x) & np.isfinite(y)
    x, y = x[keep], y[keep]
    names = [n for n, k in zip(names, keep) if k] if names is not None else []
    if len(x) < 3:
        raise DepthError(f"the predictor needs at least 3 (ratio, depth) points with finite values, got {len(x)}")
    if np.ptp(x) == 0:
        raise DepthError("every ratio is the same; the slope is undefined — use targets of different complexity")
    lr = scipy.stats.linregress(x, y)
    n = len(x)
    resid = y - (lr.intercept + lr.slope * x)
    sigma = float(np.sqrt((resid**2).sum() / (n - 2))) if n > 2 else 0.0
    loo = []
    for i in range(n):
        m = np.arange(n) != i
        a_i, b_i = _ols(x[m], y[m]) if np.ptp(x[m]) > 0 else (float(y[m].mean()), 0.0)
        loo.append(float(a_i + b_i * x[i] - y[i]))
    loo = np.asarray(loo)
    return DepthPredictor(
        a=float(lr.intercept),
        b=float(lr.slope),
        r2=float(lr.rvalue**2),
        n=n,
        se_a=float(lr.intercept_stderr),
        se_b=float(lr.stderr),
        sigma=sigma,
        x_mean=float(x.mean()),
        sxx=float(((x - x.mean()) ** 2).sum()),
        level=level,
        loo_errors=loo.tolist(),
        loo_rmse=float(np.sqrt((loo**2).mean())),
        loo_mae=float(np.abs(loo).mean()),
        x=x.tolist(),
        y=y.tolist(),
        names=list(names),
    )


def r2_interval(x, y, level: float = 0.95, n_boot: int = 10_000, seed: int = 0) -> tuple[float, float]:
    """The percentile bootstrap interval at `level` of the R² of a straight-line fit of `y` on `x`:
    the (x, y) pairs resampled with replacement `n_boot` times (resamples whose x or y do not vary
    are dropped), seeded. The Picbreeder gallery's "complexity predicts depth" fit reports it."""
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if x.shape != y.shape or x.ndim != 1 or len(x) < 3:
        raise DepthError(f"r2_interval needs two equal-length 1-D arrays of ≥ 3 points, got {x.shape} and {y.shape}")
    if not 0 < level < 1 or int(n_boot) < 1:
        raise DepthError(f"r2_interval: level must be in (0, 1) and n_boot ≥ 1, got {level} and {n_boot}")
    idx = np.random.default_rng(seed).integers(0, len(x), size=(int(n_boot), len(x)))
    xb, yb = x[idx], y[idx]  # (n_boot, n)
    xc, yc = xb - xb.mean(1, keepdims=True), yb - yb.mean(1, keepdims=True)
    sxx, syy, sxy = (xc**2).sum(1), (yc**2).sum(1), (xc * yc).sum(1)
    ok = (sxx > 0) & (syy > 0)
    r2 = sxy[ok] ** 2 / (sxx[ok] * syy[ok])
    lo, hi = np.quantile(r2, [0.5 - level / 2, 0.5 + level / 2])
    return float(lo), float(hi)


# ---------------------------------------------------------------------------------------------
# Calibration on planted targets


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
