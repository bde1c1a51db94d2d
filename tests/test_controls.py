"""Controls for the instruments on planted targets (`volratio.depth.controls`): the control networks
are what they claim to be, the summaries read them right, and the 3m rule is a rule.

Mutants each test catches: a blend that mixes the blocks or forgets a block's share
(`test_blend_endpoints_are_the_networks_and_the_middle_draws_the_target`), a gap computed against the
easiest negative instead of the hardest, or a Spearman sign flipped (`test_summary_reads_gaps_and_the_graded_order`),
the rule at m or 2m instead of 3m, or read from the gap's mean instead of its lower end
(`test_sensitivity_is_three_m_on_the_lower_end`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from volratio.data.targets import get_target
from volratio.depth import controls
from volratio.depth.curves import DepthError
from volratio.errors import VolratioError
from volratio.nets import CoordMLP

SPEC = "planted:13:depth=3,width=3"
CFG = controls.ControlsConfig.quick(targets=(SPEC,))


@pytest.fixture(scope="module")
def target():
    return get_target(SPEC)


def test_blend_endpoints_are_the_networks_and_the_middle_draws_the_target(target):
    planted = controls.planted_network(target)
    student = controls.distil(planted, 0, CFG)
    zero, one = controls.blend(planted, student, 0.0), controls.blend(planted, student, 1.0)
    assert torch.allclose(zero.render(16), planted.render(16), atol=1e-6) and zero.nonzero() == planted.nonzero()
    assert torch.allclose(one.render(16), student.render(16), atol=1e-5) and one.nonzero() == student.nonzero()
    half = controls.blend(planted, student, 0.5)
    assert half.nonzero()[0] == planted.nonzero()[0] + student.nonzero()[0]  # no weight between the blocks
    with torch.no_grad():
        grid = torch.cat([f.flatten(1, 2) for f in half.features(16)], -1)  # (1, P, U)
    assert grid.shape[-1] == half.width * half.depth
    # the output is the shares' mix of the two outputs, so the image stays near the target's
    mse = [controls.image_mse(controls.blend(planted, student, a), target, 16) for a in CFG.shares]
    assert mse[0] < 1e-10 and all(m <= mse[-1] + 1e-9 for m in mse) and mse[-1] < 0.05
    with pytest.raises(DepthError, match="share"):
        controls.blend(planted, student, 1.5)
    with pytest.raises(DepthError, match="depth"):
        controls.blend(planted, CoordMLP("2;gaussian:4", head="grey"), 0.5)


def test_control_networks_are_seeded_and_complete(target):
    nets = controls.control_networks(target, CFG)
    kinds = [c for c, *_ in nets]
    assert kinds == ["positive", "adam", "sgd", "init"] + ["graded"] * len(CFG.shares)
    again = controls.control_networks(target, CFG)
    assert all(torch.equal(a[3].render(16), b[3].render(16)) for a, b in zip(nets, again))  # bit for bit
    init = nets[3][3]
    assert all(torch.equal(m, n) for m, n in zip(init.masks, nets[0][3].masks))  # the planted masks


def test_instruments_by_name_and_bad_names(target):
    planted = controls.planted_network(target)
    rec = controls.instrument("recovery", CFG)(planted, target)
    per_unit = controls.instrument("per-unit", CFG)(planted, target)
    assert rec == pytest.approx(1.0, abs=1e-6) and per_unit == pytest.approx(1.0, abs=1e-6)
    above = controls.instrument("recovery-above-chance", CFG)(planted, target)
    assert 0 < above < rec
    with pytest.raises(DepthError, match="unknown instrument"):
        controls.instrument("recall", CFG)
    with pytest.raises(DepthError, match="unknown judge"):
        controls.instrument("emc2:no-such-judge", CFG)
    with pytest.raises(DepthError, match="unknown instrument"):
        controls.ControlsConfig(instruments=("recovery", "emc2"))
    with pytest.raises(DepthError, match="shares"):
        controls.ControlsConfig(shares=(0.0, 1.0))
    with pytest.raises(VolratioError, match="res"):
        controls.ControlsConfig(res=4)
    with pytest.raises(DepthError, match="planted target"):
        controls.measure(controls.ControlsConfig.quick(targets=(SPEC, "image:camera")))  # before SPEC trains


def fake_controls(rows) -> controls.Controls:
    return controls.Controls(CFG, pd.DataFrame(rows))


def rows_for(target, positive, negatives, graded):
    nan = float("nan")
    out = [dict(target=target, control="positive", seed=0, share=nan, instrument="x", score=positive, mse=0.0)]
    out += [dict(target=target, control=k, seed=s, share=nan, instrument="x", score=v, mse=0.0)
            for k, vs in negatives.items() for s, v in enumerate(vs)]  # fmt: skip
    out += [dict(target=target, control="graded", seed=0, share=a, instrument="x", score=v, mse=0.0)
            for a, v in zip(CFG.shares, graded)]  # fmt: skip
    return out


def test_summary_reads_gaps_and_the_graded_order():
    rows = rows_for("a", 1.0, {"adam": [0.2, 0.4], "sgd": [0.1, 0.1], "init": [0.0, 0.0]}, [1.0, 0.8, 0.6, 0.4, 0.2])
    rows += rows_for("b", 0.9, {"adam": [0.5, 0.5], "sgd": [0.2, 0.2], "init": [0.1, 0.1]}, [0.5, 0.5, 0.5, 0.5, 0.5])
    s = controls.summary(fake_controls(rows)).loc["x"]
    assert s.positive == pytest.approx(0.95) and s.adam == pytest.approx(0.4)
    assert s.gap_adam == pytest.approx(((1.0 - 0.3) + (0.9 - 0.5)) / 2)  # seeds averaged within a target first
    assert s.gap_hardest == pytest.approx(s.gap_adam)  # adam is the hardest negative on both targets
    assert s.gap_hardest_lo < s.gap_hardest < s.gap_hardest_hi
    assert s.graded_rho == pytest.approx(-0.5)  # a falling series (−1) and a constant one (0)
    assert s.graded_falls == pytest.approx(0.5)
    rising = rows_for("a", 1.0, {"adam": [0.0], "sgd": [0.0], "init": [0.0]}, [0.1, 0.2, 0.3, 0.4, 0.5])
    assert controls.summary(fake_controls(rising)).loc["x"].graded_rho == pytest.approx(1.0)


def test_sensitivity_is_three_m_on_the_lower_end():
    assert controls.sensitivity(0.30, 0.1) == "decides"
    assert controls.sensitivity(0.29, 0.1) == "insensitive"
    assert controls.sensitivity(-0.5, 0.1) == "insensitive"
    with pytest.raises(DepthError, match="m > 0"):
        controls.sensitivity(0.5, 0.0)
    with pytest.raises(DepthError, match="not a number"):
        controls.sensitivity(float("nan"), 0.1)
    rows = rows_for("a", 1.0, {"adam": [0.5], "sgd": [0.5], "init": [0.0]}, [1, 0.9, 0.8, 0.7, 0.6])
    rows += rows_for("b", 1.0, {"adam": [0.1], "sgd": [0.1], "init": [0.0]}, [1, 0.9, 0.8, 0.7, 0.6])
    c = fake_controls(rows)
    s = controls.summary(c).loc["x"]
    assert s.gap_hardest == pytest.approx(0.7) and s.gap_hardest_lo < 0.3  # a mean above 3m, a lower end below
    assert controls.decisions(c, {"x": 0.1}).tolist() == ["insensitive"]
    with pytest.raises(DepthError, match="no controls measured for y"):
        controls.decisions(c, {"y": 0.1})


def test_measure_reads_every_control_with_every_instrument():
    res = controls.measure(CFG)
    t = res.table
    assert set(t.instrument) == set(CFG.instruments)
    assert len(t) == len(CFG.instruments) * (4 * CFG.seeds + len(CFG.shares))
    pos = t[(t.control == "positive")].set_index("instrument").score
    assert pos["recovery"] == pytest.approx(1.0, abs=1e-6) and pos["per-unit"] == pytest.approx(1.0, abs=1e-6)
    graded = t[(t.control == "graded") & (t.instrument == "per-unit")].sort_values("share").score.to_numpy()
    assert graded[0] > graded[-1]  # the student's units carry no single planted node
    assert np.isfinite(t.score).all()
    s = controls.summary(res)
    assert list(s.index) == list(CFG.instruments) and (s.targets == 1).all()


def test_measure_is_seeded_and_takes_any_instrument():
    """Same config, same table bit for bit; an instrument is any `(network, target) -> score`, so a
    new one (the family judge's EMC2) joins without code in this module."""
    cfg = controls.ControlsConfig.quick(targets=(SPEC,), steps=20, instruments=("per-unit", "emc2:anchored-v2"))
    a, b = controls.measure(cfg), controls.measure(cfg)
    pd.testing.assert_frame_equal(a.table, b.table)
    nonzeros = controls.measure(cfg, instruments={"nonzeros": lambda net, t: float(net.nonzero()[0])}).table
    assert set(nonzeros.instrument) == {"nonzeros"}
    pos = nonzeros[nonzeros.control == "positive"].score.item()
    assert pos == controls.planted_network(get_target(SPEC)).nonzero()[0]
