"""The default judge: the calibrated judge at every image size, bit-for-bit unchanged at 64×64, and
"calibrated" as the default name everywhere a default exists ("ssim" still selectable)."""

import dataclasses
import inspect
import json

import numpy as np
import pytest
import torch

from volratio import judges
from volratio.calibration import fit_calibrated as jc
from volratio.judges import calibrated_rule as cr


def _images(res: int, n: int = 6):
    """A reference (a random CPPN image) and a batch: itself, small and large changes, other images."""
    imgs = list(judges.random_cppn_images(res, n=n, seed=3).values())
    ref = imgs[0]
    g = torch.Generator().manual_seed(0)
    near = (ref + 0.03 * torch.randn(ref.shape, generator=g, dtype=torch.float64)).clamp(0, 1)
    far = (ref + 0.3 * torch.randn(ref.shape, generator=g, dtype=torch.float64)).clamp(0, 1)
    return ref, torch.stack([ref, near, far, *imgs[1:]])


def test_at_the_fitting_size_scores_are_score_of_bit_for_bit():
    rule = cr.read_rule()
    assert rule.res == 64
    ref, batch = _images(64)
    j = judges.ReferenceCalibratedJudge(ref)
    for label in ("skull", "butterfly", "apple", "an unseen label"):
        v = j(batch, label)
        want = cr.score_of(rule.score, batch, ref)
        assert np.array_equal(v.scores, want)  # exactly today's numbers (stored 64-px results verify)
        assert np.array_equal(v.verdicts, want >= rule.threshold(label))
    assert judges.resample(batch, 64) is not None and torch.equal(judges.resample(batch, 64), batch)


def test_single_score_is_score_of_bit_for_bit():
    ref, batch = _images(64)
    for name in cr.SCORES:
        assert np.array_equal(cr.single_score(name, batch, ref), cr.score_of(name, batch, ref)), name
    with pytest.raises(jc.VolratioError, match="unknown score"):
        cr.single_score("nope", batch, ref)


@pytest.mark.parametrize("res", [8, 16, 20, 27, 28, 32, 48, 63, 65, 96, 128])
def test_defined_at_every_size(res):
    """Below 28 px SSIM@4 had no 7×7 window; now every size is resampled to 64 and judged as fitted."""
    ref, batch = _images(res)
    j = judges.ReferenceCalibratedJudge(ref)
    v = j(batch, "skull")
    assert v.scores.shape == (len(batch),) and np.isfinite(v.scores).all()
    assert v.scores[0] == pytest.approx(1.0) and v.verdicts[0]
    assert v.scores[1] > v.scores[2]  # a small change scores above a large one
    assert v.settings["res"] == 64 and v.settings["reference_res"] == res
    # the same as judging the resampled images at 64 with the resampled reference
    j64 = judges.ReferenceCalibratedJudge(judges.resample(ref, 64)[0])
    assert np.array_equal(v.scores, j64(judges.resample(batch, 64), "skull").scores)


