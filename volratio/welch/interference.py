"""The interference of a trained network's features against the Welch bound at their (r, d).

`layer_interference` compares, per hidden layer of a `volratio.nets.CoordMLP`, the layer's live
units' vectors — their incoming weights or their feature maps, with the dimension they live in
defined explicitly (see `LayerInterference`) — with the Welch bound (`volratio.welch.bounds`);
`network_interference` does it for several networks as table rows.

Used by the chapter "Feature interference and the Welch bound" (book/welch.md), the experiment
`interference` and `volratio welch net`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
import torch

from ..errors import VolratioError
from ..nets import live_unit_mask
from .bounds import welch_bound
from .frames import max_sq_inner, mean_sq_inner


@dataclass
class LayerInterference:
    """Interference of one hidden layer's features against the Welch bound at its (r, d).

    vectors="weights": the vectors are the incoming effective weight vectors of the layer's live
      units (column j of kernel ℓ), restricted to the rows of the previous layer's units (or inputs)
      that feed at least one of them. r = number of live units of layer ℓ (non-zero incoming and
      outgoing weight), d = number of those feeding rows. Each unit reads the d-dimensional
      previous layer along its vector; r ≤ d is what lets all r readouts be orthogonal.
    vectors="maps": the vectors are the live units' feature maps over the res×res pixel grid,
      centred (mean over pixels removed: a constant offset acts as a bias, not as a feature) and
      normalised; units with a constant map are dropped (`n_constant`). r = the remaining units,
      d = rank of the (r, res²) matrix of maps (numpy's default tolerance): the dimension of the
      space the maps actually span. r > d exactly when the maps are linearly dependent.
    """

    layer: int  # hidden layer index ℓ (0-based)
    vectors: str
    r: int
    d: int
    max_sq_inner: float | None  # None when r < 2
    mean_sq_inner: float | None
    bound: float  # Welch k = 1 at (r, d)
    n_constant: int = 0  # maps mode: live units whose map is constant (excluded)

    def as_dict(self) -> dict:
        return asdict(self)


def layer_interference(net, vectors: str = "weights", res: int = 64, member: int = 0) -> list[LayerInterference]:
    """Per hidden layer of `net` (a `volratio.nets.CoordMLP`, population member `member`), the
    interference of its features against the Welch bound; see `LayerInterference` for what the
    vectors, r and d are in each mode."""
    if vectors not in ("weights", "maps"):
        raise VolratioError(f"vectors must be 'weights' or 'maps', got {vectors!r}")
    if not 0 <= int(member) < net.population:
        raise VolratioError(f"member {member} out of range: the network holds {net.population}")
    k = int(member)
    with torch.no_grad():
        ew = [w.detach().to("cpu", torch.float64) for w in net.effective_weights()]  # (K, fan_in, fan_out)
        feats = net.features(int(res)) if vectors == "maps" else None  # list of (K, res, res, W)
    alive = live_unit_mask(ew)  # per hidden layer (K, W)
    out = []
    for layer in range(net.depth):
        live = alive[layer][k]  # (W,)
        n_const = 0
        if vectors == "weights":
            cols = ew[layer][k][:, live]  # (fan_in, r)
            rows = (cols != 0).any(dim=1)
            V = cols[rows].T.numpy()  # (r, d)
            r, d = V.shape
        else:
            F = feats[layer][k].reshape(-1, feats[layer].shape[-1])[:, live].to("cpu", torch.float64).numpy()
            F = F - F.mean(axis=0, keepdims=True)  # (P, r) centred
            norms = np.linalg.norm(F, axis=0)
            keep = norms > 1e-9 * max(1.0, float(norms.max(initial=0.0)))
            n_const = int((~keep).sum())
            V = (F[:, keep] / norms[keep]).T  # (r, P)
            r = V.shape[0]
            d = int(np.linalg.matrix_rank(V)) if r else 0
        if r >= 2 and d >= 1:
            mx, mn = max_sq_inner(V), mean_sq_inner(V)
        else:
            mx = mn = None
        b = welch_bound(r, d) if r >= 1 and d >= 1 else 0.0
        out.append(LayerInterference(layer, vectors, int(r), int(d), mx, mn, b, n_const))
    return out


def network_interference(nets: dict, vectors=("weights", "maps"), res: int = 64, member: int = 0) -> list[dict]:
    """`layer_interference` for several named networks and both kinds of vectors, as table rows
    (name, vectors, layer, r, d, max_sq_inner, mean_sq_inner, bound, n_constant)."""
    rows = []
    for name, net in nets.items():
        for kind in [vectors] if isinstance(vectors, str) else vectors:
            for li in layer_interference(net, kind, res=res, member=member):
                rows.append({"network": name, **li.as_dict()})
    return rows
