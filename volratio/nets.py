"""Masked coordinate MLPs (CPPN-style), with a population axis.

A network maps each pixel's input `(y, x, d, bias)` through `L` hidden layers of width `W` to an
output head. Every kernel has a binary mask of the same shape; the effective weight is
`weight * mask`, so a masked connection contributes exactly nothing and receives no gradient. There
are no bias vectors: as in Picbreeder, the constant `bias` input plays that role.

A `CoordMLP` always holds a *population* of K independent networks of one shape: kernels are
stored as `(K, fan_in, fan_out)` and evaluated with one batched matmul per layer. K = 1 is an
ordinary network. ρ estimation, seed sweeps and multi-start training use K > 1.

Conventions (from the FER repository's Picbreeder renderer, `../shared/data/picbreeder/README.md`):

- grid: `lin = linspace(-1, 1, res)`, `x, y = meshgrid(lin, lin, indexing="ij")`,
  `d = 1.4 * sqrt(x² + y²)`, `bias = 1`; inputs in the order `(y, x, d, bias)`;
- activations `sigmoid(z) = 2σ(z) − 1`, `gaussian(z) = 2·exp(−z²) − 1`; `cache` is the identity
  (a unit that carries a value up one layer);
- the `hsv` head: `rgb = hsv_to_rgb((h + 1) mod 1, clip(s, 0, 1), clip(|v|, 0, 1))`.

Used by every chapter; the book's first chapter ("Picbreeder networks and their SGD twins")
introduces it.
"""

from __future__ import annotations

import itertools
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
import torch
from safetensors import SafetensorError, safe_open
from safetensors.torch import save_file
from torch import nn

from .errors import ArchError, VolratioError
from .util import budget
from .util.device import generator, resolve_device
from .util.fileio import atomic_path

# ---------------------------------------------------------------------------------------------
# Activations


def _sigmoid2(z: torch.Tensor) -> torch.Tensor:
    return 2.0 * torch.sigmoid(z) - 1.0


class _Gaussian(torch.autograd.Function):
    """`2·exp(−z²) − 1` with a hand-written backward, `−4·z·exp(−z²)`: the same values as the
    composed expression, with a third of the elementwise passes (population training is bound by
    them; see `benchmarks/population.py`)."""

    @staticmethod
    def forward(ctx, z):
        e = z.square().neg_().exp_()
        ctx.save_for_backward(z, e)
        return e.mul(2.0).sub_(1.0)

    @staticmethod
    def backward(ctx, grad):
        z, e = ctx.saved_tensors
        return torch.mul(z, e).mul_(grad).mul_(-4.0)


def _gaussian(z: torch.Tensor) -> torch.Tensor:
    return _Gaussian.apply(z)


def _identity(z: torch.Tensor) -> torch.Tensor:
    return z


ACTIVATIONS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "cache": _identity,  # carries a value up one layer (Picbreeder layerization)
    "identity": _identity,
    "sin": torch.sin,
    "cos": torch.cos,
    "tanh": torch.tanh,
    "sigmoid": _sigmoid2,
    "gaussian": _gaussian,
    "relu": torch.relu,
}

HEADS = {"hsv": 3, "rgb": 3, "grey": 1}  # head name -> number of raw outputs


# ---------------------------------------------------------------------------------------------
# Architecture strings

_ARCH_RE = re.compile(r"^\s*(\d+)\s*;\s*(.+?)\s*$")


