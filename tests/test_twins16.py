"""The sixteen-target comparison: the run function `twin_point` (volratio.experiments.twins), the
paired table, the verdict across targets, and the held-out anchored verdicts on new targets."""

import numpy as np
import pandas as pd
import pytest

from volratio.experiments import twins as T
from volratio.experiments._base import ExperimentError
from volratio.report import claims
from volratio.runs.registry import get_run
from volratio.util.presets import ConfigError

TINY = {"res": 16, "steps": 15, "max_params": 12}


def test_twin_point_config_is_checked_before_running():
    rf = get_run("twin_point")
    assert rf.parse({"target": "ghost"}).target == "ghost"  # a fork target is a target
    for bad, match in (({"target": "cat"}, "target"), ({"network": "fer-sgd"}, "network"),
                       ({"steps": 0}, "steps"), ({"lr": -1.0}, "lr"), ({"judges": ()}, "judges"),
                       ({"judges": ("anchored", "nope")}, "judges")):  # fmt: skip
        with pytest.raises(ConfigError, match=match):
            rf.parse(bad)


def test_twin_point_trains_and_scores_under_every_judge(picbreeder_dir):
    out = get_run("twin_point").fn({**TINY, "target": "skull", "network": "twin", "seed": 1})
    assert out["arch"] == "12;cache:15,gaussian:4,identity:2,sin:1"  # the Picbreeder network's own architecture
    assert out["n_params"] == 12 and out["n_nonzero"] == out["net"].nonzero()[0]
    assert len(out["losses"]) == len(out["loss_steps"]) and np.isfinite(out["losses"]).all()
    for j in T.TWIN_JUDGES:
        assert out[f"verdicts_{j}"].shape == (12, len(out["deltas"])) and 0 <= out[f"auc_{j}"] <= 1
    assert out["auc"] == out["auc_anchored"] and out["judge"] == "anchored"
    again = get_run("twin_point").fn({**TINY, "target": "skull", "network": "twin", "seed": 1})
    assert again["losses"] == out["losses"] and again["auc_stability"] == out["auc_stability"]  # bit for bit
    other = get_run("twin_point").fn({**TINY, "target": "skull", "network": "twin", "seed": 2})
    assert other["losses"] != out["losses"]  # the seed is the twin's initialisation


def _rows(target, pb, twins_auc, pb_kept=True, kept=None):
    rows = [{"target": target, "network": "picbreeder", "arch": "3;gaussian:4", "mse": 0.001, "seed": 0,
             "auc_anchored": pb, "auc_se_anchored": 0.0, "base_kept_anchored": pb_kept}]  # fmt: skip
    kept = kept or [True] * len(twins_auc)
    for s, (a, k) in enumerate(zip(twins_auc, kept)):
        rows.append({"target": target, "network": "twin", "arch": "3;gaussian:4", "mse": 0.002, "seed": s,
                     "auc_anchored": a, "auc_se_anchored": 0.01, "base_kept_anchored": k})  # fmt: skip
    return rows


def test_paired_leaves_out_networks_that_do_not_draw_and_decides_across_targets():
    table = pd.DataFrame(
        _rows("a", 0.8, [0.5, 0.6, 0.0], kept=[True, True, False])  # the failed twin is not averaged
        + _rows("b", 0.7, [0.4, 0.5, 0.45])
        + _rows("c", 0.9, [0.2, 0.3], pb_kept=False)  # Picbreeder does not draw it: left out
        + _rows("d", 0.6, [0.0, 0.0], kept=[False, False])  # no twin draws it: left out
        + _rows("e", 0.75, [0.5, 0.55, 0.6])
    )
    p = T.paired(table)
    assert p.loc["a", "twins drawn"] == 2 and p.loc["a", "twins mean"] == pytest.approx(0.55)
    assert not p.loc["c", "used"] and "Picbreeder" in p.loc["c", "why"]
    assert not p.loc["d", "used"] and "no twin" in p.loc["d", "why"]
    verdict, d, rows = claims.sixteen_verdict(p)
    assert verdict == "reproduced" and d.lo > 0 and len(rows) == 4  # three targets and the mean
    assert d.mean == pytest.approx(np.mean([0.8 - 0.55, 0.7 - 0.45, 0.75 - 0.55]))
    flipped = table.assign(auc_anchored=np.where(table.network == "picbreeder", 0.1, table.auc_anchored))
    verdict, d, _ = claims.sixteen_verdict(T.paired(flipped))  # Picbreeder below on every target
    assert verdict == "contradicted" and d.hi < 0
    with pytest.raises(ExperimentError, match="stability"):
        T.paired(table, "stability")


def test_new_target_rows_regenerate_and_the_judge_rejects_faint_and_other_drawings(picbreeder_dir, extra_data):
    from volratio.calibration import anchored_set as A
    from volratio.calibration import fit_anchored as fa

    rows = A.load_new_verdicts()
    assert set(rows.group) == set(A.NEW_GROUPS) and set(rows.label) == set(A.NEW_TARGETS)
    fresh = A.sample_new_rows()  # the stored rows are the seeded draw
    assert fresh[["network", "kernel", "row", "col", "delta"]].equals(
        rows[["network", "kernel", "row", "col", "delta"]]
    )
    agree = fa.new_target_agreement()  # checks the image hashes first
    for g in ("new-faint", "new-other-target"):  # judged "not shown" by inspection, every one
        assert rows[rows.group == g].pass1.sum() == 0 and agree.loc[("anchored", g), "accuracy"] == 1.0
    assert 0 < agree.loc[("anchored", "all"), "kappa"] <= 1


