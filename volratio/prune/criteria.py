"""Importance criteria: small objects that return one score per prunable item (higher = keep).

Shaped like `torch.nn.utils.prune` and Torch-Pruning's importance classes (STYLE.md): a criterion
has `level` ("weight" or "unit") and `scores(net, calib)`, which returns

- for weights: a list over kernels of `(K, fan_in, fan_out)`;
- for units: a list over hidden layers of `(K, W)`.

Scores are pure functions of the network and the calibration data (the pixel grid and the target);
turning them into masks is `volratio.prune.masks`' job.

| criterion | item | score | reference |
| --- | --- | --- | --- |
| `Magnitude` | weight | `|w|` | Han et al. 2015; Frankle & Carbin 2019 (IMP) |
| `Wanda` | weight | `|w_ij| · ‖X_i‖₂` over all pixels | Sun et al. 2024 |
| `RandomScore` | weight or unit | i.i.d. uniform | the control |
| `Taylor` | unit | Σ over the unit's group of `|w·g|` (or `|w·g − ½ w² F|`, "param_mix") | Ma et al. 2023 (LLM-Pruner) |

Chapter: "Connectivity: which connections remain".
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from ..nets import CoordMLP, coords
from ..train import mse_per_network
from ..util.device import generator, resolve_device
from .masks import PruneError, check_finite_features


@dataclass
class CalibrationGrid:
    """What data-aware criteria look at: every pixel of the grid and the target colours."""

    grid: torch.Tensor  # (P, 4) inputs (y, x, d, bias)
    target: torch.Tensor  # (P, 3) or (K, P, 3) RGB in [0, 1]

    @classmethod
    def from_image(cls, image: torch.Tensor, net: CoordMLP) -> "CalibrationGrid":
        """From a target image `(res, res, 3)` or `(K, res, res, 3)`, on the network's device."""
        img = torch.as_tensor(image)
        res = img.shape[-2]
        w = net.weights[0]
        grid = coords(res, device=w.device, dtype=w.dtype)
        return cls(grid, img.to(device=w.device, dtype=w.dtype).reshape(*img.shape[:-3], res * res, 3))


@torch.no_grad()
def member_mse(net: CoordMLP, images: torch.Tensor) -> np.ndarray:
    """`(K,)` the MSE of each member of `net` against `images` (`(res, res, 3)` or `(K, res, res, 3)`)
    on the calibration grid, as numpy: what a pruning comparison calls a network's fit."""
    calib = CalibrationGrid.from_image(images, net)
    return mse_per_network(net, calib.grid, calib.target).cpu().numpy()


def place(net: CoordMLP, train_config) -> CoordMLP:
    """Move `net` to the device its retraining will use (`TrainConfig.device`, "auto" = CUDA when
    present), so that calibration data and retraining live on one device."""
    return net.to(resolve_device(train_config.device))


@torch.no_grad()
def feature_maps(net: CoordMLP, grid: torch.Tensor) -> list[torch.Tensor]:
    """Hidden activations `(K, P, W)` per layer; raises `PruneError` if any is NaN/Inf."""
    _, feats = net(grid, return_features=True)
    check_finite_features(feats)
    return feats


class Magnitude:
    """`|w|` of the effective (masked) weight."""

    level = "weight"

    def scores(self, net: CoordMLP, calib: CalibrationGrid | None = None) -> list[torch.Tensor]:
        return [w.detach().abs() for w in net.effective_weights()]


class Wanda:
    """Wanda (Sun et al. 2024): `|w_ij| · ‖X_i‖₂`, X_i = input i of the kernel over all pixels.

    The kernel is stored `(fan_in, fan_out)`, so Wanda's "row of the out×in matrix" — the group its
    scores are compared within — is a *column* here: all incoming weights of one output unit.
    """

    level = "weight"

    def input_norms(self, net: CoordMLP, calib: CalibrationGrid) -> list[torch.Tensor]:
        """Per kernel, `(K, fan_in)`: the L2 norm over pixels of each input of that kernel."""
        feats = feature_maps(net, calib.grid)
        K = net.population
        first = calib.grid.norm(dim=0).expand(K, -1)  # (K, 4)
        return [first] + [f.norm(dim=1) for f in feats]  # hidden: (K, P, W) -> (K, W)

    def scores(self, net: CoordMLP, calib: CalibrationGrid) -> list[torch.Tensor]:
        norms = self.input_norms(net, calib)
        return [w.detach().abs() * n[:, :, None] for w, n in zip(net.effective_weights(), norms)]


