"""Judges: "is this image still a <label>?" — one interface for EMC2-Bench (DESIGN §3.4).

A judge is called on a batch of images `(B, H, W, 3)` in [0, 1] (torch or numpy) and a label, and
returns `Verdicts`: a boolean per image (identity kept), a score per image, the judge's name and
its settings — every score records which judge produced it and how it was set up.

- `ReferenceCalibratedJudge` ("calibrated") — **the default** (`DEFAULT_JUDGE`, `make_judge`):
  SSIM after 4×4 average pooling (SSIM@4) against the unperturbed image, with per-label thresholds
  fitted on the reference verdicts (`volratio.judge_calibration`, `data/judge_reference/`; held-out
  κ 0.69). Images of another size than the fit's (64×64) are resampled to it first.
- `SSIMJudge` ("ssim") — offline, deterministic, no downloaded weights. The score is the
  structural similarity (Wang et al. 2004) of each image to the *unperturbed network's image*,
  computed exactly as `skimage.metrics.structural_similarity(..., data_range=1, channel_axis=-1)`
  (7×7 uniform window, K1 = 0.01, K2 = 0.03, sample covariance; tested against it) but batched
  in torch. The identity is kept when SSIM ≥ a threshold calibrated per target by `calibrate`:
  identity-preserving edits of the reference (small shifts, scalings, brightness changes) against
  identity-destroying images (other targets, random CPPN images drawn by random `CoordMLP`s, noise);
  the threshold maximises Youden's J = TPR − FPR on that ROC (ties: the middle of the tied range).
- `CLIPJudge` — CLIP zero-shot (Radford et al. 2021): the label's prompt against distractor prompts.
- `VLMJudge` — a vision-language model asked a yes/no question (the paper used
  Qwen/Qwen3-VL-4B-Thinking); any local `image-text-to-text` model works.

The CLIP and VLM judges need `transformers` (the `judges` extra; imported only when used) and load
weights **only** from a local folder or the Hugging Face cache (`local_files_only=True`). When the
weights are absent they raise `JudgeWeightsMissing`, which says how to provide them; they never fall
back to another judge. Both are batched and cache verdicts by image hash.

Chapter: "EMC2-Bench" (book/emc2.md).
"""

from __future__ import annotations

import functools
import hashlib
import re
from dataclasses import dataclass, field, replace

import numpy as np
import torch

from .errors import DataNotFoundError, VolratioError

# ---------------------------------------------------------------------------------------------
# Interface


class JudgeError(VolratioError):
    """A judge that cannot run as configured."""


class JudgeWeightsMissing(JudgeError, DataNotFoundError):
    """A judge's model weights (or `transformers` itself) are not available locally."""


@dataclass
class Verdicts:
    verdicts: np.ndarray  # (B,) bool: the identity is kept
    scores: np.ndarray  # (B,) float: the judge's score (SSIM, p(label), 1/0 for yes/no)
    judge: str  # judge name
    settings: dict = field(default_factory=dict)  # everything that determines the verdicts


def as_images(images) -> torch.Tensor:
    """`(B, H, W, 3)` float64 CPU tensor in [0, 1] from a torch/numpy batch (or one `(H, W, 3)` image)."""
    t = torch.as_tensor(np.asarray(images) if not torch.is_tensor(images) else images)
    if t.dim() == 3:
        t = t[None]
    if t.dim() != 4 or t.shape[-1] != 3:
        raise JudgeError(f"judges take images of shape (B, H, W, 3) in [0, 1]; got {tuple(t.shape)}")
    return t.detach().to("cpu", torch.float64)


def to_uint8(images) -> np.ndarray:
    """`(B, H, W, 3)` uint8 (`volratio.util.images.to_uint8`, rounding as PNG export does)."""
    from .util.images import to_uint8 as quantise

    return quantise(as_images(images))


