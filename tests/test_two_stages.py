"""Train once, score under any reading: every experiment is two stages, `train(cfg) -> Trained` and
`score(trained, reading) -> Result`, and `run(cfg)` is `score(train(cfg), PAPER)`. A reading that
names a judge scores the trained networks again without training; an experiment with nothing to
score under a reading refuses one with an error that says where its scores come from."""

from __future__ import annotations

import inspect

import pandas as pd
import pytest
from experiment_sizes import NEEDS_PICBREEDER, TINY

from volratio.emc2.reading import Reading
from volratio.experiments._base import PAPER, ExperimentError, Result, Trained
from volratio.runs import registry

TIMING = ("seconds", "seconds_run", "elapsed_s", "wall_s", "cpu_s")  # the wall time of a run, not its result


def _tiny(name, tmp_path, request, sub: str):
    if name in NEEDS_PICBREEDER:
        request.getfixturevalue("picbreeder_dir")
    mod = registry.module(name)
    cfg = registry.make_config(name, "quick", TINY[name][0])
    kw = {"out": tmp_path / sub} if "out" in inspect.signature(mod.train).parameters else {}
    return mod, cfg, kw


def _table(res: Result) -> pd.DataFrame:
    t = res.to_frame()
    return t.drop(columns=[c for c in TIMING if c in t]).reset_index(drop=True)


@pytest.mark.parametrize("name", list(registry.EXPERIMENTS))
def test_run_is_score_of_train_under_the_default_reading(name, tmp_path, request):
    mod, cfg, kw = _tiny(name, tmp_path, request, "a")
    trained = mod.train(cfg, **kw)
    assert isinstance(trained, Trained) and trained.experiment == name
    staged = mod.score(trained, PAPER)
    _, cfg, kw = _tiny(name, tmp_path, request, "b")
    whole = mod.run(cfg, **kw)
    assert (staged.judge, staged.seeds, staged.config) == (whole.judge, whole.seeds, whole.config)
    pd.testing.assert_frame_equal(_table(staged), _table(whole))
    assert set(staged.extras) == set(whole.extras)


@pytest.mark.parametrize("name", ["connectivity", "emc2_bench"])
def test_a_reading_s_judge_rescores_the_trained_networks_as_the_judges_beside_the_first(name, tmp_path, request):
    """Scored under the reading "stability", the trained networks' AUCs are those the default reading
    scored beside its own judge on the same perturbed images (the config's `judges`)."""
    mod, cfg, kw = _tiny(name, tmp_path, request, "a")
    cfg = registry.make_config(name, "quick", {**TINY[name][0], "judges": ["stability"]})
    trained = mod.train(cfg, **kw)
    own, other = mod.score(trained, PAPER), mod.score(trained, Reading("stability"))
    assert own.judge == cfg.judge != "stability" and other.judge == "stability"
    if name == "connectivity":
        done = own.table["emc2_auc"].notna()
        assert done.any()
        pd.testing.assert_series_equal(
            other.table["emc2_auc"][done], own.table["emc2_auc:stability"][done], check_names=False
        )
        assert set(other.table["judge"]) == {"stability"}
    else:
        first = own.table[own.table["judge"] == "stability"].reset_index(drop=True)
        again = other.table[other.table["judge"] == "stability"].reset_index(drop=True)
        pd.testing.assert_frame_equal(first, again)


@pytest.mark.parametrize("name", ["frames", "depth_regime"])
def test_a_reading_does_not_apply_where_nothing_is_scored_under_one(name, tmp_path, request):
    mod, cfg, kw = _tiny(name, tmp_path, request, "a")
    trained = mod.train(cfg, **kw)
    with pytest.raises(ExperimentError, match="no network under a judge" if name == "frames" else "rescore"):
        mod.score(trained, Reading("stability"))
    with pytest.raises(ExperimentError, match="Reading"):
        mod.score(trained, {"judge": "stability"})
