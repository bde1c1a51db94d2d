"""The fused perturbation kernel (`volratio.emc2.fused`, `engine="fused"`) against re-rendering.

Tolerance: the kernel computes in float32 with its own `exp`, sine and cosine (~1 ulp) and its own
summation order, so its images differ from re-rendering each perturbed network (`naive_render`,
float32) by float32 rounding carried through the layers (the perturbed unit's z + δ·h rounds once,
where re-rendering rounds (w + δ)·h summed with the rest: one ulp of z, amplified by the layers
above), the same order as the torch engine's own float32 difference (≤ 1.3e-5 here): each image
within `TOL` of re-rendering. Scores (verdicts of a judge with a threshold away from every
distance) are equal. Repeatability is exact: the same bits for every run and thread count.

The kernel is compiled once for this module into a temporary cache folder; the tests that need it
skip, with the reason, where no C++ compiler exists. The refusals run everywhere.
"""

import argparse
import json

import numpy as np
import pytest
import torch
from training_helpers import compiler_missing

from volratio import emc2, judges
from volratio.emc2 import fused
from volratio.errors import VolratioError
from volratio.nets import CoordMLP
from volratio.train import fused_kernel
from volratio.util.limits import LimitError, check_limits

ARCH = "4;gaussian:3,sin:2,cos:1,sigmoid:1,tanh:1,relu:1,identity:2"
TOL = 3e-5
RESOLUTIONS = (16, 20)  # 256 pixels: whole tiles of 64; 400: a partial last tile


@pytest.fixture(scope="module")
def kernel(tmp_path_factory):
    """Build the kernel once, into a fresh cache folder (skips where no C++ compiler exists)."""
    if compiler_missing():
        pytest.skip(compiler_missing().replace("fused training kernel", "fused perturbation kernel"))
    mp = pytest.MonkeyPatch()
    mp.setenv(fused_kernel.ENV_CACHE, str(tmp_path_factory.mktemp("kernels")))
    mp.setattr(fused, "_loaded", {})
    lib = fused.load()
    yield lib
    mp.undo()


needs_kernel = pytest.mark.usefixtures("kernel")


def _net(kind: str, head: str = "hsv", seed: int = 1) -> CoordMLP:
    """A float32 network: "dense"; "pruned" (65% of the weights masked, some units dead);
    "population" (three networks, member 2 is scored)."""
    net = CoordMLP(ARCH, head=head, seed=seed, population=3 if kind == "population" else 1, init_scale=1.5)
    if kind == "pruned":
        g = torch.Generator().manual_seed(seed + 10)
        for i, w in enumerate(net.weights):
            net.set_mask(i, (torch.rand(w.shape[1:], generator=g) < 0.35).float())
    return net


def _compare(net, res, member=0, deltas=(-2.0, -0.5, 1.0)):
    """(fused images, max |fused − naive|, max |torch − naive|) over every non-zero weight × δ."""
    params = emc2.nonzero_params(net, member)
    P = np.repeat(params, len(deltas), axis=0)
    D = np.tile(np.asarray(deltas), len(params))
    kw = dict(member=member, device="cpu", dtype=torch.float32, memory_bytes=300_000)
    eng = emc2.PerturbationEngine(net, res, engine="fused", **kw)
    assert eng.engine_used == "fused" and eng.engine_note == ""
    got = eng.render(P, D)
    ref = emc2.PerturbationEngine(net, res, engine="torch", **kw).render(P, D)
    one = net.select(member)
    naive = torch.stack([emc2.naive_render(one, p, d, res) for p, d in zip(P, D)])
    assert not torch.equal(got, eng.base.expand_as(got))  # the perturbations do move the image
    return got, (got - naive).abs().max().item(), (ref - naive).abs().max().item()


@needs_kernel
@pytest.mark.parametrize("res", RESOLUTIONS)
@pytest.mark.parametrize("head", ["hsv", "grey", "rgb"])
@pytest.mark.parametrize("kind", ["dense", "pruned", "population"])
def test_fused_images_equal_rerendering(kind, head, res):
    net = _net(kind, head)
    _, err, err_torch = _compare(net, res, member=2 if kind == "population" else 0)
    assert err <= TOL and err_torch <= TOL


@needs_kernel
@pytest.mark.parametrize("res", RESOLUTIONS)
def test_fused_images_equal_rerendering_picbreeder(picbreeder_dir, res):
    from volratio.data import picbreeder

    net = picbreeder.layerized("skull")  # sparse, cache units, 12 layers; every non-zero weight
    _, err, err_torch = _compare(net, res, deltas=(-1.0, 0.5))
    assert err <= TOL and err_torch <= TOL


