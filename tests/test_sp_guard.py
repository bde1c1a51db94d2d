"""SP's loss guard (DESIGN §3.3): a round that would erase the image is undone, collapsed members
are flagged in every result, and run configs stored before the guard keep their key and meaning."""

import json

import numpy as np
import pandas as pd
import pytest
import torch

from volratio import prune as P
from volratio.experiments import connectivity, depth_regime, emc2_bench, interference
from volratio.nets import CoordMLP, coords
from volratio.runs.registry import get_run
from volratio.runs.store import config_key
from volratio.train import TrainConfig, train

RES = 8


def image(res=RES):
    """A smooth colour image (no data needed)."""
    g = coords(res)
    y, x = g[:, 0], g[:, 1]
    rgb = torch.stack([0.5 + 0.4 * torch.sin(2 * x), 0.5 + 0.4 * y * x, 0.5 + 0.3 * torch.cos(3 * y)], -1)
    return rgb.reshape(res, res, 3)


@pytest.fixture(scope="module")
def fitted():
    net = CoordMLP("3;gaussian:4,sin:2", population=2, seed=1)
    train(net, image(), TrainConfig(steps=200, lr=0.02))
    return net


def fresh(net):
    return net.select(list(range(net.population)))


# a round that removes one unit of every pair (τ = 0, opposite signs) and does not retrain: it
# leaves about one unit per layer, far from the fit
HARSH = dict(tau=0.0, opposite_sign=True, rounds=3, retrain_steps=0)


def test_default_guard_undoes_a_collapsing_round_and_stops(fitted):
    unguarded = fresh(fitted)
    off = P.sp(unguarded, image(), P.SPConfig(**HARSH, loss_factor=None))
    assert (off.final_loss > 2.0 * off.dense_loss).all()  # the round does wreck the fit without the guard
    net = fresh(fitted)
    weights, masks = [w.detach().clone() for w in net.weights], [m.clone() for m in net.masks]
    res = P.sp(net, image(), P.SPConfig(**HARSH))  # default guard
    assert P.SPConfig().loss_factor == 2.0
    assert all(torch.equal(a, b) for a, b in zip(masks, net.masks))
    assert all(torch.equal(a, b.detach()) for a, b in zip(weights, net.weights))
    assert res.extras["stop"] == ["loss above loss_factor × dense loss (round undone)"] * 2
    assert len(res.history) == 2 and res.history[1]["removed"] == [0, 0]  # stopped after the undone round
    np.testing.assert_array_equal(res.final_loss, res.dense_loss)
    members = res.extras["members"]
    assert [m["collapsed"] for m in members] == [False, False]
    assert [m["final_loss"] for m in members] == [m["dense_loss"] for m in members]
    limit = np.maximum(2.0 * res.dense_loss, P.SPConfig().loss_floor)
    np.testing.assert_allclose(res.extras["loss_limit"], limit)


def test_guard_lets_a_round_within_the_factor_through(fitted):
    net = fresh(fitted)
    res = P.sp(net, image(), P.SPConfig(**HARSH, loss_factor=1e6))  # a limit no round reaches
    assert all(s != "loss above loss_factor × dense loss (round undone)" for s in res.extras["stop"])
    assert all(s > 0 for s in res.history[-1]["sparsity"])


def test_absolute_max_loss_still_works(fitted):
    net = fresh(fitted)
    res = P.sp(net, image(), P.SPConfig(**HARSH, loss_factor=None, max_loss=0.0))
    assert res.extras["stop"] == ["loss above max_loss (round undone)"] * 2
    assert all(s == 0 for s in res.history[-1]["sparsity"])


def test_floor_keeps_a_near_perfect_fit_prunable():
    cfg = P.SPConfig(loss_factor=2.0, loss_floor=1e-3)
    np.testing.assert_allclose(cfg.loss_limit([1e-6, 0.01]), [1e-3, 0.02])
    assert np.isinf(P.SPConfig(loss_factor=None).loss_limit([0.5])).all()


@pytest.mark.parametrize("bad", [dict(loss_factor=0.5), dict(loss_factor=float("nan")), dict(loss_floor=-1.0)])
def test_bad_guard_settings(bad):
    with pytest.raises(P.PruneError, match="loss_f"):
        P.SPConfig(**bad)


