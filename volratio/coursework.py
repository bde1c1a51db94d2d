"""Answer checkers for the coursework notebooks (`notebooks/*.ipynb`).

A student computes something in a notebook — a number, an array, a network, a function — and
passes it to a `check_…` function here. The checker recomputes the reference with the library,
compares, and returns a `Check`: `.ok`, `.message` (what is right or, when it is wrong, *what* is
wrong and where to look), and the `expected` / `got` values. A wrong answer never raises; a
checker raises only when it is *called* wrongly (an unknown target name, a cell too large to
enumerate), with a `CourseworkError` that names the fix. An answer left as `...` (the notebooks'
placeholder) or `None` fails with "not answered yet".

Every checker is a pure function of its arguments: the references are recomputed each call, any
randomness is seeded by an explicit `seed` argument, and nothing is cached between calls.

Notebooks (one per chapter topic; `tools/make_notebooks.py` writes them):

| notebook | checkers |
| --- | --- |
| 01 Picbreeder genomes and SGD twins | `check_layerized_size`, `check_layers`, `check_twin` |
| 02 EMC2-Bench | `check_perturbed_image`, `check_perturbation_score` |
| 03 Similarity-based pruning | `check_similarity`, `check_redundant_pairs`, `check_unit_removed`, `check_sparsity` |
| 04 Depth and the PNG ratio | `check_png_ratio`, `check_depth_fit`, `check_sweet_spot` |
| 05 The volume ratio ρ(W, L) | `check_truth_table`, `check_target_shape`, `check_p_solution`, `check_interval` |
| 06 The Welch bound and frames | `check_welch_bound`, `check_coherence`, `check_frame`, `check_represented` |
| 07 Sweeps | `check_sweep_table` |

Chapters: the exercises of every chapter of Part I and II point to these notebooks.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import torch

from .errors import VolratioError

__all__ = [
    "Check", "CourseworkError",
    "check_layerized_size", "check_layers", "check_twin",
    "check_perturbed_image", "check_perturbation_score",
    "check_similarity", "check_redundant_pairs", "check_unit_removed", "check_sparsity",
    "check_png_ratio", "check_depth_fit", "check_sweet_spot",
    "check_truth_table", "check_target_shape", "check_p_solution", "check_interval",
    "check_welch_bound", "check_coherence", "check_frame", "check_represented",
    "check_sweep_table",
]


class CourseworkError(VolratioError, ValueError):
    """A checker called with arguments it cannot work with (not a wrong answer)."""


@dataclass(frozen=True)
class Check:
    """The verdict of one checker. `bool(check)` is `check.ok`."""

    check: str  # the checker's name
    ok: bool
    message: str  # what is right, or what is wrong and what to look at
    expected: Any = None  # the reference value (when there is a single one to show)
    got: Any = None  # the student's answer as the checker read it

    def __bool__(self) -> bool:
        return self.ok

    def __repr__(self) -> str:
        return f"[{'PASS' if self.ok else 'FAIL'}] {self.check}: {self.message}"

    __str__ = __repr__

    def _repr_pretty_(self, p, cycle) -> None:  # IPython display
        p.text(repr(self))


# ---------------------------------------------------------------------------------------------
# Helpers: read answers without raising


class _Unanswered(Exception):
    pass


class _BadAnswer(Exception):
    pass


def _answered(x, what: str):
    if x is None or x is Ellipsis:
        raise _Unanswered(f"{what} is not answered yet (got {x!r}); replace the placeholder with your answer")
    return x


def _number(x, what: str) -> float:
    _answered(x, what)
    if isinstance(x, torch.Tensor):
        if x.numel() != 1:
            raise _BadAnswer(f"{what} should be one number, got a tensor of shape {tuple(x.shape)}")
        x = x.item()
    if isinstance(x, np.ndarray):
        if x.size != 1:
            raise _BadAnswer(f"{what} should be one number, got an array of shape {x.shape}")
        x = x.item()
    if isinstance(x, (bool, str)) or not isinstance(x, (int, float, np.integer, np.floating)):
        raise _BadAnswer(f"{what} should be a number, got {type(x).__name__} {x!r}")
    v = float(x)
    if not math.isfinite(v):
        raise _BadAnswer(f"{what} is {v}; a finite number was expected")
    return v


def _array(x, what: str, dtype=np.float64) -> np.ndarray:
    _answered(x, what)
    if isinstance(x, torch.Tensor):
        x = x.detach().cpu().numpy()
    try:
        a = np.asarray(x, dtype=dtype)
    except (TypeError, ValueError) as e:
        raise _BadAnswer(f"{what} could not be read as a numeric array ({e})") from None
    if np.issubdtype(a.dtype, np.floating) and not np.all(np.isfinite(a)):
        raise _BadAnswer(f"{what} contains NaN or Inf")
    return a


def _close(a: float, b: float, rtol: float = 1e-6, atol: float = 1e-9) -> bool:
    return abs(a - b) <= atol + rtol * abs(b)


def _checker(fn: Callable) -> Callable:
    """Turn the helpers' `_Unanswered` / `_BadAnswer` into a failed `Check` (never an exception)."""
    import functools

    @functools.wraps(fn)
    def wrapped(*args, **kwargs) -> Check:
        try:
            return fn(*args, **kwargs)
        except (_Unanswered, _BadAnswer) as e:
            return Check(fn.__name__, False, str(e))

    return wrapped


def _net(x, what: str = "your network"):
    from .nets import CoordMLP

    _answered(x, what)
    if not isinstance(x, CoordMLP):
        hint = " — train() returns a TrainResult; its .net is the network" if isinstance(getattr(x, "net", None), CoordMLP) else ""
        raise _BadAnswer(f"{what} should be a volratio.nets.CoordMLP, got {type(x).__name__}{hint}")
    return x


# ---------------------------------------------------------------------------------------------
# 01 — Picbreeder genomes, layerization, SGD twins (volratio.picbreeder, graph, train)


