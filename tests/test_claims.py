import json

import pytest

from volratio import claims
from volratio.errors import VolratioError


def test_compare_estimates():
    E = claims.Estimate
    assert claims.compare_estimates(E(0.8, 0.7, 0.9), E(0.1, 0.0, 0.2)) == "reproduced"
    assert claims.compare_estimates(E(0.5, 0.1, 0.9), E(0.4, 0.2, 0.6)) == "partly"
    assert claims.compare_estimates(E(0.1, 0.0, 0.2), E(0.8, 0.7, 0.9)) == "not reproduced"


def test_estimate_from_samples_interval_contains_mean():
    e = claims.Estimate.from_samples([1.0, 2.0, 3.0])
    assert e.mean == 2.0 and e.lo < 2.0 < e.hi
    assert claims.Estimate.from_samples([5.0]) == claims.Estimate(5.0, 5.0, 5.0)


def test_record_and_table_roundtrip(tmp_path):
    claims.record("muon-above-adam", "partly", "loss 0.01 vs 0.02", {"adam": 0.02}, directory=tmp_path)
    t = claims.table(tmp_path)
    assert t.loc["muon-above-adam", "verdict"] == "partly"
    assert t.loc["depth-optimum", "verdict"] == "not measured"
    assert len(t) == len(claims.CLAIMS)


def test_bad_records_are_refused_or_flagged(tmp_path):
    with pytest.raises(VolratioError, match="unknown claim"):
        claims.record("nope", "reproduced", "", directory=tmp_path)
    with pytest.raises(VolratioError, match="verdict must be"):
        claims.record("muon-above-adam", "yes", "", directory=tmp_path)
    (tmp_path / "welch-r-le-d.json").write_text("{broken")
    t = claims.table(tmp_path)
    assert "corrupt record" in t.loc["welch-r-le-d", "we measured"]


def test_combine_and_lower_is_better():
    assert claims.combine(["reproduced", "reproduced"]) == "reproduced"
    assert claims.combine(["reproduced", "not reproduced"]) == "partly"
    assert claims.combine(["not reproduced", "not reproduced"]) == "not reproduced"
    assert claims.combine(["not measured"]) == "not measured"
    E = claims.Estimate
    # a loss of 0.1 ± 0.01 is lower than 0.5 ± 0.01
    assert claims.compare_estimates(claims.lower_is_better(E(0.1, 0.09, 0.11)), claims.lower_is_better(E(0.5, 0.49, 0.51))) == "reproduced"


def test_table_says_which_judge_each_verdict_used(tmp_path):
    claims.record("picbreeder-vs-sgd", "partly", "AUC 0.8 vs 0.9", directory=tmp_path, judge="calibrated ssim@4")
    claims.record("muon-above-adam", "partly", "loss", directory=tmp_path)
    claims.record("welch-r-le-d", "reproduced", "coherence", directory=tmp_path)
    t = claims.table(tmp_path)
    assert t.loc["picbreeder-vs-sgd", "judge"] == "calibrated ssim@4"
    assert t.loc["muon-above-adam", "judge"] == "not recorded"
    assert t.loc["welch-r-le-d", "judge"] == "no judge" and t.loc["depth-optimum", "judge"] == "-"