def test_collapsed_flag(fitted):
    flat = fresh(fitted)
    with torch.no_grad():
        flat.weights[-1].zero_()  # the head sees nothing: every pixel gets the bias colour
    dense_loss = np.full(2, 1e-3)
    assert P.flat_images(flat, RES).tolist() == [True, True]
    assert P.collapsed(flat, RES, dense_loss, dense_loss).tolist() == [True, True]
    ok = fresh(fitted)
    assert P.flat_images(ok, RES).tolist() == [False, False]
    assert P.collapsed(ok, RES, dense_loss, dense_loss).tolist() == [False, False]
    assert P.collapsed(ok, RES, dense_loss, 50 * dense_loss).tolist() == [True, True]  # far above the dense loss
    # SP's result flags a flat member even when nothing was pruned
    res = P.sp(flat, image(), P.SPConfig(tau=1.0, rounds=2, retrain_steps=0))
    assert res.collapsed.tolist() == [True, True]
    assert P.sp(fresh(fitted), image(), P.SPConfig(tau=1.0, rounds=2)).collapsed.tolist() == [False, False]
    assert res.summary()["collapsed"] == [True, True]
    other = P.prune(fresh(fitted), image(), "random", sparsity=0.1, retrain_steps=0)
    with pytest.raises(P.PruneError, match="collapsed"):
        _ = other.collapsed


# ---------------------------------------------------------------------------------------------
# Stored configs: version 1 reads no field as no guard, and keeps the key


def _stored(chunk):
    t = pd.read_parquet(f"results/reference/{chunk}/results.parquet")
    return [(r.run, json.loads(r.config), r.version, r.key) for r in t.itertuples()]


# a depth_point run config as stored before SP's guard (chunk depth_picbreeder before its re-run with
# SP that keeps the fit; the run is in git history), with its run key and store key
LEGACY_DEPTH = (
    "volratio.depth_runs:depth_point",
    {"activation": "gaussian", "deltas": [-2.0, -1.0, -0.5, -0.25, 0.25, 0.5, 1.0, 2.0], "depth": 2, "device": "cpu",
     "judge": "calibrated", "keep_net": False, "lr": 0.003, "max_params": 200, "members": 5, "optimizer": "adam",
     "res": 64, "retrain_steps": 200, "seed": 0, "sp_rounds": 5, "steps": 2000, "target": "picbreeder:skull",
     "tau": 0.9, "width": 12},
    "0.1.0",
    "baf820eaef5583e8",
)  # fmt: skip


# an optimizer_point and a whole-experiment connectivity config as stored before SP's guard (the chunks
# before their re-run with SP that keeps the fit; the runs are in git history), with their keys
LEGACY_OPTIMIZER = {"activation": "gaussian", "deltas": [-2.0, -1.0, -0.5, -0.25, 0.25, 0.5, 1.0, 2.0], "depth": 14,
                    "device": "cpu", "hessian_iters": 50, "judge": "calibrated", "keep_net": False, "lr": 0.001,
                    "max_params": 200, "members": 1, "optimizer": "adam", "res": 64, "retrain_steps": 200, "seed": 0,
                    "sp_rounds": 5, "steps": 2000, "target": "picbreeder:skull", "tau": 0.9, "width": 12}  # fmt: skip
LEGACY_CONNECTIVITY = (
    "volratio.experiments:connectivity",
    {"arch": "picbreeder", "device": "cpu", "judge": "calibrated", "scale": "reference", "seed": 0, "seeds": 1,
     "sp.tau": 0.9, "targets": ["skull"]},
    "0.1.0",
    "e45ce77dbb875aa2",
)  # fmt: skip


def test_version_1_reads_stored_depth_configs_as_no_guard_and_keeps_their_key():
    run, config, version, key = LEGACY_DEPTH
    assert "sp_loss_factor" not in config
    v1 = get_run("depth_point", 1)
    assert v1.parse(config).sp_loss_factor is None and v1.parse(config).train_path == "eager"
    assert config_key(run, v1.keyed(config), v1.key_version(version)) == key  # keyed as given
    assert config_key("volratio.depth_runs:optimizer_point", LEGACY_OPTIMIZER, "0.1.0") == "c1a083cb38ac9cb8"
    assert get_run("optimizer_point", 1).parse(LEGACY_OPTIMIZER).sp_loss_factor is None
    # version 2 (the default) reads an absent entry as today's default and keys the complete config
    v2 = get_run("depth_point")
    assert v2.version == 2 and v2.parse(config).sp_loss_factor == 2.0
    assert v2.keyed(config)["sp_loss_factor"] == 2.0 and set(v2.keyed(config)) > set(config)
    assert depth_regime.parse_point(config).sp_loss_factor == 2.0  # the module's own parse: today's defaults
    new = depth_regime.make_sweep("planted:0", depth_regime.Config.quick()).configs()[0]
    assert new["sp_loss_factor"] == 2.0 and "adamw_lr" in new  # the shared settings: every entry


