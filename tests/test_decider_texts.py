"""What each claim's decider shows, on constructed inputs: the verdict, what was measured, the one
sentence beside the badge, the evidence, the forest plot (rows, axis, threshold) and the names it
glues in a notebook. These are what the claims page pastes; a changed number, word or label in them
fails here."""

import numpy as np
import pandas as pd
import pytest
from verdict_data import ADAM, MUON, depth_curve, frames, optimizer_summary, scene_rows, sixteen, sp_table

from volratio.depth import fit_predictor
from volratio.errors import VolratioError
from volratio.experiments.depth_regime import PredictorCheck
from volratio.report import claims, render

TOY = pd.DataFrame({"r": [4, 2], "d": [2, 2], "mean_sq_inner": [0.1, 0.0]})
FITS = {"chain:2": {"W": {"lambda_W": {"rate": 0.1, "lo": -0.2, "hi": 0.4}},
                    "L": {"lambda_L": {"rate": 1.5, "lo": 1.2, "hi": 1.8}}},
        "tree:2:2:depth3": {"W": {"lambda_W": {"rate": 0.5, "lo": 0.3, "hi": 0.7}}, "L": {}}}  # fmt: skip


def _pb_table(*targets):
    """EMC2 rows: per target (name, Picbreeder AUC, FER SGD AUC or None); FER SGD subsampled on the first."""
    rows = []
    for i, (t, pb, sgd) in enumerate(targets):
        rows.append({"network": "Picbreeder", "target": t, "auc": pb, "auc_se": 0.0, "n_params": 9, "n_nonzero": 9})
        if sgd is not None:
            rows.append({"network": "FER SGD", "target": t, "auc": sgd, "auc_se": 0.01, "n_params": 5 if i == 0 else 9,
                         "n_nonzero": 9})  # fmt: skip
    return pd.DataFrame(rows)


PB_TABLE = _pb_table(("picbreeder:skull", 0.9, 0.1), ("picbreeder:apple", 0.4, 0.5), ("picbreeder:owl", 0.7, None))
PB_DENSE = pd.DataFrame([{"network": "dense (ours)", "target": "picbreeder:skull", "auc": a} for a in (0.2, 0.3)]
                        + [{"network": "other", "target": "picbreeder:apple", "auc": 0.9}])  # fmt: skip


def _png(check=True):
    pred = fit_predictor(np.arange(2.0, 8.0), np.array([5, 3, 6, 2, 5, 4.0]))
    row = {"target": "picbreeder:held", "measured sweet spot": 5, "predicted": 5.1, "prediction interval": (4.5, 5.7),
           "inside": True}  # fmt: skip
    if not check:
        return claims.png_ratio_linear(pred)
    return claims.png_ratio_linear(
        pred, "reference", PredictorCheck(pred, [row]), "measured sweet spot", True, "anchored"
    )


def _depth(**kw):
    curves = {
        "planted:a": depth_curve("planted:a", [0.3, -0.2, 0.25, -0.15]),
        "planted:c": depth_curve("planted:c", [0.1, 0.2, 0.1, 0.2], true_at=4),
        "picbreeder:b": depth_curve("picbreeder:b", [0.1] * 4),
    }
    return claims.depth_optimum(curves, {"planted:a": 3, "planted:c": 4}, **kw)


def _plain(x, digits=9):
    """`x` with numpy scalars as Python numbers, floats rounded and NaN as "NaN" (nested dicts, lists, tuples)."""
    if isinstance(x, dict):
        return {k: _plain(v, digits) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_plain(v, digits) for v in x]
    if isinstance(x, (np.bool_, bool)):
        return bool(x)
    if isinstance(x, (float, np.floating)):
        return "NaN" if np.isnan(x) else round(float(x), digits)
    if isinstance(x, np.integer):
        return int(x)
    return x


def _shown(v, glued):
    f = v.forest
    forest = None if f is None else [[(r.label, r.mean, r.lo, r.hi, r.group) for r in f.rows], f.xlabel, f.threshold,
                                     f.threshold_label]  # fmt: skip
    return _plain({"verdict": v.verdict, "measured": v.measured, "line": v.line(), "evidence": v.evidence,
                   "scale": v.scale, "judge": v.judge, "forest": forest, "glued": glued})  # fmt: skip


@pytest.fixture
def glued(monkeypatch):
    """The names `record` glues, as in a notebook (myst-nb's `glue` replaced by a list)."""
    import myst_nb

    names = []
    monkeypatch.setattr(render, "_in_kernel", lambda: True)
    monkeypatch.setattr(myst_nb, "glue", lambda name, value, display=False: names.append(name))
    return names


