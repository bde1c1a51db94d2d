"""The paper's claims that the book tests: the catalogue.

Each claim of Do, Shah, Le, Liu (2026) has a key, the paper's statement, the chapter (`doc`, a file
under book/) whose experiment tests it, what that experiment measures, and its one deciding
`Statistic`: a quantity pooled over the claim's settings (`volratio.util.pooling.contrast`), a
threshold t, the side of it the paper claims, and the smallest effect of interest m with the reason
for it. `Statistic.decide` gives the verdict by the rule `volratio.util.verdicts.verdict_on`
(reproduced / negligible / not reproduced / inconclusive / contradicted, or borderline), or, for a
bound-type statistic, `bound_verdict_on`; everything else a decider measures is a sub-check, shown
and never counted. `Statistic.power` says how far the interval is from deciding: its full width
beside m, and the targets and networks per target that would bring it under m. `table` lists the claims; `NO_JUDGE` are the claims measured
without an EMC2 judge. The deciders (`volratio.report.deciders`) compute each statistic, and
`volratio.report.render` shows the verdicts.

Chapter: "The paper's claims, tested" (book/claims.md).
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from ..errors import VolratioError
from ..util.verdicts import SIDES, Estimate, bound_verdict_on, verdict_on

# the EMC2 AUC differences' smallest effect of interest, and why
AUC_M = 0.1
AUC_WHY = (
    "a tenth of the AUC scale; the paper's own contrasts (a score near 0 against one well above it) are several "
    "times larger"
)


@dataclass(frozen=True)
class Statistic:
    """A claim's deciding statistic: what is measured (`name`, pooled over the claim's settings),
    the `threshold`, the side of it (`claimed`: "above" or "below") the paper claims, and the
    `smallest` effect of interest m (in the statistic's units) with `why` it is that size. `bound`:
    a bound-type statistic, where m is only a rounding tolerance, decided by
    `volratio.util.verdicts.bound_verdict_on` (reproduced as soon as its interval clears t)."""

    name: str
    threshold: float
    claimed: str
    smallest: float
    why: str
    bound: bool = False

    def __post_init__(self):
        if self.claimed not in SIDES:
            raise VolratioError(f"statistic {self.name!r}: claimed must be one of {SIDES}, got {self.claimed!r}")
        if not self.smallest > 0 or not self.why:
            raise VolratioError(f"statistic {self.name!r}: a smallest effect of interest > 0 with its reason")

    def decide(self, e: Estimate | None) -> str:
        """The verdict on the claim from the measured statistic `e` (None: not measured)."""
        rule = bound_verdict_on if self.bound else verdict_on
        return rule(e, self.threshold, self.claimed, self.smallest)

    def power(self, pooled) -> str:
        """How far a pooled statistic (`volratio.util.pooling.Pooled`, or `AboutTargets`) is from
        deciding: its full width beside m (only a width under m is sure to exclude t or t + m) and,
        when wider, what would bring it under m — for an interval about targets, the targets and
        networks per target (`AboutTargets.plan`), else the networks per cell."""
        width = 2 * pooled.half_width
        if not width == width:  # NaN: too few networks for an interval
            return f"no interval (one network per cell); m = {self.smallest:g}"
        targets = getattr(pooled, "targets", 0)
        per = f"{pooled.units:.0f} networks per cell"
        text = f"full width {width:.3f} against m = {self.smallest:g}, with " + (
            f"{targets} targets, {per}" if targets else per
        )
        if width < self.smallest:
            return text + " (narrow enough to decide)"
        if targets:
            plan = pooled.plan(self.smallest)
            if plan is None:
                return text + "; no plan up to 400 targets would bring it under m"
            return text + f"; about {plan[0]} targets, {plan[1]} networks per cell, would bring it under m"
        return text + f"; about {pooled.needed(self.smallest)} per cell would bring it under m"

    def sentence(self, e: Estimate | None, fmt: str = "+.3f") -> str:
        """ "<name> = mean [lo, hi] (the claim: above <threshold>)", or "<name>: not measured"."""
        if e is None:
            return f"{self.name}: not measured"
        return (
            f"{self.name} = {e.mean:{fmt}} [{e.lo:{fmt}}, {e.hi:{fmt}}] (the claim: {self.claimed} {self.threshold:g})"
        )


@dataclass(frozen=True)
class Claim:
    key: str
    statement: str  # the paper's claim, in our words
    chapter: str  # title of the chapter whose experiment tests it
    experiment: str  # what we measure
    doc: str  # the chapter's file under book/ (the claims page pastes the verdict glued there)
    statistic: Statistic  # the one quantity that decides the verdict
    chunks: tuple = ()  # the stored chunks (results/reference/<chunk>) whose networks decide it
    also: tuple = ()  # the statistics of the claim's further statements; its word is the weakest of all (`weaker`)

    def statistics(self) -> tuple:
        """Every statistic the claim is decided on: its deciding one, then `also`."""
        return (self.statistic, *self.also)


CLAIMS: dict[str, Claim] = {
    c.key: c
    for c in [
        Claim(
            "picbreeder-vs-sgd",
            "Picbreeder networks score high on EMC2-Bench; dense SGD networks score near 0.",
            "EMC2-Bench",
            "EMC2 score of the layerized genomes vs the FER SGD and our dense networks",
            "emc2",
            Statistic(
                "EMC2 AUC of the Picbreeder network minus the SGD-trained networks', mean over the targets",
                0.0,
                "above",
                AUC_M,
                AUC_WHY,
            ),
            ("twins16", "twins16_picbreeder", "emc2", "emc2_dense"),
        ),
        Claim(
            "sp-vs-pruners",
            "Only similarity-based pruning scores above 0; Lottery Ticket, Wanda and LLM-Pruner score 0.",
            "Connectivity: which connections remain",
            "EMC2 score of SP and each baseline at matched sparsity, over seeds",
            "connectivity",
            Statistic(
                "EMC2 AUC of SP minus the strongest baseline's, over targets, checkpoints and networks",
                0.0,
                "above",
                AUC_M,
                AUC_WHY,
            ),
            ("sparse_regime", "sparse_regime_more"),
        ),
        Claim(
            "depth-optimum",
            "The compositional score peaks at a target-specific depth; shallower and deeper networks fail.",
            "Depth: a narrow, target-dependent regime",
            "EMC2 score vs depth per target, with intervals over seeds",
            "depth",
            Statistic(
                "EMC2 AUC at the true depth L* minus the higher of the shallower and the deeper depths' mean, over planted "
                "targets and seeds (the peak must lie above both its sides), every depth of a target pruned by SP to one "
                "weight sparsity (the least sparse of its depths' median fit-point sparsities)",
                0.0,
                "above",
                AUC_M,
                AUC_WHY,
            ),
            ("depth_matched_planted",),
        ),
        Claim(
            "muon-above-adam",
            "Muon reaches a lower loss and a higher compositional score than Adam.",
            "Optimization: Adam, Muon, SGD",
            "final loss and EMC2 score of Adam, Muon and SGD at the sweet spot",
            "optimization",
            Statistic(
                "EMC2 AUC of Muon minus Adam's, each at its best setting by dense MSE, both pruned by SP to one "
                "non-zero count per target × depth cell (the sparser optimizer's median fit-point count), pooled over "
                "the cells",
                0.0,
                "above",
                AUC_M,
                AUC_WHY,
            ),
            ("optimizers_matched",),
            (
                Statistic(
                    "log10 of Muon's final dense MSE over Adam's, each at its best setting by dense MSE, pooled "
                    "over the same cells",
                    0.0,
                    "below",
                    0.1,
                    "Muon's MSE lower by a fifth (10^-0.1 = 0.79), pre-registered for the sixteen targets; chosen after the "
                    "per-cell loss comparisons had been read",
                ),
            ),
        ),
        Claim(
            "png-ratio-linear",
            "The PNG compression ratio of a target is linear in its sweet-spot depth.",
            "Depth: a narrow, target-dependent regime",
            "linear fit of sweet-spot depth on PNG ratio: R², leave-one-out error",
            "depth",
            Statistic(
                "slope of the sweet-spot depth on the PNG ratio, in layers per unit of ratio (a less compressible, more complex target deeper)",
                0.0,
                "below",
                0.25,
                "one layer of depth over the planted targets' span of about four units of PNG ratio",
            ),
            ("depth_sparse_planted", "depth_sparse_picbreeder"),
        ),
        Claim(
            "rho-concentrated",
            "ρ(W, L) is concentrated at (W_min, L*) and decays exponentially away from it.",
            "The volume-ratio argument",
            "Monte Carlo ρ over a (W, L) grid on Boolean targets",
            "volume_ratio",
            Statistic(
                "the slowest decay rate λ of ρ away from (W_min, L*), over the Boolean targets and both axes",
                0.0,
                "above",
                0.1,
                "ρ falling by a tenth per unit of width or depth; slower than that is no concentration",
            ),
            ("rho", "rho_basin", "rho_deep", "rho_deep_wmin", "rho_wmin"),
        ),
        Claim(
            "welch-r-le-d",
            "Monosemantic (orthogonal) features are feasible only when r ≤ d.",
            "Feature interference and the Welch bound",
            "coherence of frames and learned features against the Welch bound",
            "welch",
            Statistic(
                "the smallest ratio of a constructed frame's coherence to the Welch bound",
                1 - 1e-9,
                "above",
                1e-6,
                "an exact bound: only rounding separates a frame at the bound from one below it",
                bound=True,
            ),
            ("welch_frames", "welch_toy"),
        ),
        Claim(
            "scenes-weaker",
            "The effect is weaker for multi-object scenes.",
            "Unknown targets",
            "compositional score on single-object images vs scenes",
            "unknown_targets",
            Statistic(
                "EMC2 score of the scene minus the mean of its parts', mean over the scenes and effect sizes",
                0.0,
                "below",
                AUC_M,
                AUC_WHY,
            ),
            ("depth_sparse_scenes", "depth_sparse_picbreeder"),
        ),
    ]
}


# claims that can be measured without an EMC2 judge (the predictor: on true depths; on measured sweet
# spots it names the judge that found them)
NO_JUDGE = ("rho-concentrated", "welch-r-le-d", "png-ratio-linear")


def table():
    """One row per claim: statement, the chapter (and its file) whose experiment tests it, what it
    measures, and its deciding statistic with the side of the threshold the paper claims and its
    smallest effect of interest."""
    rows = [
        {
            "claim": c.statement,
            "chapter": c.chapter,
            "doc": f"book/{c.doc}.md",
            "experiment": c.experiment,
            "deciding statistic": c.statistic.name,
            "claimed": f"{c.statistic.claimed} {c.statistic.threshold:g}",
            "smallest effect of interest": f"{c.statistic.smallest:g}: {c.statistic.why}",
        }
        for c in CLAIMS.values()
    ]
    return pd.DataFrame(rows, index=list(CLAIMS))
