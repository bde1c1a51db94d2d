import math

import numpy as np
import pytest
from scipy import stats

from volratio.errors import VolratioError
from volratio.util.stats import binomial_interval, mean_ci


def test_mean_ci_matches_scipy_t_interval():
    x = np.array([0.2, 0.5, 0.4, 0.9])
    m, lo, hi = mean_ci(x, 0.9)
    ref = stats.t.interval(0.9, len(x) - 1, loc=x.mean(), scale=stats.sem(x))
    assert m == x.mean() and math.isclose(lo, ref[0]) and math.isclose(hi, ref[1])


def test_mean_ci_edge_cases():
    assert mean_ci([3.0]) == (3.0, 3.0, 3.0)
    assert mean_ci([2.0, 2.0]) == (2.0, 2.0, 2.0)
    assert mean_ci([1.0, float("nan"), 3.0])[0] == 2.0  # non-finite values are ignored
    assert all(math.isnan(v) for v in mean_ci([]))


def test_binomial_interval_wilson_and_clopper_pearson():
    lo, hi = binomial_interval(3, 40, 0.95, "wilson")
    lo2, hi2 = binomial_interval(3, 40, 0.95, "clopper-pearson")
    assert lo < 3 / 40 < hi and lo2 < 3 / 40 < hi2 and hi2 - lo2 > hi - lo  # C–P is conservative
    ref = stats.binomtest(3, 40).proportion_ci(0.95, method="wilson")
    assert (lo, hi) == (ref.low, ref.high)
    lo, hi = binomial_interval(0, 20)
    assert lo == 0.0 and 0.1 < hi < 0.2
    lo, hi = binomial_interval(10, 20)
    assert lo < 0.5 < hi and math.isclose(hi - 0.5, 0.5 - lo)


def test_binomial_interval_edge_cases():
    assert binomial_interval(0, 0) == (0.0, 1.0)  # no trials: every proportion is possible
    assert binomial_interval(0, 0, 0.99, "clopper-pearson") == (0.0, 1.0)
    for bad in [(5, 3), (-1, 3)]:
        with pytest.raises(VolratioError, match="0 ≤ k ≤ n"):
            binomial_interval(*bad)
    with pytest.raises(VolratioError, match="method"):
        binomial_interval(1, 2, method="wald")
    with pytest.raises(VolratioError, match="confidence"):
        binomial_interval(1, 2, confidence=1.0)
