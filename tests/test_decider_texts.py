"""What each claim's decider shows, on constructed inputs: the sentence of what was measured, the
one sentence beside the badge, and the forest plot's rows and axis. These are the words the claims
page pastes; a changed number, word or label in them fails here."""

import numpy as np
import pandas as pd
import pytest
from test_verdict_rules import ADAM, MUON, _curve, _frames, _scene_rows, _sixteen, _sp_table, _summary

from volratio.depth import fit_predictor
from volratio.experiments.depth_regime import PredictorCheck
from volratio.report import claims

TOY = pd.DataFrame({"r": [4, 2], "d": [2, 2], "mean_sq_inner": [0.1, 0.0]})
FITS = {"chain:2": {"W": {"lambda_W": {"rate": 0.1, "lo": -0.2, "hi": 0.4}},
                    "L": {"lambda_L": {"rate": 1.5, "lo": 1.2, "hi": 1.8}}}}  # fmt: skip
PB_TABLE = pd.DataFrame([{"network": n, "target": "picbreeder:skull", "auc": a, "auc_se": se, "n_params": p, "n_nonzero": 9}
                         for n, a, se, p in (("Picbreeder", 0.9, 0.0, 9), ("FER SGD", 0.1, 0.01, 5))])  # fmt: skip
PB_DENSE = pd.DataFrame([{"network": "dense (ours)", "target": "picbreeder:skull", "auc": a} for a in (0.2, 0.3)])


def _png():
    pred = fit_predictor(np.arange(2.0, 8.0), np.array([5, 3, 6, 2, 5, 4.0]))
    row = {"target": "picbreeder:held", "measured sweet spot": 5, "predicted": 5.1, "prediction interval": (4.5, 5.7),
           "inside": True}  # fmt: skip
    return claims.png_ratio_linear(pred, check=PredictorCheck(pred, [row]), what="measured sweet spot")


