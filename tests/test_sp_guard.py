"""SP's loss guard: a round that would erase the image is undone, collapsed members are flagged in
every result, and stored run configs name the guard they ran with."""

import dataclasses
import json

import numpy as np
import pandas as pd
import pytest
import torch
from training_helpers import smooth_image

from volratio import prune as P
from volratio.experiments import depth_regime, emc2_bench, interference, sparse_regime
from volratio.nets import CoordMLP
from volratio.runs.registry import get_run
from volratio.runs.store import config_key
from volratio.train import TrainConfig, train

RES = 8


@pytest.fixture(scope="module")
def fitted():
    net = CoordMLP("3;gaussian:4,sin:2", population=2, seed=1)
    train(net, smooth_image(RES), TrainConfig(steps=200, lr=0.02))
    return net


def fresh(net):
    return net.select(list(range(net.population)))


# a round that removes one unit of every pair (τ = 0, opposite signs) and does not retrain: it
# leaves about one unit per layer, far from the fit
HARSH = dict(tau=0.0, opposite_sign=True, rounds=3, retrain_steps=0)


def test_default_guard_undoes_a_collapsing_round_and_stops(fitted):
    unguarded = fresh(fitted)
    off = P.sp(unguarded, smooth_image(RES), P.SPConfig(**HARSH, loss_factor=None))
    assert (off.final_loss > 2.0 * off.dense_loss).all()  # the round does wreck the fit without the guard
    net = fresh(fitted)
    weights, masks = [w.detach().clone() for w in net.weights], [m.clone() for m in net.masks]
    res = P.sp(net, smooth_image(RES), P.SPConfig(**HARSH))  # default guard
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
    res = P.sp(net, smooth_image(RES), P.SPConfig(**HARSH, loss_factor=1e6))  # a limit no round reaches
    assert all(s != "loss above loss_factor × dense loss (round undone)" for s in res.extras["stop"])
    assert all(s > 0 for s in res.history[-1]["sparsity"])


def test_absolute_max_loss_still_works(fitted):
    net = fresh(fitted)
    res = P.sp(net, smooth_image(RES), P.SPConfig(**HARSH, loss_factor=None, max_loss=0.0))
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
    res = P.sp(flat, smooth_image(RES), P.SPConfig(tau=1.0, rounds=2, retrain_steps=0))
    assert res.collapsed.tolist() == [True, True]
    assert P.sp(fresh(fitted), smooth_image(RES), P.SPConfig(tau=1.0, rounds=2)).collapsed.tolist() == [False, False]
    assert res.summary()["collapsed"] == [True, True]
    other = P.prune(fresh(fitted), smooth_image(RES), "random", sparsity=0.1, retrain_steps=0)
    with pytest.raises(P.PruneError, match="collapsed"):
        _ = other.collapsed


# ---------------------------------------------------------------------------------------------
# Stored configs name their guard: an absent entry means today's default


def _stored(chunk):
    t = pd.read_parquet(f"results/reference/{chunk}/results.parquet")
    return [(r.run, json.loads(r.config), r.key) for r in t.itertuples()]


def test_stored_configs_name_their_guard_and_absent_entries_mean_todays_default():
    depth = get_run("depth_point")
    config = {"target": "planted:0", "depth": 2}
    assert depth.parse(config).sp.loss_factor == 2.0 and depth.keyed(config)["sp.loss_factor"] == 2.0
    assert set(depth.keyed(config)) > set(config)  # keyed by the complete config
    new = depth_regime.make_sweep("planted:0", depth_regime.Config.quick()).configs()[0]
    assert new["sp.loss_factor"] == 2.0 and "adamw_lr" in new  # the shared settings: every entry
    for chunk, has in (("interference", "sp.loss_factor"), ("emc2_dense", "sp.loss_factor")):
        for run, config, key in _stored(chunk):
            assert has in config and config_key(run, config) == key  # the guard as the run used it
    (run, config, _), *_ = _stored("interference")
    assert get_run(run).parse(config).sp.loss_factor is None and interference.Config.quick().sp.loss_factor == 2.0
    rerun = get_run("emc2_dense").parse(_stored("emc2_dense")[0][1])
    assert rerun.sp.loss_factor == 2.0 and rerun.sp.compensate == "span"
    assert emc2_bench.Config.reference().sp.loss_factor == 2.0 and sparse_regime.near_dense().sp.loss_factor == 2.0


def test_depth_point_metrics_flag_collapsed():
    small = {"target": "planted:0", "depth": 1, "width": 3, "res": 8, "steps": 20, "sp.rounds": 1, "sp.retrain_steps": 2,
             "members": 2, "max_params": 2, "deltas": [-1.0, 1.0], "judge": "ssim", "keep_net": False, "seed": 0}  # fmt: skip
    new = depth_regime.point({**small, "sp.loss_factor": 2.0})
    assert len(new["collapsed"]) == 2 and all(isinstance(c, bool) for c in new["collapsed"])
    assert len(new["sp_stop"]) == 2 and len(new["dense_loss"]) == 2
    off = depth_regime.point({**small, "sp.loss_factor": None})  # no guard: flags all the same
    assert len(off["collapsed"]) == 2 and len(off["sp_stop"]) == 2


