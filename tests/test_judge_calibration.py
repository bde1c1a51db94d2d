"""Calibrating the offline judge on the reference verdicts; the judge commands; the change lens."""

import json

import numpy as np
import pytest
import torch
from fake_models import FakeProcessor, FakeVLM, tiny_clip

from volratio import judges
from volratio.calibration import fit_calibrated as jc
from volratio.cli import main
from volratio.emc2 import change_structure as cs
from volratio.judges import calibrated_rule as cr
from volratio.judges import models as judge_models
from volratio.util.stats import roc_auc


def test_threshold_fit_and_agreement_on_synthetic_scores():
    rng = np.random.default_rng(0)
    v = np.r_[rng.uniform(0.6, 1.0, 40), rng.uniform(0.0, 0.5, 20)]
    y = np.r_[np.ones(40, bool), np.zeros(20, bool)]
    t = jc.best_threshold(v, y)
    assert 0.5 <= t <= 0.6  # inside the gap
    rule = jc.fit_rule(v, y, per_label=False, score="ssim@4")
    a = jc.agreement(rule.predict(v, ["x"] * 60), y)
    assert a["kappa"] == 1.0 and a["kept_kept"] == 40 and a["notkept_notkept"] == 20
    assert roc_auc(v, y) == 1.0 and roc_auc(-v, y) == 0.0
    a = jc.agreement([1, 1, 0, 0], [1, 0, 1, 0])
    assert (a["kept_kept"], a["kept_notkept"], a["notkept_kept"], a["notkept_notkept"]) == (1, 1, 1, 1)
    per = jc.fit_rule(v, y, labels=np.r_[["a"] * 30, ["b"] * 30], per_label=True, score="edges")
    assert set(per.thresholds) == {"a", "b", "*"} and per.name == "edges (per label)"
    assert jc.split(10, 0.4, 0).sum() == 4 and np.array_equal(jc.split(10, 0.4, 0), jc.split(10, 0.4, 0))


def test_scores_are_one_for_the_reference_and_lower_for_noise():
    g = torch.Generator().manual_seed(0)
    ref = torch.rand(32, 32, 3, generator=g, dtype=torch.float64)
    noise = torch.rand(32, 32, 3, generator=g, dtype=torch.float64)
    s = cr.scores(torch.stack([ref, noise]), torch.stack([ref, ref]))
    for k in cr.SCORES:
        assert s[k][0] == pytest.approx(1.0 if k != "-rmse" else 0.0, abs=1e-9) and s[k][1] < s[k][0]
    with pytest.raises(jc.VolratioError, match="unknown score"):
        cr.score_of("nope", ref, ref)


