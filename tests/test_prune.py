"""Pruning: exact sparsity, no resurrection, SP on planted duplicates, Wanda and LLM-Pruner against
references computed by hand, IMP rewinding, matched random units, and clear errors."""

import dataclasses
import json

import numpy as np
import pytest
import torch
from training_helpers import smooth_image

from volratio import prune as P
from volratio.errors import VolratioError
from volratio.nets import CoordMLP, coords
from volratio.train import TrainConfig, train

RES = 8
ARCH = "3;gaussian:4,sin:2"  # 3 hidden layers of 6 units: 4·6 + 6·6 + 6·6 + 6·3 = 114 weights


@pytest.fixture(scope="module")
def dense():
    net = CoordMLP(ARCH, population=2, seed=1)
    train(net, smooth_image(RES), TrainConfig(steps=30))
    return net


def fresh(dense):
    return dense.select([0, 1])


def n_weights(net):
    return sum(w[0].numel() for w in net.weights)


WEIGHT_METHODS = [
    ("magnitude", dict(scope="global", retrain_steps=3)),
    ("magnitude", dict(scope="layer", retrain_steps=3)),
    ("magnitude", dict(schedule="geometric", steps=3, retrain_steps=2)),
    ("wanda", dict()),
    ("random", dict(retrain_steps=3, seed=4)),
    ("imp", dict(train_steps=4, rewind_step=1)),
]


@pytest.mark.parametrize("method,opts", WEIGHT_METHODS)
@pytest.mark.parametrize("s", [0.3, 0.55])
def test_weight_methods_reach_sparsity_exactly(dense, method, opts, s):
    net = fresh(dense)
    res = P.prune(net, smooth_image(RES), method, sparsity=s, **opts)
    want = n_weights(net) - round(s * n_weights(net))
    masked = [int(sum(m[k].sum() for m in net.masks)) for k in range(2)]
    assert all(abs(m - want) <= 1 for m in masked), (masked, want)
    # non-zero weights never exceed the mask (and equal it unless a weight is exactly 0)
    assert all(nz <= m for nz, m in zip(net.nonzero(), masked))
    assert np.allclose(res.history[-1]["sparsity"], 1 - np.array(masked) / n_weights(net))


@pytest.mark.parametrize("method", ["magnitude", "wanda", "imp", "llm-pruner"])
def test_one_sparsity_per_member(dense, method):
    net = fresh(dense)
    opts = {"imp": dict(train_steps=3)}.get(method, dict(retrain_steps=0) if method != "wanda" else {})
    P.prune(net, smooth_image(RES), method, sparsity=[0.25, 0.5], **opts)
    if method == "llm-pruner":
        assert [net.depth * net.width - sum(r) for r in net.live_units()] == [round(0.25 * 18), round(0.5 * 18)]
    else:
        assert [int(sum(m[k].sum() for m in net.masks)) for k in range(2)] == [114 - round(0.25 * 114), 114 - 57]
    with pytest.raises(P.PruneError, match="population of 2"):
        P.prune(fresh(dense), smooth_image(RES), method, sparsity=[0.1, 0.2, 0.3], **opts)


def test_sparsity_respects_a_previous_mask(dense):
    net = fresh(dense)
    P.prune(net, smooth_image(RES), "random", sparsity=0.2, retrain_steps=0, seed=1)
    before = [m.clone() for m in net.masks]
    P.prune(net, smooth_image(RES), "magnitude", sparsity=0.5, retrain_steps=0)
    for b, m in zip(before, net.masks):
        assert torch.all(m <= b)  # nothing re-admitted
    assert sum(int(m[0].sum()) for m in net.masks) == n_weights(net) - round(0.5 * n_weights(net))


@pytest.mark.parametrize(
    "method,opts",
    [
        ("llm-pruner", dict(variant="first")),
        ("llm-pruner", dict(variant="param_mix", n_batches=4)),
        ("llm-pruner", dict(scope="global")),
        ("random-units", dict(seed=2)),
    ],
)
def test_unit_methods_reach_unit_sparsity_exactly(dense, method, opts):
    net = fresh(dense)
    P.prune(net, smooth_image(RES), method, sparsity=0.5, retrain_steps=2, **opts)
    L, W = net.depth, net.width
    for row in net.live_units():
        assert L * W - sum(row) == round(0.5 * L * W)
        assert min(row) >= 1


