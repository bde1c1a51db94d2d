"""SP that keeps the fit: retraining at a fraction of the training rate, a removed unit's outgoing
weights re-expressed on the units that stay, a cap on units per round, and run configs that carry
every one of these knobs."""

import numpy as np
import pytest
import torch
from training_helpers import smooth_image

from volratio import prune as P
from volratio.experiments import depth_regime
from volratio.nets import CoordMLP
from volratio.prune.criteria import CalibrationGrid
from volratio.prune.similarity_pruning import Removal, compensate
from volratio.runs.registry import get_run
from volratio.train import TrainConfig, mse_per_network, train
from volratio.util.presets import ConfigError

RES = 8


def with_twin(seed=0):
    """A trained 2-layer network whose hidden unit 3 of layer 0 is an exact copy of unit 1 (same
    incoming weights), so its map is in the span of the others."""
    net = CoordMLP("2;gaussian:5", population=1, seed=seed)
    train(net, smooth_image(RES), TrainConfig(steps=150, lr=0.02))
    with torch.no_grad():
        net.weights[0][0, :, 3] = net.weights[0][0, :, 1]
    return net


def loss(net, img):
    calib = CalibrationGrid.from_image(img, net)
    with torch.no_grad():
        return float(mse_per_network(net, calib.grid, calib.target)[0])


def remove(net, layer, unit):
    alive = P.unit_alive(net.masks)
    alive[layer][0, unit] = False
    for i, m in enumerate(P.masks_with_units(net.masks, alive)):
        net.set_mask(i, m)


@pytest.mark.parametrize("how", ["span", "twin"])
def test_compensation_removes_a_duplicate_unit_without_changing_the_image(how):
    img = smooth_image(RES)
    net = with_twin()
    before = loss(net, img)
    plain = net.select([0])
    remove(plain, 0, 3)
    assert loss(plain, img) > before + 1e-4  # masking alone loses the unit's contribution
    comp = net.select([0])
    compensate(comp, CalibrationGrid.from_image(img, comp), [Removal(0, 0, 3, 1, 1.0)], how)
    remove(comp, 0, 3)
    assert loss(comp, img) == pytest.approx(before, rel=1e-4, abs=1e-7)


def test_compensation_never_revives_a_pruned_connection():
    img = smooth_image(RES)
    net = with_twin()
    with torch.no_grad():
        m = net.masks[1].clone()
        m[0, 1, 0] = 0.0  # unit 1's connection to output 0 is pruned
    net.set_mask(1, m)
    compensate(net, CalibrationGrid.from_image(img, net), [Removal(0, 0, 3, 1, 1.0)], "span")
    assert float(net.weights[1].detach()[0, 1, 0]) == 0.0


def test_compensate_none_changes_no_weight():
    net = with_twin()
    before = [w.detach().clone() for w in net.weights]
    compensate(net, CalibrationGrid.from_image(smooth_image(RES), net), [Removal(0, 0, 3, 1, 1.0)], "none")
    assert all(torch.equal(a, b.detach()) for a, b in zip(before, net.weights))


def test_per_round_caps_the_units_removed_per_network_and_round():
    net = CoordMLP("3;gaussian:6", population=2, seed=3)
    train(net, smooth_image(RES), TrainConfig(steps=30, lr=0.02))
    res = P.sp(net, smooth_image(RES), P.SPConfig(tau=0.0, opposite_sign=True, rounds=2, retrain_steps=0, per_round=2,
                                        loss_factor=None))  # fmt: skip
    assert all(r <= 2 for h in res.history[1:] for r in h["removed"])
    assert any(r == 2 for r in res.history[1]["removed"])


@pytest.mark.parametrize(
    "kw, words",
    [
        ({"compensate": "merge"}, "compensate"),
        ({"per_round": 0}, "per_round"),
        ({"per_round": 1.5}, "per_round"),
        ({"retrain_lr_factor": 0.0}, "retrain_lr_factor"),
        ({"retrain_lr_factor": float("nan")}, "retrain_lr_factor"),
        ({"tau": 1.5}, "tau"),
    ],
)
def test_bad_sp_knobs_are_named(kw, words):
    net = CoordMLP("2;gaussian:3", population=1, seed=0)
    with pytest.raises(P.PruneError, match=words):
        P.sp(net, smooth_image(RES), P.SPConfig(rounds=1, retrain_steps=0, **kw))


