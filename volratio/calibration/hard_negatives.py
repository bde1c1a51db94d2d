"""Generated hard negatives: images that are not the label by construction, for every label.

A judge that compares colours with the target can keep an image without the target's structure: a
flat page in the target's own colour, a 4×4 mosaic of it, a heavy blur. The EMC2 design (CONTRIBUTING.md) asks that such
degenerate images are never the label, so they join the anchored verdict set for each of the
sixteen Picbreeder labels (`volratio.data.picbreeder.ALL_NAMES`), each labelled "not the label"
(`pass1 = 0`) *by construction*, not by inspection (`KINDS`):

- `flat` — one colour over the whole image: the target's mean colour, its most frequent colour
  (quantised to 8 levels per channel), its top-left corner colour, white, black, mid grey and
  `n_random` seeded random colours;
- `pixelated` — the target averaged over 4×4 blocks of the whole image (a 4×4 mosaic; the default
  judge's gate also an 8×8 one, `MOSAICS_V2`);
- `blurred` — the target under a Gaussian blur of σ = `BLUR_SIGMA` × the image's side;
- `other-target` — every other label's target image (butterfly and butterfly-grey are one label's
  two drawings, so neither is the other's negative: `SAME_LABEL`);
- `noise` — seeded uniform and smoothed noise (`volratio.judges.noise_images`).

`hard_negatives(labels, res)` returns the rows (columns as the verdict set's, `group =
"generated"`, `network = "generated:LABEL/KIND-NAME"`, each image its own network so that it is its
own unperturbed image) and their images; `feature_table` adds every feature against the label's
target (as `volratio.calibration.fit_anchored.verdict_table`).

Chapter: "EMC2-Bench" (book/emc2.md), section "The judge, validated".
"""

from __future__ import annotations

import pandas as pd
import scipy
import torch

from ..data.picbreeder import ALL_NAMES
from ..data.targets import get_target
from ..judges.anchored_rule import KNOWN_FEATURES, features
from ..judges.similarity import noise_images
from ..util.device import generator

GROUP = "generated"
KINDS = ("flat", "pixelated", "blurred", "other-target", "noise")
PIXEL_BLOCKS = 4  # the pixelated copy has PIXEL_BLOCKS × PIXEL_BLOCKS cells
MOSAICS = (PIXEL_BLOCKS,)  # the pixelated copies the gated judges were fitted on
MOSAICS_V2 = (4, 8)  # those the default judge's gate is fitted on (`volratio.calibration.fit_v2`)
BLUR_SIGMA = 1 / 8  # the blur's σ as a fraction of the image's side
SAME_LABEL = ({"butterfly", "butterfly-grey"},)  # labels whose targets draw the same thing


def flat_colours(target: torch.Tensor, n_random: int = 4, seed: int = 0) -> dict[str, torch.Tensor]:
    """`{name: (3,) colour}`: the target's mean, most frequent (8 levels per channel) and top-left
    corner colours, white, black, mid grey and `n_random` seeded random colours."""
    t = target.reshape(-1, 3)
    q = torch.clamp((t * 8).floor(), max=7)  # 8 levels per channel
    codes, counts = torch.unique(q, dim=0, return_counts=True)
    out = {
        "mean": t.mean(0),
        "most-frequent": (codes[counts.argmax()] + 0.5) / 8,
        "corner": target[0, 0],
        "white": torch.ones(3, dtype=t.dtype),
        "black": torch.zeros(3, dtype=t.dtype),
        "grey": torch.full((3,), 0.5, dtype=t.dtype),
    }
    g = generator(seed)
    for k in range(n_random):
        out[f"random-{k}"] = torch.rand(3, generator=g, dtype=t.dtype)
    return out


def pixelated(image: torch.Tensor, blocks: int = PIXEL_BLOCKS) -> torch.Tensor:
    """`image` `(H, W, 3)` averaged over `blocks × blocks` cells (H and W divisible by `blocks`)."""
    x = image.permute(2, 0, 1)[None]
    small = torch.nn.functional.adaptive_avg_pool2d(x, blocks)
    return torch.nn.functional.interpolate(small, size=image.shape[:2], mode="nearest")[0].permute(1, 2, 0)


