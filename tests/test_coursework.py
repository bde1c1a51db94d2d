"""volratio.coursework: every checker accepts the reference answer and rejects typical wrong ones
with a message that names the problem, and a failed check raises `CheckFailed` with that message.
Then the chapters' exercise sections and the notebooks derived from them (tools/derive_notebooks.py):
up to date, graded, without solutions, polite when unanswered, and passing every check with the
chapters' reference solutions inserted."""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import numpy as np
import pytest
import torch

from volratio import coursework as cw
from volratio.nets import CoordMLP
from volratio.rho.boolean import get_boolean_target
from volratio.util.device import generator

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """The networks here are tiny; on a busy 2-core machine one torch thread is many times faster.
    Restored afterwards so other test modules see the default."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


def _fails(check, *words):
    assert isinstance(check, cw.Check)
    assert not check.ok, check
    assert not bool(check)
    for w in words:
        assert w.lower() in check.message.lower(), check
    assert repr(check).startswith("[FAIL]")


def _passes(check):
    assert check.ok, check
    assert repr(check).startswith("[PASS]")


# ---------------------------------------------------------------------------------------------
# The result object and unanswered placeholders


def test_check_object_and_placeholders():
    c = cw.welch.check_welch_bound.verdict(..., 6, 3)
    _fails(c, "not answered")
    _fails(cw.welch.check_welch_bound.verdict(None, 6, 3), "not answered")
    _fails(cw.welch.check_welch_bound.verdict("0.2", 6, 3), "number")
    _fails(cw.welch.check_welch_bound.verdict(np.array([0.2, 0.3]), 6, 3), "one number")
    _fails(cw.welch.check_welch_bound.verdict(float("nan"), 6, 3), "finite")
    ok = cw.welch.check_welch_bound.verdict(torch.tensor(0.2), 6, 3)
    _passes(ok)
    assert ok.expected == pytest.approx(0.2) and ok.got == pytest.approx(0.2)


def test_failed_check_raises_with_its_message():
    """The check cells call the checker itself: a pass returns the Check, a failure raises
    CheckFailed (so a wrong reference solution stops the book build) whose message is the verdict,
    shown in Jupyter as that one line instead of a traceback."""
    ok = cw.welch.check_welch_bound(0.2, 6, 3)
    _passes(ok)
    with pytest.raises(cw.CheckFailed, match=r"^\[FAIL\] check_welch_bound: .*not answered") as e:
        cw.welch.check_welch_bound(..., 6, 3)
    assert isinstance(e.value, AssertionError) and not e.value.check.ok
    assert e.value._render_traceback_() == [f"\x1b[0;31m{e.value.check!r}\x1b[0m"]
    with pytest.raises(cw.CheckFailed, match="clipped at 0"):
        cw.welch.check_welch_bound(0.3, 6, 3)
    with pytest.raises(cw.CourseworkError, match="smaller"):  # called wrongly: not a verdict
        cw.volume_ratio.check_p_solution(0.1, "tree:2:2", 4, 4, 1000)


def test_every_module_is_listed_and_documented():
    for name, mod in cw.MODULES.items():
        assert mod.__doc__ and mod.__all__, name
        for fn in mod.__all__:
            assert callable(getattr(mod, fn).verdict) and getattr(mod, fn).__doc__, f"{name}.{fn}"
        assert name in cw.__doc__


def test_checkers_leave_global_state_alone():
    """Same answer, same verdict; the global torch and numpy random streams are not touched."""
    from volratio.welch import icosahedron_frame

    torch_state, np_state = torch.get_rng_state(), np.random.get_state()
    net = _masked_net()
    first = [
        cw.welch.check_frame.verdict(icosahedron_frame() + 0.05, 6, 3),
        cw.emc2.check_perturbation_score.verdict(0.5, net, 0.5, 16),
    ]
    second = [
        cw.welch.check_frame.verdict(icosahedron_frame() + 0.05, 6, 3),
        cw.emc2.check_perturbation_score.verdict(0.5, net, 0.5, 16),
    ]
    assert [repr(c) for c in first] == [repr(c) for c in second]
    assert torch.equal(torch.get_rng_state(), torch_state)
    assert all(np.array_equal(a, b) for a, b in zip(np.random.get_state()[1:2], np_state[1:2]))


# ---------------------------------------------------------------------------------------------
# 01 Picbreeder


def test_layerized_size(picbreeder_dir):
    _passes(cw.picbreeder.check_layerized_size.verdict("skull", 12, 22, 147))
    _fails(cw.picbreeder.check_layerized_size.verdict("skull", 11, 22, 147), "longest path", "hue")
    _fails(cw.picbreeder.check_layerized_size.verdict("skull", 12, 22, 57), "genome's links", "cache")
    _fails(cw.picbreeder.check_layerized_size.verdict("skull", 12, 23, 147), "width")


def _longest(graph):
    return graph.layers()


def _shortest(graph):
    preds, layer = graph.predecessors(), {}
    for k in graph.topological_order():
        layer[k] = 0 if graph.nodes[k].kind == "in" else 1 + min((layer[s] for s, _ in preds[k]), default=0)
    return layer


def test_layers_function_on_the_skull(picbreeder_dir):
    _passes(cw.compositional_sparsity.check_layers.verdict(_longest))
    # the planted test graphs happen to have no skip links; the skull genome does
    _fails(cw.compositional_sparsity.check_layers.verdict(_shortest), "shortest path", "max")


def test_layers_function():
    _passes(cw.compositional_sparsity.check_layers.verdict(_longest))
    _fails(
        cw.compositional_sparsity.check_layers.verdict(lambda g: {k: v + 1 for k, v in g.layers().items()}),
        "one too high",
    )

    def nyi(g):
        raise NotImplementedError

    _fails(cw.compositional_sparsity.check_layers.verdict(nyi), "not implemented")
    _fails(cw.compositional_sparsity.check_layers.verdict(lambda g: 1 / 0), "ZeroDivisionError")
    _fails(cw.compositional_sparsity.check_layers.verdict(lambda g: {}), "no layer")
    _fails(cw.compositional_sparsity.check_layers.verdict(lambda g: {k: None for k in g.nodes}), "integers")


def test_twin_rejects(picbreeder_dir):
    from volratio.data import picbreeder

    pb = picbreeder.layerized("skull")
    _fails(cw.picbreeder.check_twin.verdict(CoordMLP("3;gaussian:4", head="hsv"), "skull"), "architecture")
    _fails(cw.picbreeder.check_twin.verdict(pb, "skull"), "masked", "dense")
    untrained = CoordMLP(pb.arch, head="hsv", seed=0)
    with torch.no_grad():
        untrained.weights[-1].mul_(0).add_(5.0)  # saturated output: far from the image
    _fails(cw.picbreeder.check_twin.verdict(untrained, "skull", res=16), "mean colour")
    _fails(cw.picbreeder.check_twin.verdict("net", "skull"), "CoordMLP")
    from volratio.train import TrainResult

    _fails(cw.picbreeder.check_twin.verdict(TrainResult(pb, np.zeros((1, 1)), np.zeros(1)), "skull"), ".net")


# ---------------------------------------------------------------------------------------------
# 02 EMC2


def _masked_net():
    net = CoordMLP("2;gaussian:4", head="grey", seed=1)
    g = generator(0)
    for i, m in enumerate(net.masks):
        net.set_mask(i, (torch.rand(m.shape[1:], generator=g) < 0.7).to(m.dtype))
    return net


def test_perturbed_image():
    from volratio import emc2

    net = _masked_net()
    p = tuple(int(v) for v in emc2.nonzero_params(net)[5])
    img = emc2.naive_render(net, p, 0.5, 16)
    _passes(cw.emc2.check_perturbed_image.verdict(img, net, p, 0.5, 16))
    with torch.no_grad():
        _fails(cw.emc2.check_perturbed_image.verdict(net.render(16)[0], net, p, 0.5, 16), "unperturbed")
    _fails(cw.emc2.check_perturbed_image.verdict(emc2.naive_render(net, p, -0.5, 16), net, p, 0.5, 16), "−δ")
    _fails(cw.emc2.check_perturbed_image.verdict(img[None], net, p, 0.5, 16), "shape")


def test_perturbation_score():
    net = _masked_net()
    ref = cw.emc2.check_perturbation_score.verdict(0.0, net, 0.5, 16, 0.9)
    s = ref.expected
    n_nz = net.nonzero()[0]
    n_all = net.n_params()
    kept = round(s * n_nz)
    assert 0 < s < 1  # the exercise needs both verdicts to occur
    _passes(cw.emc2.check_perturbation_score.verdict(s, net, 0.5, 16, 0.9))
    _fails(cw.emc2.check_perturbation_score.verdict(1 - s, net, 0.5, 16, 0.9), "destroy")
    _fails(cw.emc2.check_perturbation_score.verdict(float(kept), net, 0.5, 16, 0.9), "count")
    _fails(cw.emc2.check_perturbation_score.verdict(kept / n_all, net, 0.5, 16, 0.9), "non-zero")
    _fails(cw.emc2.check_perturbation_score.verdict((kept + n_all - n_nz) / n_all, net, 0.5, 16, 0.9), "masked")


# ---------------------------------------------------------------------------------------------
# 03 Pruning


def _trained_net():
    from volratio.data.targets import get_target
    from volratio.train import TrainConfig, train

    target = get_target("planted:3:depth=3")
    image = target.image(16)
    net = CoordMLP("2;gaussian:6", head=target.head, seed=0)
    train(net, image, TrainConfig(steps=20, lr=1e-2, device="cpu"))
    return net


def test_similarity_and_pairs():
    from volratio.prune import similarity

    net = _trained_net()
    with torch.no_grad():
        maps = net.features(16)[0][0].reshape(256, -1).double()
    U = maps / maps.norm(dim=0, keepdim=True)
    S = (U.T @ U).numpy()
    _passes(cw.connectivity.check_similarity.verdict(S, net, 0, res=16))
    _fails(cw.connectivity.check_similarity.verdict((maps.T @ maps).numpy(), net, 0, res=16), "norms")
    _fails(cw.connectivity.check_similarity.verdict(similarity(maps, centred=True).numpy(), net, 0, res=16), "mean")
    _fails(cw.connectivity.check_similarity.verdict(np.zeros((256, 256)), net, 0, res=16), "pixels")

    tau = float(np.sort(S[np.triu_indices(6, 1)])[-3]) - 1e-9  # exactly the 3 most similar pairs
    pairs = [(i, j) for i in range(6) for j in range(i + 1, 6) if S[i, j] > tau]
    assert len(pairs) == 3
    _passes(cw.connectivity.check_redundant_pairs.verdict(pairs, net, 0, tau, res=16))
    _fails(
        cw.connectivity.check_redundant_pairs.verdict(pairs + [(j, i) for i, j in pairs], net, 0, tau, res=16),
        "same pair",
    )
    _fails(cw.connectivity.check_redundant_pairs.verdict(pairs + [(1, 1)], net, 0, tau, res=16), "itself")
    _fails(cw.connectivity.check_redundant_pairs.verdict(pairs[:2], net, 0, tau, res=16), "missed")
    _fails(cw.connectivity.check_redundant_pairs.verdict(3, net, 0, tau, res=16), "not their number")


def test_unit_removed_and_sparsity():
    net = CoordMLP("2;gaussian:5", head="grey", seed=0)
    m_in = net.masks[0].clone()
    m_in[:, :, 2] = 0
    net.set_mask(0, m_in)
    _fails(cw.connectivity.check_unit_removed.verdict(net, 0, 2), "outgoing")
    m_out = net.masks[1].clone()
    m_out[:, 2, :] = 0
    net.masks[1].copy_(m_out)  # the mask without zeroing the weights under it
    _fails(cw.connectivity.check_unit_removed.verdict(net, 0, 2), "apply_masks_")
    net.apply_masks_()
    _passes(cw.connectivity.check_unit_removed.verdict(net, 0, 2))

    masked = sum(int((m == 0).sum()) for m in net.masks)
    total = sum(m.numel() for m in net.masks)
    s = masked / total
    _passes(cw.connectivity.check_sparsity.verdict(s, net))
    _fails(cw.connectivity.check_sparsity.verdict(1 - s, net), "remain")
    _fails(cw.connectivity.check_sparsity.verdict(100 * s, net), "percentage")
    _fails(cw.connectivity.check_sparsity.verdict(float(masked), net), "number of masked")


# ---------------------------------------------------------------------------------------------
# 04 Depth


def test_png_ratio():
    from volratio.depth.complexity import png_ratio

    c = png_ratio("image:camera", 32)
    _passes(cw.depth.check_png_ratio.verdict(c.ratio, "image:camera", 32))
    _fails(cw.depth.check_png_ratio.verdict(1 / c.ratio, "image:camera", 32), "inverted")
    _fails(cw.depth.check_png_ratio.verdict(c.ratio / 3, "image:camera", 32), "one byte per pixel")


def test_depth_fit():
    from scipy import stats

    ratios = [1.5, 2.0, 2.6, 3.1, 3.9]
    depths = [2, 3, 3, 5, 6]
    f = stats.linregress(ratios, depths)
    _passes(cw.depth.check_depth_fit.verdict(f.intercept, f.slope, f.rvalue**2, ratios, depths))
    inv = stats.linregress(depths, ratios)
    _fails(
        cw.depth.check_depth_fit.verdict(inv.intercept, inv.slope, inv.rvalue**2, ratios, depths), "ratio on the depth"
    )
    _fails(cw.depth.check_depth_fit.verdict(f.slope, f.intercept, f.rvalue**2, ratios, depths), "swapped")
    _fails(cw.depth.check_depth_fit.verdict(f.intercept, f.slope, abs(f.rvalue), ratios, depths), "square")


def test_sweet_spot():
    depths = [2, 3, 4, 5, 6]
    scores = np.array([[0.1, 0.2], [0.5, 0.5], [0.5, 0.5], [0.9, 0.1], [0.0, 0.1]])  # means .15 .5 .5 .5 .05
    _passes(cw.depth.check_sweet_spot.verdict(3, depths, scores))
    _fails(cw.depth.check_sweet_spot.verdict(4, depths, scores), "shallowest")
    _fails(cw.depth.check_sweet_spot.verdict(1, depths, scores), "index")
    _fails(cw.depth.check_sweet_spot.verdict(6, depths, scores), "lowest")
    peaked = np.array([[0.1, 0.1], [0.2, 0.9], [0.6, 0.6], [0.2, 0.2], [0.0, 0.1]])  # seed 1 peaks at 3, mean at 4
    _passes(cw.depth.check_sweet_spot.verdict(4, depths, peaked))
    _fails(cw.depth.check_sweet_spot.verdict(3, depths, peaked), "one seed")


# ---------------------------------------------------------------------------------------------
# 05 ρ


def test_truth_table():
    t = get_boolean_target("chain:2")
    tab = np.asarray(t.table)
    _passes(cw.volume_ratio.check_truth_table.verdict(tab, "chain:2"))
    _fails(cw.volume_ratio.check_truth_table.verdict((tab + 1) // 2, "chain:2"), "0/1")
    _fails(cw.volume_ratio.check_truth_table.verdict(-tab, "chain:2"), "negated")
    _fails(cw.volume_ratio.check_truth_table.verdict(tab[:4], "chain:2"), "2^3")
    t3 = get_boolean_target("chain:3")
    from volratio.rho.boolean import input_table

    X = input_table(3)
    rev = {tuple(r): i for i, r in enumerate(X[:, ::-1].tolist())}
    perm = [rev[tuple(r)] for r in X.tolist()]
    _fails(cw.volume_ratio.check_truth_table.verdict(tab[perm], "chain:2"), "bits are in reverse order")
    assert t3.n == 4


def test_target_shape():
    _passes(cw.volume_ratio.check_target_shape.verdict("chain:3", 3, 3))
    _fails(cw.volume_ratio.check_target_shape.verdict("chain:3", 4, 3), "inputs as a layer")
    t = get_boolean_target("tree:3:2")
    assert t.n_nodes - t.n != t.min_width(t.depth)  # gate count ≠ W_min: the message below can trigger
    _fails(cw.volume_ratio.check_target_shape.verdict("tree:3:2", t.depth, t.n_nodes - t.n), "number of gates")


def test_p_solution():
    from volratio.rho import SamplerConfig, exact

    t = get_boolean_target("chain:1")
    e = exact(t, 2, 2)
    _passes(cw.volume_ratio.check_p_solution.verdict(e.p_solution, "chain:1", 2, 2, 20_000))
    _fails(cw.volume_ratio.check_p_solution.verdict(e.p_compositional, "chain:1", 2, 2, 200_000), "P(compositional)")
    _fails(cw.volume_ratio.check_p_solution.verdict(0.5, "chain:1", 2, 2, 20_000), "standard errors")
    unmasked = exact(t, 2, 2, SamplerConfig(p=1.0, device="cpu")).p_solution
    assert abs(unmasked - e.p_solution) > 0.005
    _fails(cw.volume_ratio.check_p_solution.verdict(unmasked, "chain:1", 2, 2, 200_000), "unmasked")
    with pytest.raises(cw.CourseworkError, match="smaller"):
        cw.volume_ratio.check_p_solution.verdict(0.1, "tree:2:2", 4, 4, 1000)


def test_interval():
    from scipy.stats import binomtest

    k, n = 7, 400
    ci = binomtest(k, n).proportion_ci(0.95, method="wilson")
    _passes(cw.volume_ratio.check_interval.verdict(ci.low, ci.high, k, n))
    p = k / n
    half = 1.959963984540054 * math.sqrt(p * (1 - p) / n)
    _fails(cw.volume_ratio.check_interval.verdict(p - half, p + half, k, n), "wald")
    cp = binomtest(k, n).proportion_ci(0.95, method="exact")
    _fails(cw.volume_ratio.check_interval.verdict(cp.low, cp.high, k, n), "clopper")


# ---------------------------------------------------------------------------------------------
# 06 Welch


def test_welch_bound():
    _passes(cw.welch.check_welch_bound.verdict(0.2, 6, 3))
    _fails(cw.welch.check_welch_bound.verdict(math.sqrt(0.2), 6, 3), "coherence")
    _fails(cw.welch.check_welch_bound.verdict((2 - 3) / (3 * 1), 2, 3), "clipping")
    _fails(cw.welch.check_welch_bound.verdict(3 / 18, 6, 3), "n·m")
    _passes(cw.welch.check_welch_bound.verdict(0.0, 3, 3))


def test_coherence():
    from volratio.welch import coherence

    V = np.random.default_rng(0).standard_normal((6, 3)) * 3.0
    mu = coherence(V)
    _passes(cw.welch.check_coherence.verdict(mu, V))
    _fails(cw.welch.check_coherence.verdict(1.0, V), "diagonal")
    _fails(cw.welch.check_coherence.verdict(0.41, V), "below the welch bound 0.4472 for m=6, n=3", "normalised")
    G = np.abs(V @ V.T)
    np.fill_diagonal(G, 0)
    _fails(cw.welch.check_coherence.verdict(G.max(), V), "normalise")


def test_frame():
    from volratio.welch import icosahedron_frame

    F = icosahedron_frame()
    _passes(cw.welch.check_frame.verdict(F, 6, 3))
    _passes(cw.welch.check_frame.verdict(2 * F, 6, 3))  # scaled rows are normalised first
    _fails(cw.welch.check_frame.verdict(F.T, 6, 3), "transpose")
    _fails(cw.welch.check_frame.verdict(np.random.default_rng(0).standard_normal((6, 3)), 6, 3), "above")
    Z = F.copy()
    Z[0] = 0
    _fails(cw.welch.check_frame.verdict(Z, 6, 3), "zero vector")


def test_first_higher_order():
    from volratio.welch import gerzon_limit, welch_bound, welch_bound_sq

    m = next(m for m in range(5, 200) if max(welch_bound_sq(m, 4, k) for k in (2, 3, 4)) > welch_bound(m, 4))
    _passes(cw.welch.check_first_higher_order.verdict(m, 4))
    _fails(cw.welch.check_first_higher_order.verdict(gerzon_limit(4), 4), "gerzon")
    _fails(cw.welch.check_first_higher_order.verdict(m - 1, 4), "still at least")
    _fails(cw.welch.check_first_higher_order.verdict(m + 1, 4), "smaller m")


def test_represented():
    from volratio.welch.superposition import feature_interference

    W = np.random.default_rng(1).standard_normal((3, 8)) * np.array([1, 1, 1, 1, 1, 0.05, 0.05, 0.05])
    ref = feature_interference(W)
    _passes(cw.welch.check_represented.verdict(ref["r"], ref["max_sq_inner"], W))
    _fails(cw.welch.check_represented.verdict(3, ref["max_sq_inner"], W), "rows")
    _fails(cw.welch.check_represented.verdict(ref["r"], math.sqrt(ref["max_sq_inner"]), W), "square")


# ---------------------------------------------------------------------------------------------
# 07 Sweeps


def test_sweep_table():
    import pandas as pd

    grid = {"lr": [0.1, 0.2], "n": [8]}
    good = pd.DataFrame({"lr": [0.1, 0.1, 0.2, 0.2], "n": [8] * 4, "seed": [0, 1, 0, 1], "loss": [1, 2, 3, 4]})
    _passes(cw.practice_cluster.check_sweep_table.verdict(good, grid, seeds=[0, 1]))
    _fails(
        cw.practice_cluster.check_sweep_table.verdict(pd.concat([good, good.iloc[:1]]), grid, seeds=[0, 1]), "duplicate"
    )
    _fails(cw.practice_cluster.check_sweep_table.verdict(good.iloc[:3], grid, seeds=[0, 1]), "missing")
    _fails(cw.practice_cluster.check_sweep_table.verdict(good.drop(columns="seed"), grid, seeds=[0, 1]), "seed")


# ---------------------------------------------------------------------------------------------
# Compositional sparsity


def test_dag_shape():
    from volratio.data.targets import PlantedTarget

    t = PlantedTarget(seed=0, depth=3, width=5, arity=2)
    w_min = max(t.layer_sizes())
    assert t.width != w_min  # the cap differs from W_min: the cap message below can trigger
    _passes(cw.compositional_sparsity.check_dag_shape.verdict(t, 3, w_min))
    _passes(cw.compositional_sparsity.check_dag_shape.verdict(t.spec, 3, w_min))
    _fails(cw.compositional_sparsity.check_dag_shape.verdict(t, 4, w_min), "inputs")
    _fails(cw.compositional_sparsity.check_dag_shape.verdict(t, 3, sum(t.layer_sizes())), "primitives")
    _fails(cw.compositional_sparsity.check_dag_shape.verdict(t, 3, t.width), "cap", "arity")
    with pytest.raises(cw.CourseworkError, match="planted"):
        cw.compositional_sparsity.check_dag_shape.verdict("image:camera", 3, 4)


# ---------------------------------------------------------------------------------------------
# Optimization


def test_top_eigenvalue():
    from volratio.data.targets import get_target
    from volratio.train.flatness import explicit_hessian, top_eigenvalue

    image = get_target("planted:1:depth=2").image(8)
    net = CoordMLP("2;gaussian:3", head="grey", seed=0)
    eig = np.linalg.eigvalsh(explicit_hessian(net, image))
    top = float(eig[np.argmax(np.abs(eig))])
    _passes(
        cw.optimization.check_top_eigenvalue.verdict(top_eigenvalue(net, image, iters=300, tol=1e-8).value, net, image)
    )
    _fails(cw.optimization.check_top_eigenvalue.verdict(-top, net, image), "sign")
    _fails(cw.optimization.check_top_eigenvalue.verdict(top**2, net, image), "λ²")
    other = float(eig[np.argsort(np.abs(eig))[-3]])
    _fails(cw.optimization.check_top_eigenvalue.verdict(other, net, image), "another eigenvalue")
    _fails(cw.optimization.check_top_eigenvalue.verdict(0.9 * top, net, image), "not converged")
    _fails(cw.optimization.check_top_eigenvalue.verdict(10 * top, net, image), "normalise")


# ---------------------------------------------------------------------------------------------
# Unknown targets


def test_scene_image():
    from volratio.data.targets import get_target

    spec = "scene:image:camera+image:coffee+image:astronaut"
    res, cell = 26, 8  # three 8-px cells in 26 px: one pixel of margin left and right
    ref = get_target(spec).image(res).numpy()
    _passes(cw.unknown_targets.check_scene_image.verdict(ref, spec, res))
    parts = [get_target(s).image(cell).numpy() for s in ("image:camera", "image:coffee", "image:astronaut")]

    def place(order, top=(res - cell) // 2, left0=1, fill=0.0):
        f = np.full((res, res, 3), fill)
        for i, p in enumerate(order):
            f[top : top + cell, left0 + i * cell : left0 + (i + 1) * cell] = p
        return f

    assert np.allclose(place(parts), ref)
    _fails(cw.unknown_targets.check_scene_image.verdict(place(parts[::-1]), spec, res), "order")
    _fails(cw.unknown_targets.check_scene_image.verdict(place(parts, top=0), spec, res), "centre them vertically")
    _fails(cw.unknown_targets.check_scene_image.verdict(place(parts, left0=0), spec, res), "shift the parts right")
    _fails(cw.unknown_targets.check_scene_image.verdict(place(parts, fill=1.0), spec, res), "black")
    _fails(cw.unknown_targets.check_scene_image.verdict(ref * 255, spec, res), "[0, 1]")
    _fails(cw.unknown_targets.check_scene_image.verdict(ref[:, :20], spec, res), "square")


# ---------------------------------------------------------------------------------------------
# Own target


def test_flattened():
    from PIL import Image

    rng = np.random.default_rng(0)
    rgba = rng.integers(0, 256, (6, 7, 4), dtype=np.uint8)
    white = Image.new("RGBA", (7, 6), (255, 255, 255, 255))
    ref = np.asarray(Image.alpha_composite(white, Image.fromarray(rgba, "RGBA")).convert("RGB")) / 255
    _passes(cw.own_target.check_flattened.verdict(ref, rgba))
    a, rgb = rgba[..., 3:] / 255, rgba[..., :3] / 255
    _passes(cw.own_target.check_flattened.verdict(rgb * a + (1 - a), rgba))  # exact, unrounded: within a grey level
    _fails(cw.own_target.check_flattened.verdict(rgb, rgba), "dropped")
    _fails(cw.own_target.check_flattened.verdict(rgb * a, rgba), "black")
    _fails(cw.own_target.check_flattened.verdict(rgb * (1 - a) + a, rgba), "reversed")
    _fails(cw.own_target.check_flattened.verdict(ref * 255, rgba), "255")
    _fails(cw.own_target.check_flattened.verdict(rgba / 255, rgba), "drop the alpha")
    _fails(cw.own_target.check_flattened.verdict(np.clip(ref + 0.1, 0, 1), rgba), "pixel")
    with pytest.raises(cw.CourseworkError, match="uint8"):
        cw.own_target.check_flattened.verdict(ref, rgba.astype(float))


# ---------------------------------------------------------------------------------------------
# The chapters' exercise sections and the notebooks derived from them (tools/derive_notebooks.py)


def _load_derive():
    spec = importlib.util.spec_from_file_location("derive_notebooks", ROOT / "tools" / "derive_notebooks.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


DERIVE = _load_derive()
CHAPTERS = DERIVE.chapters()
NEEDS_DATA = {"picbreeder", "emc2"}  # exercises on the Picbreeder genomes and FER's networks


def _needs_data(chapter, request):
    if chapter.stem in NEEDS_DATA:
        request.getfixturevalue("picbreeder_dir")  # skips with its reason when the data is absent


def test_notebooks_are_derived_and_up_to_date():
    """notebooks/ holds exactly one notebook per chapter of Parts I–III, each what the script derives
    from the chapter's exercise section now. A failure here after a merge: run the script."""
    assert len(CHAPTERS) >= 11 and all(p.is_file() for p in CHAPTERS)
    want = {DERIVE.target(p) for p in CHAPTERS}
    assert set((ROOT / "notebooks").glob("*.ipynb")) == want, "run: python tools/derive_notebooks.py"
    stale = [p.name for p in CHAPTERS if DERIVE.target(p).read_text() != DERIVE.render(p)]
    assert not stale, f"notebooks of {stale} are out of date with their chapters: run python tools/derive_notebooks.py"
    assert not (ROOT / "tools" / "make_notebooks.py").exists()


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_every_chapter_has_graded_exercises_without_solutions(chapter):
    """Setup cell first, at least one task cell followed by a check cell, no solution left in the
    student's notebook, no outputs."""
    student, full = DERIVE.derive(chapter), DERIVE.derive(chapter, solutions=True)
    code = [c for c in student.cells if c.cell_type == "code"]
    assert f"from volratio.coursework import {chapter.stem} as cw" in code[0].source
    kinds = [
        "task"
        if "task" in c.metadata.get("volratio", {})
        else "check"
        if c.metadata.get("volratio", {}).get("check")
        else "code"
        for c in code
    ]
    assert "check" in kinds and kinds.index("task") < kinds.index("check")
    for i, k in enumerate(kinds):
        if k == "check":
            assert "task" in kinds[:i], f"{chapter.name}: a check cell before any task cell"
    text = "\n".join(c.source for c in student.cells)
    for c_s, c_f in zip(student.cells, full.cells):
        if "task" in c_s.metadata.get("volratio", {}) and c_f.source != c_s.source:
            assert c_f.source not in text
            assert "# YOUR CODE HERE" in c_s.source, f"{chapter.name}: a task cell without the placeholder marker"
    assert (
        "{solution" not in text and "{exercise" not in text and ":::" not in text
    )  # directives stripped or made plain
    assert all(not c.get("outputs") for c in code)


