"""The interactive weight explorer: networks exported for the browser, and what the page needs.

The rendered book is a static site, but its networks are tiny (a 64×64 render of the Picbreeder
skull is ~10⁶ multiply-adds), so a browser can redraw them as fast as a slider moves. This module
prepares everything the `{weight-explorer}` directive (book/_ext/volratio_book.py) puts on a page;
`book/_ext/static/weight_explorer.js` draws it, exactly as `CoordMLP.render` does.

- `export(net)` → a compact, versioned JSON-able dict (format `volratio.explorer/1`): architecture,
  per-unit activations, head, and every kernel as a bit-packed mask plus the weights under the mask
  (little-endian floats, base64). `load(doc)` builds the same `CoordMLP` again, bit for bit.
- `rank_weights(net)` → the non-zero weights ranked by how much they move the image (RMS change at
  Δw = ±1, as in FER's sweeps), computed by the EMC2 engine (`volratio.emc2.PerturbationEngine`).
- `random_direction(net, seed)` → a unit direction over the unmasked weights drawn from a tiny
  portable generator (mulberry32 + Box–Muller) that the JavaScript renderer reimplements, so the
  page's "random direction" control moves the same direction Python renders.
- `perturbed(net, …)` → the reference: a copy of the network moved along one weight or a direction,
  to be rendered by `CoordMLP.render`.
- `widget_data(spec, …)` → the page's data for one network (export, ranking, static sweep images)
  and the reference renders the browser check compares the canvas against.

Any network `volratio.data.specs.load_network` knows can be opened — every one of the sixteen
Picbreeder targets (`picbreeder:NAME`), FER's SGD twins, saved networks. Chapters: "EMC2-Bench"
(book/emc2.md) and "Picbreeder networks and their SGD twins" (book/picbreeder.md) embed it. Tested in tests/test_explorer.py (round trip, and the JavaScript
renderer under node against `CoordMLP.render`).
"""

from __future__ import annotations

import base64
import json
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch

from ..data.specs import load_network
from ..emc2 import PerturbationEngine, WeightSweep, nonzero_params, perturbed_copy
from ..errors import VolratioError
from ..nets import CoordMLP
from .plots import draw_weight_sweep

FORMAT = "volratio.explorer/1"  # the export format's name (kept when the module moved)
INPUTS = (
    "y",
    "x",
    "d",
    "bias",
)  # the order of the network inputs (volratio.nets.coords)
_DTYPES = {torch.float32: "<f4", torch.float64: "<f8"}


class ExportError(VolratioError, ValueError):
    """An exported network that cannot be read back (wrong format, version or shapes)."""


# ---------------------------------------------------------------------------------------------
# Export and import


def _b64(a: np.ndarray) -> str:
    return base64.b64encode(np.ascontiguousarray(a).tobytes()).decode("ascii")


def export(net: CoordMLP, member: int = 0, spec: str | None = None) -> dict:
    """Network `member` of `net` as a JSON-able dict (format `volratio.explorer/1`).

    Each kernel `(fan_in, fan_out)` is stored as `mask`: its row-major 0/1 pattern packed 8 per byte
    (most significant bit first, `numpy.packbits`), and `values`: the weights where the mask is 1, in
    the same order, as little-endian floats of the network's dtype. Both are base64.
    """
    if not 0 <= int(member) < net.population:
        raise ExportError(f"member {member} is outside the population (K = {net.population})")
    dtype = net.weights[0].dtype
    if dtype not in _DTYPES:
        raise ExportError(f"cannot export weights of dtype {dtype}; convert the network with .float() first")
    kernels = []
    for w, m in zip(net.weights, net.masks):
        w, m = (
            w.detach()[member].cpu(),
            m.detach()[member].cpu() != 0,
        )  # (fan_in, fan_out)
        kernels.append(
            {
                "shape": list(w.shape),
                "mask": _b64(np.packbits(m.numpy().reshape(-1))),
                "values": _b64(w[m].numpy().astype(_DTYPES[dtype])),  # row-major over mask == 1
            }
        )
    return {
        "format": FORMAT,
        "spec": spec,
        "arch": str(net.arch),
        "depth": net.arch.depth,
        "width": net.arch.width,
        "activations": net.arch.unit_activations(),  # per hidden unit (the same in every layer)
        "head": net.head,
        "inputs": list(INPUTS[: net.n_inputs]),
        "dtype": _DTYPES[dtype],
        "kernels": kernels,
        "provenance": json.loads(json.dumps(net.provenance, default=str)),
    }