class ThresholdJudge(judges.Judge):
    """Kept ⇔ RMS distance to `ref` below `tol`: a judge with a known answer."""

    name = "threshold"

    def __init__(self, ref, tol):
        self.ref, self.tol = ref.double(), tol

    def settings(self):
        return {"tol": self.tol}

    def _judge(self, images, label):
        d = ((judges.as_images(images) - self.ref) ** 2).mean(dim=(1, 2, 3)).sqrt().numpy()
        return d < self.tol, d


@needs_kernel
@pytest.mark.parametrize("kind", ["dense", "pruned"])
def test_fused_scores_equal_the_naive_scores(kind):
    net, res, deltas = _net(kind), 16, (-1.0, 0.5)
    params = emc2.nonzero_params(net)
    base = net.render(res)[0].detach()
    naive = torch.stack([emc2.naive_render(net, p, d, res) for p in params for d in deltas])
    dist = np.sort(((naive.double() - base.double()) ** 2).mean(dim=(1, 2, 3)).sqrt().numpy())
    lo = len(dist) // 4  # a threshold in the widest gap of the middle half: no distance lies near it
    k = lo + int(np.argmax(np.diff(dist[lo : 3 * lo + 1])))
    tol = float(dist[k] + dist[k + 1]) / 2
    assert dist[k + 1] - dist[k] > 1e-4
    judge = ThresholdJudge(base, tol)
    want = (dist < tol).mean()  # the fraction kept, from the re-rendered images
    cfg = emc2.EMC2Config(deltas=deltas, res=res, device="cpu", dtype="float32", engine="fused")
    (got,) = emc2.score(net, [judge], "thing", cfg)
    (ref,) = emc2.score(net, [judge], "thing", emc2.EMC2Config(deltas=deltas, res=res, device="cpu", dtype="float32"))
    assert np.array_equal(got.scores, ref.scores)
    assert np.array_equal(got.table.verdict.to_numpy(), ref.table.verdict.to_numpy())
    assert got.table.verdict.mean() == pytest.approx(want)
    assert 0 < got.table.verdict.mean() < 1
    assert np.abs(got.table.distance.to_numpy() - ref.table.distance.to_numpy()).max() <= TOL


@needs_kernel
def test_fused_is_bit_for_bit_repeatable_across_runs_and_threads():
    net = _net("pruned", "rgb")
    P = np.repeat(emc2.nonzero_params(net), 2, axis=0)
    D = np.linspace(-2, 2, len(P))
    kw = dict(device="cpu", dtype=torch.float32, engine="fused")
    a = emc2.PerturbationEngine(net, 20, **kw)
    b = emc2.PerturbationEngine(net, 20, memory_bytes=20_000, **kw)  # other batches
    b._fused.threads = 2
    x, y = a.render(P, D), b.render(P, D)
    assert torch.equal(x, y)
    assert torch.equal(x, a.render(P, D))


@needs_kernel
def test_fused_gives_the_same_bits_in_every_build():
    """The builds differ only in instruction set (AVX-512, AVX2, baseline): no reassociation, fused
    multiply-adds only where the source writes them, so the bits are the same."""
    net = _net("pruned", "hsv")
    P = np.repeat(emc2.nonzero_params(net), 2, axis=0)
    D = np.linspace(-2, 2, len(P))
    eng = emc2.PerturbationEngine(net, 20, device="cpu", dtype=torch.float32, engine="fused")
    ref = eng.render(P, D)
    others = [v for v in ("avx2", "baseline") if v != fused_kernel.default_variant()]
    if fused_kernel.default_variant() == "baseline":
        others = []  # no AVX2 here: one build only
    for variant in others:
        eng._fused.lib = fused.load(variant)
        assert torch.equal(eng.render(P, D), ref), variant


@needs_kernel
def test_fused_work_is_the_cone_of_non_zero_weights():
    # a dense network: perturbing (kernel i, row r, col c) multiplies 1 + n_{i+2} + Σ_{l>i+1} n_l·n_{l+1}
    # weights per pixel (unit c, then its row of kernel i+1, then whole layers)
    net = CoordMLP("4;gaussian:6", head="rgb", seed=3, init_scale=1.5)
    res = 16
    eng = emc2.PerturbationEngine(net, res, device="cpu", dtype=torch.float32, engine="fused")
    widths = [4, 6, 6, 6, 6, 3]
    for i in range(5):
        eng.flops = 0.0
        eng.render([[i, 0, 1]], [0.5])
        above = sum(widths[l] * widths[l + 1] for l in range(i + 2, 5)) + (widths[i + 2] if i < 4 else 0)
        assert eng.flops == 2 * res * res * (1 + above)
    # a pruned one costs at most twice its non-zero weights above the perturbed unit (dense blocks
    # only where at least half the cone's weights are non-zero), and less than the dense network
    pruned = _net("pruned")
    ep = emc2.PerturbationEngine(pruned, res, device="cpu", dtype=torch.float32, engine="fused")
    ed = emc2.PerturbationEngine(_net("dense"), res, device="cpu", dtype=torch.float32, engine="fused")
    nnz_above = sum(int((m[0] != 0).sum()) for m in pruned.masks[1:])
    ep.render([[0, 0, int(c)] for c in np.flatnonzero(pruned.masks[0][0][0].numpy())], 1.0)
    n = int((pruned.masks[0][0][0] != 0).sum())
    assert ep.flops <= 2 * res * res * n * (1 + 2 * nnz_above)
    ed.render([[0, 0, c] for c in range(n)], 1.0)
    assert ep.flops < ed.flops


