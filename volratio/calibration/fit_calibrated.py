"""Calibrating and checking the offline EMC2 judge against the reference verdicts.

The reference verdicts (`volratio.calibration.reference_verdicts`, `data/judge_reference/verdicts.csv`) say,
for 646 single-weight perturbations, whether the image still shows its object. This module turns
them into a validated offline judge:

- **Candidate scores** (`SCORES`), each comparing a perturbed image with its network's unperturbed
  image: SSIM at full resolution and after 2×2 and 4×4 average pooling (`ssim@1`, `ssim@2`,
  `ssim@4`; Wang et al. 2004, multi-scale in the spirit of Wang, Simoncelli & Bovik 2003), the
  Pearson correlation of Sobel edge-magnitude maps (`edges`), and the negated RMS pixel distance
  (`-rmse`).
- **Rules**: `score ≥ t` with one threshold for all targets, or one per label, chosen on a training
  split to maximise Cohen's κ (ties: the middle of the tied range) — `fit_rule`. The "ssim"
  judge, the SSIM threshold calibrated per network against *other* targets, random CPPN images
  and noise (`volratio.judges.calibrate`), is evaluated beside them without refitting.
- **Evaluation** on the held-out split: accuracy, κ, the confusion matrix (`evaluate`, `agreement`).
- `compare(table)` runs the whole comparison; `best_rule` picks the rule with the best held-out κ;
  `write_rule`/`RULE_JSON` store it for `volratio.judges.ReferenceCalibratedJudge`, the judge that
  `volratio judge` uses by default.
- `emc2_from_verdicts` — S(θ) per network from the verdicts themselves (the closest this book
  comes to the paper's VLM judge), with Wilson intervals, beside a judge's S on the same images.

Chapter: "EMC2-Bench" (book/emc2.md), section "The judge, validated".
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd
import torch

from ..emc2 import PerturbationEngine
from ..errors import VolratioError
from ..judges.calibrated_rule import FIT_RES, RULE_JSON, SCORES, ThresholdRule, scores
from ..judges.similarity import calibrate, noise_images, other_target_images, random_cppn_images
from ..util.fileio import atomic_path
from ..util.stats import binomial_interval, cohen_kappa, roc_auc
from ..util.verdicts import Estimate, compare_estimates
from .reference_verdicts import base_images, load_verdicts, networks, render_rows


def best_threshold(values, truth) -> float:
    """The threshold t of `values ≥ t` maximising Cohen's κ against `truth` (midpoints between
    consecutive distinct values; ties: the middle one of the tied candidates)."""
    v, y = np.asarray(values, float), np.asarray(truth, bool)
    s = np.unique(v)
    cands = np.r_[s[0] - 1e-9, (s[:-1] + s[1:]) / 2, s[-1] + 1e-9]
    k = np.array([cohen_kappa(v >= t, y) for t in cands])
    best = np.flatnonzero(k >= k.max() - 1e-12)
    return float(cands[best[len(best) // 2]])


def fit_rule(values, truth, labels=None, per_label: bool = False, score: str = "") -> ThresholdRule:
    """A `ThresholdRule` on one score, one threshold for all (default) or one per label (plus `"*"`, the
    one threshold for all, used for labels the fit did not see)."""
    v, y = np.asarray(values, float), np.asarray(truth, bool)
    if not per_label:
        return ThresholdRule(score, {"*": best_threshold(v, y)}, {"n": len(v)})
    labels = np.asarray(labels)
    th = {str(lab): best_threshold(v[labels == lab], y[labels == lab]) for lab in np.unique(labels)}
    th["*"] = best_threshold(v, y)
    return ThresholdRule(score, th, {"n": len(v)})


def agreement(pred, truth) -> dict:
    """Accuracy, Cohen's κ and the confusion matrix of predicted against reference verdicts."""
    p, y = np.asarray(pred, bool), np.asarray(truth, bool)
    if len(y) == 0:
        return {
            "n": 0,
            "accuracy": float("nan"),
            "kappa": float("nan"),
            "kept_kept": 0,
            "kept_notkept": 0,
            "notkept_kept": 0,
            "notkept_notkept": 0,
        }
    return {
        "n": len(y),
        "accuracy": float((p == y).mean()),
        "kappa": cohen_kappa(p, y),
        "kept_kept": int((p & y).sum()),
        "kept_notkept": int((p & ~y).sum()),  # keys: judge verdict _ reference verdict
        "notkept_kept": int((~p & y).sum()),
        "notkept_notkept": int((~p & ~y).sum()),
    }


