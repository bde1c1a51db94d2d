"""Welch bounds and the other lower bounds on the interference of m unit vectors in n dimensions.

For m unit vectors v_1 … v_m in ℝⁿ or ℂⁿ and every order k ≥ 1 (Welch 1974),

    max_{i≠j} |⟨vᵢ, vⱼ⟩|^{2k}  ≥  ( m / C(n+k−1, k) − 1 ) / (m − 1),

and k = 1 reads  max |⟨vᵢ, vⱼ⟩|² ≥ (m − n) / (n (m − 1)). The right-hand side also bounds the *mean*
of |⟨vᵢ, vⱼ⟩|^{2k} over pairs — the proof bounds the frame potential — so it is a bound on typical
interference, not only on the worst pair. At k = 1 equality holds iff the vectors form an
equiangular tight frame (ETF); over ℝ an ETF needs m ≤ n(n+1)/2 (Gerzon). Beyond that size the
orthoplex bound max |⟨vᵢ, vⱼ⟩|² ≥ 1/n (Conway, Hardin and Sloane 1996) is stronger.

This module holds the bounds: `welch_bound_exact`, `welch_bound`, `welch_bound_sq`,
`orthoplex_bound`, `gerzon_limit` and `best_bound` (the largest of them).

Used by the chapter "Feature interference and the Welch bound" (book/welch.md) and by
`volratio welch bound`.
"""

from __future__ import annotations

import math
from fractions import Fraction

from ..errors import VolratioError


def _check_mn(m: int, n: int, k: int = 1) -> tuple[int, int, int]:
    try:
        m, n, k = int(m), int(n), int(k)
    except (TypeError, ValueError) as e:
        raise VolratioError(f"m, n and k must be integers (got m={m!r}, n={n!r}, k={k!r})") from e
    if m < 1 or n < 1 or k < 1:
        raise VolratioError(
            f"the Welch bound needs m ≥ 1 vectors in n ≥ 1 dimensions and order k ≥ 1 (got m={m}, n={n}, k={k})"
        )
    if min(n - 1, k) > MAX_BINOMIAL:
        raise VolratioError(
            f"order k={k} in n={n} dimensions needs the exact binomial C(n+k-1, k) with more than {MAX_BINOMIAL} factors; "
            f"use k ≤ {MAX_BINOMIAL} (or n ≤ {MAX_BINOMIAL + 1})"
        )
    return m, n, k


MAX_BINOMIAL = 100_000  # C(n+k-1, k) is exact; beyond min(n-1, k) = 10^5 it takes seconds and megabytes


def welch_bound_exact(m: int, n: int, k: int = 1) -> Fraction:
    """The order-k Welch bound on max |⟨vᵢ, vⱼ⟩|^{2k} as an exact fraction, clipped at 0.

    It is 0 exactly when m ≤ C(n+k−1, k) (for k = 1: when m ≤ n); with one vector there is no
    pair, and the bound is 0 by convention.
    """
    m, n, k = _check_mn(m, n, k)
    if m == 1:
        return Fraction(0)
    value = (Fraction(m, math.comb(n + k - 1, k)) - 1) / (m - 1)
    return max(value, Fraction(0))


def welch_bound(m: int, n: int, k: int = 1) -> float:
    """The order-k Welch bound on max_{i≠j} |⟨vᵢ, vⱼ⟩|^{2k} for m unit vectors in n dimensions."""
    return float(welch_bound_exact(m, n, k))


def welch_bound_sq(m: int, n: int, k: int = 1) -> float:
    """The order-k bound restated as a bound on max |⟨vᵢ, vⱼ⟩|² (the k-th root of `welch_bound`)."""
    return float(welch_bound_exact(m, n, k)) ** (1.0 / int(k))


def gerzon_limit(n: int, field: str = "real") -> int:
    """Largest m for which an ETF of m vectors in n dimensions can exist: n(n+1)/2 over ℝ, n² over ℂ."""
    n = int(n)
    if field == "real":
        return n * (n + 1) // 2
    if field == "complex":
        return n * n
    raise VolratioError(f"field must be 'real' or 'complex', got {field!r}")


def orthoplex_bound(m: int, n: int, field: str = "real") -> float:
    """max |⟨vᵢ, vⱼ⟩|² ≥ 1/n once m exceeds the Gerzon limit (Conway, Hardin, Sloane 1996); else 0."""
    m, n, _ = _check_mn(m, n)
    return 1.0 / n if m > gerzon_limit(n, field) else 0.0


def best_bound(m: int, n: int, kmax: int = 4, field: str = "real") -> tuple[float, str]:
    """The largest of the Welch bounds of orders 1 … kmax (as bounds on max |⟨·,·⟩|²) and the
    orthoplex bound, with the name of the one that wins (``"welch k=2"``, ``"orthoplex"``, …)."""
    best, name = 0.0, "welch k=1"
    for k in range(1, int(kmax) + 1):
        b = welch_bound_sq(m, n, k)
        if b > best + 1e-15:
            best, name = b, f"welch k={k}"
    o = orthoplex_bound(m, n, field)
    if o > best + 1e-15:
        best, name = o, "orthoplex"
    return best, name
