"""Checks for the exercises of "Feature interference and the Welch bound" (book/welch.md): the
bound itself, the coherence of a set of vectors, a frame that meets the bound, and the interference
of the superposition toy model's features, and the first m at which a higher-order bound beats
k = 1 (proposition prop-welch-gerzon) (`volratio.welch`, `volratio.welch.superposition`)."""

from __future__ import annotations

import math

import numpy as np

from ..welch import (
    as_frame,
    best_bound,
    coherence,
    gerzon_limit,
    is_etf,
    low_coherence_frame,
    max_sq_inner,
    welch_bound,
    welch_bound_sq,
)
from ..welch.superposition import feature_interference
from .check import (
    Check,
    CourseworkError,
    array,
    checker,
    close,
    number,
)

__all__ = ["check_coherence", "check_first_higher_order", "check_frame", "check_represented", "check_welch_bound"]


@checker
def check_welch_bound(answer, m: int, n: int, k: int = 1) -> Check:
    """The order-k Welch bound on max_{i≠j} |⟨vᵢ, vⱼ⟩|^{2k} for m unit vectors in n dimensions,
    clipped at 0 (`volratio.welch.welch_bound`)."""
    got = number(answer, "your bound")
    ref = welch_bound(m, n, k)
    if close(got, ref, rtol=1e-6, atol=1e-9):
        return Check("check_welch_bound", True, f"Welch bound (k={k}) for m={m}, n={n}: {ref:.6g}", ref, got)
    raw = (m / math.comb(n + k - 1, k) - 1) / (m - 1) if m > 1 else 0.0
    wrong = {
        f"that is the bound on the coherence μ; the Welch bound is on μ^{2 * k} (don't take the root)": ref
        ** (1 / (2 * k)),
        f"m ≤ n here, so the bound is negative before clipping: it is 0 (m={m} vectors fit orthogonally in ℝ^{n})": raw,
        "m and n are swapped (m vectors, n dimensions)": welch_bound(n, m, k) if n >= 1 and m >= 1 else float("nan"),
    }
    if k == 1:
        wrong["you divided by n·m instead of n·(m − 1)"] = (m - n) / (n * m)
    for why, v in wrong.items():
        if math.isfinite(v) and close(got, v, rtol=1e-6, atol=1e-9) and not close(v, ref, rtol=1e-6, atol=1e-9):
            return Check("check_welch_bound", False, f"your bound {got:.6g} ≠ {ref:.6g}: {why}", ref, got)
    return Check(
        "check_welch_bound",
        False,
        f"your bound {got:.6g} ≠ {ref:.6g}: for k = 1 it is (m − n) / (n (m − 1)), clipped at 0",
        ref,
        got,
    )


@checker
def check_coherence(answer, vectors) -> Check:
    """The coherence μ = max_{i≠j} |⟨v̂ᵢ, v̂ⱼ⟩| of the rows of `vectors` (normalised), next to the
    Welch bound √((m − n)/(n(m − 1))) no set of m unit vectors in ℝⁿ can go below."""
    got = number(answer, "your coherence")
    V = array(vectors, "the vectors")
    if V.ndim != 2:
        raise CourseworkError(f"vectors should be an (m, n) array of m row vectors, got shape {V.shape}")
    m, n = V.shape
    ref = coherence(V)
    wb = math.sqrt(welch_bound(m, n))
    if close(got, ref, rtol=1e-6, atol=1e-9):
        return Check("check_coherence", True, f"μ = {ref:.4f}; the Welch bound for m={m}, n={n} is {wb:.4f}", ref, got)
    G = V @ V.T
    raw = float(np.abs(G[~np.eye(m, dtype=bool)]).max())
    if got < wb - 1e-9:
        why = (
            f"your coherence {got:.4f} is below the Welch bound {wb:.4f} for m={m}, n={n}: a set of vectors "
            "cannot beat the bound — check you normalised them"
        )
        if close(got, ref**2, rtol=1e-6, atol=1e-9):
            why += " (it equals μ²: take the square root of the largest squared inner product)"
        return Check("check_coherence", False, why, ref, got)
    if close(got, 1.0, rtol=0, atol=1e-9) and ref < 1 - 1e-9:
        why = "1 is ⟨vᵢ, vᵢ⟩: leave out the diagonal i = j"
    elif close(got, raw, rtol=1e-6, atol=1e-9):
        why = "that is the largest raw inner product; normalise the rows to unit length first"
    elif close(got, ref**2, rtol=1e-6, atol=1e-9):
        why = "that is μ²; the coherence is the largest |inner product| itself"
    else:
        G2 = as_frame(V) @ as_frame(V).T
        why = (
            f"the largest |⟨v̂ᵢ, v̂ⱼ⟩| is {ref:.4f} at pair {np.unravel_index(np.abs(G2 - np.eye(m)).argmax(), G2.shape)}"
        )
    return Check("check_coherence", False, f"your coherence {got:.4f} ≠ {ref:.4f}: {why}", ref, got)


