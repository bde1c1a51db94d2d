"""The sweet spot of a depth curve (DESIGN §3.7; Do, Shah, Le, Liu 2026).

`sweet_spot`: the argmax of the mean score over depth; depths whose mean lies within `tol` of the
maximum are *tied* (the shallowest tied depth is reported — the smallest network that reaches the
peak); a curve whose means all lie within `tol` is *flat* and has no sweet spot (depth `None`). The
interval is the 5–95% range of the argmax over bootstrap resamples of the seeds. `peak_effect`
says how pronounced the peak is.

The depth sweep itself is the experiment `volratio.experiments.depth_regime`; its figures are in
`volratio.report.plots`. Chapter: "Depth: a narrow, target-dependent regime" (book/depth.md).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from ..errors import VolratioError


class DepthError(VolratioError, ValueError):
    """Bad input to a depth sweep or the depth predictor."""


# ---------------------------------------------------------------------------------------------
# Sweet spot


@dataclass
class SweetSpot:
    depth: int | None  # the shallowest depth whose mean score is within tol of the best; None if flat
    tied: list  # every depth within tol of the best mean
    flat: bool  # all means within tol: no sweet spot
    interval: tuple  # (lo, hi): 5–95% range of the bootstrap argmax over seeds (None, None) if flat
    per_seed: list  # argmax depth of each seed's own curve (shallowest of its ties)
    means: list  # mean score per depth
    peak_contrast: float  # best mean − mean of the others (how pronounced the peak is)

    def to_json(self) -> dict:
        return asdict(self)


def _row_means(s: np.ndarray) -> np.ndarray:
    """Mean of the finite values of each row of `s` (NaN for a row with none, without a warning:
    a depth where every network was left out, e.g. by a loss cut-off or a bootstrap resample)."""
    ok = np.isfinite(s)
    n = ok.sum(axis=1)
    total = np.where(ok, s, 0.0).sum(axis=1)
    return np.where(n > 0, total / np.maximum(n, 1), np.nan)


def _argmax_shallowest(depths: np.ndarray, means: np.ndarray, tol: float) -> tuple[int, list]:
    best = np.nanmax(means)
    tied = [int(d) for d, m in zip(depths, means) if m >= best - tol]
    return min(tied), tied


def peak_effect(scores) -> tuple[float, float]:
    """`(best mean score, peak contrast)` of a curve `scores` `(n_depths, n_seeds)`: the highest
    mean over seeds, and that minus the mean of the other depths' means (NaN scores are left out;
    NaNs when no depth has a finite score)."""
    m = _row_means(np.asarray(scores, dtype=np.float64).reshape(len(scores), -1))  # (n_depths,)
    if not np.isfinite(m).any():  # no depth has a finite score (e.g. a resample of left-out networks)
        return float("nan"), float("nan")
    i = int(np.nanargmax(m))
    rest = np.delete(m, i)
    rest = rest[np.isfinite(rest)]
    return float(m[i]), float(m[i] - rest.mean()) if rest.size else 0.0


def sweet_spot(depths, scores, tol: float = 1e-9, n_boot: int = 1000, seed: int = 0) -> SweetSpot:
    """The sweet spot of a score-vs-depth curve. `scores`: `(n_depths, n_seeds)` (a 1-D array is one
    seed). Ties and flat curves: see the module docstring."""
    d = np.asarray(depths, dtype=np.int64)
    s = np.asarray(scores, dtype=np.float64)
    if s.ndim == 1:
        s = s[:, None]
    if s.shape[0] != len(d) or len(d) == 0:
        raise DepthError(f"scores have {s.shape[0]} rows for {len(d)} depths; give one row per depth")
    if len(set(d.tolist())) != len(d):
        raise DepthError(f"depths {d.tolist()} repeat; give each depth once")
    means = _row_means(s)  # (n_depths,); NaN for a depth without a finite score
    if not np.isfinite(means).any():
        raise DepthError("every score is NaN; nothing to maximise")
    per_seed = [_argmax_shallowest(d, s[:, j], tol)[0] for j in range(s.shape[1]) if np.isfinite(s[:, j]).any()]
    flat = bool(np.nanmax(means) - np.nanmin(means) <= tol)
    contrast = peak_effect(s)[1]
    if flat:
        return SweetSpot(None, [int(x) for x in d], True, (None, None), per_seed, means.tolist(), contrast)
    depth, tied = _argmax_shallowest(d, means, tol)
    rng = np.random.default_rng(seed)
    boots = []
    for _ in range(n_boot if s.shape[1] > 1 else 0):
        cols = rng.integers(0, s.shape[1], s.shape[1])
        resampled = _row_means(s[:, cols])
        if np.isfinite(resampled).any():  # a resample of networks left out everywhere has no argmax
            boots.append(_argmax_shallowest(d, resampled, tol)[0])
    lo, hi = (
        (int(np.percentile(boots, 5, method="lower")), int(np.percentile(boots, 95, method="higher")))
        if boots
        else (depth, depth)
    )
    return SweetSpot(depth, tied, False, (lo, hi), per_seed, means.tolist(), contrast)


# ---------------------------------------------------------------------------------------------
# The depth predictor