@_checker
def check_layerized_size(name: str, depth, width, nonzero) -> Check:
    """Depth (hidden layers), width (units per hidden layer) and non-zero weights of the layerized
    Picbreeder network `name` (`volratio.picbreeder.layerize`)."""
    from . import picbreeder

    lay = picbreeder.layerize(name)
    net = lay.net
    g = picbreeder.genome(name)
    ref = {"depth": net.depth, "width": net.width, "nonzero": net.nonzero()[0]}
    got = {"depth": int(_number(depth, "depth")), "width": int(_number(width, "width")),
           "nonzero": int(_number(nonzero, "nonzero"))}
    problems = []
    if got["depth"] != ref["depth"]:
        if got["depth"] == g.depth():
            problems.append(
                f"depth {got['depth']} is the genome's longest path; the layered network has {ref['depth']} hidden "
                "layers — a greyscale genome gets constant hue and saturation units in a layer of their own above 'ink'"
                if ref["depth"] == g.depth() + 1 else
                f"depth {got['depth']} is the longest path, but the layered network has {ref['depth']}")
        elif got["depth"] == ref["depth"] + 1:
            problems.append(f"depth {got['depth']} counts the output layer; count hidden layers only ({ref['depth']})")
        else:
            problems.append(f"depth {got['depth']} ≠ {ref['depth']} hidden layers (net.depth)")
    if got["width"] != ref["width"]:
        hidden = sum(1 for n in g.nodes.values() if n.kind == "hidden")
        hint = (" — that is the number of hidden genome nodes; the width is the size of one layer, cache units included"
                if got["width"] == hidden else " — the width counts every unit of a layer, the cache units included (net.arch)")
        problems.append(f"width {got['width']} ≠ {ref['width']}{hint}")
    if got["nonzero"] != ref["nonzero"]:
        if got["nonzero"] == lay.n_genome_weights:
            problems.append(
                f"{got['nonzero']} non-zero weights are the genome's links only; the layered network also has "
                f"{lay.n_cache_weights} weights of value 1 that carry values up (cache units) and select the outputs")
        elif got["nonzero"] == net.n_params():
            problems.append(f"{got['nonzero']} counts every weight, masked ones included; count the non-zero effective weights")
        else:
            problems.append(f"non-zero weights {got['nonzero']} ≠ {ref['nonzero']} (net.nonzero())")
    if problems:
        return Check("check_layerized_size", False, "; ".join(problems), ref, got)
    return Check("check_layerized_size", True,
                 f"{name}: {ref['depth']} hidden layers × {ref['width']} units, {ref['nonzero']} non-zero weights "
                 f"({lay.n_genome_weights} genome links + {lay.n_cache_weights} carrying weights)", ref, got)


def _layer_cases(seed: int):
    """Graphs to test a layering function on: planted DAGs (always) and the skull genome (if present)."""
    from . import picbreeder
    from .targets import get_target

    cases = [(f"planted:{seed + i}:depth={d}", get_target(f"planted:{seed + i}:depth={d}").graph)
             for i, d in enumerate((2, 3, 5))]
    if picbreeder.available():
        cases.append(("picbreeder:skull", picbreeder.genome("skull")))
    return cases


def _shortest_layers(g) -> dict:
    preds = g.predecessors()
    layer = {}
    for k in g.topological_order():
        layer[k] = 0 if g.nodes[k].kind == "in" else 1 + min((layer[s] for s, _ in preds[k]), default=0)
    return layer


@_checker
def check_layers(fn, seed: int = 0) -> Check:
    """`fn(graph) -> {node: layer}`: inputs at layer 0, every other node at 1 + the longest path from
    the inputs (the ASAP layering of `Graph.layers`). Tried on planted DAGs and, when the data is
    there, the skull genome."""
    _answered(fn, "your layering function")
    if not callable(fn):
        raise _BadAnswer(f"give a function graph -> dict, got {type(fn).__name__}")
    for label, g in _layer_cases(seed):
        ref = g.layers("asap")
        try:
            got = fn(g)
        except NotImplementedError:
            return Check("check_layers", False, "your function is not implemented yet (it raised NotImplementedError)")
        except Exception as e:  # the student's code failed: say where
            return Check("check_layers", False, f"your function raised {type(e).__name__}: {e} (on {label})")
        if not isinstance(got, dict):
            return Check("check_layers", False, f"your function returned {type(got).__name__}; return a dict node → layer")
        missing = [k for k in ref if k not in got]
        if missing:
            return Check("check_layers", False, f"on {label}: no layer for node(s) {missing[:5]} — every node needs one, inputs too")
        try:
            got = {k: int(got[k]) for k in ref}
        except (TypeError, ValueError):
            return Check("check_layers", False, f"on {label}: layers should be integers, got e.g. {next(iter(got.values()))!r}")
        wrong = [k for k in g.topological_order() if got[k] != ref[k]]
        if wrong:
            k = wrong[0]
            if all(got[j] == ref[j] + 1 for j in ref):
                why = "every layer is one too high: inputs are at layer 0"
            elif all(got[j] == v for j, v in _shortest_layers(g).items()):
                why = "you took the shortest path from the inputs (min over predecessors); a node must come after *all* its inputs: take the max"
            else:
                preds = [s for s, _ in g.predecessors()[k]]
                why = f"its predecessors {preds[:4]} sit at layers {[ref[s] for s in preds[:4]]}"
            return Check("check_layers", False,
                         f"on {label}: node {k} got layer {got[k]}, expected {ref[k]} — {why}", ref[k], got[k])
    return Check("check_layers", True, "your layering matches Graph.layers() on every test graph")


