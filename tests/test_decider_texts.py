"""What each claim's decider decides, on constructed inputs: the verdict word and the deciding
statistic's numbers, and that it glues its pieces under the claim's names. The sentences are built
from those numbers by one renderer, and are not pinned here word for word."""

import numpy as np
import pandas as pd
import pytest
from verdict_data import ADAM, MUON
from verdict_data import depth_curve as _curve
from verdict_data import frames as _frames
from verdict_data import optimizer_summary as _summary
from verdict_data import scene_rows as _scene_rows
from verdict_data import sixteen as _sixteen
from verdict_data import sp_table as _sp_table

from volratio.depth import fit_predictor
from volratio.errors import VolratioError
from volratio.experiments.depth_regime import PredictorCheck
from volratio.report import claims, deciders, render

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
        "planted:a": _curve("planted:a", [0.3, -0.2, 0.25, -0.15]),
        "planted:c": _curve("planted:c", [0.1, 0.2, 0.1, 0.2], true_at=4),
        "picbreeder:b": _curve("picbreeder:b", [0.1] * 4),
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
    "sp": lambda: claims.sp_vs_pruners(
        _sp_table([0.3, 0.5, 0.7], [0.45, 0.45, 0.45]), scale="reference", judge="anchored", stored=True
    )[0],
    "sp-default": lambda: claims.sp_vs_pruners(_sp_table([0.5] * 3, [0.05] * 3).assign(judge="anchored-ssim"))[0],
    "depth": lambda: _depth(scale="reference", judge="anchored", stored=True, detail="d")[0],
    "depth-default": lambda: _depth()[0],
    "png": lambda: _png(),
    "png-default": lambda: _png(check=False),
    "muon": lambda: claims.muon_above_adam(_summary(MUON["inconclusive"], ADAM), "d", "reference", "anchored"),
    "muon-indexed": lambda: claims.muon_above_adam(_summary(MUON["contradicted"], ADAM).set_index("optimizer")),
    "muonby": lambda: claims.muon_above_adam_by_target(
        {"t:a": _summary(MUON["inconclusive"], ADAM), "t:b": _summary(MUON["reproduced"], ADAM, loss=(0.03, 0.01))},
        "d",
        "reference",
        "anchored",
        False,
    ),
    "muonby-default": lambda: claims.muon_above_adam_by_target({"t:a": _summary(MUON["inconclusive"], ADAM)}),
    "muonby-none": lambda: claims.muon_above_adam_by_target({}),
    "scenes": lambda: claims.scenes_weaker(
        _scene_rows((-0.05, -0.2, 0.1), (0.2, 0.1, 0.3), (-0.2, -0.3, -0.01)), "d", "reference", "anchored", True
    ),
    "scenes-default": lambda: claims.scenes_weaker(_scene_rows((0.0, -0.2, 0.0))),
    "welch": lambda: claims.welch_r_le_d(_frames([1.0, 1.2, 1.1]), TOY, "d", "reference", True),
    "welch-default": lambda: claims.welch_r_le_d(
        _frames([1.0, 1.2, 1.1]).assign(max_sq_inner=[0.0, 0.4, 0.2]), TOY.iloc[1:]
    ),
    "rho": lambda: claims.rho_concentrated(
        [("chain:2", "support", True), ("chain:2", "peak", False)], FITS, "d", "reference", True
    ),
    "rho-default": lambda: claims.rho_concentrated([("chain:2", "support", True)], {"chain:2": {}}),
    "pb3": lambda: claims.picbreeder_vs_sgd_stored(PB_TABLE, "d", dense=PB_DENSE, judge="anchored")[0],
    "pb3-z": lambda: claims.picbreeder_vs_sgd_stored(PB_TABLE.assign(judge="anchored-ssim"), z=1.0)[0],
    "pb16": lambda: claims.picbreeder_vs_sgd_stored(
        PB_TABLE,
        "d",
        dense=PB_DENSE,
        judge="anchored",
        sixteen=_sixteen([0.3, -0.1, 0.1, 9.0], used=[True, True, True, False]),
    )[0],
    "pb16-none": lambda: claims.picbreeder_vs_sgd_stored(PB_TABLE, sixteen=_sixteen([]))[0],
    "pb-none": lambda: claims.picbreeder_vs_sgd_stored(_pb_table(("picbreeder:owl", 0.7, None)))[0],
}