def image_hash(img_u8: np.ndarray) -> str:
    """sha256 of one uint8 image (shape included): the cache key of the model judges."""
    h = hashlib.sha256(str(img_u8.shape).encode())
    h.update(np.ascontiguousarray(img_u8).tobytes())
    return h.hexdigest()


class Judge:
    """Base class: subclasses set `name` and implement `_judge(images, label) -> (verdicts, scores)`."""

    name = "judge"

    def settings(self) -> dict:
        return {}

    def __call__(self, images, label: str) -> Verdicts:
        v, s = self._judge(images, label)
        return Verdicts(np.asarray(v, bool), np.asarray(s, float), self.name, {**self.settings(), "label": label})

    def _judge(self, images, label):  # pragma: no cover - abstract
        raise NotImplementedError


# ---------------------------------------------------------------------------------------------
# SSIM (batched, equal to skimage.metrics.structural_similarity)

SSIM_WIN, SSIM_K1, SSIM_K2 = 7, 0.01, 0.03


def ssim(images, reference) -> np.ndarray:
    """`(B,)` mean SSIM of each image against `reference` `(H, W, 3)`, data range 1, per-channel
    then averaged — the numbers of `skimage.metrics.structural_similarity(img, ref, data_range=1,
    channel_axis=-1)`, computed for the whole batch at once."""
    x = as_images(images).permute(0, 3, 1, 2)  # (B, 3, H, W)
    y = as_images(reference).permute(0, 3, 1, 2).expand_as(x)
    if x.shape[-1] < SSIM_WIN or x.shape[-2] < SSIM_WIN:
        raise JudgeError(f"SSIM needs images of at least {SSIM_WIN}×{SSIM_WIN}; got {tuple(x.shape[-2:])}")
    n = SSIM_WIN * SSIM_WIN
    # window means over the valid (cropped) region, all five statistics at once, by summed-area tables
    stats = torch.stack([x, y, x * x, y * y, x * y], dim=1)  # (B, 5, 3, H, W)
    S = torch.nn.functional.pad(stats.cumsum(-1).cumsum(-2), (1, 0, 1, 0))
    k = SSIM_WIN
    m = (S[..., k:, k:] - S[..., :-k, k:] - S[..., k:, :-k] + S[..., :-k, :-k]) / n
    ux, uy, uxx, uyy, uxy = m.unbind(1)
    cov = n / (n - 1.0)
    vx = cov * (uxx - ux * ux)
    vy = cov * (uyy - uy * uy)
    vxy = cov * (uxy - ux * uy)
    c1, c2 = (SSIM_K1 * 1.0) ** 2, (SSIM_K2 * 1.0) ** 2
    s = ((2 * ux * uy + c1) * (2 * vxy + c2)) / ((ux * ux + uy * uy + c1) * (vx + vy + c2))
    return s.mean(dim=(1, 2, 3)).numpy()


class SSIMJudge(Judge):
    """Identity kept ⇔ SSIM(image, reference) ≥ threshold. Build it with `calibrated_ssim_judge`."""

    name = "ssim"

    def __init__(self, reference, threshold: float, calibration: "Calibration | None" = None):
        self.reference = as_images(reference)[0]
        self.threshold = float(threshold)
        self.calibration = calibration

    def settings(self) -> dict:
        s = {
            "threshold": self.threshold,
            "window": SSIM_WIN,
            "K1": SSIM_K1,
            "K2": SSIM_K2,
            "reference_res": int(self.reference.shape[0]),
        }
        if self.calibration is not None:
            s["calibration"] = self.calibration.summary()
        return s

    def _judge(self, images, label):
        s = ssim(images, self.reference)
        return s >= self.threshold, s


# ---------------------------------------------------------------------------------------------
# Calibration of the SSIM threshold