def split(n: int, test_fraction: float = 0.4, seed: int = 0) -> np.ndarray:
    """`(n,)` bool: True for the held-out rows (a seeded random `test_fraction` of them)."""
    rng = np.random.default_rng(seed)
    test = np.zeros(n, bool)
    test[rng.permutation(n)[: round(test_fraction * n)]] = True
    return test


# ---------------------------------------------------------------------------------------------
# The comparison


@dataclass
class JudgeTable:
    """The perturbations of the reference set with their verdicts and every judge's score."""

    rows: object  # pandas DataFrame: the CSV rows (perturbations only) + base_kept + every score column
    other_targets: np.ndarray  # (n,) verdicts of the "ssim" judge (other-targets SSIM)
    other_thresholds: dict  # network -> its other-targets threshold


def judge_table(verdicts=None, nets=None) -> JudgeTable:
    """Regenerate every perturbation's image and compute each candidate score and the current
    default judge's verdict (a minute: the trained networks are rebuilt on CPU)."""
    df = load_verdicts() if verdicts is None else verdicts
    nets = nets or networks(groups=sorted(set(df["group"])))
    rows = perturbation_rows(df)
    imgs = render_rows(rows, nets)
    base = base_images(rows, nets)
    for k, v in scores(imgs, base).items():
        rows[k] = v
    th, negatives = {}, {}
    for name in rows["network"].unique():
        i = int(np.flatnonzero(rows["network"].to_numpy() == name)[0])
        tgt = rows.loc[i, "target"]
        if tgt not in negatives:  # calibrate()'s default negatives, built once per target
            res = base.shape[1]
            negatives[tgt] = {**other_target_images(res, tgt), **random_cppn_images(res), **noise_images(res)}
        th[name] = calibrate(base[i], negatives=negatives[tgt]).threshold
    other = rows["ssim@1"].to_numpy() >= rows["network"].map(th).to_numpy()
    return JudgeTable(rows, other, th)


def perturbation_rows(verdicts):
    """The perturbation rows of a verdict table (δ ≠ 0), with `base_kept`: whether the network's
    own unperturbed image was judged to show the object (True when its row is not in the table)."""
    base_kept = verdicts[verdicts.kernel < 0].set_index("network")["pass1"].astype(bool)
    rows = verdicts[verdicts.kernel >= 0].reset_index(drop=True).copy()
    rows["base_kept"] = rows["network"].map(base_kept).fillna(True).astype(bool)
    return rows


def judge_rows(make_judge, rows, nets) -> tuple[np.ndarray, np.ndarray, dict]:
    """Run a judge over `rows` (regenerating their images): `make_judge(base_image)` returns the
    judge for one network (model judges may ignore the base). Returns `(verdicts, scores, settings)`."""
    rows = rows.reset_index(drop=True)
    imgs = render_rows(rows, nets)
    v, sc, settings = np.zeros(len(rows), bool), np.zeros(len(rows)), {}

    for name, part in rows.groupby("network", sort=False):
        rn = nets[name]
        base = PerturbationEngine(rn.net, int(part["res"].iloc[0]), rn.member, device="cpu").base.cpu().double()
        j = make_judge(base)
        idx = part.index.to_numpy().copy()
        out = j(imgs[torch.from_numpy(idx)], part["label"].iloc[0])
        v[idx], sc[idx] = out.verdicts, out.scores
        settings = {"judge": out.judge, **{k: val for k, val in out.settings.items() if k != "label"}}
    return v, sc, settings


