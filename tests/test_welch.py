"""Welch bounds, frames, layer interference and the superposition toy model (volratio/welch/,
`volratio welch …`)."""

import json
import math
from fractions import Fraction

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from volratio import welch
from volratio.errors import VolratioError
from volratio.nets import CoordMLP
from volratio.util.presets import preset
from volratio.welch.superposition import ToyConfig, feature_interference, train_toy

FAST = settings(max_examples=60, deadline=None)


def random_frame(m, n, seed, complex_=False):
    rng = np.random.default_rng(seed)
    V = rng.standard_normal((m, n))
    if complex_:
        V = V + 1j * rng.standard_normal((m, n))
    return V


# -- the bound -------------------------------------------------------------------------------


@FAST
@given(m=st.integers(2, 14), n=st.integers(1, 6), seed=st.integers(0, 2**31 - 1), cplx=st.booleans())
def test_random_vectors_never_beat_any_bound(m, n, seed, cplx):
    V = welch.as_frame(random_frame(m, n, seed, cplx))
    G = np.abs(V @ V.conj().T)
    off = G[~np.eye(m, dtype=bool)]
    for k in (1, 2, 3):
        b = welch.welch_bound(m, n, k)
        assert off.max() ** (2 * k) >= b - 1e-12
        assert np.mean(off ** (2 * k)) >= b - 1e-12  # the bound holds for the mean, not only the max
    assert welch.max_sq_inner(V) >= welch.best_bound(m, n, field="complex" if cplx else "real")[0] - 1e-12
    assert welch.frame_potential(V) >= welch.frame_potential_bound(m, n) - 1e-9


@FAST
@given(m=st.integers(1, 60), n=st.integers(1, 60))
def test_bound_is_zero_exactly_when_m_le_n(m, n):
    b = welch.welch_bound_exact(m, n)
    assert (b == 0) == (m <= n)
    if m > 1:
        assert b == max(Fraction(m - n, n * (m - 1)), 0)  # the closed form of k = 1


@FAST
@given(m=st.integers(2, 200), n=st.integers(1, 12), k=st.integers(1, 5))
def test_higher_orders_consistent_with_k1(m, n, k):
    bk = welch.welch_bound_exact(m, n, k)
    # order k is the k = 1 bound applied to the symmetric tensors v^{⊗k} in dimension C(n+k-1, k)
    assert bk == welch.welch_bound_exact(m, math.comb(n + k - 1, k), 1)
    assert (bk == 0) == (m <= math.comb(n + k - 1, k))
    assert 0 <= bk <= 1
    # higher orders are weaker than k = 1 whenever an ETF could exist (m ≤ Gerzon's limit): a
    # bound on μ^{2k} implied by the k = 1 bound, μ^{2k} ≥ b1^k, is at least the order-k bound
    if m <= welch.gerzon_limit(n):
        assert welch.welch_bound_sq(m, n, k) <= welch.welch_bound(m, n, 1) + 1e-12


def test_known_values():
    assert welch.welch_bound(6, 3) == pytest.approx(0.2, abs=1e-15)
    assert welch.welch_bound(3, 2) == pytest.approx(0.25, abs=1e-15)
    assert welch.welch_bound(1, 5) == 0.0
    assert welch.best_bound(7, 3) == (pytest.approx(1 / 3), "orthoplex")  # beyond Gerzon's 6
    assert welch.gerzon_limit(3) == 6 and welch.gerzon_limit(3, "complex") == 9
    with pytest.raises(VolratioError, match="n ≥ 1"):
        welch.welch_bound(3, 0)


# -- ETFs ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(welch.known_etfs()))
def test_known_etfs_meet_the_bound(name):
    V = welch.known_etfs()[name]
    m, n = V.shape
    t = welch.tightness(V)
    assert t.tight and t.equiangular and welch.is_etf(V)
    assert abs(t.max_sq_inner - welch.welch_bound(m, n)) <= 1e-9
    assert abs(t.mean_sq_inner - welch.welch_bound(m, n)) <= 1e-9
    assert abs(t.frame_potential - t.frame_potential_bound) <= 1e-9
    for k in (2, 3):  # higher orders never contradict the k = 1 equality
        assert t.max_sq_inner**k >= welch.welch_bound(m, n, k) - 1e-12


def test_etf_checks_reject_non_etfs():
    V = welch.as_frame(random_frame(6, 3, 0))
    assert not welch.is_etf(V)
    assert not welch.is_tight(V)
    # antipodal pairs of an orthonormal basis: tight (mean meets the bound) but not equiangular
    A = np.vstack([np.eye(3), -np.eye(3)])
    assert welch.is_tight(A) and not welch.is_equiangular(A)
    assert welch.mean_sq_inner(A) == pytest.approx(welch.welch_bound(6, 3))
    assert welch.max_sq_inner(A) == pytest.approx(1.0)


