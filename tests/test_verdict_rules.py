"""Every verdict outcome, on constructed inputs: the verdict algebra (`volratio.util.verdicts`), each
claim's deciding statistic (`volratio.report.catalogue`) and each claim's decider
(`volratio.report.deciders`), driven to reproduced, partly, not reproduced and contradicted."""

import math

import numpy as np
import pandas as pd
import pytest
import scipy.stats
from verdict_data import ADAM, MUON
from verdict_data import depth_curve as _curve
from verdict_data import frames as _frames
from verdict_data import optimizer_summary as _summary
from verdict_data import scene_rows as _scene_rows
from verdict_data import sixteen as _sixteen
from verdict_data import sp_table as _sp_table

from volratio.depth import fit_predictor, sweet_spot
from volratio.errors import VolratioError
from volratio.experiments.depth_regime import DepthCurve
from volratio.report import claims
from volratio.runs import stored
from volratio.util.pooling import about_targets
from volratio.util.verdicts import (
    VERDICTS,
    Estimate,
    combine,
    compare_estimates,
    difference,
    lower_is_better,
    pool,
    verdict_from_fraction,
    verdict_on,
)

E = Estimate
NAN = float("nan")
FOUR = ["reproduced", "not reproduced", "inconclusive", "contradicted"]
M = 0.1  # the smallest effect of interest of the table below


@pytest.mark.parametrize(
    "e, threshold, claimed, verdict",
    [
        (E(0.5, 0.2, 0.8), 0.0, "above", "reproduced"),
        (E(0.5, 0.0, 0.8), 0.0, "above", "inconclusive"),  # touches t and reaches past t + m
        (E(0.1, -0.2, 0.4), 0.0, "above", "inconclusive"),  # a mean above t is not enough
        (E(0.0, -0.2, 0.2), 0.0, "above", "inconclusive"),
        (E(-0.1, -0.4, 0.2), 0.0, "above", "inconclusive"),  # a mean below t is not enough either
        (E(0.0, -0.05, 0.05), 0.0, "above", "not reproduced"),  # excludes every effect ≥ m
        (E(0.02, -0.05, 0.0999), 0.0, "above", "not reproduced"),
        (E(0.05, -0.05, 0.1), 0.0, "above", "inconclusive"),  # reaches t + m exactly
        (E(-0.1, -0.4, 0.0), 0.0, "above", "not reproduced"),  # touching t from below: not contradicted
        (E(-0.5, -0.8, -0.2), 0.0, "above", "contradicted"),
        (E(1.5, 1.2, 1.8), 1.0, "above", "reproduced"),  # a threshold other than 0
        (E(1.0, 0.9, 1.05), 1.0, "above", "not reproduced"),
        (E(0.9, 0.8, 0.95), 1.0, "above", "contradicted"),
        (E(-0.5, -0.8, -0.2), 0.0, "below", "reproduced"),
        (E(-0.1, -0.4, 0.2), 0.0, "below", "inconclusive"),
        (E(-0.1, -0.4, 0.0), 0.0, "below", "inconclusive"),
        (E(0.1, -0.05, 0.4), 0.0, "below", "not reproduced"),  # below: the far end is lo
        (E(0.1, -0.2, 0.4), 0.0, "below", "inconclusive"),
        (E(0.5, 0.0, 0.8), 0.0, "below", "not reproduced"),
        (E(0.5, 0.2, 0.8), 0.0, "below", "contradicted"),
        (E(0.5, 0.5, 0.5), 0.0, "above", "reproduced"),  # an exact quantity: a point
        (E(0.05, 0.0, 0.05), 0.0, "above", "not reproduced"),
        (E(-0.5, -0.5, -0.5), 0.0, "above", "contradicted"),
        (E(0.5, NAN, NAN), 0.0, "above", "inconclusive"),  # an interval end that is NaN excludes nothing
        (E(-0.5, NAN, NAN), 0.0, "above", "inconclusive"),
        (E(0.5, -math.inf, math.inf), 0.0, "below", "inconclusive"),
        (E(NAN, 0.1, 0.2), 0.0, "above", "not measured"),
        (None, 0.0, "above", "not measured"),
    ],
)
def test_verdict_on_every_outcome(e, threshold, claimed, verdict):
    assert verdict_on(e, threshold, claimed, M) == verdict


@pytest.mark.parametrize("key", list(claims.CLAIMS))
@pytest.mark.parametrize(
    "where, verdict",
    [(lambda t, m: (t + 2 * m, t + m, t + 3 * m), "reproduced"),
     (lambda t, m: (t - 2 * m, t - 3 * m, t - m), "contradicted"),
     (lambda t, m: (t, t - m / 2, t + m / 2), "not reproduced"),
     (lambda t, m: (t, t - 2 * m, t + 2 * m), "inconclusive")],
)  # fmt: skip
def test_every_claims_statistic_reaches_every_outcome(key, where, verdict):
    st = claims.CLAIMS[key].statistic
    sign = 1 if st.claimed == "above" else -1
    mean, a, b = where(0.0, st.smallest)
    lo, hi = sorted((st.threshold + sign * a, st.threshold + sign * b))
    assert st.decide(E(st.threshold + sign * mean, lo, hi)) == verdict
    assert st.why and st.smallest > 0