def test_fused_refusals_name_the_fix(monkeypatch):
    net = _net("dense")
    with pytest.raises(fused.FusedEngineError, match="dtype='float32' or engine='torch'"):
        emc2.PerturbationEngine(net.double(), 8, device="cpu", dtype=torch.float64, engine="fused")
    with pytest.raises(VolratioError, match="engine must be one of"):
        emc2.PerturbationEngine(net, 8, device="cpu", dtype=torch.float32, engine="fast")
    eng = emc2.PerturbationEngine(net.double(), 8, device="cpu", dtype=torch.float64, engine="auto")
    assert eng.engine_used == "torch" and "float32" in eng.engine_note  # float64: the torch path, and why
    # no compiler: "fused" raises with the fix, "auto" takes the torch path and says why
    monkeypatch.setenv("CXX", "no-such-compiler-volratio")
    monkeypatch.setattr(fused, "_loaded", {})
    monkeypatch.setattr(fused, "_refusals", {})
    with pytest.raises(fused_kernel.FusedKernelError, match="engine='torch'"):
        emc2.PerturbationEngine(net, 8, device="cpu", dtype=torch.float32, engine="fused")
    eng = emc2.PerturbationEngine(net, 8, device="cpu", dtype=torch.float32, engine="auto")
    assert eng.engine_used == "torch" and "no-such-compiler-volratio" in eng.engine_note
    with pytest.raises(LimitError, match="engine"):
        check_limits(emc2.EMC2Config(engine="fast"))


def _cli(argv):
    from volratio.commands import emc2 as cmd

    p = argparse.ArgumentParser()
    cmd.register(p.add_subparsers(dest="command"))
    args = p.parse_args(argv)
    return args.func(args)


@needs_kernel
def test_cli_scores_every_weight_and_says_which_engine(tmp_path, capsys):
    net = CoordMLP("3;gaussian:4,sin:2", seed=3, init_scale=2.0)
    f = tmp_path / "net.safetensors"
    net.save(f)
    # on the CPU: the fused engine is the CPU's (a CUDA machine's "auto" device takes the torch engine)
    common = ["emc2", str(f), "--target", "image:camera", "--deltas", "-1,1", "--res", "16", "--device", "cpu"]
    assert _cli([*common, "--dtype", "float32"]) == 0
    out = capsys.readouterr().out
    n = len(emc2.nonzero_params(net))
    assert f"{n} of {n} parameters" in out and "(engine fused)" in out
    assert _cli(common) == 0  # float64: the torch path, and the line that says why
    out = capsys.readouterr().out
    assert "(engine torch)" in out and "computes in float32" in out


@needs_kernel
def test_fused_layer_std_steps_equal_rerendering_with_the_scaled_step():
    net, res = _net("pruned"), 16
    cfg = emc2.EMC2Config(deltas=(-1.0, 0.5), res=res, device="cpu", dtype="float32", engine="fused",
                          delta_scale="layer_std")  # fmt: skip
    pert = emc2.render(net, cfg)
    scale = emc2.layer_scales(net)
    want = pert.D * scale[pert.P[:, 0]]
    assert np.array_equal(pert.steps, want) and not np.allclose(want, pert.D)
    got = torch.zeros(len(pert.P), res, res, 3)
    for idx, imgs in pert.images:
        got[torch.as_tensor(idx)] = imgs
    naive = torch.stack([emc2.naive_render(net, p, d, res) for p, d in zip(pert.P, want)])
    assert (got - naive).abs().max().item() <= TOL


@needs_kernel
def test_cli_delta_scale_layer_std(tmp_path, capsys):
    net = CoordMLP("3;gaussian:4,sin:2", seed=3, init_scale=2.0)
    f = tmp_path / "net.safetensors"
    net.save(f)
    common = ["emc2", str(f), "--target", "image:camera", "--deltas", "-1,1", "--res", "16", "--dtype", "float32"]
    assert _cli([*common, "--delta-scale", "layer_std", "--json"]) == 0
    scaled = json.loads(capsys.readouterr().out)
    assert scaled["config"]["delta_scale"] == "layer_std"
    assert _cli([*common, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["config"]["delta_scale"] == "absolute"
    with pytest.raises(SystemExit):
        _cli([*common, "--delta-scale", "relative"])
