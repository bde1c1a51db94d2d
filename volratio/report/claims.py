"""The paper's claims and our verdicts on them: one import for the chapters.

The chapters write `from volratio.report import claims` and call `claims.<name>`; this module
gathers the names of the three parts:

- `catalogue` — the claims and each one's deciding statistic (`CLAIMS`, `Claim`, `Statistic`, `table`,
  `NO_JUDGE`);
- `deciders` — the verdict rules, one decider per claim (`sp_vs_pruners`, `depth_optimum`, …),
  on the verdict algebra of `volratio.util.verdicts` (`verdict_on`, the rule; `Estimate`, …);
- `render` — the verdict as the claims page shows it and the glue that puts it there (`Verdict`,
  `record`, `by_judge`, `judge_comparison`, …).

Chapter: "The paper's claims, tested" (book/claims.md).
"""

from __future__ import annotations

from ..util.verdicts import (
    VERDICTS,
    Estimate,
    combine,
    compare_estimates,
    difference,
    lower_is_better,
    pool,
    verdict_from_fraction,
    verdict_on,
)
from .catalogue import CLAIMS, NO_JUDGE, Claim, Statistic, table
from .deciders import (
    count_spread,
    decided,
    depth_optimum,
    depth_rows,
    judge_of,
    muon_above_adam,
    muon_above_adam_by_target,
    picbreeder_vs_sgd_stored,
    png_ratio_linear,
    rho_concentrated,
    scenes_weaker,
    sixteen_verdict,
    size_adjusted,
    slope,
    sp_vs_pruners,
    welch_r_le_d,
)
from .render import (
    BADGE_COLOURS,
    Verdict,
    by_judge,
    delta_reading,
    forest_of,
    glue_judges,
    glue_line,
    interval,
    judge_brief,
    judge_caveat,
    judge_comparison,
    judge_free_reading,
    judge_long,
    judge_short,
    power_line,
    record,
    robust_to_judge,
    robust_word,
    robustness,
    single_judge,
    unglued,
)

__all__ = [
    # the verdict algebra (volratio.util.verdicts)
    "VERDICTS",
    "Estimate",
    "verdict_on",
    "difference",
    "pool",
    "compare_estimates",
    "verdict_from_fraction",
    "combine",
    "lower_is_better",
    # catalogue
    "Claim",
    "Statistic",
    "CLAIMS",
    "NO_JUDGE",
    "table",
    # deciders
    "decided",
    "judge_of",
    "depth_rows",
    "slope",
    "sp_vs_pruners",
    "depth_optimum",
    "png_ratio_linear",
    "muon_above_adam",
    "muon_above_adam_by_target",
    "scenes_weaker",
    "size_adjusted",
    "count_spread",
    "welch_r_le_d",
    "sixteen_verdict",
    "picbreeder_vs_sgd_stored",
    "rho_concentrated",
    # render
    "Verdict",
    "BADGE_COLOURS",
    "record",
    "unglued",
    "by_judge",
    "glue_judges",
    "glue_line",
    "delta_reading",
    "single_judge",
    "robust_to_judge",
    "robust_word",
    "robustness",
    "judge_comparison",
    "judge_free_reading",
    "interval",
    "power_line",
    "forest_of",
    "judge_long",
    "judge_short",
    "judge_brief",
    "judge_caveat",
]