CASES = [
    (
        "sp",
        lambda: claims.sp_vs_pruners(_sp_table([0.3, 0.5, 0.7], [0.45, 0.45, 0.45]), judge="anchored")[0],
        "EMC2 AUC (label-anchored judge) SP 0.50; Lottery Ticket (IMP) 0.00, Wanda 0.45, LLM-Pruner 0.00; baselines at 0: 2 of 3; SP's interval above theirs: 1 of 3",
        "EMC2 AUC of SP minus the strongest baseline's, over targets and seeds = +0.050 [-0.447, +0.547] (the claim: above 0). SP's EMC2 AUC is 0.500 [0.003, 0.997] against 0.450 [0.450, 0.450] for Wanda, the strongest baseline; 2 of 3 baselines end below 0.05.",
        (
            ["SP", "Lottery Ticket (IMP)", "Wanda", "LLM-Pruner"],
            "EMC2 AUC, mean and 95% interval (label-anchored judge)",
            "baselines at 0 end below 0.05",
        ),
    ),
    (
        "depth",
        lambda: claims.depth_optimum(
            {
                "planted:a": _curve("planted:a", [0.3, -0.2, 0.25, -0.15]),
                "picbreeder:b": _curve("picbreeder:b", [0.1] * 4),
            },
            {"planted:a": 3},
            judge="anchored",
            detail="d",
        )[0],
        "largest peak − rest 0.100 vs mean 95% interval width 0.104; sweet spot = L* for 1 of 1 planted targets; seeds agree on the argmax for 1 of 2 targets — d",
        "EMC2 AUC at the true depth L* minus the higher of the shallower and the deeper depths' mean, over planted targets and seeds = +0.050 [-0.366, +0.466] (the claim: above 0). The tallest peak rises 0.100 above the rest of its curve, against a mean 95% interval width of 0.104; the sweet spot is the true depth L* for 1 of 1 planted targets.",
        (
            ["a", "b"],
            "peak − rest of each target's curve (planted targets in orange)",
            "mean width of a depth's 95% interval",
        ),
    ),
    (
        "png",
        lambda: _png(),
        "6 planted targets, measured sweet spot vs ratio: R² = 0.012, LOO RMSE 1.75 layers (guessing the mean: 1.34); held out: picbreeder:held measured 5, predicted 5.1 [4.5, 5.7]",
        "slope of the sweet-spot depth on the PNG ratio, in layers per unit of ratio (a less compressible, more complex target deeper) = -0.086 [-1.171, +1.000] (the claim: below 0). On 6 planted targets R² = 0.01 and the leave-one-out error is 1.75 layers (always guessing the mean: 1.34); 1 of 1 held-out sweet spots lie inside their 95% prediction intervals.",
        (
            ["held: predicted", "held: measured"],
            "sweet-spot depth: predicted (95% prediction interval) and measured",
            "",
        ),
    ),
    (
        "muon",
        lambda: claims.muon_above_adam(_summary(MUON["partly"], ADAM), "d"),
        "final MSE Muon 0.01 vs Adam 0.02; EMC2 AUC Muon 0.600 vs Adam 0.500 (d); per part: {'loss': 'reproduced', 'score': 'partly'}",
        "EMC2 AUC of Muon minus Adam's, each at its best setting, mean over the targets = +0.100 [-0.150, +0.350] (the claim: above 0): EMC2 AUC Muon 0.600 [0.400, 0.800] against Adam 0.500 [0.450, 0.550]; final loss Muon 0.01 against Adam 0.02.",
        (["Adam", "Muon"], "EMC2 AUC (mean, 95% interval)", ""),
    ),
    (
        "muonby",
        lambda: claims.muon_above_adam_by_target(
            {"t:a": _summary(MUON["partly"], ADAM), "t:b": _summary(MUON["reproduced"], ADAM)}, "d"
        ),
        "t:a: MSE Muon 0.01 vs Adam 0.02 (reproduced), AUC Muon 0.600 vs Adam 0.500 (partly); t:b: MSE Muon 0.01 vs Adam 0.02 (reproduced), AUC Muon 0.750 vs Adam 0.500 (reproduced); the parts combined: partly — d",
        "EMC2 AUC of Muon minus Adam's, each at its best setting, mean over the targets = +0.175 [-0.000, +0.350] (the claim: above 0). Muon's loss is lower in 2 of 2 targets and its EMC2 AUC higher in 1 of 2 (intervals separated); the largest AUC gap, b: Muon 0.750 [0.700, 0.800] against Adam 0.500 [0.450, 0.550].",
        (
            ["a: Adam", "a: Muon", "b: Adam", "b: Muon"],
            "EMC2 AUC at each optimizer's best setting (mean, 95% interval)",
            "",
        ),
    ),
    (
        "scenes",
        lambda: claims.scenes_weaker(_scene_rows((-0.05, -0.2, 0.1), (0.2, 0.1, 0.3)), "d"),
        "e0: scene − parts -0.050 (-0.200..+0.100); e1: scene − parts +0.200 (+0.100..+0.300) — d",
        "EMC2 score of the scene minus the mean of its parts', mean over the scenes and effect sizes = +0.075 [-0.050, +0.200] (the claim: below 0). The scene scores below its parts (interval below 0) at 0 of 2 settings; closest to the claim (e0): scene − parts = -0.050 [-0.200, +0.100].",
        (
            ["e0", "e1", "pooled over 2 settings (deciding)"],
            "scene − parts, mean score difference (bootstrap 95% interval)",
            "no difference (the claim: below it)",
        ),
    ),
    (
        "welch",
        lambda: claims.welch_r_le_d(_frames([1.0, 1.2, 1.1]), TOY, "d"),
        "3 constructed frames: smallest ratio to the Welch bound 1.000000 (never below 1: True); every frame with r > d has positive coherence: True; toy model in superposition (1 of 2 instances) has interference > 0: True — d",
        "Over 3 constructed frames, the smallest ratio of a frame's coherence to the Welch bound is 1.000000 (the bound: never below 1); interference > 0 in 3 of 3 frames with r > d and in 1 of 1 toy models in superposition.",
        (
            ["d = 2, r = 3…4", "d = 3, r = 5"],
            "smallest max coherence² ÷ Welch bound over the frames in d dimensions",
            "the Welch bound",
        ),
    ),
    (
        "rho",
        lambda: claims.rho_concentrated([("chain:2", "support", True), ("chain:2", "peak", False)], FITS, "d"),
        "chain:2: support holds; chain:2: peak fails (d)",
        "the slowest decay rate λ of ρ away from (W_min, L*), over the Boolean targets and both axes = 0.10 [-0.20, 0.40] (the claim: above 0), chain:2 along W. 1 of 2 checks (support, peak, decay) hold on 1 Boolean targets.",
        (
            ["chain:2: λ_W", "chain:2: λ_L"],
            "decay rate λ of ρ per unit of width (W) or depth (L), 95% interval",
            "no decay",
        ),
    ),
    (
        "pb3",
        lambda: claims.picbreeder_vs_sgd_stored(PB_TABLE, "d", dense=PB_DENSE, judge="anchored")[0],
        "EMC2 AUC (label-anchored judge), every non-zero weight except FER SGD picbreeder:skull 5 of 9 (seeded subsample): picbreeder:skull: Picbreeder 0.900 [0.900, 0.900], FER SGD 0.100 [0.080, 0.120], dense (ours), 2 seeds 0.250 [-0.385, 0.885] — d",
        "EMC2 AUC of the Picbreeder network minus the SGD-trained networks', mean over the targets = +0.725 [+0.398, +1.052] (the claim: above 0). The Picbreeder network's EMC2 AUC lies above the SGD-trained networks' in 2 of 2 comparisons.",
        (["skull: Picbreeder", "skull: FER SGD", "skull: dense (ours)"], "EMC2 AUC, mean and 95% interval", ""),
    ),
    (
        "pb16",
        lambda: claims.picbreeder_vs_sgd_stored(
            PB_TABLE,
            "d",
            dense=PB_DENSE,
            judge="anchored",
            sixteen=_sixteen([0.3, -0.1, 0.1, 9.0], used=[True, True, True, False]),
        )[0],
        "3 Picbreeder targets, each Picbreeder network against dense twins of its own architecture (FER's recipe): mean AUC difference Picbreeder − twins +0.100 [-0.397, +0.597]; left out: t3 (never draws). FER's own SGD networks (three targets): reproduced — EMC2 AUC (label-anchored judge), every non-zero weight except FER SGD picbreeder:skull 5 of 9 (seeded subsample): picbreeder:skull: Picbreeder 0.900 [0.900, 0.900], FER SGD 0.100 [0.080, 0.120], dense (ours), 2 seeds 0.250 [-0.385, 0.885] — d",
        "Over 3 Picbreeder targets, the Picbreeder network's EMC2 AUC minus its dense twins' is +0.100 [-0.397, +0.597] (the claim: above 0).",
        (["t0", "t1", "t2", "mean over 3 targets"], "EMC2 AUC difference, Picbreeder − twins", "no difference"),
    ),
]


