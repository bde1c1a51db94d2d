"""The label-anchored judges: "is this a <label>?" answered against the label's target image.

`AnchoredJudge` (`ANCHORED`: "anchored-v2", **the library's default judge**; "anchored", the default
before it; "anchored-ssim", "anchored-pooled", "anchored-gated" and "anchored-xfit") compares every
image — the unperturbed one included — with the *target image* of its label (`target_anchor`, or a
user's own image), never with the network's own render, so a network that never draws the label
scores 0 whatever it draws. Its features, logistic model and thresholds are the rule of
`volratio.judges.anchored_rule`, fitted on the anchored verdicts (`volratio.calibration.anchored_set`,
`data/judge_reference/anchored/`), read from the package's rule files (`volratio.judges.base.rule_path`).

- "anchored" has no gate: it can keep a flat page in the target's own colour, a 4×4 mosaic or a
  heavy blur of it. "anchored-ssim" and "anchored-pooled" neither.
- "anchored-gated" adds a structure gate (`LogisticRule.gate`): an image whose edges do not line up
  with the target's, or with much less detail than the target (a flat page, a mosaic, a heavy blur,
  noise, another label's target), is not the label however close its colours are. Its gate, fitted
  on the first verdict set and the generated negatives (`volratio.calibration.hard_negatives`), also
  rejects drawings that plainly show the label but are blurrier, fainter or a few pixels off.
- "anchored-xfit" is that gated rule cross-fitted by network (`volratio.calibration.crossfit`):
  built for a `network` of the verdict set, it reads the rule fitted without that network's fold, for
  any other network the rule fitted on all rows; its settings record the fold.
- "anchored-v2", the default, aligns each image to the target within 4 pixels first
  (`anchored_rule.align`) and fits its gate on the recognisable degraded drawings too
  (`volratio.calibration.degraded`, `volratio.calibration.fit_v2`), among the gates that reject every
  generated negative; it is cross-fitted as "anchored-xfit" is.

Each name keeps one meaning: stored results that name "anchored" were scored with its ungated rule
and still re-judge under it; deciding a claim under the default means scoring its stored networks
under "anchored-v2" (`volratio reference rescore CHUNK --judge anchored-v2`).

Chapter: "EMC2-Bench" (book/emc2.md), section "The judge, validated".
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import torch

from ..data.targets import get_target
from .anchored_rule import features, read_crossfit, read_rule
from .base import Judge, JudgeError, JudgeText, Verdicts, as_images, rule_path

XFIT = "anchored-xfit"  # the cross-fitted judge: its rule depends on the network scored
V2 = "anchored-v2"  # the default judge: aligned, gated, refit on degraded drawings, cross-fitted likewise
CROSSFITTED = (XFIT, V2)  # judges whose rule depends on the network scored (`CrossFit.rule_for`)


class AnchoredJudge(Judge):
    """ "Is this a <label>?" answered against the label's *target image* (`anchor`): the image
    shows the label ⇔ p(image, anchor) ≥ the label's threshold, with the features, the logistic
    model and the thresholds of the rule fitted on the anchored verdicts
    (`volratio.judges.anchored_rule`, `data/judge_reference/anchored/`). Any image size (brought to the
    rule's size first). A label the verdicts do not cover gets the pooled threshold, and the
    settings say so (`"label_fitted": False`). This is the library's default judge: a network
    that never draws the label scores 0, whatever it draws."""

    name = "anchored"
    anchor_kind = "target"  # compared with the target image, not with the network's own render
    on_device = True  # features on the images' device: a GPU batch is judged on the GPU
    texts = {  # one per variant of `ANCHORED`
        "anchored-v2": JudgeText(
            "label-anchored judge v2 (the default): aligned, gate refit on degraded drawings, cross-fitted",
            "label-anchored judge v2 (gated default)",
            "gated default judge",
        ),
        "anchored": JudgeText(
            "label-anchored judge: each image against the target image", "label-anchored judge", "RMSE judge"
        ),
        "anchored-ssim": JudgeText(
            "label-anchored judge, SSIM against the target image", "label-anchored SSIM judge", "SSIM judge"
        ),
        "anchored-pooled": JudgeText(
            "label-anchored judge, one threshold for every label",
            "label-anchored judge, pooled threshold",
            "pooled judge",
        ),
        "anchored-gated": JudgeText(
            "label-anchored judge with a structure gate (edges and detail against the target image)",
            "label-anchored gated judge",
            "gated judge",
        ),
        "anchored-xfit": JudgeText(
            "label-anchored gated judge, cross-fitted by network",
            "label-anchored cross-fitted judge",
            "cross-fitted judge",
        ),
    }

    def __init__(self, anchor, rule=None, anchor_name: str = "", variant: str = "anchored", network: str | None = None):
        if variant not in ANCHORED:
            raise JudgeError(f"anchored judge {variant!r}: choose one of {', '.join(ANCHORED)}")
        self.name = variant
        self.anchor = as_images(anchor)[0]  # (H, W, 3)
        self.anchor_name = str(anchor_name)
        self.network, self.fold = network, None
        stored, pooled = ANCHORED[variant]
        if rule is not None:
            self.rule = rule
        elif variant in CROSSFITTED:  # the rule fitted without this network's verdict rows (or on all rows)
            self.rule, self.fold = read_crossfit(rule_path(stored)).rule_for(network)
        else:
            self.rule = read_rule(rule_path(stored))
        if pooled:
            self.rule = replace(self.rule, thresholds={"*": self.rule.thresholds["*"]})

    def settings(self) -> dict:
        return {
            "anchor": self.anchor_name or "image",
            "anchor_res": int(self.anchor.shape[0]),
            "rule": self.rule.name,
            "thresholds": dict(self.rule.thresholds),
            "fitted_on": dict(self.rule.fitted_on),
            **({"gate": dict(self.rule.gate)} if self.rule.gate else {}),
            **({"shift": int(self.rule.shift)} if self.rule.shift else {}),
            **({"network": self.network, "fold": self.fold} if self.name in CROSSFITTED else {}),
        }

    def __call__(self, images, label: str) -> Verdicts:
        out = super().__call__(images, label)
        out.settings["label_fitted"] = self.rule.threshold(label)[1]
        return out

    def _judge(self, images, label):
        x = as_images(images, None)  # on the images' device (on_device)
        f = features(x, self.anchor.to(x.device)[None].expand(len(x), -1, -1, -1), self.rule.needs, self.rule.shift)
        return self.rule.predict(f, [label] * len(x)), self.rule.score(f)


def target_anchor(target_spec: str, res: int) -> torch.Tensor:
    """`(res, res, 3)` the target image a label-anchored judge compares with (`volratio.data.targets`)."""
    return as_images(np.asarray(get_target(target_spec).image(res)))[0]


# the label-anchored judges, in the order of `AnchoredJudge.texts`: name -> (stored rule,
# `volratio.judges.base.rule_path`; one pooled threshold for every label)
ANCHORED = dict(
    zip(
        AnchoredJudge.texts,
        (
            ("anchored-v2", False),
            ("anchored", False),
            ("anchored-ssim", False),
            ("anchored", True),
            ("anchored-gated", False),
            ("anchored-xfit", False),
        ),
        strict=True,
    )
)
