"""Flatness measured directly: the top Hessian eigenvalue of a network's loss (the optimizer study: `volratio.experiments.optimizers`).

Power iteration on Hessian-vector products (Pearlmutter 1994): `Hv` is the gradient of `g·v`,
where `g` is the gradient of the loss built with `create_graph=True` (`torch.autograd.grad`), so
the Hessian is never formed. The loss is the MSE of one network of a population on its target,
as a function of its kernels; masked weights enter the forward pass as `weight·mask`, so the
Hessian is that of the non-zero weights (masked coordinates have zero rows and columns).

Power iteration converges to the eigenvalue of largest *magnitude*; near a minimum the Hessian is
close to positive semi-definite and that is the top eigenvalue — the usual sharpness measure
(Keskar et al. 2017). `explicit_hessian` (torch.autograd.functional.hessian) is the reference the
tests compare against on tiny networks.

Chapter: "Optimization: Adam, Muon, SGD" (book/optimization.md).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch.func import functional_call

from ..nets import CoordMLP, coords
from ..util.device import generator
from . import mse_per_network


@dataclass
class Eigen:
    value: float  # the eigenvalue estimate (Rayleigh quotient at the last iterate)
    iters: int  # iterations run
    converged: bool  # relative change below tol before `iters` ran out
    history: list  # Rayleigh quotient per iteration


def _loss_fn(net: CoordMLP, image, member: int):
    img = torch.as_tensor(image)
    res = img.shape[-2]
    grid = coords(res, device=net.weights[0].device, dtype=net.weights[0].dtype)
    flat = img.to(device=grid.device, dtype=grid.dtype).reshape(res * res, 3)  # (P, 3)

    def loss():
        return mse_per_network(net, grid, flat)[member]

    return loss


def hvp(net: CoordMLP, image, vec: list[torch.Tensor], member: int = 0) -> list[torch.Tensor]:
    """Hessian-vector product `H v` of member `member`'s loss w.r.t. the kernels (`vec`: one tensor
    per kernel, shaped like `net.weights[i]`)."""
    params = list(net.weights)
    loss = _loss_fn(net, image, member)()
    grads = torch.autograd.grad(loss, params, create_graph=True)
    dot = sum((g * v).sum() for g, v in zip(grads, vec))
    return [h.detach() for h in torch.autograd.grad(dot, params)]


def top_eigenvalue(net: CoordMLP, image, member: int = 0, iters: int = 30, tol: float = 1e-4, seed: int = 0) -> Eigen:
    """Top (largest-magnitude) Hessian eigenvalue of member `member`'s MSE by power iteration."""
    g = generator(seed)
    masks = [m.detach() for m in net.masks]
    sel = [torch.zeros_like(m) for m in masks]
    for s, m in zip(sel, masks):
        s[member] = m[member]  # only this member's non-zero weights
    v = [torch.randn(w.shape, generator=g, dtype=torch.float64).to(w) * s for w, s in zip(net.weights, sel)]
    norm = torch.sqrt(sum((x * x).sum() for x in v))
    v = [x / norm for x in v]
    hist, lam, converged = [], 0.0, False
    for it in range(1, iters + 1):
        hv = [h * s for h, s in zip(hvp(net, image, v, member), sel)]
        lam_new = float(sum((a * b).sum() for a, b in zip(v, hv)))  # Rayleigh quotient (|v| = 1)
        hist.append(lam_new)
        n = torch.sqrt(sum((x * x).sum() for x in hv))
        if float(n) == 0.0:
            lam, converged = 0.0, True
            break
        v = [x / n for x in hv]
        if it > 1 and abs(lam_new - lam) <= tol * max(abs(lam_new), 1e-12):
            lam, converged = lam_new, True
            break
        lam = lam_new
    return Eigen(float(lam), len(hist), converged, hist)


def explicit_hessian(net: CoordMLP, image, member: int = 0) -> np.ndarray:
    """The full Hessian `(n, n)` over every entry of member `member`'s kernels (tiny networks only)."""
    names = [f"weights.{i}" for i in range(net.n_kernels)]
    base = {n: p.detach() for n, p in net.named_parameters()}
    shapes = [net.weights[i][member].shape for i in range(net.n_kernels)]
    sizes = [int(np.prod(s)) for s in shapes]
    img = torch.as_tensor(image)
    res = img.shape[-2]
    grid = coords(res, device=net.weights[0].device, dtype=net.weights[0].dtype)
    flat = img.to(device=grid.device, dtype=grid.dtype).reshape(res * res, 3)

    def f(theta):
        params = dict(base)
        for name, part, shape, w in zip(names, torch.split(theta, sizes), shapes, net.weights):
            full = w.detach().clone()
            full = torch.cat([full[:member], part.reshape(shape)[None], full[member + 1 :]])
            params[name] = full
        out = functional_call(net, params, (grid,))
        rgb = net.to_rgb(out)[member]  # (P, 3)
        return ((rgb - flat) ** 2).mean()

    theta0 = torch.cat([net.weights[i].detach()[member].reshape(-1) for i in range(net.n_kernels)])
    return torch.autograd.functional.hessian(f, theta0).detach().cpu().numpy()