def test_backoff_retries_an_undone_round_with_half_as_many_units(fitted):
    """With `backoff`, a round the guard undoes is tried again with half as many units (down to one)
    before the network stops; without it the network stops at once. Undone rounds change nothing."""
    harsh = dict(HARSH, rounds=6, per_round=4, loss_floor=0.0, compensate="none")
    plain = P.sp(fresh(fitted), smooth_image(RES), P.SPConfig(**harsh))
    assert plain.extras["attempts"][0] == [4, 4] and not any(map(any, plain.extras["attempts"][1:]))
    net = fresh(fitted)
    res = P.sp(net, smooth_image(RES), P.SPConfig(**harsh, backoff=True))
    tried = [a[0] for a in res.extras["attempts"]]
    assert tried[:3] == [4, 2, 1]  # no retraining: every removal breaks the fit, so each round is undone
    undone = [r["removed"][0] == 0 for r in res.history[1:]]
    assert undone[:2] == [True, True]  # an undone round records no removal
    for i, (a, b) in enumerate(zip(tried, tried[1:])):  # after an undone round: half as many
        if undone[i]:
            assert b == a // 2
    assert res.extras["stop"][0] in ("loss above loss_factor × dense loss (round undone)", "rounds")
    assert (res.final_loss <= np.maximum(2.0 * res.dense_loss, 0.0) + 1e-12).all()  # the guard still holds
    assert P.SPConfig().backoff is False  # off unless asked


def test_collapsed_at_its_boundaries(fitted):
    """Collapsed: final MSE above factor × max(dense, floor) — not at it —, NaN, or a flat image."""
    net = fresh(fitted)
    dense = np.array([0.01, 0.001])  # the second is below the floor
    at = np.array([10 * 0.01, 10 * 0.002])
    assert P.collapsed(net, RES, dense, at).tolist() == [False, False]
    assert P.collapsed(net, RES, dense, np.nextafter(at, 1)).tolist() == [True, True]
    assert P.collapsed(net, RES, dense, [np.nan, 0.0]).tolist() == [True, False]
    assert P.collapsed(net, RES, dense, [0.0, 0.0], tol=10.0).tolist() == [True, True]  # every image "flat"
    assert P.collapsed(net, RES, [0.01, 0.01], [0.04, 0.06], factor=5.0).tolist() == [False, True]


def test_a_nan_round_is_undone_and_a_stopped_member_is_left_as_it_was(fitted, monkeypatch):
    """Retraining that turns member 0 into NaN: its round is undone (a NaN loss is above any finite
    limit) and it stops; in the next round retraining moves every member, and member 0, which tried
    nothing, gets its weights back, while member 1 keeps pruning with one unit a round."""
    calls = []

    def retrain(net, image, cfg):
        calls.append(1)
        with torch.no_grad():
            for w in net.weights:
                if len(calls) == 1:
                    w[0] = float("nan")
                else:
                    w.add_(1e-3)

    monkeypatch.setattr(P.similarity_pruning, "train", retrain)
    net = fresh(fitted)
    dense_w, dense_m = [w.detach()[0].clone() for w in net.weights], [m[0].clone() for m in net.masks]
    cfg = P.SPConfig(
        tau=0.0, opposite_sign=True, rounds=2, retrain_steps=1, per_round=1, loss_factor=None, max_loss=1e9
    )
    res = P.sp(net, smooth_image(RES), cfg)
    assert len(calls) == 2
    assert res.extras["stop"][0] == "loss above max_loss (round undone)"
    assert [r["removed"] for r in res.history[1:]] == [[0, 1], [0, 1]]
    assert all(torch.equal(a, w.detach()[0]) for a, w in zip(dense_w, net.weights))
    assert all(torch.equal(a, m[0]) for a, m in zip(dense_m, net.masks))
    after, before = P.similarity_pruning.mask_nonzeros(net.masks), P.similarity_pruning.mask_nonzeros(fitted.masks)
    assert after[0] == before[0] and after[1] < before[1]


def test_sp_says_why_each_member_stopped_and_records_each_member(fitted):
    """Three ways to stop — no pair similar enough, the round budget, and the guard (above) — and the
    record of each member."""
    none_similar = P.sp(fresh(fitted), smooth_image(RES), P.SPConfig(tau=1.0, rounds=3, retrain_steps=0))
    assert none_similar.extras["stop"] == ["no redundant pair"] * 2 and len(none_similar.history) == 1
    assert none_similar.history[0]["round"] == 0 and none_similar.history[0]["removed"] == [0, 0]
    cfg = P.SPConfig(tau=0.0, opposite_sign=True, rounds=1, retrain_steps=0, per_round=1, loss_factor=None)
    res = P.sp(fresh(fitted), smooth_image(RES), cfg)
    assert res.extras["stop"] == ["rounds"] * 2 and [h["round"] for h in res.history] == [0, 1]
    assert res.history[1]["removed"] == [1, 1] and res.history[1]["tau"] == [0.0, 0.0]
    assert res.method == "sp" and res.config == dataclasses.asdict(cfg)
    (m0, _) = res.extras["members"]
    assert set(m0) == {"dense_loss", "final_loss", "collapsed", "stop", "sparsity", "nonzeros", "tau"}
    assert (
        m0["stop"] == "rounds"
        and m0["tau"] == 0.0
        and m0["nonzeros"] == P.similarity_pruning.mask_nonzeros(res.net.masks)[0]
    )
    assert 0 < m0["sparsity"] < 1 and res.extras["loss_limit"] == [float("inf")] * 2