def identity_edits(reference) -> dict[str, torch.Tensor]:
    """Identity-preserving edits of `reference` `(H, W, 3)`: shifts by 1, 2 and ~4% of the width in
    four directions, scalings about the centre by 0.9–1.1, brightness ×0.85–1.15 and ±0.05."""
    from scipy import ndimage

    ref = as_images(reference)[0].numpy()
    H = ref.shape[0]
    out = {}
    for s in sorted({1, 2, max(1, round(0.04 * H))}):
        for dy, dx, tag in ((s, 0, "down"), (-s, 0, "up"), (0, s, "right"), (0, -s, "left")):
            out[f"shift {tag} {s}px"] = ndimage.shift(ref, (dy, dx, 0), order=0, mode="nearest")
    c = (H - 1) / 2.0
    for z in (0.9, 0.95, 1.05, 1.1):
        m = np.diag([1 / z, 1 / z, 1.0])
        off = np.array([c - c / z, c - c / z, 0.0])
        out[f"scale ×{z}"] = ndimage.affine_transform(ref, m, offset=off, order=1, mode="nearest")
    for f in (0.85, 0.9, 1.1, 1.15):
        out[f"brightness ×{f}"] = ref * f
    for b in (-0.05, 0.05):
        out[f"brightness {b:+.2f}"] = ref + b
    return {k: torch.from_numpy(np.clip(v, 0, 1)) for k, v in out.items()}


def random_cppn_images(res: int, n: int = 12, seed: int = 0) -> dict[str, torch.Tensor]:
    """Images drawn by random Picbreeder-style CoordMLPs (depth 2–6, mixed activations), seeded."""
    from .nets import CoordMLP

    out = {}
    for k in range(n):
        depth = 2 + k % 5
        net = CoordMLP(f"{depth};gaussian:4,sin:2,sigmoid:2", head="hsv", seed=seed * 1000 + k, init_scale=2.0)
        with torch.no_grad():
            out[f"random CPPN {k} (depth {depth})"] = net.render(res)[0].double()
    return out


def noise_images(res: int, n: int = 4, seed: int = 0) -> dict[str, torch.Tensor]:
    """Uniform noise and smoothed noise, seeded."""
    from scipy import ndimage

    from .util.device import generator

    g = generator(seed)
    out = {}
    for k in range(n):
        u = torch.rand(res, res, 3, generator=g, dtype=torch.float64)
        out[f"uniform noise {k}"] = u
        sm = ndimage.gaussian_filter(u.numpy(), sigma=(2 + k, 2 + k, 0))
        sm = (sm - sm.min()) / max(sm.max() - sm.min(), 1e-12)
        out[f"smooth noise {k}"] = torch.from_numpy(sm)
    return out


OTHER_IMAGES = ("image:camera", "image:astronaut", "image:coffee", "image:chelsea", "image:moon", "image:coins")


def other_target_images(res: int, exclude: str | None = None) -> dict[str, torch.Tensor]:
    """Images of other targets: the Picbreeder targets (when the data is available) and a few
    scikit-image photographs, all but `exclude`."""
    return {s: img.clone() for s, img in _target_images(res) if s != exclude}


@functools.lru_cache(maxsize=8)
def _target_images(res: int) -> tuple:
    """`((spec, image), …)` of every candidate target at `res` (rendered once per resolution)."""
    from .data import picbreeder
    from .data.targets import get_target

    specs = [f"picbreeder:{n}" for n in picbreeder.NAMES] if picbreeder.available() else []
    specs += list(OTHER_IMAGES)
    return tuple((s, get_target(s).image(res).double()) for s in specs)


@dataclass
class Calibration:
    threshold: float
    auc: float  # area under the ROC (1 = the score separates the two sets perfectly)
    fpr: np.ndarray  # ROC points, one per candidate threshold (descending thresholds)
    tpr: np.ndarray
    thresholds: np.ndarray
    positive: dict  # edit name -> score (identity-preserving)
    negative: dict  # image name -> score (identity-destroying)

    def summary(self) -> dict:
        return {
            "threshold": self.threshold,
            "roc_auc": self.auc,
            "n_positive": len(self.positive),
            "n_negative": len(self.negative),
            "min_positive": float(min(self.positive.values())),
            "max_negative": float(max(self.negative.values())),
        }


