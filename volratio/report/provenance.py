"""When each claim's rule was fixed, against when its data were stored — and the choices made after
the data had been read.

The verdict rule (`volratio.util.verdicts.verdict_on`), each claim's deciding statistic, its
smallest effect of interest (`volratio.report.catalogue`) and the pooled estimator
(`volratio.util.pooling`) were committed together, in `RULE_COMMIT`; a claim whose deciding
comparison was fixed later, before the runs that decide it, names its own commit in
`CLAIM_RULE_COMMITS`. `rule_table` sets that commit
beside the sessions that stored each claim's chunks (their manifests, `results/reference/<chunk>/
manifest.json`), so a reader can check with `git log` whether the rule came before or after the
data it decides. `CHOICES` lists what was chosen with the data already read (`CHOICES_AFTER_DATA`:
their texts), each with the reading it replaced, so that `volratio.report.decisions.directions` can
compute which way it moved each verdict.

Chapter: "The paper's claims, tested" (book/claims.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from ..errors import VolratioError
from ..runs import manifest, stored
from .catalogue import CLAIMS

# the commit that fixed the verdict words, every claim's statistic and m, and the pooled estimator
RULE_COMMIT = "49ba7d0c"
RULE_COMMITTED_AT = "2026-12-04T17:44:58+00:00"

# claims whose deciding comparison was fixed in a later commit: (commit, committed at, what it fixed)
CLAIM_RULE_COMMITS = {
    "muon-above-adam": (
        "dc16df0a",
        "2026-12-05T07:23:48+00:00",
        "the comparison at one non-zero count per cell (chunk optimizers_matched), committed before its runs",
    ),
    "depth-optimum": (
        "c07dfdd1",
        "2026-12-05T11:32:20+00:00",
        "the comparison at one weight sparsity per target (chunk depth_matched_planted), committed before its runs",
    ),
}


@dataclass(frozen=True)
class Choice:
    """A choice made with the data already read: what was chosen (`text`), the reading it replaced
    (`instead`: a key of `volratio.report.decisions.ALTERNATIVES`, whose verdicts are computed; ""
    where no other reading exists to compare) and the claims it touched. Which way it moved each
    verdict (toward the paper, away from it, or neither) is computed by
    `volratio.report.decisions.directions`, never typed."""

    text: str
    instead: str = ""
    claims: tuple = ()


EMC2_CLAIMS = ("picbreeder-vs-sgd", "sp-vs-pruners", "depth-optimum", "png-ratio-linear", "muon-above-adam",
               "scenes-weaker")  # fmt: skip

CHOICES = (
    Choice(
        "Every claim's rule, statistic and smallest effect of interest were fixed after its networks had been stored "
        "and their earlier verdicts read: no claim here was pre-registered (the deciding runs of the Muon comparison "
        "and of the depth peak alone were made after their rules).",
    ),
    Choice(
        "The smallest effects of interest (0.1 of EMC2 AUC, 0.25 layers per unit of PNG ratio, 0.1 of decay rate) were "
        "chosen after an audit had quoted the earlier intervals of claims 2 and 5 (about ±0.3).",
    ),
    Choice(
        "The depth claim's statistic (the true depth above both its sides) was kept over the mean of the other depths "
        "after both had been computed; the second is shown as a sub-check.",
        "against every other depth",
        ("depth-optimum",),
    ),
    Choice(
        "The rule that a network which does not draw its label scores 0 was adopted after the collapsed networks of "
        "the sparse regime had been counted (and the sixteen Picbreeder targets' reading changed from leaving them "
        "out to scoring them 0, commit 1782d2cc).",
        "left out",
        ("picbreeder-vs-sgd", "sp-vs-pruners"),
    ),
    Choice(
        "Muon and Adam are compared at one non-zero count per cell, fixed before the matched runs were made; but the "
        "counts (the sparser optimizer's median fit-point count) were chosen from the fit-point networks' sizes, after "
        "their scores at the fit points had been read.",
    ),
    Choice(
        "The planted depth sweep is compared at one weight sparsity per target, fixed before the matched runs "
        "(depth_matched_planted) were made; but the sparsity (the least sparse of the depths' median fit-point "
        "sparsities) was chosen from the fit-point networks' sizes, after their scores at the fit points had been "
        "read.",
    ),
    Choice(
        "The depth claim's decider did not apply the rule for networks that do not draw their label until it was "
        "fixed while depth_matched_planted was being stored, before any of its scores had been read; the fit-point "
        "and near-dense depth verdicts had been read without it.",
        "left out",
        ("depth-optimum",),
    ),
    Choice(
        "The Picbreeder depth sweep (the PNG predictor's sweet spots) still reads each depth at its own fit point, so "
        "sparsity drifts with depth there.",
    ),
    Choice(
        "The deciding judge of every EMC2 claim became the gated default (anchored-v2, fitted on verdicts by "
        "inspection and generated negatives only, commit b34c7426) after those claims' verdicts under the old default "
        "(anchored) had been read; the old default stays beside it as a robustness row.",
        "earlier default judge",
        EMC2_CLAIMS,
    ),
    Choice(
        "The judge-free readings of the pruner and optimizer claims (chunks sparse_regime_planted and "
        "optimizers_planted, their rules commit f7060acd) were fixed before their runs; the optimizer one was then "
        "read as an unmatched comparison (commit b9af512f), because SP, pruning whole units, left its networks' counts "
        "up to 5.3 % apart.",
    ),
    Choice(
        "The optimizer runs' reader gained SP's collapsed flag in commit b9af512f, after the Muon verdict had been "
        "read without it: the one rule for networks that do not draw their label then scored one collapsed Adam "
        "network 0.",
    ),
    Choice(
        "The intervals of the claims pooled over targets were widened to speak of targets like these (targets drawn, "
        "then networks; t on K − 1 degrees of freedom) after their verdicts with the targets held fixed had been read.",
        "targets held fixed",
        ("sp-vs-pruners", "depth-optimum", "muon-above-adam"),
    ),
    Choice(
        "The rule was changed to weigh m (an interval past t but short of t + m is negligible, not reproduced) after "
        "every verdict under the earlier rule had been read.",
        "earlier rule",
        EMC2_CLAIMS,
    ),
    Choice(
        "The Muon claim's loss half became a statistic of its own, with m a log10 ratio of 0.1, after the per-cell loss "
        "comparisons had been read; the claim takes the weaker of its two words.",
        "score alone",
        ("muon-above-adam",),
    ),
    Choice(
        "The scenes claim is decided on the best mean score, argued from the paper's words, after both measures and "
        "their average had been read; peak − rest is its sub-check.",
        "peak − rest",
        ("scenes-weaker",),
    ),
)

CHOICES_AFTER_DATA = tuple(c.text for c in CHOICES)


def stored_between(chunk: str, root=None) -> tuple[str, str]:
    """`(first, last)`: when the sessions that stored `chunk` began (its manifest's `sessions`)."""
    # the store's one reader of manifests: a missing, damaged or tampered one is refused in one line
    sessions = manifest.read(Path(root or stored.DEFAULT_ROOT) / chunk / manifest.MANIFEST, chunk).get("sessions") or []
    if not sessions:
        raise VolratioError(f"the manifest of chunk {chunk!r} records no session")
    starts = sorted(s["started_at"] for s in sessions)
    return starts[0], starts[-1]


def rule_table(root=None) -> pd.DataFrame:
    """One row per claim: the commit that fixed its rule and statistic, when, when its chunks were
    stored (first and last session), and whether the rule came before or after its data."""
    rows = []
    for key, c in CLAIMS.items():
        commit, at, what = CLAIM_RULE_COMMITS.get(
            key, (RULE_COMMIT, RULE_COMMITTED_AT, "the verdict rule, statistic and m")
        )
        fixed = pd.Timestamp(at)
        spans = [stored_between(ch, root) for ch in c.chunks]
        first, last = min(a for a, _ in spans), max(b for _, b in spans)
        when = (
            "before its data were stored"
            if fixed < pd.Timestamp(first)
            else "after its data were stored"
            if fixed > pd.Timestamp(last)
            else "after some of its data were stored (more were added after it)"
        )
        rows.append({"claim": key, "rule commit": commit, "it fixed": what, "rule fixed": at[:16].replace("T", " "),
                     "chunks": ", ".join(c.chunks), "data stored": f"{first[:10]} … {last[:10]}", "the rule came": when})  # fmt: skip
    return pd.DataFrame(rows).set_index("claim")
