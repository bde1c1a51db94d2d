"""The volume-ratio claim's checks read off a ρ grid (`volratio.report.readings.rho`), on grids built
by hand so that each check's answer is known."""

import math

from volratio.report.readings import rho as reading
from volratio.rho import decay_fit
from volratio.rho.boolean import get_boolean_target
from volratio.util.stats import binomial_interval

TARGET = get_boolean_target("chain:2")  # W_min = 2, L* = 2


def peaked(W, L):
    """ρ logit-linear in the distance from (2, 2), as `decay_fit` models it: 0.8 at the peak."""
    return 1 / (1 + math.exp(-(math.log(4) - (W - 2) - (L - 2))))


def grid(rho_at, solutions=1600, below_compositional=0):
    """Cells W 1..4 × L 1..4 with `solutions` solutions each; ρ(W, L) = rho_at(W, L) above the support,
    and `below_compositional` compositional solutions in every cell below it."""
    rows = []
    for W in range(1, 5):
        for L in range(1, 5):
            under = L < 2 or W < (TARGET.min_width(L) or 0)
            k = below_compositional if under else round(solutions * rho_at(W, L))
            lo, hi = binomial_interval(k, solutions)
            rows.append(
                {
                    "W": W,
                    "L": L,
                    "samples": 10 * solutions,
                    "solutions": solutions,
                    "compositional": k,
                    "rho": k / solutions,
                    "lo": lo,
                    "hi": hi,
                }
            )
    return {"rows": rows, "W_min": 2, "L_star": 2, "target": "chain:2"}


def fits(res):
    return {along: decay_fit(res["rows"], TARGET, along) for along in ("W", "L", "WL")}


def test_a_grid_peaked_at_wmin_lstar_and_decaying_passes_every_check():
    res = grid(peaked)
    out = reading.checks(res, TARGET, fits(res))
    assert [ok for _, ok, _ in out] == [True, True, True, True], out
    assert out[1][0] == "ρ highest at (W_min, L*) = (2, 2)" and "0 cell(s) significantly above" in out[1][2]


def test_a_compositional_network_below_the_support_or_a_higher_cell_elsewhere_fails_its_check():
    res = grid(peaked, below_compositional=3)
    assert not reading.checks(res, TARGET, fits(res))[0][1]
    flat_then_up = grid(lambda W, L: 0.1 if (W, L) != (4, 4) else 0.9)
    out = reading.checks(flat_then_up, TARGET, fits(flat_then_up))
    assert not out[1][1] and "(W=4, L=4)" in out[1][2]


def test_numbers_quote_the_peak_the_cuts_and_the_cells_below():
    res = grid(peaked, below_compositional=1)
    n = reading.numbers(res, TARGET, fits(res), widest=4)
    assert n["peak"].startswith("0.8 [") and n["W"] == "2, 3, 4" and n["L"] == "2…4"
    below = [r for r in res["rows"] if r["L"] < 2 or r["W"] < 2]
    assert n["below-compositional"] == f"{len(below):,}" and n["networks"] == f"{16 * 16000:,}"
    assert n["rho-W"].split(", ")[0] == "0.8" and len(n["rho-widest"].split(", ")) == 3