def test_every_theorem_of_part_two_has_an_exercise():
    import re

    import yaml

    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    part2 = next(p for p in toc["parts"] if p["caption"].startswith("Part II "))
    for c in part2["chapters"]:
        text = (ROOT / f"{c['file']}.md").read_text()
        exercises = text[text.index("## Exercises") :]
        labels = re.findall(r":::\{prf:(?:theorem|proposition)\}[^\n]*\n:label: ([\w-]+)", text)
        assert labels, c["file"]
        for label in labels:
            assert f"{{prf:ref}}`{label}`" in exercises, f"{c['file']}: no exercise on {label}"


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_unanswered_notebook_fails_politely(chapter, request):
    """The student's notebook as derived, run in this process up to its first check: the check raises
    CheckFailed whose one-line message says the answer is missing — not a NameError or TypeError."""
    _needs_data(chapter, request)
    ns: dict = {}
    for c in DERIVE.derive(chapter).cells:
        if c.cell_type != "code":
            continue
        if c.metadata.get("volratio", {}).get("check"):
            with pytest.raises(cw.CheckFailed) as e:
                exec(c.source, ns)  # noqa: S102 — the notebook's own cells
            assert "not answered" in str(e.value) or "not implemented" in str(e.value), str(e.value)
            assert str(e.value).startswith("[FAIL] check_")
            break
        exec(c.source, ns)  # noqa: S102


