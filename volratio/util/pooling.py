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

That interval speaks of the targets the claim happened to use. `about_targets` speaks of targets
like them: it draws the targets too (Saravanan et al.'s top level), then the units within each
drawn target's strata, and reads the bootstrap standard error against Student's t on K − 1
degrees of freedom, K the targets (with a handful of targets a percentile interval is too narrow).
Each row then also names its `target`; `Design` is the shape of such rows, shared by many value
vectors when a test simulates a design. `AboutTargets.plan(m)` is its power reading: the targets
and networks per target whose full width would fall under m, from the observed between-target
and within-target variances of a target's contrast. It draws as many resamples as keep each end
within `TOLERANCE` of where another seed would put it.

`Pooled.needed(m)` is the power reading of `contrast`: the units per stratum that would bring the
full width under a smallest effect of interest `m`, from the observed between-network variance
(width ∝ 1/√n).
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
        """Units per stratum that would bring the full width under `m` (only then is the interval
        sure to exclude t or t + m), from the observed spread (width ∝ 1/√n); at least the current
        count."""
        if not m > 0:
            raise VolratioError(f"a smallest effect of interest must be > 0, got {m!r}")
        if not math.isfinite(self.half_width):
            return 0
        return max(math.ceil(self.units), math.ceil(self.units * (2 * self.half_width / m) ** 2))


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


# --- the interval about targets: targets drawn too -------------------------------------------

TOLERANCE = 0.005  # an interval end moves by less than this from one bootstrap seed to another
MIN_DRAWS, MAX_DRAWS = 2000, 1_000_000  # the adaptive number of bootstrap draws stays within these


@dataclass(frozen=True)
class Design:
    """The shape of a claim's rows apart from their values (columns `TARGET_COLUMNS`): which cell
    (setting × arm) and unit each row is in, which target each setting and unit belongs to, and the
    strata of every target. One design serves many value vectors (`intervals`), so a simulation of a
    design draws its bootstrap weights once."""

    settings: pd.Index  # (S,) the settings, in the rows' order
    arms: tuple  # the high arm first
    targets: pd.Index  # (K,) the top level: each setting belongs to one target
    slot_of_setting: np.ndarray  # (S,) the setting's position among its target's settings
    target_of_setting: np.ndarray  # (S,)
    rows_of_target: tuple  # per target: (row indices, local unit of each row, local cell of each row)
    strata_of_target: tuple  # per target: the local unit indices of each of its strata
    width: int  # the most settings any target has

    @classmethod
    def of(cls, rows: pd.DataFrame, high: str, low) -> "Design":
        """The design of `rows` (columns `TARGET_COLUMNS`) for arm `high` against the arms `low`;
        rows of other arms are left out. A setting or a stratum in two targets is refused."""
        missing = [c for c in TARGET_COLUMNS if c not in rows.columns]
        if missing:
            raise VolratioError(f"an interval about targets needs the columns {TARGET_COLUMNS}; missing {missing}")
        arms = (high, *low)
        rows = rows[rows["arm"].isin(arms)].reset_index(drop=True)
        for col in ("setting", "stratum"):
            mixed = rows.groupby(col)["target"].nunique()
            if (mixed > 1).any():
                raise VolratioError(f"{col} {mixed[mixed > 1].index[0]!r} lies in several targets; give each its own")
        settings = pd.Index(pd.unique(rows["setting"]))
        targets = pd.Index(pd.unique(rows["target"]))
        target_of_setting = targets.get_indexer(rows.groupby("setting", sort=False)["target"].first()[settings])
        slot = np.zeros(len(settings), dtype=int)
        for k in range(len(targets)):
            own = np.flatnonzero(target_of_setting == k)
            slot[own] = np.arange(len(own))
        width = int(np.bincount(target_of_setting).max())
        setting_of_row = settings.get_indexer(rows["setting"])
        arm_of_row = pd.Index(arms).get_indexer(rows["arm"])
        per_target, strata = [], []
        for t in targets:
            mine = np.flatnonzero(rows["target"].to_numpy() == t)
            key = (rows["stratum"].astype(str) + "\x00" + rows["unit"].astype(str)).to_numpy()[mine]
            units, unit_of = np.unique(key, return_inverse=True)
            stratum_of_unit = np.array([u.split("\x00")[0] for u in units])
            cell = slot[setting_of_row[mine]] * len(arms) + arm_of_row[mine]
            per_target.append((mine, unit_of, cell))
            strata.append(tuple(np.flatnonzero(stratum_of_unit == s) for s in np.unique(stratum_of_unit)))
        return cls(settings, arms, targets, slot, target_of_setting, tuple(per_target), tuple(strata), width)

    def units(self) -> float:
        """The mean independent units (networks or seeds) per stratum."""
        return float(np.mean([len(m) for s in self.strata_of_target for m in s]))

    def means(self, values: np.ndarray, drawn: np.ndarray, rng, within: bool) -> np.ndarray:
        """Cell means under a bootstrap draw: `values` (V, R), `drawn` (D, K) the target in each of
        the K slots of each draw; within each slot the units of its target's strata are drawn with
        replacement (`within`), else each unit counts once. Returns (V, D, K · width, arms), NaN
        where a slot's target lacks a cell."""
        n_arms = len(self.arms)
        out = np.full((len(values), drawn.shape[0], drawn.shape[1], self.width * n_arms), np.nan)
        for k, (rows, unit_of, cell) in enumerate(self.rows_of_target):
            d_idx, j_idx = np.nonzero(drawn == k)
            if not len(d_idx):
                continue
            n_units = int(unit_of.max()) + 1
            w = np.ones((len(d_idx), n_units))
            if within:
                w = np.zeros(len(d_idx) * n_units)
                offsets = (np.arange(len(d_idx)) * n_units)[:, None]
                for members in self.strata_of_target[k]:
                    picks = members[rng.integers(0, len(members), size=(len(d_idx), len(members)))]
                    np.add.at(w, (offsets + picks).ravel(), 1.0)
                w = w.reshape(len(d_idx), n_units)
            w_rows = w[:, unit_of]  # (slots, rows of the target)
            v = values[:, rows]  # (V, rows of the target)
            for q in np.unique(cell):
                sel = cell == q
                num = v[:, sel] @ w_rows[:, sel].T  # (V, slots)
                with np.errstate(invalid="ignore", divide="ignore"):  # NaN: the slot drew no unit of the cell
                    out[:, d_idx, j_idx, q] = num / w_rows[:, sel].sum(axis=1)
        return out.reshape(len(values), drawn.shape[0], drawn.shape[1] * self.width, n_arms)

    def statistic(self, values: np.ndarray, drawn: np.ndarray, rng, within: bool, strongest: str) -> np.ndarray:
        """The contrast (module docstring) per value vector and draw: (V, D)."""
        m = self.means(values, drawn, rng, within)
        v, d = m.shape[:2]
        return _statistic(m.reshape(v * d, *m.shape[2:]), strongest).reshape(v, d)

    def intervals(self, values, strongest: str = "pooled", n_boot: int = 4000, seed: int = 0,
                  level: float = 0.95, within: bool = True) -> dict:  # fmt: skip
        """The interval about targets for each value vector of `values` (V, R): the point contrast,
        the bootstrap standard error over `n_boot` two-level draws (targets with replacement, then the
        units of each drawn target's strata, `within`), and the ends point ± t(K − 1) · √(K/(K − 1)) ·
        se; with the strongest low arm chosen per setting, centred on the point less the draws' bias
        (a max over noisy means lies above the max of the true ones, by an amount more targets do not
        shrink). Returns arrays `point`, `se`, `lo`, `hi` (V,) and the `kurtosis` of the draws."""
        values = np.atleast_2d(np.asarray(values, dtype=np.float64))
        k = len(self.targets)
        if k < 2:
            raise VolratioError("an interval about targets needs at least two targets; with one, use contrast")
        rng = np.random.default_rng(seed)
        point = self.statistic(values, np.arange(k)[None], rng, within=False, strongest=strongest)[:, 0]
        drawn = rng.integers(0, k, size=(n_boot, k))
        block = max(1, int(4e6 // (n_boot * k * self.width * len(self.arms))))  # value vectors a block: bounded memory
        draws = np.concatenate([self.statistic(values[i : i + block], drawn, rng, within, strongest)
                                for i in range(0, len(values), block)])  # fmt: skip
        with warnings.catch_warnings():  # a draw with no finite statistic is left out, said above
            warnings.simplefilter("ignore", RuntimeWarning)
            se = np.nanstd(draws, axis=1, ddof=1) * math.sqrt(k / (k - 1))
            centred = draws - np.nanmean(draws, axis=1, keepdims=True)
            kurtosis = np.nanmean(centred**4, axis=1) / np.nanmean(centred**2, axis=1) ** 2
            # a per-setting max over noisy arm means is biased upward, and the bias does not shrink with
            # the targets: the interval is centred on the point less the bootstrap's estimate of it
            centre = point - (np.nanmean(draws, axis=1) - point) if strongest == "per setting" else point
        half = float(scipy.stats.t.ppf(0.5 + level / 2, k - 1)) * se
        return {"point": point, "se": se, "lo": centre - half, "hi": centre + half, "kurtosis": kurtosis}


TARGET_COLUMNS = ("target", *COLUMNS)


@dataclass(frozen=True)
class AboutTargets(Pooled):
    """A contrast whose interval speaks of targets like these (`about_targets`): the `Pooled`
    fields, how many `targets`, the bootstrap draws it took, and the observed variance of a target's
    contrast between targets (`between`) and from its networks alone (`within`, at `units` a stratum)."""

    targets: int = 0
    draws: int = 0
    between: float = float("nan")
    within: float = float("nan")

    def width_at(self, targets: int, units: float, level: float = 0.95) -> float:
        """The full width expected with `targets` targets of `units` networks a stratum, from the
        observed variances (a target's contrast varies by between + within · n/n′)."""
        var = self.between + self.within * self.units / units
        return 2 * float(scipy.stats.t.ppf(0.5 + level / 2, targets - 1)) * math.sqrt(var / (targets - 1))

    def plan(self, m: float, most: int = 400) -> tuple[int, int] | None:
        """`(targets, networks a stratum)` whose expected full width is under m: the fewest targets
        with the networks a stratum now, twice or four times as many, whichever needs the fewest
        networks in all; None when no plan up to `most` targets gets there (or no variance is known)."""
        if not m > 0:
            raise VolratioError(f"a smallest effect of interest must be > 0, got {m!r}")
        if not math.isfinite(self.between + self.within):
            return None
        plans = []
        for n in (math.ceil(self.units) * f for f in (1, 2, 4)):
            k = next((k for k in range(max(2, self.targets), most + 1) if self.width_at(k, n) < m), None)
            if k is not None:
                plans.append((k, n))
        return min(plans, key=lambda p: p[0] * p[1]) if plans else None


def about_targets(
    rows: pd.DataFrame,
    high: str = "a",
    low="b",
    strongest: str = "pooled",
    n_boot: int | None = None,
    seed: int = 0,
    level: float = 0.95,
    within: bool = True,
) -> AboutTargets:
    """The pooled contrast of `contrast`, with an interval about targets like these: the rows
    (columns `TARGET_COLUMNS`: each row also names its `target`, the top level) are resampled in two
    levels, the targets with replacement and then, within each drawn target, its units within their
    strata (a network's rows move together); `within=False` draws the targets alone. The interval is
    the point ± Student's t on K − 1 degrees of freedom × the bootstrap standard error × √(K/(K − 1)),
    K the targets: with a handful of targets a percentile interval of this bootstrap is too narrow,
    and t on K − 1 degrees of freedom is the t-interval on the targets' contrasts, widened by the
    networks' own resampling. `tests/test_pooling.py` checks its coverage on the book's designs.

    `n_boot=None` draws as many resamples as keep each end within `TOLERANCE` of where another seed
    would put it (its Monte Carlo error from the draws' spread and kurtosis, at a quarter of the
    tolerance; at most `MAX_DRAWS`); the estimate's `mc` is the tolerance then, the width within
    which `volratio.util.verdicts.verdict_on` calls an end borderline."""
    low = [low] if isinstance(low, str) else list(low)
    if not low:
        raise VolratioError("a pooled contrast needs at least one low arm")
    if strongest not in STRONGEST:
        raise VolratioError(f"strongest={strongest!r}: use one of {STRONGEST}")
    design = Design.of(rows, high, low)
    kept = rows[rows["arm"].isin(design.arms)].reset_index(drop=True)
    values = kept["value"].to_numpy(dtype=np.float64)
    if not len(values) or not np.isfinite(values).all():
        raise VolratioError("a pooled contrast needs finite values for every network (score 0 what does not draw)")
    k = len(design.targets)
    draws, mc = n_boot, 0.0
    if n_boot is None:
        pilot = design.intervals(values, strongest, MIN_DRAWS, seed, level, within)
        c = float(scipy.stats.t.ppf(0.5 + level / 2, k - 1))
        kurtosis = pilot["kurtosis"][0] if math.isfinite(pilot["kurtosis"][0]) else 3.0  # NaN: no spread at all
        spread = (c * pilot["se"][0]) ** 2 * max(kurtosis - 1, 2.0) / 4  # D · var(end), var(se²) from the kurtosis
        if not math.isfinite(spread):
            raise VolratioError("an interval about targets needs a finite spread of its bootstrap draws")
        draws = int(min(MAX_DRAWS, max(MIN_DRAWS, math.ceil(spread / (TOLERANCE / 4) ** 2))))
        mc = max(TOLERANCE, 4 * math.sqrt(spread / draws))
    r = design.intervals(values, strongest, draws, seed, level, within)
    e = Estimate(float(r["point"][0]), float(r["lo"][0]), float(r["hi"][0]), mc)
    between, within_var = _components(kept, design, strongest, seed)
    strata = [len(m) for s in design.strata_of_target for m in s]
    return AboutTargets(e, len(design.settings), len(strata), design.units(), k - 1, k, draws, between, within_var)


def _components(rows: pd.DataFrame, design: Design, strongest: str, seed: int) -> tuple[float, float]:
    """`(between, within)`: the variance of a target's own contrast between targets (true effects
    differing) and from its networks alone (the mean over targets of its within-target bootstrap
    variance, rescaled by n/(n − 1)); the first is the targets' sample variance less the second, at
    least 0."""
    values = rows["value"].to_numpy(dtype=np.float64)[None]
    k, rng = len(design.targets), np.random.default_rng(seed)
    point = _per_target(design.means(values, np.arange(k)[None], rng, within=False)[0, 0], design, strongest)
    fixed = np.repeat(np.arange(k)[None], 1000, axis=0)  # every target in its own slot: networks drawn alone
    drawn = design.means(values, fixed, rng, within=True)[0]
    per_draw = np.stack([_per_target(m, design, strongest) for m in drawn])  # (1000, K)
    n = design.units()
    with warnings.catch_warnings():  # a target with one network has no within-target spread: NaN
        warnings.simplefilter("ignore", RuntimeWarning)
        within = float(np.nanmean(np.nanvar(per_draw, axis=0, ddof=1))) * n / max(n - 1, 1)
        total = float(np.nanvar(point, ddof=1))
    return max(0.0, total - within), within


def _per_target(means: np.ndarray, design: Design, strongest: str) -> np.ndarray:
    """Each target's own contrast (K,) from one draw's cell means (K · width, arms): the mean over its
    settings of high − the strongest low (chosen over every target's pooled means, or per setting)."""
    high, low = means[:, 0], means[:, 1:]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        if strongest == "per setting":
            diff = high - np.nanmax(low, axis=1)
        else:
            pooled_low = np.nanmean(low, axis=0)
            diff = high - low[:, int(np.nanargmax(np.where(np.isnan(pooled_low), -np.inf, pooled_low)))]
        return np.nanmean(diff.reshape(len(design.targets), design.width), axis=1)
