"""The judge-free structural score as one reading: `Reading(instrument="recovery")` (`RECOVERY`).

Primitive recovery (`volratio.rho.recovery`) reads a network trained on a planted target without a
judge and without perturbing it. As a reading it plugs into the score stage of the experiments that
train on planted targets: scored in memory, it gives exactly what `volratio.runs.recovered` computes
for the same networks stored by the same config's runs. Everywhere else it is refused with an error
that names what it needs."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from experiment_sizes import TINY

from volratio.emc2.reading import RECOVERY, Reading, ReadingError
from volratio.experiments import depth_regime, frames
from volratio.experiments import sparse_regime as SR
from volratio.experiments._base import PAPER, ExperimentError
from volratio.rho.recovery import RecoveryConfig
from volratio.runs import recovered, stored
from volratio.runs import reference as R
from volratio.runs import score as S
from volratio.runs.depth_sweep import make_sweep
from volratio.runs.registry import artifact_name, make_config

REC = RecoveryConfig(res=16, controls=2)  # small maps, two control targets: the same config on both sides


def test_the_judge_free_reading_takes_none_of_emc2_s_choices():
    assert RECOVERY == Reading(instrument="recovery") and RECOVERY.recovery and not RECOVERY.own
    assert Reading().own and not Reading().recovery
    assert RECOVERY.describe() == "primitive recovery (judge-free)"
    for bad in ({"judge": "anchored"}, {"anchor": "png"}, {"delta_scale": "layer_std"}, {"weights": "every"},
                {"device": "cpu"}):  # fmt: skip
        name = next(iter(bad))
        with pytest.raises(ReadingError, match=f"{name}=.*instrument 'recovery'"):
            Reading(**bad, instrument="recovery")
    with pytest.raises(ReadingError, match="instrument 'structure'; choose one of emc2, recovery"):
        Reading(instrument="structure")
    with pytest.raises(ReadingError, match="no EMC2 settings"):
        RECOVERY.emc2({"res": 8})
    with pytest.raises(ReadingError, match="recovered.table"):
        RECOVERY.flags()
    # a reading stored before the instrument existed reads back as an EMC2 reading
    old = {k: v for k, v in Reading("anchored").as_dict().items() if k != "instrument"}
    assert Reading.from_dict(old) == Reading("anchored") and Reading.from_dict(RECOVERY.as_dict()) == RECOVERY


def test_stored_scores_and_score_runs_refuse_the_judge_free_reading(tmp_path):
    with pytest.raises(stored.ReferenceError, match=r"recovered\.table"):
        stored.judged("depth_planted", tmp_path, RECOVERY)
    with pytest.raises(S.RescoreError, match=r"recovered\.table"):
        S.plan("depth_planted", RECOVERY, tmp_path)


def test_the_sparse_regime_read_by_recovery_in_memory_is_what_its_stored_populations_give(tmp_path):
    """`sparse_regime.score(trained, RECOVERY)` reads every trained population as
    `volratio.runs.recovered.table` reads the same config's stored populations: the same six fields,
    bit for bit, on every checkpoint row; SP's trajectory rows (no network) hold NaN."""
    source = {**TINY["sparse_regime"][0], "checkpoints": [0.5], "methods": ["magnitude"], "keep_nets": True,
              "device": "cpu"}  # fmt: skip
    seed = source.pop("seed")
    plan = {"src": R.Sweep.from_dict({"name": "src", "run": "sparse_regime", "seeds": [seed], "config": source})}
    R.run_chunk(plan, "src", tmp_path, progress=False)
    kept = recovered.table("src", REC, tmp_path, keep=False)
    trained = SR.train(make_config("sparse_regime", "quick", {**source, "seed": seed}))
    res = SR.score(trained, RECOVERY, recovery_config=REC)
    assert res.judge is None and set(res.table["instrument"]) == {"recovery"}
    rows = res.table[res.table["kind"] == "checkpoint"]
    assert len(rows) == len(kept) > 0
    for _, row in rows.iterrows():
        pop = artifact_name((row["method"], row["checkpoint"]))
        want = kept[(kept["population"] == pop) & (kept["member"] == row["member"])]
        assert len(want) == 1, pop
        assert [row[f] for f in recovered.FIELDS] == [float(want[f].iloc[0]) for f in recovered.FIELDS], pop
    assert res.table.loc[res.table["kind"] == "trajectory", "recovery"].isna().all()
    # the frontier as trained is untouched, and the default reading still has no score
    pd.testing.assert_frame_equal(SR.score(trained, PAPER).table, trained.table)


def test_the_depth_sweep_read_by_recovery_in_memory_is_what_its_stored_chunk_gives(tmp_path):
    """`depth_regime.score(trained, RECOVERY)` gives the recovery curves `depth_regime.recovery_curves`
    reads from a chunk of the same sweep's runs (every array equal), and tabulates them per depth."""
    cfg = make_config("depth_regime", "quick", TINY["depth_regime"][0])
    R.run_chunk({"depth": make_sweep(cfg.targets, cfg, name="depth")}, "depth", tmp_path, progress=False)
    want = depth_regime.recovery_curves("depth", tmp_path, REC, keep=False)
    res = depth_regime.score(depth_regime.train(cfg, out=tmp_path / "sweep"), RECOVERY, recovery_config=REC)
    got = res.extras["recovery_curves"]
    assert res.judge is None and set(got) == set(want) == set(cfg.targets)
    for t, c in want.items():
        assert got[t].depths == c.depths and got[t].collapsed == c.collapsed
        for f in ("score", "monosemanticity", "chance_other", "chance_init", "mono_other", "mono_init"):
            np.testing.assert_array_equal(getattr(got[t], f), getattr(c, f))
    table = res.table.set_index(["target", "depth"])
    assert list(table.index) == [(t, d) for t in cfg.targets for d in want[t].depths]
    assert table["recovery"].tolist() == [float(np.nanmean(want[t].score[i])) for t in want for i in range(2)]
    assert (table["networks"] == cfg.seeds).all()


def test_the_judge_free_reading_is_refused_where_no_network_is_on_a_planted_target(tmp_path, picbreeder_dir):
    cfg = make_config("emc2_bench", "quick", TINY["emc2_bench"][0])
    from volratio.experiments import emc2_bench

    with pytest.raises(ExperimentError, match="planted targets.*EMC2 under a judge only"):
        emc2_bench.score(emc2_bench.train(cfg), RECOVERY)
    fcfg = make_config("frames", "quick", TINY["frames"][0])
    with pytest.raises(ExperimentError, match="no network under a judge.*primitive recovery"):
        frames.score(frames.train(fcfg), RECOVERY)
