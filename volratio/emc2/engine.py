"""The exact batched perturbation engine of EMC2 and the choice of parameters to perturb.

**The engine** (`PerturbationEngine`) renders every perturbed network exactly as re-rendering it
from scratch would, up to floating-point summation order (tested to ≤ 1e-6 in float64, the
default; float32 is faster and differs by up to ~1e-5 on long cache chains):

- changing `W_i[r, c]` by δ changes only unit `c` of layer i+1's pre-activation, by `δ · h_i[r]`;
  the activations *below* kernel i are computed once (base pass) and reused;
- above it only the *forward cone* of unit c changes: a set of units per layer, grown through the
  non-zero connections. A partial layer is recomputed as `z' = z + W[cone', cone] @ Δh_cone`; once
  the cone covers a whole layer the pass continues as a plain forward pass `z' = W @ h'`. So a
  sparse (Picbreeder) network recomputes a few units, a dense one whole layers;
- units that cannot reach the output (no non-zero path) are dropped before anything is computed
  (*dead-unit compaction*); perturbing a weight into such a unit leaves the image unchanged, exactly;
- perturbations sharing kernel and target unit are batched; target units with few perturbations
  (sparse networks) share one batch per kernel through the union of their cones (units outside an
  element's own cone get Δh = 0 exactly); batches are chunked under a memory cap (bytes);
- activations are stored units-major `(units, pixels)`, so each activation function acts in place
  on one contiguous block;
- everything runs on CPU or CUDA (`device="auto"`);
- `engine="fused"` hands each batch to the C++ kernel of `volratio.emc2.fused` instead (float32 on
  the CPU: one call renders a batch tile by tile, head included, over the cone's non-zero weights
  only); `engine="auto"` uses the faster of the two for the network's density on this machine where
  the kernel builds (`volratio.util.autopick`), else the torch path, and says which and why (`engine_note`).

`naive_render` is the reference it is tested and benchmarked against (copy, perturb, render).

**Picbreeder networks.** The layerized networks carry values through `cache` units whose incoming
weights are exactly 1, and select their outputs with weights of 1. `params_of(..., which="all")`
scores every non-zero layered weight; `which="genome"` only the genome's own connections. The
book's headline numbers use `"all"`: that is S over nz(θ) as defined, the same set an SGD network
of the same architecture is scored on; the genome-only curve is shown beside it.

Chapter: "EMC2-Bench" (book/emc2.md); benchmark: benchmarks/emc2_engine.py.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Iterator, Sequence

import numpy as np
import torch

from ..errors import VolratioError
from ..nets import ACTIVATIONS, CoordMLP, coords, head_to_rgb
from ..util import autopick, budget
from ..util.device import generator, resolve_device
from . import fused

# The δ grids (every module and test takes them from here; stored configs record the values):
DEFAULT_DELTAS = (-2.0, -1.0, -0.5, -0.25, 0.25, 0.5, 1.0, 2.0)  # both signs, |δ| from 0.25 to 2
UNIT_DELTAS = (-1.0, -0.5, 0.5, 1.0)  # both signs, |δ| ≤ 1 (FER's |Δw| ≤ 1): the quick depth sweeps


class PerturbationError(VolratioError, ValueError):
    """A perturbation that does not fit the network (masked weight, index out of range)."""


# ---------------------------------------------------------------------------------------------
# Which parameters


class DisconnectedNetwork(PerturbationError):
    """A network whose masks leave no path from the input to the output: its image is one colour,
    the engine's layer reuse does not apply (`perturbed_images` renders it naively instead)."""


def nonzero_params(net: CoordMLP, member: int = 0) -> np.ndarray:
    """`(N, 3)` int array of `(kernel, row, col)` of every non-zero effective weight of one network,
    ordered by kernel, then row, then column. Kernel i maps layer i to layer i+1 (layer 0 = inputs)."""
    out = []
    for i, w in enumerate(net.effective_weights()):
        rc = torch.nonzero(w.detach()[member] != 0).cpu().numpy()
        out.append(np.column_stack([np.full(len(rc), i), rc]))
    return np.concatenate(out).astype(np.int64) if out else np.zeros((0, 3), np.int64)


