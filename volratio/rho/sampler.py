"""The float sampler of the Boolean model: random masked threshold networks and their classifier.

A random masked threshold network on n input bits (±1) has L threshold layers: L−1 hidden layers
of width W and one output unit; layer 1 reads the inputs, every later layer reads only the layer
below. A unit computes `h = +1 if h_prev·(w⊙m) + b > 0 else −1`. Random configurations
(`SamplerConfig`):
- weights `ternary` (uniform on {−1, 0, +1}) or `gaussian` (N(0, 1/fan_in));
- masks `bernoulli` (each connection kept with probability p) or `fanin` (each unit keeps exactly
  `fan_in` incoming connections, chosen uniformly);
- biases are never masked: uniform on {−1, 0, +1} (ternary) or N(0, 1/fan_in) (gaussian).

`sample_networks` draws a batch as tensors (torch, CUDA if available; the `engine="float"` path of
`volratio.rho.montecarlo`), `forward` evaluates them on all 2ⁿ inputs by batched matmuls, and
`classify` decides, for each network, whether it is a **solution** (its output table equals the
target's) and whether the solution is **compositional** (see the package docstring,
`volratio.rho`). The bit-sliced engine (`volratio.rho.bitslice`) draws the same distribution and
hands its solutions to the same compositional check. `cell_seed` gives every (seed, W, L, batch)
its own random stream.

Chapter: "The volume-ratio argument" (book/volume_ratio.md).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from ..errors import VolratioError
from ..util.device import resolve_device
from ..util.limits import at_least, between
from .bitslice import DrawSpec
from .boolean import BooleanTarget, input_table


class RhoError(VolratioError, ValueError):
    """A ρ estimation request that cannot be carried out as asked."""


# ---------------------------------------------------------------------------------------------
# Sampling configuration


@dataclass(frozen=True)
class SamplerConfig:
    """How random masked threshold networks are drawn (see module docstring)."""

    weights: str = "ternary"  # "ternary" (uniform {−1,0,+1}; exact enumeration possible) or "gaussian"
    masks: str = "bernoulli"  # "bernoulli" (density p) or "fanin" (exactly fan_in inputs per unit)
    p: float = (
        0.8  # mask density for "bernoulli" (0.8: P(weight = 0) = 0.47; the largest volumes on the book's targets)
    )
    fan_in: int = 2  # incoming connections per unit for "fanin" (capped at the layer's fan-in)
    batch: int = 1 << 16  # float engine: networks per batched draw; part of its random stream
    device: str = "auto"  # float engine: "auto" = CUDA if available (the bits engine runs on CPU)
    confidence: float = 0.95  # interval confidence level
    interval: str = "wilson"  # "wilson" or "clopper-pearson"
    engine: str = "bits"  # "bits": bit-sliced uint64 truth tables (volratio.rho.bitslice); "float": batched matmuls
    chunk: int = 4096  # bits engine: networks per independent random stream; part of its random stream
    workers: int = 1  # bits engine: worker processes (1 = in-process); the counts do not depend on it

    # allowed values, checked when a config is parsed (`volratio.util.limits`); `__post_init__` the choices
    LIMITS = {"p": between(0, 1, open_lo=True), "fan_in": at_least(1), "batch": at_least(1),
              "confidence": between(0, 1, open_lo=True), "chunk": between(1, 1 << 16), "workers": between(1, 64)}  # fmt: skip

    def __post_init__(self):
        if self.weights not in ("ternary", "gaussian"):
            raise RhoError(f"weights={self.weights!r}: use 'ternary' or 'gaussian'")
        if self.masks not in ("bernoulli", "fanin"):
            raise RhoError(f"masks={self.masks!r}: use 'bernoulli' or 'fanin'")
        if not 0.0 < self.p <= 1.0:
            raise RhoError(f"mask density p={self.p} must lie in (0, 1]")
        if self.fan_in < 1:
            raise RhoError(f"fan_in={self.fan_in} must be ≥ 1")
        if self.interval not in ("wilson", "clopper-pearson"):
            raise RhoError(f"interval={self.interval!r}: use 'wilson' or 'clopper-pearson'")
        if self.engine not in ("bits", "float"):
            raise RhoError(f"engine={self.engine!r}: use 'bits' (bit-sliced, CPU) or 'float' (batched matmuls)")
        if not 1 <= self.chunk <= 1 << 16:
            raise RhoError(f"chunk={self.chunk}: networks per random stream must lie in 1..65536")
        if not 1 <= self.workers <= 64:
            raise RhoError(f"workers={self.workers}: use 1..64 worker processes (at most the free cores)")

    def draw_spec(self):
        """The fields the bit-sliced sampler needs (`volratio.rho.bitslice.DrawSpec`)."""
        return DrawSpec(self.weights, self.masks, self.p, self.fan_in)

    def weight_probs(self) -> tuple[float, float, float]:
        """P(effective weight = −1, 0, +1) for ternary weights under Bernoulli masks."""
        q = self.p / 3.0
        return (q, 1.0 - 2.0 * q, q)


def layer_dims(n: int, W: int, L: int) -> list[tuple[int, int]]:
    """(fan_in, fan_out) of each of the L threshold layers."""
    if L < 1 or (L > 1 and W < 1):
        raise RhoError(f"need L ≥ 1 layers and W ≥ 1 when L > 1 (got W={W}, L={L})")
    dims = [n] + [W] * (L - 1) + [1]
    return list(zip(dims[:-1], dims[1:]))


@dataclass
class Nets:
    """A batch of B networks: `weights[l]` (B, fan_in, fan_out) effective (masked) weights,
    `biases[l]` (B, fan_out)."""

    weights: list[torch.Tensor]
    biases: list[torch.Tensor]

    @property
    def batch(self) -> int:
        return self.weights[0].shape[0]

    def take(self, idx: torch.Tensor) -> "Nets":
        return Nets([w[idx] for w in self.weights], [b[idx] for b in self.biases])


def sample_networks(
    n: int, W: int, L: int, B: int, cfg: SamplerConfig, gen: torch.Generator, device=None, dtype=torch.float32
) -> Nets:
    """Draw B random masked threshold networks (on CPU from `gen`, then moved to `device`)."""
    device = resolve_device(device or cfg.device)
    ws, bs = [], []
    for fi, fo in layer_dims(n, W, L):
        if cfg.masks == "bernoulli" and cfg.weights == "ternary":
            # one uniform per weight gives mask and sign at once, in place:
            # u − ½ scaled so that |·| ≥ 1 exactly when |u − ½| ≥ ½ − p/3, then truncated to {−1, 0, 1}
            q = cfg.p / 3.0
            w = torch.rand(B, fi, fo, generator=gen).sub_(0.5)
            w = w.mul_(1.0 / (0.5 - q)).trunc_().clamp_(-1.0, 1.0).to(dtype)  # q ≤ 1/3 < 1/2
        else:
            if cfg.masks == "bernoulli":
                m = torch.rand(B, fi, fo, generator=gen) < cfg.p
            else:  # exactly min(fan_in, fi) incoming connections per unit: top-k of uniform noise
                k = min(cfg.fan_in, fi)
                order = torch.rand(B, fi, fo, generator=gen).argsort(dim=1)
                m = order < k
            if cfg.weights == "ternary":
                w = torch.randint(-1, 2, (B, fi, fo), generator=gen).to(dtype)
            else:
                w = torch.randn(B, fi, fo, generator=gen).to(dtype) / math.sqrt(fi)
            w = w * m.to(dtype)
        if cfg.weights == "ternary":
            b = torch.randint(-1, 2, (B, fo), generator=gen).to(dtype)
        else:
            b = torch.randn(B, fo, generator=gen).to(dtype) / math.sqrt(fi)
        ws.append(w.to(device))
        bs.append(b.to(device))
    return Nets(ws, bs)


def inputs(n: int, device=None, dtype=torch.float32) -> torch.Tensor:
    """All 2ⁿ inputs as ±1, (2ⁿ, n) — same row order as `BooleanTarget.table`."""
    return torch.as_tensor(input_table(n), dtype=dtype, device=device)


def forward(nets: Nets, X: torch.Tensor, keep: bool = False):
    """Output tables (B, P) in ±1; with `keep=True` also the per-layer pre-activations
    [(B, P, W_l)] and unit outputs [(B, P, W_l)] (the inputs, broadcast, first)."""
    h = X  # (P, n) shared by every network
    zs, hs = [], [X.expand(nets.batch, *X.shape)] if keep else []
    for w, b in zip(nets.weights, nets.biases):
        z = torch.baddbmm(b[:, None, :], h.expand(nets.batch, *h.shape[-2:]), w)  # (B, P, fan_out)
        if keep:
            zs.append(z)
            h = torch.where(z > 0, 1.0, -1.0).to(z.dtype)
            hs.append(h)
        else:
            h = z.gt_(0).mul_(2).sub_(1)  # ±1 in place
    out = h[..., 0]  # (B, P)
    return (out, zs, hs) if keep else out


# ---------------------------------------------------------------------------------------------
# Classification


def classify(nets: Nets, target: BooleanTarget, chunk: int = 1024) -> tuple[torch.Tensor, torch.Tensor]:
    """(solution, compositional), two bool tensors (B,). Only solutions are examined in detail."""
    dev = nets.weights[0].device
    dtype = nets.weights[0].dtype
    X = inputs(target.n, dev, dtype)
    tab = torch.as_tensor(target.table, device=dev, dtype=dtype)
    out = forward(nets, X)
    sol = (out == tab).all(dim=1)
    comp = torch.zeros_like(sol)
    idx = torch.nonzero(sol).flatten()
    for a in range(0, idx.numel(), chunk):
        part = idx[a : a + chunk]
        comp[part] = _compositional(nets.take(part), target, X)
    return sol, comp


def _compositional(nets: Nets, target: BooleanTarget, X: torch.Tensor) -> torch.Tensor:
    """For networks already known to be solutions: is every influencing unit a consistent node?"""
    dev, dtype = X.device, X.dtype
    S, P, m = nets.batch, X.shape[0], target.n_nodes
    _, zs, hs = forward(nets, X, keep=True)
    T = torch.as_tensor(target.node_tables, device=dev, dtype=dtype)  # (P, m)
    allowed = torch.zeros(m + 1, m + 1, dtype=torch.bool, device=dev)  # index m = unlabelled
    allowed[:m, :m] = torch.as_tensor(target.allowed(), device=dev)
    # labels and constancy of every layer's units: inputs, hidden layers, output
    labels = [torch.arange(target.n, device=dev).expand(S, -1)]
    const = [torch.zeros(S, target.n, dtype=torch.bool, device=dev)]
    for h in hs[1:-1]:
        match = torch.einsum("spw,pm->swm", h, T).abs() == P  # equal up to negation
        lab = torch.where(match.any(-1), match.to(torch.int8).argmax(-1), m)
        labels.append(lab)
        const.append(h.sum(1).abs() == P)
    labels.append(torch.full((S, 1), target.root, device=dev))
    const.append(torch.zeros(S, 1, dtype=torch.bool, device=dev))
    ok = torch.ones(S, dtype=torch.bool, device=dev)
    infl = torch.ones(S, 1, dtype=torch.bool, device=dev)  # the output influences
    for j in range(len(nets.weights) - 1, -1, -1):  # consumer layer j+1, producer layer j
        z, h, w = zs[j], hs[j], nets.weights[j]  # (S,P,Wc), (S,P,Wp), (S,Wp,Wc)
        fire = z > 0
        # the producers computing the same function up to negation flip together (a node's value
        # changes in every unit that carries it: single flips would miss redundant copies)
        same = (torch.einsum("spu,spv->suv", h, h).abs() == P) & ~const[j][:, :, None] & ~const[j][:, None, :]
        contrib = h[..., None] * w[:, None]  # (S,P,Wp,Wc)
        group = torch.einsum("suv,spvc->spuc", same.to(dtype), contrib)  # (S,P,Wp,Wc)
        flipped = (z[:, :, None, :] - 2.0 * group) > 0
        used = (flipped != fire[:, :, None, :]).any(dim=1)  # (S,Wp,Wc): the group changes the consumer
        used &= (w != 0) & ~const[j][:, :, None] & infl[:, None, :]
        pair_ok = allowed[labels[j + 1][:, None, :], labels[j][:, :, None]]  # (S,Wp,Wc)
        ok &= ~(used & ~pair_ok).flatten(1).any(dim=1)
        infl = used.any(dim=2)  # (S, Wp)
    return ok


def cell_seed(seed: int, W: int, L: int, chunk: int) -> int:
    """Independent stream per (seed, W, L, chunk): results do not depend on the grid's order."""
    return int(np.random.SeedSequence([int(seed), int(W), int(L), int(chunk)]).generate_state(1)[0])


def n_params(n: int, W: int, L: int) -> int:
    return sum(fi * fo + fo for fi, fo in layer_dims(n, W, L))
