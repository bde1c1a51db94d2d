"""The hand-written training paths against the eager one: the fast step (`volratio.train.fast`), and where a test is parametrized over it, the fused kernel (`volratio.train.fused`).

Tolerance (the one `volratio.train.fast` documents): the forward pass is the eager one, so the
losses before the first step are equal bit for bit; the hand-written gradients differ from
autograd's by float rounding (≤ 1e-5 of the largest entry); after a few tens of steps the losses
agree to ≤ 1e-4 relative (rounding differences grow slowly under Adam, AdamW and SGD). Muon
orthogonalises its update in bfloat16, which turns float32 rounding differences of the gradient into
bfloat16-sized (~4e-3) differences of the update: with Muon the first steps' losses agree to 2e-2
and the final loss to 30% (the eager path itself is not more stable than that under reordering).
"""

import numpy as np
import pytest
import torch
from training_helpers import FUSED, OPTIMIZER_CASES, eager_and, needs_compiler
from training_helpers import eager_grads as _eager_grads
from training_helpers import random_target as _target
from training_helpers import sparse_net as _sparse_net

from volratio.errors import TrainingDiverged, VolratioError
from volratio.nets import CoordMLP, coords
from volratio.train import TrainConfig, train
from volratio.train.fast import FastStep

RES = 12
MIXED = "3;gaussian:2,sin:2,sigmoid:1,tanh:1,cos:1,relu:1,identity:1,cache:1"
GRAD_RTOL = 1e-5
LOSS_RTOL = 1e-4


@pytest.mark.parametrize("head", ["hsv", "grey", "rgb"])
@pytest.mark.parametrize(
    "arch", ["3;gaussian:6", "2;sin:5", "2;sigmoid:5", "2;tanh:4", "2;relu:5", MIXED, "2;identity:3"]
)
def test_gradients_match_autograd(arch, head):
    net = _sparse_net(arch, head)
    grid, flat = coords(RES), _target().reshape(-1, 3)
    losses, grads = _eager_grads(net, grid, flat)
    step = FastStep(net, grid, flat)
    fast_losses = step.losses()
    step.backward()
    assert torch.equal(fast_losses, losses)  # the same forward pass, bit for bit
    for i, (g, w) in enumerate(zip(grads, net.weights)):
        scale = g.abs().max().clamp_min(1e-30)
        assert (w.grad - g).abs().max() <= GRAD_RTOL * scale, f"kernel {i}"
        assert (w.grad[net.masks[i] == 0] == 0).all()  # masked entries get no gradient


@pytest.mark.parametrize("optimizer, extra", OPTIMIZER_CASES)
def test_losses_match_eager_for_each_optimizer(optimizer, extra):
    cfg = TrainConfig(steps=25, optimizer=optimizer, device="cpu", **extra)
    eager, fast = eager_and("fast", lambda: _sparse_net("3;gaussian:6", population=3), cfg)
    assert np.array_equal(eager.losses[0], fast.losses[0])
    if optimizer == "muon":  # bfloat16 orthogonalisation: see the module docstring
        np.testing.assert_allclose(fast.losses[:6], eager.losses[:6], rtol=2e-2)
        np.testing.assert_allclose(fast.final_loss, eager.final_loss, rtol=0.3)
    else:
        np.testing.assert_allclose(fast.losses, eager.losses, rtol=LOSS_RTOL)
    assert fast.final_loss.mean() < fast.losses[0].mean()  # it trained
    for i in range(fast.net.n_kernels):  # masks stay zero (Muon's update would fill them)
        assert (fast.net.weights[i][fast.net.masks[i] == 0] == 0).all()
    assert fast.config["path"] == "fast" and fast.net.provenance["trained"]["path"] == "fast"
    assert eager.config["path"] == "eager"


@pytest.mark.parametrize("path, rtol", [("fast", LOSS_RTOL), pytest.param("fused", 1e-3, marks=needs_compiler)])
@pytest.mark.parametrize("head", ["hsv", "grey", "rgb"])
def test_losses_match_eager_for_each_head_and_activation_mix(head, path, rtol):
    cfg = TrainConfig(steps=20, device="cpu")
    eager, other = eager_and(path, lambda: _sparse_net(MIXED, head), cfg)
    np.testing.assert_allclose(other.losses, eager.losses, rtol=rtol)


@pytest.mark.parametrize("path", ["fast", FUSED])
def test_hand_written_paths_are_bit_for_bit_repeatable(path):
    cfg = TrainConfig(steps=15, optimizer="muon", grad_norm=True, device="cpu", path=path)
    a = train(_sparse_net(MIXED, population=3), _target(), cfg)
    b = train(_sparse_net(MIXED, population=3), _target(), cfg)
    assert np.array_equal(a.losses, b.losses)
    for wa, wb in zip(a.net.weights, b.net.weights):
        assert torch.equal(wa, wb)


@pytest.mark.parametrize("path, rtol", [("fast", LOSS_RTOL), pytest.param("fused", 1e-6, marks=needs_compiler)])
def test_population_members_are_independent(path, rtol):
    """Each member of a population trained on its own target ends where it ends when trained
    alone; changing one member's target leaves the others bit for bit unchanged (both hand-written
    paths: the fast step and the fused kernel)."""
    cfg = TrainConfig(steps=15, device="cpu", path=path)
    targets = torch.stack([_target(seed=s) for s in range(3)])  # (3, res, res, 3)
    pop = train(CoordMLP("3;gaussian:6", population=3, seed=4), targets, cfg)
    other = targets.clone()
    other[0] = _target(seed=99)
    pop2 = train(CoordMLP("3;gaussian:6", population=3, seed=4), other, cfg)
    assert not np.array_equal(pop.losses[:, 0], pop2.losses[:, 0])
    assert np.array_equal(pop.losses[:, 1:], pop2.losses[:, 1:])
    for k in range(3):
        alone = train(CoordMLP("3;gaussian:6", population=3, seed=4).select(k), targets[k], cfg)
        np.testing.assert_allclose(alone.losses[:, 0], pop.losses[:, k], rtol=rtol)


@pytest.mark.parametrize("fast_path", ["fast", FUSED])
def test_divergence_restores_the_last_good_weights(fast_path):
    # identity units: the absurd first step overflows the output to ±Inf, the loss is NaN/Inf
    steps = {}
    for path in ("eager", fast_path):
        net = CoordMLP("3;identity:6", head="grey", population=2, seed=0)
        cfg = TrainConfig(steps=50, optimizer="sgd", lr=3e38, momentum=0.0, device="cpu", path=path)
        with pytest.raises(TrainingDiverged) as info:
            train(net, _target(), cfg)
        err = info.value
        steps[path] = err.step
        for i, w in enumerate(net.weights):
            good = err.state[f"weight{i}"]
            assert torch.isfinite(good).all() and torch.equal(w.detach(), good)
    assert steps[fast_path] == steps["eager"] >= 1


def test_unknown_path_is_refused():
    with pytest.raises(VolratioError, match="path"):
        train(CoordMLP("2;gaussian:3"), _target(), TrainConfig(steps=1, device="cpu", path="compiled"))