def cache_params(layered) -> np.ndarray:
    """`(N, 3)` positions of a layerized network's carrying weights (`volratio.data.graph.Layered`): the
    incoming weight of every cache unit, and the output selection (every non-zero entry of the
    last kernel). All are exactly 1."""
    placement, caches = layered.placement, layered.caches

    def column_at(k: str, l: int) -> int:
        return placement[k][1] if placement[k][0] == l else caches[(k, l)]

    rows = [(l - 1, column_at(k, l - 1), j) for (k, l), j in caches.items()]
    net = layered.net
    last = net.n_kernels - 1
    rc = torch.nonzero(net.effective_weights()[last][0] != 0).cpu().numpy()
    rows += [(last, int(r), int(c)) for r, c in rc]
    return np.asarray(sorted(set(rows)), dtype=np.int64).reshape(-1, 3)


def params_of(net: CoordMLP, which: str = "all", layered=None, member: int = 0) -> np.ndarray:
    """The parameters to score: `"all"` non-zero weights, or `"genome"` — the non-zero weights
    that are not cache copies or output selection (needs `layered`, a `volratio.data.graph.Layered`)."""
    allp = nonzero_params(net, member)
    if which == "all":
        return allp
    if which == "genome":
        if layered is None:
            raise VolratioError(
                "which='genome' needs the layerization (volratio.data.picbreeder.layerize(name)) to know "
                "which weights are cache copies; pass layered=…"
            )
        cache = {tuple(p) for p in cache_params(layered).tolist()}
        keep = [p for p in allp.tolist() if tuple(p) not in cache]
        return np.asarray(keep, dtype=np.int64).reshape(-1, 3)
    raise VolratioError(f"which must be 'all' or 'genome', got {which!r}")


def subsample(params: np.ndarray, n: int | None, seed: int = 0) -> np.ndarray:
    """At most `n` rows of `params`, drawn uniformly without replacement (seeded), in original order."""
    if n is not None and (int(n) != n or n < 1):
        raise VolratioError(f"max_params must be a positive integer or None (all parameters), got {n!r}")
    if n is None or n >= len(params):
        return params
    g = generator(seed)
    idx = torch.randperm(len(params), generator=g)[: int(n)].sort().values.numpy()
    return params[idx]


# ---------------------------------------------------------------------------------------------
# Reference: re-render from scratch


def perturbed_copy(net: CoordMLP, param: Sequence[int], delta: float, member: int = 0) -> CoordMLP:
    """A copy of network `member` with weight `param = (kernel, row, col)` moved by `delta`."""
    new = net.select(member)
    i, r, c = (int(v) for v in param)
    with torch.no_grad():
        if new.masks[i][0, r, c] == 0:
            raise PerturbationError(f"weight {param} is masked out; only unmasked weights can be perturbed")
        new.weights[i][0, r, c] += delta
    return new


def naive_render(net: CoordMLP, param: Sequence[int], delta: float, res: int, member: int = 0) -> torch.Tensor:
    """`(res, res, 3)`: copy, perturb, render from scratch — what the engine must reproduce."""
    with torch.no_grad():
        return perturbed_copy(net, param, delta, member).render(res)[0]


# ---------------------------------------------------------------------------------------------
# The engine


# In-place forms of volratio.nets.ACTIVATIONS, operation for operation (so bit-identical results).
_INPLACE = {
    "gaussian": lambda t: t.mul_(t).neg_().exp_().mul_(2.0).sub_(1.0),  # 2·exp(−z²) − 1
    "sigmoid": lambda t: t.sigmoid_().mul_(2.0).sub_(1.0),  # 2σ(z) − 1
    "sin": lambda t: t.sin_(),
    "cos": lambda t: t.cos_(),
    "tanh": lambda t: t.tanh_(),
    "relu": lambda t: t.relu_(),
}


