"""The bit-sliced engine (volratio.rho.bitslice) against the float path (volratio.rho.sampler): the same
networks through both give the same truth table for every unit and the same solution and
compositional verdicts; the sampler has the float path's distribution; counts do not depend on the
number of worker processes."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from volratio.rho import (
    Counts,
    Nets,
    RhoError,
    SamplerConfig,
    classify,
    count,
    estimate,
    exact,
    forward,
    inputs,
    layer_dims,
    networks_for_width,
    sample_networks,
)
from volratio.rho import bitslice as bs
from volratio.rho.boolean import get_boolean_target, input_table
from volratio.rho.montecarlo import _nets_from_block
from volratio.rho.sampler import _compositional
from volratio.util.device import generator
from volratio.util.stats import binomial_interval


def block_from_nets(nets: Nets, ternary: bool) -> bs.Block:
    ws = [np.ascontiguousarray(w.permute(1, 2, 0).numpy()) for w in nets.weights]
    bb = [np.ascontiguousarray(b.T.numpy()) for b in nets.biases]
    if ternary:
        ws, bb = [w.astype(np.int8) for w in ws], [b.astype(np.int8) for b in bb]
    return bs.Block(ws, bb, ternary)


def unit_bits(words: np.ndarray, n: int) -> np.ndarray:
    """(U, nw, B) words → (U, B, 2^n) bool."""
    return bs.unpack_bits(np.moveaxis(words, 1, 2), n)


def test_pack_unpack_and_input_words():
    for n in (2, 5, 6, 7, 9):
        x = input_table(n) > 0  # (2^n, n)
        w = bs.input_words(n)
        assert w.shape == (n, bs.n_words(n))
        assert np.array_equal(bs.unpack_bits(w, n), x.T)
    assert bs.valid_mask(3)[0] == 0xFF and bs.valid_mask(7).tolist() == [2**64 - 1] * 2


SAMPLERS = [("ternary", "bernoulli"), ("ternary", "fanin"), ("gaussian", "bernoulli"), ("gaussian", "fanin")]
SHAPES = [(2, 1, 1), (3, 2, 2), (4, 3, 3), (5, 6, 4), (6, 8, 4), (6, 1, 5), (7, 4, 3), (8, 5, 2)]


@pytest.mark.parametrize("weights,masks", SAMPLERS)
@pytest.mark.parametrize("n,W,L", SHAPES)
def test_every_unit_table_equals_the_float_path(weights, masks, n, W, L):
    cfg = SamplerConfig(weights=weights, masks=masks, fan_in=3, p=0.7, device="cpu")
    nets = sample_networks(n, W, L, 1500, cfg, generator(1000 * n + 10 * W + L))
    _, _, hs = forward(nets, inputs(n), keep=True)  # float: ±1 (B, P, units) per layer
    hb = bs.forward(n, block_from_nets(nets, weights == "ternary"), keep=True)
    assert len(hb) == len(hs) == L + 1
    for hf, hw in zip(hs, hb):
        assert np.array_equal(unit_bits(hw, n), (hf.numpy() > 0).transpose(2, 0, 1))


def test_ternary_layer_every_code_of_one_unit():
    """All 3^(F+1) weight/bias codes of a unit on 4 inputs, against the defining formula."""
    n = 4
    lut = bs.first_layer_table(n)  # built by ternary_layer over every code
    idx = np.arange(3 ** (n + 1))
    codes = (idx[:, None] // 3 ** np.arange(n + 1)) % 3 - 1  # (3^5, 5)
    x = input_table(n).astype(np.int64)  # (16, 4)
    z = x @ codes[:, :n].T + codes[:, n]  # (16, 3^5)
    assert np.array_equal(bs.unpack_bits(lut, n), (z > 0).T)


def _verdicts_both_ways(spec, W, L, cfg, B, seed):
    t = get_boolean_target(spec)
    nets = sample_networks(t.n, W, L, B, cfg, generator(seed))
    sol_f, comp_f = classify(nets, t)
    block = block_from_nets(nets, cfg.weights == "ternary")
    sol_b = bs.solutions(t.n, block, bs.pack_bits((t.table > 0)[None])[0])
    comp_b = np.zeros(B, dtype=bool)
    idx = np.nonzero(sol_b)[0]
    if idx.size:
        comp_b[idx] = _compositional(_nets_from_block(block.take(idx)), t, inputs(t.n)).numpy()
    return sol_f.numpy(), comp_f.numpy(), sol_b, comp_b


@pytest.mark.parametrize("weights,masks", SAMPLERS)
@pytest.mark.parametrize(
    "spec,W,L",
    [
        ("tree:1:2", 2, 2),
        ("chain:2", 2, 2),
        ("chain:2", 3, 3),
        ("tree:2:2", 2, 2),
        ("tree:2:2", 4, 3),
        ("chain:3", 3, 3),
    ],
)
def test_solution_and_compositional_verdicts_equal_the_float_path(weights, masks, spec, W, L):
    cfg = SamplerConfig(weights=weights, masks=masks, fan_in=2, device="cpu")
    sol_f, comp_f, sol_b, comp_b = _verdicts_both_ways(spec, W, L, cfg, 40_000, 7)
    assert np.array_equal(sol_f, sol_b) and np.array_equal(comp_f, comp_b)
    if weights == "ternary" and masks == "bernoulli":
        assert sol_f.sum() > 0  # the comparison is not vacuous on the book's sampler


def test_verdicts_on_a_six_input_dag():
    cfg = SamplerConfig(device="cpu", p=0.5)
    sol_f, comp_f, sol_b, comp_b = _verdicts_both_ways("dag:0", 4, 3, cfg, 60_000, 3)
    assert np.array_equal(sol_f, sol_b) and np.array_equal(comp_f, comp_b)


# ---------------------------------------------------------------------------------------------
# the sampler


def _effective(block: bs.Block) -> np.ndarray:
    return np.concatenate([w.ravel() for w in block.weights])


def test_sampler_distribution_matches_the_float_sampler():
    dims = layer_dims(4, 6, 3)
    B = 20_000
    tern = bs.sample_block(dims, B, bs.DrawSpec(p=0.6), bs.chunk_rng(0, 6, 3, 0))
    e = _effective(tern)
    for v, want in zip((-1, 0, 1), SamplerConfig(p=0.6).weight_probs()):
        assert abs(float((e == v).mean()) - want) < 4 * math.sqrt(want * (1 - want) / e.size)
    b = np.concatenate([x.ravel() for x in tern.biases])
    assert abs(float((b == 0).mean()) - 1 / 3) < 0.01
    fan = bs.sample_block(dims, B, bs.DrawSpec("gaussian", "fanin", fan_in=3), bs.chunk_rng(0, 6, 3, 0))
    w = fan.weights[1]  # (6, 6, B)
    assert ((w != 0).sum(axis=0) == 3).all()
    assert float(w[w != 0].std()) == pytest.approx(1 / np.sqrt(6), rel=0.03)
    # fan-in masks: every input equally likely to be kept
    kept = (fan.weights[0] != 0).mean(axis=(1, 2))
    assert np.allclose(kept, 3 / 4, atol=0.01)


def test_stream_contract_chunks_are_independent_of_each_other():
    spec = bs.DrawSpec()
    dims = layer_dims(6, 8, 4)
    a = bs.sample_block(dims, 64, spec, bs.chunk_rng(5, 8, 4, 3))
    b = bs.sample_block(dims, 64, spec, bs.chunk_rng(5, 8, 4, 3))
    c = bs.sample_block(dims, 64, spec, bs.chunk_rng(5, 8, 4, 4))
    assert np.array_equal(_effective(a), _effective(b)) and not np.array_equal(_effective(a), _effective(c))
    # chunk c is the c-th child of SeedSequence([seed, W, L])
    child = np.random.SeedSequence([5, 8, 4]).spawn(5)[3]
    d = bs.sample_block(dims, 64, spec, np.random.Generator(np.random.SFC64(child)))
    assert np.array_equal(_effective(a), _effective(d))


@pytest.mark.parametrize("spec,W,L", [("tree:1:2", 2, 2), ("chain:2", 2, 2)])
def test_bits_engine_inside_interval_around_exact(spec, W, L):
    t = get_boolean_target(spec)
    cfg = SamplerConfig(device="cpu")
    e = exact(t, W, L, cfg)
    c = count(t, W, L, 300_000, cfg, seed=11)
    for k, nn, want in [
        (c.solutions, c.samples, e.p_solution),
        (c.compositional, c.samples, e.p_compositional),
        (c.compositional, c.solutions, e.rho),
    ]:
        lo, hi = binomial_interval(k, nn, 0.999)
        assert lo <= want <= hi


# ---------------------------------------------------------------------------------------------
# workers, stopping rules, errors


def test_counts_do_not_depend_on_workers_or_grouping():
    t = get_boolean_target("chain:2")
    one = count(t, 3, 3, 70_000, SamplerConfig(chunk=2048), seed=4)
    two = count(t, 3, 3, 70_000, SamplerConfig(chunk=2048, workers=2), seed=4)
    assert one == two and one.samples == 70_000 and one.compositional > 0
    again = count(t, 3, 3, 70_000, SamplerConfig(chunk=2048, workers=1), seed=4)
    assert again == one
    other_seed = count(t, 3, 3, 70_000, SamplerConfig(chunk=2048), seed=5)
    assert other_seed != one


def test_until_width_stops_early_and_identically_with_workers():
    t = get_boolean_target("chain:2")
    c1, i1 = estimate(t, 2, 2, 2_000_000, SamplerConfig(chunk=1024), seed=0, until_width=0.5)
    c2, i2 = estimate(t, 2, 2, 2_000_000, SamplerConfig(chunk=1024, workers=2), seed=0, until_width=0.5)
    assert i1["stopped"] == "width" and c1.samples < 2_000_000 and i1["rel_width"] <= 0.5
    assert c1 == c2 and i1["chunks"] == i2["chunks"]
    # one chunk fewer would not have reached the width
    c0, _ = estimate(t, 2, 2, c1.samples - 1024, SamplerConfig(chunk=1024), seed=0)
    lo, hi = binomial_interval(c0.compositional, c0.solutions)
    assert c0.compositional == 0 or (hi - lo) / (c0.compositional / c0.solutions) > 0.5


def test_budget_stops_and_reports():
    t = get_boolean_target("tree:2:2")
    c, info = estimate(t, 6, 4, 10**9, SamplerConfig(), seed=0, budget_s=0.5)
    assert info["stopped"] == "budget" and 0 < c.samples < 10**9 and info["elapsed_s"] >= 0.5


def test_networks_for_width():
    c = Counts(1_000_000, 400, 100)  # ρ = 0.25, P(sol) = 4e-4
    n = networks_for_width(c, 0.2)
    s = n * 4e-4  # solutions needed
    lo, hi = binomial_interval(round(s * 0.25), round(s))
    assert (hi - lo) / 0.25 == pytest.approx(0.2, rel=0.03)
    assert networks_for_width(Counts(10, 0, 0), 0.2) is None


def test_bad_engine_settings_are_clear_errors():
    with pytest.raises(RhoError, match="engine"):
        SamplerConfig(engine="gpu")
    with pytest.raises(RhoError, match="workers"):
        SamplerConfig(workers=0)
    t = get_boolean_target("chain:2")
    with pytest.raises(RhoError, match="until_width"):
        count(t, 2, 2, 1000, SamplerConfig(), until_width=-1)
    with pytest.raises(RhoError, match="engine='bits'"):
        count(t, 2, 2, 1000, SamplerConfig(engine="float", device="cpu"), budget_s=1)
    with pytest.raises(RhoError, match="GiB"):
        count(t, 20_000, 2, 1000, SamplerConfig())


def test_float_engine_still_available_and_agrees_in_distribution():
    t = get_boolean_target("tree:1:2")
    f = count(t, 2, 2, 60_000, SamplerConfig(engine="float", device="cpu"), seed=1)
    b = count(t, 2, 2, 60_000, SamplerConfig(), seed=1)
    lo, hi = binomial_interval(f.solutions, f.samples, 0.999)
    lo2, hi2 = binomial_interval(b.solutions, b.samples, 0.999)
    assert max(lo, lo2) <= min(hi, hi2)  # the two intervals overlap
    assert torch.get_num_threads() >= 1


# ---------------------------------------------------------------------------------------------
# the decay fit


def _rows(rho_of, target, Ws, Ls, solutions=4000):
    rows = []
    for L in Ls:
        for W in Ws:
            rho = rho_of(W, L)
            k = round(rho * solutions)
            rows.append(
                {"W": W, "L": L, "solutions": solutions, "compositional": k, "rho": k / solutions if k else None}
            )
    return rows


def test_decay_fit_recovers_planted_rates_and_decides():
    from volratio.rho import decay_fit, decay_verdict

    t = get_boolean_target("chain:2")  # W_min = 2, L* = 2

    def planted(W, L):  # logit ρ linear in the distance from the peak
        return 1 / (1 + math.exp(-(0.0 - 0.3 * (W - 2) - 0.7 * (L - 2))))

    rows = _rows(planted, t, (1, 2, 3, 4, 6), (1, 2, 3, 4))
    f = decay_fit(rows, t)
    assert f["lambda_W"]["rate"] == pytest.approx(0.3, abs=0.02) and f["lambda_L"]["rate"] == pytest.approx(
        0.7, abs=0.03
    )
    assert f["lambda_W"]["lo"] < 0.3 < f["lambda_W"]["hi"] and f["peak_rho"] == pytest.approx(0.5, rel=0.05)
    assert decay_verdict(f["lambda_W"]) == "decays" and (1, 2) not in f["cells"]  # W < W_min(2) left out
    flat = decay_fit(_rows(lambda W, L: 0.3, t, (2, 3, 4, 6), (2, 3, 4)), t)
    assert decay_verdict(flat["lambda_W"]) == "no decay shown" and decay_verdict(flat["lambda_L"]) == "no decay shown"
    along_w = decay_fit(rows, t, along="W")  # L = L* only
    assert {L for _, L in along_w["cells"]} == {2} and along_w["lambda_L"] is None
    assert along_w["lambda_W"]["rate"] == pytest.approx(0.3, abs=0.05)
    along_l = decay_fit(rows, t, along="L")
    assert {W for W, _ in along_l["cells"]} == {2} and along_l["lambda_L"]["rate"] == pytest.approx(0.7, abs=0.05)
    grows = decay_fit(_rows(lambda W, L: 0.05 * math.exp(0.2 * (W - 2)), t, (2, 3, 4, 6), (2, 3)), t)
    zeros = [dict(r, compositional=0, rho=0.0) if r["W"] == 6 else r for r in rows]  # k = 0 cells count
    assert decay_fit(zeros, t)["lambda_W"]["rate"] > f["lambda_W"]["rate"]
    assert decay_verdict(grows["lambda_W"]) == "grows"
    assert decay_verdict(decay_fit(rows[:1], t)["lambda_W"]) == "not measured"


def test_cli_until_width_rows(capsys):
    import json

    from volratio.cli import main

    rc = main(
        [
            "rho",
            "boolean",
            "--target",
            "chain:2",
            "--W",
            "2,4",
            "--L",
            "2",
            "--samples",
            "3000000",
            "--until-width",
            "0.6",
            "--no-progress",
            "--json",
        ]
    )
    assert rc == 0
    rows = json.loads(capsys.readouterr().out)
    for r in rows:
        assert r["stopped"] == "width" and r["samples"] < 3_000_000 and r["rel_width"] <= 0.6
        assert r["networks_for_width"] == pytest.approx(r["samples"], rel=0.6) and r["engine"] == "bits"
    assert main(["rho", "boolean", "--target", "chain:2", "--W", "2", "--L", "2", "--budget-s", "-3"]) == 2
    assert "--budget-s" in capsys.readouterr().err


def test_reference_preset_runs_a_small_grid():
    from volratio.rho import BooleanRhoConfig, run_boolean

    cfg = BooleanRhoConfig.reference(target="chain:2", Ws=(2,), Ls=(2,), samples=40_000)
    assert cfg.until_width == 0.1 and cfg.sampler.workers == 2 and cfg.scale == "reference"
    res = run_boolean(cfg)
    (r,) = res["rows"]
    assert r["samples"] == 40_000 and r["stopped"] == "samples" and r["networks_for_width"] > 40_000
    assert res["config"]["until_width"] == 0.1
