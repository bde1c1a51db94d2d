"""Degenerate images are never the label: flat pages, 4×4 mosaics and blurs of the target, noise
and other labels' targets, for every label, under every gated label-anchored judge; the generated
negatives and the stored gated rule."""

import numpy as np
import pandas as pd
import pytest
import torch

from volratio import judges
from volratio.calibration import fit_anchored as fa
from volratio.calibration import hard_negatives as H
from volratio.data.picbreeder import ALL_NAMES
from volratio.data.targets import get_target
from volratio.errors import DataNotFoundError
from volratio.judges import anchored_rule as ar
from volratio.judges.base import rule_path

# the label-anchored judges whose rule has a structure gate
GATED = [n for n in judges.ANCHORED if judges.AnchoredJudge(torch.zeros(8, 8, 3), variant=n).rule.gate]


def degenerate(target: torch.Tensor) -> dict[str, torch.Tensor]:
    """Flat images in the target's own colours and others, and the target's 4×4 mosaic."""
    res = target.shape[0]
    out = {f"flat {k}": c.expand(res, res, 3).clone() for k, c in H.flat_colours(target).items()}
    out["pixelated 4x4"] = H.pixelated(target)
    return out


def judged_kept(name: str, spec: str, label: str, images: dict) -> list[str]:
    target = get_target(spec).image(64).double()
    j = judges.make_judge(name, target, spec)
    v = j(torch.stack(list(images.values())), label)
    return [k for k, kept in zip(images, v.verdicts) if kept]


def test_the_gated_judge_is_among_the_label_anchored_ones():
    assert {"anchored-gated", "anchored-xfit"} <= set(GATED) and "anchored-gated" in judges.JUDGES
    # the cross-fitted judge's rule for every fold and for all rows has a gate too
    xf = ar.read_crossfit()
    assert all(r.gate for r in [*xf.rules, xf.all])
    assert set(ar.read_rule(ar.GATED_RULE_JSON).gate) == set(ar.GATE_FEATURES)


@pytest.mark.parametrize("label", ALL_NAMES)
def test_flat_and_pixelated_images_are_never_the_label(label, extra_data, picbreeder_dir):
    spec = f"picbreeder:{label}"
    target = get_target(spec).image(64).double()
    for name in GATED:
        assert judged_kept(name, spec, label, degenerate(target)) == [], f"{name} keeps degenerate {label}s"
        assert judged_kept(name, spec, label, {"target": target}) == ["target"]  # the target itself is kept


def test_flat_and_pixelated_images_are_not_the_cameraman():
    """The same without the Picbreeder data, on a photograph bundled with scikit-image."""
    spec = "image:camera"
    target = get_target(spec).image(64).double()
    images = {**degenerate(target), "blurred": H.blurred(target, 8.0)}
    for name in GATED:
        assert judged_kept(name, spec, "camera", images) == []
        assert judged_kept(name, spec, "camera", {"target": target}) == ["target"]
    # the ungated default rule, on the same images, keeps some: what the gate is for
    assert judged_kept("anchored", spec, "camera", images) != []


def test_pixelated_and_flat_helpers():
    t = torch.rand(64, 64, 3, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    p = H.pixelated(t)
    assert len(torch.unique(p.reshape(-1, 3), dim=0)) == 16
    assert torch.allclose(p[:16, :16].mean(dim=(0, 1)), t[:16, :16].mean(dim=(0, 1)))
    c = H.flat_colours(t)
    assert {"mean", "most-frequent", "corner", "white"} <= set(c)
    assert torch.equal(c["corner"], t[0, 0]) and torch.allclose(c["mean"], t.reshape(-1, 3).mean(0))


def test_generated_negatives_cover_every_label_and_are_not_the_label(extra_data, picbreeder_dir):
    rows, images = H.hard_negatives()
    assert set(rows["label"]) == set(ALL_NAMES) and (rows["pass1"] == 0).all()
    assert len(images) == len(rows) and rows["id"].is_unique and rows["network"].is_unique
    kinds = rows["network"].str.split("/").str[1]
    for _, part in rows.groupby("label"):
        k = kinds[part.index]
        assert k.str.startswith("flat-").sum() == 10 and (k == "pixelated-4x4").sum() == 1
        assert (k == "blurred").sum() == 1 and k.str.startswith("noise-").sum() == 4
    # one label's two drawings are not each other's negatives
    assert not ((rows["label"] == "butterfly") & (kinds == "other-target-butterfly-grey")).any()
    assert ((rows["label"] == "skull") & (kinds == "other-target-butterfly-grey")).any()


def test_rule_files_ship_in_the_package_and_one_lookup_finds_them():
    for name in ("anchored", "anchored-ssim", "anchored-gated", "calibrated"):
        p = rule_path(name)
        assert p.is_file() and p.parent.parent.name == "judges"
    with pytest.raises(DataNotFoundError, match="judge rule 'nope' not found.*stored rules: anchored"):
        rule_path("nope")


def test_a_gate_rejects_and_round_trips(tmp_path):
    rule = ar.read_rule(ar.GATED_RULE_JSON)
    feats = {"-rmse": np.array([0.0, 0.0]), "edges": np.array([1.0, 0.0]), "detail": np.array([0.0, 0.0])}
    assert rule.predict(feats, ["skull", "skull"]).tolist() == [True, False]
    assert rule.score(feats)[1] == 0
    p = tmp_path / "r.json"
    fa.write_rule(rule, p)
    assert ar.read_rule(p) == rule
    bad = p.read_text().replace('"edges"', '"ssim@1"', 1)
    p.write_text(bad)
    with pytest.raises(ar.VolratioError, match="gate must map"):
        ar.read_rule(p)


@pytest.mark.slow
def test_refitting_the_gated_rule_gives_the_stored_one(extra_data, picbreeder_dir):
    table, gen = fa.verdict_table(), H.feature_table()
    rule, res = fa.fit_gated_default(table, gen)
    stored = ar.read_rule(ar.GATED_RULE_JSON)
    assert rule.thresholds == pytest.approx(stored.thresholds, abs=1e-9) and set(rule.gate) == set(stored.gate)
    # the gate's minimums are exact on the CPU kind that fitted them only (`fit_anchored.fit_gate`);
    # on any, the refitted rule keeps exactly the rows the stored one keeps
    both = pd.concat([table, gen], ignore_index=True)
    f, lab = {c: both[c].to_numpy() for c in stored.needs}, both["label"].to_numpy()
    assert (rule.predict(f, lab) == stored.predict(f, lab)).all()
    assert res["rejected_gated"].min() == 1.0  # every held-out generated negative, every split
    assert res["kappa_gated"].mean() > res["kappa_plain"].mean()
