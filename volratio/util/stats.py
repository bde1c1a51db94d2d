"""Small statistics shared by the experiments: the mean of a few seeds and its interval
(`mean_ci`), and the library's one interval for a binomial proportion (`binomial_interval`: ρ,
P(solution), the judges' S under the verdicts); the agreement of two binary labellings
(`cohen_kappa`) and how well a score separates two classes (`roc_auc`), used where judges are
checked against verdicts. Regression lives in `volratio.depth`.
"""

from __future__ import annotations

import numpy as np
import scipy

from ..errors import VolratioError

INTERVAL_METHODS = ("wilson", "clopper-pearson")  # the methods `binomial_interval` knows


def mean_ci(x, level: float = 0.95) -> tuple[float, float, float]:
    """`(mean, lo, hi)`: the mean of the finite values of `x` and its Student-t interval at `level`
    (the mean itself when there is one value or no spread; NaNs when there is none)."""
    a = np.asarray(x, dtype=np.float64).ravel()
    a = a[np.isfinite(a)]
    if a.size == 0:
        return float("nan"), float("nan"), float("nan")
    m = float(a.mean())
    if a.size < 2 or float(a.std()) == 0.0:
        return m, m, m
    h = float(scipy.stats.t.ppf(0.5 + level / 2, a.size - 1) * a.std(ddof=1) / np.sqrt(a.size))
    return m, m - h, m + h


def binomial_interval(k: int, n: int, confidence: float = 0.95, method: str = "wilson") -> tuple[float, float]:
    """`(lo, hi)`: the confidence interval at `confidence` for a proportion of `k` successes in
    `n` trials — Wilson's score interval (default) or Clopper–Pearson's exact one
    (`method="clopper-pearson"`), as `scipy.stats.binomtest(k, n).proportion_ci`.

    n = 0 gives `(0.0, 1.0)`: no trials rule out no proportion (the interval every n > 0 narrows)."""
    if method not in INTERVAL_METHODS:
        raise VolratioError(f"interval method {method!r}: use one of {', '.join(INTERVAL_METHODS)}")
    if not 0.0 < confidence < 1.0:
        raise VolratioError(f"confidence {confidence!r} is not inside (0, 1); use e.g. 0.95")
    k, n = int(k), int(n)
    if not 0 <= k <= n:
        raise VolratioError(f"{k} successes in {n} trials: need 0 ≤ k ≤ n")
    if n == 0:
        return (0.0, 1.0)
    ci = scipy.stats.binomtest(k, n).proportion_ci(
        confidence, method="exact" if method == "clopper-pearson" else "wilson"
    )
    return (float(ci.low), float(ci.high))


def cohen_kappa(a, b) -> float:
    """Cohen's κ of two binary label vectors (1 when both are constant and equal)."""
    a, b = np.asarray(a, bool), np.asarray(b, bool)
    po = float((a == b).mean())
    pa, pb = a.mean(), b.mean()
    pe = pa * pb + (1 - pa) * (1 - pb)
    return 1.0 if pe >= 1 else float((po - pe) / (1 - pe))


def roc_auc(values, truth) -> float:
    """Probability that a kept image scores higher than a not-kept one (ties count half)."""
    v, y = np.asarray(values, float), np.asarray(truth, bool)
    ok = np.isfinite(v)
    v, y = v[ok], y[ok]
    pos, neg = v[y], v[~y]
    if len(pos) == 0 or len(neg) == 0:
        return float("nan")
    gt = (pos[:, None] > neg[None]).mean()
    eq = (pos[:, None] == neg[None]).mean()
    return float(gt + 0.5 * eq)
