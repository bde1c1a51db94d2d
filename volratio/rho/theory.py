"""Symbolic statements (sympy) of the volume-ratio theorem for the Boolean model.

The model and the definitions are those of `volratio.rho` (ternary weights, Bernoulli masks of
density p, ternary unmasked biases, L threshold layers = L−1 hidden layers of width W plus one
output unit). Write p₀ = 1 − 2p/3 for the probability that an effective weight is 0.

**Theorem (volume ratio, Boolean model).** For a target DAG of depth L* and embedding width
W_min(L) (`BooleanTarget.min_width`):

1. (support) ρ(W, L) = 0 whenever L < L* or W < W_min(L);
2. (lower bound) P(compositional) ≥ V(W, L) with the closed form

       V(W, L) = Σ_π  Π_{j=1}^{L−1} W^{(o_j(π))}  ·  Π_{u ∈ π} q_u · p₀^{F_u − k_u},

   a sum over placements π of the DAG's gates into layers (each node held by one unit in each
   layer from its own to the one below its last consumer, copies in between); o_j(π) is the
   number of units π needs in hidden layer j and W^{(o)} = W(W−1)…(W−o+1) the number of ways to
   choose them; u runs over those units and the output unit, F_u is the fan-in of u's layer (n or
   W), k_u its number of designated inputs, and q_u the probability that ternary weights and bias
   on the designated inputs make u compute its node (or its negation; exactly the target at the
   output). V is the volume of the *clean* embeddings — every designated unit has zero weight
   from everything else — which are disjoint compositional events;
3. (decay) for fixed L, V(W, L) ≤ C_L · W^{U} · p₀^{(W−n)U'} where U is the number of hidden
   units of the largest placement and U' the number of units above layer 1: V eventually decays
   exponentially in W. Each layer beyond L* adds at least one copy unit, a factor at most
   W · q_copy · p₀^{W−1}, so V decays exponentially in L wherever that factor is below 1.

Hence ρ(W, L) ≥ V(W, L) / P(solution). Whether ρ itself peaks at (W_min, L*) depends on how
P(solution) moves, which the theorem does not control; the chapter measures it.

Reference: Do et al. 2026 (the volume-ratio argument, stated there informally); this module is the
chapter "The volume-ratio argument" (book/volume_ratio.md).
"""

from __future__ import annotations

import itertools
from functools import cache

import numpy as np
import sympy as sp

from .boolean import BooleanTarget

W_SYM, L_SYM, P_SYM = sp.symbols("W L p", positive=True)


def p_zero(p=P_SYM):
    """P(effective weight = 0) for ternary weights under masks of density p."""
    return 1 - sp.Rational(2, 3) * p if isinstance(p, sp.Basic) else 1 - 2 * p / 3


def _reachable(target: BooleanTarget, args) -> np.ndarray:
    """Distinct ±1 value tuples the arguments take over all inputs, (r, k)."""
    return np.unique(target.node_tables[:, list(args)], axis=0).astype(np.int64)


@cache
def unit_probability(target: BooleanTarget, v: int, copy: bool, exact_sign: bool) -> sp.Expr:
    """q_u as a polynomial in p: probability that a unit whose designated inputs hold the children
    of node v (or v itself when `copy`) computes v — up to negation unless `exact_sign`.
    Enumerates the 3^(k+1) ternary weights and bias of the designated inputs."""
    args = (v,) if copy else target.children(v)
    vals = _reachable(target, args)  # (r, k)
    if copy:
        want = vals[:, 0]
    else:
        g = target.gates[v - target.n]
        want = np.where(vals @ np.array(g.weights) + g.bias > 0, 1, -1)
    q = sp.Integer(0)
    pm, p0 = P_SYM / 3, p_zero()
    for cfg in itertools.product((-1, 0, 1), repeat=len(args) + 1):
        w, b = np.array(cfg[:-1]), cfg[-1]
        out = np.where(vals @ w + b > 0, 1, -1)
        if np.array_equal(out, want) or (not exact_sign and np.array_equal(out, -want)):
            nz = int(np.count_nonzero(w))
            q += pm**nz * p0 ** (len(args) - nz) * sp.Rational(1, 3)
    return sp.expand(q)


@cache
def clean_volume(target: BooleanTarget, L: int) -> sp.Expr:
    """V(W, L) as a sympy expression in W and p (zero when L < L*)."""
    n, p0 = target.n, p_zero()
    total = sp.Integer(0)
    for layer in target.placements(L):
        term = sp.Integer(1)
        for o in target.occupancy(layer, L):
            term *= sp.ff(W_SYM, o)
        for v in range(target.n_nodes):
            lv = layer[v]
            last = L + 1 if v == target.root else max(layer[u] for u in target.consumers[v])
            if v >= n:  # the gate's own unit (exactly the target when it is the output)
                F = n if lv == 1 else W_SYM
                term *= unit_probability(target, v, False, lv == L) * p0 ** (F - len(target.children(v)))
            for j in range(lv + 1, last):  # copy units carrying v up to its last consumer
                F = n if j == 1 else W_SYM
                term *= unit_probability(target, v, True, j == L) * p0 ** (F - 1)
        total += term
    return total


def clean_volume_value(target: BooleanTarget, W: int, L: int, cfg=None) -> float | None:
    """V(W, L) at a point; None where the closed form does not apply (weights other than
    ternary, masks other than Bernoulli)."""
    p = 0.5 if cfg is None else cfg.p
    if cfg is not None and (cfg.weights != "ternary" or cfg.masks != "bernoulli"):
        return None
    if L < target.depth:
        return 0.0
    mw = target.min_width(L)
    if L > 1 and W < mw:
        return 0.0
    expr = clean_volume(target, L)
    return float(expr.subs({W_SYM: W, P_SYM: sp.Rational(p).limit_denominator(10**6)}))


def theory_grid(target: BooleanTarget, Ws, Ls, cfg=None) -> tuple[dict, np.ndarray]:
    """({L: V(W, L) as a sympy expression}, values (len(Ls), len(Ws)))."""
    exprs = {L: (clean_volume(target, L) if L >= target.depth else sp.Integer(0)) for L in Ls}
    vals = np.array([[clean_volume_value(target, W, L, cfg) or 0.0 for W in Ws] for L in Ls])
    return exprs, vals


def support_zero(target: BooleanTarget, W: int, L: int) -> bool:
    """Part 1 of the theorem: True where ρ(W, L) must be exactly 0."""
    if L < target.depth:
        return True
    mw = target.min_width(L)
    return L > 1 and W < mw


def copy_factor(W, p=P_SYM):
    """The factor one extra copy unit contributes, W · q_copy · p₀^{W−1} (part 3)."""
    q_copy = 2 * (p / 3) * sp.Rational(2, 3)  # weight ±1 with bias 0 or +1 (see unit_probability)
    return W * q_copy * p_zero(p) ** (W - 1)
