"""The judges by name: `make_judge`, the one judge factory, and what each name measures.

`JUDGES` are the names `make_judge` knows (the command line's `--judge` choices); `DEFAULT_JUDGE`
("anchored-v2", label-anchored on the target image, with the structure gate) is the library's
default everywhere;
`judge_class`, `min_res` and `check_res` say which class a name builds and the smallest image it
answers for, so that entry points refuse a smaller one before work starts; `SELF_ANCHORED` are the
judges that compare each image with the network's own render (stability, kept so that stored
results naming them re-judge); `anchor_of` says what a judge's verdicts are anchored on;
`judge_text` how the book names a judge; `default_judge` builds the default judge for a target
image. Names, anchors and texts are read from the judge classes (`CLASSES`: `Judge.texts`,
`Judge.anchor_kind`), where each is defined once.

Chapter: "EMC2-Bench" (book/emc2.md).
"""

from __future__ import annotations

from .anchored import ANCHORED, AnchoredJudge, target_anchor
from .base import Judge, JudgeError, JudgeText, as_images
from .family import FamilyJudge
from .models import CLIPJudge, VLMJudge
from .similarity import SSIMJudge, calibrated_ssim_judge
from .stability import PooledCalibratedJudge, ReferenceCalibratedJudge, StabilityJudge

# every judge class, in the order of `JUDGES`; each carries its names, what it is anchored on and
# how the book names it (`Judge.texts`, `Judge.anchor_kind`)
CLASSES = (
    AnchoredJudge,
    ReferenceCalibratedJudge,
    PooledCalibratedJudge,
    SSIMJudge,
    StabilityJudge,
    CLIPJudge,
    VLMJudge,
    FamilyJudge,
)
_BY_NAME = {name: cls for cls in CLASSES for name in cls.texts}
JUDGES = tuple(_BY_NAME)  # make_judge names
DEFAULT_JUDGE = "anchored-v2"  # the library's default everywhere: label-anchored on the target image, gated
# Judges that compare each image with the network's own unperturbed render: they measure how stable
# the picture is, not whether it shows the label (kept so that stored results naming them re-judge).
SELF_ANCHORED = tuple(name for name, cls in _BY_NAME.items() if cls.anchor_kind == "own image")


def judge_class(name: str) -> type:
    """The class `make_judge(name, …)` builds (without building it: no rule read, no weights loaded)."""
    if name not in _BY_NAME:
        raise JudgeError(f"judge {name!r}: choose one of {', '.join(JUDGES)}")
    return _BY_NAME[name]


def judge_text(name: str | None) -> JudgeText | None:
    """How the book names the judge `name` (`Judge.texts`); None for a name no judge class has."""
    cls = _BY_NAME.get(name)
    return cls.texts[name] if cls is not None else None


def min_res(name: str) -> int:
    """The smallest image (pixels per side) the judge `name` answers for (`Judge.min_res`)."""
    return int(judge_class(name).min_res)


def check_res(names, res: int, what: str = "images", error: type = JudgeError) -> None:
    """Refuse, before any work, a resolution `res` below what any of the judges `names` (one name or
    several; unknown names are left to the caller's own check) answers for: an `error` (default
    `JudgeError`) naming the judge and the smallest size it takes."""
    for name in [names] if isinstance(names, str) else list(names):
        if name not in JUDGES:
            continue
        try:
            judge_class(name).check_res(res, what)
        except JudgeError as e:
            raise error(str(e)) from None


def make_judge(
    name: str,
    reference,
    target_spec: str | None = None,
    model: str | None = None,
    seed: int = 0,
    device: str = "auto",
    anchor=None,
    network: str | None = None,
) -> Judge:
    """The one judge factory (command line, experiments, chapters), for a network whose
    unperturbed image is `reference` `(H, W, 3)`:

    - "anchored-v2" (the default, `DEFAULT_JUDGE`) and "anchored" (the default before it, no gate):
      label-anchored on the target image — `anchor`
      when given (a user's own image of what the label looks like), else the image of
      `target_spec` at the reference's size (`AnchoredJudge`); "anchored-ssim", the same question
      answered with another similarity (SSIM instead of RMSE, its own fitted thresholds), and
      "anchored-pooled", the default rule with its one pooled threshold for every label, and
      "anchored-gated", the default rule with a structure gate that rejects degenerate images
      (flat, pixelated, blurred, noise, another label's target), and "anchored-xfit", the gated
      rule cross-fitted: for `network` (a network name of the verdict set, e.g.
      "picbreeder:skull"), the rule fitted without that network's verdict rows (`ANCHORED`);
    - "clip" / "vlm": a model asked about the label, loaded from `model` (a local folder or a
      cached id; default the judge's own);
    - "planted-family" (planted targets only): is each image's change from `reference` (the
      network's unperturbed image) drawn by the planted DAG's own family, its link weights moved
      (`FamilyJudge`); it is anchored on the generator, so `anchor` is refused;
    - self-anchored, measuring *stability* (`SELF_ANCHORED`): "stability" (SSIM@4 against the own
      render, one threshold), "calibrated" (the same with per-label thresholds fitted on the first
      verdict set), "calibrated-pooled", and "ssim" (SSIM calibrated on the own render against other
      targets, `target_spec` left out, seeded by `seed`)."""
    if name in ANCHORED:
        if anchor is None and target_spec is None:
            raise JudgeError(
                "the anchored judge needs the target: give a target spec (--target) or an image of "
                "what the label looks like (--reference PNG)"
            )
        ref = as_images(reference)
        a = anchor if anchor is not None else target_anchor(target_spec, int(ref.shape[1]))
        return AnchoredJudge(a, anchor_name=str(target_spec or "image"), variant=name, network=network)
    if name == "planted-family":
        if anchor is not None:
            raise JudgeError(
                "the planted-family judge is anchored on the planted generator, not on an image: "
                "leave out the anchor image (--anchor image, no --reference PNG for the target)"
            )
        return FamilyJudge(reference, target_spec)
    if name == "ssim":
        return calibrated_ssim_judge(reference, exclude=target_spec, seed=seed)
    if name == "calibrated":  # SSIM@4 with thresholds fitted on the reference verdicts (data/judge_reference)
        return ReferenceCalibratedJudge(reference)
    if name == "calibrated-pooled":  # the same, with its one pooled threshold for every target
        return PooledCalibratedJudge(reference)
    if name == "stability":
        return StabilityJudge(reference)
    kw = {"model": model} if model else {}
    if name == "clip":
        return CLIPJudge(device=device, **kw)
    if name == "vlm":
        return VLMJudge(device=device, **kw)
    raise JudgeError(f"judge {name!r}: choose one of {', '.join(JUDGES)}")


def anchor_of(judge: Judge) -> str:
    """What a judge's verdicts are anchored on: "target" (an image of the label), "label" (a model
    asked about the label's name) or "own image" (the network's own render: stability)."""
    return judge.anchor_kind


def default_judge(anchor, anchor_name: str = "") -> AnchoredJudge:
    """The library's default judge (`DEFAULT_JUDGE`): label-anchored (`AnchoredJudge`) on the target
    image `anchor`."""
    return AnchoredJudge(anchor, anchor_name=anchor_name, variant=DEFAULT_JUDGE)
