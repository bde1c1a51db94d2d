"""The sweet spot of a depth curve (Do, Shah, Le, Liu 2026).

`sweet_spot`: the argmax of the mean score over depth; depths whose mean lies within `tol` of the
maximum are *tied* (the shallowest tied depth is reported — the smallest network that reaches the
peak); a curve whose means all lie within `tol` is *flat* and has no sweet spot (depth `None`). The
interval is the 5–95% range of the argmax over bootstrap resamples of the seeds. `peak_effect`
says how pronounced the peak is.

`DepthCurve` is one target's score against depth over the networks of a depth sweep
(`curves_from_table` reads them from a sweep's results table; `among_fitting` keeps the networks that
fit). One run of the sweep is `volratio.depth.point`; its figures are in `volratio.report.plots`.
Chapter: "Depth: a narrow, target-dependent regime" (book/depth.md).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd

from ..errors import VolratioError
from ..util.stats import mean_ci


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
# Depth curves from a sweep's runs


@dataclass
class DepthCurve:
    target: str
    depths: list
    score: np.ndarray  # (n_depths, n_seeds) EMC2 AUC of each SP network
    loss: np.ndarray  # (n_depths, n_seeds) final MSE after SP
    dense_loss: np.ndarray  # (n_depths, n_seeds) MSE before SP
    nonzero: np.ndarray  # (n_depths, n_seeds) non-zero weights after SP
    spot: object  # volratio.depth.SweetSpot
    kept: np.ndarray | None = None  # (n_depths, n_seeds) 1 where the judge said the network draws its label,
    # 0 where not, NaN where the row does not record it (a results table made without a judge's verdicts)

    def __post_init__(self):
        if self.kept is None:
            self.kept = np.full(np.shape(self.score), np.nan)

    def summary(self, level: float = 0.95) -> list[dict]:
        """One row per depth: mean score and loss with t-intervals over seeds (the score's interval
        clipped to [0, 1], the range of an EMC2 score)."""
        rows = []
        for i, d in enumerate(self.depths):
            s, sl, ss = mean_ci(self.score[i], level)
            sl, ss = max(sl, 0.0), min(ss, 1.0)
            m, ml, mh = mean_ci(self.loss[i], level)
            rows.append(
                {
                    "target": self.target,
                    "depth": int(d),
                    "score": s,
                    "score_lo": sl,
                    "score_hi": ss,
                    "loss": m,
                    "loss_lo": ml,
                    "loss_hi": mh,
                    "nonzero": float(np.mean(self.nonzero[i])),
                    "drawn": finite_mean(self.kept[i]),  # share of networks whose own image shows the label
                }
            )
        return rows

    def fitting(self, max_loss: float, tol: float = 1e-9) -> "DepthCurve":
        """This curve restricted to the networks that fit their target: every network whose final
        MSE exceeds `max_loss` (or is not finite) is left out at that depth (its score, losses and
        weight count set to NaN), and the sweet spot is recomputed over the rest. A network that
        failed to fit draws a crude image that survives single-weight changes, so its EMC2 score
        says little about composition; the paper's protocol has no such cut-off (ours)."""
        if not np.isfinite(max_loss) or max_loss <= 0:
            raise DepthError(f"max_loss = {max_loss!r}: give a positive MSE")
        keep = np.isfinite(self.loss) & (self.loss <= max_loss)
        if not keep.any():
            raise DepthError(f"{self.target}: no network has MSE ≤ {max_loss:g}; raise max_loss")

        def cut(a):
            return np.where(keep, a, np.nan)

        score = cut(self.score)
        return DepthCurve(self.target, self.depths, score, cut(self.loss), cut(self.dense_loss), cut(self.nonzero),
                          sweet_spot(self.depths, score, tol=tol), cut(self.kept))  # fmt: skip


