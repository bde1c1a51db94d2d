"""Verdict algebra: measured quantities with intervals, and the words a claim's verdict is given in.

`verdict_on` is the rule that decides a claim from its one deciding statistic (an `Estimate`, pooled
over the claim's settings by `volratio.util.pooling`), the threshold t, the side the paper claims
and the claim's smallest effect of interest m (how far past t an effect must lie to matter). The
interval's ends are measured into the claimed side from t: a is the end least favourable to the
claim, b the most favourable (for a claim "below t", a = t − hi and b = t − lo). Then

    b < 0                  contradicted     the interval lies on the other side of t
    a ≤ 0 ≤ b < m          not reproduced   no effect, and every effect that matters excluded
    a ≤ 0 and b ≥ m        inconclusive     it reaches both t and t + m: absent or large, undecided
    a > 0 and b < m        negligible       a real effect, but too small to matter (never "reproduced")
    a > 0 and b ≥ m        reproduced       a real effect that may matter

and *borderline* wherever an end lies within the interval's Monte Carlo error (`Estimate.mc`: a
bootstrap end moves by less than it from one seed to another) of t or t + m, so that no word
depends on the bootstrap's seed. There is no "partly".

`bound_verdict_on` is the rule of a bound-type statistic, where m is only a rounding tolerance (the
Welch bound: a frame's coherence can never fall below it): reproduced as soon as the interval
clears t (a > 0), contradicted when b < 0, else not reproduced or inconclusive as above.

`difference` (two independent intervals) and `pool` (an average of settings' intervals that never
narrows) are kept for sub-checks only. The sub-checks shown beside a verdict use `compare_estimates`
("does one exceed the other?"), `verdict_from_fraction` (sub-claims that held), `combine` (a claim's
parts) and `lower_is_better`; their words ("partly" among them) describe a sub-check, never a claim.
`weaker` gives the word of a claim that joins two statements, each decided on its own statistic.
The claims' deciders (`volratio.report.deciders`) and the judge's calibration checks
(`volratio.calibration.fit_calibrated`) both decide with these.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..errors import VolratioError
from .stats import mean_ci

# a claim's words, from the most to the least favourable to the claim (`weaker` reads this order)
VERDICTS = ("reproduced", "inconclusive", "borderline", "negligible", "not reproduced", "contradicted", "not measured")
SIDES = ("above", "below")  # the side of its threshold a claim says its statistic lies on


@dataclass(frozen=True)
class Estimate:
    """A measured quantity with an interval (e.g. a mean over seeds with its 95% CI). `mc`: how far
    an end may move with the bootstrap's seed (its Monte Carlo error; 0 for an exact interval)."""

    mean: float
    lo: float
    hi: float
    mc: float = 0.0

    @classmethod
    def from_samples(cls, xs, level: float = 0.95) -> "Estimate":
        """Mean with a Student-t interval over the samples (a point when there is one sample)."""
        a = np.asarray(list(xs), dtype=float)
        if a.size == 0:
            raise VolratioError("an estimate needs at least one sample")
        return cls(*mean_ci(a, level))


def verdict_on(e: Estimate | None, threshold: float, claimed: str, smallest: float) -> str:
    """The verdict on "the statistic `e` lies `claimed` ("above" or "below") `threshold`" with the
    smallest effect of interest `smallest` (m > 0, in the statistic's units), by the table of the
    module's docstring; not measured without a finite mean. An interval end that is NaN counts as
    reaching everything."""
    a, b = _into_claim(e, threshold, claimed, smallest)
    if a is None:
        return "not measured"
    if _near(e, (a, b), (0.0, smallest)):
        return "borderline"
    if b < 0:
        return "contradicted"
    if a > 0:
        return "reproduced" if b >= smallest else "negligible"
    if b < smallest:
        return "not reproduced"
    return "inconclusive"  # also when an end is NaN: nothing is excluded


def bound_verdict_on(e: Estimate | None, threshold: float, claimed: str, smallest: float) -> str:
    """The verdict on a bound-type statistic, where m (`smallest`) is only a rounding tolerance:
    reproduced as soon as the interval clears `threshold` (a > 0), contradicted when it lies on the
    other side (b < 0), else not reproduced (b < m) or inconclusive."""
    a, b = _into_claim(e, threshold, claimed, smallest)
    if a is None:
        return "not measured"
    if _near(e, (a, b), (0.0,)):
        return "borderline"
    if a > 0:
        return "reproduced"
    if b < 0:
        return "contradicted"
    return "not reproduced" if b < smallest else "inconclusive"


def _into_claim(e: Estimate | None, threshold: float, claimed: str, smallest: float):
    """`(a, b)`: the interval's ends measured into the claimed side from `threshold`, a the least
    favourable; `(None, None)` without a finite mean. Checks the side and m."""
    if claimed not in SIDES:
        raise VolratioError(f"a claim's side must be one of {SIDES}, got {claimed!r}")
    if not (isinstance(smallest, (int, float)) and smallest > 0):
        raise VolratioError(f"a smallest effect of interest must be a number > 0, got {smallest!r}")
    if e is None or not math.isfinite(e.mean):
        return None, None
    if claimed == "above":
        return e.lo - threshold, e.hi - threshold
    return threshold - e.hi, threshold - e.lo


def _near(e: Estimate, ends, edges) -> bool:
    """Whether an end lies within `e`'s Monte Carlo error of an edge (both measured from t)."""
    return e.mc > 0 and any(abs(x - edge) < e.mc for x in ends for edge in edges if math.isfinite(x))


def weaker(*words: str) -> str:
    """The word of a claim that joins statements, each decided on its own: the least favourable of
    their words (`VERDICTS` order); not measured when any part is."""
    for w in words:
        if w not in VERDICTS:
            raise VolratioError(f"verdict must be one of {VERDICTS}, got {w!r}")
    return max(words, key=VERDICTS.index) if words else "not measured"


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
