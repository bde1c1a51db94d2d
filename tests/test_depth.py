"""Depth regime: PNG ratio, sweet spot, predictor, Hessian power iteration, run function, CLI."""

import io
import json

import numpy as np
import pytest
import torch

from volratio import judges
from volratio.data.targets import get_target
from volratio.depth import DepthError, fit_predictor, sweet_spot
from volratio.depth.complexity import png_bytes, png_ratio
from volratio.experiments import depth_regime
from volratio.nets import CoordMLP
from volratio.train.flatness import explicit_hessian, top_eigenvalue
from volratio.util.presets import preset

# -- PNG compression ratio ---------------------------------------------------------------------


def test_ratio_deterministic_and_matches_direct_pillow():
    from PIL import Image

    spec = "planted:4:depth=3,width=3"
    a, b = png_ratio(spec, 32), png_ratio(spec, 32)
    assert a == b
    img = get_target(spec).image(32).numpy()
    u8 = np.floor(np.clip(img, 0, 1) * 255 + 0.5).astype(np.uint8)
    buf = io.BytesIO()
    Image.fromarray(u8, mode="RGB").save(buf, format="PNG", optimize=True)
    assert a.png_bytes == len(buf.getvalue())
    assert a.raw_bytes == 32 * 32 * 3
    assert a.ratio == pytest.approx(a.raw_bytes / a.png_bytes)
    import PIL

    assert a.pillow == PIL.__version__ and a.res == 32


def test_ratio_orders_flat_below_noise():
    flat = png_ratio(np.full((32, 32, 3), 0.5), 32)
    noise = png_ratio(np.random.default_rng(0).random((32, 32, 3)), 32)
    assert flat.ratio > 10 * noise.ratio
    assert noise.ratio < 1.05  # random bytes do not compress


def test_ratio_rejects_bad_shape():
    from volratio.errors import ImageError

    with pytest.raises(ImageError, match="shape"):
        png_bytes(np.zeros((4, 4, 2)))


# -- Sweet spot ---------------------------------------------------------------------------------


def test_sweet_spot_clear_peak_and_interval():
    d = [1, 2, 3, 4, 5]
    s = np.array([[0.1, 0.2, 0.1], [0.3, 0.4, 0.35], [0.9, 0.8, 0.85], [0.4, 0.5, 0.45], [0.2, 0.1, 0.1]])
    sp = sweet_spot(d, s)
    assert sp.depth == 3 and not sp.flat and sp.tied == [3]
    assert sp.interval == (3, 3) and sp.per_seed == [3, 3, 3]
    assert sp.peak_contrast == pytest.approx(0.85 - np.mean([0.4 / 3, 0.35, 0.45, 0.4 / 3]))


def test_sweet_spot_ties_take_the_shallowest():
    sp = sweet_spot([2, 3, 4, 5], [0.2, 0.7, 0.7, 0.1])
    assert sp.tied == [3, 4] and sp.depth == 3 and not sp.flat
    sp = sweet_spot([2, 3, 4, 5], [0.2, 0.69, 0.7, 0.1], tol=0.05)
    assert sp.tied == [3, 4] and sp.depth == 3


def test_sweet_spot_flat_curve_has_none():
    sp = sweet_spot([1, 2, 3], np.full((3, 4), 0.5))
    assert sp.flat and sp.depth is None and sp.interval == (None, None)
    sp = sweet_spot([1, 2, 3], [0.50, 0.51, 0.50], tol=0.02)
    assert sp.flat and sp.depth is None


def test_sweet_spot_seed_disagreement_widens_interval():
    s = np.array([[1.0, 0.0, 0.0, 1.1], [0.0, 1.0, 1.0, 0.0]])  # depth 1 wins seeds 0, 3; depth 2 seeds 1, 2
    sp = sweet_spot([1, 2], s)
    assert sp.depth == 1 and sp.per_seed == [1, 2, 2, 1] and sp.interval == (1, 2)


def test_sweet_spot_bad_input():
    with pytest.raises(DepthError, match="rows"):
        sweet_spot([1, 2], [0.1, 0.2, 0.3])
    with pytest.raises(DepthError, match="repeat"):
        sweet_spot([1, 1], [0.1, 0.2])


def test_parse_depths():
    assert depth_regime.parse_depths("2..5") == (2, 3, 4, 5)
    assert depth_regime.parse_depths("1,3") == (1, 3)
    with pytest.raises(DepthError):
        depth_regime.parse_depths("a..b")


# -- Predictor ----------------------------------------------------------------------------------


def test_predictor_recovers_known_line():
    rng = np.random.default_rng(0)
    x = rng.uniform(1, 10, 40)
    y = 2.0 + 0.5 * x + rng.normal(0, 0.05, 40)
    p = fit_predictor(x, y)
    assert p.a == pytest.approx(2.0, abs=0.05) and p.b == pytest.approx(0.5, abs=0.01)
    assert p.r2 > 0.99 and p.loo_rmse < 0.1
    q = p.predict(4.0)
    assert q["depth"] == pytest.approx(4.0, abs=0.05)
    assert q["band_lo"] < q["depth"] < q["band_hi"] and q["pi_lo"] < q["band_lo"] and q["pi_hi"] > q["band_hi"]


