"""The calibrated judges' rule: scores of an image against its network's own render, a threshold.

The self-anchored judges (`volratio.judges.stability`) compare a perturbed image with its network's
unperturbed image by one score and keep it when the score reaches the label's threshold. This module
defines what they compute and read:

- **Scores** (`SCORES`): SSIM at full resolution and after 2×2 and 4×4 average pooling (`ssim@1`,
  `ssim@2`, `ssim@4`; Wang et al. 2004, multi-scale in the spirit of Wang, Simoncelli & Bovik 2003),
  the Pearson correlation of Sobel edge-magnitude maps (`edges`), and the negated RMS pixel distance
  (`-rmse`): `scores`, `score_of`, `single_score`.
- **The rule** (`ThresholdRule`): `score ≥ t`, with one threshold for all labels or one per label;
  `read_rule` reads the stored one (`RULE_JSON`, `volratio/judges/rules/calibrated.json`),
  fitted on the reference verdicts by `volratio.calibration.fit_calibrated`.

Chapter: "EMC2-Bench" (book/emc2.md), section "The judge, validated".
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import numpy as np
import torch

from ..errors import DataNotFoundError, VolratioError
from .base import RULES_DIR, as_images
from .similarity import ssim

RULE_JSON = RULES_DIR / "calibrated.json"


SCORES = ("ssim@1", "ssim@2", "ssim@4", "edges", "-rmse")


FIT_RES = 64  # image size of the reference verdict set (`ReferenceSetConfig.res`): a stored rule
#               without `fitted_on["res"]` was fitted at this size


# ---------------------------------------------------------------------------------------------
# Scores


def _pool(x: torch.Tensor, k: int) -> torch.Tensor:
    """`(B, H, W, 3)` → `(B, H/k, W/k, 3)` by k×k average pooling (k = 1: unchanged)."""
    if k == 1:
        return x
    return torch.nn.functional.avg_pool2d(x.permute(0, 3, 1, 2), k).permute(0, 2, 3, 1)


def _grey(x: torch.Tensor) -> torch.Tensor:
    return x @ torch.tensor([0.299, 0.587, 0.114], dtype=x.dtype, device=x.device)  # (B, H, W)


def edge_map(x: torch.Tensor) -> torch.Tensor:
    """`(B, H-2, W-2)` Sobel gradient magnitude of the greyscale images `(B, H, W, 3)`."""
    g = _grey(x)[:, None]  # (B, 1, H, W)
    kx = torch.tensor([[-1.0, 0, 1], [-2, 0, 2], [-1, 0, 1]], dtype=x.dtype, device=x.device)
    k = torch.stack([kx, kx.T])[:, None]  # (2, 1, 3, 3)
    d = torch.nn.functional.conv2d(g, k)  # (B, 2, H-2, W-2)
    return d.pow(2).sum(1).sqrt()


def row_correlation(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Pearson correlation per row of two `(B, n)` arrays (0 where either is constant)."""
    a = a - a.mean(1, keepdim=True)
    b = b - b.mean(1, keepdim=True)
    den = (a.norm(dim=1) * b.norm(dim=1)).clamp_min(1e-12)
    return (a * b).sum(1) / den


def scores(images, references) -> dict[str, np.ndarray]:
    """Every candidate score of each image against its own reference: `images`, `references`
    `(B, H, W, 3)` in [0, 1] (row i of `references` is image i's unperturbed image)."""
    x, r = as_images(images), as_images(references)
    if x.shape != r.shape:
        raise VolratioError(f"images {tuple(x.shape)} and references {tuple(r.shape)} must have the same shape")
    out = {f"ssim@{k}": np.zeros(len(x)) for k in (1, 2, 4)}
    # SSIM takes one reference per call: group the rows by identical reference
    keys = [hash(ri.numpy().tobytes()) for ri in r]
    for key in dict.fromkeys(keys):
        idx = [i for i, k in enumerate(keys) if k == key]
        for k in (1, 2, 4):
            out[f"ssim@{k}"][idx] = ssim(_pool(x[idx], k), _pool(r[idx[:1]], k)[0])
    out["edges"] = row_correlation(edge_map(x).flatten(1), edge_map(r).flatten(1)).numpy()
    out["-rmse"] = -((x - r) ** 2).mean(dim=(1, 2, 3)).sqrt().numpy()
    return out


