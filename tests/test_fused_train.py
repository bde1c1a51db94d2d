"""The fused training path (`volratio.train.fused`, `TrainConfig(path="fused")`) against the eager one.

Tolerances (the ones `volratio.train.fused` documents): the kernel sums matmuls and losses in its
own order and computes `exp` with its own polynomial, so before the first step the losses agree
with the eager path to 1e-6 relative and the gradients to 2e-5 of the largest entry of each
kernel; after 20–25 steps the losses agree to 1e-3 relative under Adam, AdamW and SGD (rounding
differences grow under training). With Muon (bfloat16 orthogonalisation, see
`tests/test_fast_train.py`) the first steps agree to 2e-2 and the final loss to 30%. Repeatability
is exact: same inputs → the same bits, whatever the thread count or the kernel's build.

The kernel is compiled once for this module, into a temporary cache folder (a few seconds). The
tests that need it skip, with the reason, where no C++ compiler exists; the refusals, and the
"auto" path's choice of the fast path without a compiler, run everywhere.
"""

import numpy as np
import pytest
import torch
from training_helpers import OPTIMIZER_CASES, compiler_missing, eager_and, needs_compiler
from training_helpers import eager_grads as _eager_grads
from training_helpers import random_target as _target
from training_helpers import sparse_net as _sparse_net

from volratio.errors import VolratioError
from volratio.nets import CoordMLP, coords
from volratio.train import TrainConfig, auto_note, fused_kernel, resolve_path, train
from volratio.train.fused import FusedPathError, FusedStep

RES = 12  # 144 pixels: two full tiles of 64 and a partial one
MIXED = "3;gaussian:2,sin:2,sigmoid:1,tanh:1,cos:1,relu:1,identity:1,cache:1"
LOSS0_RTOL = 1e-6
GRAD_RTOL = 2e-5
LOSS_RTOL = 1e-3


@pytest.fixture(scope="module")
def kernel(tmp_path_factory):
    """Build the kernel once, into a fresh cache folder, and keep it loaded for the module (skips
    where no C++ compiler exists)."""
    if compiler_missing():
        pytest.skip(compiler_missing())
    mp = pytest.MonkeyPatch()
    mp.setenv(fused_kernel.ENV_CACHE, str(tmp_path_factory.mktemp("kernels")))
    mp.setattr(fused_kernel, "_loaded", {})
    lib = fused_kernel.load()
    yield lib
    mp.undo()


needs_kernel = pytest.mark.usefixtures("kernel")


def _check_step(net, res=RES):
    grid, flat = coords(res), _target(res).reshape(-1, 3)
    losses, grads = _eager_grads(net, grid, flat)
    step = FusedStep(net, grid, flat)
    with torch.no_grad():
        raw = net(grid)
    assert (step.raw() - raw).abs().max() <= 1e-5 * raw.abs().max()
    fused_losses = step.losses()
    step.backward()
    np.testing.assert_allclose(fused_losses.numpy(), losses.numpy(), rtol=LOSS0_RTOL)
    for i, (g, w) in enumerate(zip(grads, net.weights)):
        scale = g.abs().max().clamp_min(1e-30)
        assert (w.grad - g).abs().max() <= GRAD_RTOL * scale, f"kernel {i}"
        assert (w.grad[net.masks[i] == 0] == 0).all()  # masked entries get no gradient


@pytest.mark.parametrize("head", ["hsv", "grey", "rgb"])
@pytest.mark.parametrize(
    "arch", ["3;gaussian:6", "2;sin:5", "2;cos:4", "2;sigmoid:5", "2;tanh:4", "2;relu:5", MIXED, "2;identity:3"]
)
@needs_kernel
def test_gradients_match_autograd(arch, head):
    _check_step(_sparse_net(arch, head))


@pytest.mark.parametrize("arch", ["40;gaussian:40", "5;gaussian:16,sin:10,sigmoid:7", "1;tanh:1"])
@needs_kernel
def test_gradients_match_autograd_for_wide_deep_and_tiny_networks(arch):
    _check_step(CoordMLP(arch, population=2, seed=3, init_scale=0.5), res=9)


@pytest.mark.parametrize("optimizer, extra", OPTIMIZER_CASES)
@needs_kernel
def test_losses_match_eager_for_each_optimizer(optimizer, extra):
    cfg = TrainConfig(steps=25, optimizer=optimizer, device="cpu", **extra)
    eager, fused = eager_and("fused", lambda: _sparse_net("3;gaussian:6", population=3), cfg)
    np.testing.assert_allclose(fused.losses[0], eager.losses[0], rtol=LOSS0_RTOL)
    if optimizer == "muon":  # bfloat16 orthogonalisation: see the module docstring
        np.testing.assert_allclose(fused.losses[:6], eager.losses[:6], rtol=2e-2)
        np.testing.assert_allclose(fused.final_loss, eager.final_loss, rtol=0.3)
    else:
        np.testing.assert_allclose(fused.losses, eager.losses, rtol=LOSS_RTOL)
    assert fused.final_loss.mean() < fused.losses[0].mean()  # it trained
    for i in range(fused.net.n_kernels):  # masks stay zero (Muon's update would fill them)
        assert (fused.net.weights[i][fused.net.masks[i] == 0] == 0).all()
    assert fused.config["path"] == "fused" and fused.net.provenance["trained"]["path"] == "fused"


def _step_bits(net, **kw):
    grid, flat = coords(RES), _target().reshape(-1, 3)
    step = FusedStep(net, grid, flat, **kw)
    losses = step.losses()
    return [losses, *step.grads]