def roc(pos: np.ndarray, neg: np.ndarray):
    """ROC of the rule "score ≥ t": `(fpr, tpr, thresholds, auc)`, thresholds descending (from +∞)."""
    pos, neg = np.asarray(pos, float), np.asarray(neg, float)
    th = np.r_[np.inf, np.unique(np.r_[pos, neg])[::-1]]
    tpr = np.array([(pos >= t).mean() for t in th])
    fpr = np.array([(neg >= t).mean() for t in th])
    return fpr, tpr, th, float(np.trapezoid(tpr, fpr))


def choose_threshold(pos: np.ndarray, neg: np.ndarray) -> float:
    """The threshold maximising Youden's J = TPR − FPR among midpoints between consecutive distinct
    scores; ties resolved by the middle candidate of the tied ones (deterministic)."""
    s = np.unique(np.r_[pos, neg])
    cands = np.r_[s[0] - 1e-9, (s[:-1] + s[1:]) / 2, s[-1] + 1e-9]
    J = np.array([(pos >= t).mean() - (neg >= t).mean() for t in cands])
    best = np.flatnonzero(J >= J.max() - 1e-12)
    return float(cands[best[len(best) // 2]])


@functools.lru_cache(maxsize=16)
def _negatives(res: int, seed: int) -> tuple:
    """`((name, image), …)`: every identity-destroying image at `res` (computed once per process)."""
    images = {**dict(_target_images(res)), **random_cppn_images(res, seed=seed), **noise_images(res, seed=seed)}
    return tuple(images.items())


def negative_images(res: int, exclude: str | None = None, seed: int = 0) -> dict[str, torch.Tensor]:
    """The identity-destroying set of `calibrate`: other targets (all but `exclude`), random CPPN
    images and noise, seeded by `seed` (shared tensors: do not modify them)."""
    return {k: v for k, v in _negatives(int(res), int(seed)) if k != exclude}


def calibrate(reference, negatives: dict | None = None, exclude: str | None = None, seed: int = 0) -> Calibration:
    """Calibrate the SSIM threshold for one reference image (see the module docstring).
    `negatives` default: `negative_images(res, exclude, seed)`."""
    ref = as_images(reference)[0]
    res = ref.shape[0]
    pos = identity_edits(ref)
    if negatives is None:
        negatives = negative_images(res, exclude, seed)
    ps = dict(zip(pos, ssim(torch.stack(list(pos.values())), ref).tolist()))
    ns = dict(zip(negatives, ssim(torch.stack([as_images(v)[0] for v in negatives.values()]), ref).tolist()))
    fpr, tpr, th, auc = roc(np.array(list(ps.values())), np.array(list(ns.values())))
    t = choose_threshold(np.array(list(ps.values())), np.array(list(ns.values())))
    return Calibration(t, auc, fpr, tpr, th, ps, ns)


def calibrated_ssim_judge(reference, exclude: str | None = None, seed: int = 0) -> SSIMJudge:
    """An `SSIMJudge` for `reference` with its threshold from `calibrate(reference, exclude=…)`."""
    cal = calibrate(reference, exclude=exclude, seed=seed)
    return SSIMJudge(reference, cal.threshold, cal)


JUDGES = (
    "anchored",
    "anchored-ssim",
    "anchored-pooled",
    "calibrated",
    "calibrated-pooled",
    "ssim",
    "stability",
    "clip",
    "vlm",
)  # make_judge names
DEFAULT_JUDGE = "anchored"  # the library's default everywhere: label-anchored on the target image
# Judges that compare each image with the network's own unperturbed render: they measure how stable
# the picture is, not whether it shows the label (kept so that stored results naming them re-judge).
SELF_ANCHORED = ("calibrated", "calibrated-pooled", "ssim", "stability")


def target_anchor(target_spec: str, res: int) -> torch.Tensor:
    """`(res, res, 3)` the target image a label-anchored judge compares with (`volratio.data.targets`)."""
    from .data.targets import get_target

    return as_images(np.asarray(get_target(target_spec).image(res)))[0]


def make_judge(
    name: str,
    reference,
    target_spec: str | None = None,
    model: str | None = None,
    seed: int = 0,
    device: str = "auto",
    anchor=None,
) -> Judge:
    """The one judge factory (command line, experiments, chapters), for a network whose
    unperturbed image is `reference` `(H, W, 3)`:

    - "anchored" (the default, `DEFAULT_JUDGE`): label-anchored on the target image — `anchor`
      when given (a user's own image of what the label looks like), else the image of
      `target_spec` at the reference's size (`AnchoredJudge`); "anchored-ssim", the same question
      answered with another similarity (SSIM instead of RMSE, its own fitted thresholds), and
      "anchored-pooled", the default rule with its one pooled threshold for every label (`ANCHORED`);
    - "clip" / "vlm": a model asked about the label, loaded from `model` (a local folder or a
      cached id; default the judge's own);
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
        return AnchoredJudge(a, anchor_name=str(target_spec or "image"), variant=name)
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
    if getattr(judge, "anchor_kind", None) == "target":
        return "target"
    if judge.name in SELF_ANCHORED:
        return "own image"
    return "label"


# ---------------------------------------------------------------------------------------------
# Model judges (transformers)

_HOW_TO = (
    "volratio never downloads judge weights on its own and never falls back to another judge. To "
    "provide them: on a machine with network run `hf download {model}` (or "
    "`huggingface-cli download {model}`) and copy the Hugging Face cache (~/.cache/huggingface) here "
    "or point HF_HOME at it; or save the model to a folder and pass that folder as the model "
    "(`--judge-model PATH`, or {cls}(model='PATH')). Without weights, use the offline judge "
    "(`--judge calibrated`)."
)


def _transformers():
    try:
        import transformers
    except ImportError as e:
        raise JudgeWeightsMissing(
            "the CLIP and VLM judges need the `transformers` package: pip install 'volratio[judges]'"
        ) from e
    return transformers


def _load(auto_model: str, model: str, cls_name: str, cache_dir=None):
    tf = _transformers()
    try:
        m = getattr(tf, auto_model).from_pretrained(model, local_files_only=True, cache_dir=cache_dir)
        p = tf.AutoProcessor.from_pretrained(model, local_files_only=True, cache_dir=cache_dir)
    except (OSError, ValueError) as e:
        raise JudgeWeightsMissing(
            f"{cls_name}: no local weights for {model!r} ({type(e).__name__}: {str(e).splitlines()[0]}). "
            + _HOW_TO.format(model=model, cls=cls_name)
        ) from e
    m.eval()
    return m, p


def _pil_batch(images_u8: np.ndarray, size: int | None):
    """PIL images from a uint8 batch `(B, H, W, 3)`, resized to size×size (bicubic) when given."""
    from PIL import Image

    out = []
    for a in images_u8:
        im = Image.fromarray(a)
        if size and im.size != (size, size):
            im = im.resize((size, size), Image.Resampling.BICUBIC)
        out.append(im)
    return out


class _CachedModelJudge(Judge):
    """Batching and the per-image-hash cache shared by the model judges."""

    batch_size = 16

    def __init__(self):
        self._cache: dict[tuple[str, str], tuple[bool, float]] = {}
        self.cache_hits = 0

    def _judge(self, images, label):
        u8 = to_uint8(images)
        keys = [(image_hash(a), label) for a in u8]
        todo = [i for i, k in enumerate(keys) if k not in self._cache]
        self.cache_hits += len(keys) - len(todo)
        uniq, seen = [], set()
        for i in todo:
            if keys[i] not in seen:
                seen.add(keys[i])
                uniq.append(i)
        for a in range(0, len(uniq), self.batch_size):
            part = uniq[a : a + self.batch_size]
            v, s = self._run(u8[part], label)
            for i, vi, si in zip(part, v, s):
                self._cache[keys[i]] = (bool(vi), float(si))
        got = [self._cache[k] for k in keys]
        return [g[0] for g in got], [g[1] for g in got]

    def _run(self, images_u8: np.ndarray, label: str):  # pragma: no cover - abstract
        raise NotImplementedError


DEFAULT_DISTRACTORS = ("abstract pattern", "noise", "animal", "face", "landscape", "fruit", "insect", "building")


def clip_prompts(label: str, distractors=DEFAULT_DISTRACTORS, template: str = "a picture of a {}") -> list[str]:
    """The zero-shot prompts: the label's first, then one per distractor that is not the label."""
    return [template.format(label)] + [template.format(d) for d in distractors if d != label]


class CLIPJudge(_CachedModelJudge):
    """CLIP zero-shot: kept ⇔ the label's prompt has the highest probability among the prompts
    (or p(label) ≥ `threshold` when one is given). Score: p(label)."""

    name = "clip"

    def __init__(
        self,
        model: str = "openai/clip-vit-base-patch32",
        distractors=DEFAULT_DISTRACTORS,
        template: str = "a picture of a {}",
        threshold: float | None = None,
        image_size: int = 224,
        device: str = "auto",
        batch_size: int = 32,
        cache_dir=None,
        model_obj=None,
        processor_obj=None,
    ):
        super().__init__()
        from .util.device import resolve_device

        self.model_id, self.distractors, self.template = model, tuple(distractors), template
        self.threshold, self.image_size, self.batch_size = threshold, image_size, batch_size
        self.device = resolve_device(device)
        if model_obj is None:
            model_obj, processor_obj = _load("AutoModel", model, "CLIPJudge", cache_dir)
        self.model, self.processor = model_obj.to(self.device), processor_obj

    def settings(self) -> dict:
        return {
            "model": self.model_id,
            "distractors": list(self.distractors),
            "template": self.template,
            "threshold": self.threshold,
            "image_size": self.image_size,
        }

    @torch.no_grad()
    def _run(self, images_u8, label):
        prompts = clip_prompts(label, self.distractors, self.template)
        inp = self.processor(
            text=prompts, images=_pil_batch(images_u8, self.image_size), return_tensors="pt", padding=True
        )
        inp = {k: v.to(self.device) for k, v in inp.items()}
        p = self.model(**inp).logits_per_image.softmax(dim=-1).cpu().double()  # (B, n_prompts)
        s = p[:, 0].numpy()
        v = s >= self.threshold if self.threshold is not None else (p.argmax(dim=-1) == 0).numpy()
        return v, s


VLM_PROMPT = "Is this image a picture of a {label}? Answer with one word: yes or no."


def vlm_messages(label: str, prompt: str = VLM_PROMPT) -> list[dict]:
    """The chat the VLM sees for one image: the image, then the question."""
    return [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": prompt.format(label=label)}]}]


_ANSWER = re.compile(r"\b(yes|no)\b", re.IGNORECASE)


def parse_answer(text: str) -> bool | None:
    """Yes → True, no → False, anything else → None. A thinking model's reasoning (up to the last
    `</think>`) is ignored; an unfinished `<think>` block gives None. The first yes/no word counts."""
    if "</think>" in text:
        text = text.rsplit("</think>", 1)[1]
    elif "<think>" in text:
        return None
    m = _ANSWER.search(text)
    return None if m is None else m.group(1).lower() == "yes"


class VLMJudge(_CachedModelJudge):
    """A vision-language model answers `prompt` with yes/no; kept ⇔ yes. Score: 1 (yes), 0 (no),
    NaN (no parsable answer — counted as not kept, and counted in `n_unparsed`)."""

    name = "vlm"

    def __init__(
        self,
        model: str = "Qwen/Qwen3-VL-4B-Thinking",
        prompt: str = VLM_PROMPT,
        max_new_tokens: int = 1024,
        image_size: int = 224,
        device: str = "auto",
        batch_size: int = 8,
        cache_dir=None,
        model_obj=None,
        processor_obj=None,
    ):
        super().__init__()
        from .util.device import resolve_device

        self.model_id, self.prompt, self.max_new_tokens = model, prompt, int(max_new_tokens)
        self.image_size, self.batch_size = image_size, batch_size
        self.device = resolve_device(device)
        if model_obj is None:
            model_obj, processor_obj = _load("AutoModelForImageTextToText", model, "VLMJudge", cache_dir)
        self.model, self.processor = model_obj.to(self.device), processor_obj
        tok = getattr(self.processor, "tokenizer", None)
        if tok is not None:
            tok.padding_side = "left"  # batched generation continues every prompt at the same position
        self.n_unparsed = 0

    def settings(self) -> dict:
        return {
            "model": self.model_id,
            "prompt": self.prompt,
            "max_new_tokens": self.max_new_tokens,
            "image_size": self.image_size,
            "decoding": "greedy",
        }

    @torch.no_grad()
    def _run(self, images_u8, label):
        chat = self.processor.apply_chat_template(
            vlm_messages(label, self.prompt), add_generation_prompt=True, tokenize=False
        )
        ims = _pil_batch(images_u8, self.image_size)
        inp = self.processor(text=[chat] * len(ims), images=ims, return_tensors="pt", padding=True)
        inp = {k: v.to(self.device) for k, v in inp.items()}
        out = self.model.generate(**inp, max_new_tokens=self.max_new_tokens, do_sample=False)
        new = out[:, inp["input_ids"].shape[1] :]
        texts = self.processor.batch_decode(new, skip_special_tokens=False)
        ans = [parse_answer(t) for t in texts]
        self.n_unparsed += sum(a is None for a in ans)
        return [a is True for a in ans], [np.nan if a is None else float(a) for a in ans]


# ---------------------------------------------------------------------------------------------
# The judge calibrated on the reference verdicts (volratio.judge_calibration)


def resample(images, res: int) -> torch.Tensor:
    """`(B, H, W, 3)` → `(B, res, res, 3)` float64: unchanged (the same tensor values) when already
    res×res; **area averaging** (`torch.nn.functional.interpolate(mode="area")`, each output pixel
    the mean of the input pixels it covers) when the image is at least `res` on both sides;
    **bilinear** (`align_corners=False`, antialiased along a side that shrinks) otherwise."""
    x = as_images(images)
    H, W = x.shape[1:3]
    if (H, W) == (res, res):
        return x
    t = x.permute(0, 3, 1, 2)  # (B, 3, H, W)
    if H >= res and W >= res:
        t = torch.nn.functional.interpolate(t, size=(res, res), mode="area")
    else:
        t = torch.nn.functional.interpolate(t, size=(res, res), mode="bilinear", align_corners=False, antialias=True)
    return t.permute(0, 2, 3, 1).contiguous()  # (B, res, res, 3)


class ReferenceCalibratedJudge(Judge):
    """Kept ⇔ score(image, reference) ≥ the threshold for the label, with the score and thresholds
    fitted on the reference verdicts (`data/judge_reference/`, `volratio.judge_calibration`):
    the rule with the best held-out κ. A label the set does not cover uses the rule's one
    threshold for all labels (`"*"`); the settings name the threshold used.

    The rule was fitted on images of one size (`rule.res`, 64×64: the reference verdict set's).
    Images and the reference of any other size are first resampled to that size (`resample`: area
    averaging when shrinking, bilinear when enlarging) and then scored exactly as fitted, so the
    judge is defined at every size and its thresholds keep their meaning (SSIM@4 alone would need
    ≥ 28 px and would measure structure at another scale). At the fitting size nothing is
    resampled: the scores are `judge_calibration.score_of`'s bit for bit (tested)."""

    name = "calibrated"

    def __init__(self, reference, rule=None):
        from .judge_calibration import read_rule

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
        from .judge_calibration import single_score

        t = self.rule.threshold(label)
        if np.isnan(t):
            raise JudgeError(f"the calibrated rule has no threshold for {label!r} and no '*' threshold")
        s = single_score(self.rule.score, resample(images, self.res), self._ref)
        return s >= t, s


class PooledCalibratedJudge(ReferenceCalibratedJudge):
    """The calibrated judge with its pooled threshold (`Rule.pooled`) for every label: SSIM@4 against
    one threshold whatever the target, so that EMC2 scores of different targets (a scene and its
    parts) are judged alike. The default judge keeps a threshold per Picbreeder target, which fits
    the reference verdicts better (higher held-out κ) but makes cross-target comparisons mix
    thresholds."""

    name = "calibrated-pooled"

    def __init__(self, reference, rule=None):
        from .judge_calibration import read_rule

        super().__init__(reference, (rule if rule is not None else read_rule()).pooled())


# the label-anchored judges: name -> (rule file, one pooled threshold for every label)
ANCHORED = {"anchored": ("rule.json", False), "anchored-ssim": ("rule_ssim.json", False),
            "anchored-pooled": ("rule.json", True)}  # fmt: skip


class AnchoredJudge(Judge):
    """ "Is this a <label>?" answered against the label's *target image* (`anchor`): the image
    shows the label ⇔ p(image, anchor) ≥ the label's threshold, with the features, the logistic
    model and the thresholds of the rule fitted on the anchored verdicts
    (`volratio.anchored_rule`, `data/judge_reference/anchored/`). Any image size (brought to the
    rule's size first). A label the verdicts do not cover gets the pooled threshold, and the
    settings say so (`"label_fitted": False`). This is the library's default judge: a network
    that never draws the label scores 0, whatever it draws."""

    name = "anchored"
    anchor_kind = "target"  # compared with the target image, not with the network's own render

    def __init__(self, anchor, rule=None, anchor_name: str = "", variant: str = "anchored"):
        from .anchored_rule import RULE_JSON, read_rule

        if variant not in ANCHORED:
            raise JudgeError(f"anchored judge {variant!r}: choose one of {', '.join(ANCHORED)}")
        self.name = variant
        self.anchor = as_images(anchor)[0]  # (H, W, 3)
        self.anchor_name = str(anchor_name)
        file, pooled = ANCHORED[variant]
        self.rule = rule if rule is not None else read_rule(RULE_JSON.parent / file)
        if pooled:
            self.rule = replace(self.rule, thresholds={"*": self.rule.thresholds["*"]})

    def settings(self) -> dict:
        return {
            "anchor": self.anchor_name or "image",
            "anchor_res": int(self.anchor.shape[0]),
            "rule": self.rule.name,
            "thresholds": dict(self.rule.thresholds),
            "fitted_on": dict(self.rule.fitted_on),
        }

    def __call__(self, images, label: str) -> Verdicts:
        out = super().__call__(images, label)
        out.settings["label_fitted"] = self.rule.threshold(label)[1]
        return out

    def _judge(self, images, label):
        from .anchored_rule import features

        x = as_images(images)
        f = features(x, self.anchor[None].expand(len(x), -1, -1, -1), self.rule.features)
        p = self.rule.prob(f)
        return p >= self.rule.threshold(label)[0], p


class StabilityJudge(ReferenceCalibratedJudge):
    """*Stability*, not the compositional score: does the perturbed image stay close to the
    network's own unperturbed render (SSIM@4 against it, the calibrated rule's pooled threshold)?
    It measures how much the picture a network draws moves, whatever the picture is; no claim is
    decided by it."""

    name = "stability"

    def __init__(self, reference, rule=None):
        from .judge_calibration import read_rule

        super().__init__(reference, (rule if rule is not None else read_rule()).pooled())


def default_judge(anchor, anchor_name: str = "") -> AnchoredJudge:
    """The library's default judge: label-anchored (`AnchoredJudge`) on the target image `anchor`."""
    return AnchoredJudge(anchor, anchor_name=anchor_name)
