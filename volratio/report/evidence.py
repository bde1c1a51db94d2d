"""From one row per network to a claim's pooled statistic: the rule for networks that do not draw their
label, the rows the pooled estimator reads, and the verdict with its power.

**Networks that do not draw their label score 0.** A network whose unperturbed image is not the
label has lost the identity the EMC2 score asks about, whatever its perturbed images do. That covers
two cases, on every side of every comparison: the network is collapsed
(`volratio.prune.similarity_pruning.collapsed`: a flat image, or an MSE far above its dense start's),
or the deciding judge does not keep its base image (`base_kept`). `score_or_zero` applies it; a
decider applies it before pooling, and states the verdict with those networks left out beside it.

`pooled_rows` turns a decider's table into the rows of `volratio.util.pooling` (target, setting,
arm, stratum, unit, value), and `decide_pooled` decides a claim on them: with two targets or more
its interval speaks of targets like these (`about_targets`), with one of that target's networks
(`contrast`); the verdict, the sentence that states the statistic, its power (full width beside the
smallest effect of interest m, and the targets and networks per target that would bring it under m)
and the evidence entry that records them.
"""

from __future__ import annotations

import contextlib
import contextvars

import numpy as np
import pandas as pd

from ..util.pooling import AboutTargets, Pooled, about_targets, contrast
from .catalogue import CLAIMS


def drawn(table: pd.DataFrame, kept: str = "base_kept", collapsed: str = "collapsed") -> pd.Series:
    """True where a network draws its label: its base image kept by the judge (column `kept`, when
    the table has it) and not collapsed (column `collapsed`, when it has it). A missing flag (NaN)
    is no evidence against the network."""
    ok = pd.Series(True, index=table.index)
    if kept in table:
        ok &= _flag(table[kept], missing=True)
    if collapsed in table:
        ok &= ~_flag(table[collapsed], missing=False)
    return ok


def _flag(column: pd.Series, missing: bool) -> pd.Series:
    """A stored True/False flag as bools; anything else (NaN, None: the network has no such flag,
    e.g. one that could not be pruned) reads as `missing`."""
    return column.map(lambda x: bool(x) if isinstance(x, (bool, np.bool_)) else missing).astype(bool)


def score_or_zero(table: pd.DataFrame, value: str, kept: str = "base_kept", collapsed: str = "collapsed"):
    """`(scores, zeroed)`: column `value` with every network that does not draw its label (`drawn`)
    scored 0, and how many were."""
    ok = drawn(table, kept, collapsed)
    return table[value].astype(float).where(ok, 0.0), int((~ok).sum())


def pooled_rows(table: pd.DataFrame, arm: str, value, setting=(), stratum=(), unit=(), paired: bool = True,
                target=()) -> pd.DataFrame:  # fmt: skip
    """The rows of `volratio.util.pooling.contrast` from `table`: `arm` names the column of the arm,
    `value` the score (a column name or a Series); `setting`, `stratum`, `unit` and `target` are
    column names (those the table lacks are skipped; none: one setting or stratum, each row its own
    unit, one target). `paired=False`, or no `unit` column in the table: each arm's networks are its
    own (the stratum gains the arm), so nothing is resampled together across arms. `target` names the
    top level an interval about targets draws (`volratio.util.pooling.about_targets`)."""

    def key(cols):
        cols = [c for c in cols if c in table]
        if not cols:
            return pd.Series("all", index=table.index)
        return table[cols].astype(str).agg(" | ".join, axis=1)

    has_units = any(c in table for c in unit)
    units = key(unit) if has_units else pd.Series(np.arange(len(table)).astype(str), table.index)
    paired = paired and has_units  # with no unit named, nothing ties one arm's rows to another's
    strata = key(stratum) if paired else key(stratum) + " | " + table[arm].astype(str)
    values = table[value] if isinstance(value, str) else value
    return pd.DataFrame(
        {
            "target": key(target),
            "setting": key(setting),
            "arm": table[arm].astype(str),
            "stratum": strata,
            "unit": units,
            "value": values.astype(float),
        }  # fmt: skip
    ).reset_index(drop=True)