@pytest.mark.parametrize(
    "method,opts",
    [
        ("sp", dict(tau=0.5, rounds=2, retrain_steps=15)),
        ("magnitude", dict(sparsity=0.6, retrain_steps=15)),
        ("llm-pruner", dict(sparsity=0.4, retrain_steps=15)),
        ("imp", dict(sparsity=0.5, train_steps=8, rewind_step=2)),
    ],
)
@pytest.mark.parametrize("optimizer", ["adam", "muon"])
def test_retraining_never_resurrects_a_pruned_weight(dense, method, opts, optimizer):
    net = fresh(dense)
    res = P.prune(net, smooth_image(RES), method, train=TrainConfig(optimizer=optimizer, lr=3e-2), **opts)
    assert any(int((m == 0).sum()) > 0 for m in net.masks)
    for w, m in zip(net.weights, net.masks):
        assert torch.all(w[m == 0] == 0)
    # once masked, always masked: the mask only shrinks over the rounds
    assert all(a >= b for a, b in zip(res.history[0]["nonzero"], res.history[-1]["nonzero"]))


# ---------------------------------------------------------------------------------------------
# SP on planted duplicates


def planted(seed=0, negate=False):
    """Depth 2, width 8, sin units. Layer 0: unit 6 copies unit 1, unit 7 copies unit 3 (negated
    when `negate`); layer 1: unit 5 copies unit 2. All other units distinct."""
    g = torch.Generator().manual_seed(seed)
    k0 = torch.randn(4, 8, generator=g) * 1.5
    k0[:, 6] = k0[:, 1]
    k0[:, 7] = -k0[:, 3] if negate else k0[:, 3]
    k1 = torch.randn(8, 8, generator=g)
    k1[:, 5] = k1[:, 2]
    k2 = torch.randn(8, 3, generator=g)
    return CoordMLP.from_kernels("2;sin:8", [k0, k1, k2], head="hsv")


def removed_units(net):
    return [set(torch.nonzero(~a[0]).flatten().tolist()) for a in P.unit_alive(net.masks)]


@pytest.mark.parametrize("seed", range(6))
def test_sp_removes_exactly_one_of_each_duplicate_pair(seed):
    net = planted(seed=100 + seed)
    cfg = P.SPConfig(tau=0.999, centred=True, rounds=1, retrain_steps=0, seed=seed)
    # precondition: the only pairs above τ are the planted ones
    feats = P.feature_maps(net, coords(16))
    pairs = [{(i, j) for i, j, _ in P.redundant_pairs(P.similarity(f[0], True), cfg.tau)} for f in feats]
    assert pairs == [{(1, 6), (3, 7)}, {(2, 5)}]
    P.sp(net, smooth_image(16), cfg)
    gone = removed_units(net)
    assert len(gone[0]) == 2 and len(gone[0] & {1, 6}) == 1 and len(gone[0] & {3, 7}) == 1
    assert len(gone[1]) == 1 and gone[1] <= {2, 5}


def test_sp_choice_within_a_pair_is_random_and_seeded():
    choices = set()
    for seed in range(8):
        net = planted(seed=100)
        P.sp(net, smooth_image(16), P.SPConfig(tau=0.999, centred=True, rounds=1, retrain_steps=0, seed=seed))
        choices.add(tuple(sorted(removed_units(net)[0])))
    assert len(choices) > 1  # both members of a pair get picked for some seed
    a, b = planted(100), planted(100)
    for n in (a, b):
        P.sp(n, smooth_image(16), P.SPConfig(tau=0.999, centred=True, rounds=1, retrain_steps=0, seed=3))
    assert all(torch.equal(x, y) for x, y in zip(a.masks, b.masks))


def test_sp_sign_handling():
    net = planted(seed=101, negate=True)
    P.sp(net, smooth_image(16), P.SPConfig(tau=0.999, centred=True, rounds=1, retrain_steps=0))
    assert not removed_units(net)[0] & {3, 7}  # a negated copy is not similar ...
    net = planted(seed=101, negate=True)
    P.sp(net, smooth_image(16), P.SPConfig(tau=0.999, centred=True, opposite_sign=True, rounds=1, retrain_steps=0))
    assert len(removed_units(net)[0] & {3, 7}) == 1  # ... unless opposite signs count


def test_sp_stops_when_nothing_is_redundant_and_at_target_size(dense):
    net = fresh(dense)
    res = P.sp(net, smooth_image(RES), P.SPConfig(tau=1.0, rounds=5, retrain_steps=0))
    assert res.extras["stop"] == ["no redundant pair"] * 2 and len(res.history) == 1
    net = fresh(dense)
    cfg = P.SPConfig(tau=0.0, opposite_sign=True, rounds=10, retrain_steps=2, target_units=9, loss_factor=None)
    res = P.sp(net, smooth_image(RES), cfg)  # no guard: this test is about the size target
    assert [sum(r) for r in net.live_units()] == [9, 9]
    assert res.extras["stop"] == ["target size"] * 2


