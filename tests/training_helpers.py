"""Helpers shared by the tests of the hand-written training paths (tests/test_fast_train.py and
tests/test_fused_train.py): a seeded random target, a smooth one (the pruning and SP tests), a population with random masks, and the
eager (autograd) losses and gradients they are compared with, and the mark that skips a test of
the fused kernel where no C++ compiler can build it."""

import os
import shutil

import pytest
import torch

from volratio.nets import CoordMLP, coords
from volratio.train import TrainConfig, mse_per_network, train


def compiler_missing() -> str | None:
    """None where the C++ compiler the fused kernel is built with ($CXX, default g++) is on PATH,
    else the reason a test of the kernel skips."""
    cxx = os.environ.get("CXX", "g++")
    if shutil.which(cxx):
        return None
    return f"no C++ compiler {cxx!r} on PATH (install g++ or set CXX): the fused training kernel cannot be built"


needs_compiler = pytest.mark.skipif(compiler_missing() is not None, reason=compiler_missing() or "")
FUSED = pytest.param("fused", marks=needs_compiler)  # the fused path as a parameter that skips without a compiler


def random_target(res: int = 12, seed: int = 0) -> torch.Tensor:
    """A seeded `(res, res, 3)` image in [0, 1)."""
    g = torch.Generator().manual_seed(seed)
    return torch.rand(res, res, 3, generator=g)


def smooth_image(res: int) -> torch.Tensor:
    """A smooth `(res, res, 3)` colour image that every pruning and SP test fits (no data needed)."""
    g = coords(res)
    y, x = g[:, 0], g[:, 1]
    rgb = torch.stack([0.5 + 0.4 * torch.sin(2 * x), 0.5 + 0.4 * y * x, 0.5 + 0.3 * torch.cos(3 * y)], -1)
    return rgb.reshape(res, res, 3)


def sparse_net(arch: str, head: str = "hsv", population: int = 2, seed: int = 1) -> CoordMLP:
    """A population of `arch` with about 30% of every kernel's entries masked (seeded)."""
    net = CoordMLP(arch, head=head, population=population, seed=seed)
    g = torch.Generator().manual_seed(seed)
    for i in range(net.n_kernels):
        net.set_mask(i, (torch.rand(net.masks[i].shape, generator=g) > 0.3).float())
    return net


def eager_grads(net: CoordMLP, grid: torch.Tensor, flat: torch.Tensor):
    """`(losses (K,), gradients per kernel)` by autograd, leaving no `.grad` behind."""
    for w in net.weights:
        w.grad = None
    losses = mse_per_network(net, grid, flat)
    losses.sum().backward()
    grads = [w.grad.clone() for w in net.weights]
    for w in net.weights:
        w.grad = None
    return losses.detach(), grads


# the optimizer settings every training path is checked under against the eager path
OPTIMIZER_CASES = [
    ("adam", {}),
    ("adamw", {"weight_decay": 0.01}),
    ("sgd", {"lr": 0.05}),
    ("muon", {}),
    ("adam", {"grad_norm": True}),
]


def eager_and(path: str, net_fn, cfg, target=None):
    """`(eager result, result on `path`)`: two fresh networks from `net_fn()` trained with `cfg`."""

    t = random_target() if target is None else target
    eager = train(net_fn(), t, TrainConfig(**{**cfg.__dict__, "path": "eager"}))
    other = train(net_fn(), t, TrainConfig(**{**cfg.__dict__, "path": path}))
    return eager, other