@dataclass
class _Layer:
    """One kernel of the compacted network."""

    wt: torch.Tensor  # (n_out_kept, n_in_kept): the kernel, transposed
    conn: np.ndarray  # (n_in_kept, n_out_kept) bool: mask != 0
    act_ids: np.ndarray | None  # (n_out_kept,) index into `fns` per output unit; None for the output kernel


class PerturbationEngine:
    """Exact batched rendering of single-weight perturbations of one network (see module docstring).

    Parameters: `net` (member `member` is used), `res` (images are res×res), `device`, `dtype`
    (computation dtype; float64 makes the images equal re-rendering to ~1e-12, float32 is faster),
    `memory_bytes` (cap on the working memory of one batch; None = 16 MiB on CPU, 1 GiB on CUDA),
    `compact` (drop dead units),
    `merge_below` (target units with fewer perturbations than this share one batch per kernel),
    `engine` ("torch": the batched tensor operations below; "fused": the C++ kernel of
    `volratio.emc2.fused`, float32 on the CPU; "auto": fused where it runs and builds, else torch —
    `engine_used` says which, `engine_note` why).
    """

    def __init__(
        self,
        net: CoordMLP,
        res: int = 64,
        member: int = 0,
        device: str = "auto",
        dtype: torch.dtype = torch.float64,
        memory_bytes: int | None = None,
        compact: bool = True,
        merge_below: int = 32,
        engine: str = "torch",
    ):
        self.res, self.head = int(res), net.head
        self.merge_below = int(merge_below)  # targets with fewer perturbations share a batch
        self.device, self.dtype = resolve_device(device), dtype
        share = autopick.density(net, member) if engine == "auto" else 1.0  # auto: the pick for this density
        self.engine_used, choice = fused.choose_engine(engine, self.device, dtype, share, timing_steps)
        self.engine_note = fused.engine_note(engine, self.engine_used, self.device, dtype, choice)
        if memory_bytes is None:  # CPU: cache-sized batches are fastest; CUDA: large batches
            memory_bytes = 2**30 if self.device.type == "cuda" else 16 * 2**20
        self.memory_bytes = int(memory_bytes)
        self.flops = 0.0  # floating-point operations of the recomputations so far (2·m·k·n per matmul)
        W = [w.detach()[member].to(device="cpu", dtype=torch.float64) for w in net.weights]
        M = [m.detach()[member].cpu() != 0 for m in net.masks]
        W = [w * m for w, m in zip(W, M)]
        L = len(W) - 1  # hidden layers
        self.n_kernels = L + 1
        self.shapes = [tuple(w.shape) for w in W]
        self._mask = [m.numpy() for m in M]
        # per-unit activation of the hidden layers, as ids into self.fns
        names = net.arch.unit_activations()
        self.fns = sorted(set(names))
        unit_act = np.array([self.fns.index(a) for a in names])

        # dead-unit compaction: keep the hidden units with a non-zero path to an output
        keep = [np.arange(W[0].shape[0])]  # inputs: all
        alive_next = np.ones(W[L].shape[1], bool)  # outputs
        alive = [None] * (L + 2)
        alive[L + 1] = alive_next
        for l in range(L, 0, -1):  # hidden layer l feeds kernel l
            a = M[l].numpy()[:, alive[l + 1]].any(axis=1) if compact else np.ones(W[l].shape[0], bool)
            alive[l] = a
        alive[0] = np.ones(W[0].shape[0], bool)
        cut = [l for l in range(1, L + 1) if not alive[l].any()]
        if cut:
            raise DisconnectedNetwork(
                f"network {member}: no unit of hidden layer {cut[-1] - 1} lies on a path to the output, so its "
                "image does not depend on the input and EMC2 is undefined for it; score a network whose "
                "masks leave a path from the input to the output"
            )
        keep = [np.nonzero(alive[l])[0] for l in range(L + 2)]
        self.keep = keep
        self.pos = []  # original unit index -> compacted position (-1 if dropped), per layer
        for l in range(L + 2):
            p = np.full(len(alive[l]), -1)
            p[keep[l]] = np.arange(len(keep[l]))
            self.pos.append(p)
        self.layers: list[_Layer] = []
        for i in range(L + 1):
            rows, cols = torch.as_tensor(keep[i]), torch.as_tensor(keep[i + 1])
            wt = W[i][rows][:, cols].T.contiguous().to(device=self.device, dtype=dtype)  # (n_out, n_in)
            conn = M[i].numpy()[np.ix_(keep[i], keep[i + 1])]
            acts = unit_act[keep[i + 1]] if i < L else None
            self.layers.append(_Layer(wt, conn, acts))

        # Units-major layout: a layer's activations are (n_units, P), so the units of one
        # activation function form one contiguous block and are activated in place.
        # Base pass: H[i] = input of kernel i (n_i, P), Z[i] = its pre-activation output (n_{i+1}, P).
        item = torch.empty((), dtype=dtype).element_size()
        cached = 2 * sum(len(k) for k in keep) + 4 * 3  # H and Z of every layer, the grid, the base image
        if self.engine_used == "fused":  # the kernel's padded float32 copy of H and Z
            cached += 2 * sum(len(k) for k in keep) * (4 / item) * (1 + fused.TILE / self.res**2)
        budget.check(
            self.res**2 * item * cached + self.memory_bytes,
            f"perturbing a network of {sum(len(k) for k in keep[1:-1])} live units at {self.res}×{self.res} pixels",
            "lower the resolution (--res)",
        )
        grid = coords(self.res, device=self.device, dtype=dtype).T.contiguous()  # (4, P)
        self.H, self.Z = [grid], []
        h = grid
        for i, lay in enumerate(self.layers):
            z = lay.wt @ h
            self.Z.append(z)
            if i < L:
                h = self._act_(z.clone(), lay.act_ids)
                self.H.append(h)
        self.raw = self.Z[L]  # (n_out, P)
        self.base = self._rgb(self.raw[None])[0]  # (res, res, 3)
        self._cones: dict[tuple[int, int], list[tuple]] = {}
        self._fused = None
        if self.engine_used == "fused":
            acts = [np.array([fused.ACT_CODES[self.fns[a]] for a in lay.act_ids]) for lay in self.layers[:L]]
            self._fused = fused.FusedPerturber(
                [lay.wt for lay in self.layers], acts, self.H, self.Z, self.res**2, self.head
            )

    def _rgb(self, raw: torch.Tensor) -> torch.Tensor:
        """Raw outputs `(B, n_out, P)` → images `(B, res, res, 3)`."""
        return head_to_rgb(raw.transpose(1, 2), self.head).reshape(raw.shape[0], self.res, self.res, 3)

    @property
    def width_kept(self) -> list[int]:
        """Units kept per hidden layer after compaction."""
        return [len(k) for k in self.keep[1:-1]]

    def _act_(self, z: torch.Tensor, act_ids: np.ndarray) -> torch.Tensor:
        """Activate pre-activations `(..., n, P)` in place; `act_ids` `(n,)`. Units of one activation
        are contiguous (also in any sorted subset), so each run is one block; identities are free."""
        cuts = np.flatnonzero(np.diff(act_ids)) + 1
        for a, b in zip(np.r_[0, cuts], np.r_[cuts, len(act_ids)]):
            name = self.fns[act_ids[a]]
            blk = z[..., a:b, :]
            if name in _INPLACE:
                _INPLACE[name](blk)
            elif name not in ("cache", "identity"):
                blk.copy_(ACTIVATIONS[name](blk))
        return z

    def _cone(self, i: int, units: tuple) -> list[np.ndarray]:
        """Compacted unit indices that can change, per layer i+1 … L+1, when kernel i's output
        units `units` change (the union of their forward cones through non-zero connections)."""
        cone = [np.asarray(units)]
        for l in range(i + 1, self.n_kernels):
            cone.append(np.nonzero(self.layers[l].conn[cone[-1]].any(axis=0))[0])
        return cone

    def _plan(self, i: int, units: tuple) -> list[tuple]:
        """Per layer above kernel i: (layer, full, dst index tensor, W rows for a full input,
        W[dst, src] for a partial one, activation ids of dst) — cached per (kernel, units)."""
        key = (i, units)
        if key not in self._cones:
            cone, steps = self._cone(i, units), []
            for l in range(i + 1, self.n_kernels):
                src, dst = cone[l - i - 1], cone[l - i]
                if len(dst) == 0:
                    break
                lay = self.layers[l]
                full = len(dst) == lay.wt.shape[0]
                t = None if full else torch.as_tensor(dst, device=self.device)
                wt = lay.wt if full else lay.wt.index_select(0, t)  # (|dst|, n_in)
                ws = wt.index_select(1, torch.as_tensor(src, device=self.device))  # (|dst|, |src|)
                acts = None if lay.act_ids is None else lay.act_ids[dst]
                steps.append((l, full, t, wt, ws, acts))
            self._cones[key] = steps
        return self._cones[key]

    def _check(self, params: np.ndarray) -> None:
        if params.ndim != 2 or params.shape[1] != 3:
            raise PerturbationError(f"params must be an (N, 3) array of (kernel, row, col), got shape {params.shape}")
        i, r, c = params.T
        bad = (i < 0) | (i >= self.n_kernels)
        shp = np.array(self.shapes + [(0, 0)])[np.clip(i, 0, self.n_kernels)]  # (N, 2)
        bad |= (r < 0) | (r >= shp[:, 0]) | (c < 0) | (c >= shp[:, 1])
        if bad.any():
            k, rr, cc = params[np.argmax(bad)]
            raise PerturbationError(
                f"parameter (kernel {k}, row {rr}, col {cc}) is outside the network (kernel shapes {self.shapes})"
            )
        for k in np.unique(i):
            sel = i == k
            off = ~self._mask[k][r[sel], c[sel]].astype(bool)
            if off.any():
                _, rr, cc = params[sel][np.argmax(off)]
                raise PerturbationError(
                    f"weight (kernel {k}, row {rr}, col {cc}) is masked out; only unmasked weights can be perturbed"
                )

    @torch.no_grad()
    def iter_images(self, params, deltas) -> Iterator[tuple[np.ndarray, torch.Tensor]]:
        """Yield `(indices, images)`: for perturbations n = 0 … N−1 (`params` `(N, 3)`, `deltas` `(N,)`),
        chunks of `(B, res, res, 3)` images on the engine's device, with their positions n."""
        params = np.asarray(params, dtype=np.int64).reshape(-1, 3)
        deltas = np.broadcast_to(np.asarray(deltas, dtype=np.float64), (len(params),))
        self._check(params)
        P = self.res * self.res
        unchanged = []
        groups: dict[tuple[int, int], list[int]] = defaultdict(list)
        for n, (i, _r, c) in enumerate(params.tolist()):
            cc = self.pos[i + 1][c]
            if cc < 0:  # target cannot reach the output: the image does not change
                unchanged.append(n)
            else:  # an unmasked weight into a live unit comes from a live unit (rr ≥ 0)
                groups[(i, int(cc))].append(n)
        if unchanged:
            idx = np.asarray(unchanged)
            for a in range(0, len(idx), 4096):
                part = idx[a : a + 4096]
                yield part, self.base.expand(len(part), -1, -1, -1)
        # Batches: the perturbations of one target unit form a batch of their own when there are
        # at least `merge_below` of them (a dense network); the rest of a kernel's targets share
        # one batch through the union of their cones (a sparse network: few weights per unit).
        # Units outside an element's own cone get Δh = 0 exactly, so sharing never changes a number.
        batches: list[tuple[int, tuple, np.ndarray]] = []
        by_kernel: dict[int, list[int]] = defaultdict(list)
        for (i, c), members in sorted(groups.items()):
            if len(members) >= self.merge_below:
                batches.append((i, (c,), np.asarray(members)))
            else:
                by_kernel[i] += members
        for i, members in sorted(by_kernel.items()):
            members = np.asarray(members)
            units = tuple(np.unique(self.pos[i + 1][params[members, 2]]).tolist())
            batches.append((i, units, members))
        itemsize = torch.finfo(self.dtype).bits // 8
        for i, units, members in batches:
            if self._fused is not None:  # the kernel's images
                per = self._fused.bytes_per_image()
            else:
                widest = max(len(s) for s in self._cone(i, units)) + 3
                per = P * itemsize * (4 * widest + 6)  # z, h, Δh, temporaries + the RGB output
            B = max(1, self.memory_bytes // per)
            for a in range(0, len(members), B):
                part = members[a : a + B]
                rows = torch.as_tensor(self.pos[i][params[part, 1]], device=self.device)
                cols = torch.as_tensor(self.pos[i + 1][params[part, 2]], device=self.device)
                d = torch.as_tensor(deltas[part], device=self.device, dtype=self.dtype)
                yield part, self._run(i, units, cols, rows, d)

    def _run(self, i: int, units: tuple, cols: torch.Tensor, rows: torch.Tensor, d: torch.Tensor) -> torch.Tensor:
        """Images `(B, res, res, 3)` for perturbations of kernel i at (rows, cols) by d; `units`
        (sorted) holds every col of the batch."""
        if self._fused is not None:  # the C++ kernel, head included: (B, P, 3)
            img = self._fused.run(i, rows, cols, d)
            self.flops += self._fused.flops
            return img.view(len(rows), self.res, self.res, 3)
        B, P, L = len(rows), self.res * self.res, self.n_kernels - 1
        # unit c of kernel i's output: z_c + δ · h_i[r]   (B, P)
        zc = torch.addcmul(self.Z[i].index_select(0, cols), d[:, None], self.H[i].index_select(0, rows))
        self.flops += 2.0 * B * P
        arangeB = torch.arange(B, device=self.device)
        if i == L:
            out = self.raw.expand(B, -1, -1).clone()  # (B, n_out, P)
            out[arangeB, cols] = zc
            return self._rgb(out)
        # Walk up the cone. While it covers part of a layer we carry the *change* of its
        # activations (dh, and z' = z + W[cone', cone] @ dh); once it covers a whole layer we carry
        # the activations themselves (h, and z' = W @ h) — a plain forward pass from there on.
        col_np = cols.cpu().numpy()
        acts = self.layers[i].act_ids[col_np]
        if len(units) == 1:
            h = self._act_(zc[:, None, :], acts[:1])  # (B, 1, P)
            dh = h.sub_(self.H[i + 1][units[0]])
        else:
            for a in np.unique(acts):  # each element's own activation
                sel = torch.as_tensor(np.flatnonzero(acts == a), device=self.device)
                zc[sel] = self._act_(zc[sel][:, None, :], np.array([a]))[:, 0]
            dh = torch.zeros(B, len(units), P, device=self.device, dtype=self.dtype)  # (B, |units|, P)
            slot = torch.as_tensor(np.searchsorted(np.asarray(units), col_np), device=self.device)
            dh[arangeB, slot] = zc.sub_(self.H[i + 1].index_select(0, cols))
        out, hfull = None, None
        for l, full, t, wt, ws, acts in self._plan(i, units):
            if hfull is not None:  # the whole layer below is known
                z = torch.matmul(wt, hfull)  # (B, |dst|, P)
                self.flops += 2.0 * B * P * wt.shape[0] * wt.shape[1]
            else:
                z = torch.matmul(ws, dh).add_(self.Z[l] if full else self.Z[l].index_select(0, t))
                self.flops += 2.0 * B * P * ws.shape[0] * ws.shape[1]
            if l == L:
                if full:
                    out = z
                else:
                    out = self.raw.expand(B, -1, -1).clone()
                    out[:, t] = z
                break
            h = self._act_(z, acts)  # (B, |dst|, P)
            if full:
                hfull, dh = h, None
            else:
                hfull, dh = None, h.sub_(self.H[l + 1].index_select(0, t))
        if out is None:
            out = self.raw.expand(B, -1, -1).clone()
        return self._rgb(out)

    def render(self, params, deltas) -> torch.Tensor:
        """All perturbed images at once, `(N, res, res, 3)` on the engine's device (small N only)."""
        params = np.asarray(params, dtype=np.int64).reshape(-1, 3)
        out = torch.empty(len(params), self.res, self.res, 3, device=self.device, dtype=self.dtype)
        for idx, img in self.iter_images(params, deltas):
            out[torch.as_tensor(idx, device=self.device)] = img
        return out


def timing_steps(sparse: bool) -> dict:
    """EMC2's workload per engine: the images of the incoming weights of one unit of hidden layer 6,
    each moved by ±0.5, at 64×64, of a network of the FER SGD networks' shape (12 hidden layers of
    22 Gaussian units), dense or with 5 % of its weights kept (seeded; plus unit i → unit i in every
    layer, so that every unit lies on a path to the output)."""
    masks = None
    if sparse:
        g = torch.Generator().manual_seed(0)
        shapes = [(4, 22)] + [(22, 22)] * 11 + [(22, 3)]
        masks = [(torch.rand(s, generator=g) < 0.05).float() for s in shapes]
        for m in masks:
            n = min(m.shape)
            m[torch.arange(n), torch.arange(n)] = 1.0
    net = CoordMLP("12;gaussian:22", seed=0, masks=masks)
    params = nonzero_params(net)
    params = params[(params[:, 0] == 6) & (params[:, 2] == params[params[:, 0] == 6][0, 2])]
    P, D = np.repeat(params, 2, axis=0), np.tile([-0.5, 0.5], len(params))
    engines = {
        e: PerturbationEngine(net, 64, device="cpu", dtype=torch.float32, engine=e)
        for e in autopick.TASKS["emc2-dense"]
    }
    return {e: (lambda eng=eng: eng.render(P, D)) for e, eng in engines.items()}


def perturbed_images(net: CoordMLP, res: int, params, deltas, member: int = 0, device="auto",
                     dtype=torch.float64, memory_bytes=None, engine="torch"):  # fmt: skip
    """`(base (res, res, 3), iterator of (indices, images (b, res, res, 3)))` for the perturbations
    `params[i] ← + deltas[i]`: the engine's (`engine`: "torch", "fused" or "auto", see
    `PerturbationEngine`), or — for a `DisconnectedNetwork`, whose image is one
    colour — each perturbed network rendered from scratch (`naive_render`, the engine's reference)."""
    params = np.asarray(params, dtype=np.int64).reshape(-1, 3)
    deltas = np.asarray(deltas, dtype=np.float64)
    try:
        eng = PerturbationEngine(net, res, member, device, dtype, memory_bytes, engine=engine)
        return eng.base, eng.iter_images(params, deltas)
    except DisconnectedNetwork:
        one = net.select(member).to(dtype)
        with torch.no_grad():
            base = one.render(res)[0]

        def naive():
            for i, (p, d) in enumerate(zip(params.tolist(), deltas.tolist())):
                yield np.array([i]), naive_render(one, p, d, res)[None]

        return base, naive()


def torch_dtype(name) -> torch.dtype:
    """The torch dtype named "float32" or "float64" (a dtype passes through)."""
    if isinstance(name, torch.dtype):
        return name
    if name not in ("float32", "float64"):
        raise VolratioError(f"dtype must be 'float32' or 'float64', got {name!r}")
    return getattr(torch, name)
