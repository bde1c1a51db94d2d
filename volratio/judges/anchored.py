"""The label-anchored judges: "is this a <label>?" answered against the label's target image.

`AnchoredJudge` ("anchored", the library's default judge; "anchored-ssim", "anchored-pooled" and
"anchored-gated", `ANCHORED`) compares every image — the unperturbed one included — with the *target
image* of its label (`target_anchor`, or a user's own image), never with the network's own render,
so a network that never draws the label scores 0 whatever it draws. Its features, logistic model and
thresholds are the rule of `volratio.judges.anchored_rule`, fitted on the anchored verdicts
(`volratio.calibration.anchored_set`, `data/judge_reference/anchored/`), read from the package's
rule files (`volratio.judges.base.rule_path`).

"anchored-xfit" is the gated rule cross-fitted (`volratio.calibration.crossfit`): built for a
`network` of the verdict set, it reads the rule fitted without that network's fold, for any other
network the rule fitted on all rows, and its settings record the fold.

"anchored-gated" is the default's rule with a structure gate (`LogisticRule.gate`): an image whose
edges do not line up with the target's, or with much less detail than the target (a flat page in
the target's own colour, a 4×4 mosaic or a heavy blur of it, noise, another label's target), is not
the label however close its colours are; its gate is fitted on the verdicts and on generated
negatives (`volratio.calibration.hard_negatives`). "anchored", "anchored-ssim" and "anchored-pooled"
have no gate and can keep such images. The gate's detail minimum also rejects drawings that show the
label but are much blurrier than the target (the depth chapter's shallowest SP networks of the skull
and the butterfly): the verdict set holds few such drawings to fit it on. Each name keeps one meaning: the stored results under
`results/reference/` that name "anchored" were scored with its ungated rule, so the gated rule is a
judge of its own name rather than a new reading of "anchored"; deciding the claims under it means
scoring the stored networks under "anchored-gated" (`volratio reference rescore CHUNK --judge
anchored-gated` for the chunks that store their networks, a rerun of the chunks that do not).

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
        elif variant == XFIT:  # the rule fitted without this network's verdict rows (or on all rows)
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
            **({"network": self.network, "fold": self.fold} if self.name == XFIT else {}),
        }

    def __call__(self, images, label: str) -> Verdicts:
        out = super().__call__(images, label)
        out.settings["label_fitted"] = self.rule.threshold(label)[1]
        return out

    def _judge(self, images, label):
        x = as_images(images, None)  # on the images' device (on_device)
        f = features(x, self.anchor.to(x.device)[None].expand(len(x), -1, -1, -1), self.rule.needs)
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
            ("anchored", False),
            ("anchored-ssim", False),
            ("anchored", True),
            ("anchored-gated", False),
            ("anchored-xfit", False),
        ),
        strict=True,
    )
)