@pytest.mark.parametrize("name, build, measured, line, forest", CASES, ids=[c[0] for c in CASES])
def test_what_each_decider_shows(name, build, measured, line, forest):
    v = build()
    assert v.measured == measured
    assert v.line() == line
    labels, xlabel, threshold_label = forest
    assert [r.label for r in v.forest.rows] == labels
    assert (v.forest.xlabel, v.forest.threshold_label) == (xlabel, threshold_label)


def test_sp_vs_pruners_table_says_each_baselines_sub_checks():
    _, t = claims.sp_vs_pruners(_sp_table([0.3, 0.5, 0.7], [0.45, 0.45, 0.45]))
    assert t.to_dict("records") == [
        {"claim predicts": "> 0", "measured AUC": "0.500 [0.003, 0.997]", "SP above it (intervals separated)": "—",
         "at 0 (upper end < 0.05)": "—"},
        {"claim predicts": "0", "measured AUC": "0.000 [0.000, 0.000]", "SP above it (intervals separated)": "yes",
         "at 0 (upper end < 0.05)": True},
        {"claim predicts": "0", "measured AUC": "0.450 [0.450, 0.450]",
         "SP above it (intervals separated)": "means only", "at 0 (upper end < 0.05)": False},
        {"claim predicts": "0", "measured AUC": "0.003 [-0.011, 0.018]",
         "SP above it (intervals separated)": "means only", "at 0 (upper end < 0.05)": True},
    ]  # fmt: skip
    _, t = claims.sp_vs_pruners(_sp_table([0.0, 0.0, 0.0], [0.5, 0.5, 0.5]))
    assert t.loc["wanda", "SP above it (intervals separated)"] == "no"


def test_depth_optimum_numbers():
    curves = {
        "planted:a": _curve("planted:a", [0.3, -0.2, 0.25, -0.15]),
        "picbreeder:b": _curve("picbreeder:b", [0.1] * 4),
    }
    _, n = claims.depth_optimum(curves, {"planted:a": 3})
    assert (n["hits"], n["inside"], n["agree"]) == (1, 1, 1)
    assert n["contrast"] == pytest.approx(0.1) and n["width"] == pytest.approx(0.10398899980969678)


def test_picbreeder_vs_sgd_table_and_evidence():
    v, t = claims.picbreeder_vs_sgd_stored(PB_TABLE, dense=PB_DENSE, judge="anchored")
    assert t.to_dict("records") == [
        {"Picbreeder AUC": "0.900 [0.900, 0.900]", "FER SGD AUC": "0.100 [0.080, 0.120]",
         "Picbreeder above FER SGD": "reproduced", "dense (ours) AUC, 2 seeds": "0.250 [-0.385, 0.885]",
         "Picbreeder above dense (ours)": "reproduced"}
    ]  # fmt: skip
    assert v.evidence["statistic"] == pytest.approx({"mean": 0.725, "lo": 0.3975448815956327, "hi": 1.0524551184043673})
    assert v.judge == "anchored" and v.scale == "reference"
    v16, _ = claims.picbreeder_vs_sgd_stored(PB_TABLE, dense=PB_DENSE, sixteen=_sixteen([0.3, -0.1, 0.1]))
    assert v16.evidence["sixteen"]["left_out"] == [] and v16.forest.threshold == 0.0
    assert v.forest.threshold is None
