"""Claim "sp-vs-pruners" read from the committed store (`volratio.report.readings.connectivity`): the
verdict the chapter prints is the decider's on the stored networks, a network with no path scores 0 or
is left out, a reading that is not stored is refused with the fix, and the words built from the
numbers say what the numbers do."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from volratio.errors import VolratioError
from volratio.experiments import sparse_regime as regime
from volratio.experiments.sparse_regime import scores as regime_scores
from volratio.judges import DEFAULT_JUDGE
from volratio.nets import Arch
from volratio.report import claims
from volratio.report.deciders import sp_vs_pruners
from volratio.report.readings import connectivity as reading


@pytest.fixture(scope="module")
def stored_scores() -> pd.DataFrame:
    """The claim's networks read straight from the store, not through the module under test."""
    return regime_scores.stored_scores(regime.CLAIM)


def test_the_deciding_verdict_is_the_deciders_on_the_compared_stored_networks(stored_scores):
    table = stored_scores[stored_scores.method.isin(["sp", "imp", "wanda", "llm-pruner"])].copy()
    table["emc2_auc"] = table[f"emc2_auc:{DEFAULT_JUDGE}"].astype(float).mask(table.failed.notna(), 0.0)
    table["base_kept"] = table[f"base_kept:{DEFAULT_JUDGE}"]
    expected, expected_table = claims.sp_vs_pruners(
        table.assign(judge=DEFAULT_JUDGE), scale="reference", judge=DEFAULT_JUDGE, stored=True, at=reading.at()
    )
    v, by_method = reading.verdict()
    assert v.judge == DEFAULT_JUDGE and v.scale == "reference"
    assert (v.verdict, v.measured, v.evidence) == (expected.verdict, expected.measured, expected.evidence)
    pd.testing.assert_frame_equal(by_method, expected_table)


def test_every_stored_judge_gives_a_verdict_and_the_default_judge_is_stored():
    judges = reading.judges()
    assert DEFAULT_JUDGE in judges and "anchored" in judges
    for j in judges:
        v = reading.verdict(j)[0]
        assert v.judge == j and v.verdict in claims.VERDICTS


def test_a_network_with_no_path_scores_zero_or_is_left_out():
    zeroed, left_out = reading.rows(), reading.rows(failed_as_zero=False)
    failed = zeroed[zeroed.failed.notna()]
    assert len(failed) == reading.no_path() > 0  # the store holds baselines with no path: the rule is exercised
    assert (failed.emc2_auc == 0.0).all() and set(failed.method) <= {"imp", "wanda", "llm-pruner"}
    assert left_out.failed.isna().all() and len(left_out) == len(zeroed) - len(failed)
    pd.testing.assert_frame_equal(zeroed[zeroed.failed.isna()], left_out)  # the other networks are untouched
    assert reading.verdict(failed_as_zero=False)[0].evidence != reading.verdict()[0].evidence


def test_rows_are_the_compared_methods_scored_under_the_judge_asked(stored_scores):
    rows = reading.rows("anchored")
    assert set(rows.method) == set(reading.COMPARED) and (rows.judge == "anchored").all()
    drew = rows[rows.failed.isna()]
    assert np.array_equal(drew.emc2_auc.to_numpy(), drew["emc2_auc:anchored"].astype(float).to_numpy())
    assert not np.array_equal(drew.emc2_auc.to_numpy(), reading.rows("stability")[lambda d: d.failed.isna()].emc2_auc)
    assert len(rows) == stored_scores.method.isin(reading.COMPARED).sum()  # no network of the four dropped


def test_a_reading_that_is_not_stored_is_refused_naming_what_is():
    with pytest.raises(VolratioError, match=r"not scored under judge 'clip'.*stored: anchored, .*anchored-v2"):
        reading.verdict("clip")
    with pytest.raises(VolratioError, match=r"judge 'anchored-v2' with δ read 'layer_std' \(stored: anchored\)"):
        reading.rows("anchored-v2", delta_scale="layer_std")
    with pytest.raises(VolratioError, match=r"'per_weight' is not a reading of δ; use one of absolute, layer_std"):
        reading.scores("per_weight")


def test_the_store_is_read_once_and_callers_get_a_copy():
    first = reading.scores()
    hits = reading._scores.cache_info().hits
    first["emc2_auc:anchored"] = -1.0
    assert (reading.scores()["emc2_auc:anchored"] != -1.0).any()
    assert reading._scores.cache_info().hits > hits


def test_where_the_claim_is_decided_names_sps_sparsity_at_both_checkpoints(stored_scores):
    sp = stored_scores[stored_scores.method == "sp"]
    text = reading.at()
    assert text.startswith("decided on the sparse regime, both checkpoints pooled")
    for c in ("0.75", "end"):
        assert f"{c}: median weight sparsity {sp[sp.checkpoint == c].sparsity.median():.3f}" in text


def test_the_layer_std_reading_is_the_scaled_chunks_under_its_one_judge():
    v = reading.layer_std_verdict()
    if v is None:
        pytest.skip("the layer-std score set (regime.SCORES['regime_scaled']) is not stored whole")
    assert v.judge == "anchored" and v.verdict == reading.verdict("anchored", delta_scale="layer_std")[0].verdict
    assert v.evidence != reading.verdict("anchored")[0].evidence  # another scoring of the networks, not a copy


