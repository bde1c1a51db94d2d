"""Frames: measures of a set of unit vectors, known equiangular tight frames, low-coherence frames.

- measures of any set of vectors (`coherence`, `max_sq_inner`, `mean_sq_inner`, `frame_potential`,
  `is_tight`, `is_equiangular`, `is_etf`, `tightness`);
- known ETFs: simplices, the six diagonals of the icosahedron, Paley ETFs from conference matrices,
  harmonic ETFs from difference sets (complex; Xia, Zhou and Giannakis 2005) and Naimark
  complements (`known_etfs`);
- numerical low-coherence frames: alternating projection on the Gram matrix (Tropp, Dhillon, Heath
  and Strohmer 2005) followed by gradient descent on a smooth maximum of the squared inner products
  (`low_coherence_frame`), compared with the bounds of `volratio.welch.bounds`.

Vectors are the *rows* of an (m, n) array throughout. Everything is float64 numpy (complex128 for
complex frames) so that ETFs meet the bound to ~1e-12.

Used by the chapter "Feature interference and the Welch bound" (book/welch.md) and by
`volratio welch frame`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import torch

from ..errors import VolratioError
from ..util import budget
from ..util.limits import above, at_least, one_of
from .bounds import _check_mn, best_bound, welch_bound


def as_frame(vectors, normalise: bool = True) -> np.ndarray:
    """Vectors as a float64/complex128 (m, n) array of rows, each scaled to unit norm."""
    V = np.asarray(vectors)
    if V.ndim != 2:
        raise VolratioError(f"expected an (m, n) array of m row vectors, got shape {V.shape}")
    V = V.astype(np.complex128 if np.iscomplexobj(V) else np.float64)
    if not np.all(np.isfinite(V)):
        raise VolratioError("the vectors contain NaN or Inf; drop or repair those rows first")
    if normalise:
        norms = np.linalg.norm(V, axis=1)
        if np.any(norms == 0):
            bad = np.flatnonzero(norms == 0).tolist()
            raise VolratioError(f"rows {bad} are zero vectors, which have no direction; drop them first")
        V = V / norms[:, None]
    return V


def gram(vectors) -> np.ndarray:
    """Gram matrix G[i, j] = ⟨vᵢ, vⱼ⟩ of the normalised rows, shape (m, m)."""
    V = as_frame(vectors)
    return V @ V.conj().T


def _offdiag_sq(vectors) -> np.ndarray:
    G = gram(vectors)
    m = G.shape[0]
    if m < 2:
        raise VolratioError("interference needs at least two vectors")
    sq = np.abs(G) ** 2
    return sq[~np.eye(m, dtype=bool)]


def max_sq_inner(vectors) -> float:
    """max_{i≠j} |⟨v̂ᵢ, v̂ⱼ⟩|² over the normalised rows — the quantity the Welch bound bounds."""
    return float(_offdiag_sq(vectors).max())


def mean_sq_inner(vectors) -> float:
    """Mean over ordered pairs i≠j of |⟨v̂ᵢ, v̂ⱼ⟩|²; the k = 1 Welch bound bounds it too."""
    return float(_offdiag_sq(vectors).mean())


def coherence(vectors) -> float:
    """μ = max_{i≠j} |⟨v̂ᵢ, v̂ⱼ⟩| (not squared)."""
    return math.sqrt(max_sq_inner(vectors))


def frame_potential(vectors) -> float:
    """FP = Σ_{i,j} |⟨v̂ᵢ, v̂ⱼ⟩|² = ‖G‖_F²; at least max(m, m²/n), with m²/n exactly for tight frames."""
    G = gram(vectors)
    return float(np.sum(np.abs(G) ** 2))


def frame_potential_bound(m: int, n: int) -> float:
    m, n, _ = _check_mn(m, n)
    return float(max(m, m * m / n))


def is_tight(vectors, tol: float = 1e-9) -> bool:
    """True when the frame operator Σ v̂ᵢ v̂ᵢ* is (m/n)·I (normalised rows), to `tol` in max norm."""
    V = as_frame(vectors)
    m, n = V.shape
    S = V.conj().T @ V
    return bool(np.max(np.abs(S - (m / n) * np.eye(n))) <= tol)


def is_equiangular(vectors, tol: float = 1e-9) -> bool:
    """True when every |⟨v̂ᵢ, v̂ⱼ⟩|, i≠j, is the same to `tol`."""
    a = np.sqrt(_offdiag_sq(vectors))
    return bool(a.max() - a.min() <= tol)


def is_etf(vectors, tol: float = 1e-9) -> bool:
    """Equiangular and tight."""
    return is_tight(vectors, tol) and is_equiangular(vectors, tol)


@dataclass
class Tightness:
    """How far a frame is from meeting the bounds (the chapter prints these)."""

    m: int
    n: int
    max_sq_inner: float
    mean_sq_inner: float
    bound: float  # Welch k = 1
    frame_potential: float
    frame_potential_bound: float
    tight: bool
    equiangular: bool

    @property
    def ratio(self) -> float | None:
        """max_sq_inner / bound (≥ 1 always; None when the bound is 0)."""
        return self.max_sq_inner / self.bound if self.bound > 0 else None


def tightness(vectors, tol: float = 1e-9) -> Tightness:
    V = as_frame(vectors)
    m, n = V.shape
    return Tightness(
        m=m,
        n=n,
        max_sq_inner=max_sq_inner(V),
        mean_sq_inner=mean_sq_inner(V),
        bound=welch_bound(m, n),
        frame_potential=frame_potential(V),
        frame_potential_bound=frame_potential_bound(m, n),
        tight=is_tight(V, tol),
        equiangular=is_equiangular(V, tol),
    )


# ---------------------------------------------------------------------------------------------
# Known equiangular tight frames


def frame_from_gram(G: np.ndarray, n: int) -> np.ndarray:
    """Rows V (m, n) whose Gram matrix is the best rank-n PSD approximation of Hermitian G,
    rows normalised. Exact when G is PSD of rank n."""
    G = np.asarray(G)
    G = (G + G.conj().T) / 2
    lam, U = np.linalg.eigh(G)  # ascending
    lam, U = lam[::-1][:n], U[:, ::-1][:, :n]
    V = U * np.sqrt(np.clip(lam, 0.0, None))[None, :]
    norms = np.linalg.norm(V, axis=1)
    norms[norms == 0] = 1.0
    return V / norms[:, None]


def orthonormal_frame(n: int) -> np.ndarray:
    """n orthonormal vectors in ℝⁿ: the trivial ETF with m = n and coherence 0."""
    return np.eye(int(n))


def simplex_frame(n: int) -> np.ndarray:
    """The n+1 vertices of a regular simplex in ℝⁿ: ⟨vᵢ, vⱼ⟩ = −1/n, an ETF meeting the bound 1/n²."""
    n = int(n)
    if n < 1:
        raise VolratioError(f"a simplex frame needs n ≥ 1, got {n}")
    m = n + 1
    G = (m / n) * (np.eye(m) - np.ones((m, m)) / m)  # diagonal 1, off-diagonal −1/n
    return frame_from_gram(G, n)


def icosahedron_frame() -> np.ndarray:
    """The six diagonals of the icosahedron: 6 vectors in ℝ³ with |cos| = 1/√5 (bound 1/5)."""
    p = (1 + math.sqrt(5)) / 2
    V = np.array([[0, 1, p], [0, 1, -p], [1, p, 0], [1, -p, 0], [p, 0, 1], [-p, 0, 1]], dtype=np.float64)
    return V / np.linalg.norm(V, axis=1, keepdims=True)


def _is_prime(q: int) -> bool:
    return q >= 2 and all(q % p for p in range(2, int(math.isqrt(q)) + 1))


def paley_frame(q: int) -> np.ndarray:
    """Real ETF of q+1 vectors in ℝ^{(q+1)/2} from the Paley conference matrix of a prime q ≡ 1 (mod 4).

    C = [[0, 1ᵀ], [1, Q]] with Q[i, j] = Legendre symbol of (j − i) mod q satisfies C² = q·I, so
    G = I + C/√q has eigenvalues 0 and 2, each (q+1)/2 times: the Gram matrix of an ETF with
    |⟨vᵢ, vⱼ⟩| = 1/√q. q = 5 gives the icosahedron's six diagonals again.
    """
    q = int(q)
    if not _is_prime(q) or q % 4 != 1:
        raise VolratioError(f"paley_frame needs a prime q ≡ 1 (mod 4) (5, 13, 17, 29, …), got {q}")
    squares = {(x * x) % q for x in range(1, q)}
    chi = np.array([0] + [1 if a in squares else -1 for a in range(1, q)], dtype=np.float64)
    idx = (np.arange(q)[None, :] - np.arange(q)[:, None]) % q
    C = np.zeros((q + 1, q + 1))
    C[0, 1:] = C[1:, 0] = 1.0
    C[1:, 1:] = chi[idx]
    return frame_from_gram(np.eye(q + 1) + C / math.sqrt(q), (q + 1) // 2)


# (v, k) -> a (v, k, λ) difference set in ℤ_v; its harmonic frame is a complex ETF of v vectors in ℂ^k.
DIFFERENCE_SETS: dict[tuple[int, int], tuple[int, ...]] = {
    (7, 3): (1, 2, 4),  # quadratic residues mod 7 (Singer, λ = 1)
    (7, 4): (0, 3, 5, 6),  # its complement
    (11, 5): (1, 3, 4, 5, 9),  # quadratic residues mod 11 (λ = 2)
    (13, 4): (0, 1, 3, 9),  # Singer, λ = 1
    (21, 5): (3, 6, 7, 12, 14),  # Singer, λ = 1
}


def harmonic_frame(v: int, D) -> np.ndarray:
    """Complex harmonic frame: rows f_j = (ω^{j·d})_{d∈D} / √|D|, j = 0 … v−1, ω = e^{2πi/v}.
    An ETF of v vectors in ℂ^{|D|} exactly when D is a difference set in ℤ_v (Xia, Zhou and
    Giannakis 2005)."""
    v = int(v)
    D = np.asarray(sorted({int(d) % v for d in D}))
    j = np.arange(v)[:, None]
    return np.exp(2j * np.pi * j * D[None, :] / v) / math.sqrt(len(D))


def naimark_complement(vectors, tol: float = 1e-9) -> np.ndarray:
    """The Naimark complement of a unit-norm tight frame of m vectors in n dimensions: m vectors in
    m − n dimensions with Gram (m/(m−n))·(I − (n/m)·G). Complements of ETFs are ETFs."""
    V = as_frame(vectors)
    m, n = V.shape
    if m <= n:
        raise VolratioError(f"a Naimark complement needs m > n (got m={m}, n={n})")
    if not is_tight(V, tol=1e-6):
        raise VolratioError("naimark_complement needs a tight frame; check it with is_tight first")
    G = V @ V.conj().T
    H = (m / (m - n)) * (np.eye(m) - (n / m) * G)
    return frame_from_gram(H, m - n)


def known_etfs() -> dict[str, np.ndarray]:
    """A catalogue of ETFs (name → rows) used by the tests and the chapter."""
    out: dict[str, np.ndarray] = {}
    for n in (1, 2, 3, 4, 5, 7):
        out[f"simplex {n + 1} in R^{n}"] = simplex_frame(n)
    out["orthonormal 4 in R^4"] = orthonormal_frame(4)
    out["icosahedron 6 in R^3"] = icosahedron_frame()
    for q in (5, 13, 17):
        out[f"Paley {q + 1} in R^{(q + 1) // 2}"] = paley_frame(q)
    out["Naimark(simplex 5 in R^4) 5 in R^1"] = naimark_complement(simplex_frame(4))
    for (v, k), D in DIFFERENCE_SETS.items():
        out[f"harmonic {v} in C^{k}"] = harmonic_frame(v, D)
    out["Naimark(harmonic 13 in C^4) 13 in C^9"] = naimark_complement(harmonic_frame(13, DIFFERENCE_SETS[(13, 4)]))
    return out


# ---------------------------------------------------------------------------------------------
# Numerical construction of low-coherence frames


@dataclass
class FrameConfig:
    """Settings of `low_coherence_frame` (defaults reach the ETF sizes in tests within 1%)."""

    ap_iters: int = 1000  # alternating-projection iterations per restart and spectral set
    ap_slack: float = 1.0  # target coherence μ = slack · √(best bound); Tropp et al. use μ near the optimum
    restarts: int = 4  # independent random starts; the best frame is kept
    descent_steps: int = 1500  # smooth-max gradient steps that polish the best AP frame (0: skip)
    descent_lr: float = 3e-3  # Adam learning rate for the polish
    temperature: tuple[float, float] = (50.0, 5000.0)  # softmax temperature, annealed geometrically
    field: str = "real"  # "real" or "complex"

    # allowed values, checked when a config is parsed (`volratio.util.limits`)
    LIMITS = {"ap_iters": at_least(0), "ap_slack": above(0), "restarts": at_least(1), "descent_steps": at_least(0),
              "descent_lr": above(0), "temperature": above(0), "field": one_of("real", "complex")}  # fmt: skip


@dataclass
class FrameResult:
    vectors: np.ndarray  # (m, n) unit rows
    m: int
    n: int
    seed: int
    max_sq_inner: float
    bound: float  # Welch k = 1
    best_bound: float  # max of Welch k ≤ 4 and orthoplex
    best_bound_name: str
    method: str
    config: FrameConfig = field(repr=False, default_factory=FrameConfig)

    @property
    def ratio(self) -> float | None:
        """max_sq_inner / Welch bound (None when the bound is 0: m ≤ n)."""
        return self.max_sq_inner / self.bound if self.bound > 0 else None

    def summary(self) -> dict:
        return {
            "m": self.m,
            "n": self.n,
            "seed": self.seed,
            "max_sq_inner": self.max_sq_inner,
            "bound": self.bound,
            "ratio": self.ratio,
            "best_bound": self.best_bound,
            "best_bound_name": self.best_bound_name,
            "method": self.method,
        }


def _random_frame(m: int, n: int, rng: np.random.Generator, field: str) -> np.ndarray:
    V = rng.standard_normal((m, n))
    if field == "complex":
        V = V + 1j * rng.standard_normal((m, n))
    return V / np.linalg.norm(V, axis=1, keepdims=True)


def alternating_projection(V0: np.ndarray, mu: float, iters: int = 2000, spectral: str = "tight") -> np.ndarray:
    """Tropp et al. (2005): alternate between the structural set — Hermitian matrices with unit
    diagonal and off-diagonal entries of modulus ≤ μ (entries are clipped, keeping their
    sign/phase) — and a spectral set:

    - ``spectral="tight"`` (Tropp et al.'s choice): Gram matrices of unit-norm tight frames, i.e.
      the top n eigenvectors with every eigenvalue set to m/n; converges to an ETF when one exists;
    - ``spectral="psd"``: PSD matrices of rank ≤ n (keep the top n eigenpairs as they are); better
      for sizes where no ETF exists.

    Rows are renormalised after each spectral step. Returns the frame of lowest coherence seen.
    """
    if spectral not in ("tight", "psd"):
        raise VolratioError(f"spectral must be 'tight' or 'psd', got {spectral!r}")
    V = as_frame(V0)
    m, n = V.shape
    off = ~np.eye(m, dtype=bool)
    best, best_c = V, max_sq_inner(V)
    for _ in range(int(iters)):
        G = V @ V.conj().T  # (m, m)
        a = np.abs(G)
        clip = off & (a > mu)
        G[clip] = G[clip] / a[clip] * mu  # structural projection: clip the modulus, keep the phase
        np.fill_diagonal(G, 1.0)
        if spectral == "psd":
            V = frame_from_gram(G, n)  # (m, n), unit rows
        else:
            _, U = np.linalg.eigh((G + G.conj().T) / 2)
            V = U[:, ::-1][:, :n]  # (m, n); eigenvalues set to m/n, scale removed by normalising
            V = V / np.linalg.norm(V, axis=1, keepdims=True)
        c = float((np.abs(V @ V.conj().T)[off] ** 2).max())
        if c < best_c:
            best, best_c = V, c
    return best


def smooth_max_descent(V0: np.ndarray, steps: int = 1500, lr: float = 3e-3, temperature=(50.0, 5000.0)) -> np.ndarray:
    """Gradient descent (Adam, float64) on the smooth maximum  (1/t)·log Σ_{i≠j} exp(t·|⟨v̂ᵢ, v̂ⱼ⟩|²),
    with t annealed geometrically from temperature[0] to temperature[1]. Rows are renormalised inside
    the objective. Returns the frame of lowest coherence seen."""
    V0 = as_frame(V0)
    if np.iscomplexobj(V0):
        raise VolratioError("smooth_max_descent works on real frames; use alternating_projection for complex ones")
    m, n = V0.shape
    X = torch.tensor(V0, dtype=torch.float64, requires_grad=True)
    opt = torch.optim.Adam([X], lr=lr)
    off = ~torch.eye(m, dtype=torch.bool)
    t0, t1 = float(temperature[0]), float(temperature[1])
    best, best_c = V0, max_sq_inner(V0)
    for s in range(int(steps)):
        t = t0 * (t1 / t0) ** (s / max(1, steps - 1))
        U = X / X.norm(dim=1, keepdim=True)
        sq = (U @ U.T)[off] ** 2  # (m·(m−1),)
        c = float(sq.detach().max())
        if c < best_c:
            best, best_c = U.detach().numpy().copy(), c
        loss = torch.logsumexp(t * sq, dim=0) / t
        opt.zero_grad()
        loss.backward()
        opt.step()
    return best


def low_coherence_frame(m: int, n: int, seed: int = 0, config: FrameConfig | None = None) -> FrameResult:
    """A frame of m unit vectors in n dimensions with max |⟨vᵢ, vⱼ⟩|² as small as we can make it.

    m ≤ n: orthonormal rows (exact). m > n: `restarts` random starts, each run through alternating
    projection with both spectral sets at target μ = slack·√(best bound); the best is polished by `smooth_max_descent` (real frames only). Seeded.
    """
    m, n, _ = _check_mn(m, n)
    budget.check(
        budget.frame_bytes(max(m, n), n), f"a frame of {m} vectors in R^{n}", "use fewer vectors (m) or dimensions (n)"
    )
    cfg = config or FrameConfig()
    rng = np.random.default_rng(int(seed))
    bound = welch_bound(m, n)
    bb, bb_name = best_bound(m, n, field=cfg.field)
    if m <= n:
        Q, _ = np.linalg.qr(_random_frame(n, n, rng, cfg.field))
        V, method = Q[:m], "orthonormal (QR)"
    else:
        mu = cfg.ap_slack * math.sqrt(bb)
        cands = [
            alternating_projection(_random_frame(m, n, rng, cfg.field), mu, cfg.ap_iters, spectral)
            for _ in range(cfg.restarts)
            for spectral in ("tight", "psd")
        ]
        V = min(cands, key=max_sq_inner)
        method = f"alternating projection (tight and psd) ×{cfg.restarts}"
        if cfg.descent_steps and cfg.field == "real":
            V2 = smooth_max_descent(V, cfg.descent_steps, cfg.descent_lr, cfg.temperature)
            if max_sq_inner(V2) < max_sq_inner(V):
                V = V2
            method += " + smooth-max descent"
    V = as_frame(V)
    return FrameResult(V, m, n, int(seed), max_sq_inner(V) if m > 1 else 0.0, bound, bb, bb_name, method, cfg)
