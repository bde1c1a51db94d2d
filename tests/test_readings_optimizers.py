"""The claim "muon-above-adam" read from the committed store (`volratio.report.readings.optimizers`):
the verdict a chapter glues is the decider applied to the stored networks, at one non-zero count per
cell within the stated tolerance, and a reading the store has no scores for is an error that names
the rescore. Also the live run's one-line part check (`deciders.muon_part`)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from volratio.errors import VolratioError
from volratio.experiments import optimizers
from volratio.experiments._base import ExperimentError
from volratio.judges import DEFAULT_JUDGE, JUDGES
from volratio.report import claims
from volratio.report.deciders import MATCHED_WITHIN, muon_above_adam_by_target, muon_part
from volratio.report.readings import optimizers as reading
from volratio.runs import recovered, stored


@pytest.fixture(scope="module")
def deciding():
    return reading.matched()


def test_the_deciding_verdict_is_the_decider_on_the_matched_networks(deciding):
    runs = optimizers.stored_runs(
        reading.MATCHED, reading=stored.judges_reading(reading.MATCHED, [DEFAULT_JUDGE]).but(judge=DEFAULT_JUDGE)
    )
    best = optimizers.at_best_lr(runs, loss="dense_loss")
    with claims.unglued():
        direct = claims.muon_above_adam_by_target(best, scale="reference", judge=DEFAULT_JUDGE, runs=runs, matched=True)
    assert deciding.verdict == direct.verdict
    assert deciding.evidence["statistic"] == direct.evidence["statistic"]
    assert (deciding.key, deciding.judge, deciding.scale) == ("muon-above-adam", DEFAULT_JUDGE, "reference")
    assert "one non-zero count per cell" in deciding.measured and "every non-zero weight" in deciding.measured


def test_the_matched_networks_lie_within_the_stated_tolerance_of_their_cells_count(deciding):
    spread = deciding.evidence["count-spread"]
    assert spread and max(spread.values()) <= MATCHED_WITHIN
    counts = reading.matched_counts()
    assert (counts["count"] == counts[["adam_nonzero", "muon_nonzero"]].min(axis=1)).all()  # the sparser one's
    nets = reading.matched_runs().merge(counts[["target", "depth", "count"]], on=["target", "depth"])
    assert len(nets) == len(reading.matched_runs())  # every matched network belongs to a counted cell
    assert ((nets.nonzero - nets["count"]).abs() <= MATCHED_WITHIN * nets["count"]).all()


def test_each_optimizer_is_read_at_its_best_setting_by_dense_mse_in_every_study():
    fit = reading.fit_point_runs()
    for cell, best in optimizers.at_best_lr(fit, loss="dense_loss").items():
        target = cell.split(" @ ")[0]
        for r in best.itertuples():
            g = fit[(fit.target == target) & (fit.depth == r.depth) & (fit.optimizer == r.optimizer)]
            assert r.setting == g.groupby("setting").dense_loss.mean().idxmin()
    matched = reading.matched_runs()  # the matched chunk reran exactly those settings
    assert matched.groupby(["target", "depth", "optimizer"]).setting.nunique().max() == 1


def test_the_runs_are_read_once_and_handed_out_as_copies():
    a = reading.matched_runs()
    a["score"] = -1.0
    assert (reading.matched_runs().score >= 0).all()


def test_a_reading_without_stored_scores_is_an_error_that_names_the_rescore():
    covered = stored.judges_covering(reading.MATCHED, reading=reading.EVERY.but(delta_scale="layer_std"))
    unscored = [j for j in JUDGES if j not in covered]
    if not unscored:
        pytest.skip("every judge has rescored optimizers_matched with δ × layer std")
    with pytest.raises(ExperimentError, match="rescore optimizers_matched"):
        reading.matched(unscored[0], "layer_std")


def test_the_checks_are_decided_by_the_same_rule_on_their_own_networks():
    with claims.unglued():
        fit, near = reading.fit_point(), reading.near_dense()
    assert "each network at its fit point" in fit.measured and "count-spread" not in fit.evidence
    seeds = int(reading.near_dense_runs().groupby(["target", "depth", "setting"]).seed.nunique().max())
    assert f"{seeds} seeds" in near.measured and near.judge == reading.OWN_JUDGE


def _summary(adam, muon):
    """A live run's summary: one row per optimizer, `loss` with its interval."""
    return pd.DataFrame([{"optimizer": "adam", **adam}, {"optimizer": "muon", **muon}])


def test_muon_part_says_whether_muon_wins_and_whether_the_intervals_separate():
    apart = _summary(
        {"loss": 0.02, "loss_lo": 0.018, "loss_hi": 0.022}, {"loss": 0.01, "loss_lo": 0.009, "loss_hi": 0.011}
    )
    assert muon_part(apart, "loss", "lower") == (
        "Muon lower than Adam: True (Muon 0.01 vs Adam 0.02; intervals separate: True)"
    )
    assert muon_part(apart, "loss", "higher").startswith("Muon higher than Adam: False")
    overlap = _summary(
        {"loss": 0.02, "loss_lo": 0.01, "loss_hi": 0.03}, {"loss": 0.015, "loss_lo": 0.005, "loss_hi": 0.025}
    )
    assert muon_part(overlap, "loss", "lower").endswith("intervals separate: False)")
    with pytest.raises(VolratioError, match="'lower' or 'higher'"):
        muon_part(apart, "loss", "better")


def test_the_judge_free_runs_score_each_stored_network_by_its_recovery_and_a_collapsed_one_zero():
    runs = reading.planted_runs()
    assert len(runs) == 36 and runs.target.nunique() == 6 and set(runs.optimizer) == {"adam", "muon"}
    table = recovered.table(reading.PLANTED[0]).set_index("key")
    expect = table.loc[runs.key, "recovery"].to_numpy()
    flat = runs.collapsed.fillna(False).astype(bool).to_numpy()
    assert np.array_equal(runs.score.to_numpy(), np.where(flat, 0.0, expect)) and runs.drawn.all()


def test_the_judge_free_verdict_is_the_claims_pooled_rule_read_unmatched():
    v, chance = reading.judge_free()
    runs = reading.planted_runs()
    assert reading.spread(runs) > MATCHED_WITHIN  # why it is read unmatched: a matched reading refuses these counts
    with claims.unglued():
        again = muon_above_adam_by_target(optimizers.at_best_lr(runs, loss="dense_loss"), "", runs=runs)
    assert v.verdict == again.verdict and v.evidence["statistic"] == again.evidence["statistic"]
    assert "size-adjusted" in v.evidence and set(chance) == {"chance_other", "chance_init"}