# the rule that weighs m, zone by zone: (a, b) the ends measured into the claimed side from t
ZONES = [
    ((-0.3, -0.1), "contradicted"),  # b < 0
    ((-0.05, 0.0), "not reproduced"),  # a ≤ 0 ≤ b < m
    ((-0.05, 0.05), "not reproduced"),
    ((-0.05, 0.1), "inconclusive"),  # a ≤ 0 and b ≥ m
    ((0.0, 0.3), "inconclusive"),
    ((0.01, 0.05), "negligible"),  # a > 0 and b < m: real, too small to matter
    ((0.01, 0.0999), "negligible"),
    ((0.01, 0.1), "reproduced"),  # a > 0 and b ≥ m
    ((0.2, 0.4), "reproduced"),
]


@pytest.mark.parametrize("threshold", [0.0, 2.0])  # 2 ± 0.1 − 2 rounds to ≥ 0.1, as the edges need
@pytest.mark.parametrize("claimed", ["above", "below"])
@pytest.mark.parametrize("ends, verdict", ZONES)
def test_the_rule_weighs_m_in_every_zone_on_both_sides(ends, verdict, claimed, threshold):
    a, b = ends
    sign = 1 if claimed == "above" else -1
    lo, hi = sorted((threshold + sign * a, threshold + sign * b))
    assert verdict_on(E((lo + hi) / 2, lo, hi), threshold, claimed, M) == verdict


@pytest.mark.parametrize("a", np.linspace(0.001, 0.099, 12))
@pytest.mark.parametrize("share", np.linspace(0.0, 0.99, 7))
@pytest.mark.parametrize("claimed", ["above", "below"])
def test_an_interval_past_t_that_stops_short_of_m_is_negligible_never_reproduced(a, share, claimed):
    b = a + share * (M - a)  # 0 < a ≤ b < m: past t, short of t + m
    sign = 1 if claimed == "above" else -1
    lo, hi = sorted((sign * a, sign * b))
    assert verdict_on(E((lo + hi) / 2, lo, hi), 0.0, claimed, M) == "negligible"


@pytest.mark.parametrize("claimed", ["above", "below"])
def test_an_end_within_the_monte_carlo_error_of_t_or_t_plus_m_is_borderline(claimed):
    sign = 1 if claimed == "above" else -1

    def word(a, b, mc):
        lo, hi = sorted((sign * a, sign * b))
        return verdict_on(E((lo + hi) / 2, lo, hi, mc), 0.0, claimed, M)

    assert word(0.002, 0.3, 0.005) == "borderline"  # a near t
    assert word(-0.2, -0.003, 0.005) == "borderline"  # b near t
    assert word(0.02, 0.098, 0.005) == "borderline"  # b near t + m
    assert word(0.02, 0.3, 0.005) == "reproduced" and word(0.002, 0.3, 0.0) == "reproduced"
    assert word(0.02, 0.09, 0.005) == "negligible"


def test_the_welch_bound_keeps_its_rule():
    """A bound-type statistic, m a rounding tolerance: reproduced as soon as the interval clears t,
    however close to it (the rule that weighs m would call it negligible)."""
    st = claims.CLAIMS["welch-r-le-d"].statistic
    assert st.bound and not any(c.statistic.bound for k, c in claims.CLAIMS.items() if k != "welch-r-le-d")
    at_bound = E(1.0, 1.0, 1.0)  # a frame exactly at the bound: 1e-9 past t, below m = 1e-6
    assert (
        st.decide(at_bound) == "reproduced" and verdict_on(at_bound, st.threshold, "above", st.smallest) == "negligible"
    )
    assert st.decide(E(0.9, 0.9, 0.9)) == "contradicted" and st.decide(None) == "not measured"
    assert (
        claims.welch_r_le_d(
            _frames([1.0, 1.2, 1.5]), pd.DataFrame({"r": [3], "d": [2], "mean_sq_inner": [0.1]})
        ).verdict
        == "reproduced"
    )


def test_the_weaker_word_decides_a_claim_of_two_statements():
    from volratio.util.verdicts import weaker

    assert weaker("reproduced", "inconclusive") == "inconclusive"
    assert weaker("negligible", "reproduced") == "negligible"
    assert weaker("not reproduced", "contradicted") == "contradicted"
    assert weaker("reproduced", "reproduced") == "reproduced"
    with pytest.raises(VolratioError, match="verdict must be one of"):
        weaker("reproduced", "partly")


def test_the_power_line_asks_for_a_full_width_under_m_and_names_targets_and_networks():
    """A full width under m decides (an interval that narrow cannot reach both t and t + m); a wider
    one names the targets and networks per cell, from the observed between- and within-target
    variances, that would bring it there."""
    rng = np.random.default_rng(0)
    rows = pd.DataFrame([{"target": t, "setting": t, "arm": arm, "stratum": t, "unit": i,
                          "value": (0.2 if arm == "a" else 0.0) + rng.normal(0, 0.1 + 0.1 * (arm == "a"))}
                         for t in range(4) for i in range(5) for arm in "ab"])  # fmt: skip
    p = about_targets(rows, "a", "b")
    st = claims.CLAIMS["sp-vs-pruners"].statistic
    k, n = p.plan(st.smallest)
    assert 2 * p.half_width >= st.smallest and k > 4 and p.width_at(k, n) < st.smallest
    assert st.power(p) == (f"full width {2 * p.half_width:.3f} against m = 0.1, with 4 targets, 5 networks per cell; "
                           f"about {k} targets, {n} networks per cell, would bring it under m")  # fmt: skip
    assert p.between >= 0 and p.within > 0
    narrow = about_targets(rows.assign(value=rows.value * 0.01), "a", "b")
    assert st.power(narrow).endswith("(narrow enough to decide)") and 2 * narrow.half_width < st.smallest