@dataclass(frozen=True)
class Arch:
    """Depth and per-unit activations of the hidden layers (the same in every layer).

    `groups` lists `(activation, count)`; the first `count` units use the first activation, and so
    on. Written as a string in the Picbreeder form `"L;act1:n1,act2:n2,…"`.
    """

    depth: int
    groups: tuple[tuple[str, int], ...]

    @property
    def width(self) -> int:
        return sum(n for _, n in self.groups)

    def unit_activations(self) -> list[str]:
        return [a for a, n in self.groups for _ in range(n)]

    def __str__(self) -> str:
        return f"{self.depth};" + ",".join(f"{a}:{n}" for a, n in self.groups)

    @classmethod
    def uniform(cls, depth: int, width: int, activation: str = "gaussian") -> "Arch":
        return cls.parse(f"{depth};{activation}:{width}")

    @classmethod
    def parse(cls, text: "str | Arch") -> "Arch":
        """Parse `"L;act:n,…"`. Raises `ArchError` naming what is wrong and how to write it."""
        if isinstance(text, Arch):
            return text
        if not isinstance(text, str):
            raise ArchError(f"arch must be a string like '4;gaussian:8', got {type(text).__name__}")
        m = _ARCH_RE.match(text)
        if not m:
            raise ArchError(
                f"arch {text!r} is not of the form 'L;act:n,act:n,…' "
                "(for example '4;gaussian:6,sin:2': 4 hidden layers of 8 units)"
            )
        depth = int(m.group(1))
        if depth < 1:
            raise ArchError(f"arch {text!r}: depth must be at least 1, got {depth}")
        groups = []
        for part in m.group(2).split(","):
            name, sep, count = part.strip().partition(":")
            name = name.strip()
            if not sep or not count.strip().isdigit():
                raise ArchError(
                    f"arch {text!r}: group {part.strip()!r} must be 'activation:count' with a positive integer count"
                )
            if name not in ACTIVATIONS:
                raise ArchError(f"arch {text!r}: unknown activation {name!r}; known: {', '.join(sorted(ACTIVATIONS))}")
            n = int(count)
            if n < 1:
                raise ArchError(f"arch {text!r}: group {name!r} has count {n}; counts must be ≥ 1")
            groups.append((name, n))
        return cls(depth, tuple(groups))


# ---------------------------------------------------------------------------------------------
# Pixel grid and colour


def coords(res: int, device: str | torch.device = "cpu", dtype=torch.float32) -> torch.Tensor:
    """The `(res·res, 4)` input grid `(y, x, d, bias)`, row-major over the image."""
    if int(res) < 1:
        raise VolratioError(f"resolution must be a positive integer, got {res}")
    lin = torch.linspace(-1.0, 1.0, int(res), dtype=torch.float64)
    x, y = torch.meshgrid(lin, lin, indexing="ij")
    d = 1.4 * torch.sqrt(x * x + y * y)
    grid = torch.stack([y, x, d, torch.ones_like(x)], dim=-1).reshape(-1, 4)
    return grid.to(device=device, dtype=dtype)