@_checker
def check_twin(net, name: str, res: int = 16) -> Check:
    """A dense SGD twin of Picbreeder `name`: the layerized network's architecture and head, every
    weight unmasked, and an MSE at `res` (against `get_target('picbreeder:NAME').image(res)`) below
    that of the best constant image (the target's mean colour)."""
    from . import picbreeder
    from .targets import get_target

    net = _net(net)
    pb = picbreeder.layerized(name)
    if str(net.arch) != str(pb.arch):
        return Check("check_twin", False,
                     f"architecture {net.arch} differs from the layerized {name} ({pb.arch}); build CoordMLP(pb.arch, head='hsv', …)",
                     str(pb.arch), str(net.arch))
    if net.head != pb.head:
        return Check("check_twin", False, f"head {net.head!r} ≠ {pb.head!r}: the twin draws through the same head", pb.head, net.head)
    total = net.n_params() // net.population
    masked = int(sum(int((m[0] == 0).sum()) for m in net.masks))
    if masked:
        return Check("check_twin", False,
                     f"{masked} of {total} weights are masked: an SGD twin is dense (did you copy the Picbreeder masks?)")
    target = get_target(f"picbreeder:{name}").image(res)  # (res, res, 3)
    with torch.no_grad():
        img = net.render(res)[0].to(target.dtype)
    mse = float(((img - target) ** 2).mean())
    base = float(((target - target.mean(dim=(0, 1))) ** 2).mean())
    if not mse < base:
        return Check("check_twin", False,
                     f"MSE {mse:.4f} at {res}×{res} is not below {base:.4f}, the error of a flat image of the mean colour — "
                     "train longer, or check the target is at the same resolution and in [0, 1]", base, mse)
    return Check("check_twin", True,
                 f"dense twin of {name}: {net.nonzero()[0]} non-zero weights vs Picbreeder's {pb.nonzero()[0]}; "
                 f"MSE {mse:.4f} (flat mean-colour image: {base:.4f})", base, mse)


# ---------------------------------------------------------------------------------------------
# 02 — EMC2-Bench: the perturbation score by plain re-rendering (volratio.emc2, judges)


@_checker
def check_perturbed_image(image, net, param, delta: float, res: int) -> Check:
    """The image `(res, res, 3)` of `net` with weight `param = (kernel, row, col)` moved by `delta`,
    rendered from scratch (`volratio.emc2.naive_render`)."""
    from .emc2 import naive_render

    i, r, c = (int(v) for v in param)
    if net.masks[i][0, r, c] == 0:
        raise CourseworkError(f"weight {param} is masked out; pick a non-zero one (volratio.emc2.nonzero_params)")
    got = _array(image, "your image")
    ref = naive_render(net, param, delta, res).double().numpy()
    if got.shape != ref.shape:
        hint = " — take render(res)[0], the first network of the population" if got.shape == (1, *ref.shape) else ""
        return Check("check_perturbed_image", False, f"shape {got.shape} ≠ {ref.shape}{hint}", ref.shape, got.shape)
    err = float(np.abs(got - ref).max())
    if err <= 1e-5:
        return Check("check_perturbed_image", True, f"matches the re-rendered image (max |difference| {err:.1e})")
    with torch.no_grad():
        base = net.render(res)[0].double().numpy()
        minus = naive_render(net, param, -delta, res).double().numpy()
    if np.abs(got - base).max() <= 1e-5:
        why = ("it is the unperturbed image — did you change a copy and render the original, or change the weight "
               "after rendering?")
    elif np.abs(got - minus).max() <= 1e-5:
        why = "it is the image for −δ: add δ to the weight, do not subtract it"
    else:
        why = f"max |difference| {err:.3g}; perturb net.weights[{i}][0, {r}, {c}] (kernel {i}, row {r} = input unit, column {c} = output unit)"
    return Check("check_perturbed_image", False, f"wrong image: {why}")


@_checker
def check_perturbation_score(answer, net, delta: float, res: int, threshold: float = 0.9, label: str = "target") -> Check:
    """S(θ; δ) of `net` at one δ: the fraction of its non-zero weights w for which the image with
    w ← w + δ is judged to keep its identity, the judge being SSIM ≥ `threshold` against the
    unperturbed image at `res` (`volratio.judges.SSIMJudge`). Recomputed with `volratio.emc2.score`."""
    from .emc2 import EMC2Config, score
    from .judges import SSIMJudge

    got = _number(answer, "your score")
    with torch.no_grad():
        ref_img = net.render(res)[0]
    judge = SSIMJudge(ref_img, threshold)
    cfg = EMC2Config(deltas=(float(delta),), res=res, max_params=None, device="cpu", dtype="float64")
    r = score(net, judge, label, cfg)
    s = float(r.scores[0])
    kept = int(round(s * r.n_params))
    n_all = net.n_params() // net.population
    # SSIM within 1e-4 of the threshold: float32 and float64 renders may judge these either way
    near = int((np.abs(r.table["score"].to_numpy() - threshold) < 1e-4).sum())
    if any(_close(got, (kept + j) / r.n_params, rtol=0, atol=1e-9) for j in range(-near, near + 1)):
        extra = f" ({near} weight(s) sit at the threshold and may go either way)" if near else ""
        return Check("check_perturbation_score", True,
                     f"S(δ={delta:g}) = {s:.4f}: {kept} of {r.n_params} non-zero weights keep the identity{extra}", s, got)
    r_neg = score(net, judge, label, EMC2Config(deltas=(-float(delta),), res=res, max_params=None, device="cpu", dtype="float64"))
    wrong = {
        "1 − S: you counted the perturbations that *destroy* the identity": 1 - s,
        f"{kept}: a count — divide by |nz(θ)| = {r.n_params}": float(kept),
        f"you divided by all {n_all} weights; S averages over the non-zero ones only ({r.n_params})": kept / n_all,
        f"you perturbed masked weights too (they change nothing, so they count as kept); S averages over the "
        f"{r.n_params} non-zero weights only": (kept + n_all - r.n_params) / n_all,
        f"that is S at δ = {-delta:g}; check the sign of δ": float(r_neg.scores[0]),
    }
    for why, v in wrong.items():
        if _close(got, v, rtol=0, atol=1e-9) and not _close(v, s, rtol=0, atol=1e-9):
            return Check("check_perturbation_score", False, f"your score {got:.4f} ≠ {s:.4f}: {why}", s, got)
    return Check("check_perturbation_score", False,
                 f"your score {got:.4f} ≠ {s:.4f} ({kept} of {r.n_params} non-zero weights kept) — check the judge: SSIM "
                 f"against the *unperturbed* image at {res}×{res}, kept when ≥ {threshold}", s, got)


# ---------------------------------------------------------------------------------------------
# 03 — Similarity-based pruning (volratio.prune)


