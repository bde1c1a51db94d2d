"""Checks for the exercises of "Optimization: Adam, Muon, SGD" (book/optimization.md): the top
Hessian eigenvalue of a network's loss found by power iteration on Hessian-vector products,
checked against the eigenvalues of the full Hessian (`volratio.train.flatness`)."""

from __future__ import annotations

import numpy as np

from ..train.flatness import explicit_hessian
from .check import Check, CourseworkError, checker, close, network, number

__all__ = ["check_top_eigenvalue"]


@checker
def check_top_eigenvalue(value, net, image, member: int = 0, rtol: float = 0.01) -> Check:
    """The largest-magnitude eigenvalue of the Hessian of member `member`'s MSE on `image` with
    respect to its kernels, within `rtol` (relative) of the eigenvalues of
    `volratio.train.flatness.explicit_hessian` (tiny networks only)."""
    net = network(net, "the network")
    n = sum(int(w[member].numel()) for w in net.weights)
    if n > 2000:
        raise CourseworkError(f"the network has {n} weights; this check forms the full Hessian — use a smaller one")
    got = number(value, "your eigenvalue")
    eig = np.linalg.eigvalsh(explicit_hessian(net, image, member))  # ascending
    top = float(eig[np.argmax(np.abs(eig))])
    if close(got, top, rtol=rtol, atol=1e-12):
        return Check(
            "check_top_eigenvalue",
            True,
            f"λ_max = {got:.5g} (full Hessian: {top:.5g}; next {float(np.sort(np.abs(eig))[-2]):.3g}, "
            f"smallest {float(eig[0]):.3g}, over {n} weights)",
            top,
            got,
        )
    if close(got, -top, rtol=rtol, atol=1e-12):
        why = "the sign is flipped — the Rayleigh quotient v·Hv (with |v| = 1) keeps the eigenvalue's sign"
    elif got > 0 and close(got, top * top, rtol=rtol):
        why = "that is λ²: use the Rayleigh quotient v·Hv of the normalised vector, not |Hv|² "
    elif got > 0 and close(got * got, abs(top), rtol=rtol):
        why = "that is √λ: the Rayleigh quotient v·Hv needs no square root"
    elif any(close(got, float(e), rtol=rtol, atol=1e-12) for e in eig):
        why = (
            "that is another eigenvalue of the Hessian; power iteration from a random start converges to the one of "
            "largest magnitude — run more iterations, and start from a random vector, not one that is special"
        )
    elif abs(got) < abs(top) and close(got, top, rtol=0.3):
        why = (
            f"within {abs(got - top) / abs(top):.0%} of λ_max: not converged yet — iterate until the Rayleigh quotient "
            "changes by less than 1e-4 (relative), renormalising v every step"
        )
    elif abs(got) > 1.5 * abs(top):
        why = (
            "larger than any eigenvalue: normalise v to unit length before each Hessian-vector product, and report "
            "v·Hv, not |Hv| for an unnormalised v"
        )
    else:
        why = f"the eigenvalues run from {float(eig[0]):.4g} to {float(eig[-1]):.4g}"
    return Check("check_top_eigenvalue", False, f"your eigenvalue {got:.5g} ≠ λ_max = {top:.5g}: {why}", top, got)
