"""Checks for the exercises of "Connectivity: which connections remain" (book/connectivity.md):
the steps of similarity-based pruning — cosine similarity of feature maps, redundant pairs, removing
a unit, the sparsity of the result (`volratio.prune`)."""

from __future__ import annotations

import numpy as np
import torch

from ..prune import redundant_pairs, similarity, sparsity_report
from .check import (
    BadAnswer,
    Check,
    CourseworkError,
    answered,
    array,
    checker,
    close,
    network,
    number,
)

__all__ = ["check_redundant_pairs", "check_similarity", "check_sparsity", "check_unit_removed"]


def _layer_maps(net, layer: int, res: int, member: int) -> torch.Tensor:
    with torch.no_grad():
        feats = [f.detach() for f in net.features(res)]
    if not 0 <= layer < len(feats):
        raise CourseworkError(f"layer {layer} does not exist; the network has hidden layers 0 … {len(feats) - 1}")
    return feats[layer][member].reshape(res * res, -1)  # (P, W)


@checker
def check_similarity(matrix, net, layer: int, res: int = 32, member: int = 0) -> Check:
    """The `(W, W)` cosine similarity of the feature maps (raw, not centred) of hidden layer `layer`
    (0-based, `net.features(res)[layer]`) — `volratio.prune.similarity`."""
    maps = _layer_maps(net, layer, res, member)
    ref = similarity(maps).numpy()
    got = array(matrix, "your similarity matrix")
    if got.shape != ref.shape:
        hint = (
            " — you compared pixels; compare units (columns of the (pixels, units) map matrix)"
            if got.shape == (maps.shape[0], maps.shape[0])
            else ""
        )
        return Check(
            "check_similarity", False, f"shape {got.shape} ≠ {ref.shape} (units × units){hint}", ref.shape, got.shape
        )
    if np.allclose(got, ref, atol=1e-6):
        return Check(
            "check_similarity", True, f"cosine similarities of the {ref.shape[0]} units of layer {layer} match"
        )
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


@checker
def check_redundant_pairs(answer, net, layer: int, tau: float, res: int = 32, member: int = 0) -> Check:
    """The redundant pairs of hidden layer `layer` at threshold τ: unordered pairs (i, j), i ≠ j,
    with cosine similarity > τ (`volratio.prune.redundant_pairs`). `answer`: a list of pairs."""
    sim = similarity(_layer_maps(net, layer, res, member))
    ref = {(i, j) for i, j, _ in redundant_pairs(sim, tau)}
    answered(answer, "your pairs")
    if isinstance(answer, (int, np.integer)):
        raise BadAnswer(f"give the pairs themselves (a list of (i, j)), not their number {answer}")
    try:
        pairs = [tuple(int(v) for v in p) for p in answer]
    except (TypeError, ValueError):
        raise BadAnswer("give a list of pairs (i, j) of unit indices") from None
    if any(len(p) != 2 for p in pairs):
        raise BadAnswer("every pair should have two unit indices (i, j)")
    if any(i == j for i, j in pairs):
        return Check(
            "check_redundant_pairs", False, "your list pairs a unit with itself (the diagonal, similarity 1); use i ≠ j"
        )
    got = {(min(p), max(p)) for p in pairs}
    if len(got) < len(pairs):
        return Check(
            "check_redundant_pairs",
            False,
            f"{len(pairs)} pairs but only {len(got)} distinct ones: (i, j) and (j, i) are the same pair — count it once",
        )
    if got == ref:
        return Check(
            "check_redundant_pairs", True, f"{len(ref)} redundant pair(s) at τ = {tau}", sorted(ref), sorted(got)
        )
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


@checker
def check_unit_removed(net, layer: int, unit: int, member: int = 0) -> Check:
    """Hidden unit `unit` of hidden layer `layer` (0-based) removed the SP way: its incoming weights
    (column `unit` of `net.masks[layer]`) and its outgoing weights (row `unit` of
    `net.masks[layer + 1]`) masked, and the weights under the masks exactly zero."""
    net = network(net)
    if not 0 <= layer < net.depth:
        raise CourseworkError(f"layer {layer} does not exist; hidden layers are 0 … {net.depth - 1}")
    m_in, m_out = net.masks[layer][member], net.masks[layer + 1][member]
    problems = []
    if (m_in[:, unit] != 0).any():
        problems.append(f"its incoming weights are not all masked (column {unit} of net.masks[{layer}])")
    if (m_out[unit, :] != 0).any():
        problems.append(
            f"its outgoing weights are not all masked (row {unit} of net.masks[{layer + 1}]) — "
            "without them the unit's constant output would still reach the next layer"
        )
    w_in, w_out = net.weights[layer][member][:, unit], net.weights[layer + 1][member][unit, :]
    if not problems and ((w_in != 0).any() or (w_out != 0).any()):
        problems.append(
            "the masks are right but net.weights under them are not zero — call net.apply_masks_() "
            "(or set masks with net.set_mask, which does it)"
        )
    if problems:
        return Check("check_unit_removed", False, f"unit {unit} of layer {layer}: " + "; ".join(problems))
    live = net.live_units()[member][layer]
    return Check(
        "check_unit_removed", True, f"unit {unit} of layer {layer} is gone; the layer has {live} live units left"
    )


@checker
def check_sparsity(answer, net, member: int = 0) -> Check:
    """The weight sparsity of `net`: the fraction of all weights that are masked
    (`volratio.prune.sparsity_report`)."""
    got = number(answer, "your sparsity")
    rep = sparsity_report(net)["members"][member]
    s = float(rep["sparsity"])
    if close(got, s, rtol=0, atol=1e-9):
        return Check(
            "check_sparsity", True, f"sparsity {s:.4f}: {rep['nonzero']} of {rep['weights']} weights remain", s, got
        )
    if close(got, 1 - s, rtol=0, atol=1e-9):
        why = "that is the fraction of weights that *remain*; sparsity is the fraction removed"
    elif close(got, 100 * s, rtol=0, atol=1e-7):
        why = "that is a percentage; give a fraction in [0, 1]"
    elif close(got, rep["weights"] - rep["nonzero"], rtol=0, atol=0.5):
        why = f"that is the number of masked weights; divide by all {rep['weights']} weights"
    else:
        why = f"{rep['nonzero']} of {rep['weights']} weights are non-zero"
    return Check("check_sparsity", False, f"your sparsity {got:.4f} ≠ {s:.4f}: {why}", s, got)