# what each case decides: the verdict and the deciding statistic (6 digits)
EXPECTED = {
    "sp": ("inconclusive", {"mean": 0.05, "lo": -0.214811, "hi": 0.314811}),
    "sp-default": ("reproduced", {"mean": 0.45, "lo": 0.45, "hi": 0.45}),
    # two planted targets: the interval speaks of targets like them (t on 1 degree of freedom)
    "depth": ("inconclusive", {"mean": 0.1, "lo": -1.117909, "hi": 1.317503}),
    "depth-default": ("inconclusive", {"mean": 0.1, "lo": -1.117909, "hi": 1.317503}),
    "png": ("inconclusive", {"mean": -0.085714, "lo": -1.171461, "hi": 1.000033}),
    "png-default": ("inconclusive", {"mean": -0.085714, "lo": -1.171461, "hi": 1.000033}),
    "muon": ("inconclusive", {"mean": 0.1, "lo": -0.15, "hi": 0.35}),
    "muon-indexed": ("contradicted", {"mean": -0.3, "lo": -0.45, "hi": -0.15}),
    # the score inconclusive; the loss, pooled over t:a (Muon half Adam's) and t:b (three times it), contradicts
    "muonby": ("contradicted", {"mean": 0.175, "lo": -0.0, "hi": 0.35}),
    "muonby-default": ("inconclusive", {"mean": 0.1, "lo": -0.15, "hi": 0.35}),
    "muonby-none": ("not measured", None),
    "scenes": ("inconclusive", {"mean": -0.016667, "lo": -0.518643, "hi": 0.485309}),  # over 3 scenes, 2 dof
    "scenes-default": ("inconclusive", {"mean": 0.0, "lo": -0.2, "hi": 0.0}),
    "welch": ("reproduced", {"mean": 1.0, "lo": 1.0, "hi": 1.0}),
    "welch-default": ("reproduced", {"mean": 1.0, "lo": 1.0, "hi": 1.0}),
    "rho": ("inconclusive", {"mean": 0.1, "lo": -0.2, "hi": 0.4}),
    "rho-default": ("not measured", None),
    "pb3": ("inconclusive", {"mean": 0.3125, "lo": -4.928809, "hi": 5.553809}),
    "pb3-z": ("inconclusive", {"mean": 0.35, "lo": -5.367792, "hi": 6.067792}),
    "pb16": ("inconclusive", {"mean": 0.1, "lo": -0.396828, "hi": 0.596828}),
    "pb16-none": ("not measured", None),
    "pb-none": ("not measured", None),
}


@pytest.mark.parametrize("name", list(CASES))
def test_what_each_decider_decides(name, glued):
    v = CASES[name]()
    v = v[0] if isinstance(v, tuple) else v
    st = v.evidence.get("statistic")
    assert (v.verdict, None if st is None else {k: round(float(x), 6) for k, x in st.items()}) == EXPECTED[name]
    shown = _shown(v, glued)
    assert shown["glued"] and all(g.startswith(f"claim-{v.key}") for g in shown["glued"])


def test_sp_vs_pruners_table_says_each_baselines_sub_checks():
    _, t = claims.sp_vs_pruners(_sp_table([0.3, 0.5, 0.7], [0.45, 0.45, 0.45]))
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
    _, t = claims.sp_vs_pruners(_sp_table([0.0, 0.0, 0.0], [0.5, 0.5, 0.5]))
    assert t.loc["wanda", "SP above it (intervals separated)"] == "no"


def test_depth_optimum_numbers():
    n = _plain(_depth()[1])
    assert {k: n[k] for k in ("agree", "contrast", "hits", "inside", "width", "networks not scored")} == {
        "agree": 2, "contrast": 0.15, "hits": 2, "inside": 2, "width": 0.084637552, "networks not scored": 0}  # fmt: skip
    assert n["statistic"]["mean"] == pytest.approx(0.1)  # L* above the better side, averaged over the targets
    assert n["against every other depth"]["mean"] == pytest.approx(0.1)  # every other depth scores 0.5 here
    assert n["power"]["networks_per_cell"] == 4 and n["power"]["smallest_effect"] == 0.1


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