@needs_kernel
def test_same_bits_for_any_thread_count_and_build():
    """Threads split the population, and the builds differ only in instruction set: the bits are
    the same (no fused multiply-add, no reassociation; see volratio/train/csrc/fused_mlp.cpp)."""
    net = _sparse_net(MIXED, population=5)
    ref = _step_bits(net, threads=1)
    others = [_step_bits(net, threads=3)]
    variants = list(fused_kernel.VARIANT_FLAGS)  # best first: every build this CPU runs
    for variant in variants[variants.index(fused_kernel.cpu_variant()) :]:
        others.append(_step_bits(net, variant=variant))
    for other in others:
        for a, b in zip(ref, other):
            assert torch.equal(a, b)


def test_float64_and_non_cpu_tensors_are_refused_with_the_fix():
    net = CoordMLP("2;gaussian:3", dtype=torch.float64)
    with pytest.raises(FusedPathError, match="path='fast'"):
        train(net, _target(), TrainConfig(steps=1, device="cpu", path="fused"))
    net = CoordMLP("2;gaussian:3")
    grid = coords(RES).to("meta")
    with pytest.raises(FusedPathError, match="path='fast'"):
        FusedStep(net, grid, _target().reshape(-1, 3))


def test_a_missing_compiler_is_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.setattr(fused_kernel, "_loaded", {})
    monkeypatch.setattr(fused_kernel, "_refusals", {})
    monkeypatch.setenv(fused_kernel.ENV_CACHE, str(tmp_path))
    monkeypatch.setenv("CXX", "no-such-compiler-here")
    with pytest.raises(fused_kernel.FusedKernelError, match="needs a C\\+\\+ compiler.*path='fast'"):
        fused_kernel.load("baseline")
    assert "no-such-compiler-here" in fused_kernel.unavailable("baseline")
    with pytest.raises(fused_kernel.FusedKernelError, match="path='fast'"):  # path="fused" keeps the error
        train(CoordMLP("2;gaussian:3"), _target(), TrainConfig(steps=1, device="cpu", path="fused"))


def test_auto_trains_on_the_fast_path_where_no_compiler_exists(monkeypatch, tmp_path):
    """With $CXX pointing nowhere, "auto" is the fast path, bit for bit, and says so."""
    monkeypatch.setattr(fused_kernel, "_loaded", {})
    monkeypatch.setattr(fused_kernel, "_refusals", {})
    monkeypatch.setenv(fused_kernel.ENV_CACHE, str(tmp_path))
    monkeypatch.setenv("CXX", str(tmp_path / "nowhere" / "g++"))
    img = _target(8)
    a = train(CoordMLP("3;gaussian:4", seed=0), img, TrainConfig(steps=5, device="cpu", path="auto"))
    b = train(CoordMLP("3;gaussian:4", seed=0), img, TrainConfig(steps=5, device="cpu", path="fast"))
    assert a.path == "fast" and a.net.provenance["trained"]["path"] == "fast" and a.config["path"] == "auto"
    assert all(torch.equal(x, y) for x, y in zip(a.net.weights, b.net.weights))
    assert "compiler" in auto_note("auto", a.path) and auto_note("fast", "fast") == ""
    assert not list(tmp_path.glob("*.so*"))


@needs_compiler
def test_a_failing_build_is_a_clear_error_and_auto_then_trains_on_the_fast_path(monkeypatch, tmp_path):
    monkeypatch.setattr(fused_kernel, "_loaded", {})
    monkeypatch.setattr(fused_kernel, "_refusals", {})
    monkeypatch.setenv(fused_kernel.ENV_CACHE, str(tmp_path))
    broken = tmp_path / "broken.cpp"
    broken.write_text("this is not C++\n")
    monkeypatch.setattr(fused_kernel, "SOURCE", broken)
    with pytest.raises(fused_kernel.FusedKernelError, match="(?s)error.*path='fast'"):
        fused_kernel.load("baseline")
    assert not list(tmp_path.glob("*.so*"))  # no half-written library is left behind
    assert resolve_path("auto", CoordMLP("2;gaussian:3")) == "fast"  # the kernel does not build here


def test_the_kernel_is_cached_across_processes(kernel, monkeypatch):
    variant = fused_kernel.default_variant()
    assert fused_kernel.build_info[variant]["compiled"]  # the module's fixture built it
    monkeypatch.setattr(fused_kernel, "_loaded", {})  # as a new process would
    fused_kernel.load(variant)
    assert not fused_kernel.build_info[variant]["compiled"]  # … it loads the cached library
    assert fused_kernel.build_info[variant]["seconds"] < 5


def test_unknown_variant_is_refused():
    with pytest.raises(VolratioError, match="variant"):
        fused_kernel.flags("avx9000")


@needs_kernel
def test_auto_path_is_the_fused_kernel_for_float32_on_the_cpu_and_fast_otherwise():
    net = CoordMLP("3;gaussian:4", seed=0)
    assert resolve_path("auto", net) == "fused" and resolve_path("eager", net) == "eager"
    assert resolve_path("auto", CoordMLP("3;gaussian:4", seed=0).double()) == "fast"
    img = torch.rand(8, 8, 3, generator=torch.Generator().manual_seed(1))
    a, b = CoordMLP("3;gaussian:4", seed=0), CoordMLP("3;gaussian:4", seed=0)
    train(a, img, TrainConfig(steps=5, device="cpu", path="auto"))
    train(b, img, TrainConfig(steps=5, device="cpu", path="fused"))
    assert all(torch.equal(x, y) for x, y in zip(a.weights, b.weights))  # "auto" on the CPU is the kernel, bit for bit