def test_stored_rule_is_the_calibrated_judge():
    rule = cr.read_rule()
    assert rule.score in cr.SCORES and {"skull", "butterfly", "apple", "*"} <= set(rule.thresholds)
    ref = torch.rand(64, 64, 3, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    j = judges.make_judge("calibrated", ref)
    v = j(torch.stack([ref, torch.zeros_like(ref)]), "skull")
    assert v.verdicts.tolist() == [True, False] and v.judge == "calibrated" and v.settings["score"] == rule.score
    assert j(ref, "an unseen label").settings["thresholds"]["*"] == rule.thresholds["*"]


def test_read_rule_errors(tmp_path):
    with pytest.raises(jc.VolratioError, match="not found"):
        cr.read_rule(tmp_path / "none.json")
    (tmp_path / "bad.json").write_text(json.dumps({"score": "x"}))
    with pytest.raises(jc.VolratioError, match="not a judge rule"):
        cr.read_rule(tmp_path / "bad.json")


def _png(path, arr):
    from PIL import Image

    Image.fromarray((np.clip(arr, 0, 1) * 255 + 0.5).astype(np.uint8)).save(path)


def test_judge_command_on_png_files(tmp_path, capsys):
    rng = np.random.default_rng(0)
    ref = rng.uniform(size=(48, 48, 3))
    _png(tmp_path / "ref.png", ref)
    _png(tmp_path / "same.png", ref)
    _png(tmp_path / "noise.png", rng.uniform(size=(48, 48, 3)))
    rc = main(
        [
            "judge",
            str(tmp_path / "same.png"),
            str(tmp_path / "noise.png"),
            "--reference",
            str(tmp_path / "ref.png"),
            "--label",
            "skull",
            "--judge",
            "calibrated",
            "--json",
        ]
    )
    out = json.loads(capsys.readouterr().out)
    assert rc == 0 and out["judge"] == "calibrated" and out["anchor"] == "own image"
    assert [r["kept"] for r in out["images"]] == [True, False] and out["images"][0]["score"] == pytest.approx(1.0)
    _png(tmp_path / "small.png", ref[:32, :32])
    rc = main(["judge", str(tmp_path / "small.png"), "--reference", str(tmp_path / "ref.png"), "--label", "skull",
               "--judge", "calibrated"])  # fmt: skip
    err = capsys.readouterr().err
    assert rc == 2 and "--reference is 48×48" in err and len(err.strip().splitlines()) == 1


def test_judge_check_calibrated(picbreeder_dir, capsys):
    rc = main(["judge-check", "--judge", "calibrated", "--set", "first", "--groups", "picbreeder", "--max-images", "30",
               "--json"])  # fmt: skip
    out = json.loads(capsys.readouterr().out)
    assert rc == 0 and out["all"]["n"] == 30 and out["groups"] == ["picbreeder"]
    assert out["all"]["accuracy"] > 0.7  # the calibrated judge against the verdicts it was calibrated on


def test_judge_check_with_atiny_clip(picbreeder_dir, tmp_path, capsys):

    folder = tiny_clip(tmp_path)
    rc = main(
        [
            "judge-check",
            "--set",
            "first",
            "--judge",
            "clip",
            "--model",
            str(folder),
            "--groups",
            "fer-sgd",
            "--max-images",
            "8",
            "--device",
            "cpu",
            "--json",
        ]
    )
    out = json.loads(capsys.readouterr().out)
    a = out["all"]
    assert rc == 0 and out["settings"]["judge"] == "clip" and out["settings"]["model"] == str(folder)
    assert a["n"] == 8 and a["kept_kept"] + a["kept_notkept"] + a["notkept_kept"] + a["notkept_notkept"] == 8


def test_judge_check_with_a_fake_vlm(picbreeder_dir, monkeypatch, capsys):

    monkeypatch.setattr(judge_models, "_load", lambda *a, **k: (FakeVLM(), FakeProcessor()))
    rc = main(
        [
            "judge-check",
            "--set",
            "first",
            "--judge",
            "vlm",
            "--model",
            "fake",
            "--groups",
            "picbreeder",
            "--max-images",
            "10",
            "--device",
            "cpu",
        ]
    )
    out = capsys.readouterr().out
    assert rc == 0 and "judge vlm" in out and "n = 10" in out and "Cohen's κ" in out


def test_judge_check_on_the_anchored_set_with_a_fake_vlm(picbreeder_dir, monkeypatch, capsys):
    """A model judge goes through the same base check: on the anchored set its EMC2 verdicts need
    the unperturbed image shown too."""

    monkeypatch.setattr(judge_models, "_load", lambda *a, **k: (FakeVLM(), FakeProcessor()))
    argv = ["judge-check", "--judge", "vlm", "--model", "fake", "--groups", "flat", "--device", "cpu", "--json"]
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["groups"] == ["flat"] and out["images"]["n"] == 36 and out["settings"]["judge"] == "vlm"
    assert (
        out["emc2"]["kept_kept"] + out["emc2"]["kept_notkept"]
        <= out["images"]["kept_kept"] + out["images"]["kept_notkept"]
    )


def test_judge_check_rejects_bad_options(capsys):
    assert main(["judge-check", "--judge", "ssim", "--max-images", "0"]) == 2
    assert "--max-images" in capsys.readouterr().err
    assert main(["judge-check", "--judge", "ssim", "--groups", "nope"]) == 2


def test_change_structure_measures():
    base = np.zeros((2, 20, 20, 3))
    img = base.copy()
    img[0, 5, 5] = 1.0  # one pixel
    img[1] += 0.3  # everything, evenly
    m = cs.measure(img, base)
    assert m.concentration[0] == pytest.approx(1.0) and m.concentration[1] == pytest.approx(0.1, abs=0.01)
    two = base[:1].copy()
    two[0, 2:5, 2:5] = 1.0
    two[0, 12:15, 12:15] = 1.0
    assert cs.measure(two, base[:1]).regions[0] == 2
    y, x = np.mgrid[:20, :20]
    checker = base[:1] + (((y + x) % 2) * 0.2)[None, :, :, None]
    smooth = base[:1] + (0.2 * np.sin(2 * np.pi * x / 20))[None, :, :, None]
    assert cs.measure(checker, base[:1]).hf_share[0] > 0.9
    assert cs.measure(smooth, base[:1]).hf_share[0] < 0.1


@pytest.mark.slow
def test_refitting_on_the_verdicts_gives_the_stored_rule(picbreeder_dir):
    """The stored default rule is what `compare` + `best_rule` produce from the CSV (a minute), the
    images regenerated from the stored networks; and the stored rule's agreement on the Picbreeder
    and FER rows (every score ≥ 0.006 from its threshold)."""
    from volratio.calibration import reference_verdicts as rv

    stored = cr.read_rule()
    verdicts = rv.load_verdicts()
    fixed = jc.judge_table(
        verdicts[verdicts.group.isin(["picbreeder", "fer-sgd"])], nets=rv.networks(groups=["picbreeder", "fer-sgd"])
    ).rows
    a = jc.agreement(stored.predict(fixed[stored.score], fixed["label"]), fixed["pass1"].astype(bool))
    counts = ("n", "kept_kept", "kept_notkept", "notkept_kept", "notkept_notkept")
    assert [a[k] for k in counts] == [270, 230, 0, 21, 19]
    table = jc.judge_table()
    res, rules = jc.compare(table)
    best = jc.best_rule(res, rules)
    stored = cr.read_rule()
    assert best.score == stored.score
    assert best.thresholds == pytest.approx(stored.thresholds)
    assert res.loc[best.name, "kappa"] == res["kappa"].drop('other-targets SSIM ("ssim" judge)').max()
