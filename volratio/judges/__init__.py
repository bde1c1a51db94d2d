"""Judges: "is this image still a <label>?" — one interface for EMC2-Bench (the score: `volratio.emc2.scoring`).

A judge is called on a batch of images `(B, H, W, 3)` in [0, 1] (torch or numpy) and a label, and
returns `Verdicts`: a boolean per image (identity kept), a score per image, the judge's name and
its settings — every score records which judge produced it and how it was set up. `make_judge`
builds any of them by name (`JUDGES`); `DEFAULT_JUDGE` is the label-anchored one.

Layout (every public name of the judge modules is importable from `volratio.judges`):

- `base` — the interface: `Judge`, `JudgeText`, `Verdicts`, `JudgeError`, `JudgeWeightsMissing`, the image
  conversions every judge uses (`as_images`, `to_uint8`, `image_hash`, `resample`), `base.rule_path`
  (the fitted rules, shipped in the package: `volratio/judges/rules/`) and `base.DATA_DIR` (the
  verdicts they were fitted on);
- `anchored` — `AnchoredJudge` ("anchored-v2", **the default**: aligned within 4 px, the structure
  gate refit on degraded drawings, cross-fitted by network; "anchored", the rule it replaced;
  "anchored-ssim", "anchored-pooled", "anchored-gated", the old rule with a structure gate;
  "anchored-xfit", the gated rule cross-fitted by network): label-anchored, each image compared with the label's *target image*
  (`target_anchor`);
- `stability` — the self-anchored judges fitted on the reference verdicts, SSIM@4 against the
  network's own render: `ReferenceCalibratedJudge` ("calibrated"), `PooledCalibratedJudge`
  ("calibrated-pooled"), `StabilityJudge` ("stability");
- `similarity` — batched SSIM (`ssim`, equal to scikit-image's) and `SSIMJudge` ("ssim") with its
  threshold calibrated per network against other targets, random CPPN images and noise (`calibrate`);
- `models` — `CLIPJudge` (CLIP zero-shot) and `VLMJudge` (a vision-language model asked yes/no),
  local weights only (`transformers`, the `judges` extra);
- `family` — `FamilyJudge` ("planted-family", planted targets only): an image is still the object
  when the planted DAG's own family (its link weights moved, signs and a share of each magnitude
  kept) explains its change from the network's base image; `family_fit` is that family (`Family`,
  drawing, Jacobian, the damped Levenberg–Marquardt fit, `LMConfig`);
- `registry` — `make_judge`, `JUDGES`, `DEFAULT_JUDGE`, `SELF_ANCHORED`, `anchor_of`, `default_judge`,
  `judge_class`, `judge_text`, `min_res`, `check_res` (the smallest image a judge answers for, `Judge.min_res`);
- the rules the fitted judges read (import them as modules; not re-exported here):
  `anchored_rule` (the anchored judge's features and logistic rule) and `calibrated_rule` (the
  self-anchored judges' scores and threshold rule).

The verdict sets these rules were fitted on, and the fits themselves, are `volratio.calibration`.

Chapter: "EMC2-Bench" (book/emc2.md).
"""

from __future__ import annotations

from .anchored import ANCHORED, AnchoredJudge, target_anchor
from .base import (
    MIN_RES,
    Judge,
    JudgeError,
    JudgeText,
    JudgeWeightsMissing,
    Verdicts,
    as_images,
    image_hash,
    resample,
    to_uint8,
)
from .family import FamilyConfig, FamilyJudge
from .family_fit import Family, LMConfig
from .models import (
    DEFAULT_DISTRACTORS,
    VLM_PROMPT,
    CLIPJudge,
    VLMJudge,
    clip_prompts,
    parse_answer,
    vlm_messages,
)
from .registry import (
    DEFAULT_JUDGE,
    JUDGES,
    SELF_ANCHORED,
    anchor_of,
    check_res,
    default_judge,
    judge_class,
    judge_text,
    make_judge,
    min_res,
)
from .similarity import (
    OTHER_IMAGES,
    SSIM_K1,
    SSIM_K2,
    SSIM_WIN,
    SSIMCalibration,
    SSIMJudge,
    calibrate,
    calibrated_ssim_judge,
    choose_threshold,
    identity_edits,
    negative_images,
    noise_images,
    other_target_images,
    random_cppn_images,
    roc,
    ssim,
)
from .stability import PooledCalibratedJudge, ReferenceCalibratedJudge, StabilityJudge

__all__ = [
    # base
    "Judge",
    "JudgeText",
    "Verdicts",
    "JudgeError",
    "JudgeWeightsMissing",
    "as_images",
    "to_uint8",
    "image_hash",
    "resample",
    "MIN_RES",
    # registry
    "make_judge",
    "JUDGES",
    "DEFAULT_JUDGE",
    "SELF_ANCHORED",
    "anchor_of",
    "default_judge",
    "judge_class",
    "judge_text",
    "min_res",
    "check_res",
    # anchored
    "ANCHORED",
    "AnchoredJudge",
    "target_anchor",
    # stability
    "ReferenceCalibratedJudge",
    "PooledCalibratedJudge",
    "StabilityJudge",
    # similarity
    "SSIM_WIN",
    "SSIM_K1",
    "SSIM_K2",
    "ssim",
    "SSIMJudge",
    "SSIMCalibration",
    "identity_edits",
    "random_cppn_images",
    "noise_images",
    "OTHER_IMAGES",
    "other_target_images",
    "negative_images",
    "roc",
    "choose_threshold",
    "calibrate",
    "calibrated_ssim_judge",
    # family
    "FamilyJudge",
    "FamilyConfig",
    "Family",
    "LMConfig",
    # models
    "CLIPJudge",
    "VLMJudge",
    "DEFAULT_DISTRACTORS",
    "clip_prompts",
    "VLM_PROMPT",
    "vlm_messages",
    "parse_answer",
]