# The Picbreeder claim: its two comparisons as data (`deciders.three_target_comparison`,
# `deciders.sixteen_target_comparison`), and the one verdict the decider records from the one that decides.

PB16_EXCLUDED = _sixteen([-0.2, -0.25, -0.3, 0.4], used=[True, True, True, False])
PB16_ZERO = _sixteen([-0.2, 0.25, -0.3, 0.0]).assign(
    twins=3, **{"twins drawn": [3, 1, 3, 0], "Picbreeder drawn": [True, True, True, False]}
)


def _six(e):
    """An `Estimate` (or an evidence entry's mean, lo and hi) as a tuple, 6 digits; None stays None."""
    if e is None:
        return None
    e = e if isinstance(e, dict) else vars(e)
    return tuple(round(float(e[k]), 6) for k in ("mean", "lo", "hi"))


def test_three_target_comparison_numbers():
    three = deciders.three_target_comparison(PB_TABLE, PB_DENSE)
    assert [t.target for t in three.targets] == ["picbreeder:skull", "picbreeder:apple"]  # owl: no FER SGD network
    skull, apple = three.targets
    assert (_six(skull.picbreeder), _six(skull.sgd), _six(skull.dense), skull.seeds) == (
        (0.9, 0.9, 0.9), (0.1, 0.0804, 0.1196), (0.25, -0.38531, 0.88531), 2)  # fmt: skip
    assert apple.dense is None  # only the "dense (ours)" rows are ours
    assert three.parts() == ["reproduced", "reproduced", "not reproduced"]
    assert three.subsampled == (("FER SGD", "picbreeder:skull", 5, 9),)
    # per target, Picbreeder minus the others averaged (skull (0.80 + 0.65) / 2, apple −0.10); t over the 2 targets
    assert _six(three.estimate) == (0.3125, -4.928809, 5.553809)


def test_three_target_comparison_on_one_target_averages_its_comparisons_intervals():
    three = deciders.three_target_comparison(_pb_table(("picbreeder:skull", 0.9, 0.5)), PB_DENSE)
    assert _six(three.estimate) == (0.525, 0.197545, 0.852455)  # (0.40 and 0.65 [0.015, 1.285]) averaged
    assert deciders.three_target_comparison(_pb_table(("picbreeder:owl", 0.7, None))).estimate is None


def test_the_three_targets_decide_without_the_sixteen():
    v, _ = claims.picbreeder_vs_sgd_stored(_pb_table(("picbreeder:skull", 0.9, 0.5)), dense=PB_DENSE)
    assert (v.verdict, _six(v.evidence["statistic"])) == ("reproduced", (0.525, 0.197545, 0.852455))
    assert list(v.evidence) == ["statistic", "picbreeder:skull"]
    assert v.forest.threshold is None and [r.group for r in v.forest.rows] == [0, 1, 2]


def test_sixteen_target_comparison_scored_zero_decides_with_the_excluded_reading_beside_it():
    both = deciders.sixteen_target_comparison(PB16_EXCLUDED, PB16_ZERO)
    d, x = both.deciding, both.excluded
    assert (d.verdict, _six(d.estimate), d.used, d.left_out) == ("inconclusive", (-0.0625, -0.44887, 0.32387), 4, ())
    assert (x.verdict, _six(x.estimate), x.used, x.left_out) == (
        "contradicted", (-0.25, -0.374207, -0.125793), 3, ("t3 (never draws)",))  # fmt: skip
    assert both.failed == 6  # twins that never draw: 0 + 2 + 0 + 3; and one Picbreeder network
    alone = deciders.sixteen_target_comparison(PB16_EXCLUDED)
    assert alone.deciding == x and alone.excluded is None


