"""The stored controls of the instruments on planted targets (`volratio.depth.stored_controls`) and
the image judges' κ against the family judge on stored planted networks
(`volratio.calibration.planted_kappa`): the readers read what was stored, refuse what is broken,
and the stored tables say what the brief asks of them.

Mutants each test catches: a controls table whose word is read from the gap's mean or at m instead
of 3m (`test_controls_table_words_follow_the_three_m_rule`), a reader that accepts an unfinished or
damaged table (`test_load_refuses_missing_incomplete_and_damaged_tables`), κ against the wrong
column or pooled wrong (`test_kappa_reads_agreement_per_target_and_pooled`).
"""

from __future__ import annotations

import json
import shutil

import numpy as np
import pandas as pd
import pytest

from volratio.calibration import planted_kappa
from volratio.depth import controls, stored_controls
from volratio.depth.curves import DepthError
from volratio.report.catalogue import CLAIMS

SPECS = controls.DEPTH_TARGETS[:4]


def synthetic() -> controls.Controls:
    """Two instruments on four targets: "sharp" (positive 1, negatives near 0, the graded series
    falling) and "blunt" (every control near 0.5, the graded series flat)."""
    rng = np.random.default_rng(0)
    cfg = controls.ControlsConfig(targets=SPECS, seeds=1, instruments=("recovery", "per-unit"))
    rows = []
    for t in SPECS:
        for name, pos, neg, fall in (("sharp", 1.0, 0.0, 1.0), ("blunt", 0.5, 0.5, 0.0)):
            noise = lambda: float(rng.normal(0, 0.02))  # noqa: E731
            rows.append(dict(target=t, control="positive", seed=0, share=np.nan, instrument=name, score=pos, mse=0.0))
            for k in controls.NEGATIVES:
                rows.append(dict(target=t, control=k, seed=0, share=np.nan, instrument=name, score=neg + noise(),
                                 mse=0.0))  # fmt: skip
            for a in cfg.shares:
                rows.append(dict(target=t, control="graded", seed=0, share=a, instrument=name,
                                 score=pos - fall * a + (noise() if fall == 0 else 0.0), mse=0.0))  # fmt: skip
    return controls.Controls(cfg, pd.DataFrame(rows))


def test_controls_table_words_follow_the_three_m_rule():
    t = stored_controls.controls_table(synthetic(), m=0.1)
    assert t.loc["sharp", "sensitivity"] == "decides" and t.loc["blunt", "sensitivity"] == "insensitive"
    assert t.loc["sharp", "graded_rho"] == pytest.approx(-1.0) and t.loc["sharp", "graded_falls"] == 1.0
    assert t.loc["sharp", "gap_hardest"] <= min(t.loc["sharp", f"gap_{k}"] for k in controls.NEGATIVES) + 1e-12
    # a gap of about 1 decides at m = 0.3 (3m = 0.9) but not at m = 0.34 (3m = 1.02)
    assert stored_controls.controls_table(synthetic(), m=0.3).loc["sharp", "sensitivity"] == "decides"
    assert stored_controls.controls_table(synthetic(), m=0.34).loc["sharp", "sensitivity"] == "insensitive"


def write(folder, c: controls.Controls, complete: bool = True):
    folder.mkdir(parents=True, exist_ok=True)
    c.table.to_csv(folder / stored_controls.TABLE_FILE, index=False)
    meta = {"config": stored_controls.config_json(c.config), "complete": complete, "cpu_seconds": 1.0, "cpu": "x"}
    (folder / stored_controls.CONFIG_FILE).write_text(json.dumps(meta))


def test_load_refuses_missing_incomplete_and_damaged_tables(tmp_path):
    c = synthetic()
    c = controls.Controls(c.config.__class__(targets=SPECS, seeds=1, instruments=("recovery", "per-unit")),
                          c.table.replace({"instrument": {"sharp": "recovery", "blunt": "per-unit"}}))  # fmt: skip
    with pytest.raises(DepthError, match="no stored controls"):
        stored_controls.load(tmp_path / "none")
    write(tmp_path / "ok", c)
    back, meta = stored_controls.load(tmp_path / "ok")
    assert back.config == c.config and meta["complete"]
    pd.testing.assert_frame_equal(back.table, c.table, check_dtype=False)
    write(tmp_path / "half", c, complete=False)
    with pytest.raises(DepthError, match="incomplete"):
        stored_controls.load(tmp_path / "half")
    write(tmp_path / "cols", controls.Controls(c.config, c.table.drop(columns="score")))
    with pytest.raises(DepthError, match="missing columns score"):
        stored_controls.load(tmp_path / "cols")
    write(tmp_path / "nan", controls.Controls(c.config, c.table.assign(score=np.nan)))
    with pytest.raises(DepthError, match="non-finite"):
        stored_controls.load(tmp_path / "nan")
    write(tmp_path / "other", controls.Controls(c.config, c.table[c.table.target != SPECS[0]]))
    with pytest.raises(DepthError, match="differ from its config"):
        stored_controls.load(tmp_path / "other")


