"""Verdict algebra: measured quantities with intervals, and the words a claim's verdict is given in.

`Estimate` (a mean with its interval), `compare_estimates` ("does one exceed the other?"),
`verdict_from_fraction` (sub-claims that held), `combine` (a claim's parts) and `lower_is_better`.
The claims' deciders (`volratio.report.deciders`) and the judge's calibration checks (`volratio.calibration.fit_calibrated`)
both decide with these.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import VolratioError
from .stats import mean_ci

VERDICTS = ("reproduced", "partly", "not reproduced", "not measured")


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


def compare_estimates(higher: Estimate, lower: Estimate) -> str:
    """Verdict on "`higher` exceeds `lower`": reproduced when the intervals are separated in that
    direction, partly when only the means are ordered, not reproduced otherwise."""
    if higher.lo > lower.hi:
        return "reproduced"
    if higher.mean > lower.mean:
        return "partly"
    return "not reproduced"


def verdict_from_fraction(passed: int, total: int, all_needed: bool = True) -> str:
    """Verdict from a count of sub-claims that held: all → reproduced, some → partly, none → not."""
    if total <= 0:
        return "not measured"
    if passed == total:
        return "reproduced"
    return "partly" if passed > 0 else "not reproduced"


def combine(verdicts) -> str:
    """One verdict from the verdicts of a claim's parts: all reproduced → reproduced, none
    reproduced or partly → not reproduced, otherwise partly."""
    vs = [v for v in verdicts if v != "not measured"]
    if not vs:
        return "not measured"
    if all(v == "reproduced" for v in vs):
        return "reproduced"
    if all(v == "not reproduced" for v in vs):
        return "not reproduced"
    return "partly"


def lower_is_better(e: Estimate) -> Estimate:
    """Negate an estimate so that `compare_estimates` can test "lower than"."""
    return Estimate(-e.mean, -e.hi, -e.lo)
