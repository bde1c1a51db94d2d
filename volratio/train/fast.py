"""The fast training step: a hand-written forward/backward pass for `CoordMLP` populations.

`volratio.train.train` with `TrainConfig(path="fast")` computes each step's losses and gradients
here instead of through autograd. Population training of small coordinate MLPs is bound by
elementwise passes over the `(K, pixels, W)` activations, not by the matmuls; this step makes
fewer of them:

- every buffer (pre-activations `z`, activations `h`, one gradient buffer) is allocated once per
  run and written in place (`out=`), so no pass pays for fresh memory;
- activation gradients are in closed form from the stored `z` and `h` (Gaussian: `dh/dz =
  −2·z·(1 + h)`; sigmoid and tanh: `c·(1 − h²)`; sin, cos, ReLU, identity), two passes per layer;
- per-unit constants of those gradients are folded into the (tiny) transposed kernels.

The forward pass performs the eager path's operations in the same order (same values bit for
bit); the head (HSV, grey, RGB) and the loss run through autograd on the `(K, P, n_out)` outputs
only, so they are exactly `volratio.nets.head_to_rgb`. The backward pass differs from autograd's
in the order of a few roundings per element, so losses agree with the eager path to float
rounding after one step and drift by rounding amplified over many steps (`tests/test_fast_train.py`
states the tolerance). Same seed, same device (CPU) → bit-identical results.

`torch.compile` of the eager step was measured against this on the 2-core CPU machine: ~50 s of
compilation per shape and a slower step than this one, so the hand-written step is the fast path
(`benchmarks/training.py` measures both paths and the `torch.bmm` roofline).

Chapters: every chapter that trains (Part I, the depth, connectivity, optimizer, scenes and basin
experiments) through `volratio.train`.
"""

from __future__ import annotations

import torch

from ..errors import VolratioError
from ..nets import CoordMLP, head_to_rgb

# per activation: the constant `c` of its derivative dh/dz = c · d(z, h) (see `_derivative_`)
_GRAD_CONST = {
    "gaussian": -2.0,  # h = 2·exp(−z²) − 1: dh/dz = −4·z·exp(−z²) = −2·z·(1 + h)
    "sigmoid": 0.5,  # h = 2σ(z) − 1: dh/dz = 2σ(1 − σ) = (1 − h²)/2
    "tanh": 1.0,  # dh/dz = 1 − h²
    "sin": 1.0,  # dh/dz = cos z
    "cos": -1.0,  # dh/dz = −sin z
    "relu": 1.0,  # dh/dz = 1[z > 0]
    "identity": 1.0,
    "cache": 1.0,
}


class FastPathError(VolratioError):
    """A network the fast training step cannot train (an activation without a closed-form gradient)."""


