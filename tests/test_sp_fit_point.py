"""SP read at its fit point (`volratio.prune.fit_point`) and the depth run of the sparse regime
(`volratio.depth.sparse_point`): each network is scored at its sparsest round that still fits."""

import numpy as np
import pytest
import torch
from training_helpers import smooth_image

from volratio import prune as P
from volratio.depth.sparse_point import SparsePoint, parse_sparse_point
from volratio.nets import CoordMLP
from volratio.prune.fit_point import SparsestFit, fits
from volratio.runs.reference import rescorable
from volratio.runs.registry import get_run
from volratio.util.presets import ConfigError


def wide_net(seed=0, width=16) -> CoordMLP:
    return CoordMLP(f"2;gaussian:{width}", head="hsv", population=3, seed=seed)


def test_fits_is_the_frontier_criterion():
    dense = np.array([1e-4, 0.01, 0.01, 0.01])
    loss = np.array([0.0019, 0.019, 0.021, np.nan])
    # floor 0.002 decides the first; 2 × dense the others; NaN never fits
    assert fits(loss, dense).tolist() == [True, True, False, False]


def trajectory(seed=0):
    """SP unguarded on a wide population, every round's state recorded beside the keeper's choice."""
    from volratio.train import TrainConfig, train

    net = wide_net(seed)
    img = smooth_image(16)
    train(net, img, TrainConfig(steps=300, lr=1e-2))
    seen = []

    def spy(r, n, loss):
        seen.append((r, list(n.nonzero()), np.asarray(loss, dtype=float).copy(),
                     [w.detach().clone() for w in n.weights]))  # fmt: skip
        keeper(r, n, loss)

    keeper = SparsestFit(factor=2.0, floor=0.0)
    cfg = P.SPConfig(tau=0.95, tau_schedule=(0.8, 0.5, 0.0), rounds=8, retrain_steps=20, per_round_fraction=0.3,
                     loss_factor=None, centred=True, seed=seed)  # fmt: skip
    P.sp(net, img, cfg, on_round=spy)
    return net, keeper, seen


@pytest.mark.parametrize("seed", [0, 1])
def test_the_keeper_restores_each_member_at_its_sparsest_fitting_round(seed):
    net, keeper, seen = trajectory(seed)
    assert seen[0][0] == 0 and len(seen) > 2  # the dense network first, then SP's rounds
    dense = seen[0][2]
    for k in range(net.population):
        ok = [(nz[k], r) for r, nz, loss, _ in seen if loss[k] <= 2.0 * dense[k]]
        best_nz = min(n for n, _ in ok)
        first_round = min(r for n, r in ok if n == best_nz)
        assert keeper.round[k] == first_round and keeper.nonzero[k] == best_nz
        assert keeper.end_nonzero[k] == seen[-1][1][k]
    keeper.restore(net)
    assert net.nonzero() == keeper.nonzero
    for k in range(net.population):
        kept = seen[keeper.round[k]][3]
        for w, w_kept in zip(net.weights, kept):
            assert torch.equal(w[k], w_kept[k])  # exactly the weights of that round


def test_the_keeper_needs_the_dense_round_first():
    net = wide_net()
    with pytest.raises(ValueError, match="round 0"):
        SparsestFit()(1, net, [0.1, 0.1, 0.1])
    with pytest.raises(ValueError, match="on_round"):
        SparsestFit().restore(net)


def test_the_sparse_depth_run_refuses_a_guard_and_bad_fit_criteria():
    with pytest.raises(ConfigError, match="unguarded"):
        parse_sparse_point({"sp.loss_factor": 2.0})
    with pytest.raises(ConfigError, match="fit_factor"):
        parse_sparse_point({"fit_factor": 0.5})
    assert SparsePoint().sp.loss_factor is None and SparsePoint().width == 48
    from volratio.experiments.optimizers import parse_sparse_point as parse_opt

    with pytest.raises(ConfigError, match="unguarded"):
        parse_opt({"sp.loss_factor": 2.0})
    with pytest.raises(ConfigError, match="members"):
        parse_opt({"members": 2})  # the optimizer study: one network per run, more seeds


def test_the_sparse_depth_run_scores_each_network_at_its_fit_point_and_is_rescorable():
    assert rescorable("sparse_depth_point") and rescorable("sparse_regime") and not rescorable("emc2_point")
    entry = get_run("sparse_depth_point")
    cfg = entry.keyed({"target": "planted:15:depth=4,width=3", "depth": 2, "width": 12, "res": 16, "steps": 200,
                       "members": 2, "sp.rounds": 6, "sp.retrain_steps": 20, "deltas": [-1.0, 1.0],
                       "max_params": 20, "judge": "stability", "train_path": "fast"})  # fmt: skip
    out = entry.fn(cfg)
    dense, loss = np.array(out["dense_loss"]), np.array(out["loss"])
    assert fits(loss, dense).all()  # every scored network fits
    assert all(n <= t for n, t in zip(out["nonzero"], out["dense_nonzero"]))
    assert all(e <= n for e, n in zip(out["end_nonzero"], out["nonzero"]))  # SP went at least as far
    assert out["sparsity"] == pytest.approx([1 - n / t for n, t in zip(out["nonzero"], out["dense_nonzero"])])
    assert out["net"].nonzero() == out["nonzero"]
    assert len(out["score"]) == 2 and all(0.0 <= s <= 1.0 for s in out["score"])
    again = entry.fn(cfg)
    assert again["score"] == out["score"] and again["loss"] == out["loss"]  # seeded: the same numbers


def test_read_at_end_scores_sp_where_it_stopped_at_one_count():
    """`read_at = "end"` keeps SP's end state: each member at (or just under, by whole units) the
    target count, with the end state's loss; the fit point is still reported."""
    entry = get_run("sparse_depth_point")
    base = {"target": "planted:15:depth=4,width=3", "depth": 2, "width": 12, "res": 16, "steps": 200, "members": 2,
            "sp.rounds": 12, "sp.retrain_steps": 20, "sp.target_nonzeros": 120, "deltas": [-1.0, 1.0],
            "max_params": 20, "judge": "stability", "train_path": "fast"}  # fmt: skip
    out = entry.fn(entry.keyed({**base, "read_at": "end"}))
    assert out["nonzero"] == out["end_nonzero"] and out["loss"] == out["end_loss"]
    assert all(0.9 * 120 <= n <= 120 for n in out["nonzero"]), out["nonzero"]
    fit = entry.fn(entry.keyed(base))
    assert fit["fit_round"] == out["fit_round"] and all(f >= e for f, e in zip(fit["nonzero"], out["nonzero"]))
    with pytest.raises(ConfigError, match="read_at"):
        parse_sparse_point({"read_at": "middle"})


def test_an_option_keyed_when_set_enters_the_key_only_when_set():
    """`read_at` is keyed only when set: at its default it is left out of the complete config (the runs
    that leave it alone keep their keys); set, it enters the key."""
    entry = get_run("sparse_depth_point")
    assert "read_at" not in entry.keyed({}) and entry.keyed({"read_at": "end"})["read_at"] == "end"
    assert parse_sparse_point(entry.keyed({})).read_at == "fit"