def load(doc: dict | str) -> CoordMLP:
    """The `CoordMLP` (K = 1) of an exported network (a dict or its JSON text)."""
    if isinstance(doc, str):
        try:
            doc = json.loads(doc)
        except json.JSONDecodeError as e:
            raise ExportError(f"exported network is not valid JSON ({e})") from e
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        got = doc.get("format") if isinstance(doc, dict) else type(doc).__name__
        raise ExportError(
            f"not an exported network of format {FORMAT!r} (got {got!r}); re-export it with volratio.report.explorer.export"
        )
    np_dtype = np.dtype(doc["dtype"])
    kernels, masks = [], []
    for i, k in enumerate(doc["kernels"]):
        fi, fo = (int(v) for v in k["shape"])
        damaged = ExportError(
            f"kernel {i}: mask or values do not fit its shape {fi}×{fo}; the export is damaged (re-export the network)"
        )
        try:
            bits = np.frombuffer(base64.b64decode(k["mask"], validate=True), np.uint8)
            vals = np.frombuffer(base64.b64decode(k["values"], validate=True), np_dtype)
        except ValueError as e:  # bad base64, or a byte count that is not a whole number of floats
            raise damaged from e
        if len(bits) != (fi * fo + 7) // 8:
            raise damaged
        m = np.unpackbits(bits)[: fi * fo].reshape(fi, fo).astype(bool)
        if len(vals) != int(m.sum()):
            raise damaged
        w = np.zeros((fi, fo), np_dtype)
        w[m] = vals
        kernels.append(w)
        masks.append(m)
    tdtype = {np.dtype("<f4"): torch.float32, np.dtype("<f8"): torch.float64}[np_dtype]
    return CoordMLP.from_kernels(
        doc["arch"],
        kernels,
        head=doc["head"],
        masks=masks,
        dtype=tdtype,
        provenance=doc.get("provenance") or {"made_by": "volratio.report.explorer.load"},
    )


def dumps(doc: dict) -> str:
    """Compact JSON text of an export (no spaces)."""
    return json.dumps(doc, separators=(",", ":"))


# ---------------------------------------------------------------------------------------------
# Which weights move the image


@dataclass
class Ranking:
    params: np.ndarray  # (N, 3) (kernel, row, col), most effective first
    effect: np.ndarray  # (N,) mean RMS image change over `deltas`
    weight: np.ndarray  # (N,) the weights' values
    deltas: tuple  # the Δw the effect is averaged over
    res: int  # resolution the images were compared at

    def top(self, n: int) -> list[dict]:
        return [
            {"k": int(k), "r": int(r), "c": int(c), "w": float(w), "effect": float(e)}
            for (k, r, c), w, e in zip(self.params[:n].tolist(), self.weight[:n], self.effect[:n])
        ]


def rank_weights(
    net: CoordMLP,
    res: int = 32,
    deltas: Sequence[float] = (-1.0, 1.0),
    member: int = 0,
    device: str = "cpu",
) -> Ranking:
    """Every non-zero weight of network `member`, ranked by the RMS change of the image when it moves
    by each of `deltas` (averaged), rendered by the exact EMC2 engine in float32."""

    params = nonzero_params(net, member)
    deltas = tuple(float(d) for d in deltas)
    if len(params) == 0:
        raise VolratioError("the network has no non-zero weights to rank")
    eng = PerturbationEngine(net, res, member, device=device, dtype=torch.float32)
    P = np.repeat(params, len(deltas), axis=0)  # (N·n_δ, 3), δ fastest
    D = np.tile(np.asarray(deltas), len(params))
    rms = np.zeros(len(P))
    for idx, img in eng.iter_images(P, D):
        rms[idx] = ((img - eng.base) ** 2).mean(dim=(1, 2, 3)).sqrt().cpu().numpy()
    effect = rms.reshape(len(params), len(deltas)).mean(axis=1)
    order = np.argsort(-effect, kind="stable")
    W = [w.detach()[member].cpu().double().numpy() for w in net.effective_weights()]
    weight = np.array([W[k][r, c] for k, r, c in params[order].tolist()])
    return Ranking(params[order], effect[order], weight, deltas, int(res))


