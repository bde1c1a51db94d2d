import math

import numpy as np
from scipy import stats

from volratio.util.stats import mean_ci


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
