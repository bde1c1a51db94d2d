"""`load(name, scale, reading)`: an experiment's stored reference runs as a `Result`, under a reading,
without running anything (`volratio.experiments.load`)."""

from __future__ import annotations

from dataclasses import asdict

import pandas as pd
import pytest

from volratio.emc2.reading import RECOVERY, Reading
from volratio.experiments._base import ExperimentError
from volratio.experiments.load import load
from volratio.report.readings import EVERY
from volratio.runs import recovered, registry, stored


def _stored_chunks(name: str) -> list:
    return [c for c in registry.module(name).reference_chunks() if c in stored.chunks()]


@pytest.mark.parametrize("name", list(registry.EXPERIMENTS))
def test_load_gives_every_stored_run_of_the_chunks_an_experiment_owns(name):
    """One row per row of a whole run, one per run of points; each names its chunk and run key; the
    config is the reference preset's, the seconds the runs' CPU seconds."""
    if not list(getattr(registry.module(name), "reference_chunks", dict)()):
        with pytest.raises(ExperimentError, match=rf"no chunk of the reference plan.*volratio run {name} --scale"):
            load(name)
        return
    chunks = _stored_chunks(name)
    res = load(name)
    assert res.experiment == name and res.scale == "reference"
    assert res.config == asdict(registry.module(name).Config.reference())
    records = {c: stored.records(c) for c in chunks}
    want = {c: sum(len(r["metrics"].get("rows", [None])) for r in rs) for c, rs in records.items()}
    assert res.table["chunk"].value_counts().to_dict() == want
    keys = {c: {r["key"] for r in rs} for c, rs in records.items()}
    assert all(k in keys[c] for c, k in zip(res.table["chunk"], res.table["key"]))
    assert res.seconds == pytest.approx(sum(r["cpu_s"] or 0.0 for rs in records.values() for r in rs))


def test_load_refuses_a_scale_or_a_chunk_it_does_not_have():
    with pytest.raises(ExperimentError, match=r"scale 'quick' is not stored.*volratio run frames --scale quick"):
        load("frames", "quick")
    with pytest.raises(ExperimentError, match="owns no chunk rho; its chunks: welch_frames"):
        load("frames", chunks=["rho"])


def test_load_under_a_judge_gives_each_run_s_scores_under_that_reading():
    """Every weight under the deciding judge: the score runs stored beside the sparse depth chunks;
    a chunk without such scores is named, with the command that scores it."""
    reading = EVERY.with_judge("anchored-v2")
    res = load("depth_regime", reading=reading, chunks=["depth_sparse_planted"])
    assert res.judge == "anchored-v2"
    want = {r["key"]: r["metrics"]["score"] for r in stored.judged("depth_sparse_planted", reading=reading)}
    assert dict(zip(res.table["key"], res.table["score"])) == want
    with pytest.raises(ExperimentError, match=r"without scores under anchored-v2.*reference rescore CHUNK --judge"):
        load("depth_regime", reading=Reading("anchored-v2"), chunks=["depth_sparse_planted"])


def test_load_by_recovery_reads_the_planted_networks_an_experiment_stored():
    res = load("sparse_regime", reading=RECOVERY)
    assert res.judge is None and res.extras["chunks"] == ["sparse_regime_planted"]
    kept = recovered.table("sparse_regime_planted", keep=False).assign(chunk="sparse_regime_planted")
    pd.testing.assert_frame_equal(res.table, kept)


def test_load_refuses_a_reading_none_of_its_chunks_can_give():
    with pytest.raises(ExperimentError, match="no chunk of its holds networks that can be scored under anchored"):
        load("frames", reading=Reading("anchored"))
    with pytest.raises(ExperimentError, match="planted targets"):
        load("emc2_bench", reading=RECOVERY)


def test_runs_that_store_several_populations_are_not_read_as_one_network_under_a_judge():
    """A sparse_regime run stores a population per method and checkpoint, each scored by score runs of
    its own: `load` and `judged` refuse to read such runs as one network's scores, and name the reader
    that keeps the populations apart."""
    with pytest.raises(ExperimentError, match=r"several populations.*sparse_regime\.scores\.stored_scores"):
        load("sparse_regime", reading=Reading("anchored", weights=1000, engine="fused"))
    with pytest.raises(ExperimentError, match="several populations"):
        stored.judged("sparse_regime", reading=Reading("anchored"), error=ExperimentError)
    assert stored.several_populations(stored.records("sparse_regime")[0])
    assert not any(stored.several_populations(r) for r in stored.records("depth_picbreeder"))


def test_load_says_when_an_experiment_owns_no_chunk(monkeypatch):
    """An experiment whose module declares no chunk of the reference plan has nothing stored: the
    error says so and names the command that computes it."""
    import types

    monkeypatch.setattr(registry, "module", lambda name: types.SimpleNamespace())
    with pytest.raises(ExperimentError, match=r"no chunk of the reference plan.*volratio run frames --scale reference"):
        load("frames")