@dataclass
class RandomScore:
    """I.i.d. uniform scores: random pruning, the control for "how many" versus "which"."""

    seed: int = 0
    level: str = "weight"  # "weight" or "unit"

    def scores(self, net: CoordMLP, calib: CalibrationGrid | None = None) -> list[torch.Tensor]:
        g = generator(self.seed)
        dev = net.weights[0].device
        if self.level == "unit":
            return [torch.rand(net.population, net.width, generator=g).to(dev) for _ in range(net.depth)]
        return [torch.rand(tuple(w.shape), generator=g).to(dev) for w in net.weights]


@dataclass
class Taylor:
    """LLM-Pruner's group Taylor importance (Ma et al. 2023) for hidden units.

    The group of hidden unit j in layer l is {incoming weights `W_l[:, j]`, outgoing weights
    `W_{l+1}[j, :]`}. With g the gradient of the (full-image) loss:

    - `variant="first"`: element importance `|w·g|` (first-order Taylor estimate of the loss change
      when w is set to 0);
    - `variant="param_mix"`: `|w·g − ½·w²·F|`, F the mean over calibration batches of the squared
      per-batch gradient (the diagonal Fisher estimate of the Hessian LLM-Pruner uses).

    The group's importance is the sum over its elements (LLM-Pruner's "sum" aggregation).
    Calibration batches: the pixels split into `n_batches` interleaved sets (pixel p goes to batch
    p mod n_batches), each covering the whole image; LLM-Pruner uses its calibration sentences.
    """

    variant: str = "first"  # "first" | "param_mix"
    n_batches: int = 16  # calibration batches for F (param_mix only)
    level: str = "unit"

    def element_scores(self, net: CoordMLP, calib: CalibrationGrid) -> list[torch.Tensor]:
        """Per kernel `(K, fan_in, fan_out)`: the element importance before group aggregation."""
        if self.variant not in ("first", "param_mix"):
            raise PruneError(f"unknown Taylor variant {self.variant!r}; use first or param_mix")
        grads = self._grad(net, calib.grid, calib.target)
        ws = [w.detach() for w in net.effective_weights()]
        if self.variant == "first":
            return [(w * g).abs() for w, g in zip(ws, grads)]
        P = calib.grid.shape[0]
        fisher = [torch.zeros_like(w) for w in ws]
        for b in range(self.n_batches):
            idx = torch.arange(b, P, self.n_batches, device=calib.grid.device)
            tgt = calib.target[..., idx, :]
            for f, gb in zip(fisher, self._grad(net, calib.grid[idx], tgt)):
                f += gb * gb / self.n_batches
        return [(w * g - 0.5 * w * w * f).abs() for w, g, f in zip(ws, grads, fisher)]

    def scores(self, net: CoordMLP, calib: CalibrationGrid) -> list[torch.Tensor]:
        el = self.element_scores(net, calib)
        return [el[l].sum(dim=1) + el[l + 1].sum(dim=2) for l in range(net.depth)]  # (K, W) each

    @staticmethod
    def _grad(net: CoordMLP, grid: torch.Tensor, target: torch.Tensor) -> list[torch.Tensor]:
        """Gradient of Σ_k MSE_k with respect to each kernel (networks do not mix)."""
        for w in net.weights:
            w.grad = None
        mse_per_network(net, grid, target).sum().backward()
        grads = [w.grad.detach().clone() * m for w, m in zip(net.weights, net.masks)]
        for w in net.weights:
            w.grad = None
        return grads
