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
from volratio.errors import VolratioError
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


@pytest.mark.parametrize("name", ["emc2_bench"])
def test_a_reading_s_judge_rescores_the_trained_networks_as_the_judges_beside_the_first(name, tmp_path, request):
    """Scored under the reading "stability", the trained networks' AUCs are those the default reading
    scored beside its own judge on the same perturbed images (the config's `judges`)."""
    mod, cfg, kw = _tiny(name, tmp_path, request, "a")
    cfg = registry.make_config(name, "quick", {**TINY[name][0], "judges": ["stability"]})
    trained = mod.train(cfg, **kw)
    own, other = mod.score(trained, PAPER), mod.score(trained, Reading("stability"))
    assert own.judge == cfg.judge != "stability" and other.judge == "stability"
    first = own.table[own.table["judge"] == "stability"].reset_index(drop=True)
    again = other.table[other.table["judge"] == "stability"].reset_index(drop=True)
    pd.testing.assert_frame_equal(first, again)


@pytest.mark.parametrize("name", ["depth_regime", "unknown_targets", "optimizers"])
def test_a_sweep_s_stored_networks_rescored_under_their_own_judge_give_the_run_s_own_result(name, tmp_path, request):
    """The sweeps' points score as they train and store their networks; scored again in memory under
    their own judge (`volratio.runs.depth_sweep.rescored`, the score stage's scorer) they give the
    trained result exactly, and under another judge they name that judge in every run."""
    mod, cfg, kw = _tiny(name, tmp_path, request, "a")
    if name == "optimizers":  # its runs keep no network unless asked
        with pytest.raises(VolratioError, match="keep_net"):
            mod.score(mod.train(cfg, **kw), Reading("stability"))
        cfg = registry.make_config(name, "quick", {**TINY[name][0], "keep_nets": True})
    trained = mod.train(cfg, **kw)
    own = trained.judge
    assert own == TINY[name][1] != "stability"
    again = mod.score(trained, Reading(own))
    pd.testing.assert_frame_equal(_table(again), _table(mod.score(trained, PAPER)))
    other = mod.score(trained, Reading("stability"))
    runs = other.extras["runs"] if name == "optimizers" else trained.extras["report"].table
    assert other.judge == "stability" and set(other.to_frame()["judge"]) == {"stability"}
    if name == "optimizers":
        assert set(runs["judge"]) == {"stability"} and len(runs) == len(trained.extras["runs"])


@pytest.mark.parametrize("name", ["frames", "twins"])
def test_a_reading_does_not_apply_where_nothing_is_scored_under_one(name, tmp_path, request):
    mod, cfg, kw = _tiny(name, tmp_path, request, "a")
    trained = mod.train(cfg, **kw)
    with pytest.raises(ExperimentError, match="no network under a judge"):
        mod.score(trained, Reading("stability"))
    with pytest.raises(ExperimentError, match="Reading"):
        mod.score(trained, {"judge": "stability"})