def blurred(image: torch.Tensor, sigma: float) -> torch.Tensor:
    """`image` `(H, W, 3)` under a Gaussian blur of `sigma` pixels (edges reflected)."""
    return torch.from_numpy(scipy.ndimage.gaussian_filter(image.numpy(), sigma=(sigma, sigma, 0), mode="reflect"))


def negatives_for(label: str, res: int, targets: dict, n_random: int = 4, seed: int = 0,
                  mosaics=MOSAICS) -> dict[str, torch.Tensor]:  # fmt: skip
    """`{KIND-NAME: (res, res, 3)}` the generated negatives of one label (`targets`: label → image;
    `mosaics`: the pixelated copies, cells per side)."""
    t = targets[label]
    out = {f"flat-{k}": c.expand(res, res, 3).clone() for k, c in flat_colours(t, n_random, seed).items()}
    for b in mosaics:
        out[f"pixelated-{b}x{b}"] = pixelated(t, b)
    out["blurred"] = blurred(t, BLUR_SIGMA * res)
    same = set().union(*(s for s in SAME_LABEL if label in s))
    for other, img in targets.items():
        if other != label and other not in same:
            out[f"other-target-{other}"] = img.clone()
    for k, img in noise_images(res, n=2, seed=seed).items():
        out["noise-" + k.replace(" ", "-")] = img
    return out


def hard_negatives(labels=ALL_NAMES, res: int = 64, n_random: int = 4, seed: int = 0, mosaics=MOSAICS):
    """`(rows, images)`: the generated negatives of every label of `labels` (default the sixteen
    Picbreeder labels; their targets need the Picbreeder data), one row per image with `pass1 = 0`,
    and the images `(res, res, 3)` float64 in row order. Deterministic (seeded by `seed`). `mosaics`:
    the pixelated copies (cells per side; the gated judges' `MOSAICS`, the default judge's
    `MOSAICS_V2`)."""
    targets = {lab: get_target(f"picbreeder:{lab}").image(res).double() for lab in labels}
    rows, images = [], []
    for lab in labels:
        for name, img in negatives_for(lab, res, targets, n_random, seed, mosaics).items():
            rows.append({"id": f"gen:{lab}:{name}", "network": f"{GROUP}:{lab}/{name}", "group": GROUP, "member": 0,
                         "target": f"picbreeder:{lab}", "label": lab, "kernel": -1, "row": -1, "col": -1,
                         "delta": 0.0, "res": res, "pass1": 0, "source": "generated"})  # fmt: skip
            images.append(img.double().clamp(0, 1))
    return pd.DataFrame(rows), images


# every feature but multi-scale SSIM, which takes minutes on these images and no stored rule reads
TABLE_FEATURES = tuple(f for f in KNOWN_FEATURES if f != "ms-ssim")


def feature_table(labels=ALL_NAMES, res: int = 64, seed: int = 0, names=TABLE_FEATURES, shift: int = 0,
                  mosaics=MOSAICS):  # fmt: skip
    """`hard_negatives(labels, res)` rows with the features `names` of each image against its
    label's target (each image aligned to it within `shift` pixels first, `anchored_rule.align`), and
    a `kind` column (`KINDS`). Seconds."""
    rows, images = hard_negatives(labels, res, seed=seed, mosaics=mosaics)
    anchors = {lab: get_target(f"picbreeder:{lab}").image(res).double() for lab in labels}
    x = torch.stack(images)
    r = torch.stack([anchors[lab] for lab in rows["label"]])
    for k, v in features(x, r, names, shift).items():
        rows[k] = v
    rows["kind"] = [next(k for k in KINDS if n.split("/", 1)[1].startswith(k)) for n in rows["network"]]
    return rows