def test_sp_max_loss_undoes_the_round(dense):
    net = fresh(dense)
    before = [m.clone() for m in net.masks]
    res = P.sp(net, smooth_image(RES), P.SPConfig(tau=0.0, opposite_sign=True, rounds=3, retrain_steps=0, max_loss=0.0))
    assert all(torch.equal(a, b) for a, b in zip(before, net.masks))
    assert res.extras["stop"] == ["loss above max_loss (round undone)"] * 2


# ---------------------------------------------------------------------------------------------
# Wanda and LLM-Pruner against references


def test_wanda_matches_brute_force(dense):
    net = fresh(dense)
    ref = fresh(dense).to("cpu")  # the reference runs on CPU whatever device training used
    s = 0.5  # every fan-in (4 or 6) × 0.5 is an integer: every output unit loses exactly half
    P.prune(net, smooth_image(RES), "wanda", sparsity=s)
    grid = coords(RES).double()
    masks = [m.clone().double() for m in ref.masks]
    W = [w.detach().double() for w in ref.weights]
    for i in range(len(W)):  # layer by layer, each seeing the already-pruned layers below
        h = grid.expand(2, -1, -1)
        for l in range(i):
            h = ref.activate(h @ (W[l] * masks[l]))
        for k in range(2):
            X = h[k].numpy()  # (P, fan_in)
            fan_in, fan_out = W[i][k].shape
            for j in range(fan_out):
                score = [
                    abs(float(W[i][k, a, j])) * np.sqrt(sum(X[p, a] ** 2 for p in range(X.shape[0])))
                    for a in range(fan_in)
                ]
                ranked = sorted(range(fan_in), key=lambda a: score[a])
                for a in ranked[: int(s * fan_in)]:
                    masks[i][k, a, j] = 0
    for got, want in zip(net.masks, masks):
        assert torch.equal(got.cpu().double(), want)


def test_wanda_scores_are_weight_times_input_norm(dense):
    net = fresh(dense)
    calib = P.CalibrationGrid.from_image(smooth_image(RES), net)
    sc = P.Wanda().scores(net, calib)
    _, feats = net(calib.grid, return_features=True)
    expect = net.weights[2].detach().abs() * feats[1].norm(dim=1)[:, :, None]
    assert torch.allclose(sc[2], expect)


def _tiny_linear():
    """2 hidden identity layers of 2 units, grey head; the output stays inside (0, 1)."""
    k0 = torch.tensor([[0.10, -0.05], [0.05, 0.08], [-0.04, 0.03], [0.60, 0.40]])
    k1 = torch.tensor([[0.7, 0.2], [0.3, 0.9]])
    k2 = torch.tensor([[0.5], [0.6]])
    return CoordMLP.from_kernels("2;identity:2", [k0, k1, k2], head="grey", dtype=torch.float64)


def _hand_grads(ks, X, T):
    """Gradients of mean over pixels and channels of (o − t)² for o = X K0 K1 K2, by the chain rule."""
    h0 = X @ ks[0]
    h1 = h0 @ ks[1]
    o = (h1 @ ks[2])[:, 0]
    e = (2.0 / (3 * len(o))) * (o[:, None] - T).sum(1)  # dL/do, (P,)
    g2 = h1.T @ e[:, None]
    d1 = e[:, None] @ ks[2].T
    g1 = h0.T @ d1
    d0 = d1 @ ks[1].T
    g0 = X.T @ d0
    return [g0, g1, g2]


def test_llm_pruner_group_importance_by_hand():
    net = _tiny_linear()
    img = smooth_image(6).double()
    X, T = coords(6, dtype=torch.float64).numpy(), img.reshape(-1, 3).numpy()
    ks = [w[0].detach().numpy() for w in net.weights]
    out = net(torch.as_tensor(X))[0, :, 0].detach()
    assert float(out.min()) > 0 and float(out.max()) < 1  # abs/clamp of the grey head are inactive
    g = _hand_grads(ks, X, T)
    first = [np.abs(k * gi) for k, gi in zip(ks, g)]
    want = [first[l].sum(0) + first[l + 1].sum(1) for l in range(2)]
    calib = P.CalibrationGrid.from_image(img, net)
    got = P.Taylor("first").scores(net, calib)
    for l in range(2):
        np.testing.assert_allclose(got[l][0].numpy(), want[l], rtol=1e-10)
    # param_mix with two interleaved batches: F = mean of squared per-batch gradients
    nb = 2
    fisher = [np.zeros_like(k) for k in ks]
    for b in range(nb):
        gb = _hand_grads(ks, X[b::nb], T[b::nb])
        fisher = [f + x * x / nb for f, x in zip(fisher, gb)]
    mix = [np.abs(k * gi - 0.5 * k * k * f) for k, gi, f in zip(ks, g, fisher)]
    want = [mix[l].sum(0) + mix[l + 1].sum(1) for l in range(2)]
    got = P.Taylor("param_mix", n_batches=nb).scores(net, calib)
    for l in range(2):
        np.testing.assert_allclose(got[l][0].numpy(), want[l], rtol=1e-10)