def decide_pooled(key: str, rows: pd.DataFrame, high: str, low, strongest: str = "pooled", fmt: str = "+.3f",
                  statistic=None):  # fmt: skip
    """Claim `key` decided on the pooled contrast of `high` against `low` in `rows` (see
    `pooled_rows`): `(verdict, stated, decision, pooled)`; `pooled` is None when an arm has no
    network (not measured). With two targets or more (a `target` column), the interval speaks of
    targets like these (`about_targets`: targets drawn too, t on K − 1 degrees of freedom); with one,
    of that target's networks (`contrast`). `statistic`: which of the claim's statistics decides
    (`volratio.report.catalogue.Statistic`; default its deciding one)."""
    st = statistic or CLAIMS[key].statistic
    low = [low] if isinstance(low, str) else list(low)
    present = set(rows["arm"]) if len(rows) else set()
    if high not in present or not present & set(low):
        return st.decide(None), st.sentence(None, fmt), {"statistic": None}, None
    arms = [a for a in low if a in present]
    if "target" in rows and rows["target"].nunique() > 1 and not _TARGETS_FIXED.get():
        p = about_targets(rows, high, arms, strongest=strongest, seed=_SEED.get())
    else:
        p = contrast(rows, high, arms, strongest=strongest, seed=_SEED.get())
    e = p.estimate
    decision = {
        "statistic": {"mean": float(e.mean), "lo": float(e.lo), "hi": float(e.hi)},
        "power": power_numbers(key, p, st),
        "interval": about(p),
    }
    return st.decide(e), st.sentence(e, fmt), decision, p


_TARGETS_FIXED: contextvars.ContextVar = contextvars.ContextVar("volratio_targets_fixed", default=False)
_SEED: contextvars.ContextVar = contextvars.ContextVar("volratio_bootstrap_seed", default=0)


@contextlib.contextmanager
def bootstrap_seed(seed: int):
    """Within this block `decide_pooled` draws its bootstrap with `seed` (default 0): the check that
    no verdict depends on it (`tests/test_seed_stable_words.py`)."""
    token = _SEED.set(int(seed))
    try:
        yield
    finally:
        _SEED.reset(token)


@contextlib.contextmanager
def targets_held_fixed():
    """Within this block `decide_pooled` holds the targets fixed (`contrast`, the estimator of the
    first committed rule), so that a verdict can be read as that rule read it
    (`volratio.report.decisions`)."""
    token = _TARGETS_FIXED.set(True)
    try:
        yield
    finally:
        _TARGETS_FIXED.reset(token)


def about(p: Pooled) -> str:
    """What population pooled statistic `p`'s interval speaks of, in a few words."""
    if isinstance(p, AboutTargets):
        return (f"about targets like these: {p.targets} targets drawn, then their networks; t on {p.dof} degrees "
                f"of freedom; {p.draws:,} draws, each end within {p.estimate.mc:.3f} of another seed's")  # fmt: skip
    return "about these targets' networks: the networks drawn within each, the targets held fixed"


def power_numbers(key: str, p: Pooled, statistic=None) -> dict:
    """The power of claim `key`'s pooled statistic: full width, m, networks per cell (or per target)
    now, and what would bring the full width under m: the networks per cell, or, for an interval
    about targets, the targets and networks per target (`AboutTargets.plan`)."""
    st = statistic or CLAIMS[key].statistic
    m = st.smallest
    hw = p.half_width
    out = {
        "half_width": float(hw),
        "width": float(2 * hw),
        "smallest_effect": float(m),
        "networks_per_cell": float(p.units),
        "settings": int(p.settings),
        "text": st.power(p),
    }
    if isinstance(p, AboutTargets):
        plan = p.plan(m) if np.isfinite(hw) else None
        out.update(targets=p.targets, between=p.between, within=p.within, needed_targets=plan and plan[0],
                   needed_per_target=plan and plan[1])  # fmt: skip
    else:
        out["needed_per_cell"] = int(p.needed(m)) if np.isfinite(hw) else None
    return out