def score_of(name: str, images, reference) -> np.ndarray:
    """One candidate score `name` of a batch against one reference `(H, W, 3)`."""
    if name not in SCORES:
        raise VolratioError(f"unknown score {name!r}; one of {', '.join(SCORES)}")
    x = as_images(images)
    r = as_images(reference)[0].expand_as(x)
    return scores(x, r)[name]


def single_score(name: str, images, reference) -> np.ndarray:
    """`score_of(name, images, reference)` computing only that score (the same operations on the
    same tensors, so the same numbers bit for bit; tested): what the calibrated judge runs, on the
    images' device."""
    if name not in SCORES:
        raise VolratioError(f"unknown score {name!r}; one of {', '.join(SCORES)}")
    x = as_images(images, None)  # on the images' device
    r = as_images(reference, x.device)[0].expand_as(x)
    if x.shape != r.shape:
        raise VolratioError(f"images {tuple(x.shape)} and reference {tuple(r.shape[1:])} must have the same size")
    if name.startswith("ssim@"):
        k = int(name[5:])
        return ssim(_pool(x, k), _pool(r[:1], k)[0])
    if name == "edges":
        return row_correlation(edge_map(x).flatten(1), edge_map(r).flatten(1)).cpu().numpy()
    return -((x - r) ** 2).mean(dim=(1, 2, 3)).sqrt().cpu().numpy()


# ---------------------------------------------------------------------------------------------
# Rules


@dataclass
class ThresholdRule:
    score: str  # one of SCORES
    thresholds: dict  # label -> threshold, or {"*": t} for one threshold for all labels
    fitted_on: dict = field(default_factory=dict)  # what the rule was fitted on (n, res, split seed, …)

    @property
    def res(self) -> int:
        """The image size the rule was fitted at (`FIT_RES` when not recorded)."""
        return int(self.fitted_on.get("res", FIT_RES))

    def threshold(self, label: str) -> float:
        return float(self.thresholds.get(label, self.thresholds.get("*", np.nan)))

    @property
    def per_label(self) -> bool:
        return len(self.thresholds) > 1

    def predict(self, values: np.ndarray, labels) -> np.ndarray:
        t = np.array([self.threshold(lab) for lab in labels])
        if np.isnan(t).any():
            raise VolratioError(
                f"rule on {self.score} has no threshold for labels {sorted(set(np.asarray(labels)[np.isnan(t)]))}"
            )
        return np.asarray(values) >= t

    @property
    def name(self) -> str:
        return f"{self.score} ({'per label' if self.per_label else 'one threshold'})"

    def pooled(self) -> "ThresholdRule":
        """This rule with its one threshold for all labels (`"*"`, fitted on every label's verdicts
        together) for every label: scores of different targets judged against the same threshold."""
        if "*" not in self.thresholds:
            raise VolratioError(f"rule on {self.score} has no pooled threshold ('*'); refit it with one")
        return ThresholdRule(self.score, {"*": float(self.thresholds["*"])}, {**self.fitted_on, "pooled": True})


def read_rule(path=None) -> ThresholdRule:
    """The stored rule (`volratio/judges/rules/calibrated.json`)."""
    p = path or RULE_JSON
    if not p.exists():
        raise DataNotFoundError(
            f"calibrated judge rule not found at {p}; regenerate it with "
            "volratio.calibration.fit_calibrated.write_rule(best_rule(*compare(judge_table())))"
        )
    d = json.loads(p.read_text())
    if d.get("score") not in SCORES or not isinstance(d.get("thresholds"), dict):
        raise VolratioError(f"{p}: not a judge rule (needs 'score' in {SCORES} and 'thresholds')")
    fitted_on = {"res": FIT_RES, **d.get("fitted_on", {})}
    if not isinstance(fitted_on["res"], int) or fitted_on["res"] < 1:
        raise VolratioError(f"{p}: fitted_on.res must be a positive image size, got {fitted_on['res']!r}")
    return ThresholdRule(d["score"], {k: float(v) for k, v in d["thresholds"].items()}, fitted_on)


# ---------------------------------------------------------------------------------------------
# EMC2 under the verdicts