def test_etf_constructions_reject_bad_input():
    with pytest.raises(VolratioError, match="prime q"):
        welch.paley_frame(7)  # 7 ≡ 3 (mod 4)
    with pytest.raises(VolratioError, match="tight frame"):
        welch.naimark_complement(random_frame(6, 3, 1))
    with pytest.raises(VolratioError, match="zero vectors"):
        welch.max_sq_inner(np.array([[1.0, 0.0], [0.0, 0.0]]))
    # a non-difference set gives a harmonic frame that is not an ETF
    assert not welch.is_etf(welch.harmonic_frame(7, (0, 1, 2)))


# -- numerical construction ----------------------------------------------------------------------


@pytest.mark.parametrize("m,n", [(3, 2), (4, 3), (6, 3), (5, 4)])
def test_construction_within_one_percent_at_etf_sizes(m, n):
    r = welch.low_coherence_frame(m, n, seed=0)
    assert r.vectors.shape == (m, n)
    assert np.allclose(np.linalg.norm(r.vectors, axis=1), 1.0)
    assert r.max_sq_inner >= r.bound - 1e-12
    assert r.ratio <= 1.01


def test_complex_construction_reaches_a_complex_only_etf():
    # 4 vectors in C^2 (a SIC): beyond the real Gerzon limit 3, so only a complex frame meets the bound
    r = welch.low_coherence_frame(4, 2, seed=0, config=welch.FrameConfig(field="complex", ap_iters=300, restarts=2))
    assert np.iscomplexobj(r.vectors)
    assert r.max_sq_inner >= r.bound - 1e-12 and r.ratio <= 1.01
    assert welch.low_coherence_frame(4, 2, seed=0).ratio >= 1.5 - 1e-9  # over R the orthoplex bound 1/2 binds


@pytest.mark.parametrize("m,n", [(5, 3), (7, 4), (5, 2)])
def test_construction_never_beats_the_bound_without_an_etf(m, n):
    r = welch.low_coherence_frame(m, n, seed=1, config=welch.FrameConfig(ap_iters=300, restarts=2, descent_steps=300))
    assert r.max_sq_inner >= r.best_bound - 1e-12
    assert r.ratio > 1.05  # no ETF exists at these sizes; (5,2) is beyond Gerzon's limit


def test_construction_is_seeded_and_handles_m_le_n():
    cfg = welch.FrameConfig(ap_iters=100, restarts=1, descent_steps=50)
    a = welch.low_coherence_frame(5, 3, seed=3, config=cfg)
    b = welch.low_coherence_frame(5, 3, seed=3, config=cfg)
    assert np.array_equal(a.vectors, b.vectors)
    r = welch.low_coherence_frame(3, 5, seed=0)
    assert r.max_sq_inner < 1e-25 and r.ratio is None


# -- interference of a network layer -------------------------------------------------------------


def test_layer_interference_weights_defines_r_and_d():
    net = CoordMLP("3;gaussian:6", head="grey", seed=0)
    rows = welch.layer_interference(net, "weights")
    assert [(r.r, r.d) for r in rows] == [(6, 4), (6, 6), (6, 6)]
    assert rows[0].bound == pytest.approx(welch.welch_bound(6, 4))
    assert all(r.max_sq_inner >= r.bound - 1e-12 for r in rows)
    # weight vectors of layer 1 are the columns of kernel 1
    W = net.weights[1].detach().double()[0].numpy()  # (6, 6)
    assert rows[1].max_sq_inner == pytest.approx(welch.max_sq_inner(W.T), rel=1e-9)
    # masking unit 0 of layer 1's outgoing weights makes it dead: out of r of layer 1, out of d of layer 2
    m = torch.ones(1, 6, 6)
    m[0, 0, :] = 0
    net.set_mask(2, m)
    rows = welch.layer_interference(net, "weights")
    assert (rows[1].r, rows[2].d) == (5, 5)


def test_layer_interference_maps_sees_duplicated_units():
    net = CoordMLP("2;gaussian:5", head="grey", seed=1)
    with torch.no_grad():
        net.weights[0][0, :, 1] = net.weights[0][0, :, 0]  # units 0 and 1 of layer 0 compute one map
    rows = welch.layer_interference(net, "maps", res=24)
    assert rows[0].max_sq_inner == pytest.approx(1.0, abs=1e-9)
    assert rows[0].d == rows[0].r - 1  # the duplicate is linearly dependent
    assert rows[0].bound > 0 and rows[0].max_sq_inner >= rows[0].bound
    with pytest.raises(VolratioError, match="weights' or 'maps"):
        welch.layer_interference(net, "columns")


# -- superposition toy model ---------------------------------------------------------------------


def test_toy_model_is_seeded_and_measures_against_the_bound():
    cfg = ToyConfig(n_features=6, n_hidden=2, sparsities=(0.0, 0.9), steps=60, batch=64, device="cpu")
    a, b = train_toy(cfg), train_toy(cfg)
    assert np.array_equal(a.W, b.W) and np.array_equal(a.losses, b.losses)
    assert a.W.shape == (2, 2, 6) and list(a.sparsity) == [0.0, 0.9]
    for row in a.interference(threshold=0.0):
        assert row["r"] == 6 and row["d"] == 2
        assert row["max_sq_inner"] >= row["bound"] - 1e-12
        assert row["mean_sq_inner"] >= row["bound"] - 1e-12