def test_resampling_is_area_when_shrinking_and_bilinear_when_enlarging():
    ref, batch = _images(64)
    big = batch.repeat_interleave(2, dim=1).repeat_interleave(2, dim=2)  # (B, 128, 128, 3), nearest ×2
    assert torch.equal(judges.resample(big, 64), batch)  # 2×2 block means of equal pixels: exact
    j = judges.ReferenceCalibratedJudge(ref)
    assert np.array_equal(j(big, "apple").scores, j(batch, "apple").scores)  # 128-px images, 64-px reference
    x = torch.rand(2, 96, 96, 3, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    want = torch.nn.functional.adaptive_avg_pool2d(x.permute(0, 3, 1, 2), 64).permute(0, 2, 3, 1)
    assert torch.allclose(judges.resample(x, 64), want, atol=1e-12)
    small = x[:, :20, :20]
    up = torch.nn.functional.interpolate(small.permute(0, 3, 1, 2), size=(64, 64), mode="bilinear")
    assert torch.allclose(judges.resample(small, 64), up.permute(0, 2, 3, 1), atol=1e-12)
    assert judges.resample(x, 64).shape == (2, 64, 64, 3) and judges.resample(small, 64).dtype == torch.float64


def test_rule_resolution_is_recorded_and_defaults_to_64(tmp_path):
    d = json.loads(cr.RULE_JSON.read_text())
    assert d["fitted_on"]["res"] == 64
    del d["fitted_on"]["res"]
    (tmp_path / "old.json").write_text(json.dumps(d))
    assert cr.read_rule(tmp_path / "old.json").res == 64  # a rule stored without it was fitted at 64
    d["fitted_on"]["res"] = 0
    (tmp_path / "bad.json").write_text(json.dumps(d))
    with pytest.raises(jc.VolratioError, match="fitted_on.res"):
        cr.read_rule(tmp_path / "bad.json")
    rule = cr.ThresholdRule("ssim@4", {"*": 0.5}, {"res": 32})
    ref, batch = _images(64)
    j = judges.ReferenceCalibratedJudge(ref, rule)
    assert j.res == 32 and np.array_equal(
        j(batch, "x").scores, cr.score_of("ssim@4", judges.resample(batch, 32), judges.resample(ref, 32)[0])
    )


def test_pooled_judge_scores_alike_and_uses_one_threshold_for_every_label():
    rule = cr.read_rule()
    assert rule.per_label and rule.threshold("skull") != rule.threshold("*")
    ref, batch = _images(64)
    per_label = judges.ReferenceCalibratedJudge(ref)
    pooled = judges.make_judge("calibrated-pooled", ref)
    assert isinstance(pooled, judges.PooledCalibratedJudge) and pooled.name == "calibrated-pooled"
    for label in ("skull", "butterfly", "scene:picbreeder:skull+picbreeder:apple"):
        v, w = pooled(batch, label), per_label(batch, label)
        assert np.array_equal(v.scores, w.scores)  # the same score; only the threshold differs
        assert np.array_equal(v.verdicts, v.scores >= rule.threshold("*"))
    assert pooled.settings()["thresholds"] == {"*": rule.threshold("*")}
    with pytest.raises(jc.VolratioError, match="no pooled threshold"):
        cr.ThresholdRule("ssim@4", {"skull": 0.5}).pooled()


def test_the_gated_v2_judge_is_the_default_everywhere():
    from volratio import emc2, rho
    from volratio.cli import build_parser
    from volratio.experiments import depth_regime, emc2_bench, optimizers, unknown_targets

    d = judges.DEFAULT_JUDGE
    assert d == "anchored-v2" and judges.JUDGES[0] == d and "anchored" in judges.JUDGES and "ssim" in judges.JUDGES
    assert set(judges.SELF_ANCHORED) == {"calibrated", "calibrated-pooled", "ssim", "stability"}
    assert inspect.signature(emc2.judged_examples).parameters["judge"].default == d
    assert depth_regime.Settings().judge == depth_regime.Config.quick().judge == d
    assert emc2_bench.Config.quick().judge == d
    assert unknown_targets.Config.quick().judge == d
    assert optimizers.Config.quick().base.judge == d
    assert depth_regime.Config.reference().judge == d
    assert judges.default_judge(np.zeros((8, 8, 3))).name == d
    # the basin criterion keeps its own (stored rho_basin runs name no judge and mean this one)
    assert inspect.signature(rho.basin_grid).parameters["judge"].default is None and rho.BASIN_JUDGE == "calibrated"
    p = build_parser()
    for argv in (
        ["emc2", "picbreeder:skull", "--target", "picbreeder:skull"],
        ["judge", "a.png", "--target", "picbreeder:skull"],
    ):
        assert p.parse_args(argv).judge == d
    assert p.parse_args(["emc2", "x", "--target", "y", "--judge", "ssim"]).judge == "ssim"


def test_ssim_is_still_selectable_and_a_bad_name_is_a_clear_error():
    ref, batch = _images(48)
    j = judges.make_judge("ssim", ref)
    assert isinstance(j, judges.SSIMJudge) and j(batch, "skull").judge == "ssim"
    assert isinstance(judges.make_judge("calibrated", ref), judges.ReferenceCalibratedJudge)
    with pytest.raises(
        judges.JudgeError,
        match="judge 'nope': choose one of anchored-v2, anchored, anchored-ssim, anchored-pooled, anchored-gated, "
        "anchored-xfit, calibrated, calibrated-pooled, ssim, stability, clip, vlm",
    ):
        judges.make_judge("nope", ref)


def test_bad_judge_name_in_configs_and_commands(capsys):
    from volratio.cli import main
    from volratio.experiments import emc2_bench
    from volratio.util.presets import ConfigError

    with pytest.raises(ConfigError, match="judge='nope'"):
        emc2_bench.parse_point({"judge": "nope"})
    assert main(["emc2", "picbreeder:skull", "--target", "picbreeder:skull", "--judge", "nope"]) == 2
    err = capsys.readouterr().err
    assert "invalid choice: 'nope'" in err


def test_emc2_runs_name_their_judge_and_default_to_the_librarys():
    """Every run of the chunks emc2 / emc2_dense names its judge (plan and store), the deciding
    default among them, so a config without one means the library's default judge, as everywhere."""
    from volratio.experiments import emc2_bench
    from volratio.runs import reference, stored

    plan = reference.load_plan("examples/sweeps/reference.toml")
    for name in ("emc2", "emc2_dense"):
        grid = {c["judge"] for c in plan[name].configs()}
        assert grid == {judges.DEFAULT_JUDGE, "anchored", "anchored-ssim", "stability", "anchored-xfit"}
        if (stored.DEFAULT_ROOT / name / "results.parquet").is_file():
            assert all("judge" in r["config"] for r in stored.records(name))
    assert emc2_bench.parse_point({"target": "apple"}).judge == judges.DEFAULT_JUDGE
    assert emc2_bench.parse_dense_point({"seed": 0}).judge == judges.DEFAULT_JUDGE
    assert emc2_bench.parse_dense_point({"seed": 0, "judge": "calibrated"}).judge == "calibrated"


def test_basin_emc2_goes_through_score(monkeypatch):
    from volratio import emc2, rho
    from volratio.nets import CoordMLP
    from volratio.rho import basin

    seen = []
    real_judges, real_score = emc2.judges_for, emc2.score

    def judges_spy(net, names, target_spec, cfg=None, **kw):
        seen.append((target_spec, list(names), cfg.res, cfg.member, kw.get("calibration_seed")))
        return real_judges(net, names, target_spec, cfg, **kw)

    def score_spy(net, judges, label, cfg=None, **kw):
        seen.append(label)
        return real_score(net, judges, label, cfg, **kw)

    monkeypatch.setattr(emc2, "judges_for", judges_spy)
    monkeypatch.setattr(emc2, "score", score_spy)
    net = CoordMLP("2;gaussian:3", head="grey", population=2, seed=0)
    cfg = rho.BasinConfig(res=16, emc2_params=3, device="cpu")
    aucs = basin._emc2_aucs(net, [1], None, cfg, "planted:0")
    assert aucs[0] is None and 0.0 <= aucs[1] <= 1.0
    assert seen == [("planted:0", ["calibrated"], 16, 1, cfg.seed), "target"]  # 16 px: below SSIM@4's floor
    assert dataclasses.is_dataclass(cfg)


def test_the_smallest_image_is_a_property_of_the_judge_and_every_entry_point_refuses_less():
    from volratio.experiments import depth_regime, emc2_bench, twins
    from volratio.runs import score as score_stage
    from volratio.util.presets import ConfigError

    for name in judges.JUDGES:
        assert judges.min_res(name) == judges.judge_class(name).min_res >= judges.MIN_RES
    small = judges.MIN_RES - 1
    j = judges.AnchoredJudge(torch.rand(16, 16, 3, dtype=torch.float64))
    with pytest.raises(judges.JudgeError, match=f"{small}×{small} pixels.*at least {judges.MIN_RES}"):
        j(torch.rand(2, small, small, 3), "skull")  # the judge itself
    assert j(torch.rand(2, judges.MIN_RES, judges.MIN_RES, 3), "skull").verdicts.shape == (2,)
    # the experiments' configs, before any training: a ConfigError that names the size and the judge
    for parse, cfg in (
        (twins.parse_point, {"res": small}),
        (depth_regime.parse_point, {"res": small, "target": "planted:0", "depth": 2, "seed": 0}),
        (emc2_bench.parse_point, {"res": small}),
    ):
        with pytest.raises((ConfigError, judges.JudgeError), match=f"at least {judges.MIN_RES}"):
            parse(cfg)
    with pytest.raises(Exception, match=f"at least {judges.MIN_RES}"):
        depth_regime.Config.quick(res=small)
    src = {"chunk": "c", "key": "k", "run": "depth_point", "net_sha256": "0" * 64}
    with pytest.raises(score_stage.RescoreError, match=f"at least {judges.MIN_RES}"):
        score_stage.parse_point({"source": src, "target": "planted:0", "emc2": {"res": small}})