@checker
def check_frame(vectors, m: int, n: int, slack: float = 0.02, seed: int = 0) -> Check:
    """m vectors in ℝⁿ (rows) with low coherence: max squared inner product within `slack`
    (relative) of the best of the Welch bound and a numerical frame from
    `volratio.welch.low_coherence_frame(m, n, seed)`."""
    V = array(vectors, "your vectors")
    if V.shape != (m, n):
        hint = " — transpose it: vectors are the rows" if V.shape == (n, m) else ""
        return Check("check_frame", False, f"shape {V.shape} ≠ ({m}, {n}){hint}", (m, n), V.shape)
    norms = np.linalg.norm(V, axis=1)
    if np.any(norms < 1e-12):
        return Check(
            "check_frame",
            False,
            f"row(s) {np.flatnonzero(norms < 1e-12).tolist()} are zero vectors; they have no direction",
        )
    got = max_sq_inner(V)
    bound, which = best_bound(m, n)
    # the numerical frame is only needed when the answer does not already meet the lower bound
    target = (
        bound if got <= bound * (1 + slack) + 1e-12 else max(bound, low_coherence_frame(m, n, seed=seed).max_sq_inner)
    )
    note = "" if np.allclose(norms, 1, atol=1e-6) else " (rows were normalised before comparing)"
    if got <= target * (1 + slack) + 1e-12:
        etf = " — an equiangular tight frame: it meets the Welch bound" if is_etf(V, 1e-6) else ""
        return Check(
            "check_frame",
            True,
            f"max ⟨v̂ᵢ, v̂ⱼ⟩² = {got:.4f}; lower bound {bound:.4f} ({which}), best found {target:.4f}{etf}{note}",
            target,
            got,
        )
    return Check(
        "check_frame",
        False,
        f"max ⟨v̂ᵢ, v̂ⱼ⟩² = {got:.4f} is more than {slack:.0%} above {target:.4f} (lower bound {bound:.4f}, {which}){note} — "
        "spread the vectors further (alternating projection on the Gram matrix gets there)",
        target,
        got,
    )


@checker
def check_represented(r, max_sq, W, threshold: float = 0.5) -> Check:
    """Superposition toy model, one instance with hidden weights `W` `(m, n)` (column i = feature
    i's direction): `r` = features represented (‖Wᵢ‖ > threshold) and `max_sq` = the largest
    ⟨Ŵᵢ, Ŵⱼ⟩² among them (`volratio.welch.superposition.feature_interference`)."""
    Wa = array(W, "W")
    ref = feature_interference(Wa, threshold)
    got_r = int(number(r, "r"))
    rows = int((np.linalg.norm(Wa, axis=1) > threshold).sum())
    if got_r != ref["r"]:
        why = (
            f"you took norms of the rows (hidden dimensions); features are the columns of W (shape {Wa.shape})"
            if got_r == rows and rows != ref["r"]
            else f"{ref['r']} columns have norm > {threshold}"
        )
        return Check("check_represented", False, f"r = {got_r} ≠ {ref['r']}: {why}", ref, {"r": got_r})
    if ref["max_sq_inner"] is None:
        return Check("check_represented", True, f"r = {ref['r']}: fewer than two features, no interference", ref)
    mx = number(max_sq, "max_sq")
    if not close(mx, ref["max_sq_inner"], rtol=1e-6, atol=1e-9):
        if close(mx, math.sqrt(ref["max_sq_inner"]), rtol=1e-6, atol=1e-9):
            why = "that is the largest |inner product|; square it"
        else:
            why = "normalise the represented columns and take the largest squared inner product between two different ones"
        return Check(
            "check_represented",
            False,
            f"max_sq {mx:.4f} ≠ {ref['max_sq_inner']:.4f}: {why}",
            ref,
            {"r": got_r, "max_sq": mx},
        )
    side = "at or above" if ref["max_sq_inner"] >= ref["bound"] - 1e-9 else "below (impossible)"
    return Check(
        "check_represented",
        True,
        f"r = {ref['r']} features in d = {ref['d']} dimensions, max ⟨Ŵᵢ, Ŵⱼ⟩² = {ref['max_sq_inner']:.4f}, "
        f"{side} the Welch bound {ref['bound']:.4f}",
        ref,
        {"r": got_r, "max_sq": mx},
    )


def _first_higher(n: int, kmax: int, bound_of) -> int | None:
    for m in range(n + 1, 10 * n * n + 10):
        if max(bound_of(m, n, k) for k in range(2, kmax + 1)) > bound_of(m, n, 1):
            return m
    return None


@checker
def check_first_higher_order(answer, n: int, kmax: int = 4) -> Check:
    """The smallest m at which an order-k Welch bound (2 ≤ k ≤ `kmax`), read as a bound on μ²
    (`volratio.welch.welch_bound_sq`), exceeds the k = 1 bound for m vectors in ℝⁿ."""
    ref = _first_higher(n, kmax, welch_bound_sq)
    if ref is None:
        raise CourseworkError(f"no higher order up to k = {kmax} beats k = 1 for n = {n}; raise kmax")
    got = int(number(answer, "your m"))
    g = gerzon_limit(n)
    if got == ref:
        k = max(range(2, kmax + 1), key=lambda k: welch_bound_sq(ref, n, k))
        return Check(
            "check_first_higher_order",
            True,
            f"m = {ref} for n = {n}: order {k} gives μ² ≥ {welch_bound_sq(ref, n, k):.4f} > {welch_bound(ref, n):.4f} "
            f"(k = 1); Gerzon's limit is {g}",
            ref,
            got,
        )
    raw = _first_higher(n, kmax, welch_bound)
    if raw is not None and got == raw and raw != ref:
        why = (
            "you compared bounds on different quantities: the order-k bound is on μ^{2k}; take its k-th root to "
            "compare it with the k = 1 bound on μ² (welch_bound_sq)"
        )
    elif got in (g, g + 1):
        why = (
            f"{got} is Gerzon's limit {g} (or just past it): there the k = 1 bound stops being attainable, but a "
            "higher order need not beat it yet — compare the bounds themselves"
        )
    elif got < ref:
        best = max(welch_bound_sq(got, n, k) for k in range(2, kmax + 1)) if got > n else 0.0
        why = f"at m = {got} the k = 1 bound {welch_bound(got, n):.4f} is still at least every higher order's ({best:.4f})"
    else:
        why = "a smaller m already works: search upwards from m = n + 1"
    return Check("check_first_higher_order", False, f"your m = {got} ≠ {ref}: {why}", ref, got)