def test_verdict_on_refuses_a_missing_smallest_effect():
    with pytest.raises(VolratioError, match="smallest effect of interest"):
        verdict_on(E(1, 0, 2), 0.0, "above", 0.0)
    with pytest.raises(VolratioError, match="smallest effect of interest"):
        claims.Statistic("x", 0.0, "above", -1.0, "why")


def test_verdict_on_refuses_an_unknown_side():
    with pytest.raises(VolratioError, match=r"^a claim's side must be one of \('above', 'below'\), got 'higher'$"):
        verdict_on(E(1, 0, 2), 0.0, "higher", M)
    with pytest.raises(VolratioError, match="claimed must be one of"):
        claims.Statistic("x", 0.0, "up", M, "why")


def test_every_verdict_word_is_known_and_coloured():
    words = set(FOUR) | {"negligible", "borderline", "not measured"}
    assert words == set(VERDICTS) and set(claims.BADGE_COLOURS) == set(VERDICTS)
    assert len(set(claims.BADGE_COLOURS.values())) == len(VERDICTS)


def test_difference_and_pool():
    d = difference(E(0.5, 0.4, 0.6), E(0.2, 0.1, 0.35))
    assert (d.mean, d.lo, d.hi) == pytest.approx((0.3, 0.05, 0.5))
    # above 0 exactly when the two intervals are separated
    assert verdict_on(difference(E(0.5, 0.36, 0.6), E(0.2, 0.1, 0.35)), 0, "above", M) == "reproduced"
    assert verdict_on(difference(E(0.5, 0.35, 0.6), E(0.2, 0.1, 0.35)), 0, "above", M) == "inconclusive"
    p = pool([E(1.0, 0.0, 2.0), E(3.0, 2.0, 6.0)])
    assert (p.mean, p.lo, p.hi) == (2.0, 1.0, 4.0)
    assert pool(iter([E(1.0, 0.5, 1.5)])) == E(1.0, 0.5, 1.5)
    with pytest.raises(VolratioError, match="^pooling needs at least one estimate$"):
        pool([])


@pytest.mark.parametrize(
    "higher, lower, verdict",
    [
        (E(0.8, 0.7, 0.9), E(0.1, 0.0, 0.2), "reproduced"),
        (E(0.8, 0.2, 0.9), E(0.1, 0.0, 0.2), "partly"),  # touching intervals are not separated
        (E(0.5, 0.1, 0.9), E(0.4, 0.2, 0.6), "partly"),
        (E(0.4, 0.1, 0.9), E(0.4, 0.2, 0.6), "not reproduced"),  # equal means
        (E(0.1, 0.0, 0.2), E(0.8, 0.7, 0.9), "not reproduced"),
    ],
)
def test_compare_estimates(higher, lower, verdict):
    assert compare_estimates(higher, lower) == verdict


@pytest.mark.parametrize(
    "passed, total, verdict",
    [(3, 3, "reproduced"), (1, 3, "partly"), (2, 3, "partly"), (0, 3, "not reproduced"), (0, 0, "not measured"),
     (0, -1, "not measured"), (1, 1, "reproduced"), (0, 1, "not reproduced")],
)  # fmt: skip
def test_verdict_from_fraction(passed, total, verdict):
    assert verdict_from_fraction(passed, total) == verdict


@pytest.mark.parametrize(
    "parts, verdict",
    [
        (["reproduced", "reproduced"], "reproduced"),
        (["reproduced", "not measured"], "reproduced"),  # "not measured" parts are left out
        (["reproduced", "partly"], "partly"),
        (["reproduced", "not reproduced"], "partly"),
        (["partly", "not reproduced"], "partly"),
        (["reproduced", "contradicted"], "partly"),
        (["not reproduced", "not reproduced"], "not reproduced"),
        (["not reproduced", "not measured"], "not reproduced"),
        (["not reproduced", "contradicted"], "not reproduced"),
        (["contradicted", "contradicted"], "contradicted"),
        (["contradicted", "not measured"], "contradicted"),
        (["not measured", "not measured"], "not measured"),
        ([], "not measured"),
    ],
)
def test_combine(parts, verdict):
    assert combine(parts) == verdict
    assert combine(iter(parts)) == verdict  # any iterable, read once


def test_lower_is_better_and_from_samples():
    assert lower_is_better(E(0.1, 0.05, 0.2)) == E(-0.1, -0.2, -0.05)
    assert compare_estimates(lower_is_better(E(0.1, 0.09, 0.11)), lower_is_better(E(0.5, 0.49, 0.51))) == "reproduced"
    e = E.from_samples([1.0, 2.0, 3.0])
    assert e.mean == 2.0 and e.lo == pytest.approx(2 - 4.302653 / math.sqrt(3), abs=1e-5) and e.hi > 2.0
    half = E.from_samples([1.0, 2.0, 3.0], level=0.5)
    assert half.lo == pytest.approx(2 - 0.816497 / math.sqrt(3), abs=1e-5)  # t(2) at 75%: 0.8165
    assert E.from_samples(iter([1, 2, 4])).mean == pytest.approx(7 / 3)
    with pytest.raises(VolratioError, match="^an estimate needs at least one sample$"):
        E.from_samples([])