def test_stored_whole_experiment_configs_mean_no_guard():
    run, config, version, key = LEGACY_CONNECTIVITY
    assert config_key(run, config, version) == key
    cfg = get_run("connectivity", 1).parse(config)
    assert cfg.sp.loss_factor is None and cfg.legacy_rows and cfg.sp.tau == config["sp.tau"]
    assert get_run("connectivity").parse(config).sp.loss_factor == 2.0  # version 2: today's default
    assert connectivity.Config.quick().sp.loss_factor == 2.0 and not connectivity.Config.quick().legacy_rows
    assert get_run("connectivity", 1).parse({**config, "sp.loss_factor": 2.0}).sp.loss_factor == 2.0
    icfg = get_run("interference", 1).parse(_stored("interference")[0][1])
    assert icfg.sp_loss_factor is None and interference.Config.quick().sp_loss_factor == 2.0
    dense = get_run("emc2_dense", 1)
    dcfg = dense.parse({"scale": "reference", "seed": 0})  # a config stored before the guard
    assert dcfg.sp.loss_factor is None and dcfg.legacy_rows and dcfg.sp.compensate == "none"
    rerun = dense.parse(_stored("emc2_dense")[0][1])  # the chunk as re-run with the guard
    assert rerun.sp.loss_factor == 2.0 and not rerun.legacy_rows and rerun.sp.compensate == "span"
    assert emc2_bench.Config.reference().sp.loss_factor == 2.0


def test_depth_point_metrics_flag_collapsed_only_for_new_configs():
    small = dict(target="planted:0", depth=1, width=3, res=8, steps=20, sp_rounds=1, retrain_steps=2, members=2,
                 max_params=2, deltas=[-1.0, 1.0], judge="ssim", keep_net=False, seed=0)  # fmt: skip
    new = depth_regime.point({**small, "sp_loss_factor": 2.0})
    assert len(new["collapsed"]) == 2 and all(isinstance(c, bool) for c in new["collapsed"])
    assert len(new["sp_stop"]) == 2 and len(new["dense_loss"]) == 2
    old = get_run("depth_point", 1).fn(small)  # version 1 reads the absent guard as none; flags all the same
    assert len(old["collapsed"]) == 2 and len(old["sp_stop"]) == 2


def test_backoff_retries_an_undone_round_with_half_as_many_units(fitted):
    """With `backoff`, a round the guard undoes is tried again with half as many units (down to one)
    before the network stops; without it the network stops at once. Undone rounds change nothing."""
    harsh = dict(HARSH, rounds=6, per_round=4, loss_floor=0.0, compensate="none")
    plain = P.sp(fresh(fitted), image(), P.SPConfig(**harsh))
    assert plain.extras["attempts"][0] == [4, 4] and not any(map(any, plain.extras["attempts"][1:]))
    net = fresh(fitted)
    res = P.sp(net, image(), P.SPConfig(**harsh, backoff=True))
    tried = [a[0] for a in res.extras["attempts"]]
    assert tried[:3] == [4, 2, 1]  # no retraining: every removal breaks the fit, so each round is undone
    undone = [r["removed"][0] == 0 for r in res.history[1:]]
    for i, (a, b) in enumerate(zip(tried, tried[1:])):  # after an undone round: half as many
        if undone[i]:
            assert b == a // 2
    assert res.extras["stop"][0] in ("loss above loss_factor × dense loss (round undone)", "rounds")
    assert (res.final_loss <= np.maximum(2.0 * res.dense_loss, 0.0) + 1e-12).all()  # the guard still holds
    assert P.SPConfig().backoff is False  # off unless asked: stored runs keep their meaning