def _layer_maps(net, layer: int, res: int, member: int) -> torch.Tensor:
    with torch.no_grad():
        feats = [f.detach() for f in net.features(res)]
    if not 0 <= layer < len(feats):
        raise CourseworkError(f"layer {layer} does not exist; the network has hidden layers 0 … {len(feats) - 1}")
    return feats[layer][member].reshape(res * res, -1)  # (P, W)


@_checker
def check_similarity(matrix, net, layer: int, res: int = 32, member: int = 0) -> Check:
    """The `(W, W)` cosine similarity of the feature maps (raw, not centred) of hidden layer `layer`
    (0-based, `net.features(res)[layer]`) — `volratio.prune.similarity`."""
    from .prune import similarity

    maps = _layer_maps(net, layer, res, member)
    ref = similarity(maps).numpy()
    got = _array(matrix, "your similarity matrix")
    if got.shape != ref.shape:
        hint = (" — you compared pixels; compare units (columns of the (pixels, units) map matrix)"
                if got.shape == (maps.shape[0], maps.shape[0]) else "")
        return Check("check_similarity", False, f"shape {got.shape} ≠ {ref.shape} (units × units){hint}", ref.shape, got.shape)
    if np.allclose(got, ref, atol=1e-6):
        return Check("check_similarity", True, f"cosine similarities of the {ref.shape[0]} units of layer {layer} match")
    x = maps.double()
    if np.allclose(got, (x.T @ x).numpy(), atol=1e-6, rtol=1e-6):
        why = "these are raw inner products: divide by the norms of the two maps (the diagonal must be 1)"
    elif np.allclose(got, similarity(maps, centred=True).numpy(), atol=1e-6):
        why = "you subtracted each map's mean (Pearson correlation); SP's default compares raw maps (centred=False)"
    elif np.allclose(got, np.abs(ref), atol=1e-6):
        why = "you took absolute values; keep the sign (a unit and its negation are not redundant by default)"
    else:
        i, j = np.unravel_index(np.abs(got - ref).argmax(), ref.shape)
        why = f"entry ({i}, {j}) is {got[i, j]:.4f}, expected {ref[i, j]:.4f}"
    return Check("check_similarity", False, why)


@_checker
def check_redundant_pairs(answer, net, layer: int, tau: float, res: int = 32, member: int = 0) -> Check:
    """The redundant pairs of hidden layer `layer` at threshold τ: unordered pairs (i, j), i ≠ j,
    with cosine similarity > τ (`volratio.prune.redundant_pairs`). `answer`: a list of pairs."""
    from .prune import redundant_pairs, similarity

    sim = similarity(_layer_maps(net, layer, res, member))
    ref = {(i, j) for i, j, _ in redundant_pairs(sim, tau)}
    _answered(answer, "your pairs")
    if isinstance(answer, (int, np.integer)):
        raise _BadAnswer(f"give the pairs themselves (a list of (i, j)), not their number {answer}")
    try:
        pairs = [tuple(int(v) for v in p) for p in answer]
    except (TypeError, ValueError):
        raise _BadAnswer("give a list of pairs (i, j) of unit indices") from None
    if any(len(p) != 2 for p in pairs):
        raise _BadAnswer("every pair should have two unit indices (i, j)")
    if any(i == j for i, j in pairs):
        return Check("check_redundant_pairs", False, "your list pairs a unit with itself (the diagonal, similarity 1); use i ≠ j")
    got = {(min(p), max(p)) for p in pairs}
    if len(got) < len(pairs):
        return Check("check_redundant_pairs", False,
                     f"{len(pairs)} pairs but only {len(got)} distinct ones: (i, j) and (j, i) are the same pair — count it once")
    if got == ref:
        return Check("check_redundant_pairs", True, f"{len(ref)} redundant pair(s) at τ = {tau}", sorted(ref), sorted(got))
    s = sim.numpy()
    extra, miss = sorted(got - ref), sorted(ref - got)
    if extra and all(abs(s[i, j]) > tau for i, j in extra) and not any(s[i, j] > tau for i, j in extra):
        why = f"pairs {extra[:3]} have similarity below −τ; only similarity > τ counts (sign matters)"
    elif extra:
        i, j = extra[0]
        why = f"pair {extra[0]} has similarity {s[i, j]:.4f}, not above τ = {tau}"
    else:
        i, j = miss[0]
        why = f"you missed {len(miss)} pair(s), e.g. {miss[0]} with similarity {s[i, j]:.4f} > τ = {tau}"
    return Check("check_redundant_pairs", False, why, sorted(ref), sorted(got))


@_checker
def check_unit_removed(net, layer: int, unit: int, member: int = 0) -> Check:
    """Hidden unit `unit` of hidden layer `layer` (0-based) removed the SP way: its incoming weights
    (column `unit` of `net.masks[layer]`) and its outgoing weights (row `unit` of
    `net.masks[layer + 1]`) masked, and the weights under the masks exactly zero."""
    net = _net(net)
    if not 0 <= layer < net.depth:
        raise CourseworkError(f"layer {layer} does not exist; hidden layers are 0 … {net.depth - 1}")
    m_in, m_out = net.masks[layer][member], net.masks[layer + 1][member]
    problems = []
    if (m_in[:, unit] != 0).any():
        problems.append(f"its incoming weights are not all masked (column {unit} of net.masks[{layer}])")
    if (m_out[unit, :] != 0).any():
        problems.append(f"its outgoing weights are not all masked (row {unit} of net.masks[{layer + 1}]) — "
                        "without them the unit's constant output would still reach the next layer")
    w_in, w_out = net.weights[layer][member][:, unit], net.weights[layer + 1][member][unit, :]
    if not problems and ((w_in != 0).any() or (w_out != 0).any()):
        problems.append("the masks are right but net.weights under them are not zero — call net.apply_masks_() "
                        "(or set masks with net.set_mask, which does it)")
    if problems:
        return Check("check_unit_removed", False, f"unit {unit} of layer {layer}: " + "; ".join(problems))
    live = net.live_units()[member][layer]
    return Check("check_unit_removed", True, f"unit {unit} of layer {layer} is gone; the layer has {live} live units left")


