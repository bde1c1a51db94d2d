"""The EMC2 and depth claims read from the committed store (`volratio.report.readings`): the verdict
a chapter glues is the decider's on the rows the reading selects, and a reading the store does not
hold is refused with the command that makes it."""

import numpy as np
import pytest

from volratio.experiments import twins
from volratio.judges import DEFAULT_JUDGE
from volratio.report import claims
from volratio.report.readings import depth, emc2

WORDS = {"reproduced", "not reproduced", "contradicted", "inconclusive", "partly"}


def test_the_emc2_verdict_is_decided_on_sixteen_targets_with_networks_that_do_not_draw_scored_zero():
    with claims.unglued():
        v, parts = emc2.verdict(DEFAULT_JUDGE)
    rows = emc2.sixteen(DEFAULT_JUDGE)
    word, d, _ = claims.sixteen_verdict(twins.paired(rows, DEFAULT_JUDGE, failed="zero"))
    assert v.verdict == word and v.evidence["statistic"]["mean"] == pytest.approx(d.mean)
    assert len(twins.paired(rows, DEFAULT_JUDGE)) == 16 and v.judge == DEFAULT_JUDGE
    assert "Picbreeder above dense (ours)" in parts  # the three-target comparisons beside it


def test_a_judge_without_rescores_of_the_sixteen_targets_is_refused_with_the_command():
    assert emc2.sixteen("anchored-gated") is None
    with pytest.raises(LookupError, match="volratio reference rescore twins16 --judge anchored-gated"):
        emc2.verdict("anchored-gated")
    assert "anchored-gated" not in emc2.scored([DEFAULT_JUDGE, "anchored-gated"])
    assert emc2.scored([DEFAULT_JUDGE]) == [DEFAULT_JUDGE]


def test_the_three_target_tables_have_a_column_per_judge_and_callers_get_a_copy():
    t = emc2.three_by_judge([DEFAULT_JUDGE, "anchored"])
    assert list(t.columns) == [DEFAULT_JUDGE, "anchored"] and len(t) == 6
    mine = emc2.three_targets()
    mine["auc"] = np.nan
    assert emc2.three_targets().auc.notna().all()
    d = emc2.dense_by_judge([DEFAULT_JUDGE], DEFAULT_JUDGE)
    assert {"seeds", "mse", "collapsed"} <= set(d.columns) and (d.seeds > 1).all()


def test_the_depth_optimum_compares_every_planted_target_at_one_sparsity():
    at = depth.matched_sparsity()
    assert (at.groupby("target").sparsity.nunique() == 1).all()  # one sparsity per target, every depth
    true = depth.true_depths()
    assert set(at.index.get_level_values("target") if "target" in at.index.names else at.target) == set(true)
    with claims.unglued():
        v, counts = depth.optimum(DEFAULT_JUDGE)
    assert v.verdict in WORDS and v.judge == DEFAULT_JUDGE and 0 <= counts["hits"] <= len(true)
    off = depth.offsets(DEFAULT_JUDGE)
    assert 0 in off.index and off.index.min() < 0 < off.index.max()


def test_the_predictor_is_fitted_on_planted_spots_and_checked_on_held_out_picbreeder_ones(picbreeder_dir):
    with claims.unglued():
        v, check = depth.predictor(DEFAULT_JUDGE)
    assert v.verdict in WORDS
    assert all(r["target"].startswith("picbreeder:") for r in check.held_out) and check.held_out
    assert 0 <= check.inside <= len(check.held_out) and len(check.fit.y) == len(depth.true_depths())
