"""The pooled contrast (`volratio.util.pooling.contrast`) on constructed data: its interval narrows
as 1/√k over k independent settings, does not narrow over k copies of one setting's networks, covers
the true contrast about as often as it says, and moves shared networks together."""

import numpy as np
import pandas as pd
import pytest
import scipy.stats

from volratio.errors import VolratioError
from volratio.util.pooling import TOLERANCE, Design, about_targets, contrast


def _rows(k, n=3, effect=0.0, sd=0.3, seed=0, copies=False, paired=False):
    """k settings × n networks per arm ("a" high, "b" low). `copies`: every setting holds the same
    networks (one stratum, shared units). `paired`: a network carries both arms (one unit)."""
    rng = np.random.default_rng(seed)
    rows = []
    base = rng.normal(0, sd, size=(n, 2))
    for s in range(k):
        draw = base if copies else rng.normal(0, sd, size=(n, 2))
        for i in range(n):
            for j, arm in enumerate("ab"):
                stratum = "all" if copies else (s if paired else f"{s}{arm}")  # a cell's networks, or a pair's
                rows.append({"setting": s, "arm": arm, "stratum": stratum if not copies or paired else arm, "unit": i,
                             "value": draw[i, j] + (effect if arm == "a" else 0.0)})  # fmt: skip
    return pd.DataFrame(rows)


def test_independent_settings_narrow_as_one_over_root_k():
    one = np.mean([contrast(_rows(1, n=8, seed=s)).half_width for s in range(20)])
    six = np.mean([contrast(_rows(6, n=8, seed=s)).half_width for s in range(20)])
    assert six / one == pytest.approx(1 / np.sqrt(6), rel=0.2)


def test_copies_of_one_setting_do_not_narrow():
    one = contrast(_rows(1, n=5, seed=3, copies=True))
    six = contrast(_rows(6, n=5, seed=3, copies=True))
    assert six.estimate.mean == pytest.approx(one.estimate.mean)
    assert six.half_width == pytest.approx(one.half_width, rel=0.1)
    assert six.strata == 2 and six.settings == 6  # one stratum per arm, shared by the copies


def test_interval_covers_the_true_contrast_at_about_its_level():
    hits = [contrast(_rows(4, n=3, effect=0.2, seed=s), n_boot=1000).estimate for s in range(300)]
    coverage = np.mean([e.lo <= 0.2 <= e.hi for e in hits])
    assert 0.91 <= coverage <= 0.99, coverage


def test_shared_networks_are_resampled_together():
    # a paired design: the arms share each network's noise, so the contrast is exact when the effect
    # is constant; an unpaired reading of the same numbers would have a wide interval
    rows = _rows(3, n=4, effect=0.1, paired=True)
    rows.loc[rows.arm == "a", "value"] = rows.loc[rows.arm == "b", "value"].to_numpy() + 0.1
    p = contrast(rows)
    assert p.estimate.mean == pytest.approx(0.1)
    assert p.half_width < 1e-9
    unpaired = rows.assign(stratum=rows.stratum.astype(str) + rows.arm)
    assert contrast(unpaired).half_width > 0.05


def test_strongest_low_arm_pooled_or_per_setting():
    rows = pd.DataFrame(
        [
            {"setting": s, "arm": arm, "stratum": s, "unit": u, "value": v}
            for s, vals in enumerate([{"a": 1.0, "b": 0.5, "c": 0.0}, {"a": 1.0, "b": 0.0, "c": 0.8}])
            for arm, v in vals.items()
            for u in range(3)
        ]  # fmt: skip
    )
    assert contrast(rows, "a", ["b", "c"]).estimate.mean == pytest.approx(1.0 - 0.4)  # c's pooled 0.4 vs b's 0.25
    assert contrast(rows, "a", ["b", "c"], strongest="per setting").estimate.mean == pytest.approx((0.5 + 0.2) / 2)


def test_same_rows_same_interval_and_power_reading():
    rows = _rows(2, n=3, effect=0.1, seed=1)
    a, b = contrast(rows, "a", "b", seed=7), contrast(rows, "a", "b", seed=7)
    assert a == b
    assert a.needed(2 * a.half_width) == 3  # the full width is already m
    assert a.needed(a.half_width) == 12  # the full width halved: four times the networks


@pytest.mark.parametrize(
    "bad, match",
    [
        (lambda r: r.drop(columns="unit"), "missing"),
        (lambda r: r.assign(value=np.nan), "finite"),
    ],
)
def test_bad_rows_are_refused(bad, match):
    with pytest.raises(VolratioError, match=match):
        contrast(bad(_rows(1)), "a", "b")


def test_a_matched_comparison_refuses_counts_more_than_five_percent_apart():
    import pandas as pd

    from volratio.errors import VolratioError
    from volratio.report.deciders import MATCHED_WITHIN, count_spread

    ok = pd.DataFrame({"cell": ["a", "a", "b", "b"], "nonzero": [1000, 1040, 500, 500]})
    assert count_spread(ok).to_dict() == {"a": pytest.approx(0.04), "b": 0.0} and MATCHED_WITHIN == 0.05
    with pytest.raises(VolratioError, match=r"b \(6\.0%\)"):
        count_spread(ok.assign(nonzero=[1000, 1040, 500, 530]))