def test_the_stored_controls_decide_only_with_a_gap_of_three_m_and_order_the_graded_series():
    c, meta = stored_controls.load()
    m = CLAIMS["depth-optimum"].statistic.smallest  # the planted EMC2 claims' m
    t = stored_controls.controls_table(c, m)
    assert set(c.config.targets) <= set(controls.DEPTH_TARGETS) and "emc2:planted-family" in t.index
    assert (t.targets == len(c.config.targets)).all()  # every instrument read on every stored target
    assert set(t.sensitivity) <= {"decides", "insensitive"}
    for name, row in t.iterrows():
        if row.sensitivity == "decides":
            assert row.gap_hardest_lo >= 3 * m - 1e-12, name
            assert row.gap_hardest_hi >= row.gap_hardest >= row.gap_hardest_lo, name
        else:  # the word is the rule's both ways
            assert row.gap_hardest_lo < 3 * m, name
    # the graded series of a reading of the planted units cannot rise along α, on every target
    ordered = [n for n in t.index if stored_controls.ordered_by_construction(n)]
    assert ordered
    graded = c.table[c.table.control == "graded"].sort_values("share")
    for (name, target), g in graded[graded.instrument.isin(ordered)].groupby(["instrument", "target"]):
        assert list(g.share) == list(c.config.shares), (name, target)
        assert (np.diff(g.score.to_numpy()) <= 1e-12).all(), (name, target, list(g.score))
        assert g.score.iloc[-1] < g.score.iloc[0], (name, target)  # the student alone reads lower


def test_kappa_reads_agreement_per_target_and_pooled():
    fam = np.array([1, 1, 0, 0, 1, 0, 1, 0], bool)
    t = pd.DataFrame({"target": ["a"] * 4 + ["b"] * 4, f"verdict_{planted_kappa.FAMILY}": fam,
                      f"base_{planted_kappa.FAMILY}": [True] * 4 + [False] * 4, "verdict_same": fam,
                      "verdict_flip": ~fam})  # fmt: skip
    k = planted_kappa.kappa(t, ["same", "flip"])
    assert list(k.index) == ["a", "b", "all"] and (k.kappa_same == 1.0).all() and (k.kappa_flip == -1.0).all()
    assert k.loc["all", "images"] == 8 and k.loc["a", f"kept_{planted_kappa.FAMILY}"] == 0.5
    assert k.loc["all", f"base_{planted_kappa.FAMILY}"] == 0.5 and np.isnan(k.loc["b", "kappa_same_base_kept"])
    assert k.loc["all", "kappa_flip_base_kept"] == -1.0  # κ on target a's images alone
    with pytest.raises(planted_kappa.PlantedKappaError, match="verdict_other"):
        planted_kappa.kappa(t, ["other"])
    with pytest.raises(planted_kappa.PlantedKappaError, match="image judge"):
        planted_kappa.PlantedKappaConfig(judges=(planted_kappa.FAMILY,))


def test_the_stored_kappa_table_covers_its_chunks_and_says_where_the_default_judge_stands(tmp_path):
    t, cfg, meta = planted_kappa.load()
    assert set(t.chunk) == set(cfg.chunks) and meta["networks_done"] == meta["networks"]
    k = planted_kappa.kappa(t, cfg.judges)
    per = t.groupby(["key", "network"]).size()
    assert (
        len(per) == meta["networks"]
        and (per % len(cfg.deltas) == 0).all()
        and (per <= cfg.weights * len(cfg.deltas)).all()
    )
    assert k.loc["all", "images"] == len(t)
    default = k.loc["all", f"kappa_{cfg.judges[0]}"]
    readme = (planted_kappa.DEFAULT_DIR / "README.md").read_text()
    assert f"{default:.3f}" in readme and (("below" in readme) == (default < planted_kappa.KAPPA_FLOOR))
    shutil.copytree(planted_kappa.DEFAULT_DIR, tmp_path / "k")
    meta["complete"] = False
    (tmp_path / "k" / planted_kappa.CONFIG_FILE).write_text(json.dumps(meta))
    with pytest.raises(planted_kappa.PlantedKappaError, match="incomplete"):
        planted_kappa.load(tmp_path / "k")
