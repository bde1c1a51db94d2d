"""The fused training step: one C++ pass over the pixels computes a `CoordMLP` population's losses
and gradients.

`volratio.train.train` with `TrainConfig(path="fused")` computes each step's losses and gradients
here. The fast path (`volratio.train.fast`) is bound by memory: every elementwise operation is a
pass over `(K, P, W)` activations that do not fit in cache, and its head and loss (through
autograd) are a few tens more passes over `(K, P, 3)`. The kernel (`volratio/train/csrc/fused_mlp.cpp`,
built and cached by `volratio.train.fused_kernel`) instead takes the pixels 64 at a time and runs each
tile through the whole step while its activations stay in L1/L2: the masked matmuls and per-unit
activations of every layer (keeping each unit's activation derivative), the head
(`volratio.nets.head_to_rgb`: HSV, grey, RGB) and the squared error with its gradient, then
back-propagation, adding the tile's share of every kernel's gradient in a fixed order.

`losses()` therefore does the whole step's work and `backward()` hands the gradients over. Only
losses and gradients come from the kernel; optimizers, masks, gradient normalisation and
divergence handling are `volratio.train`'s, as for the other paths. Masked entries get exactly zero
gradient (the kernel's gradient is multiplied by the mask).

Agreement with the eager path: the kernel's matmuls and loss sum in another order than torch's,
and its `exp` (hence Gaussian, sigmoid and tanh units, and the RGB head) is a ~1-ulp polynomial
instead of torch's; so losses before the first step agree to float rounding and gradients to
rounding of the largest entry (`tests/test_fused_train.py` states the tolerances); the head's
gradient follows autograd's conventions at the kinks (clamp passes it on its closed interval,
|x|' = sign x). Results are bit-identical across runs, processes, thread counts and the kernel's
builds (threads split the population; see the kernel's header). float32 on the CPU only: float64
or CUDA networks raise `FusedPathError` naming `path="fast"`.

Chapters: every chapter that trains through `volratio.train` may choose this path;
`benchmarks/training.py` measures it.
"""

from __future__ import annotations

import ctypes

import torch

from ..errors import VolratioError
from ..nets import CoordMLP
from . import fused_kernel

# activation name -> the kernel's code (ACT_* in fused_mlp.cpp)
ACT_CODES = {"identity": 0, "cache": 0, "gaussian": 1, "sigmoid": 2, "tanh": 3, "sin": 4, "cos": 5, "relu": 6}
HEAD_CODES = {"hsv": 0, "grey": 1, "rgb": 2}  # head name -> HEAD_* in fused_mlp.cpp


class FusedPathError(VolratioError):
    """A network or tensor the fused training step cannot train (not float32, not on the CPU)."""


def _pointers(tensors: list[torch.Tensor]) -> ctypes.Array:
    return (ctypes.c_void_p * len(tensors))(*[t.data_ptr() for t in tensors])


class FusedStep:
    """Losses and gradients of one population on one pixel grid and target, in the fused kernel.
    `losses()` returns `(K,)` per-network MSE (the quantity of `volratio.train.mse_per_network`);
    `backward()` then sets every kernel's `.grad` to the gradient of the summed losses (masked
    entries exactly zero). Same interface as `FastStep`.

    net: a float32 CPU `CoordMLP`; grid: `(P, n_in)`; target: `(P, 3)` or `(K, P, 3)` RGB in [0, 1];
    variant: the kernel build (`volratio.train.fused_kernel`; default the best for this CPU);
    threads: threads splitting the population (default `torch.get_num_threads()`)."""

    def __init__(
        self,
        net: CoordMLP,
        grid: torch.Tensor,
        target: torch.Tensor,
        variant: str | None = None,
        threads: int | None = None,
    ):
        for what, t in [("network", net.weights[0]), ("pixel grid", grid), ("target", target)]:
            if t.device.type != "cpu":
                raise FusedPathError(
                    f"the fused training kernel runs on the CPU only, and the {what} is on {t.device}; "
                    "train on CUDA with TrainConfig(path='fast') (in an experiment's config: train_path = 'fast')"
                )
        if net.weights[0].dtype != torch.float32 or grid.dtype != torch.float32:
            raise FusedPathError(
                f"the fused training kernel computes in float32, and this network is {net.weights[0].dtype}; "
                "train it with TrainConfig(path='fast') (or convert it to float32)"
            )
        for name, _ in net.arch.groups:
            if name not in ACT_CODES:  # pragma: no cover - every activation of volratio.nets has a code
                raise FusedPathError(f"activation {name!r} has no code in volratio.train.fused")
        K, P = net.population, grid.shape[0]
        if grid.dim() != 2 or grid.shape[1] != net.n_inputs:
            raise FusedPathError(f"grid must be (pixels, {net.n_inputs}), got {tuple(grid.shape)}")
        if target.shape not in ((P, 3), (K, P, 3)):
            raise FusedPathError(f"target must be ({P}, 3) or ({K}, {P}, 3), got {tuple(target.shape)}")
        self.lib = fused_kernel.load(variant)
        self.net, self.grid = net, grid.contiguous()
        self.target = target.to(torch.float32).contiguous()
        self.threads = max(1, int(threads if threads is not None else torch.get_num_threads()))
        self.acts = torch.tensor([ACT_CODES[a] for a in net.arch.unit_activations()], dtype=torch.int32)
        self.shape = (P, net.n_inputs, K, net.depth, net.width, net.weights[-1].shape[-1])
        self.weff: list[torch.Tensor] = []
        self.grads: list[torch.Tensor] | None = None

    def _common(self) -> list:
        return [self.grid.data_ptr(), *self.shape, _pointers(self.weff), self.acts.data_ptr()]

    def _effective_weights(self) -> None:
        with torch.no_grad():  # (K, fan_in, fan_out) weight · mask
            self.weff = [(w * m).contiguous() for w, m in zip(self.net.weights, self.net.masks)]

    def raw(self) -> torch.Tensor:
        """(K, P, n_out) the network outputs before the head (as `CoordMLP.forward`, to rounding)."""
        self._effective_weights()
        P, K, n_out = self.shape[0], self.shape[2], self.shape[-1]
        out = torch.empty(K, P, n_out)
        self.lib.vr_fused_forward(*self._common(), out.data_ptr(), self.threads)
        return out

    def losses(self) -> torch.Tensor:
        """(K,) per-network mean squared RGB error; computes the gradients `backward` hands over."""
        self._effective_weights()
        losses = torch.empty(self.net.population)
        grads = [torch.empty_like(w) for w in self.weff]  # (K, fan_in, fan_out) dLoss/d(w·m)
        per_network = int(self.target.dim() == 3)
        self.lib.vr_fused_step(
            *self._common(),
            HEAD_CODES[self.net.head],
            self.target.data_ptr(),
            per_network,
            losses.data_ptr(),
            _pointers(grads),
            self.threads,
        )
        self.grads = grads
        return losses

    def backward(self) -> None:
        """Set `w.grad` of every kernel (call after `losses()`)."""
        if self.grads is None:
            raise VolratioError("FusedStep.backward() needs a forward pass first; call losses()")
        for w, g, m in zip(self.net.weights, self.grads, self.net.masks):
            w.grad = g.mul_(m)  # d(w·m)/dw = m: masked entries exactly zero
        self.grads = None
