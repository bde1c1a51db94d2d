"""Masks, prunable items and sparsity accounting — the pure part of pruning.

Two kinds of prunable item (`volratio.prune.similarity_pruning` prunes units):

- a **weight**: one entry of a kernel `(K, fan_in, fan_out)`; its mask entry is 0 or 1;
- a **unit**: hidden unit j of hidden layer l. Removing it zeroes its incoming column
  (`masks[l][:, :, j]`) and its outgoing row (`masks[l + 1][:, j, :]`).

A unit is *alive* when its mask still has an incoming and an outgoing connection (the same rule as
`CoordMLP.live_units`, read from the masks rather than the weights). Every function here is pure:
it reads scores and the previous mask and returns a new mask; it never re-admits an item the
previous mask removed. Counts are made exact with `apportion` (largest remainders), so a method
asked for sparsity s removes `round(s · n)` items, not "about" that many.

Chapter: "Connectivity: which connections remain".
"""

from __future__ import annotations

import math

import numpy as np
import torch

from ..errors import VolratioError
from ..nets import live_unit_mask


class PruneError(VolratioError, ValueError):
    """A pruning request that cannot be met (bad sparsity, a layer pruned empty, NaN activations…)."""


# ---------------------------------------------------------------------------------------------
# Checks


def check_sparsity(s: float, what: str = "sparsity") -> float:
    """Sparsity must lie in [0, 1): 1 would remove everything."""
    try:
        s = float(s)
    except (TypeError, ValueError):
        raise PruneError(f"{what} must be a number in [0, 1), got {s!r}") from None
    if not (0.0 <= s < 1.0) or math.isnan(s):
        raise PruneError(f"{what} must lie in [0, 1) (the fraction removed; 1 would remove everything), got {s}")
    return s


def per_member(sparsity, K: int, what: str = "sparsity") -> list[float]:
    """One sparsity per network: a number (shared) or a sequence of K numbers (e.g. matched to
    another population member by member)."""
    if np.ndim(sparsity) == 0:
        return [check_sparsity(sparsity, what)] * K
    vals = [check_sparsity(x, what) for x in list(sparsity)]
    if len(vals) != K:
        raise PruneError(f"got {len(vals)} {what} values for a population of {K}; give one or {K}")
    return vals


def check_finite_features(feats: list[torch.Tensor]) -> None:
    """Raise when any hidden activation is NaN/Inf: similarities and norms would be meaningless."""
    for l, f in enumerate(feats):
        if not torch.isfinite(f).all():
            bad = sorted({int(k) for k in torch.nonzero(~torch.isfinite(f))[:, 0]})
            raise PruneError(
                f"hidden layer {l} has NaN/Inf activations in network(s) {bad}: the network diverged; "
                "retrain it with a lower learning rate (or grad_norm) before pruning"
            )


def check_not_empty(masks: list[torch.Tensor]) -> None:
    """Raise when a kernel of some network has no connection left (its output would be constant)."""
    for i, m in enumerate(masks):
        empty = (m.reshape(m.shape[0], -1) == 0).all(dim=1)
        if empty.any():
            ks = [int(k) for k in torch.nonzero(empty).flatten()]
            raise PruneError(
                f"pruning would leave kernel {i} (layer {i}) of network(s) {ks} with no connection, so the "
                "image could no longer depend on the input; ask for a lower sparsity or prune layer-wise"
            )
    # every kernel has a connection, but they may not line up: follow the paths from the inputs
    reach = (masks[0] != 0).any(dim=1)  # (K, W): hidden units of layer 0 fed by an input
    for m in masks[1:]:
        reach = torch.einsum("ki,kio->ko", reach.to(torch.float64), (m != 0).to(torch.float64)) > 0
    cut = ~reach.any(dim=1)  # (K,): no output reached
    if cut.any():
        ks = [int(k) for k in torch.nonzero(cut).flatten()]
        raise PruneError(
            f"pruning would leave network(s) {ks} with no path of connections from the input to the output, "
            "so the image could no longer depend on the input; ask for a lower sparsity or prune layer-wise"
        )


# ---------------------------------------------------------------------------------------------
# Units


def unit_alive(masks: list[torch.Tensor]) -> list[torch.Tensor]:
    """Per hidden layer, `(K, W)` bool: the unit has an incoming and an outgoing connection
    (`volratio.nets.live_unit_mask` of the masks)."""
    return live_unit_mask(masks)


def masks_with_units(masks: list[torch.Tensor], alive: list[torch.Tensor]) -> list[torch.Tensor]:
    """New masks with every unit whose `alive` entry is False cut out (incoming and outgoing)."""
    new = [m.clone() for m in masks]
    for l, a in enumerate(alive):
        a = a.to(new[l].dtype)
        new[l] = new[l] * a[:, None, :]
        new[l + 1] = new[l + 1] * a[:, :, None]
    return new