def test_finetune_scales_every_learning_rate():
    tc = TrainConfig(lr=3e-3, muon_lr=0.02, adamw_lr=3e-4, steps=2000)
    ft = tc.finetune(200, 0.1)
    assert (ft.steps, ft.lr, ft.muon_lr, ft.adamw_lr) == (
        200,
        pytest.approx(3e-4),
        pytest.approx(2e-3),
        pytest.approx(3e-5),
    )
    assert tc.finetune(50) == TrainConfig(lr=3e-3, muon_lr=0.02, adamw_lr=3e-4, steps=50)
    with pytest.raises(ValueError, match="lr_factor"):
        tc.finetune(10, -1.0)


def test_retraining_at_a_lower_rate_keeps_a_converged_fit():
    """The reason for `retrain_lr_factor`: a fresh Adam at the training rate first undoes part of a fit."""
    img = smooth_image(RES)
    net = CoordMLP("3;gaussian:6", population=2, seed=0)
    tc = TrainConfig(steps=400, lr=0.02)
    dense = train(net, img, tc).final_loss
    hot = train(net.select([0, 1]), img, tc.finetune(20)).losses.max(axis=0)
    cool = train(net.select([0, 1]), img, tc.finetune(20, 0.1)).losses.max(axis=0)
    assert (cool < hot).all()
    assert (cool <= 1.5 * dense).all()


def test_depth_configs_carry_their_sp_knobs():
    """A depth_point run is keyed and stored with every SP knob (its complete config): today's defaults
    are the measured choices, and the shared settings carry them."""
    new = depth_regime.Settings()
    assert (new.sp.retrain_lr_factor, new.sp.compensate, new.sp.per_round) == (0.1, "span", 2)
    cur = get_run("depth_point").keyed({"target": "planted:0", "depth": 2})
    assert (cur["sp.retrain_lr_factor"], cur["sp.compensate"], cur["sp.per_round"]) == (0.1, "span", 2)
    assert {"sp.retrain_lr_factor", "sp.compensate", "sp.per_round"} <= set(new.shared())
    # the entries the run sets itself are not in its config: SP's seed is the run's, its optimizer the run's
    assert not any(k.startswith(("sp.seed", "sp.train")) for k in cur)


def test_a_run_is_repeatable_bit_for_bit():
    cfg = {"target": "planted:0", "depth": 2, "width": 4, "res": 8, "steps": 40, "sp.rounds": 2, "sp.retrain_steps": 5,
           "members": 2, "max_params": 3, "deltas": [-1.0, 1.0], "sp.loss_factor": 2.0, "train_path": "fast",
           "sp.retrain_lr_factor": 0.1, "sp.compensate": "span", "sp.per_round": 2, "keep_net": False}  # fmt: skip
    a, b = depth_regime.point(dict(cfg)), depth_regime.point(dict(cfg))
    assert a == b
    assert np.isfinite(a["loss"]).all()


@pytest.mark.parametrize(
    ("entry", "says"), [({"sp.seed": 3}, "set `seed` instead"), ({"sp.train.lr": 0.5}, "retrains with the run's")]
)
def test_a_depth_run_sets_sps_seed_and_optimizer_itself(entry, says):
    """SP in a depth run is seeded by the run's `seed` and retrains with the run's optimizer, so a
    config that gives SP its own is refused (it would be keyed but not used)."""
    with pytest.raises(ConfigError, match=says):
        get_run("depth_point").parse({"target": "planted:0", "depth": 2, **entry})
    cfg = get_run("depth_point").parse({"target": "planted:0", "depth": 2, "seed": 7, "lr": 0.02})
    sp = cfg.sp_config(cfg.seed, TrainConfig(lr=cfg.lr))
    assert (sp.seed, sp.train.lr, sp.tau) == (7, 0.02, cfg.sp.tau)