def test_predictor_exact_line_and_loo():
    x = np.array([1.0, 2.0, 3.0, 4.0])
    p = fit_predictor(x, 1.0 + 2.0 * x)
    assert p.a == pytest.approx(1.0) and p.b == pytest.approx(2.0) and p.r2 == pytest.approx(1.0)
    assert np.allclose(p.loo_errors, 0, atol=1e-9)
    # one outlier: its leave-one-out error is the prediction from the other three minus it
    y = 1.0 + 2.0 * x
    y[3] += 3.0
    p = fit_predictor(x, y)
    assert p.loo_errors[3] == pytest.approx(-3.0)


def test_predictor_band_matches_scipy_formula():
    from scipy import stats

    x = np.array([1.0, 2.0, 4.0, 5.0, 7.0])
    y = np.array([2.1, 2.9, 5.2, 5.8, 8.1])
    p = fit_predictor(x, y)
    lr = stats.linregress(x, y)
    x0 = 3.0
    s = np.sqrt(((y - lr.intercept - lr.slope * x) ** 2).sum() / 3)
    half = stats.t.ppf(0.975, 3) * s * np.sqrt(1 / 5 + (x0 - x.mean()) ** 2 / ((x - x.mean()) ** 2).sum())
    q = p.predict(x0)
    assert q["band_hi"] - q["depth"] == pytest.approx(half)


def test_predictor_needs_spread():
    with pytest.raises(DepthError, match="same"):
        fit_predictor([2.0, 2.0, 2.0], [1, 2, 3])
    with pytest.raises(DepthError, match="at least 3"):
        fit_predictor([1.0, 2.0], [1, 2])


# -- Hessian ------------------------------------------------------------------------------------


def test_power_iteration_matches_explicit_hessian():
    net = CoordMLP("2;gaussian:3", head="grey", population=2, seed=1, dtype=torch.float64)
    net.set_mask(1, torch.tensor([[1, 0, 1], [1, 1, 0], [0, 1, 1]], dtype=torch.float64))
    img = get_target("planted:0:depth=2").image(6).double()
    H = explicit_hessian(net, img, member=1)
    assert np.allclose(H, H.T, atol=1e-10)
    ev = np.linalg.eigvalsh(H)
    top = ev[np.argmax(np.abs(ev))]
    e = top_eigenvalue(net, img, member=1, iters=500, tol=1e-12)
    assert e.converged
    assert e.value == pytest.approx(top, rel=1e-6)


def test_hvp_matches_explicit_hessian_product():
    from volratio.train.flatness import hvp

    net = CoordMLP("2;sin:2", head="grey", population=1, seed=3, dtype=torch.float64)
    img = get_target("planted:1:depth=2").image(5).double()
    H = explicit_hessian(net, img)
    v = [
        torch.randn(w.shape, dtype=torch.float64, generator=torch.Generator().manual_seed(i))
        for i, w in enumerate(net.weights)
    ]
    hv = torch.cat([h.reshape(-1) for h in hvp(net, img, v)]).numpy()
    ref = H @ torch.cat([x.reshape(-1) for x in v]).numpy()
    assert np.allclose(hv, ref, atol=1e-10)


# -- Run function and CLI -----------------------------------------------------------------------


def test_depth_point_is_repeatable_and_scored():
    from volratio.experiments.depth_regime import point as depth_point

    cfg = {
        "target": "planted:2:depth=2,width=3",
        "depth": 2,
        "seed": 0,
        "width": 4,
        "res": 8,
        "steps": 20,
        "sp.retrain_steps": 5,
        "sp.rounds": 1,
        "max_params": 6,
        "keep_net": False,
    }
    a, b = depth_point(dict(cfg)), depth_point({**cfg, "members": 2})
    assert a == depth_point(dict(cfg))
    # 8 px: the anchored judge is defined at every size (it brings images to the 64 px it was fitted at)
    assert 0.0 <= a["score"][0] <= 1.0 and len(a["scores"][0]) == 4 and a["judge"] == judges.DEFAULT_JUDGE
    # a run records per member whether its image shows the label; one that does not scores 0
    assert depth_point({**cfg, "sp.loss_factor": 2.0}) == a  # an absent entry: today's default (the 2× guard)
    assert len(a["base_kept"]) == len(a["score"]) and all(s == 0 for s, k in zip(a["score"], a["base_kept"]) if not k)
    assert a["nonzero"][0] > 0 and a["loss"][0] >= 0
    assert len(b["score"]) == 2 and b["nonzero"][0] > 0
    with pytest.raises(ValueError, match="unknown entry 'stepz'"):
        depth_point({**cfg, "stepz": 3})