def local_effects(
    net: CoordMLP,
    regions: dict,
    deltas: Sequence[float] = (-2.0, -1.0, 1.0, 2.0),
    res: int = 32,
    member: int = 0,
    device: str = "cpu",
):
    """Where in the image each non-zero weight acts: a pandas DataFrame with one row per (weight, Δw)
    — `kernel, row, col, delta` — and, per named region, the RMS change of the image inside it.
    `regions` maps a name to `(top, bottom, left, right)` as fractions of the image height and width
    (rows from the top, as the image is shown). Rendered by the exact EMC2 engine (float32)."""
    boxes = {}
    for name, (t, b, l, r) in regions.items():
        if not (0 <= t < b <= 1 and 0 <= l < r <= 1):
            raise VolratioError(
                f"region {name!r}: (top, bottom, left, right) = {(t, b, l, r)} must be fractions "
                "with top < bottom and left < right"
            )
        boxes[name] = (
            int(t * res),
            max(int(t * res) + 1, round(b * res)),
            int(l * res),
            max(int(l * res) + 1, round(r * res)),
        )
    params = nonzero_params(net, member)
    deltas = np.asarray(deltas, np.float64)
    P = np.repeat(params, len(deltas), axis=0)  # (N·n_δ, 3), δ fastest
    D = np.tile(deltas, len(params))
    out = {name: np.zeros(len(P)) for name in boxes}
    eng = PerturbationEngine(net, res, member, device=device, dtype=torch.float32)
    for idx, img in eng.iter_images(P, D):
        d2 = ((img - eng.base) ** 2).mean(dim=-1)  # (B, res, res)
        for name, (t, b, l, r) in boxes.items():
            out[name][idx] = d2[:, t:b, l:r].mean(dim=(1, 2)).sqrt().cpu().numpy()
    return pd.DataFrame({"kernel": P[:, 0], "row": P[:, 1], "col": P[:, 2], "delta": D, **out})


# ---------------------------------------------------------------------------------------------
# Random directions (the same numbers in Python and in weight_explorer.js)


def _mulberry32(seed: int) -> Iterator[float]:
    """Uniforms in [0, 1) from mulberry32 (public-domain 32-bit generator), written with unsigned
    32-bit arithmetic so that it equals the JavaScript original number for number."""
    M = 0xFFFFFFFF
    a = int(seed) & M
    while True:
        a = (a + 0x6D2B79F5) & M
        t = ((a ^ (a >> 15)) * (1 | a)) & M
        t = ((t + (((t ^ (t >> 7)) * (61 | t)) & M)) & M) ^ t
        yield ((t ^ (t >> 14)) & M) / 4294967296.0


def random_direction(net: CoordMLP, seed: int, member: int = 0) -> list[np.ndarray]:
    """A unit-norm direction over the unmasked weights, one float64 array `(fan_in, fan_out)` per
    kernel (zero where masked). Normals by Box–Muller from `_mulberry32(seed)`, drawn kernel by
    kernel, row-major over the unmasked entries — the order weight_explorer.js uses."""
    u = _mulberry32(seed)
    dirs = []
    for m in net.masks:
        m = m.detach()[member].cpu().numpy() != 0
        n = int(m.sum())
        z = np.empty(n)
        for j in range(n):
            u1, u2 = next(u), next(u)
            z[j] = math.sqrt(-2.0 * math.log(1.0 - u1)) * math.cos(2.0 * math.pi * u2)
        d = np.zeros(m.shape)
        d[m] = z
        dirs.append(d)
    norm = math.sqrt(sum(float((d * d).sum()) for d in dirs))
    return [d / norm for d in dirs]


def perturbed(
    net: CoordMLP,
    amount: float,
    param: Sequence[int] | None = None,
    seed: int | None = None,
    member: int = 0,
) -> CoordMLP:
    """A copy of network `member` moved by `amount`: along weight `param = (kernel, row, col)`, or,
    with `seed`, along `random_direction(net, seed)`. Render it with `.render(res)`."""

    if (param is None) == (seed is None):
        raise VolratioError("give exactly one of param=(kernel, row, col) or seed=… (a random direction)")
    if param is not None:
        return perturbed_copy(net, param, float(amount), member)
    new = net.select(member)
    with torch.no_grad():
        for w, d in zip(new.weights, random_direction(net, seed, member)):
            w[0] += torch.as_tensor(float(amount) * d, dtype=w.dtype, device=w.device)
    return new


# ---------------------------------------------------------------------------------------------
# What one network of the widget needs