CASES = {
    "sp": (
        lambda: claims.sp_vs_pruners(
            sp_table([0.3, 0.5, 0.7], [0.45, 0.45, 0.45]), scale="reference", judge="anchored", stored=True
        )[0],
        {
            "verdict": "partly",
            "measured": "EMC2 AUC (label-anchored judge) SP 0.50; Lottery Ticket (IMP) 0.00, Wanda 0.45, "
            "LLM-Pruner 0.00; baselines at 0: 2 of 3; SP's interval above theirs: 1 of 3",
            "line": "EMC2 AUC of SP minus the strongest baseline's, over targets and seeds = +0.050 [-0.447, "
            "+0.547] (the claim: above 0). SP's EMC2 AUC is 0.500 [0.003, 0.997] against 0.450 "
            "[0.450, 0.450] for Wanda, the strongest baseline; 2 of 3 baselines end below 0.05.",
            "evidence": {
                "statistic": {"mean": 0.05, "lo": -0.446827542, "hi": 0.546827542},
                "strongest baseline": "wanda",
                "sp": {"mean": 0.5, "lo": 0.003172458, "hi": 0.996827542},
                "imp": {"mean": 0.0, "lo": 0.0, "hi": 0.0},
                "wanda": {"mean": 0.45, "lo": 0.45, "hi": 0.45},
                "llm-pruner": {"mean": 0.003333333, "lo": -0.011008842, "hi": 0.017675509},
            },
            "scale": "reference",
            "judge": "anchored",
            "forest": [
                [
                    ["SP", 0.5, 0.003172458, 0.996827542, 0],
                    ["Lottery Ticket (IMP)", 0.0, 0.0, 0.0, 1],
                    ["Wanda", 0.45, 0.45, 0.45, 1],
                    ["LLM-Pruner", 0.003333333, -0.011008842, 0.017675509, 1],
                ],
                "EMC2 AUC, mean and 95% interval (label-anchored judge)",
                0.05,
                "baselines at 0 end below 0.05",
            ],
            "glued": [
                "claim-sp-vs-pruners-reference",
                "claim-sp-vs-pruners-reference-badge",
                "claim-sp-vs-pruners-reference-line",
                "claim-sp-vs-pruners-reference-forest",
            ],
        },
    ),
    "sp-default": (
        lambda: claims.sp_vs_pruners(sp_table([0.5] * 3, [0.05] * 3).assign(judge="anchored-ssim"))[0],
        {
            "verdict": "reproduced",
            "measured": "EMC2 AUC (label-anchored SSIM judge) SP 0.50; Lottery Ticket (IMP) 0.00, Wanda 0.05, "
            "LLM-Pruner 0.00; baselines at 0: 2 of 3; SP's interval above theirs: 3 of 3",
            "line": "EMC2 AUC of SP minus the strongest baseline's, over targets and seeds = +0.450 [+0.450, "
            "+0.450] (the claim: above 0). SP's EMC2 AUC is 0.500 [0.500, 0.500] against 0.050 "
            "[0.050, 0.050] for Wanda, the strongest baseline; 2 of 3 baselines end below 0.05.",
            "evidence": {
                "statistic": {"mean": 0.45, "lo": 0.45, "hi": 0.45},
                "strongest baseline": "wanda",
                "sp": {"mean": 0.5, "lo": 0.5, "hi": 0.5},
                "imp": {"mean": 0.0, "lo": 0.0, "hi": 0.0},
                "wanda": {"mean": 0.05, "lo": 0.05, "hi": 0.05},
                "llm-pruner": {"mean": 0.003333333, "lo": -0.011008842, "hi": 0.017675509},
            },
            "scale": "quick",
            "judge": "anchored-ssim",
            "forest": [
                [
                    ["SP", 0.5, 0.5, 0.5, 0],
                    ["Lottery Ticket (IMP)", 0.0, 0.0, 0.0, 1],
                    ["Wanda", 0.05, 0.05, 0.05, 1],
                    ["LLM-Pruner", 0.003333333, -0.011008842, 0.017675509, 1],
                ],
                "EMC2 AUC, mean and 95% interval (label-anchored SSIM judge)",
                0.05,
                "baselines at 0 end below 0.05",
            ],
            "glued": [
                "claim-sp-vs-pruners",
                "claim-sp-vs-pruners-badge",
                "claim-sp-vs-pruners-line",
                "claim-sp-vs-pruners-forest",
            ],
        },
    ),
    "depth": (
        lambda: _depth(scale="reference", judge="anchored", stored=True, detail="d")[0],
        {
            "verdict": "partly",
            "measured": "largest peak − rest 0.150 vs mean 95% interval width 0.085; sweet spot = L* for 2 of "
            "2 planted targets; seeds agree on the argmax for 2 of 3 targets — d",
            "line": "EMC2 AUC at the true depth L* minus the higher of the shallower and the deeper depths' "
            "mean, over planted targets and seeds = +0.100 [-0.053, +0.253] (the claim: above 0). The "
            "tallest peak rises 0.150 above the rest of its curve, against a mean 95% interval width "
            "of 0.085; the sweet spot is the true depth L* for 2 of 2 planted targets.",
            "evidence": {
                "statistic": {"mean": 0.1, "lo": -0.053179997, "hi": 0.253179997},
                "a peak stands above the interval width": True,
                "planted sweet spot = L* for every planted target": True,
            },
            "scale": "reference",
            "judge": "anchored",
            "forest": [
                [["a", 0.05, 0.05, 0.05, 1], ["c", 0.15, 0.15, 0.15, 1], ["b", 0.1, 0.1, 0.1, 0]],
                "peak − rest of each target's curve (planted targets in orange)",
                0.084637552,
                "mean width of a depth's 95% interval",
            ],
            "glued": [
                "claim-depth-optimum-reference",
                "claim-depth-optimum-reference-badge",
                "claim-depth-optimum-reference-line",
                "claim-depth-optimum-reference-forest",
            ],
        },
    ),
    "depth-default": (
        lambda: _depth()[0],
        {
            "verdict": "partly",
            "measured": "largest peak − rest 0.150 vs mean 95% interval width 0.085; sweet spot = L* for 2 of "
            "2 planted targets; seeds agree on the argmax for 2 of 3 targets",
            "line": "EMC2 AUC at the true depth L* minus the higher of the shallower and the deeper depths' "
            "mean, over planted targets and seeds = +0.100 [-0.053, +0.253] (the claim: above 0). The "
            "tallest peak rises 0.150 above the rest of its curve, against a mean 95% interval width "
            "of 0.085; the sweet spot is the true depth L* for 2 of 2 planted targets.",
            "evidence": {
                "statistic": {"mean": 0.1, "lo": -0.053179997, "hi": 0.253179997},
                "a peak stands above the interval width": True,
                "planted sweet spot = L* for every planted target": True,
            },
            "scale": "quick",
            "judge": None,
            "forest": [
                [["a", 0.05, 0.05, 0.05, 1], ["c", 0.15, 0.15, 0.15, 1], ["b", 0.1, 0.1, 0.1, 0]],
                "peak − rest of each target's curve (planted targets in orange)",
                0.084637552,
                "mean width of a depth's 95% interval",
            ],
            "glued": [
                "claim-depth-optimum",
                "claim-depth-optimum-badge",
                "claim-depth-optimum-line",
                "claim-depth-optimum-forest",
            ],
        },
    ),
    "png": (
        lambda: _png(),
        {
            "verdict": "partly",
            "measured": "6 planted targets, measured sweet spot vs ratio: R² = 0.012, LOO RMSE 1.75 layers "
            "(guessing the mean: 1.34); held out: picbreeder:held measured 5, predicted 5.1 [4.5, "
            "5.7]",
            "line": "slope of the sweet-spot depth on the PNG ratio, in layers per unit of ratio (a less "
            "compressible, more complex target deeper) = -0.086 [-1.171, +1.000] (the claim: below "
            "0). On 6 planted targets R² = 0.01 and the leave-one-out error is 1.75 layers (always "
            "guessing the mean: 1.34); 1 of 1 held-out sweet spots lie inside their 95% prediction "
            "intervals.",
            "evidence": {
                "statistic": {"mean": -0.085714286, "lo": -1.171461134, "hi": 1.000032562},
                "r2": 0.011868132,
                "loo_rmse": 1.753238574,
                "held_out_inside": 1,
                "sub-checks held": "1 of 3",
            },
            "scale": "reference",
            "judge": "anchored",
            "forest": [
                [["held: predicted", 5.1, 4.5, 5.7, 0], ["held: measured", 5.0, 5.0, 5.0, 1]],
                "sweet-spot depth: predicted (95% prediction interval) and measured",
                None,
                "",
            ],
            "glued": [
                "claim-png-ratio-linear-reference",
                "claim-png-ratio-linear-reference-badge",
                "claim-png-ratio-linear-reference-line",
                "claim-png-ratio-linear-reference-forest",
            ],
        },
    ),
    "png-default": (
        lambda: _png(check=False),
        {
            "verdict": "partly",
            "measured": "6 planted targets, true depth L* vs ratio: R² = 0.012, LOO RMSE 1.75 layers "
            "(guessing the mean: 1.34)",
            "line": "slope of the sweet-spot depth on the PNG ratio, in layers per unit of ratio (a less "
            "compressible, more complex target deeper) = -0.086 [-1.171, +1.000] (the claim: below "
            "0). On 6 planted targets R² = 0.01 and the leave-one-out error is 1.75 layers (always "
            "guessing the mean: 1.34).",
            "evidence": {
                "statistic": {"mean": -0.085714286, "lo": -1.171461134, "hi": 1.000032562},
                "r2": 0.011868132,
                "loo_rmse": 1.753238574,
                "sub-checks held": "0 of 2",
            },
            "scale": "quick",
            "judge": None,
            "forest": None,
            "glued": [
                "claim-png-ratio-linear",
                "claim-png-ratio-linear-badge",
                "claim-png-ratio-linear-line",
                "claim-png-ratio-linear-forest",
            ],
        },
    ),
    "muon": (
        lambda: claims.muon_above_adam(optimizer_summary(MUON["partly"], ADAM), "d", "reference", "anchored"),
        {
            "verdict": "partly",
            "measured": "final MSE Muon 0.01 vs Adam 0.02; EMC2 AUC Muon 0.600 vs Adam 0.500 (d); per part: "
            "{'loss': 'reproduced', 'score': 'partly'}",
            "line": "EMC2 AUC of Muon minus Adam's, each at its best setting, mean over the targets = +0.100 "
            "[-0.150, +0.350] (the claim: above 0): EMC2 AUC Muon 0.600 [0.400, 0.800] against Adam "
            "0.500 [0.450, 0.550]; final loss Muon 0.01 against Adam 0.02.",
            "evidence": {
                "statistic": {"mean": 0.1, "lo": -0.15, "hi": 0.35},
                "muon": {
                    "score": 0.6,
                    "score_lo": 0.4,
                    "score_hi": 0.8,
                    "loss": 0.01,
                    "loss_lo": 0.009,
                    "loss_hi": 0.011,
                },
                "adam": {
                    "score": 0.5,
                    "score_lo": 0.45,
                    "score_hi": 0.55,
                    "loss": 0.02,
                    "loss_lo": 0.018,
                    "loss_hi": 0.022,
                },
            },
            "scale": "reference",
            "judge": "anchored",
            "forest": [
                [["Adam", 0.5, 0.45, 0.55, 0], ["Muon", 0.6, 0.4, 0.8, 1]],
                "EMC2 AUC (mean, 95% interval)",
                None,
                "",
            ],
            "glued": [
                "claim-muon-above-adam",
                "claim-muon-above-adam-badge",
                "claim-muon-above-adam-line",
                "claim-muon-above-adam-forest",
            ],
        },
    ),
    "muon-indexed": (
        lambda: claims.muon_above_adam(optimizer_summary(MUON["contradicted"], ADAM).set_index("optimizer")),
        {
            "verdict": "contradicted",
            "measured": "final MSE Muon 0.01 vs Adam 0.02; EMC2 AUC Muon 0.200 vs Adam 0.500 (); per part: "
            "{'loss': 'reproduced', 'score': 'not reproduced'}",
            "line": "EMC2 AUC of Muon minus Adam's, each at its best setting, mean over the targets = -0.300 "
            "[-0.450, -0.150] (the claim: above 0): EMC2 AUC Muon 0.200 [0.100, 0.300] against Adam "
            "0.500 [0.450, 0.550]; final loss Muon 0.01 against Adam 0.02.",
            "evidence": {
                "statistic": {"mean": -0.3, "lo": -0.45, "hi": -0.15},
                "muon": {
                    "score": 0.2,
                    "score_lo": 0.1,
                    "score_hi": 0.3,
                    "loss": 0.01,
                    "loss_lo": 0.009,
                    "loss_hi": 0.011,
                },
                "adam": {
                    "score": 0.5,
                    "score_lo": 0.45,
                    "score_hi": 0.55,
                    "loss": 0.02,
                    "loss_lo": 0.018,
                    "loss_hi": 0.022,
                },
            },
            "scale": "quick",
            "judge": None,
            "forest": [
                [["Adam", 0.5, 0.45, 0.55, 0], ["Muon", 0.2, 0.1, 0.3, 1]],
                "EMC2 AUC (mean, 95% interval)",
                None,
                "",
            ],
            "glued": [
                "claim-muon-above-adam",
                "claim-muon-above-adam-badge",
                "claim-muon-above-adam-line",
                "claim-muon-above-adam-forest",
            ],
        },
    ),
    "muonby": (
        lambda: claims.muon_above_adam_by_target(
            {
                "t:a": optimizer_summary(MUON["partly"], ADAM),
                "t:b": optimizer_summary(MUON["reproduced"], ADAM, loss=(0.03, 0.01)),
            },
            "d",
            "reference",
            "anchored",
            False,
        ),
        {
            "verdict": "partly",
            "measured": "t:a: MSE Muon 0.01 vs Adam 0.02 (reproduced), AUC Muon 0.600 vs Adam 0.500 (partly); "
            "t:b: MSE Muon 0.03 vs Adam 0.01 (not reproduced), AUC Muon 0.750 vs Adam 0.500 "
            "(reproduced); the parts combined: partly — d",
            "line": "EMC2 AUC of Muon minus Adam's, each at its best setting, mean over the targets = +0.175 "
            "[-0.000, +0.350] (the claim: above 0). Muon's loss is lower in 1 of 2 targets and its "
            "EMC2 AUC higher in 1 of 2 (intervals separated); the largest AUC gap, b: Muon 0.750 "
            "[0.700, 0.800] against Adam 0.500 [0.450, 0.550].",
            "evidence": {
                "statistic": {"mean": 0.175, "lo": -0.0, "hi": 0.35},
                "t:a": {"loss": "reproduced", "score": "partly"},
                "t:b": {"loss": "not reproduced", "score": "reproduced"},
            },
            "scale": "reference",
            "judge": "anchored",
            "forest": [
                [
                    ["a: Adam", 0.5, 0.45, 0.55, 0],
                    ["a: Muon", 0.6, 0.4, 0.8, 1],
                    ["b: Adam", 0.5, 0.45, 0.55, 0],
                    ["b: Muon", 0.75, 0.7, 0.8, 1],
                ],
                "EMC2 AUC at each optimizer's best setting (mean, 95% interval)",
                None,
                "",
            ],
            "glued": [
                "claim-muon-above-adam",
                "claim-muon-above-adam-badge",
                "claim-muon-above-adam-line",
                "claim-muon-above-adam-forest",
            ],
        },
    ),
    "muonby-default": (
        lambda: claims.muon_above_adam_by_target({"t:a": optimizer_summary(MUON["partly"], ADAM)}),
        {
            "verdict": "partly",
            "measured": "t:a: MSE Muon 0.01 vs Adam 0.02 (reproduced), AUC Muon 0.600 vs Adam 0.500 (partly); "
            "the parts combined: partly",
            "line": "EMC2 AUC of Muon minus Adam's, each at its best setting, mean over the targets = +0.100 "
            "[-0.150, +0.350] (the claim: above 0). Muon's loss is lower in 1 of 1 targets and its "
            "EMC2 AUC higher in 0 of 1 (intervals separated); the largest AUC gap, a: Muon 0.600 "
            "[0.400, 0.800] against Adam 0.500 [0.450, 0.550].",
            "evidence": {
                "statistic": {"mean": 0.1, "lo": -0.15, "hi": 0.35},
                "t:a": {"loss": "reproduced", "score": "partly"},
            },
            "scale": "reference",
            "judge": None,
            "forest": [
                [["a: Adam", 0.5, 0.45, 0.55, 0], ["a: Muon", 0.6, 0.4, 0.8, 1]],
                "EMC2 AUC at each optimizer's best setting (mean, 95% interval)",
                None,
                "",
            ],
            "glued": [
                "claim-muon-above-adam-reference",
                "claim-muon-above-adam-reference-badge",
                "claim-muon-above-adam-reference-line",
                "claim-muon-above-adam-reference-forest",
            ],
        },
    ),
    "muonby-none": (
        lambda: claims.muon_above_adam_by_target({}),
        {
            "verdict": "not measured",
            "measured": "; the parts combined: not measured",
            "line": "EMC2 AUC of Muon minus Adam's, each at its best setting, mean over the targets: not measured.",
            "evidence": {"statistic": None},
            "scale": "reference",
            "judge": None,
            "forest": None,
            "glued": [
                "claim-muon-above-adam-reference",
                "claim-muon-above-adam-reference-badge",
                "claim-muon-above-adam-reference-line",
                "claim-muon-above-adam-reference-forest",
            ],
        },
    ),
    "scenes": (
        lambda: claims.scenes_weaker(
            scene_rows((-0.05, -0.2, 0.1), (0.2, 0.1, 0.3), (-0.2, -0.3, -0.01)), "d", "reference", "anchored", True
        ),
        {
            "verdict": "partly",
            "measured": "e0: scene − parts -0.050 (-0.200..+0.100); e1: scene − parts +0.200 "
            "(+0.100..+0.300); e2: scene − parts -0.200 (-0.300..-0.010) — d",
            "line": "EMC2 score of the scene minus the mean of its parts', mean over the scenes and effect "
            "sizes = -0.017 [-0.133, +0.130] (the claim: below 0). The scene scores below its parts "
            "(interval below 0) at 1 of 3 settings; closest to the claim (e2): scene − parts = -0.200 "
            "[-0.300, -0.010].",
            "evidence": {
                "statistic": {"mean": -0.016666667, "lo": -0.133333333, "hi": 0.13},
                "e0": {"scene": 0.45, "parts": 0.5},
                "e1": {"scene": 0.7, "parts": 0.5},
                "e2": {"scene": 0.3, "parts": 0.5},
            },
            "scale": "reference",
            "judge": "anchored",
            "forest": [
                [
                    ["e0", -0.05, -0.2, 0.1, 0],
                    ["e1", 0.2, 0.1, 0.3, 0],
                    ["e2", -0.2, -0.3, -0.01, 0],
                    ["pooled over 3 settings (deciding)", -0.016666667, -0.133333333, 0.13, 2],
                ],
                "scene − parts, mean score difference (bootstrap 95% interval)",
                0.0,
                "no difference (the claim: below it)",
            ],
            "glued": [
                "claim-scenes-weaker-reference",
                "claim-scenes-weaker-reference-badge",
                "claim-scenes-weaker-reference-line",
                "claim-scenes-weaker-reference-forest",
            ],
        },
    ),
    "scenes-default": (
        lambda: claims.scenes_weaker(scene_rows((0.0, -0.2, 0.0))),
        {
            "verdict": "not reproduced",
            "measured": "e0: scene − parts +0.000 (-0.200..+0.000)",
            "line": "EMC2 score of the scene minus the mean of its parts', mean over the scenes and effect "
            "sizes = +0.000 [-0.200, +0.000] (the claim: below 0). The scene scores below its parts "
            "(interval below 0) at 0 of 1 settings; closest to the claim (e0): scene − parts = +0.000 "
            "[-0.200, +0.000].",
            "evidence": {"statistic": {"mean": 0.0, "lo": -0.2, "hi": 0.0}, "e0": {"scene": 0.5, "parts": 0.5}},
            "scale": "quick",
            "judge": None,
            "forest": [
                [["e0", 0.0, -0.2, 0.0, 0], ["pooled over 1 settings (deciding)", 0.0, -0.2, 0.0, 2]],
                "scene − parts, mean score difference (bootstrap 95% interval)",
                0.0,
                "no difference (the claim: below it)",
            ],
            "glued": [
                "claim-scenes-weaker",
                "claim-scenes-weaker-badge",
                "claim-scenes-weaker-line",
                "claim-scenes-weaker-forest",
            ],
        },
    ),
    "welch": (
        lambda: claims.welch_r_le_d(frames([1.0, 1.2, 1.1]), TOY, "d", "reference", True),
        {
            "verdict": "reproduced",
            "measured": "3 constructed frames: smallest ratio to the Welch bound 1.000000 (never below 1: "
            "True); every frame with r > d has positive coherence: True; toy model in "
            "superposition (1 of 2 instances) has interference > 0: True — d",
            "line": "Over 3 constructed frames, the smallest ratio of a frame's coherence to the Welch bound "
            "is 1.000000 (the bound: never below 1); interference > 0 in 3 of 3 frames with r > d and "
            "in 1 of 1 toy models in superposition.",
            "evidence": {
                "statistic": {"mean": 1.0, "lo": 1.0, "hi": 1.0},
                "min_ratio": 1.0,
                "n_frames": 3,
                "n_superposed": 1,
                "sub-checks held": "3 of 3",
            },
            "scale": "reference",
            "judge": None,
            "forest": [
                [["d = 2, r = 3…4", 1.0, 1.0, 1.0, 0], ["d = 3, r = 5", 1.1, 1.1, 1.1, 0]],
                "smallest max coherence² ÷ Welch bound over the frames in d dimensions",
                1.0,
                "the Welch bound",
            ],
            "glued": [
                "claim-welch-r-le-d-reference",
                "claim-welch-r-le-d-reference-badge",
                "claim-welch-r-le-d-reference-line",
                "claim-welch-r-le-d-reference-forest",
            ],
        },
    ),
    "welch-default": (
        lambda: claims.welch_r_le_d(frames([1.0, 1.2, 1.1]).assign(max_sq_inner=[0.0, 0.4, 0.2]), TOY.iloc[1:]),
        {
            "verdict": "reproduced",
            "measured": "3 constructed frames: smallest ratio to the Welch bound 1.000000 (never below 1: "
            "True); every frame with r > d has positive coherence: False; toy model in "
            "superposition (0 of 1 instances) has interference > 0: False",
            "line": "Over 3 constructed frames, the smallest ratio of a frame's coherence to the Welch bound "
            "is 1.000000 (the bound: never below 1); interference > 0 in 2 of 3 frames with r > d and "
            "in 0 of 0 toy models in superposition.",
            "evidence": {
                "statistic": {"mean": 1.0, "lo": 1.0, "hi": 1.0},
                "min_ratio": 1.0,
                "n_frames": 3,
                "n_superposed": 0,
                "sub-checks held": "1 of 3",
            },
            "scale": "quick",
            "judge": None,
            "forest": [
                [["d = 2, r = 3…4", 1.0, 1.0, 1.0, 0], ["d = 3, r = 5", 1.1, 1.1, 1.1, 0]],
                "smallest max coherence² ÷ Welch bound over the frames in d dimensions",
                1.0,
                "the Welch bound",
            ],
            "glued": [
                "claim-welch-r-le-d",
                "claim-welch-r-le-d-badge",
                "claim-welch-r-le-d-line",
                "claim-welch-r-le-d-forest",
            ],
        },
    ),
    "rho": (
        lambda: claims.rho_concentrated(
            [("chain:2", "support", True), ("chain:2", "peak", False)], FITS, "d", "reference", True
        ),
        {
            "verdict": "partly",
            "measured": "chain:2: support holds; chain:2: peak fails (d)",
            "line": "the slowest decay rate λ of ρ away from (W_min, L*), over the Boolean targets and both "
            "axes = 0.10 [-0.20, 0.40] (the claim: above 0), chain:2 along W. 1 of 2 checks (support, "
            "peak, decay) hold on 2 Boolean targets.",
            "evidence": {
                "statistic": {"mean": 0.1, "lo": -0.2, "hi": 0.4},
                "chain:2 | support": True,
                "chain:2 | peak": False,
            },
            "scale": "reference",
            "judge": None,
            "forest": [
                [
                    ["chain:2: λ_W", 0.1, -0.2, 0.4, 0],
                    ["chain:2: λ_L", 1.5, 1.2, 1.8, 1],
                    ["tree:2:2: λ_W", 0.5, 0.3, 0.7, 0],
                ],
                "decay rate λ of ρ per unit of width (W) or depth (L), 95% interval",
                0.0,
                "no decay",
            ],
            "glued": [
                "claim-rho-concentrated-reference",
                "claim-rho-concentrated-reference-badge",
                "claim-rho-concentrated-reference-line",
                "claim-rho-concentrated-reference-forest",
            ],
        },
    ),
    "rho-default": (
        lambda: claims.rho_concentrated([("chain:2", "support", True)], {"chain:2": {}}),
        {
            "verdict": "not measured",
            "measured": "chain:2: support holds",
            "line": "the slowest decay rate λ of ρ away from (W_min, L*), over the Boolean targets and both "
            "axes: not measured. 1 of 1 checks (support, peak, decay) hold on 1 Boolean targets.",
            "evidence": {"statistic": None, "chain:2 | support": True},
            "scale": "quick",
            "judge": None,
            "forest": None,
            "glued": [
                "claim-rho-concentrated",
                "claim-rho-concentrated-badge",
                "claim-rho-concentrated-line",
                "claim-rho-concentrated-forest",
            ],
        },
    ),
    "pb3": (
        lambda: claims.picbreeder_vs_sgd_stored(PB_TABLE, "d", dense=PB_DENSE, judge="anchored")[0],
        {
            "verdict": "reproduced",
            "measured": "EMC2 AUC (label-anchored judge), every non-zero weight except FER SGD "
            "picbreeder:skull 5 of 9 (seeded subsample): picbreeder:skull: Picbreeder 0.900 "
            "[0.900, 0.900], FER SGD 0.100 [0.080, 0.120], dense (ours), 2 seeds 0.250 [-0.385, "
            "0.885]; picbreeder:apple: Picbreeder 0.400 [0.400, 0.400], FER SGD 0.500 [0.480, "
            "0.520] — d",
            "line": "EMC2 AUC of the Picbreeder network minus the SGD-trained networks', mean over the "
            "targets = +0.450 [+0.225, +0.675] (the claim: above 0). The Picbreeder network's EMC2 "
            "AUC lies above the SGD-trained networks' in 2 of 3 comparisons.",
            "evidence": {
                "statistic": {"mean": 0.45, "lo": 0.225163254, "hi": 0.674836746},
                "picbreeder:skull": {
                    "target": "picbreeder:skull",
                    "Picbreeder AUC": "0.900 [0.900, 0.900]",
                    "FER SGD AUC": "0.100 [0.080, 0.120]",
                    "Picbreeder above FER SGD": "reproduced",
                    "dense (ours) AUC, 2 seeds": "0.250 [-0.385, 0.885]",
                    "Picbreeder above dense (ours)": "reproduced",
                },
                "picbreeder:apple": {
                    "target": "picbreeder:apple",
                    "Picbreeder AUC": "0.400 [0.400, 0.400]",
                    "FER SGD AUC": "0.500 [0.480, 0.520]",
                    "Picbreeder above FER SGD": "not reproduced",
                },
            },
            "scale": "reference",
            "judge": "anchored",
            "forest": [
                [
                    ["skull: Picbreeder", 0.9, 0.9, 0.9, 0],
                    ["skull: FER SGD", 0.1, 0.0804, 0.1196, 1],
                    ["skull: dense (ours)", 0.25, -0.385310237, 0.885310237, 2],
                    ["apple: Picbreeder", 0.4, 0.4, 0.4, 0],
                    ["apple: FER SGD", 0.5, 0.4804, 0.5196, 1],
                ],
                "EMC2 AUC, mean and 95% interval",
                None,
                "",
            ],
            "glued": [
                "claim-picbreeder-vs-sgd-reference",
                "claim-picbreeder-vs-sgd-reference-badge",
                "claim-picbreeder-vs-sgd-reference-line",
                "claim-picbreeder-vs-sgd-reference-forest",
            ],
        },
    ),
    "pb3-z": (
        lambda: claims.picbreeder_vs_sgd_stored(PB_TABLE.assign(judge="anchored-ssim"), z=1.0)[0],
        {
            "verdict": "reproduced",
            "measured": "EMC2 AUC (label-anchored SSIM judge), every non-zero weight except FER SGD "
            "picbreeder:skull 5 of 9 (seeded subsample): picbreeder:skull: Picbreeder 0.900 "
            "[0.900, 0.900], FER SGD 0.100 [0.090, 0.110]; picbreeder:apple: Picbreeder 0.400 "
            "[0.400, 0.400], FER SGD 0.500 [0.490, 0.510]",
            "line": "EMC2 AUC of the Picbreeder network minus the SGD-trained networks', mean over the "
            "targets = +0.350 [+0.340, +0.360] (the claim: above 0). The Picbreeder network's EMC2 "
            "AUC lies above the SGD-trained networks' in 1 of 2 comparisons.",
            "evidence": {
                "statistic": {"mean": 0.35, "lo": 0.34, "hi": 0.36},
                "picbreeder:skull": {
                    "target": "picbreeder:skull",
                    "Picbreeder AUC": "0.900 [0.900, 0.900]",
                    "FER SGD AUC": "0.100 [0.090, 0.110]",
                    "Picbreeder above FER SGD": "reproduced",
                },
                "picbreeder:apple": {
                    "target": "picbreeder:apple",
                    "Picbreeder AUC": "0.400 [0.400, 0.400]",
                    "FER SGD AUC": "0.500 [0.490, 0.510]",
                    "Picbreeder above FER SGD": "not reproduced",
                },
            },
            "scale": "reference",
            "judge": "anchored-ssim",
            "forest": [
                [
                    ["skull: Picbreeder", 0.9, 0.9, 0.9, 0],
                    ["skull: FER SGD", 0.1, 0.09, 0.11, 1],
                    ["apple: Picbreeder", 0.4, 0.4, 0.4, 0],
                    ["apple: FER SGD", 0.5, 0.49, 0.51, 1],
                ],
                "EMC2 AUC, mean and 95% interval",
                None,
                "",
            ],
            "glued": [
                "claim-picbreeder-vs-sgd-reference",
                "claim-picbreeder-vs-sgd-reference-badge",
                "claim-picbreeder-vs-sgd-reference-line",
                "claim-picbreeder-vs-sgd-reference-forest",
            ],
        },
    ),
    "pb16": (
        lambda: claims.picbreeder_vs_sgd_stored(
            PB_TABLE,
            "d",
            dense=PB_DENSE,
            judge="anchored",
            sixteen=sixteen([0.3, -0.1, 0.1, 9.0], used=[True, True, True, False]),
        )[0],
        {
            "verdict": "partly",
            "measured": "3 Picbreeder targets, each Picbreeder network against dense twins of its own "
            "architecture (FER's recipe): mean AUC difference Picbreeder − twins +0.100 [-0.397, "
            "+0.597]; left out: t3 (never draws). FER's own SGD networks (three targets): partly "
            "— EMC2 AUC (label-anchored judge), every non-zero weight except FER SGD "
            "picbreeder:skull 5 of 9 (seeded subsample): picbreeder:skull: Picbreeder 0.900 "
            "[0.900, 0.900], FER SGD 0.100 [0.080, 0.120], dense (ours), 2 seeds 0.250 [-0.385, "
            "0.885]; picbreeder:apple: Picbreeder 0.400 [0.400, 0.400], FER SGD 0.500 [0.480, "
            "0.520] — d",
            "line": "Over 3 Picbreeder targets, the Picbreeder network's EMC2 AUC minus its dense twins' is "
            "+0.100 [-0.397, +0.597] (the claim: above 0).",
            "evidence": {
                "statistic": {"mean": 0.1, "lo": -0.396827542, "hi": 0.596827542},
                "sixteen": {"mean": 0.1, "lo": -0.396827542, "hi": 0.596827542, "left_out": ["t3 (never draws)"]},
                "picbreeder:skull": {
                    "target": "picbreeder:skull",
                    "Picbreeder AUC": "0.900 [0.900, 0.900]",
                    "FER SGD AUC": "0.100 [0.080, 0.120]",
                    "Picbreeder above FER SGD": "reproduced",
                    "dense (ours) AUC, 2 seeds": "0.250 [-0.385, 0.885]",
                    "Picbreeder above dense (ours)": "reproduced",
                },
                "picbreeder:apple": {
                    "target": "picbreeder:apple",
                    "Picbreeder AUC": "0.400 [0.400, 0.400]",
                    "FER SGD AUC": "0.500 [0.480, 0.520]",
                    "Picbreeder above FER SGD": "not reproduced",
                },
            },
            "scale": "reference",
            "judge": "anchored",
            "forest": [
                [
                    ["t0", 0.3, 0.3, 0.3, 0],
                    ["t1", -0.1, -0.1, -0.1, 0],
                    ["t2", 0.1, 0.1, 0.1, 0],
                    ["mean over 3 targets", 0.1, -0.396827542, 0.596827542, 2],
                ],
                "EMC2 AUC difference, Picbreeder − twins",
                0.0,
                "no difference",
            ],
            "glued": [
                "claim-picbreeder-vs-sgd-reference",
                "claim-picbreeder-vs-sgd-reference-badge",
                "claim-picbreeder-vs-sgd-reference-line",
                "claim-picbreeder-vs-sgd-reference-forest",
            ],
        },
    ),
    "pb16-none": (
        lambda: claims.picbreeder_vs_sgd_stored(PB_TABLE, sixteen=sixteen([]))[0],
        {
            "verdict": "not measured",
            "measured": "EMC2 AUC (judge not recorded), every non-zero weight except FER SGD picbreeder:skull "
            "5 of 9 (seeded subsample): picbreeder:skull: Picbreeder 0.900 [0.900, 0.900], FER "
            "SGD 0.100 [0.080, 0.120]; picbreeder:apple: Picbreeder 0.400 [0.400, 0.400], FER SGD "
            "0.500 [0.480, 0.520]",
            "line": "EMC2 AUC of the Picbreeder network minus the SGD-trained networks', mean over the "
            "targets = +0.350 [+0.330, +0.370] (the claim: above 0). The Picbreeder network's EMC2 "
            "AUC lies above the SGD-trained networks' in 1 of 2 comparisons.",
            "evidence": {
                "statistic": None,
                "sixteen": {"mean": None, "lo": None, "hi": None, "left_out": []},
                "picbreeder:skull": {
                    "target": "picbreeder:skull",
                    "Picbreeder AUC": "0.900 [0.900, 0.900]",
                    "FER SGD AUC": "0.100 [0.080, 0.120]",
                    "Picbreeder above FER SGD": "reproduced",
                },
                "picbreeder:apple": {
                    "target": "picbreeder:apple",
                    "Picbreeder AUC": "0.400 [0.400, 0.400]",
                    "FER SGD AUC": "0.500 [0.480, 0.520]",
                    "Picbreeder above FER SGD": "not reproduced",
                },
            },
            "scale": "reference",
            "judge": None,
            "forest": None,
            "glued": [
                "claim-picbreeder-vs-sgd-reference",
                "claim-picbreeder-vs-sgd-reference-badge",
                "claim-picbreeder-vs-sgd-reference-line",
                "claim-picbreeder-vs-sgd-reference-forest",
            ],
        },
    ),
    "pb-none": (
        lambda: claims.picbreeder_vs_sgd_stored(_pb_table(("picbreeder:owl", 0.7, None)))[0],
        {
            "verdict": "not measured",
            "measured": "EMC2 AUC (judge not recorded), every non-zero weight: ",
            "line": "EMC2 AUC of the Picbreeder network minus the SGD-trained networks', mean over the "
            "targets: not measured. The Picbreeder network's EMC2 AUC lies above the SGD-trained "
            "networks' in 0 of 0 comparisons.",
            "evidence": {"statistic": None},
            "scale": "reference",
            "judge": None,
            "forest": None,
            "glued": [
                "claim-picbreeder-vs-sgd-reference",
                "claim-picbreeder-vs-sgd-reference-badge",
                "claim-picbreeder-vs-sgd-reference-line",
                "claim-picbreeder-vs-sgd-reference-forest",
            ],
        },
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_what_each_decider_shows(name, glued):
    build, expected = CASES[name]
    assert _shown(build(), glued) == expected


def test_sp_vs_pruners_table_says_each_baselines_sub_checks():
    _, t = claims.sp_vs_pruners(sp_table([0.3, 0.5, 0.7], [0.45, 0.45, 0.45]))
    assert list(t.index) == ["sp", "imp", "wanda", "llm-pruner"]
    assert _plain(t.to_dict("records")) == [
        {
            "SP above it (intervals separated)": "—",
            "at 0 (upper end < 0.05)": "—",
            "claim predicts": "> 0",
            "measured AUC": "0.500 [0.003, 0.997]",
        },
        {
            "SP above it (intervals separated)": "yes",
            "at 0 (upper end < 0.05)": True,
            "claim predicts": "0",
            "measured AUC": "0.000 [0.000, 0.000]",
        },
        {
            "SP above it (intervals separated)": "means only",
            "at 0 (upper end < 0.05)": False,
            "claim predicts": "0",
            "measured AUC": "0.450 [0.450, 0.450]",
        },
        {
            "SP above it (intervals separated)": "means only",
            "at 0 (upper end < 0.05)": True,
            "claim predicts": "0",
            "measured AUC": "0.003 [-0.011, 0.018]",
        },
    ]
    _, t = claims.sp_vs_pruners(sp_table([0.0, 0.0, 0.0], [0.5, 0.5, 0.5]))
    assert t.loc["wanda", "SP above it (intervals separated)"] == "no"


def test_depth_optimum_numbers():
    assert _plain(_depth()[1]) == {
        "agree": 2,
        "contrast": 0.15,
        "hits": 2,
        "inside": 2,
        "statistic": {"hi": 0.253179997, "lo": -0.053179997, "mean": 0.1},
        "width": 0.084637552,
    }


def test_picbreeder_vs_sgd_table():
    _, t = claims.picbreeder_vs_sgd_stored(PB_TABLE, dense=PB_DENSE, judge="anchored")
    assert list(t.index) == ["picbreeder:skull", "picbreeder:apple"]
    assert _plain(t.to_dict("records")) == [
        {
            "FER SGD AUC": "0.100 [0.080, 0.120]",
            "Picbreeder AUC": "0.900 [0.900, 0.900]",
            "Picbreeder above FER SGD": "reproduced",
            "Picbreeder above dense (ours)": "reproduced",
            "dense (ours) AUC, 2 seeds": "0.250 [-0.385, 0.885]",
        },
        {
            "FER SGD AUC": "0.500 [0.480, 0.520]",
            "Picbreeder AUC": "0.400 [0.400, 0.400]",
            "Picbreeder above FER SGD": "not reproduced",
            "Picbreeder above dense (ours)": "NaN",
            "dense (ours) AUC, 2 seeds": "NaN",
        },
    ]
    _, empty = claims.picbreeder_vs_sgd_stored(_pb_table(("picbreeder:owl", 0.7, None)))
    assert empty.empty


def test_judge_of():
    both = pd.DataFrame({"judge": ["anchored", "anchored-ssim"]})
    assert claims.judge_of(both, "stability") == "stability"  # given: the table is not read
    assert claims.judge_of(pd.DataFrame({"judge": ["anchored", None]})) == "anchored"
    assert claims.judge_of(pd.DataFrame({"judge": [None, None]})) is None
    assert claims.judge_of(pd.DataFrame({"auc": [0.5]})) is None and claims.judge_of([1, 2]) is None
    with pytest.raises(
        VolratioError,
        match=r"^the table mixes EMC2 judges \['anchored', 'anchored-ssim'\]; compare runs scored under one judge$",
    ):
        claims.judge_of(both)
    dense = PB_DENSE.assign(judge="stability")
    with pytest.raises(
        VolratioError, match=r"^the EMC2 runs were scored under 'anchored' but the dense runs under 'stability'$"
    ):
        claims.picbreeder_vs_sgd_stored(PB_TABLE.assign(judge="anchored"), dense=dense)