@pytest.mark.slow
@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_notebook_with_reference_solutions_passes_every_check(chapter, request):
    """The derived notebook with the chapter's reference solutions in its task cells runs in a fresh
    kernel and every check cell shows [PASS] (a failed check raises, so the run stops there)."""
    from nbclient import NotebookClient

    _needs_data(chapter, request)
    nb = DERIVE.derive(chapter, solutions=True)
    NotebookClient(
        nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(ROOT / "notebooks")}}
    ).execute()
    checks = [c for c in nb.cells if c.metadata.get("volratio", {}).get("check")]
    assert checks
    for c in checks:
        text = "".join(o.get("data", {}).get("text/plain", "") + o.get("text", "") for o in c.outputs)
        assert text.strip().startswith("[PASS]"), f"{chapter.name}: {c.source} → {text.strip()}"


@pytest.mark.slow
def test_failed_check_shows_in_jupyter_as_one_line():
    """What the student sees for a wrong answer: the verdict with its hint, no traceback."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [
        nbformat.v4.new_code_cell("from volratio.coursework import welch as cw\ncw.check_welch_bound(0.3, 6, 3)")
    ]
    NotebookClient(nb, allow_errors=True, kernel_name="python3", resources={"metadata": {"path": str(ROOT)}}).execute()
    (out,) = nb.cells[0].outputs
    assert out.output_type == "error" and out.ename == "CheckFailed"
    assert (
        len(out.traceback) == 1
        and "[FAIL] check_welch_bound" in out.traceback[0]
        and "clipped at 0" in out.traceback[0]
    )