@_checker
def check_sparsity(answer, net, member: int = 0) -> Check:
    """The weight sparsity of `net`: the fraction of all weights that are masked
    (`volratio.prune.sparsity_report`)."""
    from .prune import sparsity_report

    got = _number(answer, "your sparsity")
    rep = sparsity_report(net)["members"][member]
    s = float(rep["sparsity"])
    if _close(got, s, rtol=0, atol=1e-9):
        return Check("check_sparsity", True, f"sparsity {s:.4f}: {rep['nonzero']} of {rep['weights']} weights remain", s, got)
    if _close(got, 1 - s, rtol=0, atol=1e-9):
        why = "that is the fraction of weights that *remain*; sparsity is the fraction removed"
    elif _close(got, 100 * s, rtol=0, atol=1e-7):
        why = "that is a percentage; give a fraction in [0, 1]"
    elif _close(got, rep["weights"] - rep["nonzero"], rtol=0, atol=0.5):
        why = f"that is the number of masked weights; divide by all {rep['weights']} weights"
    else:
        why = f"{rep['nonzero']} of {rep['weights']} weights are non-zero"
    return Check("check_sparsity", False, f"your sparsity {got:.4f} ≠ {s:.4f}: {why}", s, got)


# ---------------------------------------------------------------------------------------------
# 04 — Depth and the PNG-ratio predictor (volratio.depth)


def _png_variant(img, optimize: bool, level: int) -> int:
    import io

    from PIL import Image

    from .depth import to_uint8

    buf = io.BytesIO()
    Image.fromarray(to_uint8(img), mode="RGB").save(buf, format="PNG", optimize=optimize, compress_level=level)
    return len(buf.getvalue())


@_checker
def check_png_ratio(answer, target: str, res: int = 64) -> Check:
    """The PNG compression ratio raw bytes / PNG bytes of target spec `target` at `res`: uint8 RGB,
    Pillow, `optimize=True`, `compress_level=9` (`volratio.depth.png_ratio`)."""
    from .depth import png_ratio
    from .targets import get_target

    got = _number(answer, "your ratio")
    c = png_ratio(target, res)
    if _close(got, c.ratio, rtol=1e-9):
        return Check("check_png_ratio", True,
                     f"{target} at {res}×{res}: {c.raw_bytes} raw / {c.png_bytes} PNG bytes = {c.ratio:.4f} (Pillow {c.pillow})",
                     c.ratio, got)
    img = get_target(target).image(res)
    png_default = _png_variant(img, False, 6)
    wrong = {
        "you inverted it: the ratio is raw bytes / PNG bytes (higher = simpler image)": c.png_bytes / c.raw_bytes,
        f"you counted one byte per pixel; raw RGB has 3 × {res}² = {c.raw_bytes} bytes": c.ratio / 3,
        "you saved with Pillow's defaults; use optimize=True, compress_level=9 so every ratio is comparable": c.raw_bytes / png_default,
        f"you counted 4 bytes per float pixel channel; quantise to uint8 first ({c.raw_bytes} raw bytes)": c.ratio * 4,
    }
    for why, v in wrong.items():
        if _close(got, v, rtol=1e-6):
            return Check("check_png_ratio", False, f"your ratio {got:.4f} ≠ {c.ratio:.4f}: {why}", c.ratio, got)
    return Check("check_png_ratio", False,
                 f"your ratio {got:.4f} ≠ {c.ratio:.4f} ({c.raw_bytes} raw / {c.png_bytes} PNG bytes) — quantise with "
                 "floor(clip(x, 0, 1)·255 + 0.5) to uint8 RGB and save as PNG in memory", c.ratio, got)


@_checker
def check_depth_fit(intercept, slope, r2, ratios, depths) -> Check:
    """The least-squares line depth ≈ a + b·ratio through `(ratios, depths)` and its R²
    (`volratio.depth.fit_predictor`)."""
    from scipy import stats

    from .depth import fit_predictor

    a, b, q = _number(intercept, "intercept"), _number(slope, "slope"), _number(r2, "R²")
    p = fit_predictor(ratios, depths)
    ref = {"intercept": p.a, "slope": p.b, "r2": p.r2}
    got = {"intercept": a, "slope": b, "r2": q}
    if all(_close(got[k], ref[k], rtol=1e-6, atol=1e-9) for k in ref):
        return Check("check_depth_fit", True, f"depth ≈ {p.a:.3f} + {p.b:.3f}·ratio, R² = {p.r2:.3f} (n = {p.n})", ref, got)
    inv = stats.linregress(np.asarray(depths, float), np.asarray(ratios, float))
    if _close(b, inv.slope, rtol=1e-6) and _close(a, inv.intercept, rtol=1e-6):
        why = "you regressed the ratio on the depth; the predictor is depth = a + b·ratio (x = ratio, y = depth)"
    elif _close(a, p.b, rtol=1e-6) and _close(b, p.a, rtol=1e-6):
        why = "intercept and slope are swapped"
    elif _close(q, math.sqrt(p.r2), rtol=1e-6):
        why = "that is |r|, the correlation; R² is its square"
    else:
        bad = [k for k in ref if not _close(got[k], ref[k], rtol=1e-6, atol=1e-9)]
        why = ", ".join(f"{k} {got[k]:.4f} ≠ {ref[k]:.4f}" for k in bad)
    return Check("check_depth_fit", False, why, ref, got)


@_checker
def check_sweet_spot(answer, depths, scores, tol: float = 1e-9) -> Check:
    """The sweet spot of a score-vs-depth curve: the shallowest depth whose mean score (over seeds,
    the columns of `scores`) is within `tol` of the best (`volratio.depth.sweet_spot`)."""
    from .depth import sweet_spot

    d = [int(x) for x in depths]
    ss = sweet_spot(d, scores, tol=tol, n_boot=0)
    if ss.flat:
        raise CourseworkError("this curve is flat (no sweet spot); give scores that vary with depth")
    got = _number(answer, "your sweet spot")
    if got == ss.depth:
        return Check("check_sweet_spot", True, f"sweet spot at depth {ss.depth} (mean score {max(ss.means):.3f})", ss.depth, got)
    means = np.asarray(ss.means)
    if int(got) == int(np.argmax(means)) and int(got) not in d:
        why = f"{int(got)} is the *index* of the best depth; the depth there is {d[int(np.argmax(means))]}"
    elif int(got) in ss.tied:
        why = f"depths {ss.tied} tie for the best mean; report the shallowest, {ss.depth} (the smallest network that reaches the peak)"
    elif int(got) == d[int(np.argmin(means))]:
        why = "that is the depth with the *lowest* mean score"
    elif np.ndim(scores) == 2 and int(got) in ss.per_seed:
        why = "that is one seed's best depth; average the scores over seeds (the columns) first"
    else:
        why = f"mean scores per depth are {dict(zip(d, np.round(means, 4).tolist()))}"
    return Check("check_sweet_spot", False, f"your sweet spot {got:g} ≠ {ss.depth}: {why}", ss.depth, got)


