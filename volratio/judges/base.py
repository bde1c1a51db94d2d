"""The judges' interface: a judge, its verdicts, its errors, and the image conversions every judge uses.

A judge is called on a batch of images `(B, H, W, 3)` in [0, 1] (torch or numpy) and a label, and
returns `Verdicts`: a boolean per image (identity kept), a score per image, the judge's name and
its settings — every score records which judge produced it and how it was set up. Subclasses of
`Judge` set `name` and implement `_judge(images, label) -> (verdicts, scores)`.

- `as_images` brings any batch to `(B, H, W, 3)` float64 on the CPU (or on the device it is on);
  `to_uint8` quantises it as
  PNG export does (`volratio.util.images.to_uint8`); `image_hash` is the model judges' cache key;
  `resample` brings images to one size (area averaging when shrinking, bilinear when enlarging),
  as the fitted judges do before scoring.
- `JudgeError` — a judge that cannot run as configured; `JudgeWeightsMissing` — a model judge's
  weights (or `transformers`) are not available locally.
- `RULES_DIR`, `rule_path` — the fitted judges' rules, shipped inside the package
  (`volratio/judges/rules/NAME.json`, one file per rule, listed in pyproject's package-data) so that
  an installed wheel can score; `DATA_DIR` — the verdicts they were fitted on (`data/judge_reference/`,
  in the repository only: fitting and checking need it, scoring does not).

Chapter: "EMC2-Bench" (book/emc2.md).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from ..errors import DataNotFoundError, VolratioError
from ..util.images import to_uint8 as quantise

DATA_DIR = Path(__file__).resolve().parents[2] / "data" / "judge_reference"  # the repository's data/
RULES_DIR = Path(__file__).resolve().parent / "rules"  # the fitted rules, shipped in the wheel


def rule_path(name: str) -> Path:
    """The stored rule file of the fitted rule `name` (`RULES_DIR/NAME.json`): "anchored",
    "anchored-ssim", "anchored-gated" (the label-anchored judges' rules) or "calibrated" (the
    self-anchored judges'). `DataNotFoundError` naming the file when it is absent."""
    p = RULES_DIR / f"{name}.json"
    if not p.is_file():
        known = sorted(q.stem for q in RULES_DIR.glob("*.json"))
        raise DataNotFoundError(f"judge rule {name!r} not found at {p}; stored rules: {', '.join(known) or 'none'}")
    return p


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


def as_images(images, device="cpu") -> torch.Tensor:
    """`(B, H, W, 3)` float64 tensor in [0, 1] from a torch/numpy batch (or one `(H, W, 3)` image), on
    `device` ("cpu" by default; None: the device the batch is on, the CPU for a numpy batch)."""
    t = torch.as_tensor(np.asarray(images) if not torch.is_tensor(images) else images)
    if t.dim() == 3:
        t = t[None]
    if t.dim() != 4 or t.shape[-1] != 3:
        raise JudgeError(f"judges take images of shape (B, H, W, 3) in [0, 1]; got {tuple(t.shape)}")
    return t.detach().to(t.device if device is None else device, torch.float64)


def to_uint8(images) -> np.ndarray:
    """`(B, H, W, 3)` uint8 (`volratio.util.images.to_uint8`, rounding as PNG export does)."""
    return quantise(as_images(images))


def image_hash(img_u8: np.ndarray) -> str:
    """sha256 of one uint8 image (shape included): the cache key of the model judges."""
    h = hashlib.sha256(str(img_u8.shape).encode())
    h.update(np.ascontiguousarray(img_u8).tobytes())
    return h.hexdigest()


MIN_RES = 8  # pixels per side: the smallest image any judge answers for (volratio.data.targets.MIN_IMAGE_SIDE)


@dataclass(frozen=True)
class JudgeText:
    """How the book names a judge: `long` beside a verdict's scale on the claims page, `short` in
    what was measured and in the line that compares judges, `brief` in the verdict cell that
    compares judges (either "": the judge's name)."""

    long: str
    short: str = ""
    brief: str = ""


class Judge:
    """Base class: subclasses set `name` and implement `_judge(images, label) -> (verdicts, scores)`.

    `min_res` is the smallest image (pixels per side) the judge answers for: smaller images are
    refused (`check_res`) — by the judge itself, and by every entry point before work starts
    (`volratio.judges.registry.check_res`). `anchor_kind` says what the verdicts are anchored on:
    "target" (an image of the label), "label" (a model asked about the label's name) or "own image"
    (the network's own render: stability). `on_device`: the judge computes on the device the
    images are on (a GPU batch is judged on the GPU, not copied to the CPU first); otherwise every
    batch is brought to the CPU. `texts` holds, for each name `make_judge` builds this
    class under, how the book names it (`JudgeText`); the registry's names are read from it."""

    name = "judge"
    min_res = MIN_RES  # pixels per side; a subclass raises it when its features need more
    anchor_kind = "label"
    on_device = False  # True: judged on the images' device (see the class docstring)
    texts: dict[str, JudgeText] = {}

    def settings(self) -> dict:
        return {}

    @classmethod
    def check_res(cls, res: int, what: str = "images") -> None:
        """`JudgeError` when `res` (pixels per side) is below the judge's `min_res`."""
        if int(res) < cls.min_res:
            raise JudgeError(
                f"{what} of {int(res)}×{int(res)} pixels: the {cls.name!r} judge answers for images of at least "
                f"{cls.min_res}×{cls.min_res}; render at --res {cls.min_res} or more"
            )

    def __call__(self, images, label: str) -> Verdicts:
        x = as_images(images, None if self.on_device else "cpu")
        self.check_res(min(x.shape[1:3]))
        v, s = self._judge(x, label)
        return Verdicts(np.asarray(v, bool), np.asarray(s, float), self.name, {**self.settings(), "label": label})

    def _judge(self, images, label):  # pragma: no cover - abstract
        raise NotImplementedError


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