def among_fitting(curves: dict, factor: float = 2.0, tol: float = 1e-9) -> tuple[dict, dict]:
    """Each curve restricted to the networks that fit (`DepthCurve.fitting`), with a cut-off
    relative to the target: MSE ≤ `factor` × the median final MSE of all the target's networks
    (targets differ in how well they can be fitted at all). Returns `(curves, cutoffs)`, both
    keyed by target."""
    if not np.isfinite(factor) or factor <= 0:
        raise DepthError(f"factor = {factor!r}: give a positive multiple of the median MSE")
    cutoffs = {t: float(factor * np.nanmedian(c.loss)) for t, c in curves.items()}
    return {t: c.fitting(cutoffs[t], tol) for t, c in curves.items()}, cutoffs


def networks_table(table):
    """One row per network of a depth sweep's results table (a run of `members` networks holds
    lists; network id = "seed.member")."""
    rows = []
    for _, r in table[table["status"] == "done"].iterrows():
        vals = {c: r[c] for c in ("score", "loss", "dense_loss", "nonzero")}
        n = len(vals["score"]) if isinstance(vals["score"], (list, tuple, np.ndarray)) else None
        kept = r.get("base_kept")  # absent (or NaN) in a table made without a judge's verdicts
        if not isinstance(kept, (list, tuple, np.ndarray)) and (kept is None or _isnan(kept)):
            kept = [np.nan] * n if n else np.nan
        vals["kept"] = np.asarray(kept, dtype=np.float64).tolist() if n else float(kept)
        for k in range(n or 1):
            rows.append(
                {
                    "target": r["target"],
                    "depth": int(r["depth"]),
                    "net": f"{r['seed']}.{k}",
                    "key": r["key"],
                    "member": k,
                    **{c: (v[k] if n else v) for c, v in vals.items()},
                }
            )
    return pd.DataFrame(rows)


def curves_from_table(table, tol: float = 1e-9) -> dict[str, DepthCurve]:
    """Depth curves from a depth sweep's results table (one per target; one column per network)."""
    if table[table["status"] == "done"].empty:
        raise DepthError("the depth sweep has no finished runs; see `volratio results DIR --tracebacks`")
    flat = networks_table(table)
    twice = flat[flat.duplicated(["target", "depth", "net"], keep=False)]
    if len(twice):
        r = twice.iloc[0]
        n = int(((twice.target == r.target) & (twice.depth == r.depth) & (twice.net == r.net)).sum())
        raise DepthError(
            f"network {r['net']} of {r['target']} at depth {r['depth']} appears {n} times (e.g. two stored "
            "chunks holding the same runs, judged differently); read one of them"
        )
    out = {}
    for tgt, g in flat.groupby("target", sort=False):
        depths = sorted(g["depth"].unique().tolist())
        nets = sorted(g["net"].unique().tolist())
        grids = {
            col: g.pivot_table(index="depth", columns="net", values=col, aggfunc="first")
            .reindex(index=depths, columns=nets)
            .to_numpy(dtype=np.float64)
            for col in ("score", "loss", "dense_loss", "nonzero", "kept")
        }  # each (n_depths, n_networks)
        out[tgt] = DepthCurve(
            tgt,
            depths,
            grids["score"],
            grids["loss"],
            grids["dense_loss"],
            grids["nonzero"],
            sweet_spot(depths, grids["score"], tol=tol),
            grids["kept"],
        )
    return out


def _isnan(x) -> bool:
    try:
        return bool(np.isnan(x))
    except TypeError:
        return False


def finite_mean(a) -> float:
    """The mean of the finite entries of `a` (NaN when it has none)."""
    a = np.asarray(a, dtype=np.float64)
    a = a[np.isfinite(a)]
    return float(a.mean()) if a.size else float("nan")


def curve_frame(curves: dict):
    """Tidy rows: one per target × depth (means and intervals over seeds)."""
    return pd.DataFrame([row for c in curves.values() for row in c.summary()])