# ---------------------------------------------------------------------------------------------
# IMP and matched random units


@pytest.mark.parametrize("k", [0, 3])
def test_imp_rewinds_survivors_to_step_k(k):
    net = CoordMLP(ARCH, population=2, seed=5)
    ref = net.select([0, 1])
    tc = TrainConfig(steps=0, lr=1e-2)
    res = P.imp(net, smooth_image(RES), P.IMPConfig(sparsity=0.5, rate=0.2, rewind_step=k, train_steps=6, train=tc))
    train(ref, smooth_image(RES), TrainConfig(**{**tc.__dict__, "steps": k}))  # θ_k on its own
    assert len(res.extras["levels"]) == 4  # 0.8^3 > 0.5 ≥ 0.8^4
    for w_rewound, w_k, m in zip(res.extras["rewound"], ref.weights, net.masks):
        assert torch.equal(w_rewound, w_k.detach() * m)
    # and the survivors were then trained away from θ_k
    assert not all(torch.equal(w.detach(), r) for w, r in zip(net.weights, res.extras["rewound"]))


def test_random_units_match_reproduces_live_units(dense):
    a = fresh(dense)
    P.prune(a, smooth_image(RES), "llm-pruner", sparsity=0.4, scope="global", retrain_steps=0)
    b = CoordMLP(ARCH, population=2, seed=9)
    P.prune(b, smooth_image(RES), "random-units", match=a, retrain_steps=2, seed=1)
    assert b.live_units() == a.live_units()
    assert not all(torch.equal(x, y) for x, y in zip(a.masks, b.masks))  # which units: random
    c = CoordMLP(ARCH, population=2, seed=9)
    P.prune(c, smooth_image(RES), "random-units", match=a.select(1), retrain_steps=0)  # one member broadcast
    assert c.live_units() == [a.live_units()[1]] * 2
    with pytest.raises(P.PruneError, match="members"):
        P.prune(CoordMLP(ARCH, population=3), smooth_image(RES), "random-units", match=a)


# ---------------------------------------------------------------------------------------------
# Errors, accounting, command line


@pytest.mark.parametrize("s", [-0.1, 1.0, 1.5, float("nan")])
def test_bad_sparsity(dense, s):
    with pytest.raises(P.PruneError, match=r"\[0, 1\)"):
        P.prune(fresh(dense), smooth_image(RES), "magnitude", sparsity=s)


def test_layer_pruned_empty(dense):
    net = fresh(dense)
    with torch.no_grad():
        net.weights[0].mul_(1e-6)  # global magnitude would take the whole first kernel first
    with pytest.raises(P.PruneError, match="kernel 0"):
        P.prune(net, smooth_image(RES), "magnitude", sparsity=0.3, retrain_steps=0)
    with pytest.raises(P.PruneError, match="hidden layer"):
        P.prune(fresh(dense), smooth_image(RES), "llm-pruner", sparsity=0.9, scope="global", retrain_steps=0)


def test_masks_without_a_path_from_input_to_output():
    """Every kernel keeps a connection, but they do not line up: the image would be constant, so
    pruning refuses it, and EMC2 refuses to score such a network with a clear error."""
    from volratio.emc2 import PerturbationEngine, PerturbationError
    from volratio.prune.masks import check_not_empty

    net = CoordMLP("2;gaussian:3", head="hsv", seed=0)
    m = [torch.zeros_like(w) for w in net.masks]
    m[0][0, 0, 0] = 1  # input 0 → unit 0 of layer 0
    m[1][0, 1, 2] = 1  # unit 1 (not fed) → unit 2 of layer 1
    m[2][0, 2, 0] = 1  # unit 2 → output 0
    with pytest.raises(P.PruneError, match="no path of connections from the input to the output"):
        check_not_empty(m)
    m[1][0, 0, 2] = 1  # now unit 0 → unit 2 closes the path
    check_not_empty(m)
    m[1][0, 0, 2] = 0
    m[1][0, 1, 2] = 0
    m[1][0, 1, 0] = 1  # layer 1's only fed unit (0) does not reach the output (fed by unit 2 only)
    with torch.no_grad():
        for mask, new in zip(net.masks, m):
            mask.copy_(new)
    with pytest.raises(PerturbationError, match="no unit of hidden layer 0 lies on a path to the output"):
        PerturbationEngine(net, 8)