def test_each_claim_names_one_deciding_statistic():
    assert set(claims.CLAIMS) == {k for k in claims.CLAIMS if claims.CLAIMS[k].statistic.name}
    sides = {k: c.statistic.claimed for k, c in claims.CLAIMS.items()}
    assert sides == {**{k: "above" for k in claims.CLAIMS}, "png-ratio-linear": "below", "scenes-weaker": "below"}
    st = claims.CLAIMS["scenes-weaker"].statistic
    assert st.decide(E(-0.2, -0.3, -0.1)) == "reproduced" and st.decide(None) == "not measured"
    assert st.sentence(E(-0.2, -0.3, -0.1)).endswith("= -0.200 [-0.300, -0.100] (the claim: below 0)")
    assert st.sentence(None).endswith(": not measured")
    assert list(claims.table().columns[-3:]) == ["deciding statistic", "claimed", "smallest effect of interest"]


# ---------------------------------------------------------------------------------------------
# each claim's decider, driven to every outcome


@pytest.mark.parametrize(
    "sp, wanda, verdict",
    [
        ([0.5, 0.5, 0.5], [0.05, 0.05, 0.05], "reproduced"),
        ([0.3, 0.5, 0.7], [0.45, 0.45, 0.45], "inconclusive"),  # SP 0.5 [0.003, 0.997]
        ([0.44, 0.45, 0.46], [0.45, 0.45, 0.45], "not reproduced"),  # within m of 0
        ([0.0, 0.0, 0.0], [0.5, 0.5, 0.5], "contradicted"),
    ],
)
def test_sp_vs_pruners_every_outcome(sp, wanda, verdict):
    v, _ = claims.sp_vs_pruners(_sp_table(sp, wanda))
    assert v.verdict == verdict and v.evidence["strongest baseline"] == "wanda"
    assert v.evidence["statistic"]["mean"] == pytest.approx(np.mean(sp) - np.mean(wanda))


@pytest.mark.parametrize(
    "contrasts, verdict",
    [
        ([0.3, 0.35, 0.4, 0.3], "reproduced"),
        ([0.3, -0.2, 0.25, -0.15], "inconclusive"),
        ([-0.3, 0.2, -0.25, 0.15], "inconclusive"),
        ([0.02, -0.01, 0.01, -0.02], "not reproduced"),
        ([-0.3, -0.35, -0.4, -0.3], "contradicted"),
    ],
)
def test_depth_optimum_every_outcome(contrasts, verdict):
    curves = {"planted:a": _curve("planted:a", contrasts), "picbreeder:b": _curve("picbreeder:b", [0.1] * 4)}
    v, n = claims.depth_optimum(curves, {"planted:a": 3})
    assert v.verdict == verdict and n["statistic"]["mean"] == pytest.approx(np.mean(contrasts))
    assert v.line().startswith("EMC2 AUC at the true depth L*")


def test_depth_statistic_beats_both_sides_and_skips_what_it_cannot_compare():
    # deeper depths score higher than L* although the shallower ones score lower: L* does not beat both
    score = np.array([[0.1, 0.1], [0.5, 0.5], [0.7, 0.7], [0.7, 0.7]])  # depths 2, 3, 4, 5
    loss = np.full_like(score, 0.01)
    c = DepthCurve("planted:a", [2, 3, 4, 5], score, loss, loss, loss, sweet_spot([2, 3, 4, 5], score))
    v, n = claims.depth_optimum({"planted:a": c}, {"planted:a": 3})
    assert n["statistic"]["mean"] == pytest.approx(-0.2)  # 0.5 − the deeper side's 0.7
    assert n["against every other depth"]["mean"] == pytest.approx(0.5 - 0.5)  # the weaker reading: (0.1+0.7+0.7)/3
    # L* at the grid's edge: only the deeper side; a NaN score is left out and counted
    edge = _curve("planted:e", [0.2, 0.2], true_at=2)
    edge.score[2, 0] = np.nan
    rows, unscored = claims.depth_rows({"planted:e": edge}, {"planted:e": 2})
    assert unscored == 1 and set(rows.arm) == {"L*", "deeper"}
    _, n = claims.depth_optimum({"planted:e": edge}, {"planted:e": 2})
    assert n["statistic"]["mean"] == pytest.approx(0.2) and n["networks not scored"] == 1
    # L* missing from the grid: left out, and with no planted target left the claim is not measured
    assert len(claims.depth_rows({"planted:a": c}, {"planted:a": 7})[0]) == 0
    v, _ = claims.depth_optimum({"planted:a": c}, {"planted:a": 7})
    assert v.verdict == "not measured"


