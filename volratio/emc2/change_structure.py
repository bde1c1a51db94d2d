"""The structure of an image change — the book's own second lens on EMC2, NOT the paper's metric.

EMC2 (Do, Shah, Le, Liu 2026) counts the perturbations that *keep* the identity. FER (Kumar, Clune,
Lehman, Stanley 2025) argue about *how* an image changes: a Picbreeder weight moves a part (a mouth
opens), a weight of an SGD network smears glitches over the whole image. This module measures that
for one perturbed image against its unperturbed one, from the difference image
`D = ‖image − base‖₂` over colour channels `(H, W)`:

- `concentration` — the share of the change energy `Σ D²` in the 10% of pixels that change most
  (0.1 for a change spread evenly; 1 for a change confined to a tenth of the image or less);
- `regions` — the number of connected regions (8-connectivity, ≥ 2 pixels) where `D > 0.05`;
- `hf_share` — the share of the difference image's spectral energy above a quarter of the sampling
  rate (|f| > 0.25 cycles/pixel): how much of the change is fine-grained texture;
- `change` — the RMS size of the change (for reference; EMC2's judges threshold on it).

`measure(images, bases)` gives a table; `compare_groups` means with 95% t-intervals per group and
the ROC AUC with which each measure separates two groups. Chapter: "EMC2-Bench" (book/emc2.md),
section "A second lens: how the image changes".
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import scipy

from ..judges import as_images
from ..util.stats import mean_ci, roc_auc

MEASURES = ("concentration", "regions", "hf_share", "change")
TOP_FRACTION = 0.10  # concentration: share of energy in this fraction of pixels
REGION_LEVEL = 0.05  # regions: a pixel counts as changed above this colour distance
HF_CUTOFF = 0.25  # hf_share: radial frequency in cycles/pixel (Nyquist = 0.5)


def difference(images, bases) -> np.ndarray:
    """`(B, H, W)` colour distance between each image and its base, both `(B, H, W, 3)` in [0, 1]."""
    x, b = as_images(images), as_images(bases)
    return (x - b).pow(2).sum(-1).sqrt().numpy()


def concentration(D: np.ndarray, top: float = TOP_FRACTION) -> np.ndarray:
    """`(B,)` share of Σ D² in the top `top` fraction of pixels (NaN for an unchanged image)."""
    e = D.reshape(len(D), -1) ** 2
    k = max(1, round(top * e.shape[1]))
    tot = e.sum(1)
    topk = -np.sort(-e, axis=1)[:, :k].sum(1)
    return np.where(tot > 0, topk / np.where(tot > 0, tot, 1), np.nan)


def regions(D: np.ndarray, level: float = REGION_LEVEL, min_size: int = 2) -> np.ndarray:
    """`(B,)` connected regions of pixels with D > level (8-connectivity, at least `min_size` pixels)."""
    out = np.zeros(len(D), int)
    for i, d in enumerate(D):
        lab, n = scipy.ndimage.label(d > level, structure=np.ones((3, 3)))
        if n:
            sizes = np.bincount(lab.ravel())[1:]
            out[i] = int((sizes >= min_size).sum())
    return out


def hf_share(D: np.ndarray, cutoff: float = HF_CUTOFF) -> np.ndarray:
    """`(B,)` share of the (mean-removed) difference image's power above `cutoff` cycles/pixel."""
    _, H, W = D.shape
    P = np.abs(np.fft.fft2(D - D.mean(axis=(1, 2), keepdims=True))) ** 2  # (B, H, W)
    fy, fx = np.fft.fftfreq(H)[:, None], np.fft.fftfreq(W)[None, :]
    hi = np.sqrt(fy**2 + fx**2) > cutoff
    tot = P.sum(axis=(1, 2))
    return np.where(tot > 0, P[:, hi].sum(1) / np.where(tot > 0, tot, 1), np.nan)


def measure(images, bases):
    """A DataFrame with one row per image: `concentration`, `regions`, `hf_share`, `change`."""
    D = difference(images, bases)
    return pd.DataFrame(
        {
            "concentration": concentration(D),
            "regions": regions(D),
            "hf_share": hf_share(D),
            "change": np.sqrt((D**2).mean(axis=(1, 2)) / 3.0),
        }
    )


def compare_groups(table, by: str = "kind", measures=MEASURES):
    """Mean and 95% t-interval of each measure per group (`table[by]`); a DataFrame."""
    rows = []
    for g, part in table.groupby(by, sort=False):
        row = {by: g, "n": len(part)}
        for m in measures:
            mu, lo, hi = mean_ci(part[m].to_numpy(float))
            row[m] = mu
            row[f"{m} 95% CI"] = f"[{lo:.3f}, {hi:.3f}]"
        rows.append(row)
    return pd.DataFrame(rows).set_index(by)


def separation(table, a: str, b: str, by: str = "kind", measures=MEASURES) -> dict:
    """ROC AUC of each measure for telling group `a` from group `b` (0.5 = no separation; the
    larger of AUC and 1 − AUC, so 1 = perfect either way)."""
    ta, tb = table[table[by] == a], table[table[by] == b]
    out = {}
    for m in measures:
        v = np.r_[ta[m].to_numpy(float), tb[m].to_numpy(float)]
        y = np.r_[np.ones(len(ta), bool), np.zeros(len(tb), bool)]
        ok = np.isfinite(v)
        auc = roc_auc(v[ok], y[ok])
        out[m] = max(auc, 1 - auc)
    return out