def test_cli_ratio_json(capsys):
    from volratio.cli import main

    assert main(["depth", "ratio", "planted:3:depth=2", "--res", "16", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out) == {"target", "ratio", "png_bytes", "raw_bytes", "res", "pillow"}
    assert out["raw_bytes"] == 16 * 16 * 3 and out["ratio"] == pytest.approx(out["raw_bytes"] / out["png_bytes"])


def test_cli_predict_json(capsys):
    from volratio.cli import main

    cal = [f"planted:{s}:depth={L},width=3" for s, L in ((0, 2), (1, 3), (2, 4), (3, 5))]
    assert main(["depth", "predict", "planted:9:depth=3", "--res", "16", "--calibration", *cal, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["fit"]["n"] == 4 and out["band"][0] <= out["depth"] <= out["band"][1]


def test_sweep_curves_from_runner(tmp_path):
    cfg = preset(depth_regime.Config, "quick", depths=(1, 2), seeds=2, members=2, width=3, res=8, steps=10,
                 max_params=4, **{"sp.rounds": 1, "sp.retrain_steps": 3})  # fmt: skip
    curves, report = depth_regime.depth_sweep("planted:5:depth=2,width=2", cfg, out=tmp_path / "s")
    c = curves["planted:5:depth=2,width=2"]
    assert report.total == 2 and not report.failed
    assert c.score.shape == (2, 2) and c.depths == [1, 2]
    again, rep2 = depth_regime.depth_sweep("planted:5:depth=2,width=2", cfg, out=tmp_path / "s")
    assert rep2.skipped == 2 and np.array_equal(again["planted:5:depth=2,width=2"].score, c.score)
    with pytest.raises(DepthError, match="multiple"):
        depth_regime.make_sweep("planted:5", depth_regime.Config.quick(seeds=4, members=3))


def test_cli_bad_target_is_one_line(capsys):
    from volratio.cli import main

    assert main(["depth", "ratio", "nonsense"]) == 2
    assert "KIND:NAME" in capsys.readouterr().err


def test_curve_among_fitting_networks_leaves_out_those_that_did_not_fit():
    """A depth where the high scorers failed to fit: the cut-off leaves them out and the sweet spot
    moves; a depth left with no network has no mean (and raises no warning)."""
    import warnings

    from volratio.experiments.depth_regime import DepthCurve, among_fitting, spot_table

    score = np.array([[0.6, 0.62, 0.58, 0.6], [0.5, 0.52, 0.5, 0.51], [0.99, 0.98, 0.5, 0.5], [0.97, 0.99, 0.95, 0.98]])
    loss = np.array([[0.01, 0.012, 0.011, 0.01], [0.01] * 4, [0.1, 0.09, 0.01, 0.012], [0.2, 0.3, 0.25, 0.2]])
    c = DepthCurve("t", [2, 3, 4, 5], score, loss, loss, np.full_like(loss, 30.0), sweet_spot([2, 3, 4, 5], score))
    assert c.spot.depth == 5
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        (f,), (cut,) = (x.values() for x in among_fitting({"t": c}, factor=2.0))
        table = spot_table({"t": f})
    assert cut == pytest.approx(2 * np.median(loss))  # median 0.0115
    assert f.spot.depth == 2 and np.isnan(f.spot.means[3])  # depth 5: nobody fits
    assert np.isnan(f.score[2, :2]).all() and f.score[2, 2] == 0.5 and np.isnan(f.loss[3]).all()
    assert table.loc["t", "networks"] == 10 and table.loc["t", "best score"] == pytest.approx(0.6)
    assert table.loc["t", "MSE at spot"] == pytest.approx(0.01075)
    with pytest.raises(DepthError, match="no network has MSE"):
        c.fitting(1e-4)
    with pytest.raises(DepthError, match="positive"):
        among_fitting({"t": c}, factor=0)


def test_curves_from_runs_stored_before_the_anchored_judge_have_no_drawn_share():
    import pandas as pd

    from volratio.depth.curves import curves_from_table
    from volratio.experiments.depth_regime import spot_table

    rows = [{"status": "done", "key": f"k{d}", "seed": 0, "target": "t", "depth": d, "score": [0.1 * d, 0.6],
             "loss": [0.01, 0.02], "dense_loss": [0.01, 0.02], "nonzero": [30, 30]} for d in (2, 3)]  # fmt: skip
    old = curves_from_table(pd.DataFrame(rows))["t"]
    assert np.isnan(old.kept).all() and np.isnan(old.summary()[0]["drawn"])
    new = curves_from_table(pd.DataFrame([{**r, "base_kept": [True, False]} for r in rows]))["t"]
    assert new.kept.tolist() == [[1.0, 0.0], [1.0, 0.0]] and new.summary()[1]["drawn"] == 0.5
    assert spot_table({"t": new}).loc["t", "drawn at spot"] == 0.5