class FastStep:
    """Forward and backward passes of one population on one pixel grid and target, with buffers
    allocated once. `losses()` runs the forward pass and returns `(K,)` per-network MSE (the same
    quantity as `volratio.train.mse_per_network`); `backward()` then sets every kernel's `.grad`
    to the gradient of the summed losses (masked entries exactly zero)."""

    def __init__(self, net: CoordMLP, grid: torch.Tensor, target: torch.Tensor):
        for name, _ in net.arch.groups:
            if name not in _GRAD_CONST:
                raise FastPathError(
                    f"activation {name!r} has no closed-form gradient in volratio.train.fast; "
                    "train this network with TrainConfig(path='eager')"
                )
        self.net, self.grid, self.target = net, grid, target
        K, P, W, L = net.population, grid.shape[0], net.width, net.depth
        kw = dict(device=grid.device, dtype=grid.dtype)
        self.z = [torch.empty(K, P, W, **kw) for _ in range(L)]  # (K, P, W) pre-activations per layer
        # (K, P, W) activations per layer; identity units share z's storage when the layer is all identity
        self.h = [self.z[i] if self._all_identity() else torch.empty(K, P, W, **kw) for i in range(L)]
        self.g = torch.empty(K, P, W, **kw)  # (K, P, W) gradient w.r.t. one layer's activations
        self.raw = torch.empty(K, P, net.weights[-1].shape[-1], **kw)  # (K, P, n_out) head inputs
        self.zero = torch.zeros((), **kw)
        self.one = torch.ones((), **kw)
        self.minus_one = torch.full((), -1.0, **kw)
        slices, a = [], 0
        for name, n in net.arch.groups:
            slices.append((name, a, a + n))
            a += n
        self.slices = slices
        const = torch.cat([torch.full((n,), _GRAD_CONST[name], **kw) for name, n in net.arch.groups])
        self.const = None if bool((const == 1).all()) else const.view(1, 1, W)  # scales Wᵀ's columns
        self.d_raw: torch.Tensor | None = None

    def _all_identity(self) -> bool:
        return all(name in ("identity", "cache") for name, _ in self.net.arch.groups)

    # -- forward -------------------------------------------------------------------------------

    def _activate(self, z: torch.Tensor, h: torch.Tensor) -> None:
        """h ← activation(z), the same operations as `CoordMLP.activate` (same values)."""
        for name, a, b in self.slices:
            zs, hs = (z, h) if len(self.slices) == 1 else (z[..., a:b], h[..., a:b])
            if name == "gaussian":  # 2·exp(−z²) − 1
                torch.addcmul(self.zero, zs, zs, value=-1.0, out=hs).exp_()
                torch.add(self.minus_one, hs, alpha=2.0, out=hs)
            elif name == "sigmoid":  # 2σ(z) − 1
                torch.sigmoid(zs, out=hs)
                torch.add(self.minus_one, hs, alpha=2.0, out=hs)
            elif name in ("identity", "cache"):
                if hs.data_ptr() != zs.data_ptr():
                    hs.copy_(zs)
            elif name == "relu":
                torch.clamp(zs, min=0.0, out=hs)
            else:  # sin, cos, tanh
                getattr(torch, name)(zs, out=hs)

    def losses(self) -> torch.Tensor:
        """(K,) per-network mean squared RGB error; keeps what `backward` needs."""
        net = self.net
        with torch.no_grad():
            self.weff = [w * m for w, m in zip(net.weights, net.masks)]  # (K, fan_in, fan_out)
            x = self.grid  # (P, n_in), broadcast over the population as in CoordMLP.forward
            for i in range(net.depth):
                torch.matmul(x, self.weff[i], out=self.z[i])  # (K, P, W)
                self._activate(self.z[i], self.h[i])
                x = self.h[i]
            torch.matmul(x, self.weff[-1], out=self.raw)  # (K, P, n_out)
        raw = self.raw.detach().requires_grad_(True)
        with torch.enable_grad():
            rgb = head_to_rgb(raw, net.head)  # (K, P, 3)
            losses = ((rgb - self.target) ** 2).mean(dim=(1, 2))  # (K,)
            (self.d_raw,) = torch.autograd.grad(losses.sum(), raw)  # (K, P, n_out)
        return losses.detach()

    # -- backward ------------------------------------------------------------------------------

    def _derivative_(self, z: torch.Tensor, h: torch.Tensor) -> None:
        """z ← d(z, h), the activation derivative without its constant (`_GRAD_CONST`)."""
        for name, a, b in self.slices:
            zs, hs = (z, h) if len(self.slices) == 1 else (z[..., a:b], h[..., a:b])
            if name == "gaussian":  # z·(1 + h)
                torch.addcmul(zs, hs, zs, out=zs)
            elif name in ("sigmoid", "tanh"):  # 1 − h²
                torch.addcmul(self.one, hs, hs, value=-1.0, out=zs)
            elif name == "sin":
                zs.cos_()
            elif name == "cos":
                zs.sin_()
            elif name == "relu":
                zs.gt_(0.0)
            else:
                zs.fill_(1.0)

    def backward(self) -> None:
        """Set `w.grad` of every kernel (call after `losses()`; the stored `z` are overwritten)."""
        if self.d_raw is None:
            raise VolratioError("FastStep.backward() needs a forward pass first; call losses()")
        net, L = self.net, self.net.depth
        grads = [None] * net.n_kernels
        with torch.no_grad():
            dz = self.d_raw  # (K, P, n_out)
            for i in range(L, -1, -1):
                x = self.h[i - 1] if i > 0 else self.grid  # (K, P, fan_in) or (P, n_in)
                grads[i] = torch.matmul(x.transpose(-1, -2), dz).mul_(net.masks[i])  # (K, fan_in, fan_out)
                if i == 0:
                    break
                wt = self.weff[i].transpose(1, 2)  # (K, fan_out, fan_in)
                if self.const is not None:
                    wt = wt * self.const  # fold dh/dz's per-unit constant into Wᵀ
                torch.bmm(dz, wt, out=self.g)  # (K, P, W) dL/dh · c
                if self._all_identity():  # h is z: dL/dz = dL/dh, into z's (no longer needed) storage
                    dz = self.z[i - 1].copy_(self.g)
                    continue
                self._derivative_(self.z[i - 1], self.h[i - 1])
                dz = self.z[i - 1].mul_(self.g)  # (K, P, W) dL/dz
        for w, g in zip(net.weights, grads):
            w.grad = g
        self.d_raw = None
