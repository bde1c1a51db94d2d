"""The self-anchored judges fitted on the reference verdicts: "calibrated", "calibrated-pooled", "stability".

Each compares an image with the network's *own* unperturbed render — SSIM after 4×4 average
pooling (SSIM@4) — against thresholds fitted on the reference verdicts
(`volratio.calibration.fit_calibrated`, `data/judge_reference/`): one per label (`ReferenceCalibratedJudge`),
or the rule's one pooled threshold for every label (`PooledCalibratedJudge`, and `StabilityJudge`,
the stability measure). They measure how much the picture a network draws moves, not whether it
shows the label (`volratio.judges.SELF_ANCHORED`). Images of another size than the fit's (64×64)
are resampled to it first (`volratio.judges.base.resample`).

Chapter: "EMC2-Bench" (book/emc2.md), section "The judge, validated".
"""

from __future__ import annotations

import numpy as np

from .base import Judge, JudgeError, JudgeText, as_images, resample
from .calibrated_rule import read_rule, single_score


class ReferenceCalibratedJudge(Judge):
    """Kept ⇔ score(image, reference) ≥ the threshold for the label, with the score and thresholds
    fitted on the reference verdicts (`data/judge_reference/`, `volratio.calibration.fit_calibrated`):
    the rule with the best held-out κ. A label the set does not cover uses the rule's one
    threshold for all labels (`"*"`); the settings name the threshold used.

    The rule was fitted on images of one size (`rule.res`, 64×64: the reference verdict set's).
    Images and the reference of any other size are first resampled to that size (`resample`: area
    averaging when shrinking, bilinear when enlarging) and then scored exactly as fitted, so the
    judge is defined at every size and its thresholds keep their meaning (SSIM@4 alone would need
    ≥ 28 px and would measure structure at another scale). At the fitting size nothing is
    resampled: the scores are `calibration.score_of`'s bit for bit (tested)."""

    name = "calibrated"
    anchor_kind = "own image"
    on_device = True  # SSIM@4 on the images' device
    texts = {
        "calibrated": JudgeText(
            "stability: SSIM@4 to the own render, thresholds fitted on the first verdicts", "calibrated SSIM@4 judge"
        )
    }

    def __init__(self, reference, rule=None):
        self.reference = as_images(reference)[0]
        self.rule = rule if rule is not None else read_rule()
        self.res = self.rule.res
        self._ref = resample(self.reference, self.res)[0]  # (res, res, 3): what the images are compared with

    def settings(self) -> dict:
        return {
            "score": self.rule.score,
            "thresholds": dict(self.rule.thresholds),
            "fitted_on": dict(self.rule.fitted_on),
            "res": self.res,
            "reference_res": int(self.reference.shape[0]),
        }

    def _judge(self, images, label):
        t = self.rule.threshold(label)
        if np.isnan(t):
            raise JudgeError(f"the calibrated rule has no threshold for {label!r} and no '*' threshold")
        s = single_score(self.rule.score, resample(images, self.res), self._ref)
        return s >= t, s


class PooledCalibratedJudge(ReferenceCalibratedJudge):
    """The calibrated judge with its pooled threshold (`ThresholdRule.pooled`) for every label: SSIM@4 against
    one threshold whatever the target, so that EMC2 scores of different targets (a scene and its
    parts) are judged alike. The default judge keeps a threshold per Picbreeder target, which fits
    the reference verdicts better (higher held-out κ) but makes cross-target comparisons mix
    thresholds."""

    name = "calibrated-pooled"
    texts = {
        "calibrated-pooled": JudgeText(
            "stability: SSIM@4 to the own render, one pooled threshold", "calibrated SSIM@4 judge, pooled threshold"
        )
    }

    def __init__(self, reference, rule=None):
        super().__init__(reference, (rule if rule is not None else read_rule()).pooled())


class StabilityJudge(ReferenceCalibratedJudge):
    """*Stability*, not the compositional score: does the perturbed image stay close to the
    network's own unperturbed render (SSIM@4 against it, the calibrated rule's pooled threshold)?
    It measures how much the picture a network draws moves, whatever the picture is; no claim is
    decided by it."""

    name = "stability"
    texts = {"stability": JudgeText("stability (similarity to the network's own render)", "stability judge")}

    def __init__(self, reference, rule=None):
        super().__init__(reference, (rule if rule is not None else read_rule()).pooled())
