"""Small statistics shared by the experiments: the mean of a few seeds and its interval.

(Binomial intervals for ρ live in `volratio.rho.interval`; regression in `volratio.depth`.)
"""

from __future__ import annotations

import numpy as np


def mean_ci(x, level: float = 0.95) -> tuple[float, float, float]:
    """`(mean, lo, hi)`: the mean of the finite values of `x` and its Student-t interval at `level`
    (the mean itself when there is one value or no spread; NaNs when there is none)."""
    from scipy import stats

    a = np.asarray(x, dtype=np.float64).ravel()
    a = a[np.isfinite(a)]
    if a.size == 0:
        return float("nan"), float("nan"), float("nan")
    m = float(a.mean())
    if a.size < 2 or float(a.std()) == 0.0:
        return m, m, m
    h = float(stats.t.ppf(0.5 + level / 2, a.size - 1) * a.std(ddof=1) / np.sqrt(a.size))
    return m, m - h, m + h
