"""The target-anchored judge's rule: features of an image against the target, a logistic decision.

`volratio.judges.AnchoredJudge` ("anchored", the library's default judge) asks "is this a
<label>?" by comparing the image with the *target image* of the label — never with the network's
own render. This module defines what it computes and reads:

- **Features** (`FEATURES`, `features`): every image and its target are first brought to one size
  (`FIT_RES`, area averaging / bilinear as `volratio.judges.resample`); then SSIM at full
  resolution and after 2×2 and 4×4 average pooling (Wang et al. 2004), multi-scale SSIM over
  three scales (Wang, Simoncelli & Bovik 2003; `similarity.ms_ssim`), the correlation of Sobel edge
  maps, the negated RMS distance, the distance of the mean colours, and the log-ratio of the
  images' contrasts (a flat image has none).
- **The rule** (`LogisticRule`): a logistic model on standardised features (or one feature alone)
  gives p(shows the label); the image is judged to show the label when p ≥ the label's threshold
  (one per label the verdicts cover, plus a pooled `"*"` for any other label), and optionally a
  structure gate (`GATE_FEATURES`: the edge correlation and the Sobel detail log-ratio "detail",
  each at or above a fitted minimum). `read_rule` reads a stored one (`RULE_JSON`,
  `volratio/judges/rules/anchored.json`; `SECOND_RULE_JSON`; `GATED_RULE_JSON`, the gated rule),
  fitted on the anchored verdicts by `volratio.calibration.fit_anchored`.

Chapter: "EMC2-Bench" (book/emc2.md), section "The judge, validated".
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import numpy as np
import torch

from ..errors import DataNotFoundError, VolratioError
from .base import RULES_DIR, as_images, resample
from .calibrated_rule import edge_map, row_correlation
from .similarity import ms_ssim, ssim

RULE_JSON = RULES_DIR / "anchored.json"


# the second label-anchored judge ("anchored-ssim"): one feature, a similarity other than the default's
SECOND_RULE_JSON = RULES_DIR / "anchored-ssim.json"


# the gated judge ("anchored-gated"): the default's rule and a structure gate (`LogisticRule.gate`)
GATED_RULE_JSON = RULES_DIR / "anchored-gated.json"


# the cross-fitted judge ("anchored-xfit"): the gated rule fitted once per fold of networks (CrossFit)
XFIT_RULE_JSON = RULES_DIR / "anchored-xfit.json"


SECOND_FEATURES = ("ssim@1",)  # the single feature other than -rmse with the best held-out κ (fit_second)


FIT_RES = 64  # images and targets are compared at this size


FEATURES = ("ssim@1", "ssim@2", "ssim@4", "ms-ssim", "edges", "-rmse", "-dcolour", "contrast")


# the structure gate's features: an image passes only with both at or above the gate's thresholds
GATE_FEATURES = ("edges", "detail")


KNOWN_FEATURES = FEATURES + ("detail",)  # what `features` computes


# the default judge ("anchored-v2"): images aligned to the target within ALIGN pixels, the gate refit on
# recognisable degraded drawings too (volratio.calibration.degraded), cross-fitted by network (CrossFit)
V2_RULE_JSON = RULES_DIR / "anchored-v2.json"
ALIGN = 4  # its largest shift, in pixels at FIT_RES, along each axis


# ---------------------------------------------------------------------------------------------
# Features


def _pool(x: torch.Tensor, k: int) -> torch.Tensor:
    return x if k == 1 else torch.nn.functional.avg_pool2d(x.permute(0, 3, 1, 2), k).permute(0, 2, 3, 1)


def _same_rows(r: torch.Tensor) -> list:
    """The row indices of `r` grouped by identical rows (in order of first appearance): one group
    without leaving the device when every row is the first (one target for the whole batch)."""
    if torch.equal(r, r[:1].expand_as(r)):
        return [list(range(len(r)))]
    keys = [hash(ri.cpu().numpy().tobytes()) for ri in r]
    return [[i for i, kk in enumerate(keys) if kk == key] for key in dict.fromkeys(keys)]


def align(x: torch.Tensor, r: torch.Tensor, shift: int) -> torch.Tensor:
    """`x` `(B, H, W, 3)` with each image moved by the whole-pixel offset `(dy, dx)`, |dy|, |dx| ≤
    `shift`, that brings it closest (least squared difference) to its target `r` (row i of `r` is
    image i's), the border repeated: a drawing that lies a few pixels off its target is compared with
    it where it lies. `shift = 0`: `x` unchanged. The search computes every offset's error at once,
    as a cross-correlation by FFT and a summed-area table of the squares, in float32 (an image's
    offset is exact up to ties within float32 rounding, which may break differently on another
    device); the aligned image is `x`'s own values."""
    if shift <= 0:
        return x
    b, h, w = x.shape[:3]
    pad = torch.nn.functional.pad(x.permute(0, 3, 1, 2), (shift,) * 4, mode="replicate")  # (B, 3, H+2s, W+2s)
    p32, size = pad.float(), pad.shape[-2:]
    spec = torch.empty(b, 3, size[0], size[1] // 2 + 1, dtype=torch.complex64, device=x.device)
    for idx in _same_rows(r):  # one transform per distinct target
        spec[idx] = torch.fft.rfft2(r[idx[:1]].permute(0, 3, 1, 2).float(), s=size).conj()
    # Σ window·target at each offset: the channels summed before the one inverse transform per image
    cross = torch.fft.irfft2((torch.fft.rfft2(p32) * spec).sum(1), s=size)[:, : 2 * shift + 1, : 2 * shift + 1]
    sq = torch.nn.functional.pad((p32**2).sum(1).cumsum(1).cumsum(2), (1, 0, 1, 0))  # summed-area table
    window = sq[:, h:, w:] - sq[:, :-h, w:] - sq[:, h:, :-w] + sq[:, :-h, :-w]  # Σ window² at each offset
    corner = (window - 2 * cross).flatten(1).argmin(1)  # the target's Σ² is the same at every offset
    dy, dx = corner // (2 * shift + 1), corner % (2 * shift + 1)
    rows = dy[:, None] + torch.arange(h, device=x.device)
    cols = dx[:, None] + torch.arange(w, device=x.device)
    return pad.permute(0, 2, 3, 1)[torch.arange(b, device=x.device)[:, None, None], rows[:, :, None], cols[:, None, :]]


def features(images, targets, names=FEATURES, shift: int = 0) -> dict[str, np.ndarray]:
    """The features `names` (default all) of each image against its target: `images`, `targets`
    `(B, H, W, 3)` in [0, 1] (row i of `targets` is image i's target; both of any size, brought to
    `FIT_RES`). Each feature is computed the same way whichever others are asked for. Besides
    `FEATURES`, "detail": the log-ratio of the images' mean Sobel gradient magnitudes (a flat,
    blurred or coarsely pixelated image has less detail than its target; part of the gate).
    Computed on the device `images` are on (the targets are brought there); the same operations on
    the CPU or a GPU, so a GPU's features equal the CPU's to rounding (float64; tested). `shift` > 0:
    each image is first aligned to its target within `shift` pixels (`align`)."""
    if unknown := set(names) - set(KNOWN_FEATURES):
        raise VolratioError(f"unknown features {sorted(unknown)}; known: {', '.join(KNOWN_FEATURES)}")
    x = resample(as_images(images, None), FIT_RES)
    r = resample(as_images(targets, x.device), FIT_RES)
    if len(x) != len(r):
        raise VolratioError(f"{len(x)} images but {len(r)} targets; give one target per image")
    x = align(x, r, int(shift))
    out = {}
    pooled = [k for k in (1, 2, 4) if f"ssim@{k}" in names]
    if pooled:
        for k in pooled:
            out[f"ssim@{k}"] = np.zeros(len(x))
        for idx in _same_rows(r):  # SSIM takes one reference per call: group rows by target
            for k in pooled:
                out[f"ssim@{k}"][idx] = ssim(_pool(x[idx], k), _pool(r[idx[:1]], k)[0])
    if "ms-ssim" in names:
        out["ms-ssim"] = ms_ssim(x, r)
    if "edges" in names or "detail" in names:  # one Sobel map per image, one per distinct target
        ex = edge_map(x)
        er = torch.empty_like(ex)
        for idx in _same_rows(r):
            er[idx] = edge_map(r[idx[:1]])
    if "edges" in names:
        out["edges"] = row_correlation(ex.flatten(1), er.flatten(1)).cpu().numpy()
    if "-rmse" in names:
        out["-rmse"] = -((x - r) ** 2).mean(dim=(1, 2, 3)).sqrt().cpu().numpy()
    if "-dcolour" in names:
        out["-dcolour"] = -(x.mean(dim=(1, 2)) - r.mean(dim=(1, 2))).norm(dim=1).cpu().numpy()
    if "detail" in names:
        out["detail"] = torch.log((ex.mean(dim=(1, 2)) + 1e-3) / (er.mean(dim=(1, 2)) + 1e-3)).cpu().numpy()
    if "contrast" in names:
        sx, sr = x.std(dim=(1, 2)).mean(1), r.std(dim=(1, 2)).mean(1)
        out["contrast"] = torch.log((sx + 1e-3) / (sr + 1e-3)).cpu().numpy()
    return {n: out[n] for n in names}


# ---------------------------------------------------------------------------------------------
# Rules


@dataclass
class LogisticRule:
    """p = σ(b + Σ wᵢ·(fᵢ − μᵢ)/sᵢ) over `features`; shows the label ⇔ p ≥ threshold(label) and,
    when the rule has a `gate` ({feature: minimum}, features of `GATE_FEATURES`), every gate feature
    is at or above its minimum: an image without the target's structure (edges that do not line up
    with the target's, or much less detail) is not the label however close its colours are."""

    features: tuple  # feature names (a subset of FEATURES)
    weights: list  # one per feature
    bias: float
    mean: list  # standardisation, from the training split
    scale: list
    thresholds: dict  # label -> threshold on p; "*" for every other label
    fitted_on: dict = field(default_factory=dict)
    gate: dict = field(default_factory=dict)  # feature -> minimum (empty: no gate)
    shift: int = 0  # images aligned to the target within this many pixels before any feature (`align`)

    @property
    def name(self) -> str:
        f = "+".join(self.features)
        g = "".join(f", {k} ≥ {v:.3g}" for k, v in self.gate.items())
        a = f", aligned within {self.shift} px" if self.shift else ""
        return f"{f} ({'per label' if len(self.thresholds) > 1 else 'one threshold'}{g}{a})"

    @property
    def needs(self) -> tuple:
        """Every feature the rule reads: its model's, then its gate's."""
        return tuple(dict.fromkeys((*self.features, *self.gate)))

    def passes_gate(self, feats: dict) -> np.ndarray:
        """`(n,)` bool: every gate feature at or above its minimum (all True without a gate)."""
        n = len(feats[self.features[0]])
        ok = np.ones(n, bool)
        for f, m in self.gate.items():
            ok &= np.asarray(feats[f], float) >= float(m)
        return ok

    def threshold(self, label: str) -> tuple[float, bool]:
        """`(threshold, fitted for this label)`."""
        if label in self.thresholds:
            return float(self.thresholds[label]), True
        return float(self.thresholds["*"]), False

    def prob(self, feats: dict) -> np.ndarray:
        z = np.full(len(feats[self.features[0]]), float(self.bias))
        for f, w, m, s in zip(self.features, self.weights, self.mean, self.scale):
            z = z + w * (np.asarray(feats[f], float) - m) / s
        return 1.0 / (1.0 + np.exp(-z))

    def score(self, feats: dict) -> np.ndarray:
        """The judge's score: p, or 0 for an image the gate rejects (NaN for an image whose features
        are NaN, as without a gate: a broken image is not a score of 0)."""
        p = self.prob(feats)
        return np.where(self.passes_gate(feats) | np.isnan(p), p, 0.0)

    def predict(self, feats: dict, labels) -> np.ndarray:
        p = self.prob(feats)
        t = np.array([self.threshold(lab)[0] for lab in labels])
        return (p >= t) & self.passes_gate(feats)


def read_rule(path=None) -> LogisticRule:
    """A stored rule of the label-anchored judges (default the default's, `RULE_JSON`,
    `volratio/judges/rules/anchored.json`)."""
    p = path or RULE_JSON
    if not p.exists():
        raise DataNotFoundError(f"anchored judge rule not found at {p}; the rules ship in volratio/judges/rules/")
    return _rule_of(json.loads(p.read_text()), p)


def _rule_of(d: dict, where) -> LogisticRule:
    feats, gate = tuple(d.get("features", ())), d.get("gate", {})
    if not feats or set(feats) - set(FEATURES) or "*" not in d.get("thresholds", {}):
        raise VolratioError(f"{where}: not an anchored judge rule (needs features from {FEATURES} and a '*' threshold)")
    if not isinstance(gate, dict) or set(gate) - set(GATE_FEATURES):
        raise VolratioError(f"{where}: gate must map features of {GATE_FEATURES} to minimums; got {gate!r}")
    return LogisticRule(feats, list(d["weights"]), float(d["bias"]), list(d["mean"]), list(d["scale"]),
                {k: float(v) for k, v in d["thresholds"].items()}, d.get("fitted_on", {}),
                {k: float(v) for k, v in gate.items()}, int(d.get("shift", 0)))  # fmt: skip


@dataclass
class CrossFit:
    """The cross-fitted gated rules (`volratio.calibration.crossfit`): one rule per fold, each
    fitted without that fold's networks, and one fitted on every row."""

    k: int
    folds: dict  # verdict-set network name -> fold
    rules: list  # LogisticRule per fold
    all: LogisticRule  # fitted on every row

    def rule_for(self, network: str | None) -> tuple[LogisticRule, "int | str"]:
        """`(rule, fold)` for a network: the rule fitted without its fold when the verdict set holds
        rows of it, else the rule fitted on every row (`fold = "all"`)."""
        if network is not None and network in self.folds:
            f = int(self.folds[network])
            return self.rules[f], f
        return self.all, "all"


def read_crossfit(path=None) -> CrossFit:
    """Stored cross-fitted rules (default `XFIT_RULE_JSON`, `volratio/judges/rules/anchored-xfit.json`;
    the default judge's are `V2_RULE_JSON`)."""
    p = path or XFIT_RULE_JSON
    if not p.exists():
        raise DataNotFoundError(f"cross-fitted rules not found at {p}; the rules ship in volratio/judges/rules/")
    d = json.loads(p.read_text())
    try:
        k, folds = int(d["k"]), {str(n): int(f) for n, f in d["folds"].items()}
        rules = [_rule_of(r, f"{p} (fold {i})") for i, r in enumerate(d["rules"])]
        all_rows = _rule_of(d["all"], f"{p} (all rows)")
    except (KeyError, TypeError, ValueError) as e:
        raise VolratioError(f"{p}: not cross-fitted rules (needs k, folds, rules, all): {e}") from None
    if len(rules) != k or any(not 0 <= f < k for f in folds.values()):
        raise VolratioError(f"{p}: {len(rules)} rules for k = {k} folds, or a fold outside 0..{k - 1}")
    return CrossFit(k, folds, rules, all_rows)


# ---------------------------------------------------------------------------------------------
# The comparison
