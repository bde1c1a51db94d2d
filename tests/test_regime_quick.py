"""The sparse regime's protocol over several targets at once (`volratio.experiments.sparse_regime.quick`),
as the connectivity chapter runs it: one table with a target column, SP pruned again with τ or its
fit-keeping settings changed, and the refusals that name the fix."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from volratio.emc2.reading import Reading
from volratio.experiments import sparse_regime as S
from volratio.experiments._base import ExperimentError
from volratio.experiments.sparse_regime import quick as Q

TARGETS = ["planted:1:depth=2,width=3", "planted:2:depth=2,width=3"]
EC = replace(Q.QUICK_EMC2, res=8, max_params=3, deltas=(-1.0, 1.0))


@pytest.fixture(scope="module")
def cfg():
    return S.near_dense("quick", arch="2;gaussian:6", res=8, dense_steps=40, members=2, device="cpu",
                        methods=("magnitude", "random-units"), **{"sp.rounds": 2, "sp.retrain_steps": 2,
                                                                   "sp.tau": 0.5})  # fmt: skip


@pytest.fixture(scope="module")
def res(cfg):
    return Q.run_targets(cfg, TARGETS, Reading("stability"), EC)


def test_run_targets_is_each_targets_run_in_one_table(cfg, res):
    t = res.table
    assert list(dict.fromkeys(t.target)) == TARGETS and res.judge == "stability"
    alone = S.score(S.train(replace(cfg, target=TARGETS[1])), Reading("stability"), EC).table
    mine = t[t.target == TARGETS[1]].drop(columns="target").reset_index(drop=True)
    assert mine.equals(alone.reset_index(drop=True))  # bit for bit the single run's
    s = Q.summary(t).set_index(["target", "method"])
    assert (s["n"] == cfg.members).all() and set(s.index.get_level_values("method")) == {"dense", "sp", "magnitude",
                                                                                          "random-units"}  # fmt: skip
    units = Q.unit_sparsity(t)
    cp = t[t.kind == "checkpoint"]
    assert (units[cp.method == "dense"] == 0).all()
    assert (units[cp.method == "sp"].to_numpy() == units[cp.method == "random-units"].to_numpy()).all()


def test_tau_sensitivity_at_the_runs_tau_gives_the_runs_sp_networks_back(cfg, res):
    tau = Q.tau_sensitivity(res, taus=(0.3,))
    assert list(tau.index) == [0.3, 0.5]
    sp = res.table[(res.table.kind == "checkpoint") & (res.table.method == "sp")]
    assert tau.loc[0.5, "sparsity"] == pytest.approx(sp.sparsity.mean(), abs=1e-12)
    assert tau.loc[0.5, "EMC2 AUC"] == pytest.approx(sp.emc2_auc.mean(), abs=1e-12)
    assert tau.loc[0.3, "sparsity"] >= tau.loc[0.5, "sparsity"]  # a lower τ finds at least as many pairs


def test_sp_ablation_adds_each_change_in_turn(res):
    table = Q.sp_ablation(res)
    assert list(table.index) == list(Q.SP_STEPS)
    assert table.sparsity.between(0, 1).all() and table.collapsed.between(0, 1).all()
    assert np.isfinite(table["MSE ÷ dense (median)"]).all()


def test_the_quick_helpers_refuse_what_they_cannot_do(cfg, res):
    with pytest.raises(ExperimentError, match="give one or more target specs"):
        Q.run_targets(cfg, [])
    unscored = Q.run_targets(cfg, TARGETS[:1])
    with pytest.raises(ExperimentError, match="score the run under a judge first"):
        Q.tau_sensitivity(unscored)
    stages = replace(unscored, extras={**unscored.extras, "config": replace(cfg, checkpoints=(0.5,))})
    with pytest.raises(ExperimentError, match="checkpoints"):
        Q.sp_ablation(stages)