def test_paired_counts_networks_that_never_draw_both_ways():
    table = pd.DataFrame(
        _rows("a", 0.8, [0.5, 0.6, 0.0], kept=[True, True, False])
        + _rows("b", 0.7, [0.0, 0.0], kept=[False, False])  # no twin draws it
        + _rows("c", 0.0, [0.3, 0.4], pb_kept=False)  # the Picbreeder network does not draw it
    )
    ex, zero = T.paired(table, failed="excluded"), T.paired(table, failed="zero")
    assert list(ex.used) == [True, False, False] and list(zero.used) == [True, True, True]
    assert ex.loc["a", "twins mean"] == pytest.approx(0.55)
    assert zero.loc["a", "twins mean"] == pytest.approx(1.1 / 3)  # the failed twin counts with AUC 0
    assert zero.loc["b", "diff"] == pytest.approx(0.7) and zero.loc["c", "diff"] == pytest.approx(-0.35)
    with pytest.raises(ExperimentError, match="failed='dropped'"):
        T.paired(table, failed="dropped")


def test_the_judges_anchor_and_the_twins_training_image_are_one_array(picbreeder_dir, extra_data, monkeypatch):
    """For each of the sixteen targets: the image every label-anchored judge of a twin point compares
    with, and the image its twin is trained on, are the same array at the scoring resolution — and
    so is the anchor a rescore under `--anchor png` uses."""
    import torch

    from volratio.data import anchors, picbreeder

    seen = {}

    def fake_train(net, target, tc):  # records the training image instead of training
        seen["image"] = target
        raise RuntimeError("recorded")

    monkeypatch.setattr(T, "train_network", fake_train)
    for name in picbreeder.ALL_NAMES:
        cfg = T.parse_point({"target": name, "network": "twin", "res": 64, "max_params": 4})
        assert cfg.anchor == "png" and cfg.res == 64
        with pytest.raises(RuntimeError, match="recorded"):
            T.train_twin(cfg)
        judges = T.judges_of(picbreeder.network(name), cfg)
        anchored = [j for j in judges if j.anchor_kind == "target"]
        assert len(anchored) == 2  # anchored and anchored-ssim
        for j in anchored:
            assert j.anchor.shape == (64, 64, 3)
            assert torch.equal(j.anchor, seen["image"].to(j.anchor.dtype)), name
        assert torch.equal(anchors.anchor_image(cfg.spec, 64, "png"), seen["image"]), name
        assert not torch.equal(anchors.anchor_image(cfg.spec, 64, "image"), seen["image"]), name


def test_the_stored_base_mse_is_to_the_anchor(picbreeder_dir):
    """The stored `mse` of a twin point is its render's MSE to the anchor (the training image)."""
    import torch

    from volratio.data import picbreeder
    from volratio.runs import stored

    rec = next(r for r in stored.records("twins16_picbreeder") if r["config"]["target"] == "skull")
    cfg = T.parse_point(rec["config"])
    with torch.no_grad():
        img = picbreeder.network("skull").render(cfg.res)[0]
    assert float(((img - T.training_image(cfg)) ** 2).mean()) == pytest.approx(rec["metrics"]["mse"], rel=1e-6)
    assert rec["metrics"]["mse"] > 1e-4  # the Picbreeder network is not its own anchor


def test_rescored_rows_carry_the_standard_error_only_where_every_weight_was_scored():
    """A rescore under a judge the runs did not score (e.g. the cross-fitted one) stores no per-weight
    verdicts: its AUC's standard error is 0 where every non-zero weight was scored and unknown (NaN)
    where a sample was, and the sixteen-target pairing reads it for the Picbreeder network."""
    table = pd.DataFrame(_rows("a", 0.8, [0.5, 0.6]) + _rows("b", 0.7, [0.4, 0.5]))
    table["key"] = [f"k{i}" for i in range(len(table))]
    table["n_nonzero"] = np.where(table.network == "picbreeder", 147, 5000)
    table["n_params"] = np.where(table.network == "picbreeder", 147, 1000)  # the twins: a sample
    rescored = pd.DataFrame({"source": table.key, "score": np.linspace(0.1, 0.9, len(table)),
                             "scores": [[0.5]] * len(table), "base_kept": True, "anchor_rmse": 0.01,
                             "max_params": 1000})  # fmt: skip
    out = T.rescored_as(table, rescored, "anchored-xfit")
    pb = out.network == "picbreeder"
    assert (out.loc[pb, "auc_se_anchored-xfit"] == 0).all() and out.loc[~pb, "auc_se_anchored-xfit"].isna().all()
    assert list(out["auc_anchored-xfit"]) == list(rescored.score)
    p = T.paired(out, "anchored-xfit")
    assert p.loc["a", "Picbreeder lo"] == p.loc["a", "Picbreeder hi"] == pytest.approx(0.1)
    every = T.rescored_as(table, rescored.assign(max_params=None), "anchored-xfit")  # an every-weight rescore
    assert (every["auc_se_anchored-xfit"] == 0).all()
    with pytest.raises(ExperimentError, match="no rescore run"):
        T.rescored_as(table, rescored.iloc[1:], "anchored-xfit")
