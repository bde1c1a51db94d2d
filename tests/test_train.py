import pytest
import torch

from volratio.data.targets import get_target
from volratio.errors import ImageError, TrainingDiverged, VolratioError
from volratio.nets import CoordMLP
from volratio.train import TrainConfig, train


@pytest.fixture(scope="module")
def target():
    return get_target("planted:1").image(16)


def _masked_net(seed=0, K=2):
    net = CoordMLP("3;gaussian:6", head="grey", population=K, seed=seed)
    m = torch.ones(6, 6)
    m[:3, :3] = 0
    net.set_mask(1, m)
    return net


@pytest.mark.parametrize("opt", ["adam", "adamw", "sgd", "muon"])
def test_training_lowers_loss_and_keeps_masks(target, opt):
    net = _masked_net()
    r = train(net, target, TrainConfig(steps=60, optimizer=opt, lr=0.01 if opt != "sgd" else 0.1, weight_decay=0.01))
    assert (r.final_loss < r.losses[0]).all()
    assert net.weights[1][:, :3, :3].eq(0).all()  # masked weights stay exactly zero
    assert r.losses.shape == (61, 2)


def test_same_seed_same_weights_bit_for_bit(target):
    a, b = _masked_net(seed=4), _masked_net(seed=4)
    for net in (a, b):
        train(net, target, TrainConfig(steps=25, optimizer="muon"))
    assert all(torch.equal(x, y) for x, y in zip(a.weights, b.weights))
    c = _masked_net(seed=5)
    train(c, target, TrainConfig(steps=25, optimizer="muon"))
    assert not torch.equal(a.weights[1], c.weights[1])


def test_population_members_train_independently(target):
    pop = _masked_net(seed=2, K=3)
    solo = pop.select(1)
    train(pop, target, TrainConfig(steps=20, grad_norm=True))
    train(solo, target, TrainConfig(steps=20, grad_norm=True))
    for w_pop, w_solo in zip(pop.weights, solo.weights):
        assert torch.allclose(w_pop[1], w_solo[0], atol=1e-6)


def test_grad_norm_gives_unit_gradients(target):
    from volratio.nets import coords
    from volratio.train import _normalise_per_network, mse_per_network

    net = _masked_net(K=3)
    mse_per_network(net, coords(16), target.reshape(-1, 3)).sum().backward()
    _normalise_per_network(net)
    sq = sum((w.grad.reshape(3, -1) ** 2).sum(1) for w in net.weights)
    assert torch.allclose(sq, torch.ones(3), atol=1e-6)


def test_nan_stops_with_step_and_last_good_state(target):
    # a finite but absurd step (an infinite lr is refused by TrainConfig): sin of an overflowed
    # pre-activation is NaN at step 1
    net = CoordMLP("3;sin:6", head="grey", population=2, seed=0)
    with pytest.raises(TrainingDiverged) as info:
        train(net, target, TrainConfig(steps=50, optimizer="sgd", lr=3e38, momentum=0.0))
    err = info.value
    assert err.step >= 1 and "step" in str(err)
    restored = [w.detach() for w in net.weights]
    assert all(torch.isfinite(w).all() for w in restored)
    assert all(torch.equal(restored[i], err.state[f"weight{i}"]) for i in range(len(restored)))


def test_bad_targets_are_refused():
    net = CoordMLP("2;gaussian:4", head="grey")
    with pytest.raises(ImageError, match="expected \\(H, W, 3\\)"):
        train(net, torch.zeros(8, 8), TrainConfig(steps=1))
    with pytest.raises(ImageError, match="square"):
        train(net, torch.zeros(8, 6, 3), TrainConfig(steps=1))
    with pytest.raises(ImageError, match="values in"):
        train(net, torch.full((8, 8, 3), 2.0), TrainConfig(steps=1))
    with pytest.raises(ImageError, match="dtype"):
        train(net, torch.zeros(8, 8, 3, dtype=torch.uint8), TrainConfig(steps=1))
    with pytest.raises(VolratioError, match="unknown optimizer"):
        train(net, torch.zeros(8, 8, 3), TrainConfig(steps=1, optimizer="lbfgs"))