def check_units_not_empty(alive: list[torch.Tensor]) -> None:
    for l, a in enumerate(alive):
        empty = ~a.any(dim=1)
        if empty.any():
            ks = [int(k) for k in torch.nonzero(empty).flatten()]
            raise PruneError(
                f"pruning would remove every unit of hidden layer {l} in network(s) {ks}; ask for a lower unit sparsity"
            )


# ---------------------------------------------------------------------------------------------
# Exact counts


def apportion(ideal, lo, hi, total: int) -> np.ndarray:
    """Integers `a` with `lo ≤ a ≤ hi`, `sum(a) == total`, each as close to `ideal` as possible
    (largest remainders). Used to split an exact number of removals over layers or rows."""
    ideal = np.asarray(ideal, dtype=np.float64)
    lo = np.asarray(lo, dtype=np.int64)
    hi = np.asarray(hi, dtype=np.int64)
    if not lo.sum() <= total <= hi.sum():
        raise PruneError(
            f"cannot remove {total} items: between {int(lo.sum())} (already removed) and {int(hi.sum())} "
            "(everything removable) are possible"
        )
    a = np.clip(np.floor(ideal).astype(np.int64), lo, hi)
    diff = int(total - a.sum())
    while diff != 0:
        gap = ideal - a  # how far each entry is below its ideal share
        if diff > 0:
            cand = np.nonzero(a < hi)[0]
            order = cand[np.argsort(-gap[cand], kind="stable")][:diff]
            a[order] += 1
        else:
            cand = np.nonzero(a > lo)[0]
            order = cand[np.argsort(gap[cand], kind="stable")][:-diff]
            a[order] -= 1
        diff = int(total - a.sum())
    return a


def lowest(scores: torch.Tensor, alive: torch.Tensor, counts: torch.Tensor) -> torch.Tensor:
    """Remove, in every group (all leading axes), the `counts` lowest-scored alive items of the last
    axis. Returns the new alive mask (bool, same shape). Ties go to the lower index (stable)."""
    s = scores.to(torch.float64)
    if torch.isnan(s[alive]).any():
        raise PruneError("importance scores contain NaN (the network or its gradients diverged); retrain it first")
    # dead items sort first and are skipped, so an item the previous mask removed is never re-admitted
    key = torch.where(alive, s, torch.full_like(s, -float("inf")))
    order = torch.argsort(key, dim=-1, stable=True)
    ranks = torch.empty_like(order)
    ranks.scatter_(-1, order, torch.arange(order.shape[-1], device=order.device).expand_as(order))
    n_dead = (~alive).sum(dim=-1, keepdim=True)
    counts = torch.as_tensor(counts, device=order.device)
    remove = (ranks >= n_dead) & (ranks < n_dead + counts.unsqueeze(-1))
    return alive & ~remove


# ---------------------------------------------------------------------------------------------
# From scores to masks


def kernel_counts(masks: list[torch.Tensor], sparsity: float, prunable: list[bool] | None = None) -> np.ndarray:
    """`(K, n_kernels)` ints: how many weights each kernel should have masked so that the network
    reaches `sparsity` exactly (`round(s · n)` in all) with every kernel as near s as integers allow.
    Kernels with `prunable[i] = False` keep what they have. `sparsity`: one number or one per network."""
    svec = per_member(sparsity, masks[0].shape[0])
    prunable = prunable or [True] * len(masks)
    sizes = [m[0].numel() for m in masks]
    rows = []
    for k, sk in enumerate(svec):
        dead = [int((m[k] == 0).sum()) for m in masks]
        total = int(round(sk * sum(sizes)))
        _check_reachable(k, sum(dead), total, sum(sizes), sk)
        hi = [n if p else d for n, d, p in zip(sizes, dead, prunable)]
        rows.append(apportion([sk * n for n in sizes], dead, hi, total))
    return np.stack(rows)


def nonzero_per_kernel(masks: list[torch.Tensor]) -> np.ndarray:
    """`(K, n_kernels)` ints: the non-zero mask entries of each kernel of each network."""
    return np.array([[int((m[k] != 0).sum()) for m in masks] for k in range(masks[0].shape[0])], dtype=np.int64)


