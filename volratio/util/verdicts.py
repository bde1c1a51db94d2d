"""Verdict algebra: measured quantities with intervals, and the words a claim's verdict is given in.

`verdict_on` is the rule that decides a claim from its one deciding statistic (an `Estimate`, pooled
over the claim's settings by `volratio.util.pooling.contrast`), the threshold t, the side the paper
claims and the claim's smallest effect of interest m (how far past t an effect must lie to matter):

- *reproduced*: the interval lies on the claimed side of t;
- *contradicted*: the interval lies on the other side;
- *not reproduced*: not contradicted, and the interval excludes every effect of size m or more in
  the claimed direction (its far end stops short of t + m);
- *inconclusive*: anything else — the interval reaches both t and t + m, so the data cannot tell an
  absent effect from one that matters.

There is no "partly": a mean on the claimed side with an interval that crosses t is inconclusive.
`difference` (two independent intervals) and `pool` (an average of settings' intervals that never
narrows) are kept for sub-checks only; a claim's statistic is pooled by `pooling.contrast`. The
sub-checks shown beside a verdict use `compare_estimates` ("does one exceed the other?"),
`verdict_from_fraction` (sub-claims that held), `combine` (a claim's parts) and `lower_is_better`;
their words ("partly" among them) describe a sub-check, never a claim.
The claims' deciders (`volratio.report.deciders`) and the judge's calibration checks (`volratio.calibration.fit_calibrated`)
both decide with these.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..errors import VolratioError
from .stats import mean_ci

VERDICTS = ("reproduced", "not reproduced", "inconclusive", "contradicted", "not measured")  # a claim's words
SIDES = ("above", "below")  # the side of its threshold a claim says its statistic lies on


@dataclass(frozen=True)
class Estimate:
    """A measured quantity with an interval (e.g. a mean over seeds with its 95% CI)."""

    mean: float
    lo: float
    hi: float

    @classmethod
    def from_samples(cls, xs, level: float = 0.95) -> "Estimate":
        """Mean with a Student-t interval over the samples (a point when there is one sample)."""
        a = np.asarray(list(xs), dtype=float)
        if a.size == 0:
            raise VolratioError("an estimate needs at least one sample")
        return cls(*mean_ci(a, level))


def verdict_on(e: Estimate | None, threshold: float, claimed: str, smallest: float) -> str:
    """The verdict on "the statistic `e` lies `claimed` ("above" or "below") `threshold`" with the
    smallest effect of interest `smallest` (m > 0, in the statistic's units): reproduced,
    contradicted, not reproduced or inconclusive as the module's docstring defines them; not
    measured without a finite mean. An interval end that is NaN counts as reaching everything."""
    if claimed not in SIDES:
        raise VolratioError(f"a claim's side must be one of {SIDES}, got {claimed!r}")
    if not (isinstance(smallest, (int, float)) and smallest > 0):
        raise VolratioError(f"a smallest effect of interest must be a number > 0, got {smallest!r}")
    if e is None or not math.isfinite(e.mean):
        return "not measured"
    # distances into the claimed side; `worst` is the interval's end least favourable to the claim
    if claimed == "above":
        worst, best = e.lo - threshold, e.hi - threshold
    else:
        worst, best = threshold - e.hi, threshold - e.lo
    if worst > 0:
        return "reproduced"
    if best < 0:
        return "contradicted"
    if best < smallest:
        return "not reproduced"
    return "inconclusive"  # also when an end is NaN: nothing is excluded


def difference(a: Estimate, b: Estimate) -> Estimate:
    """`a − b` with the interval from `a`'s lower end minus `b`'s upper end to `a`'s upper end minus
    `b`'s lower end: it lies above 0 exactly when the two intervals are separated with `a` above (a
    sub-check; a claim's contrast is `volratio.util.pooling.contrast`)."""
    return Estimate(a.mean - b.mean, a.lo - b.hi, a.hi - b.lo)


def pool(estimates) -> Estimate:
    """One estimate from several settings' estimates of the same quantity: the mean of their means,
    of their lower ends and of their upper ends (no independence between settings assumed, so it never
    narrows as settings are added: a sub-check's summary, never a claim's statistic)."""
    es = list(estimates)
    if not es:
        raise VolratioError("pooling needs at least one estimate")
    return Estimate(*(float(np.mean([getattr(e, k) for e in es])) for k in ("mean", "lo", "hi")))


def compare_estimates(higher: Estimate, lower: Estimate) -> str:
    """Verdict on "`higher` exceeds `lower`": reproduced when the intervals are separated in that
    direction, partly when only the means are ordered, not reproduced otherwise."""
    if higher.lo > lower.hi:
        return "reproduced"
    if higher.mean > lower.mean:
        return "partly"
    return "not reproduced"


def verdict_from_fraction(passed: int, total: int) -> str:
    """Verdict from a count of sub-claims that held: all → reproduced, some → partly, none → not."""
    if total <= 0:
        return "not measured"
    if passed == total:
        return "reproduced"
    return "partly" if passed > 0 else "not reproduced"


def combine(verdicts) -> str:
    """One verdict from the verdicts of a claim's parts (the measured ones): all reproduced →
    reproduced, all contradicted → contradicted, none reproduced or partly → not reproduced,
    otherwise partly."""
    vs = [v for v in verdicts if v != "not measured"]
    if not vs:
        return "not measured"
    if all(v == "reproduced" for v in vs):
        return "reproduced"
    if all(v == "contradicted" for v in vs):
        return "contradicted"
    if all(v in ("not reproduced", "contradicted") for v in vs):
        return "not reproduced"
    return "partly"


def lower_is_better(e: Estimate) -> Estimate:
    """Negate an estimate so that `compare_estimates` can test "lower than"."""
    return Estimate(-e.mean, -e.hi, -e.lo)