# ---------------------------------------------------------------------------------------------
# 05 — The volume ratio ρ(W, L) on Boolean targets (volratio.boolean, rho, theory)


@_checker
def check_truth_table(answer, spec: str) -> Check:
    """The truth table of Boolean target `spec` on all 2ⁿ inputs, as ±1, rows in the order of
    `volratio.boolean.input_table(n)`."""
    from .boolean import get_boolean_target, input_table

    t = get_boolean_target(spec)
    ref = np.asarray(t.table, dtype=np.int64)
    got = _array(answer, "your truth table").reshape(-1)
    if got.shape != ref.shape:
        return Check("check_truth_table", False, f"{got.size} entries; there are 2^{t.n} = {ref.size} inputs", ref.size, got.size)
    if np.array_equal(got, ref):
        return Check("check_truth_table", True, f"{spec}: {int((ref > 0).sum())} of {ref.size} inputs map to +1")
    X = input_table(t.n)
    if np.array_equal(got, (ref + 1) // 2):
        why = "you used 0/1; the library encodes bits as ±1 (−1 = false, +1 = true)"
    elif np.array_equal(got, -ref):
        why = "every entry is negated — check the sign convention: a gate outputs +1 when w·x + b > 0"
    elif np.array_equal(got, ref[::-1]):
        why = "the rows are in reverse order; follow input_table(n)"
    else:
        rev = {tuple(r): i for i, r in enumerate(X[:, ::-1].tolist())}
        perm = np.array([rev[tuple(r)] for r in X.tolist()])
        if np.array_equal(got, ref[perm]):
            why = "the bits are in reverse order (x0 is column 0 of input_table(n))"
        else:
            k = int(np.flatnonzero(got != ref)[0])
            why = f"row {k} (input {X[k].tolist()}) should be {ref[k]:+d}"
    return Check("check_truth_table", False, why, ref.tolist(), got.tolist())


@_checker
def check_target_shape(spec: str, depth, w_min) -> Check:
    """L* (gates on the longest input → root path) and W_min = `min_width(L*)` of Boolean target `spec`."""
    from .boolean import get_boolean_target

    t = get_boolean_target(spec)
    ref = {"depth": t.depth, "w_min": t.min_width(t.depth)}
    got = {"depth": int(_number(depth, "L*")), "w_min": int(_number(w_min, "W_min"))}
    problems = []
    if got["depth"] != ref["depth"]:
        if got["depth"] == ref["depth"] + 1:
            problems.append(f"L* = {got['depth']} counts the inputs as a layer; count gates on the longest path ({ref['depth']})")
        else:
            problems.append(f"L* = {got['depth']} ≠ {ref['depth']}")
    if got["w_min"] != ref["w_min"]:
        n_prim = t.n_nodes - t.n
        if got["w_min"] == n_prim:
            problems.append(f"W_min = {got['w_min']} is the number of gates; units can sit in different layers, so fewer suffice ({ref['w_min']})")
        elif got["w_min"] == t.n:
            problems.append(f"W_min = {got['w_min']} is the number of inputs; the inputs feed layer 1 directly and need no units")
        else:
            problems.append(f"W_min = {got['w_min']} ≠ {ref['w_min']} — count the units of the widest hidden layer, "
                            "copies of values read more than one layer later included")
    if problems:
        return Check("check_target_shape", False, "; ".join(problems), ref, got)
    return Check("check_target_shape", True, f"{spec}: L* = {ref['depth']}, W_min = {ref['w_min']}", ref, got)


@_checker
def check_p_solution(estimate, spec: str, W: int, L: int, samples: int, p: float = 0.8, z: float = 4.0) -> Check:
    """A Monte Carlo estimate of P(solution) for width W, depth L on Boolean target `spec` from
    `samples` random masked ternary networks (mask density `p`): accepted when within `z` binomial
    standard errors of the exact value from enumeration (`volratio.rho.exact`)."""
    from .boolean import get_boolean_target
    from .rho import RhoError, SamplerConfig, exact

    t = get_boolean_target(spec)
    cfg = SamplerConfig(p=p, device="cpu")
    try:
        e = exact(t, W, L, cfg, max_configs=3**13)
    except RhoError as err:
        raise CourseworkError(f"{err} — this checker enumerates exactly; pick a smaller (W, L)") from None
    got = _number(estimate, "your estimate")
    n = int(samples)
    if n < 1:
        raise _BadAnswer(f"samples = {samples}; give how many networks you sampled")

    def within(ref: float) -> bool:
        se = math.sqrt(max(ref * (1 - ref), 1.0 / n) / n)
        return abs(got - ref) <= z * se

    se = math.sqrt(max(e.p_solution * (1 - e.p_solution), 1.0 / n) / n)
    if within(e.p_solution):
        return Check("check_p_solution", True,
                     f"{got:.5f} vs exact {e.p_solution:.5f} (within {abs(got - e.p_solution) / se:.1f} standard errors of {n} samples)",
                     e.p_solution, got)
    alts = {"that is P(compositional), the volume of compositional solutions; P(solution) counts every network "
            "whose output table equals the target's": e.p_compositional}
    if e.rho is not None:
        alts["that is ρ = P(compositional | solution)"] = e.rho
    if p != 1.0:
        alts["it matches unmasked networks (p = 1): drop each weight with probability 1 − p before use"] = \
            exact(t, W, L, SamplerConfig(p=1.0, device="cpu"), max_configs=3**13).p_solution
    for why, v in alts.items():
        if within(v) and not within(e.p_solution):
            return Check("check_p_solution", False, f"your estimate {got:.5f}: {why}", e.p_solution, got)
    return Check("check_p_solution", False,
                 f"your estimate {got:.5f} is {abs(got - e.p_solution) / se:.1f} standard errors from the exact {e.p_solution:.5f} — "
                 "check the sampler: ternary weights uniform on {−1, 0, +1} kept with probability p, ternary biases, "
                 "units output +1 when w·x + b > 0", e.p_solution, got)


@_checker
def check_interval(lo, hi, k: int, n: int, confidence: float = 0.95) -> Check:
    """The Wilson score interval for k successes out of n (`volratio.rho.interval`)."""
    from .rho import interval

    a, b = _number(lo, "lower end"), _number(hi, "upper end")
    rlo, rhi = interval(k, n, confidence, "wilson")
    if _close(a, rlo, rtol=1e-6, atol=1e-9) and _close(b, rhi, rtol=1e-6, atol=1e-9):
        return Check("check_interval", True, f"Wilson {confidence:.0%} interval for {k}/{n}: [{rlo:.5f}, {rhi:.5f}]", (rlo, rhi), (a, b))
    from scipy import stats

    zq = stats.norm.ppf(0.5 + confidence / 2)
    ph = k / n
    wald = (ph - zq * math.sqrt(ph * (1 - ph) / n), ph + zq * math.sqrt(ph * (1 - ph) / n))
    cp = interval(k, n, confidence, "clopper-pearson")
    if _close(a, wald[0], rtol=1e-6, atol=1e-9) and _close(b, wald[1], rtol=1e-6, atol=1e-9):
        why = "that is the normal (Wald) interval p̂ ± z·√(p̂(1−p̂)/n), which fails for rare events; use Wilson's"
    elif _close(a, cp[0], rtol=1e-6, atol=1e-9) and _close(b, cp[1], rtol=1e-6, atol=1e-9):
        why = "that is the Clopper–Pearson (exact) interval; this exercise asks for Wilson's"
    elif a > b:
        why = "the ends are swapped"
    else:
        why = f"expected [{rlo:.5f}, {rhi:.5f}]"
    return Check("check_interval", False, f"[{a:.5f}, {b:.5f}]: {why}", (rlo, rhi), (a, b))


# ---------------------------------------------------------------------------------------------
# 06 — The Welch bound and frames (volratio.welch, superposition)


@_checker
def check_welch_bound(answer, m: int, n: int, k: int = 1) -> Check:
    """The order-k Welch bound on max_{i≠j} |⟨vᵢ, vⱼ⟩|^{2k} for m unit vectors in n dimensions,
    clipped at 0 (`volratio.welch.welch_bound`)."""
    from .welch import welch_bound

    got = _number(answer, "your bound")
    ref = welch_bound(m, n, k)
    if _close(got, ref, rtol=1e-6, atol=1e-9):
        return Check("check_welch_bound", True, f"Welch bound (k={k}) for m={m}, n={n}: {ref:.6g}", ref, got)
    raw = (m / math.comb(n + k - 1, k) - 1) / (m - 1) if m > 1 else 0.0
    wrong = {
        f"that is the bound on the coherence μ; the Welch bound is on μ^{2 * k} (don't take the root)": ref ** (1 / (2 * k)),
        f"m ≤ n here, so the bound is negative before clipping: it is 0 (m={m} vectors fit orthogonally in ℝ^{n})": raw,
        "m and n are swapped (m vectors, n dimensions)": welch_bound(n, m, k) if n >= 1 and m >= 1 else float("nan"),
    }
    if k == 1:
        wrong["you divided by n·m instead of n·(m − 1)"] = (m - n) / (n * m)
    for why, v in wrong.items():
        if math.isfinite(v) and _close(got, v, rtol=1e-6, atol=1e-9) and not _close(v, ref, rtol=1e-6, atol=1e-9):
            return Check("check_welch_bound", False, f"your bound {got:.6g} ≠ {ref:.6g}: {why}", ref, got)
    return Check("check_welch_bound", False,
                 f"your bound {got:.6g} ≠ {ref:.6g}: for k = 1 it is (m − n) / (n (m − 1)), clipped at 0", ref, got)


@_checker
def check_coherence(answer, vectors) -> Check:
    """The coherence μ = max_{i≠j} |⟨v̂ᵢ, v̂ⱼ⟩| of the rows of `vectors` (normalised), next to the
    Welch bound √((m − n)/(n(m − 1))) no set of m unit vectors in ℝⁿ can go below."""
    from .welch import as_frame, coherence, welch_bound

    got = _number(answer, "your coherence")
    V = _array(vectors, "the vectors")
    if V.ndim != 2:
        raise CourseworkError(f"vectors should be an (m, n) array of m row vectors, got shape {V.shape}")
    m, n = V.shape
    ref = coherence(V)
    wb = math.sqrt(welch_bound(m, n))
    if _close(got, ref, rtol=1e-6, atol=1e-9):
        return Check("check_coherence", True, f"μ = {ref:.4f}; the Welch bound for m={m}, n={n} is {wb:.4f}", ref, got)
    G = V @ V.T
    raw = float(np.abs(G[~np.eye(m, dtype=bool)]).max())
    if got < wb - 1e-9:
        why = (f"your coherence {got:.4f} is below the Welch bound {wb:.4f} for m={m}, n={n}: a set of vectors "
               "cannot beat the bound — check you normalised them")
        if _close(got, ref ** 2, rtol=1e-6, atol=1e-9):
            why += " (it equals μ²: take the square root of the largest squared inner product)"
        return Check("check_coherence", False, why, ref, got)
    if _close(got, 1.0, rtol=0, atol=1e-9) and ref < 1 - 1e-9:
        why = "1 is ⟨vᵢ, vᵢ⟩: leave out the diagonal i = j"
    elif _close(got, raw, rtol=1e-6, atol=1e-9):
        why = "that is the largest raw inner product; normalise the rows to unit length first"
    elif _close(got, ref ** 2, rtol=1e-6, atol=1e-9):
        why = "that is μ²; the coherence is the largest |inner product| itself"
    else:
        G2 = as_frame(V) @ as_frame(V).T
        why = f"the largest |⟨v̂ᵢ, v̂ⱼ⟩| is {ref:.4f} at pair {np.unravel_index(np.abs(G2 - np.eye(m)).argmax(), G2.shape)}"
    return Check("check_coherence", False, f"your coherence {got:.4f} ≠ {ref:.4f}: {why}", ref, got)


@_checker
def check_frame(vectors, m: int, n: int, slack: float = 0.02, seed: int = 0) -> Check:
    """m vectors in ℝⁿ (rows) with low coherence: max squared inner product within `slack`
    (relative) of the best of the Welch bound and a numerical frame from
    `volratio.welch.low_coherence_frame(m, n, seed)`."""
    from .welch import best_bound, is_etf, low_coherence_frame, max_sq_inner

    V = _array(vectors, "your vectors")
    if V.shape != (m, n):
        hint = " — transpose it: vectors are the rows" if V.shape == (n, m) else ""
        return Check("check_frame", False, f"shape {V.shape} ≠ ({m}, {n}){hint}", (m, n), V.shape)
    norms = np.linalg.norm(V, axis=1)
    if np.any(norms < 1e-12):
        return Check("check_frame", False, f"row(s) {np.flatnonzero(norms < 1e-12).tolist()} are zero vectors; they have no direction")
    got = max_sq_inner(V)
    bound, which = best_bound(m, n)
    # the numerical frame is only needed when the answer does not already meet the lower bound
    target = bound if got <= bound * (1 + slack) + 1e-12 else max(bound, low_coherence_frame(m, n, seed=seed).max_sq_inner)
    note = "" if np.allclose(norms, 1, atol=1e-6) else " (rows were normalised before comparing)"
    if got <= target * (1 + slack) + 1e-12:
        etf = " — an equiangular tight frame: it meets the Welch bound" if is_etf(V, 1e-6) else ""
        return Check("check_frame", True,
                     f"max ⟨v̂ᵢ, v̂ⱼ⟩² = {got:.4f}; lower bound {bound:.4f} ({which}), best found {target:.4f}{etf}{note}",
                     target, got)
    return Check("check_frame", False,
                 f"max ⟨v̂ᵢ, v̂ⱼ⟩² = {got:.4f} is more than {slack:.0%} above {target:.4f} (lower bound {bound:.4f}, {which}){note} — "
                 "spread the vectors further (alternating projection on the Gram matrix gets there)", target, got)


@_checker
def check_represented(r, max_sq, W, threshold: float = 0.5) -> Check:
    """Superposition toy model, one instance with hidden weights `W` `(m, n)` (column i = feature
    i's direction): `r` = features represented (‖Wᵢ‖ > threshold) and `max_sq` = the largest
    ⟨Ŵᵢ, Ŵⱼ⟩² among them (`volratio.superposition.feature_interference`)."""
    from .superposition import feature_interference

    Wa = _array(W, "W")
    ref = feature_interference(Wa, threshold)
    got_r = int(_number(r, "r"))
    rows = int((np.linalg.norm(Wa, axis=1) > threshold).sum())
    if got_r != ref["r"]:
        why = (f"you took norms of the rows (hidden dimensions); features are the columns of W (shape {Wa.shape})"
               if got_r == rows and rows != ref["r"] else f"{ref['r']} columns have norm > {threshold}")
        return Check("check_represented", False, f"r = {got_r} ≠ {ref['r']}: {why}", ref, {"r": got_r})
    if ref["max_sq_inner"] is None:
        return Check("check_represented", True, f"r = {ref['r']}: fewer than two features, no interference", ref)
    mx = _number(max_sq, "max_sq")
    if not _close(mx, ref["max_sq_inner"], rtol=1e-6, atol=1e-9):
        if _close(mx, math.sqrt(ref["max_sq_inner"]), rtol=1e-6, atol=1e-9):
            why = "that is the largest |inner product|; square it"
        else:
            why = "normalise the represented columns and take the largest squared inner product between two different ones"
        return Check("check_represented", False, f"max_sq {mx:.4f} ≠ {ref['max_sq_inner']:.4f}: {why}", ref, {"r": got_r, "max_sq": mx})
    side = "at or above" if ref["max_sq_inner"] >= ref["bound"] - 1e-9 else "below (impossible)"
    return Check("check_represented", True,
                 f"r = {ref['r']} features in d = {ref['d']} dimensions, max ⟨Ŵᵢ, Ŵⱼ⟩² = {ref['max_sq_inner']:.4f}, "
                 f"{side} the Welch bound {ref['bound']:.4f}", ref, {"r": got_r, "max_sq": mx})


# ---------------------------------------------------------------------------------------------
# 07 — Sweeps (volratio.sweep)


@_checker
def check_sweep_table(table, grid: dict, seeds=(0,)) -> Check:
    """A results table (pandas DataFrame) from a sweep over `grid` ({parameter: values}) × `seeds`:
    one row per combination of the values and seed, no duplicates, every parameter a column."""
    import itertools

    _answered(table, "your table")
    if not hasattr(table, "columns"):
        raise _BadAnswer(f"give the results as a pandas DataFrame, got {type(table).__name__}")
    grid = {**grid, "seed": list(seeds)}
    keys = list(grid)
    missing = [k for k in keys if k not in table.columns]
    if missing:
        return Check("check_sweep_table", False, f"column(s) {missing} missing; every swept parameter (and the seed) should be a column")
    want = {tuple(c) for c in itertools.product(*(list(grid[k]) for k in keys))}
    rows = [tuple(r) for r in table[keys].itertuples(index=False, name=None)]
    have = set(rows)
    if len(rows) != len(have):
        return Check("check_sweep_table", False, f"{len(rows) - len(have)} duplicate row(s): a resumed sweep must not rerun finished points")
    if have != want:
        miss = sorted(want - have)[:3]
        extra = sorted(have - want)[:3]
        return Check("check_sweep_table", False, f"grid points missing {miss}" + (f", unexpected {extra}" if extra else ""),
                     len(want), len(have))
    return Check("check_sweep_table", True, f"{len(want)} grid points, each exactly once", len(want), len(have))