def matched_weight_counts(masks: list[torch.Tensor], reference: list[torch.Tensor]) -> np.ndarray:
    """`(K, n_kernels)` ints: how many weights each kernel must have masked so that it keeps exactly
    as many non-zero weights as the same kernel of `reference` (the masks of another network of the
    same shape, e.g. SP's result): a baseline matched to SP *per layer*, not only in total."""
    if len(reference) != len(masks) or any(r.shape != m.shape for r, m in zip(reference, masks)):
        raise PruneError(
            "the network to match has kernels of shapes "
            f"{[tuple(r.shape) for r in reference]}, this one {[tuple(m.shape) for m in masks]}: "
            "match a network of the same architecture and population"
        )
    have, want = nonzero_per_kernel(masks), nonzero_per_kernel(reference)
    bad = np.argwhere(want > have)
    if len(bad):
        k, i = (int(x) for x in bad[0])
        raise PruneError(
            f"network {k}, kernel {i} has {have[k, i]} non-zero weights, fewer than the {want[k, i]} of the "
            "network to match: prune a network that holds at least as many weights in every kernel"
        )
    sizes = np.array([m[0].numel() for m in masks], dtype=np.int64)
    return sizes[None, :] - want


def _check_reachable(k: int, dead: int, total: int, size: int, sparsity: float) -> None:
    if total < dead:
        raise PruneError(
            f"network {k} already has sparsity {dead / size:.4f} ≥ the requested {sparsity}; ask for a higher sparsity"
        )


def row_mask(score: torch.Tensor, mask: torch.Tensor, count: int) -> torch.Tensor:
    """One network's kernel `(fan_in, fan_out)` with `count` weights masked in all, spread evenly
    over output units (Wanda's comparison group: all incoming weights of one output unit), each
    unit losing its lowest-scored weights."""
    a = (mask != 0).T  # (fan_out, fan_in): one row per output unit
    d_row = (~a).sum(1).cpu().numpy()
    n_out, n_in = a.shape
    counts = apportion(np.full(n_out, count / n_out), d_row, np.full(n_out, n_in), int(count))
    keep = lowest(score.T, a, torch.as_tensor(counts - d_row, device=a.device))
    return keep.T.to(mask.dtype)


def weight_masks(
    scores: list[torch.Tensor],
    masks: list[torch.Tensor],
    sparsity: float,
    scope: str = "global",
    prunable: list[bool] | None = None,
    counts: np.ndarray | None = None,
) -> list[torch.Tensor]:
    """The new weight masks that reach `sparsity` (fraction of all weights masked, per network), or
    exactly `counts[k, i]` masked weights in kernel i of network k (`matched_weight_counts`; scope
    "layer" or "row", `sparsity` then ignored).

    `scores`: per kernel `(K, fan_in, fan_out)`, higher = more important. `scope`:

    - `"global"`: the lowest-scored weights anywhere in the network;
    - `"layer"`: every kernel reaches (as nearly as integers allow) the same sparsity;
    - `"row"`: as "layer", and within a kernel every output unit too (Wanda's comparison group) —
      all kernels at once here; Wanda's layer-by-layer order lives in `baselines.wanda`.

    `prunable[i] = False` protects kernel i. Already-masked weights stay masked. `sparsity`: one
    number, or one per network of the population.
    """
    if scope not in ("global", "layer", "row"):
        raise PruneError(f"unknown scope {scope!r}; use global, layer or row")
    if counts is not None and scope == "global":
        raise PruneError("per-kernel counts fix every kernel's share: use scope layer or row with them")
    svec = per_member(sparsity, masks[0].shape[0]) if counts is None else None
    prunable = prunable or [True] * len(masks)
    sizes = [m[0].numel() for m in masks]
    new = [m.clone() for m in masks]
    if scope == "global":
        for k, sk in enumerate(svec):
            dead = sum(int((m[k] == 0).sum()) for m in masks)
            total = int(round(sk * sum(sizes)))
            _check_reachable(k, dead, total, sum(sizes), sk)
            inf = float("inf")
            flat_s = torch.cat(
                [s[k].flatten() if p else torch.full_like(s[k].flatten(), inf) for s, p in zip(scores, prunable)]
            )
            flat_a = torch.cat([(m[k] != 0).flatten() for m in masks])
            protected = sum(int((masks[i][k] != 0).sum()) for i in range(len(masks)) if not prunable[i])
            if total - dead > int(flat_a.sum()) - protected:
                raise PruneError(f"sparsity {sk} needs more weights than the prunable kernels hold")
            keep = lowest(flat_s, flat_a, torch.tensor(total - dead, device=flat_a.device))
            for i, part in enumerate(torch.split(keep, sizes)):
                new[i][k] = part.reshape(masks[i][k].shape).to(new[i].dtype)
    else:
        counts = kernel_counts(masks, svec, prunable) if counts is None else np.asarray(counts, dtype=np.int64)
        for k in range(masks[0].shape[0]):
            for i, (s, m) in enumerate(zip(scores, masks)):
                if scope == "layer":
                    c = int(counts[k, i]) - int((m[k] == 0).sum())
                    keep = lowest(s[k].flatten(), (m[k] != 0).flatten(), torch.tensor(c, device=m.device))
                    new[i][k] = keep.reshape(m[k].shape).to(new[i].dtype)
                else:
                    new[i][k] = row_mask(s[k], m[k], int(counts[k, i]))
    check_not_empty(new)
    return new