@dataclass
class ExplorerConfig:
    res: int = 64  # canvas resolution (the frame-time goal is stated at 64×64)
    rank_res: int = 32  # resolution at which weights are ranked
    top: int = 24  # ranked weights listed on the page
    sweep_rows: int = 4  # weights in the static (no-JavaScript) sweep figure
    sweep_offsets: tuple = (-2.0, -1.0, 0.0, 1.0, 2.0)  # its columns, Δw
    sweep_res: int = 48  # its images' resolution
    seed: int = 1  # the first random direction
    check_delta: float = 1.25  # Δw of the reference renders the browser check compares against
    device: str = "cpu"  # the build machine renders on CPU


def static_sweep(net: CoordMLP, ranking: Ranking, cfg: ExplorerConfig, title: str):
    """The sweep figure a reader without JavaScript sees: the top-ranked weights and one random
    direction (`cfg.seed`), each over `cfg.sweep_offsets`. Returns a matplotlib figure."""

    params = ranking.params[: cfg.sweep_rows]
    offs = np.asarray(cfg.sweep_offsets, np.float64)
    eng = PerturbationEngine(net, cfg.sweep_res, device=cfg.device, dtype=torch.float32)
    imgs = eng.render(np.repeat(params, len(offs), 0), np.tile(offs, len(params)))
    imgs = imgs.float().cpu().numpy().reshape(len(params), len(offs), cfg.sweep_res, cfg.sweep_res, 3)
    ctrl = np.stack([perturbed(net, o, seed=cfg.seed).render(cfg.sweep_res)[0].cpu().numpy() for o in offs])
    labels = [f"k{k} r{r} c{c} (w={w:+.2f})" for (k, r, c), w in zip(params.tolist(), ranking.weight)]
    labels.append(f"random direction {cfg.seed}")
    sw = WeightSweep(np.concatenate([imgs, ctrl[None]]).clip(0, 1), offs, labels, params)
    return draw_weight_sweep(sw, title)


def reference_renders(net: CoordMLP, ranking: Ranking, cfg: ExplorerConfig) -> dict:
    """`CoordMLP.render` of the network, of its top-ranked weight and of the top-ranked weight in the
    lower half of its kernels each moved by `cfg.check_delta`, and of the random direction
    `cfg.seed` moved by −`cfg.check_delta`: `(res, res, 3)` float32, base64."""

    def f32(t):
        return _b64(t[0].cpu().numpy().astype("<f4"))

    # the top-ranked weight, and the top-ranked one in the lower half of the kernels (its change
    # passes through most layers: the page's incremental redraw recomputes the most there)
    low = ranking.params[ranking.params[:, 0] <= (net.n_kernels - 1) // 2]
    params = [ranking.params[0]] + ([low[0]] if len(low) and not np.array_equal(low[0], ranking.params[0]) else [])
    cases = [
        {
            "kind": "weight",
            "param": [int(v) for v in p],
            "delta": cfg.check_delta,
            "image": f32(perturbed(net, cfg.check_delta, param=tuple(int(v) for v in p)).render(cfg.res)),
        }
        for p in params
    ]
    cases.append(
        {
            "kind": "random",
            "seed": cfg.seed,
            "delta": -cfg.check_delta,
            "image": f32(perturbed(net, -cfg.check_delta, seed=cfg.seed).render(cfg.res)),
        }
    )
    return {"res": cfg.res, "base": f32(net.select(0).render(cfg.res)), "cases": cases}


def widget_data(spec: str, cfg: ExplorerConfig | None = None) -> tuple[dict, dict, object]:
    """`(page data, reference renders, static sweep figure)` for network `spec` (see
    `volratio.data.specs.load_network`)."""

    cfg = cfg or ExplorerConfig()
    net = load_network(spec, device="cpu").select(0)
    ranking = rank_weights(net, cfg.rank_res, device=cfg.device)
    page = {
        "spec": spec,
        "net": export(net, spec=spec),
        "res": cfg.res,
        "seed": cfg.seed,
        "n_nonzero": int(net.nonzero()[0]),
        "ranking": {
            "res": ranking.res,
            "deltas": list(ranking.deltas),
            "top": ranking.top(cfg.top),
        },
    }
    fig = static_sweep(
        net,
        ranking,
        cfg,
        f"{spec}: the {cfg.sweep_rows} weights that move the image most, "
        f"and a random direction ({cfg.sweep_res}×{cfg.sweep_res})",
    )
    return page, reference_renders(net, ranking, cfg), fig