def test_depth_statistic_scores_networks_that_do_not_draw_their_label_0_and_says_so():
    """Rule 4 on the depth claim: a network whose base image the judge does not keep (or that is
    collapsed: `stored.draws`) scores 0 on its side; the verdict with those networks left out is
    stated beside; a judge-free score (`zero_undrawn=False`) keeps its values."""
    score = np.array([[0.1, 0.1], [0.5, 0.5], [0.2, 0.2]])  # depths 2, 3, 4; L* = 3
    loss = np.full_like(score, 0.01)
    kept = np.array([[1.0, 1.0], [0.0, 1.0], [1.0, np.nan]])  # one L* network not drawn; one without a verdict
    c = DepthCurve("planted:a", [2, 3, 4], score, loss, loss, loss, sweet_spot([2, 3, 4], score), kept)
    rows, _ = claims.depth_rows({"planted:a": c}, {"planted:a": 3})
    assert rows.value.tolist() == [0.1, 0.1, 0.0, 0.5, 0.2, 0.2] and (~rows.drawn).sum() == 1
    raw = claims.depth_rows({"planted:a": c}, {"planted:a": 3}, zero_undrawn=False)[0]
    assert raw.value.tolist() == [0.1, 0.1, 0.5, 0.5, 0.2, 0.2]
    v, n = claims.depth_optimum({"planted:a": c}, {"planted:a": 3})
    assert n["statistic"]["mean"] == pytest.approx(0.25 - 0.2)  # L*'s (0 + 0.5) / 2 over the deeper side
    assert n["not drawing, scored 0"] == 1 and n["left out instead"]["mean"] == pytest.approx(0.5 - 0.2)
    assert "1 networks that do not draw their label scored 0" in v.measured
    assert stored.draws({"base_kept": [True, True, False], "collapsed": [False, True, False]}) == [True, False, False]
    assert stored.draws({"base_kept": [True]}) == [True]


@pytest.mark.parametrize("verdict", FOUR)
def test_muon_above_adam_every_outcome(verdict):
    v = claims.muon_above_adam(_summary(MUON[verdict], ADAM), "quick test")
    assert v.verdict == verdict and v.evidence["statistic"]["mean"] == pytest.approx(MUON[verdict][0] - 0.5)
    # over targets: the pooled statistic, whatever the loss sub-check says
    by = claims.muon_above_adam_by_target({"t:a": _summary(MUON[verdict], ADAM, loss=(0.05, 0.01))})
    # the claim joins two statements: Muon's loss five times Adam's contradicts it, whatever the score says
    assert by.verdict == "contradicted" and by.evidence["score verdict"] == verdict
    assert by.evidence["loss statistic"]["verdict"] == "contradicted" and by.evidence["t:a"]["loss"] == "not reproduced"
    lower = claims.muon_above_adam_by_target({"t:a": _summary(MUON[verdict], ADAM, loss=(0.01, 0.05))})
    assert lower.verdict == verdict and lower.evidence["loss statistic"]["verdict"] == "reproduced"


def test_muon_pooled_over_targets():
    two = {"t:a": _summary(MUON["reproduced"], ADAM), "t:b": _summary(MUON["contradicted"], ADAM)}
    v = claims.muon_above_adam_by_target(two)
    # without the networks: the average of the two differences' intervals, which never narrows
    assert v.verdict == "inconclusive"
    assert v.evidence["statistic"] == pytest.approx({"mean": -0.025, "lo": -0.15, "hi": 0.1})


def _opt_runs(muon, adam, targets=("t:a", "t:b")):
    """One row per network: per target, three seeds of each optimizer at one setting."""
    return pd.DataFrame([{"target": t, "depth": 4, "optimizer": o, "setting": "lr 1", "seed": k, "score": x,
                          "loss": 0.01, "drawn": True}
                         for t in targets for o, xs in (("muon", muon), ("adam", adam)) for k, x in enumerate(xs)])  # fmt: skip


def _opt_summaries(runs):
    out = {}
    for t, g in runs.groupby("target"):
        rows = []
        for o, h in g.groupby("optimizer"):
            e = Estimate.from_samples(h.score)
            rows.append({"optimizer": o, "score": e.mean, "score_lo": e.lo, "score_hi": e.hi, "loss": 0.01,
                         "loss_lo": 0.009, "loss_hi": 0.011, "depth": 4, "setting": "lr 1"})  # fmt: skip
        out[t] = pd.DataFrame(rows)
    return out


def test_muon_from_networks_pools_over_targets_and_scores_what_does_not_draw_zero():
    runs = _opt_runs([0.5, 0.55, 0.6], [0.5, 0.52, 0.54])
    v = claims.muon_above_adam_by_target(_opt_summaries(runs), runs=runs)
    assert v.evidence["statistic"]["mean"] == pytest.approx(0.03)
    assert v.evidence["power"]["networks_per_cell"] == 3 and v.evidence["power"]["settings"] == 2
    one = _opt_runs([0.5, 0.55, 0.6], [0.5, 0.52, 0.54], targets=("t:a",))
    w = claims.muon_above_adam_by_target(_opt_summaries(one), runs=one)
    assert w.evidence["interval"].startswith("about these targets' networks")  # one target: its networks
    assert v.evidence["interval"].startswith("about targets like these: 2 targets")  # two: targets like them
    four = _opt_runs([0.5, 0.55, 0.6], [0.5, 0.52, 0.54], targets=("t:a", "t:b", "t:c", "t:d"))
    x = claims.muon_above_adam_by_target(_opt_summaries(four), runs=four)
    assert x.evidence["power"]["half_width"] < v.evidence["power"]["half_width"]  # more targets: narrower
    runs.loc[(runs.optimizer == "muon") & (runs.seed == 0), "drawn"] = False  # never draws: scored 0
    z = claims.muon_above_adam_by_target(_opt_summaries(runs), runs=runs)
    assert z.evidence["statistic"]["mean"] == pytest.approx(0.03 - 0.5 / 3)
    assert "2 networks that do not draw their label scored 0" in z.measured


