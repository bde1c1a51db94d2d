"""One estimator for a claim's deciding contrast, pooled over its settings, with an interval that
narrows as the evidence grows: the stratified cluster (hierarchical) bootstrap.

A claim compares arms (SP against the pruners, Muon against Adam, the true depth against its
shallower and deeper sides, a scene against its parts) in several settings (targets, checkpoints,
effect sizes). The data are one row per network and arm (`value`), each row naming its `setting`,
its `arm`, the `stratum` it is resampled in and its `unit` — the independent thing behind the
value, a network or a seed. The estimator is

    contrast = (1/K) Σ_settings [ mean(high arm) − max over the low arms of mean(low arm) ]

with the strongest low arm chosen over the pooled means (`strongest="pooled"`: "SP minus the
strongest baseline") or within each setting (`strongest="per setting"`: "the true depth above both
its sides"). Its interval comes from the two-level bootstrap of Saravanan, Berman and Sober (2020,
"Application of the hierarchical bootstrap to multi-level data in neuroscience"): strata are kept
(a setting is fixed by the design, not drawn), and within each stratum its units are drawn with
replacement; every row of a drawn unit comes along, so rows that share a network — the same network
at two checkpoints, or pruned by two methods from one dense start — move together and are never
counted as independent. Settings that share networks must therefore share a stratum.

With three networks a cell, the plain percentile interval of such a bootstrap is too narrow (the
bootstrap variance of a mean of n units is (n − 1)/n of its sampling variance, and the percentiles
ignore that only a few units were drawn). The interval is therefore the bootstrap standard error,
rescaled by √(n/(n − 1)) with n the mean units per stratum, times Student's t on Σ(n_s − 1)
degrees of freedom: for a single setting with no shared rows it is the ordinary t-interval of a
difference of means. `tests/test_pooling.py` checks its coverage on simulated data.

`Pooled.needed(m)` is the power reading: the units per stratum that would bring the half-width under
a smallest effect of interest `m`, from the observed between-network variance (half-width ∝ 1/√n).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd
import scipy.stats

from ..errors import VolratioError
from .verdicts import Estimate

STRONGEST = ("pooled", "per setting")  # where the strongest low arm is chosen
COLUMNS = ("setting", "arm", "stratum", "unit", "value")


@dataclass(frozen=True)
class Pooled:
    """A pooled contrast: the `estimate`, how many `settings` and `strata` it pooled, the mean
    `units` per stratum, and the degrees of freedom of its interval."""

    estimate: Estimate
    settings: int
    strata: int
    units: float  # mean independent units (networks or seeds) per stratum
    dof: int

    @property
    def half_width(self) -> float:
        return float((self.estimate.hi - self.estimate.lo) / 2)

    def needed(self, m: float) -> int:
        """Units per stratum that would bring the half-width under `m`, from the observed spread
        (half-width ∝ 1/√n); at least the current count."""
        if not m > 0:
            raise VolratioError(f"a smallest effect of interest must be > 0, got {m!r}")
        if not math.isfinite(self.half_width):
            return 0
        return max(math.ceil(self.units), math.ceil(self.units * (self.half_width / m) ** 2))


def contrast(
    rows: pd.DataFrame,
    high: str = "a",
    low="b",
    strongest: str = "pooled",
    n_boot: int = 4000,
    seed: int = 0,
    level: float = 0.95,
) -> Pooled:
    """The pooled contrast of arm `high` against the arms `low` (one name or several) in `rows`
    (columns `COLUMNS`; see the module's docstring), with its stratified cluster-bootstrap interval
    at `level` (`n_boot` draws, seeded: the same rows give the same interval). Values must be
    finite: a network that does not draw its label is scored 0 before it gets here
    (`volratio.report.drawn.score_or_zero`), never dropped silently."""
    low = [low] if isinstance(low, str) else list(low)
    if not low:
        raise VolratioError("a pooled contrast needs at least one low arm")
    if strongest not in STRONGEST:
        raise VolratioError(f"strongest={strongest!r}: use one of {STRONGEST}")
    missing = [c for c in COLUMNS if c not in rows.columns]
    if missing:
        raise VolratioError(f"a pooled contrast needs the columns {COLUMNS}; missing {missing}")
    rows = rows[rows["arm"].isin([high, *low])]
    values = rows["value"].to_numpy(dtype=np.float64)
    if not len(rows) or not np.isfinite(values).all():
        raise VolratioError("a pooled contrast needs finite values for every network (score 0 what does not draw)")
    settings = pd.Index(pd.unique(rows["setting"]))
    arms = [high, *low]
    cell = pd.MultiIndex.from_arrays([rows["setting"], rows["arm"]])
    cells = pd.MultiIndex.from_product([settings, arms])
    which = cells.get_indexer(cell)  # (n_rows,) cell of each row
    unit_key = pd.MultiIndex.from_arrays([rows["stratum"], rows["unit"]])
    units, unit_of = np.unique(unit_key.to_flat_index().astype(str), return_inverse=True)
    stratum_of_unit = pd.Series(rows["stratum"].astype(str).to_numpy()).groupby(unit_of).first()
    strata = {s: np.flatnonzero(stratum_of_unit.to_numpy() == s) for s in pd.unique(stratum_of_unit)}

    rng = np.random.default_rng(seed)
    weights = np.zeros((n_boot + 1, len(units)))
    weights[0] = 1.0  # the point estimate: every unit once
    for members in strata.values():
        draws = rng.integers(0, len(members), size=(n_boot, len(members)))
        np.add.at(weights[1:], (np.arange(n_boot)[:, None], members[draws]), 1.0)
    w = weights[:, unit_of]  # (draws, n_rows)
    onehot = np.zeros((len(rows), len(cells)))
    onehot[np.arange(len(rows)), which] = 1.0
    with np.errstate(invalid="ignore", divide="ignore"):
        means = ((w * values) @ onehot) / (w @ onehot)  # (draws, cells); NaN: a cell drew no unit
    means = means.reshape(n_boot + 1, len(settings), len(arms))
    stat = _statistic(means, strongest)
    point, boot = float(stat[0]), stat[1:][np.isfinite(stat[1:])]
    return from_draws(point, boot, [len(m) for m in strata.values()], len(settings), level)


def from_draws(point: float, draws, counts, settings: int, level: float = 0.95) -> Pooled:
    """A `Pooled` from a statistic's `point` value and its bootstrap `draws` (non-finite ones left
    out), `counts` the units in each stratum: the interval of the module's docstring (bootstrap
    standard error × √(n/(n − 1)) × Student's t on Σ(n_s − 1) degrees of freedom)."""
    draws = np.asarray(draws, dtype=np.float64)
    draws = draws[np.isfinite(draws)]
    counts = np.asarray(counts)
    dof = int((counts - 1).sum())
    n = float(counts.mean())
    if dof < 1 or draws.size < 2 or n <= 1:
        e = Estimate(point, float("nan"), float("nan"))
    else:
        se = float(draws.std(ddof=1)) * math.sqrt(n / (n - 1))
        half = float(scipy.stats.t.ppf(0.5 + level / 2, dof)) * se
        e = Estimate(point, point - half, point + half)
    return Pooled(e, settings, len(counts), n, dof)


def _statistic(means: np.ndarray, strongest: str) -> np.ndarray:
    """Per draw, the mean over settings of high − strongest low (`means`: draws × settings × arms,
    the high arm first). A setting that lacks an arm in the data is left out of the mean."""
    high, low = means[:, :, 0], means[:, :, 1:]
    with warnings.catch_warnings():  # all-NaN slices (a cell that drew no unit) are NaN, said above
        warnings.simplefilter("ignore", RuntimeWarning)
        if strongest == "per setting":
            return np.nanmean(high - np.nanmax(low, axis=2), axis=1)
        pooled_low = np.nanmean(low, axis=1)  # draws × low arms
        best = np.nanargmax(np.where(np.isnan(pooled_low), -np.inf, pooled_low), axis=1)
        chosen = low[np.arange(len(means)), :, best]  # draws × settings
        return np.nanmean(high - chosen, axis=1)