def check_judge(make_judge, verdicts=None, groups=None, max_images: int | None = None, seed: int = 0) -> dict:
    """Agreement of a judge with the reference verdicts (what `volratio judge-check` prints):
    over all perturbations of `groups` (default: all), and over those of networks whose own image
    shows the object; `max_images`: a seeded random subsample of the perturbations."""
    df = load_verdicts() if verdicts is None else verdicts
    if groups:
        df = df[df["group"].isin(groups)]
        if df.empty:
            raise VolratioError(f"no reference rows in groups {groups}")
    rows = perturbation_rows(df)
    if max_images is not None and max_images < len(rows):
        keep = np.sort(np.random.default_rng(seed).choice(len(rows), int(max_images), replace=False))
        rows = rows.iloc[keep].reset_index(drop=True)
    nets = networks(groups=sorted(set(rows["group"])))
    v, sc, settings = judge_rows(make_judge, rows, nets)
    y = rows["pass1"].to_numpy().astype(bool)
    bk = rows["base_kept"].to_numpy()
    return {
        "settings": settings,
        "all": agreement(v, y),
        "base kept": agreement(v[bk], y[bk]),
        "auc": roc_auc(sc, y),
        "groups": sorted(set(rows["group"])),
    }


def compare(table: JudgeTable, population: str = "base kept", test_fraction: float = 0.4, seed: int = 0):
    """Fit every rule on the training split and evaluate it on the held-out split.

    `population`: "base kept" (perturbations of networks whose own image shows the object — the
    question EMC2 asks) or "all". Returns `(results DataFrame, {rule name: ThresholdRule})`, one row per
    rule with held-out accuracy, κ, confusion counts, the score's held-out ROC AUC, and the
    training κ; the "ssim" judge (other-targets SSIM) is evaluated without fitting."""
    r = table.rows
    sel = r["base_kept"].to_numpy() if population == "base kept" else np.ones(len(r), bool)
    if population not in ("base kept", "all"):
        raise VolratioError(f"population must be 'base kept' or 'all', got {population!r}")
    r = r[sel].reset_index(drop=True)
    y = r["pass1"].to_numpy().astype(bool)
    labels = r["label"].to_numpy()
    test = split(len(r), test_fraction, seed)
    out, rules = [], {}
    for s in SCORES:
        v = r[s].to_numpy()
        for per in (False, True):
            rule = fit_rule(v[~test], y[~test], labels[~test], per_label=per, score=s)
            rule.fitted_on = {
                "n": int((~test).sum()),
                "res": int(r["res"].iloc[0]) if "res" in r else FIT_RES,
                "population": population,
                "split_seed": seed,
                "test_fraction": test_fraction,
            }
            rules[rule.name] = rule
            a = agreement(rule.predict(v[test], labels[test]), y[test])
            out.append(
                {
                    "rule": rule.name,
                    "score": s,
                    **a,
                    "auc": roc_auc(v[test], y[test]),
                    "train_kappa": cohen_kappa(rule.predict(v[~test], labels[~test]), y[~test]),
                    "thresholds": {k: round(t, 4) for k, t in rule.thresholds.items()},
                }
            )
    o = table.other_targets[sel]
    out.append(
        {
            "rule": 'other-targets SSIM ("ssim" judge)',
            "score": "ssim@1",
            **agreement(o[test], y[test]),
            "auc": roc_auc(r["ssim@1"].to_numpy()[test], y[test]),
            "train_kappa": cohen_kappa(o[~test], y[~test]),
            "thresholds": "per network",
        }
    )
    return pd.DataFrame(out).set_index("rule"), rules


def best_rule(results, rules) -> ThresholdRule:
    """The fitted rule with the highest held-out κ (ties: the simpler one-threshold rule, then the
    order of `SCORES`)."""
    fitted = results.drop(index=[k for k in results.index if k not in rules])
    k = fitted["kappa"].to_numpy()
    cands = [n for n, kk in zip(fitted.index, k) if kk >= k.max() - 1e-12]
    cands.sort(key=lambda n: ("per label" in n, SCORES.index(rules[n].score)))
    return rules[cands[0]]


def repeated_kappa(
    table: JudgeTable, rule_name: str, population: str = "base kept", repeats: int = 20, test_fraction: float = 0.4
) -> np.ndarray:
    """Held-out κ of one kind of rule over `repeats` random splits (seeds 0…repeats−1): how much
    the single split's number depends on the split."""
    r = table.rows
    if population == "base kept":
        r = r[r["base_kept"]]
    r = r.reset_index(drop=True)
    y = r["pass1"].to_numpy().astype(bool)
    labels = r["label"].to_numpy()
    score, per = rule_name.split(" (")[0], "per label" in rule_name
    v = r[score].to_numpy()
    out = []
    for seed in range(repeats):
        test = split(len(r), test_fraction, seed)
        rule = fit_rule(v[~test], y[~test], labels[~test], per_label=per, score=score)
        out.append(cohen_kappa(rule.predict(v[test], labels[test]), y[test]))
    return np.asarray(out)