@pytest.mark.parametrize(
    "rows, verdict",
    [
        ([(-0.2, -0.3, -0.1)], "reproduced"),
        ([(-0.05, -0.2, 0.1)], "inconclusive"),
        ([(0.05, -0.05, 0.2)], "not reproduced"),  # below: the far end is lo, −0.05 > −0.1
        ([(0.2, 0.1, 0.3)], "contradicted"),
        # eight scenes, above their parts in six: over the scenes +0.15 [+0.08, +0.22], contradicted
        ([(0.2, 0.1, 0.3)] * 6 + [(-0.05, -0.2, 0.1), (0.05, -0.1, 0.2)], "contradicted"),
        # three scenes: the t-interval over them (2 degrees of freedom) reaches t and t + m
        ([(-0.2, -0.3, -0.1), (-0.1, -0.2, 0.0), (0.05, -0.05, 0.15)], "inconclusive"),
        ([], "not measured"),
    ],
)
def test_scenes_weaker_every_outcome(rows, verdict):
    v = claims.scenes_weaker(_scene_rows(*rows))
    assert v.verdict == verdict
    if rows:  # the forest ends with the deciding statistic
        last = v.forest.rows[-1]
        over = f"over {len(rows)} scenes" if len(rows) > 1 else "one scene"
        assert last.label == f"best mean score, {over} (deciding)" and last.group == 2
        assert last.mean == pytest.approx(v.evidence["statistic"]["mean"])
    if len(rows) > 1:  # the scenes are the units: a t-interval over them
        e = Estimate.from_samples([d for d, _, _ in rows])
        assert v.evidence["statistic"] == pytest.approx({"mean": e.mean, "lo": e.lo, "hi": e.hi})


def test_scenes_are_decided_on_the_best_mean_score_and_peak_minus_rest_is_a_sub_check():
    best = _scene_rows((-0.2, -0.3, -0.1), (-0.25, -0.35, -0.15), (-0.22, -0.3, -0.12))
    peak = _scene_rows((0.2, 0.1, 0.3), (0.3, 0.2, 0.4), (0.25, 0.2, 0.3), measure="peak − rest")
    v = claims.scenes_weaker(best + peak)
    assert v.verdict == "reproduced" and v.evidence["peak − rest (sub-check)"]["verdict"] == "contradicted"
    assert v.evidence["statistic"]["mean"] == pytest.approx(-0.67 / 3) and v.evidence["scenes"] == 3
    with pytest.raises(VolratioError, match="names no measure"):
        claims.scenes_weaker([{**best[0], "effect": "one weight"}])


@pytest.mark.parametrize(
    "ratios, verdict",
    [
        ([1.0, 1.2, 1.1], "reproduced"),  # a frame at the bound (an ETF) is on the claimed side
        ([1.0 - 1e-9, 1.2, 1.1], "not reproduced"),  # at the threshold exactly: a point, not above it
        ([0.9, 1.2, 1.1], "contradicted"),
    ],
)
def test_welch_r_le_d_every_outcome(ratios, verdict):
    toy = pd.DataFrame({"r": [4], "d": [2], "mean_sq_inner": [0.1]})
    assert claims.welch_r_le_d(_frames(ratios), toy).verdict == verdict


@pytest.mark.parametrize(
    "depths, verdict",
    [
        (10.0 - np.arange(2, 8) + np.array([0.1, -0.1, 0.05, -0.05, 0.1, -0.1]), "reproduced"),
        ([5, 3, 6, 2, 5, 4], "inconclusive"),  # slope −0.09 [−1.17, +1.00]
        ([4, 5, 2, 6, 3, 5], "inconclusive"),  # slope +0.09 [−1.00, +1.17]
        ([4.0, 4.05, 3.95, 4.0, 4.02, 3.98], "not reproduced"),  # flat: every slope ≤ −m excluded
        (1.0 + np.arange(2, 8) + np.array([0.1, -0.1, 0.05, -0.05, 0.1, -0.1]), "contradicted"),
    ],
)
def test_png_ratio_linear_every_outcome(depths, verdict):
    pred = fit_predictor(np.arange(2.0, 8.0), np.asarray(depths, dtype=float))
    v = claims.png_ratio_linear(pred)
    assert v.verdict == verdict and v.evidence["statistic"]["mean"] == pytest.approx(pred.b)
    s = claims.slope(pred)
    assert s.hi - s.mean == pytest.approx(s.mean - s.lo) and s.hi - s.lo > 0


@pytest.mark.parametrize(
    "w, verdict",
    [
        ((0.5, 0.2, 0.8), "reproduced"),
        ((0.1, -0.2, 0.4), "inconclusive"),
        ((-0.1, -0.4, 0.2), "inconclusive"),
        ((0.0, -0.05, 0.05), "not reproduced"),
        ((-0.5, -0.8, -0.2), "contradicted"),
    ],
)
def test_rho_concentrated_every_outcome(w, verdict):
    fits = {"chain:2": {"W": {"lambda_W": dict(zip(("rate", "lo", "hi"), w))},
                        "L": {"lambda_L": {"rate": 1.5, "lo": 1.2, "hi": 1.8}}}}  # fmt: skip
    checks = [("chain:2", "support", True)]
    v = claims.rho_concentrated(checks, fits)
    assert v.verdict == verdict and v.evidence["statistic"]["mean"] == w[0] and "chain:2 along W" in v.line()
    assert claims.rho_concentrated(checks, {"chain:2": {}}).verdict == "not measured"


