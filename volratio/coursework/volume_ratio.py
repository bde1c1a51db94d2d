"""Checks for the exercises of "The volume-ratio argument" (book/volume_ratio.md): a Boolean
target's truth table, its (L*, W_min) — the support of ρ in the volume-ratio theorem — a Monte
Carlo P(solution) against exact enumeration, and a Wilson interval (`volratio.rho.boolean`,
`volratio.rho`)."""

from __future__ import annotations

import math

import numpy as np
import scipy

from ..rho import RhoError, SamplerConfig, exact
from ..rho.boolean import get_boolean_target, input_table
from ..util.stats import binomial_interval
from .check import (
    BadAnswer,
    Check,
    CourseworkError,
    array,
    checker,
    close,
    number,
)

__all__ = ["check_interval", "check_p_solution", "check_target_shape", "check_truth_table"]


@checker
def check_truth_table(answer, spec: str) -> Check:
    """The truth table of Boolean target `spec` on all 2ⁿ inputs, as ±1, rows in the order of
    `volratio.rho.boolean.input_table(n)`."""
    t = get_boolean_target(spec)
    ref = np.asarray(t.table, dtype=np.int64)
    got = array(answer, "your truth table").reshape(-1)
    if got.shape != ref.shape:
        return Check(
            "check_truth_table", False, f"{got.size} entries; there are 2^{t.n} = {ref.size} inputs", ref.size, got.size
        )
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


@checker
def check_target_shape(spec: str, depth, w_min) -> Check:
    """L* (gates on the longest input → root path) and W_min = `min_width(L*)` of Boolean target `spec`."""
    t = get_boolean_target(spec)
    ref = {"depth": t.depth, "w_min": t.min_width(t.depth)}
    got = {"depth": int(number(depth, "L*")), "w_min": int(number(w_min, "W_min"))}
    problems = []
    if got["depth"] != ref["depth"]:
        if got["depth"] == ref["depth"] + 1:
            problems.append(
                f"L* = {got['depth']} counts the inputs as a layer; count gates on the longest path ({ref['depth']})"
            )
        else:
            problems.append(f"L* = {got['depth']} ≠ {ref['depth']}")
    if got["w_min"] != ref["w_min"]:
        n_prim = t.n_nodes - t.n
        if got["w_min"] == n_prim:
            problems.append(
                f"W_min = {got['w_min']} is the number of gates; units can sit in different layers, so fewer suffice ({ref['w_min']})"
            )
        elif got["w_min"] == t.n:
            problems.append(
                f"W_min = {got['w_min']} is the number of inputs; the inputs feed layer 1 directly and need no units"
            )
        else:
            problems.append(
                f"W_min = {got['w_min']} ≠ {ref['w_min']} — count the units of the widest hidden layer, "
                "copies of values read more than one layer later included"
            )
    if problems:
        return Check("check_target_shape", False, "; ".join(problems), ref, got)
    return Check("check_target_shape", True, f"{spec}: L* = {ref['depth']}, W_min = {ref['w_min']}", ref, got)


@checker
def check_p_solution(estimate, spec: str, W: int, L: int, samples: int, p: float = 0.8, z: float = 4.0) -> Check:
    """A Monte Carlo estimate of P(solution) for width W, depth L on Boolean target `spec` from
    `samples` random masked ternary networks (mask density `p`): accepted when within `z` binomial
    standard errors of the exact value from enumeration (`volratio.rho.exact`)."""
    t = get_boolean_target(spec)
    cfg = SamplerConfig(p=p, device="cpu")
    try:
        e = exact(t, W, L, cfg, max_configs=3**13)
    except RhoError as err:
        raise CourseworkError(f"{err} — this checker enumerates exactly; pick a smaller (W, L)") from None
    got = number(estimate, "your estimate")
    n = int(samples)
    if n < 1:
        raise BadAnswer(f"samples = {samples}; give how many networks you sampled")

    def within(ref: float) -> bool:
        se = math.sqrt(max(ref * (1 - ref), 1.0 / n) / n)
        return abs(got - ref) <= z * se

    se = math.sqrt(max(e.p_solution * (1 - e.p_solution), 1.0 / n) / n)
    if within(e.p_solution):
        return Check(
            "check_p_solution",
            True,
            f"{got:.5f} vs exact {e.p_solution:.5f} (within {abs(got - e.p_solution) / se:.1f} standard errors of {n} samples)",
            e.p_solution,
            got,
        )
    alts = {
        "that is P(compositional), the volume of compositional solutions; P(solution) counts every network "
        "whose output table equals the target's": e.p_compositional
    }
    if e.rho is not None:
        alts["that is ρ = P(compositional | solution)"] = e.rho
    if p != 1.0:
        alts["it matches unmasked networks (p = 1): drop each weight with probability 1 − p before use"] = exact(
            t, W, L, SamplerConfig(p=1.0, device="cpu"), max_configs=3**13
        ).p_solution
    for why, v in alts.items():
        if within(v) and not within(e.p_solution):
            return Check("check_p_solution", False, f"your estimate {got:.5f}: {why}", e.p_solution, got)
    return Check(
        "check_p_solution",
        False,
        f"your estimate {got:.5f} is {abs(got - e.p_solution) / se:.1f} standard errors from the exact {e.p_solution:.5f} — "
        "check the sampler: ternary weights uniform on {−1, 0, +1} kept with probability p, ternary biases, "
        "units output +1 when w·x + b > 0",
        e.p_solution,
        got,
    )


@checker
def check_interval(lo, hi, k: int, n: int, confidence: float = 0.95) -> Check:
    """The Wilson score interval for k successes out of n (`volratio.util.stats.binomial_interval`)."""
    a, b = number(lo, "lower end"), number(hi, "upper end")
    rlo, rhi = binomial_interval(k, n, confidence, "wilson")
    if close(a, rlo, rtol=1e-6, atol=1e-9) and close(b, rhi, rtol=1e-6, atol=1e-9):
        return Check(
            "check_interval",
            True,
            f"Wilson {confidence:.0%} interval for {k}/{n}: [{rlo:.5f}, {rhi:.5f}]",
            (rlo, rhi),
            (a, b),
        )

    zq = scipy.stats.norm.ppf(0.5 + confidence / 2)
    ph = k / n
    wald = (ph - zq * math.sqrt(ph * (1 - ph) / n), ph + zq * math.sqrt(ph * (1 - ph) / n))
    cp = binomial_interval(k, n, confidence, "clopper-pearson")
    if close(a, wald[0], rtol=1e-6, atol=1e-9) and close(b, wald[1], rtol=1e-6, atol=1e-9):
        why = "that is the normal (Wald) interval p̂ ± z·√(p̂(1−p̂)/n), which fails for rare events; use Wilson's"
    elif close(a, cp[0], rtol=1e-6, atol=1e-9) and close(b, cp[1], rtol=1e-6, atol=1e-9):
        why = "that is the Clopper–Pearson (exact) interval; this exercise asks for Wilson's"
    elif a > b:
        why = "the ends are swapped"
    else:
        why = f"expected [{rlo:.5f}, {rhi:.5f}]"
    return Check("check_interval", False, f"[{a:.5f}, {b:.5f}]: {why}", (rlo, rhi), (a, b))