# --- the interval about targets (`about_targets`, `Design`) ------------------------------------

MU = {"a": 0.2, "b": 0.0, "c": 0.0}  # two equally strong low arms: the max over them is biased upward


def _design_rows(k, seed=0):
    """k targets, one setting each, 3 to 7 networks a target; each network carries all three arms
    (its rows move together, as a dense start pruned by several methods)."""
    rng = np.random.default_rng(seed)
    return pd.DataFrame([{"target": t, "setting": t, "arm": arm, "stratum": t, "unit": i, "value": 0.0}
                         for t in range(k) for i in range(int(rng.integers(3, 8))) for arm in "abc"])  # fmt: skip


def _simulate(rows, sd_between, sims, rng, sd_net=0.2, sd_row=0.2):
    """(sims, rows) values: each arm's population mean (`MU`), an effect of the high arm that differs
    between targets (sd `sd_between`), a network's own offset shared by its arms, and row noise."""
    t, arm = rows.target.to_numpy(), rows.arm.to_numpy()
    net = pd.factorize(rows.target.astype(str) + "/" + rows.unit.astype(str))[0]
    mu = np.array([MU[a] for a in arm])
    between = rng.normal(0, sd_between, (sims, t.max() + 1))[:, t] * (arm == "a")
    return mu + between + rng.normal(0, sd_net, (sims, net.max() + 1))[:, net] + rng.normal(0, sd_row, (sims, len(t)))


@pytest.mark.parametrize("k", [3, 6, 12, 16])
@pytest.mark.parametrize("sd_between", [0.0, 0.3])
@pytest.mark.parametrize("strongest", ["pooled", "per setting"])
def test_the_interval_about_targets_covers_the_population_value_in_the_books_designs(k, sd_between, strongest):
    rows = _design_rows(k, seed=k)
    values = _simulate(rows, sd_between, 1000, np.random.default_rng(k + int(10 * sd_between)))
    r = Design.of(rows, "a", ["b", "c"]).intervals(values, strongest, n_boot=300, seed=1)
    truth = MU["a"] - max(MU["b"], MU["c"])  # the population value of high − the strongest low arm, either way
    coverage = np.mean((r["lo"] <= truth) & (truth <= r["hi"]))
    assert coverage >= 0.93, coverage


def test_the_targets_only_level_agrees_with_scipys_bootstrap_of_the_target_means():
    rows = _design_rows(6, seed=2)
    rows["value"] = _simulate(rows, 0.3, 1, np.random.default_rng(3))[0]
    two = rows[rows.arm != "c"]
    r = Design.of(two, "a", ["b"]).intervals(two["value"].to_numpy(), n_boot=20000, seed=0, within=False)
    cells = two.groupby(["target", "arm"]).value.mean().unstack()
    contrasts = (cells["a"] - cells["b"]).to_numpy()  # each target's contrast
    assert r["point"][0] == pytest.approx(contrasts.mean())
    ref = scipy.stats.bootstrap((contrasts,), np.mean, n_resamples=20000, method="percentile", random_state=0)
    k = len(contrasts)
    assert r["se"][0] / np.sqrt(k / (k - 1)) == pytest.approx(ref.standard_error, rel=0.03)
    # and with K − 1 degrees of freedom it is the t-interval on the target means
    t = scipy.stats.t.interval(0.95, k - 1, contrasts.mean(), scipy.stats.sem(contrasts))
    assert (r["lo"][0], r["hi"][0]) == pytest.approx(t, abs=0.01)


def test_about_targets_is_seed_stable_and_plans_for_a_width_under_m():
    rows = _design_rows(3, seed=4)
    rows["value"] = _simulate(rows, 0.3, 1, np.random.default_rng(5))[0]
    ends = np.array([[p.estimate.lo, p.estimate.hi] for p in (about_targets(rows, "a", ["b", "c"], seed=s)
                                                                for s in range(5))])  # fmt: skip
    assert (ends.max(0) - ends.min(0) < TOLERANCE).all()
    p = about_targets(rows, "a", ["b", "c"])
    assert p.targets == 3 and p.estimate.mc >= TOLERANCE and p.draws >= 2000
    k, n = p.plan(0.1)
    assert p.width_at(k, n) < 0.1 and k >= 3
    assert p.width_at(k - 1, n) >= 0.1 or k == 3  # the fewest targets at that many networks
    assert about_targets(rows, "a", "b", n_boot=500) == about_targets(rows, "a", "b", n_boot=500)


def test_about_targets_refuses_one_target_and_a_stratum_in_two_targets():
    rows = _design_rows(3)
    with pytest.raises(VolratioError, match="at least two targets"):
        about_targets(rows[rows.target == 0], "a", "b")
    with pytest.raises(VolratioError, match="lies in several targets"):
        about_targets(rows.assign(stratum=0), "a", "b")
    with pytest.raises(VolratioError, match="missing"):
        about_targets(rows.drop(columns="target"), "a", "b")