@pytest.mark.parametrize(
    "diffs, verdict",
    [
        ([0.2, 0.25, 0.3], "reproduced"),
        ([0.3, -0.1, 0.1], "inconclusive"),
        ([-0.01, 0.0, 0.01], "not reproduced"),
        ([-0.2, -0.25, -0.3], "contradicted"),
    ],
)
def test_picbreeder_vs_sgd_sixteen_every_outcome(diffs, verdict):
    v16, d, rows = claims.sixteen_verdict(_sixteen(diffs))
    assert v16 == verdict and d.mean == pytest.approx(np.mean(diffs)) and rows[-1][0] == "mean over 3 targets"
    table = pd.DataFrame([{"network": n, "target": "skull", "auc": a, "auc_se": 0.0, "n_params": 9, "n_nonzero": 9}
                          for n, a in (("Picbreeder", 0.9), ("FER SGD", 0.1))])  # fmt: skip
    v, _ = claims.picbreeder_vs_sgd_stored(table, sixteen=_sixteen(diffs + [9.0], used=[True] * len(diffs) + [False]))
    assert v.verdict == verdict
    assert v.verdict == verdict and v.evidence["statistic"]["mean"] == pytest.approx(np.mean(diffs))
    assert v.evidence["sixteen"]["left_out"] == ["t3 (never draws)"]


def test_picbreeder_vs_sgd_without_a_used_target_is_not_measured():
    assert claims.sixteen_verdict(_sixteen([0.5], used=[False]))[:2] == ("not measured", None)
    assert claims.sixteen_verdict(_sixteen([]))[0] == "not measured"


def test_sp_vs_pruners_measures_against_the_baseline_with_the_highest_mean():
    table = pd.DataFrame([{"method": m, "emc2_auc": x} for m, xs in
                          {"sp": [0.5] * 3, "imp": [0.6] * 3, "wanda": [0.1] * 3, "llm-pruner": [0.2] * 3}.items()
                          for x in xs])  # fmt: skip
    v, _ = claims.sp_vs_pruners(table)
    assert v.evidence["strongest baseline"] == "imp" and v.verdict == "contradicted"
    assert "for Lottery Ticket (IMP), the strongest baseline" in v.line()


def test_rho_concentrated_decides_on_the_rate_whose_interval_reaches_lowest():
    fits = {"a:2": {"W": {"lambda_W": {"rate": 0.9, "lo": 0.5, "hi": 1.3}}},
            "z:2": {"L": {"lambda_L": {"rate": 0.2, "lo": -0.1, "hi": 0.5}}}}  # fmt: skip
    v = claims.rho_concentrated([], fits)
    assert v.verdict == "inconclusive" and v.evidence["statistic"] == {"mean": 0.2, "lo": -0.1, "hi": 0.5}
    assert "(the claim: above 0), z:2 along L." in v.line()


def test_picbreeder_vs_sgd_scores_networks_that_do_not_draw_zero_and_states_the_excluded_reading():
    table = pd.DataFrame([{"network": n, "target": "skull", "auc": a, "auc_se": 0.0, "n_params": 9, "n_nonzero": 9}
                          for n, a in (("Picbreeder", 0.9), ("FER SGD", 0.1))])  # fmt: skip
    excluded = _sixteen([-0.2, -0.25, -0.3])  # contradicted
    zero = _sixteen([-0.2, 0.25, -0.3]).assign(twins=3, **{"twins drawn": [3, 1, 3], "Picbreeder drawn": True})
    v, _ = claims.picbreeder_vs_sgd_stored(table, sixteen=excluded, sixteen_zero=zero)
    assert v.verdict == "inconclusive"  # the rule: scored 0 decides
    assert v.evidence["statistic"]["mean"] == pytest.approx(-0.25 / 3)
    x = v.evidence["sixteen_excluded"]
    assert x["verdict"] == "contradicted" and x["failed"] == 2 and x["mean"] == pytest.approx(-0.25)
    assert "the verdicts differ (inconclusive scored 0, contradicted left out)" in v.line()
    assert "The 2 networks that never draw their label score 0" in v.line()
    same, _ = claims.picbreeder_vs_sgd_stored(
        table, sixteen=excluded, sixteen_zero=excluded.assign(twins=3, **{"twins drawn": 3})
    )
    assert same.verdict == "contradicted" and "the same verdict" in same.line()
    plain, _ = claims.picbreeder_vs_sgd_stored(table, sixteen=excluded)
    assert "sixteen_excluded" not in plain.evidence and "score 0" not in plain.line()