def hsv_to_rgb(h: torch.Tensor, s: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """HSV (hue in turns, all in [0, 1]) → RGB, stacked on a new last axis. Same values as
    `matplotlib.colors.hsv_to_rgb`, written piecewise-linearly so that it has gradients."""
    out = []
    for n in (5.0, 3.0, 1.0):  # r, g, b
        k = torch.remainder(n + h * 6.0, 6.0)
        out.append(v - v * s * torch.clamp(torch.minimum(k, 4.0 - k), 0.0, 1.0))
    return torch.stack(out, dim=-1)


def head_to_rgb(raw: torch.Tensor, head: str) -> torch.Tensor:
    """Raw network outputs `(..., n_out)` → RGB in [0, 1] `(..., 3)`.

    - `hsv`: Picbreeder colour (see module docstring);
    - `grey`: Picbreeder `ink` — brightness `clip(|o|, 0, 1)`, hue = saturation = 0;
    - `rgb`: `sigmoid(o)` per channel (a smooth choice for training on natural images).
    """
    if head == "hsv":
        h, s, v = raw[..., 0], raw[..., 1], raw[..., 2]
        return hsv_to_rgb(torch.remainder(h + 1.0, 1.0), s.clamp(0.0, 1.0), v.abs().clamp(0.0, 1.0))
    if head == "grey":
        v = raw[..., 0].abs().clamp(0.0, 1.0)
        return torch.stack([v, v, v], dim=-1)
    if head == "rgb":
        return torch.sigmoid(raw)
    raise ArchError(f"unknown head {head!r}; known: {', '.join(HEADS)}")


# ---------------------------------------------------------------------------------------------
# The network


def live_unit_mask(kernels: Sequence[torch.Tensor]) -> list[torch.Tensor]:
    """The one rule for a *live* hidden unit: it has a non-zero incoming and a non-zero outgoing
    entry. `kernels`: per layer `(K, fan_in, fan_out)` — masks or effective weights. Returns per
    hidden layer a `(K, W)` bool tensor. A unit missing either side cannot influence the output."""
    out = []
    for l in range(len(kernels) - 1):
        fan_in = (kernels[l] != 0).any(dim=1)  # (K, W)
        fan_out = (kernels[l + 1] != 0).any(dim=2)  # (K, W)
        out.append(fan_in & fan_out)
    return out


class CoordMLP(nn.Module):
    """A population of K masked coordinate MLPs of one architecture.

    Parameters
    ----------
    arch: `Arch` or string `"L;act:n,…"`.
    head: `"hsv"` (3 outputs, Picbreeder colour), `"grey"` (1 output) or `"rgb"` (3 outputs).
    population: K, the number of independent networks.
    n_inputs: 4 for `(y, x, d, bias)`.
    seed: seeds the LeCun-normal initialisation `N(0, 1/fan_in)` (FER's baseline init).
    masks: optional list of L+1 tensors `(fan_in, fan_out)` or `(K, fan_in, fan_out)`; default dense.
    init_scale: multiplies the initial weights (1.0 = LeCun normal).
    """

    def __init__(
        self,
        arch: "str | Arch",
        head: str = "hsv",
        population: int = 1,
        n_inputs: int = 4,
        seed: int = 0,
        masks: Sequence[torch.Tensor] | None = None,
        init_scale: float = 1.0,
        dtype: torch.dtype = torch.float32,
        device: str | torch.device = "cpu",
    ):
        super().__init__()
        self.arch = Arch.parse(arch)
        if head not in HEADS:
            raise ArchError(f"unknown head {head!r}; known: {', '.join(HEADS)}")
        if int(population) < 1:
            raise ArchError(f"population must be ≥ 1, got {population}")
        self.head = head
        self.population = int(population)
        self.n_inputs = int(n_inputs)
        self.provenance: dict = {"made_by": "CoordMLP", "seed": int(seed)}
        device = resolve_device(device)
        g = generator(seed)
        K, W = self.population, self.arch.width
        dims = [self.n_inputs] + [W] * self.arch.depth + [HEADS[head]]
        n_params = sum(fi * fo for fi, fo in itertools.pairwise(dims))
        budget.check(
            budget.network_bytes(n_params, K, torch.empty((), dtype=dtype).element_size()),
            f"a population of {K} network(s) {self.arch} ({n_params} weights each)",
            "use a smaller width, depth or population",
        )
        weights = []
        for fi, fo in zip(dims[:-1], dims[1:]):
            w = torch.randn(K, fi, fo, generator=g, dtype=torch.float64) * (init_scale / math.sqrt(fi))
            weights.append(nn.Parameter(w.to(device=device, dtype=dtype)))
        self.weights = nn.ParameterList(weights)
        for i, (fi, fo) in enumerate(zip(dims[:-1], dims[1:])):
            m = torch.ones(K, fi, fo, dtype=dtype, device=device)
            if masks is not None:
                m = self._check_mask(masks, i, (K, fi, fo)).to(device=device, dtype=dtype)
            self.register_buffer(f"mask{i}", m)
        self._build_activation_slices()
        self.apply_masks_()

    # -- structure -----------------------------------------------------------------------------

    @property
    def depth(self) -> int:
        return self.arch.depth

    @property
    def width(self) -> int:
        return self.arch.width

    @property
    def n_kernels(self) -> int:
        return self.arch.depth + 1

    @property
    def masks(self) -> list[torch.Tensor]:
        return [getattr(self, f"mask{i}") for i in range(self.n_kernels)]

    def set_mask(self, i: int, mask: torch.Tensor) -> None:
        """Replace kernel i's mask (broadcast over the population) and zero the masked weights."""
        cur = getattr(self, f"mask{i}")
        m = mask.to(device=cur.device, dtype=cur.dtype)
        if m.dim() == 2 and m.shape == cur.shape[1:]:
            m = m.expand_as(cur)
        if m.shape != cur.shape:
            raise ArchError(f"mask {i} has shape {tuple(m.shape)}, expected {tuple(cur.shape)}")
        if not torch.all((m == 0) | (m == 1)):
            raise ArchError(f"mask {i} must contain only 0 and 1")
        cur.copy_(m)
        self.apply_masks_()

    @staticmethod
    def _check_mask(masks, i, shape) -> torch.Tensor:
        if len(masks) <= i:
            raise ArchError(f"got {len(masks)} masks; the network has more kernels (mask {i} missing)")
        m = torch.as_tensor(masks[i])
        if m.dim() == 2:
            m = m.unsqueeze(0).expand(shape)
        if tuple(m.shape) != shape:
            raise ArchError(f"mask {i} has shape {tuple(m.shape)}, expected {shape} (K, fan_in, fan_out)")
        return (m != 0).to(torch.float64)

    def _build_activation_slices(self) -> None:
        self._slices = []
        start = 0
        for name, n in self.arch.groups:
            self._slices.append((ACTIVATIONS[name], start, start + n))
            start += n

    @torch.no_grad()
    def apply_masks_(self) -> None:
        """Set masked weights to exactly zero (called after every optimizer step)."""
        for w, m in zip(self.weights, self.masks):
            w.mul_(m)

    def effective_weights(self) -> list[torch.Tensor]:
        return [w * m for w, m in zip(self.weights, self.masks)]

    # -- evaluation ----------------------------------------------------------------------------

    def activate(self, z: torch.Tensor) -> torch.Tensor:
        """Apply the per-unit activations of a hidden layer to pre-activations `(..., W)`."""
        if len(self._slices) == 1:
            f, _, _ = self._slices[0]
            return f(z)
        return torch.cat([f(z[..., a:b]) for f, a, b in self._slices], dim=-1)

    def forward(self, x: torch.Tensor, return_features: bool = False):
        """Raw outputs `(K, P, n_out)` for inputs `(P, n_in)` or `(K, P, n_in)`.

        With `return_features=True` also returns the hidden activations, a list of `(K, P, W)`.
        """
        feats = []
        h = x
        for i, (w, m) in enumerate(zip(self.weights, self.masks)):
            z = torch.matmul(h, w * m)  # (K, P, fan_out)
            if i < self.arch.depth:
                h = self.activate(z)
                if return_features:
                    feats.append(h)
            else:
                h = z
        if h.dim() == 2:  # only when K dimension was absent everywhere (never with kernels (K,…))
            h = h.unsqueeze(0)
        return (h, feats) if return_features else h

    def to_rgb(self, raw: torch.Tensor) -> torch.Tensor:
        return head_to_rgb(raw, self.head)

    @torch.no_grad()
    def render(self, res: int = 64, chunk: int | None = None) -> torch.Tensor:
        """Images `(K, res, res, 3)` in [0, 1] (no autograd graph is kept; use `forward` and
        `to_rgb` to differentiate). `chunk` bounds the pixels evaluated at once."""
        dev = self.weights[0].device
        self.check_budget(res, chunk=chunk, what="rendering")
        grid = coords(res, device=dev, dtype=self.weights[0].dtype)
        if chunk is None or chunk >= grid.shape[0]:
            rgb = self.to_rgb(self(grid))
        else:
            rgb = torch.cat([self.to_rgb(self(grid[a : a + chunk])) for a in range(0, grid.shape[0], chunk)], 1)
        return rgb.reshape(self.population, res, res, 3)

    @torch.no_grad()
    def features(self, res: int = 64) -> list[torch.Tensor]:
        """Hidden activations as images: a list over layers of `(K, res, res, W)` (no autograd)."""
        self.check_budget(res, keep_layers=True, what="the feature maps of")
        grid = coords(res, device=self.weights[0].device, dtype=self.weights[0].dtype)
        _, feats = self(grid, return_features=True)
        return [f.reshape(self.population, res, res, -1) for f in feats]

    def check_budget(
        self,
        res: int,
        chunk: int | None = None,
        keep_layers: bool = False,
        training: bool = False,
        what: str = "evaluating",
    ) -> None:
        """Raise `BudgetError` before an evaluation at `res`×`res` that would not fit the memory
        budget (`volratio.util.budget`)."""
        res = int(res)
        if res < 1:
            raise VolratioError(f"resolution must be a positive integer, got {res}")
        pixels = res * res if chunk is None else min(res * res, int(chunk))
        item = self.weights[0].element_size()
        need = budget.forward_bytes(
            pixels, max(self.width, 1), self.depth, self.population, item, keep_layers=keep_layers, training=training
        )
        need += res * res * self.population * 3 * item  # the images themselves
        budget.check(
            need,
            f"{what} {self.population} network(s) of width {self.width} at {res}×{res} pixels",
            "lower the resolution (--res)",
        )

    # -- accounting ----------------------------------------------------------------------------

    @torch.no_grad()
    def nonzero(self) -> list[int]:
        """Number of non-zero effective weights of each network in the population."""
        return [int(sum((w[k] != 0).sum() for w in self.effective_weights())) for k in range(self.population)]

    @torch.no_grad()
    def live_units(self) -> list[list[int]]:
        """Per network, per hidden layer: the number of live units (`live_unit_mask` of the
        effective weights)."""
        alive = live_unit_mask(self.effective_weights())  # per hidden layer (K, W)
        return [[int(a[k].sum()) for a in alive] for k in range(self.population)]

    @torch.no_grad()
    def live_features(self, res: int = 64, member: int = 0) -> list:
        """Feature maps of one network, per hidden layer `(W, res, res)` float64 numpy, dead units
        (`live_unit_mask`) set to NaN — drawn blank by `volratio.report.plots.feature_mosaic`."""
        net = self.select(member)
        alive = live_unit_mask(net.effective_weights())  # per hidden layer (1, W)
        out = []
        for f, a in zip(net.features(res), alive):  # f: (1, res, res, W)
            maps = f[0].permute(2, 0, 1).cpu().numpy().astype(np.float64)  # (W, res, res)
            maps[~a[0].cpu().numpy()] = np.nan
            out.append(maps)
        return out

    def n_params(self) -> int:
        """Weights per network (masked or not)."""
        return sum(w[0].numel() for w in self.weights)

    # -- population ----------------------------------------------------------------------------

    def copy(self) -> "CoordMLP":
        """A new CoordMLP holding every member, copied (`select` of them all)."""
        return self.select(list(range(self.population)))

    def select(self, index: "int | Sequence[int]") -> "CoordMLP":
        """A new CoordMLP holding the chosen member(s) of the population (copied)."""
        idx = [index] if isinstance(index, int) else list(index)
        new = CoordMLP.__new__(CoordMLP)
        nn.Module.__init__(new)
        new.arch, new.head, new.n_inputs = self.arch, self.head, self.n_inputs
        new.population = len(idx)
        new.provenance = dict(self.provenance, selected=idx)
        new.weights = nn.ParameterList([nn.Parameter(w.detach()[idx].clone()) for w in self.weights])
        for i, m in enumerate(self.masks):
            new.register_buffer(f"mask{i}", m[idx].clone())
        new._build_activation_slices()
        return new

    @classmethod
    def stack(cls, nets: Sequence["CoordMLP"]) -> "CoordMLP":
        """Concatenate populations of the same arch and head into one."""
        first = nets[0]
        for n in nets[1:]:
            if str(n.arch) != str(first.arch) or n.head != first.head:
                raise ArchError(f"cannot stack {n.arch}/{n.head} with {first.arch}/{first.head}")
        new = first.select(list(range(first.population)))
        new.population = sum(n.population for n in nets)
        new.weights = nn.ParameterList(
            [nn.Parameter(torch.cat([n.weights[i].detach() for n in nets]).clone()) for i in range(first.n_kernels)]
        )
        for i in range(first.n_kernels):
            setattr(new, f"mask{i}", torch.cat([n.masks[i] for n in nets]).clone())
        new.provenance = {"made_by": "CoordMLP.stack", "parts": [n.provenance for n in nets]}
        return new

    @classmethod
    def from_kernels(
        cls,
        arch: "str | Arch",
        kernels: Sequence,
        head: str = "hsv",
        masks: Sequence | None = None,
        dtype: torch.dtype = torch.float32,
        provenance: dict | None = None,
    ) -> "CoordMLP":
        """Build a network from explicit kernels, each `(fan_in, fan_out)` or `(K, fan_in, fan_out)`.
        The mask defaults to the kernels' non-zero pattern."""
        ks = [torch.as_tensor(k, dtype=torch.float64) for k in kernels]
        ks = [k.unsqueeze(0) if k.dim() == 2 else k for k in ks]
        arch = Arch.parse(arch)
        n_in = ks[0].shape[1]
        expect = [n_in] + [arch.width] * arch.depth + [HEADS.get(head, -1)]
        got = [ks[0].shape[1]] + [k.shape[2] for k in ks]
        if len(ks) != arch.depth + 1 or got != expect:
            raise ArchError(f"kernels do not fit arch {arch} with head {head!r}: layer sizes {got}, expected {expect}")
        net = cls(arch, head=head, population=ks[0].shape[0], n_inputs=n_in, dtype=dtype)
        if masks is None:
            masks = [(k != 0) for k in ks]
        with torch.no_grad():
            for i, k in enumerate(ks):
                net.weights[i].copy_(k.to(dtype))
                m = torch.as_tensor(masks[i]) != 0
                net.set_mask(i, m if m.dim() == 3 else m.unsqueeze(0).expand_as(k))
        net.provenance = provenance or {"made_by": "from_kernels"}
        return net

    # -- persistence ---------------------------------------------------------------------------

    def save(self, path: "str | Path") -> Path:
        """Write weights and masks as safetensors; arch, head and provenance go in its JSON header."""
        path = Path(path)
        tensors = {}
        for i, (w, m) in enumerate(zip(self.weights, self.masks)):
            tensors[f"weight{i}"] = w.detach().cpu().contiguous()
            tensors[f"mask{i}"] = m.detach().cpu().to(torch.uint8).contiguous()
        meta = {
            "format": "volratio.CoordMLP/1",
            "arch": str(self.arch),
            "head": self.head,
            "population": self.population,
            "n_inputs": self.n_inputs,
            "provenance": self.provenance,
        }
        path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_path(path) as tmp:
            save_file(tensors, str(tmp), metadata={"volratio": json.dumps(meta)})
        return path

    @classmethod
    def load(cls, path: "str | Path", device: str | torch.device = "cpu") -> "CoordMLP":
        """Read a network written by `save` (no pickle involved: safetensors holds raw tensors).

        `safetensors.safe_open` parses the header and checks it against the file (JSON, dtypes,
        shapes against data offsets, offsets against the file size) without reading a tensor; then
        the volratio metadata with the arch and head, each kernel's dtype and shape against the
        arch, and the declared sizes against the memory budget are checked (`_check_header`), so
        that a damaged or hostile file is refused before any tensor is read; then weights holding
        NaN/Inf are refused."""
        path = Path(path)
        if path.is_dir():
            raise VolratioError(f"{path} is a folder, not a network file; give the path of a .safetensors file")
        if not path.is_file():
            raise VolratioError(f"{path}: no such network file (save one with `volratio train … --out {path}`)")
        try:
            with safe_open(str(path), framework="pt") as f:
                meta, names = _check_header(path, f)
                tensors = {k: f.get_tensor(k) for k in names}
        except (SafetensorError, OSError) as e:  # a damaged header or data, an unreadable file
            raise VolratioError(f"{path}: not a readable safetensors file ({e}); re-create it") from e
        n = len(names) // 2
        kernels = [tensors[f"weight{i}"] for i in range(n)]
        masks = [tensors[f"mask{i}"] for i in range(n)]
        for i, k in enumerate(kernels):
            if not torch.isfinite(k).all():
                raise VolratioError(
                    f"{path}: kernel {i} holds NaN or Inf weights (the training that wrote it diverged); "
                    "retrain the network or use an earlier save"
                )
        for i, m in enumerate(masks):
            if ((m != 0) & (m != 1)).any():
                raise VolratioError(
                    f"{path}: mask {i} holds values other than 0 and 1; re-create the file with CoordMLP.save"
                )
        net = cls.from_kernels(meta["arch"], kernels, head=meta["head"], masks=masks, dtype=kernels[0].dtype)
        prov = meta.get("provenance", {})
        net.provenance = prov if isinstance(prov, dict) else {"provenance": prov}
        return net.to(resolve_device(device))


_ST_BYTES = {"F32": 4, "F64": 8, "U8": 1, "BOOL": 1}  # bytes per element of the dtypes a saved network holds


def _check_header(path: Path, f) -> tuple[dict, list[str]]:
    """Check an open safetensors file (`safetensors.safe_open`, header already parsed by it) as a
    saved network (see `CoordMLP.load`), reading no tensor; returns the volratio metadata and the
    tensor names to read (`weight0, mask0, …`)."""

    def bad(msg: str) -> VolratioError:
        return VolratioError(f"{path}: {msg}")

    raw = (f.metadata() or {}).get("volratio")
    if raw is None:
        raise bad("safetensors file without volratio metadata; not a saved CoordMLP (save networks with CoordMLP.save)")
    try:
        meta = json.loads(raw)
    except ValueError:
        raise bad("its volratio metadata is not JSON; re-create it with CoordMLP.save") from None
    if not isinstance(meta, dict) or meta.get("format") != "volratio.CoordMLP/1":
        raise bad("its volratio metadata is not a volratio.CoordMLP/1 object; re-create it with CoordMLP.save")
    for key, typ in (("arch", str), ("head", str)):
        if not isinstance(meta.get(key), typ):
            raise bad(f"its metadata has no {key!r} string; re-create it with CoordMLP.save")
    if meta["head"] not in HEADS:
        raise bad(f"unknown head {meta['head']!r} in its metadata (known: {', '.join(HEADS)}); re-create it")
    try:
        arch = Arch.parse(meta["arch"])
    except VolratioError as e:
        raise bad(f"its metadata holds a bad arch ({e}); re-create it") from None
    K = meta.get("population", 1)
    n_in = meta.get("n_inputs", 4)
    if not (isinstance(K, int) and K >= 1 and isinstance(n_in, int) and n_in >= 1):
        raise bad(f"population {K!r} / n_inputs {n_in!r} in its metadata are not positive integers; re-create it")
    dims = [n_in] + [arch.width] * arch.depth + [HEADS[meta["head"]]]
    present = set(f.keys())
    names, total = [], 0
    for i, (fi, fo) in enumerate(itertools.pairwise(dims)):
        for name, dtypes in ((f"weight{i}", ("F32", "F64")), (f"mask{i}", ("U8", "BOOL", "F32", "F64"))):
            if name not in present:
                raise bad(f"tensor {name} is missing for arch {arch}; the file is damaged — re-create it")
            info = f.get_slice(name)
            dt, shape = info.get_dtype(), list(info.get_shape())
            if dt not in dtypes:
                raise bad(f"tensor {name} has dtype {dt}; a saved network holds {' or '.join(dtypes)} — re-create it")
            if shape != [K, fi, fo]:
                raise bad(
                    f"tensor {name} has shape {shape}, but arch {arch} with head {meta['head']} needs {[K, fi, fo]}; re-create it"
                )
            names.append(name)
            total += K * fi * fo * _ST_BYTES[dt]
    budget.check(total * 3, f"{path}: loading a network of {total} bytes of tensors", "load it on a larger machine")
    return meta, names