def test_feature_interference_on_known_geometry():
    # five features on a regular pentagon in R^2 (Elhage et al.'s high-sparsity solution)
    ang = 2 * np.pi * np.arange(5) / 5
    W = np.stack([np.cos(ang), np.sin(ang)])  # (2, 5)
    f = feature_interference(W)
    assert (f["r"], f["d"]) == (5, 2)
    assert f["max_sq_inner"] == pytest.approx(np.cos(np.pi / 5) ** 2)
    assert f["bound"] == pytest.approx(3 / 8)
    # features with small norm do not count as represented
    W2 = np.concatenate([np.eye(2), 0.01 * np.ones((2, 3))], axis=1)
    assert feature_interference(W2)["r"] == 2 and feature_interference(W2)["bound"] == 0.0
    with pytest.raises(VolratioError, match="sparsities"):
        ToyConfig(sparsities=(1.0,))


# -- command line --------------------------------------------------------------------------------


def run_cli(capsys, *argv):
    from volratio.cli import main

    rc = main(list(argv))
    out = capsys.readouterr().out
    return rc, out


def test_cli_bound_and_frame(capsys):
    rc, out = run_cli(capsys, "welch", "bound", "--m", "6", "--n", "3", "--json")
    assert rc == 0 and json.loads(out) == {"m": 6, "n": 3, "k": 1, "bound": pytest.approx(0.2)}
    rc, out = run_cli(capsys, "welch", "bound", "--m", "6", "--n", "3", "--k", "2", "--json")
    assert json.loads(out)["bound"] == 0.0  # 6 ≤ C(4, 2)
    rc, out = run_cli(capsys, "welch", "frame", "--m", "4", "--n", "3", "--seed", "0", "--json")
    d = json.loads(out)
    assert rc == 0 and d["bound"] == pytest.approx(1 / 9) and 1.0 - 1e-9 <= d["ratio"] <= 1.01
    from volratio.cli import main

    assert main(["welch", "bound", "--m", "0", "--n", "3"]) == 2  # a clear error, not a traceback


def test_cli_net_on_a_saved_network(capsys, tmp_path):
    path = CoordMLP("2;gaussian:5", head="grey", seed=0).save(tmp_path / "net.safetensors")
    rc, out = run_cli(capsys, "welch", "net", str(path), "--json")
    d = json.loads(out)
    assert rc == 0 and d["vectors"] == "weights" and len(d["layers"]) == 2
    assert (d["layers"][0]["r"], d["layers"][0]["d"]) == (5, 4)
    assert d["layers"][0]["bound"] == pytest.approx(welch.welch_bound(5, 4))
    rc, out = run_cli(capsys, "welch", "net", str(path), "--vectors", "maps", "--res", "16", "--json")
    assert all(row["max_sq_inner"] >= row["bound"] for row in json.loads(out)["layers"])


def test_interference_summary_counts_active_layers_per_network_and_seed():
    import pandas as pd

    from volratio.experiments import interference

    rows = [
        # network a: one layer with r > d (bound 0.1), one without; a layer with one vector (no interference)
        {"network": "a", "vectors": "weights", "layer": 0, "bound": 0.1, "mean_sq_inner": 0.2, "max_sq_inner": 0.5},
        {"network": "a", "vectors": "weights", "layer": 1, "bound": 0.0, "mean_sq_inner": 0.4, "max_sq_inner": 0.9},
        {"network": "a", "vectors": "weights", "layer": 2, "bound": 0.0, "mean_sq_inner": None, "max_sq_inner": None},
    ]
    s = interference.summary(pd.DataFrame(rows)).loc[("a", "weights")]
    assert s["layers"] == 2 and s["layers with r > d"] == 1
    assert s["mean/bound where r > d (median)"] == pytest.approx(2.0)
    assert s["max/bound where r > d (median)"] == pytest.approx(5.0)
    assert s["mean interference (avg over layers)"] == pytest.approx(0.3)
    two = pd.DataFrame([{**r, "seed": k} for k in (0, 1) for r in rows])
    assert len(interference.summary(two)) == 2  # one row per seed


def test_interference_networks_depend_on_the_target_not_on_what_is_installed():
    """A non-Picbreeder target gets the dense and SP networks only (no silent switch of target when
    data is missing: a Picbreeder target fetches its data or raises the one-line fix)."""
    from volratio.experiments import interference

    cfg = preset(interference.Config, "quick", target="image:camera", res=12, dense_res=12,
                 **{"train.steps": 5, "sp.rounds": 1, "sp.retrain_steps": 2})  # fmt: skip
    nets, notes = interference.networks(cfg)
    assert list(nets) == ["dense 6;gaussian:16", "SP τ=0.8", "SP τ=0.9"] and notes["target"] == "image:camera"
