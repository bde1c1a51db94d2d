"""The judge-free structural score on planted targets (`volratio.rho.recovery`): validated on networks
whose answer is known before it decides anything.

Each test fails under an obvious mutant of the score: the output node counted in recovery
(`test_output_node_is_not_recovered`), the one-to-one assignment replaced by each primitive's best
unit (`test_assignment_is_one_to_one`), monosemanticity computed over dead units as well
(`test_planted_dag_scores_one`: the layerized DAG has dead units), and the basin model keeping a copy
of the assignment of its own (`test_basin_calls_the_shared_assignment`).
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
import torch

import volratio.rho
from volratio.data.targets import get_target
from volratio.depth import DepthError
from volratio.errors import VolratioError
from volratio.experiments import depth_regime
from volratio.nets import CoordMLP, coords, live_unit_mask
from volratio.rho import basin, recovery
from volratio.rho.sampler import RhoError

SHALLOW = "planted:13:depth=3,width=3"  # 5 hidden primitives, none nearly identical to another
DEEP = "planted:22:depth=7,width=3"  # 17 hidden primitives, chains of nearly identical maps
CFG = recovery.RecoveryConfig(res=32)


def planted_net(spec):
    """The planted DAG itself in a masked CoordMLP (grey head)."""
    return get_target(spec).graph.layerize(ink_as_hsv=False).net


def maps_of(net, res):
    """(feature maps per layer, live mask (K, U)) of a network, as `structure` reads them."""
    feats = net.features(res)
    alive = torch.cat(live_unit_mask(net.effective_weights()), dim=1).numpy()
    return feats, alive


@pytest.mark.parametrize("spec", [SHALLOW, DEEP])
def test_planted_dag_scores_one(spec):
    net = planted_net(spec)
    alive = torch.cat(live_unit_mask(net.effective_weights()), dim=1)
    assert not alive.all()  # the layerized DAG has dead units: counting them would lower monosemanticity
    s = recovery.structure(net, spec, CFG)
    assert s.recovery == pytest.approx([1.0], abs=1e-6)
    assert s.monosemanticity.tolist() == [1.0]
    assert s.per_unit == pytest.approx([1.0], abs=1e-6)  # every live unit computes a planted node
    assert s.live.tolist() == [int(alive.sum())]
    assert "out" not in s.primitives and len(s.primitives) == len(get_target(spec).primitive_maps(8)) - 1


def test_output_node_is_not_recovered():
    """A network whose only live unit draws the output recovers no hidden primitive by it."""
    t = get_target(SHALLOW)
    prims = t.primitive_maps(32)
    feats = [prims["out"][None, :, :, None]]  # one network, one unit: the output map
    s = recovery.score_maps(feats, np.ones((1, 1), bool), prims, CFG.margin)
    C = recovery.primitive_correlations(feats, prims)[0, :, 0]  # |r| of the unit with every node
    hidden = [i for i, n in enumerate(prims) if n != "out"]
    assert s.recovery[0] == pytest.approx(C[hidden].max() / len(hidden))  # counted, the output would add 1/n
    assert s.monosemanticity[0] == 1.0  # a unit dedicated to the output node is monosemantic


def test_assignment_is_one_to_one():
    """Two correlated primitives and one unit carrying the first: the second gets no unit of its own."""
    g = coords(16, dtype=torch.float64)
    x, y = g[:, 1].reshape(16, 16), g[:, 0].reshape(16, 16)
    a, b = x, x + 0.75 * y  # |r(a, b)| = 0.8
    prims = {"a": a, "b": b, "out": (x * y).sin()}
    feats = [torch.stack([a, torch.ones(16, 16)], dim=-1)[None]]  # units: a, a constant
    s = recovery.score_maps(feats, np.ones((1, 2), bool), prims, 0.1)
    assert s.assigned[0].tolist() == pytest.approx([1.0, 0.0])  # each primitive's best unit: [1, 0.8]
    assert s.recovery[0] == pytest.approx(0.5)


def test_permuting_units_changes_nothing():
    net = CoordMLP("2;gaussian:6", head="grey", population=4, seed=3)
    perm = torch.tensor([4, 2, 0, 5, 1, 3])
    ks = [w.detach().clone() for w in net.effective_weights()]
    ks[0], ks[1] = ks[0][:, :, perm], ks[1][:, perm, :]  # layer 1's units reordered, same function
    moved = CoordMLP.from_kernels(net.arch, ks, head="grey")
    assert torch.allclose(moved.render(16), net.render(16), atol=1e-6)
    a, b = recovery.structure(net, SHALLOW, CFG), recovery.structure(moved, SHALLOW, CFG)
    assert a.recovery == pytest.approx(b.recovery, abs=1e-6)  # float32 sums in another order
    assert a.monosemanticity.tolist() == b.monosemanticity.tolist()


def test_copy_keeps_recovery_and_a_mixed_unit_lowers_monosemanticity():
    spec = SHALLOW
    net, prims = planted_net(spec), get_target(spec).primitive_maps(32)
    feats, alive = maps_of(net, 32)
    flat = torch.cat(feats, dim=-1)  # (1, res, res, U)
    base = recovery.score_maps([flat], alive, prims, CFG.margin)
    u = int(np.flatnonzero(alive[0])[0])  # a live unit carrying a primitive
    copy = recovery.score_maps([torch.cat([flat, flat[..., u : u + 1]], -1)], np.c_[alive, [[True]]], prims, CFG.margin)
    assert copy.recovery == pytest.approx(base.recovery)
    assert copy.monosemanticity.tolist() == [1.0]  # a copy carries one primitive too
    assert copy.per_unit == pytest.approx(base.per_unit)
    p, q = (prims[n] for n in ("p1_0", "p2_0"))
    assert abs(np.corrcoef(p.flatten(), q.flatten())[0, 1]) < 1 - CFG.margin  # two distinguishable primitives
    z = lambda m: (m - m.mean()) / m.std()  # noqa: E731
    mixed = (z(p) + z(q))[None, :, :, None].to(flat.dtype)
    mix = recovery.score_maps([torch.cat([flat, mixed], -1)], np.c_[alive, [[True]]], prims, CFG.margin)
    assert mix.recovery == pytest.approx(base.recovery)
    n = int(alive.sum())
    assert mix.monosemanticity[0] == pytest.approx(n / (n + 1))  # the mixed unit is not monosemantic


def test_random_units_lower_the_per_unit_reading_and_not_recovery():
    """Recovery is a maximum over assignments: units added beside the planted DAG cannot lower it.
    The per-unit reading averages over every live unit, so units that carry no primitive lower it,
    more of them lower it more, and its chance level against other targets rises with them only by
    what they carry of those targets."""
    net, prims = planted_net(SHALLOW), get_target(SHALLOW).primitive_maps(32)
    feats, alive = maps_of(net, 32)
    flat = torch.cat(feats, dim=-1)  # (1, res, res, U)
    base = recovery.score_maps([flat], alive, prims, CFG.margin)
    noise = torch.randn(1, 32, 32, 8, generator=torch.Generator().manual_seed(0), dtype=flat.dtype)
    per_unit = [base.per_unit[0]]
    for extra in (2, 4, 8):
        s = recovery.score_maps([torch.cat([flat, noise[..., :extra]], -1)], np.c_[alive, np.ones((1, extra), bool)],
                                prims, CFG.margin)  # fmt: skip
        assert s.recovery[0] >= base.recovery[0] - 1e-9
        assert s.live.tolist() == [int(alive.sum()) + extra]
        per_unit.append(s.per_unit[0])
    assert per_unit[0] == pytest.approx(1.0) and all(a > b for a, b in zip(per_unit, per_unit[1:]))
    assert per_unit[-1] < 0.8


def test_above_chance_is_the_score_minus_the_other_targets_level():
    net = planted_net(SHALLOW)
    s, c = recovery.structure(net, SHALLOW, CFG), recovery.chance(net, SHALLOW, CFG)
    above = recovery.above_chance(s, c)
    assert above["recovery"] == pytest.approx(s.recovery - c.recovery_other)
    assert above["per_unit"] == pytest.approx(s.per_unit - c.per_unit_other)
    assert (above["recovery"] > 0.2).all() and (above["per_unit"] > 0.2).all()  # the DAG recovers its own target
    assert np.isfinite(c.per_unit_init).all() and (c.per_unit_init < s.per_unit).all()


def test_initialisation_scores_near_chance():
    net = CoordMLP("3;gaussian:1,sigmoid:1,sin:1", head="grey", population=32, seed=5)
    s, c = recovery.structure(net, SHALLOW, CFG), recovery.chance(net, SHALLOW, CFG)
    assert abs(s.recovery.mean() - c.recovery_other.mean()) < 0.1
    assert abs(s.monosemanticity.mean() - c.monosemanticity_other.mean()) < 0.1
    assert s.recovery.mean() < 0.9  # far from the planted DAG's 1
    trained_like = recovery.structure(planted_net(SHALLOW), SHALLOW, CFG).recovery.mean()
    assert trained_like - c.recovery_other.mean() > 0.2


def test_chance_levels_are_seeded_and_use_same_sized_targets():
    t = get_target(DEEP)
    ctl = recovery.control_targets(t, 3, seed=1)
    assert len({c.seed for c in ctl} | {t.seed}) == 4
    assert all(c.layer_sizes() == t.layer_sizes() and c.depth == t.depth for c in ctl)
    assert [c.seed for c in recovery.control_targets(t, 3, seed=1)] == [c.seed for c in ctl]
    net = CoordMLP("2;gaussian:4", head="grey", population=2, seed=0)
    a, b = recovery.chance(net, SHALLOW, CFG), recovery.chance(net, SHALLOW, CFG)
    assert a.recovery_other.tolist() == b.recovery_other.tolist()
    init = recovery.at_initialisation(net, seed=7)
    assert all(torch.equal(m, n) for m, n in zip(init.masks, net.masks))
    assert not torch.equal(init.weights[0], net.weights[0])


def test_bad_input_is_a_clear_error():
    net = CoordMLP("2;gaussian:4", head="grey", population=1)
    with pytest.raises(RhoError, match="planted target"):
        recovery.structure(net, "picbreeder:skull", CFG)
    with pytest.raises(RhoError, match="no hidden primitive"):
        recovery.structure(net, "planted:0:depth=1,width=3", CFG)
    with pytest.raises(VolratioError, match="margin"):
        recovery.RecoveryConfig(margin=0.0)


def test_basin_calls_the_shared_assignment(monkeypatch):
    calls = []
    shared = recovery.assigned_correlations

    def spy(C):
        calls.append(shared(C))
        return calls[-1]

    monkeypatch.setattr(recovery, "assigned_correlations", spy)
    cfg = basin.BasinConfig.quick(population=2, steps=3, res=8, device="cpu")
    row = basin.basin_cell("planted:0:depth=2,width=3", 2, 2, cfg)
    assert len(calls) == 1 and row["primitive_corr"] == calls[0].tolist()
    assert volratio.rho.assigned_correlations is shared and not hasattr(basin, "assigned_correlations")


def test_dead_units_carry_nothing():
    """A unit that draws a primitive but cannot reach the output (dead) recovers nothing."""
    net, prims = planted_net(SHALLOW), get_target(SHALLOW).primitive_maps(32)
    feats, alive = maps_of(net, 32)
    u = int(np.flatnonzero(alive[0])[0])
    cut = alive.copy()
    cut[0, u] = False  # the same maps, one unit's outgoing weights gone
    s = recovery.score_maps(feats, cut, prims, CFG.margin)
    assert s.recovery[0] < 1.0 - 1e-3 and s.live.tolist() == [int(alive.sum()) - 1]
    assert s.monosemanticity.tolist() == [1.0]


# ---------------------------------------------------------------------------------------------
# The stored depth networks under the score (volratio.experiments.depth_regime)

STORED = "planted:11:depth=2,width=3"  # a planted target of the stored chunk depth_sparse_planted


def test_recovery_curves_score_the_stored_networks_in_the_emc2_curves_order():
    rec = depth_regime.recovery_curves(targets=[STORED], cfg=CFG, keep=False)  # the store keeps the book's config only
    emc2 = depth_regime.stored_curves(("depth_sparse_planted",))[STORED]
    c = rec[STORED]
    assert list(rec) == [STORED] and c.depths == emc2.depths and c.score.shape == emc2.score.shape
    d, k = c.depths[1], 2  # one stored network, scored alone
    net = depth_regime.stored_network(STORED, d, k, names=("depth_sparse_planted",))
    one = recovery.structure(net, STORED, CFG)
    assert c.score[1, k] == pytest.approx(one.recovery[0]) and c.monosemanticity[1, k] == one.monosemanticity[0]
    assert np.isfinite(c.chance_other).all() and np.isfinite(c.chance_init).all() and c.collapsed == 0


def test_rank_agreement_and_offset_means():
    x = np.arange(12.0).reshape(3, 4)
    a = {"t": SimpleNamespace(depths=[2, 3, 4], score=x)}
    same = depth_regime.rank_agreement(a, {"t": SimpleNamespace(depths=[2, 3, 4], score=x**2)}, n_boot=200)
    assert same["rho"] == pytest.approx(1.0) and same["n"] == 12 and same["lo"] <= 1.0
    flip = depth_regime.rank_agreement(a, {"t": SimpleNamespace(depths=[2, 3, 4], score=-x)}, n_boot=200)
    assert flip["rho"] == pytest.approx(-1.0)
    with pytest.raises(DepthError, match="networks in one curve"):
        depth_regime.rank_agreement(a, {"t": SimpleNamespace(depths=[2, 3, 4], score=x[:, :2])})
    by = depth_regime.offset_means(a, {"t": 3})
    assert by.index.tolist() == [-1, 0, 1] and by["t"].tolist() == pytest.approx(x.mean(axis=1).tolist())


def test_disagreements_pick_the_networks_two_scores_rank_furthest_apart():
    a = {"t": SimpleNamespace(depths=[2, 3], score=np.array([[0.1, 0.2, 0.9], [0.4, 0.5, 0.6]]))}
    b = {"t": SimpleNamespace(depths=[2, 3], score=np.array([[0.8, 0.3, 0.1], [0.4, 0.5, 0.6]]))}
    d = depth_regime.disagreements(a, b, n=1)
    assert (d.depth.tolist(), d.column.tolist()) == (
        [2, 2],
        [2, 0],
    )  # a ranks (2, 2) far above b; b ranks (2, 0) above a
    assert d.gap.iloc[0] > 0 > d.gap.iloc[1]
    with pytest.raises(depth_regime.DepthError, match="need at least 8"):
        depth_regime.disagreements(a, b, n=4)