def test_per_checkpoint_counts_every_compared_network_once():
    table = reading.per_checkpoint()
    assert set(table.index.get_level_values("checkpoint")) == {"0.75", "end"}
    assert table.networks.sum() == len(reading.rows())
    assert (table.drawn <= table.networks).all() and (table.drawn < table.networks).any()


def test_the_near_dense_check_leaves_out_seeds_whose_dense_network_does_not_draw(picbreeder_dir):
    """The near-dense verdict is the decider's on the compared networks read straight from the store,
    without the seeds whose dense network does not draw its target under the judge."""
    table = regime_scores.stored_scores(regime.SCORES["near_dense"])
    col = f"base_kept:{DEFAULT_JUDGE}"
    dense = table[table.method == "dense"]
    undrawn = {(t, s) for t, s, k in zip(dense.target, dense.seed, dense[col]) if not bool(k)}
    assert undrawn  # the store holds such seeds (a butterfly trained from a random init draws a blank page)
    compared = table[table.method.isin(reading.COMPARED)].copy()
    compared["emc2_auc"] = compared[f"emc2_auc:{DEFAULT_JUDGE}"].astype(float)
    compared["base_kept"] = compared[col]
    kept = compared[[(t, s) not in undrawn for t, s in zip(compared.target, compared.seed)]]

    def decided(t):
        return sp_vs_pruners(t, scale="reference", judge=DEFAULT_JUDGE, stored=True)[0]

    v = reading.near_dense_verdict(DEFAULT_JUDGE)[0]
    assert (v.verdict, v.evidence) == (decided(kept).verdict, decided(kept).evidence)
    assert v.evidence != decided(compared).evidence
    assert reading.near_dense_rows(DEFAULT_JUDGE)[1] == sorted(undrawn)
    with pytest.raises(VolratioError, match="not scored under judge 'clip'"):
        reading.near_dense_verdict("clip")


def test_the_near_dense_archs_and_their_weight_counts(picbreeder_dir):
    archs = reading.near_dense_archs()
    assert set(archs) == {"skull", "butterfly", "apple"}
    assert str(archs["apple"]) == regime.NEAR_DENSE["arch"] and archs["skull"].depth == 12
    assert reading.dense_weights(Arch.uniform(2, 8)) == 4 * 8 + 8 * 8 + 8 * 3
    cfg, ec = reading.near_dense_configs()
    assert (cfg.sp.tau, cfg.sp.loss_factor, cfg.target_nonzeros, ec.max_params) == (0.9, 2.0, 0, 300)


@pytest.mark.parametrize(
    "values, words",
    [
        ([0.1, 0.2, 0.5], "rising at every step"),
        ([3, 2, 1], "falling at every step"),
        ([1, 3, 2], "neither rising nor falling at every step"),
        ([1, 1, 2], "neither rising nor falling at every step"),  # a step that stays is not a rise
    ],
)
def test_trend_says_which_way_a_sequence_moves(values, words):
    assert reading.trend(values) == words


def test_along_steps_gives_each_tau_starts_medians_in_order():
    grid_by = pd.DataFrame(
        {"end_sparsity": [0.5, 0.6, 0.4, 0.3]},
        index=pd.MultiIndex.from_tuples([(0.95, 30), (0.95, 60), (0.8, 30), (0.8, 60)], names=["tau", "retrain_steps"]),
    )
    assert reading.along_steps(grid_by, "end_sparsity", "{:.2f}") == (
        "from τ 0.95: 0.50 → 0.60 (rising at every step); from τ 0.8: 0.40 → 0.30 (falling at every step)"
    )


def test_end_reasons_count_why_sp_stopped_and_always_name_the_goal():
    grid = pd.DataFrame({"stage": ["end", "end", "end"], "stop": ["no redundant pair", "rounds", "no redundant pair"]})
    assert reading.end_reasons(grid) == "0 reached the goal, 2 had no redundant pair left, 1 ran out of rounds"
    grid = pd.DataFrame({"stage": ["end", "end"], "stop": ["target size", "rounds"]})
    assert reading.end_reasons(grid) == "1 reached the goal, 1 ran out of rounds"


def test_the_judge_free_rows_are_the_planted_chunks_networks_scored_by_recovery_collapsed_at_zero():
    rows = reading.recovery_rows()
    assert set(rows.method) == set(reading.JUDGE_FREE_ARMS) and set(rows.checkpoint) == {"end"}
    assert rows.groupby("method").size().eq(rows.target.nunique() * 3).all()  # three members per target
    assert rows.emc2_auc.between(0, 1).all() and (rows.loc[rows.collapsed.astype(bool), "emc2_auc"] == 0).all()
    assert rows.base_kept.all() and set(rows.judge) == {"recovery"}
    chance = reading.recovery_rows("chance_init")
    assert (chance.emc2_auc != rows.emc2_auc).any()  # another field, another score


def test_the_judge_free_verdict_is_the_claims_rule_on_the_recovery_rows():
    v, chance = reading.judge_free()
    with claims.unglued():
        again, _ = sp_vs_pruners(reading.recovery_rows(), scale="reference", stored=True)
    assert v.verdict == again.verdict and v.evidence["statistic"] == again.evidence["statistic"]
    assert set(chance) == {"chance_other", "chance_init"} and all(e.lo <= e.mean <= e.hi for e in chance.values())
