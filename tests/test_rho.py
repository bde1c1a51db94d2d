"""Tests of the Boolean volume-ratio model (volratio.rho: its boolean, sampler, … and theory modules)."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest
import torch

from volratio.rho import Nets, SamplerConfig, classify, count, exact
from volratio.rho.boolean import BooleanTargetError, get_boolean_target, input_table
from volratio.rho.theory import clean_volume_value, support_zero
from volratio.util.stats import binomial_interval

CPU = SamplerConfig(device="cpu")


def nets_from(layers):
    """One network from a list of (weights (fan_in, fan_out), bias (fan_out,)) pairs."""
    ws = [torch.tensor(np.array(w, dtype=np.float32))[None] for w, _ in layers]
    bs = [torch.tensor(np.array(b, dtype=np.float32))[None] for _, b in layers]
    return Nets(ws, bs)


# ---------------------------------------------------------------------------------------------
# targets


def test_tree_truth_table_and_shape():
    t = get_boolean_target("tree:2:2")
    x = input_table(4) > 0
    want = (x[:, 0] | x[:, 1]) & (x[:, 2] | x[:, 3])
    assert np.array_equal(t.table > 0, want)
    assert (t.n, t.depth, t.width) == (4, 2, 2)


def test_chain_and_dag_structure():
    c = get_boolean_target("chain:3")
    x = input_table(4) > 0
    assert np.array_equal(c.table > 0, ((x[:, 0] & x[:, 1]) | x[:, 2]) & x[:, 3])
    assert (c.depth, c.width) == (3, 3)  # gate + two carried inputs in layer 1
    d1, d2 = get_boolean_target("dag:0"), get_boolean_target("dag:0")
    assert d1 == d2 and d1.depth == 3 and d1.n == 6
    assert get_boolean_target("dag:1:depth=2,arity=3,inputs=5,primitives=3").depth == 2


@pytest.mark.parametrize("spec", ["tree:3:3", "chain:0", "dag:0:depth=9", "mystery:1", "tree:a:2", "dag:0:colour=3"])
def test_bad_target_specs_raise_clear_errors(spec):
    with pytest.raises(BooleanTargetError):
        get_boolean_target(spec)


# ---------------------------------------------------------------------------------------------
# the classifier on hand-built networks


def test_hand_built_compositional_network():
    t = get_boolean_target("tree:2:2")  # (x0 ∨ x1) ∧ (x2 ∨ x3)
    # layer 1: OR(x0,x1), NOR(x2,x3) (a negation is allowed), and an unused junk unit
    w1 = [[1, 0, 1], [1, 0, -1], [0, -1, 1], [0, -1, 0]]
    layers = [(w1, [1, -1, 0]), ([[1], [-1], [0]], [-1])]
    sol, comp = classify(nets_from(layers), t)
    assert sol.item() and comp.item()


def test_hand_built_fractured_networks():
    t = get_boolean_target("chain:2")  # (x0 ∧ x1) ∨ x2, itself one threshold gate
    # one hidden unit computes the whole target from the inputs, the output copies it
    layers = [([[1], [1], [2]], [1]), ([[1]], [0])]
    sol, comp = classify(nets_from(layers), t)
    assert sol.item() and not comp.item()
    # the output computes the target in one unit: a solution, but L=1 < L*=2
    sol, comp = classify(nets_from([([[1], [1], [2]], [1])]), t)
    assert sol.item() and not comp.item()
    # compositional version of the same target: AND(x0,x1) and a copy of x2, then OR
    layers = [([[1, 0], [1, 0], [0, 1]], [-1, 0]), ([[1], [1]], [1])]
    sol, comp = classify(nets_from(layers), t)
    assert sol.item() and comp.item()
    # distributive form (x0 ∨ x2) ∧ (x1 ∨ x2): right output, hidden units that are no node
    layers = [([[1, 0], [0, 1], [1, 1]], [1, 1]), ([[1], [1]], [-1])]
    sol, comp = classify(nets_from(layers), t)
    assert sol.item() and not comp.item()


def test_non_solution_is_never_compositional():
    t = get_boolean_target("chain:2")
    layers = [([[1, 0], [1, 0], [0, 1]], [-1, 0]), ([[1], [1]], [-1])]  # AND instead of OR on top
    sol, comp = classify(nets_from(layers), t)
    assert not sol.item() and not comp.item()


# ---------------------------------------------------------------------------------------------
# enumeration against an independent brute force


def _brute_force(t, W, L, p):
    """Plain-Python reference: enumerate every ternary configuration one at a time; solutions
    only (the classifier of a solution is checked by the hand-built tests)."""
    dims = [t.n] + [W] * (L - 1) + [1]
    shapes = list(zip(dims[:-1], dims[1:]))
    npar = sum(a * b + b for a, b in shapes)
    X = input_table(t.n).astype(np.int64)
    pw = {-1: p / 3, 0: 1 - 2 * p / 3, 1: p / 3}
    total = 0.0
    for cfg in itertools.product((-1, 0, 1), repeat=npar):
        h, o, prob = X, 0, 1.0
        for a, b in shapes:
            w = np.array(cfg[o : o + a * b]).reshape(a, b)
            prob *= np.prod([pw[v] for v in w.flat])
            o += a * b
            bias = np.array(cfg[o : o + b])
            prob *= (1 / 3) ** b
            o += b
            h = np.where(h @ w + bias > 0, 1, -1)
        if np.array_equal(h[:, 0], t.table):
            total += prob
    return total


@pytest.mark.parametrize("W,L", [(1, 1), (1, 2)])
def test_exact_enumeration_matches_brute_force(W, L):
    t = get_boolean_target("tree:1:2")
    e = exact(t, W, L, CPU)
    assert e.p_solution == pytest.approx(_brute_force(t, W, L, CPU.p), rel=1e-12)
    assert e.configurations == 3 ** (3 if L == 1 else W * 3 + W + 1)


def test_exact_tiny_cell_by_hand():
    # L = 1 on AND(x0, x1): only w = (1, 1) with b ∈ {−1, 0} computes it (z > 0 is strict):
    # 2 · (p/3)^2 · 1/3
    e = exact(get_boolean_target("tree:1:2"), 1, 1, CPU)
    assert e.p_solution == pytest.approx(2 * (CPU.p / 3) ** 2 / 3, rel=1e-12)
    assert e.rho == 1.0


CELLS = [
    ("tree:1:2", 1, 1),
    ("tree:1:2", 1, 2),
    ("tree:1:2", 2, 2),
    ("tree:1:2", 1, 3),
    ("chain:2", 2, 2),
    ("chain:2", 1, 2),
]


@pytest.mark.parametrize("spec,W,L", CELLS)
def test_monte_carlo_inside_interval_around_exact(spec, W, L):
    t = get_boolean_target(spec)
    e = exact(t, W, L, CPU)
    c = count(t, W, L, 60_000, CPU, seed=1)
    lo, hi = binomial_interval(c.solutions, c.samples, 0.999)
    assert lo <= e.p_solution <= hi
    lo, hi = binomial_interval(c.compositional, c.samples, 0.999)
    assert lo <= e.p_compositional <= hi
    if e.rho is not None and c.solutions:
        lo, hi = binomial_interval(c.compositional, c.solutions, 0.999)
        assert lo <= e.rho <= hi


# ---------------------------------------------------------------------------------------------
# the theorem's exact parts


def test_rho_is_zero_below_target_depth():
    t = get_boolean_target("chain:3")  # a threshold function: shallow solutions exist
    c = count(t, 4, 2, 100_000, CPU, seed=0)
    assert c.solutions > 0  # ... they are found
    assert c.compositional == 0  # ... and none is compositional
    assert support_zero(t, 4, 2) and clean_volume_value(t, 4, 2, CPU) == 0.0


def test_rho_is_zero_below_min_width():
    t = get_boolean_target("tree:2:2")
    assert support_zero(t, 1, 2)
    assert count(t, 1, 2, 50_000, CPU, seed=0).compositional == 0


@pytest.mark.parametrize("spec,W,L", CELLS)
def test_closed_form_is_a_lower_bound_of_the_exact_volume(spec, W, L):
    t = get_boolean_target(spec)
    v = clean_volume_value(t, W, L, CPU)
    e = exact(t, W, L, CPU)
    assert v <= e.p_compositional * (1 + 1e-12)
    if (spec, W, L) == ("tree:1:2", 1, 1):  # a single unit: the bound is the exact value
        assert v == pytest.approx(e.p_compositional, rel=1e-12)


# ---------------------------------------------------------------------------------------------
# reproducibility, intervals, CLI


def test_same_seed_same_counts():
    t = get_boolean_target("tree:2:2")
    a = count(t, 3, 2, 40_000, CPU, seed=7)
    b = count(t, 3, 2, 40_000, CPU, seed=7)
    assert a == b and a.solutions > 0


def test_cli_json_rows(capsys):
    from volratio.cli import main

    rc = main(
        [
            "rho",
            "boolean",
            "--target",
            "tree:1:2",
            "--W",
            "1,2",
            "--L",
            "2",
            "--samples",
            "3000",
            "--exact",
            "--seed",
            "3",
            "--device",
            "cpu",
            "--json",
        ]
    )
    assert rc == 0
    rows = json.loads(capsys.readouterr().out)
    assert [(r["W"], r["L"]) for r in rows] == [(1, 2), (2, 2)]
    for r in rows:
        assert {"W", "L", "samples", "solutions", "compositional", "rho", "lo", "hi", "exact", "theory"} <= set(r)
        assert r["samples"] == 3000 and r["lo"] <= (r["rho"] or 0) <= r["hi"]


def test_cli_bad_list_is_one_line_error(capsys):
    from volratio.cli import main

    assert main(["rho", "boolean", "--target", "tree:1:2", "--W", "two", "--L", "2"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "--W" in err and "'two'" in err
    assert main(["rho", "boolean", "--target", "tree:5:5", "--W", "1", "--L", "2"]) == 2
    assert "tree:5:5" in capsys.readouterr().err


# ---------------------------------------------------------------------------------------------
# basin model


def test_primitive_correlations_and_assignment():
    from volratio.rho import assigned_correlations, primitive_correlations

    g = torch.linspace(-1, 1, 8)
    a, b = torch.outer(g, torch.ones(8)), torch.outer(torch.ones(8), g).sin()
    # one network, one layer of 3 units: −a (a negation), a constant, b
    feats = [torch.stack([-a, torch.ones(8, 8), b], dim=-1)[None]]
    C = primitive_correlations(feats, {"a": a, "b": b})
    assert C.shape == (1, 2, 3)
    assert C[0, 0, 0] == pytest.approx(1.0) and C[0, 1, 2] == pytest.approx(1.0) and C[0, :, 1].max() == 0.0
    A = assigned_correlations(np.array([[[0.95, 0.9], [0.94, 0.1]]]))  # both want unit 0
    assert A.tolist() == [[0.9, 0.94]]  # one-to-one: the best total, not each primitive's best


def test_basin_cell_runs_and_repeats():
    from volratio.rho import BasinConfig, basin_cell

    cfg = BasinConfig.quick(population=3, steps=5, res=8, device="cpu")
    r1 = basin_cell("planted:0:depth=2,width=3", 2, 2, cfg)
    r2 = basin_cell("planted:0:depth=2,width=3", 2, 2, cfg)
    assert {"W", "L", "samples", "solutions", "compositional", "rho", "lo", "hi"} <= set(r1)
    assert r1["samples"] == 3 and r1["criterion"] == "correlation"
    assert r1["final_loss"] == r2["final_loss"] and r1["primitive_corr"] == r2["primitive_corr"]
    with pytest.raises(Exception, match="planted"):
        basin_cell("image:camera", 2, 2, cfg)


def _basin_row(W, L, comp, sol, rho, lo, hi, losses, corrs):
    return {"W": W, "L": L, "samples": len(losses), "solutions": sol, "compositional": comp, "rho": rho,
            "lo": lo, "hi": hi, "final_loss": losses, "primitive_corr": corrs}  # fmt: skip


def test_basin_table_and_checks():
    from volratio.rho import RhoError, basin_checks, basin_table

    rows = [
        _basin_row(2, 1, 0, 1, 0.0, 0.0, 0.8, [1e-3, 1.0], [[0.5], [0.2]]),  # a shallow solution, not compositional
        _basin_row(2, 2, 2, 2, 1.0, 0.6, 1.0, [1e-3, 1e-3], [[0.95], [0.99]]),
        _basin_row(4, 2, 1, 2, 0.5, 0.1, 0.55, [1e-3, 1e-3], [[0.95], [0.5]]),
    ]
    t = basin_table(rows, loss_tol=2e-3, threshold=0.9)
    assert t["corr-only"].tolist() == [0, 2, 1] and t["rho (95% CI)"][1] == "1.00 [0.60, 1.00]"
    (s0, ok0, n0), (s1, ok1, n1) = basin_checks(rows, depth=2, w_min=2)
    assert ok0 and n0 == "1 shallow solutions, 0 compositional"
    assert ok1 and "W=4: 0.50 [0.10, 0.55]" in n1  # 0.55 < 0.6: below the peak
    rows[2]["hi"] = 0.7  # overlapping the peak's interval: not significantly below
    assert not basin_checks(rows, 2, 2)[1][1]
    rows[0]["compositional"] = 1
    assert not basin_checks(rows, 2, 2)[0][1]
    with pytest.raises(RhoError, match=r"no cell \(W_min, L\*\) = \(3, 2\)"):
        basin_checks(rows, 2, 3)


def test_basin_heatmap_draws_every_cell():
    import matplotlib

    matplotlib.use("Agg")
    from volratio.report import plots

    rows = [_basin_row(W, L, 0, 0, None, None, None, [1.0], [[0.1]]) for L in (1, 2) for W in (2, 4)]
    rows[3].update(rho=0.5, lo=0.2, hi=0.8, solutions=2, compositional=1)
    ax = plots.basin_heatmap(rows, (2, 4), (1, 2), depth=2, w_min=2, title="t")
    assert len(ax.texts) == 4 and "0.50" in ax.texts[3].get_text() and ax.get_title() == "t"


def test_sampler_variants():
    from volratio.rho import sample_networks
    from volratio.util.device import generator

    cfg = SamplerConfig(weights="gaussian", masks="fanin", fan_in=3, device="cpu")
    nets = sample_networks(6, 8, 3, 2000, cfg, generator(0))
    w = nets.weights[1]  # (B, 8, 8)
    assert ((w != 0).sum(dim=1) == 3).all()  # exactly fan_in inputs per unit
    assert float(w[w != 0].std()) == pytest.approx(1 / np.sqrt(8), rel=0.05)
    t = SamplerConfig(p=0.6, device="cpu")
    e = torch.cat([x.flatten() for x in sample_networks(4, 6, 3, 4000, t, generator(1)).weights])
    assert float((e == 0).float().mean()) == pytest.approx(1 - 2 * 0.6 / 3, abs=0.01)
    with pytest.raises(Exception, match="density"):
        SamplerConfig(p=0.0)


def test_theory_grid_shapes_and_decay():
    from volratio.rho.theory import W_SYM, copy_factor, theory_grid

    t = get_boolean_target("tree:2:2")
    exprs, vals = theory_grid(t, [1, 2, 4, 8, 16], [1, 2, 3], CPU)
    assert vals.shape == (3, 5) and exprs[1] == 0 and W_SYM in exprs[2].free_symbols
    assert (vals[0] == 0).all() and vals[1, 0] == 0  # L < L*, W < W_min
    assert vals[1, 4] < vals[1, 3] < vals[1, 2]  # decays in W past the peak
    assert float(copy_factor(16, 0.8)) < float(copy_factor(4, 0.8))


def test_redundant_copies_count_as_influence():
    """Found by the bits engine on dag:3 at (W, L) = (6, 2) < L* = 3: the output reads x1 through
    three units (x1, ¬x1, x1), none of which changes it when flipped alone. Flipping all units of
    the same function together shows that the output reads x1 — not a child of the root — so the
    network is fractured (the support theorem's ρ = 0 below L* then holds)."""
    t = get_boolean_target("dag:3:depth=3,arity=2,inputs=3,primitives=3")
    w1 = [[-1, 0, -1, -1, 0, 0], [0, 1, 0, 0, -1, 1], [1, 0, 0, 1, 0, 0]]
    layers = [(w1, [0, 0, 0, -1, 0, 1]), ([[-1], [-1], [0], [-1], [1], [-1]], [-1])]
    sol, comp = classify(nets_from(layers), t)
    assert sol.item() and not comp.item()
    # the same output with one x1 copy only: then the single copy influences on its own, and it
    # is still not a child of the root
    layers = [([[-1, 0], [0, 1], [1, 0]], [0, 0]), ([[-1], [-1]], [-1])]
    sol, comp = classify(nets_from(layers), t)
    assert sol.item() and not comp.item()
