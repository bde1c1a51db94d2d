"""The pooled contrast (`volratio.util.pooling.contrast`) on constructed data: its interval narrows
as 1/√k over k independent settings, does not narrow over k copies of one setting's networks, covers
the true contrast about as often as it says, and moves shared networks together."""

import numpy as np
import pandas as pd
import pytest

from volratio.errors import VolratioError
from volratio.util.pooling import contrast


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
    assert a.needed(a.half_width) == 3
    assert a.needed(a.half_width / 2) == 12  # half the width: four times the networks


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