def test_the_sixteen_targets_decide_over_the_three():
    """Three targets that reproduce the claim do not decide it once the sixteen are given: the
    verdict and statistic are the scored-0 reading's, the excluded reading's stand beside them."""
    table = _pb_table(("picbreeder:skull", 0.9, 0.1))
    assert claims.picbreeder_vs_sgd_stored(table)[0].verdict == "reproduced"
    v, _ = claims.picbreeder_vs_sgd_stored(table, sixteen=PB16_EXCLUDED, sixteen_zero=PB16_ZERO)
    assert (v.verdict, _six(v.evidence["statistic"])) == ("inconclusive", (-0.0625, -0.44887, 0.32387))
    assert list(v.evidence) == ["statistic", "sixteen", "picbreeder:skull", "power", "sixteen_excluded"]
    x = v.evidence["sixteen_excluded"]
    assert (x["verdict"], _six(x), x["failed"]) == ("contradicted", (-0.25, -0.374207, -0.125793), 6)
    assert v.evidence["power"]["targets"] == 4
    assert v.forest.threshold == 0.0 and v.forest.rows[-1].label == "mean over 4 targets"
    v, _ = claims.picbreeder_vs_sgd_stored(table, sixteen=PB16_EXCLUDED)
    assert (v.verdict, _six(v.evidence["statistic"])) == ("contradicted", (-0.25, -0.374207, -0.125793))
    assert "sixteen_excluded" not in v.evidence and v.evidence["sixteen"]["left_out"] == ["t3 (never draws)"]
    assert v.evidence["power"]["targets"] == 3


def test_sixteen_targets_without_a_used_target_are_not_measured():
    """The sixteen decide even when none of their targets has a statistic: the verdict is "not
    measured", and its text says so before it states the three targets' AUCs beside it."""
    table = _pb_table(("picbreeder:skull", 0.9, 0.1))
    v, _ = claims.picbreeder_vs_sgd_stored(table, sixteen=_sixteen([0.5], used=[False]))
    assert (v.verdict, v.evidence["statistic"], v.forest) == ("not measured", None, None)
    assert v.measured.startswith("The sixteen-target comparison, which decides, has no target with both sides")
    assert "the three targets, beside it: EMC2 AUC" in v.measured


def test_the_scored_zero_reading_alone_is_refused():
    table = _pb_table(("picbreeder:skull", 0.9, 0.1))
    with pytest.raises(VolratioError, match="sixteen_zero is the sixteen-target comparison.*give it with sixteen"):
        claims.picbreeder_vs_sgd_stored(table, sixteen_zero=PB16_ZERO)


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


def test_nothing_is_glued_inside_unglued(glued):
    """A verdict, its judge comparison and its δ row computed inside `unglued()` glue nothing (a
    reading that does not decide the claim must not replace the claims page's), and the same calls
    outside it glue each."""
    with render.unglued():
        v = CASES["depth"]()
        render.by_judge("depth-optimum", lambda j: v, ["anchored", "anchored-ssim"])
        render.delta_reading("depth-optimum", v, v)
    assert glued == []
    CASES["depth"]()
    render.by_judge("depth-optimum", lambda j: v, ["anchored", "anchored-ssim"])
    render.delta_reading("depth-optimum", v, v)
    assert {"claim-depth-optimum-judges", "claim-depth-optimum-robust", "claim-depth-optimum-delta"} <= set(glued)
    assert any(n.startswith("claim-depth-optimum-reference") for n in glued)


def test_a_judged_verdict_glues_its_judge_in_a_word(glued, monkeypatch):
    """The claims page's line under a badge names the judge that decided it (`-judge`: "gated
    default" for the default judge); a claim that involves no judge glues none."""
    import myst_nb

    values = {}
    monkeypatch.setattr(myst_nb, "glue", lambda name, value, display=False: values.__setitem__(name, value.data))
    claims.record("depth-optimum", "inconclusive", "m", scale="reference", judge="anchored-v2", stored=True)
    assert values["claim-depth-optimum-reference-judge"] == "gated default"
    claims.record("welch-r-le-d", "reproduced", "m", scale="reference", stored=True)
    assert "claim-welch-r-le-d-reference-judge" not in values