def write_rule(rule: ThresholdRule, path=None) -> None:
    """Store `rule` as JSON (the default judge's settings)."""
    p = path or RULE_JSON
    with atomic_path(p) as tmp, open(tmp, "w") as f:
        json.dump(asdict(rule), f, indent=2, sort_keys=True)
        f.write("\n")


def emc2_from_verdicts(rows, judge_verdicts: dict | None = None):
    """Per network: S = the share of its sampled perturbations kept under the reference verdicts,
    with a 95% Wilson interval, and beside it S under each judge in `judge_verdicts`
    (name -> `(n,)` bool aligned with `rows`). δ is drawn uniformly from the set's 8 values, so S
    is the δ-averaged score (≈ the normalised AUC of the δ-curve). Returns a DataFrame."""
    out = []
    for name, part in rows.groupby("network", sort=False):
        k, n = int(part["pass1"].sum()), len(part)
        lo, hi = binomial_interval(k, n)
        row = {"network": name, "group": part["group"].iloc[0], "n": n, "S (verdicts)": k / n, "lo": lo, "hi": hi}
        if "base_kept" in part:
            row["own image kept"] = bool(part["base_kept"].iloc[0])
        for j, v in (judge_verdicts or {}).items():
            row[f"S ({j})"] = float(np.asarray(v)[part.index.to_numpy()].mean())
        out.append(row)
    return pd.DataFrame(out).set_index("network")


KINDS = {
    "picbreeder": "Picbreeder",
    "fer-sgd": "FER SGD",
    "dense": "dense (ours)",
    "sp": "SP (ours)",
    "scene-dense": "scene",
    "scene-sp": "scene",
}  # every other group: a baseline pruner


def kind_of(group: str) -> str:
    """The comparison kind of a reference-set group: Picbreeder, FER SGD, dense, SP, baselines, scene."""
    return KINDS.get(group, "baselines")


CLAIM_CHECKS = (  # (claim, higher kind, lower kind): the comparisons EMC2-Bench's claims rest on
    ("Picbreeder above FER SGD", "Picbreeder", "FER SGD"),
    ("Picbreeder above dense (ours)", "Picbreeder", "dense (ours)"),
    ("SP above the baseline pruners", "SP (ours)", "baselines"),
    ("SP above dense (ours)", "SP (ours)", "dense (ours)"),
)


def claims_under_judges(rows, judge_verdicts: dict):
    """For each comparison of `CLAIM_CHECKS`, S of both kinds (pooled over their networks' sampled
    perturbations, 95% Wilson intervals) under each judge (`name -> (n,) bool` aligned with
    `rows`), and the verdict of `volratio.report.claims.compare_estimates` ("reproduced" = intervals
    separated in the claimed direction). A DataFrame, one row per comparison × judge."""
    kinds = rows["group"].map(kind_of).to_numpy()
    out = []
    for claim, hi_kind, lo_kind in CLAIM_CHECKS:
        for name, v in judge_verdicts.items():
            v = np.asarray(v, bool)
            est = {}
            for k in (hi_kind, lo_kind):
                sel = kinds == k
                n, kept = int(sel.sum()), int(v[sel].sum())
                est[k] = Estimate(kept / n, *binomial_interval(kept, n)) if n else Estimate(np.nan, np.nan, np.nan)
            out.append(
                {
                    "comparison": claim,
                    "judge": name,
                    "S higher": f"{est[hi_kind].mean:.2f} [{est[hi_kind].lo:.2f}, {est[hi_kind].hi:.2f}]",
                    "S lower": f"{est[lo_kind].mean:.2f} [{est[lo_kind].lo:.2f}, {est[lo_kind].hi:.2f}]",
                    "verdict": compare_estimates(est[hi_kind], est[lo_kind]),
                }
            )
    return pd.DataFrame(out).set_index(["comparison", "judge"])