def test_nan_activations(dense):
    net = fresh(dense)
    with torch.no_grad():
        net.weights[1][0, 0, 0] = float("nan")
    for method, opts in [("sp", {}), ("wanda", {"sparsity": 0.5})]:
        with pytest.raises(P.PruneError, match="NaN"):
            P.prune(net.select([0, 1]), smooth_image(RES), method, **opts)


def test_unknown_method_and_option(dense):
    with pytest.raises(P.PruneError, match="unknown pruning method"):
        P.prune(fresh(dense), smooth_image(RES), "obd")
    with pytest.raises(P.PruneError, match="no option"):
        P.prune(fresh(dense), smooth_image(RES), "sp", sparsity=0.5)


def test_sparsity_report_and_apportion(dense):
    net = fresh(dense)
    P.prune(net, smooth_image(RES), "llm-pruner", sparsity=0.5, retrain_steps=0)
    rep = P.sparsity_report(net)
    m = rep["members"][0]
    assert m["nonzero"] == net.nonzero()[0] == sum(m["nonzero_per_kernel"])
    assert m["live_units"] == net.live_units()[0] and m["unit_sparsity"] == 0.5
    a = P.apportion([1.5, 1.5, 1.0], [0, 2, 0], [3, 3, 3], 4)
    assert a.sum() == 4 and a[1] >= 2 and list(a) == [1, 2, 1]


def test_cli_prune(tmp_path, dense, capsys):
    from volratio.cli import main

    src = tmp_path / "dense.safetensors"
    dense.select(0).save(src)
    out = tmp_path / "pruned.safetensors"
    rc = main(
        [
            "prune",
            str(src),
            "--target",
            "planted:1",
            "--method",
            "magnitude",
            "--sparsity",
            "0.5",
            "--steps",
            "2",
            "--res",
            "8",
            "--out",
            str(out),
            "--json",
            "--device",
            "cpu",
        ]
    )
    assert rc == 0
    s = json.loads(capsys.readouterr().out)
    assert s["method"] == "magnitude" and s["nonzero"][0] == 114 - 57
    assert CoordMLP.load(out).nonzero() == [57]
    rc = main(
        [
            "prune",
            str(src),
            "--target",
            "planted:1",
            "--method",
            "random-units",
            "--match",
            str(out),
            "--steps",
            "0",
            "--res",
            "8",
            "--out",
            str(tmp_path / "r.safetensors"),
        ]
    )
    assert rc == 0 and "random-units: sparsity" in capsys.readouterr().out
    assert main(["prune", str(src), "--target", "planted:1", "--method", "wanda", "--out", str(out)]) == 2
    assert "--sparsity" in capsys.readouterr().err


def test_the_verdict_sets_recipe_matches_every_baseline_to_sps_global_sparsity(picbreeder_dir):
    """`volratio.calibration.trained_set`: the weight methods mask exactly SP's fraction of the weights,
    network by network, and random-units keeps SP's live units per layer."""
    from volratio.calibration import trained_set as T
    from volratio.prune.masks import weight_sparsity

    cfg = T.StudyConfig(
        targets=("skull",), seeds=2, arch="3;gaussian:6", res=8, dense_steps=5, retrain_steps=2, imp_steps=3,
        imp_rewind=1, sp=P.SPConfig(tau=0.3, opposite_sign=True, rounds=1, retrain_steps=2, loss_factor=None),
    )  # fmt: skip
    nets = T.networks(cfg)
    assert list(nets) == ["dense", "sp", *P.BASELINES]
    sp = weight_sparsity(nets["sp"].masks)
    assert all(s > 0 for s in sp)  # τ = 0.3 always finds pairs
    for m in ("imp", "wanda", "magnitude", "random"):
        assert [abs(a - b) < 1e-12 for a, b in zip(weight_sparsity(nets[m].masks), sp)] == [True, True], m
    assert nets["random-units"].live_units() == nets["sp"].live_units()
    with pytest.raises(VolratioError, match="imp could not prune: rewind_step"):
        T.networks(dataclasses.replace(cfg, imp_steps=1, imp_rewind=5, methods=("imp",)))