def unit_masks(
    scores: list[torch.Tensor],
    masks: list[torch.Tensor],
    counts: "list[list[int]] | None" = None,
    sparsity: float | None = None,
    scope: str = "layer",
) -> list[torch.Tensor]:
    """The new weight masks after removing whole units.

    `scores`: per hidden layer `(K, W)`, higher = more important. Either `counts[k][l]` (units to
    keep alive in layer l of network k — the "matched" form) or `sparsity`, the fraction of the
    network's hidden units (L·W) to be dead afterwards (one number or one per network), spread by
    `scope` ("layer": the same fraction in every layer; "global": the lowest-scored units anywhere).
    """
    alive = unit_alive(masks)
    K, W = alive[0].shape
    L = len(alive)
    if counts is None:
        if sparsity is None:
            raise PruneError("unit pruning needs either matched unit counts or a unit sparsity")
        svec = per_member(sparsity, K, "unit sparsity")
    new_alive = [a.clone() for a in alive]
    for k in range(K):
        n_alive = [int(a[k].sum()) for a in alive]
        if counts is not None:
            keep = [int(c) for c in counts[k]]
            if len(keep) != L:
                raise PruneError(f"matched unit counts have {len(keep)} layers; the network has {L}")
            for l in range(L):
                if keep[l] > n_alive[l]:
                    raise PruneError(
                        f"network {k}, hidden layer {l}: asked to keep {keep[l]} units but only {n_alive[l]} are alive"
                    )
            remove = [n - c for n, c in zip(n_alive, keep)]
        else:
            s = svec[k]
            total = int(round(s * L * W))
            dead = [W - n for n in n_alive]
            if total < sum(dead):
                raise PruneError(
                    f"network {k} already has {sum(dead)} of {L * W} units dead (unit sparsity "
                    f"{sum(dead) / (L * W):.4f}) ≥ the requested {s}; ask for a higher sparsity"
                )
            if scope == "layer":
                per = apportion([s * W] * L, dead, [W - 1] * L, total)
                remove = [int(p - d) for p, d in zip(per, dead)]
            elif scope == "global":
                flat = torch.cat([scores[l][k] for l in range(L)])
                fa = torch.cat([alive[l][k] for l in range(L)])
                kept = lowest(flat, fa, torch.tensor(total - sum(dead)))
                for l, part in enumerate(torch.split(kept, W)):
                    new_alive[l][k] = part
                continue
            else:
                raise PruneError(f"unknown unit scope {scope!r}; use layer or global")
        for l in range(L):
            new_alive[l][k] = lowest(scores[l][k], alive[l][k], torch.tensor(remove[l]))
    check_units_not_empty(new_alive)
    out = masks_with_units(masks, new_alive)
    check_not_empty(out)
    return out


# ---------------------------------------------------------------------------------------------
# Accounting


@torch.no_grad()
def sparsity_report(net) -> dict:
    """Per network of the population: non-zero weights (total and per kernel), weight sparsity, live
    units per hidden layer and unit sparsity. `volratio info` and `volratio prune` print it."""
    ew = net.effective_weights()
    live = net.live_units()
    total = sum(w[0].numel() for w in ew)
    L, W = net.arch.depth, net.arch.width
    members = []
    for k in range(net.population):
        per_kernel = [int((w[k] != 0).sum()) for w in ew]
        members.append(
            {
                "nonzero": sum(per_kernel),
                "weights": total,
                "sparsity": 1.0 - sum(per_kernel) / total,
                "nonzero_per_kernel": per_kernel,
                "live_units": live[k],
                "unit_sparsity": 1.0 - sum(live[k]) / (L * W),
            }
        )
    return {"arch": str(net.arch), "kernel_sizes": [w[0].numel() for w in ew], "members": members}


def weight_sparsity(masks: list[torch.Tensor]) -> np.ndarray:
    """(K,) fraction of mask entries that are 0."""
    dead = sum((m == 0).reshape(m.shape[0], -1).sum(1) for m in masks)
    return (dead.double() / sum(m[0].numel() for m in masks)).cpu().numpy()