def test_the_delta_reading_row_says_the_same_differs_or_not_scored():
    def v(word, stat=None):
        return claims.Verdict("picbreeder-vs-sgd", word, "m", {"statistic": stat}, "reference", "anchored")

    assert claims.delta_reading("picbreeder-vs-sgd", v("contradicted"), v("contradicted")) == (
        "δ × its layer's std: contradicted — the same verdict as the paper's δ"
    )
    scaled = v("contradicted", {"mean": -0.3, "lo": -0.4, "hi": -0.2})
    assert claims.delta_reading("picbreeder-vs-sgd", v("contradicted"), scaled) == (
        "δ × its layer's std: contradicted, -0.300 [-0.400, -0.200] — the same verdict as the paper's δ"
    )
    assert claims.delta_reading("picbreeder-vs-sgd", v("contradicted"), v("inconclusive")).endswith(
        "differs from the paper's δ"
    )
    line = claims.delta_reading(
        "depth-optimum", v("inconclusive"), None, "volratio reference rescore X --delta-scale layer_std"
    )
    assert line == "δ on each weight's scale: not scored yet (`volratio reference rescore X --delta-scale layer_std`)"
    with pytest.raises(VolratioError, match="unknown claim"):
        claims.delta_reading("nope", None)


def test_size_adjusted_muon_difference_recovers_the_effect_behind_a_size_confound():
    rng = np.random.default_rng(0)
    rows = []
    for cell in ("a", "b", "c"):
        for opt, effect, nz in (("muon", 0.05, 4000), ("adam", 0.0, 8000)):
            for _k in range(6):
                n = nz * np.exp(rng.normal(0, 0.2))
                rows.append({"cell": cell, "optimizer": opt, "nonzero": n,
                             "score": 0.5 + effect + 0.2 * np.log(n / 8000) + rng.normal(0, 0.005)})  # fmt: skip
    nets = pd.DataFrame(rows)
    raw = nets[nets.optimizer == "muon"].score.mean() - nets[nets.optimizer == "adam"].score.mean()
    adj = claims.size_adjusted(nets, nets.score)
    assert raw < 0 < adj.lo and adj.mean == pytest.approx(0.05, abs=0.01)  # sparser Muon looks worse unadjusted
    assert claims.size_adjusted(nets.drop(columns="nonzero"), nets.score) is None


def test_muon_matched_reads_the_count_spread_and_refuses_unmatched_networks():
    """`matched=True`: the networks of a cell were pruned to one count; the verdict says how close the
    counts are and drops the size-adjusted regression; counts more than 5 % apart are refused."""
    runs = _opt_runs([0.5, 0.55, 0.6], [0.5, 0.52, 0.54]).assign(nonzero=[1000, 1010, 1020, 990, 1000, 1000] * 2)
    v = claims.muon_above_adam_by_target(_opt_summaries(runs), runs=runs, matched=True)
    assert v.evidence["count-spread"] == {"t:a": pytest.approx(30 / 990), "t:b": pytest.approx(30 / 990)}
    assert "within 3.0% of each other" in v.measured and "size-adjusted" not in v.evidence
    unmatched = claims.muon_above_adam_by_target(_opt_summaries(runs), runs=runs)
    assert "size-adjusted" in unmatched.evidence and "count-spread" not in unmatched.evidence
    with pytest.raises(VolratioError, match="differ by more than 5%"):
        wide = runs.assign(nonzero=[1000, 1010, 1020, 900, 1000, 1000] * 2)
        claims.muon_above_adam_by_target(_opt_summaries(wide), runs=wide, matched=True)


def test_depth_panels_draw_the_planted_panel_alone_when_every_curve_is_planted():
    import matplotlib

    matplotlib.use("Agg")
    from volratio.report import plots

    planted = {"planted:a": _curve("planted:a", [0.2, 0.2], true_at=3)}
    fig = plots.depth_panels(planted, {"planted:a": 3}, "t")
    assert len(fig.axes) == 1 and fig.axes[0].get_xlabel() == "depth − L*"
    both = {**planted, "picbreeder:x": _curve("picbreeder:x", [0.2, 0.2], true_at=3)}
    assert len(plots.depth_panels(both, {"planted:a": 3}).axes) == 2


def test_the_sixteen_target_verdict_says_how_many_targets_would_decide():
    """The targets are claim 1's units: its power line names the targets that would bring the
    half-width under m (n·(hw/m)², as the mean's standard error falls as 1/√n), and none once it is
    under m."""
    table = pd.DataFrame([{"network": n, "target": "skull", "auc": a, "auc_se": 0.0, "n_params": 9, "n_nonzero": 9}
                          for n, a in (("Picbreeder", 0.9), ("FER SGD", 0.1))])  # fmt: skip
    wide, _ = claims.picbreeder_vs_sgd_stored(table, sixteen=_sixteen([0.3, -0.1, 0.1]))
    p = wide.evidence["power"]
    sd = np.std([0.3, -0.1, 0.1], ddof=1)  # the spread between targets: the width at k targets is 2·t(k−1)·sd/√k
    k = p["needed_targets"]
    assert p["targets"] == 3 and k > 3
    assert (
        2 * scipy.stats.t.ppf(0.975, k - 1) * sd / np.sqrt(k)
        < 0.1
        <= 2 * scipy.stats.t.ppf(0.975, k - 2) * sd / np.sqrt(k - 1)
    )
    assert f"about {k} targets would bring it under m" in claims.power_line(wide)
    narrow, _ = claims.picbreeder_vs_sgd_stored(table, sixteen=_sixteen([-0.01, 0.0, 0.01]))
    assert narrow.evidence["power"]["needed_targets"] is None  # full width 0.0497 < m
    assert claims.power_line(narrow) == "full width 0.0497 against m = 0.1, with 3 targets (narrow enough to decide)"
