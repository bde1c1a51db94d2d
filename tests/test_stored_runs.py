"""One meaning per stored run: a run is keyed, run and stored with its complete config, its key is
the hash of its run function's name and that config, and its row records the library version and
commit that made it as provenance, never as part of its meaning."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest

from volratio import __version__
from volratio.depth import point as depth_point
from volratio.runs import reference as R
from volratio.runs import stored as S
from volratio.runs.manifest import write as write_manifest
from volratio.runs.registry import _BUILTIN_RUNS, EXPERIMENTS, get_run, module, stored_config
from volratio.runs.store import Store, config_key
from volratio.runs.sweep import Sweep, run_sweep

ROOT = Path(__file__).resolve().parents[1]
STORE = ROOT / "results" / "reference"

# what a run of each built-in run function needs besides the defaults (no defaults for these)
REQUIRED = {
    "fit_budget": {"target": "picbreeder:skull", "depth": 2},
    "rescore": {
        "source": {"chunk": "c", "key": "k", "run": "depth_point", "net_sha256": "0" * 64},
        "judge": "anchored",
        "target": "planted:0",
        "members": 1,
        "emc2": {},
        "calibration_seed": 0,
    },
}


def small_configs():
    """One config per built-in run function and per chapter experiment (its quick scale)."""
    out = [(name, {**REQUIRED.get(name, {}), "seed": 0}) for name in _BUILTIN_RUNS]
    for name in EXPERIMENTS:
        seeded = "seed" in {f.name for f in dataclasses.fields(module(name).Config)}
        out.append((name, {"scale": "quick", **({"seed": 0} if seeded else {})}))
    return out


@pytest.mark.parametrize("name,config", small_configs(), ids=[n for n, _ in small_configs()])
def test_a_run_is_keyed_by_its_complete_config_which_reads_back_alike(name, config):
    entry = get_run(name)
    full = entry.keyed(config)
    json.dumps(full, allow_nan=False)  # plain data: a key can hash it, a row can store it
    assert set(full) >= set(config) - {"scale"} and entry.keyed(full) == full  # complete, and a fixed point
    assert entry.parse(full) == entry.parse(config)  # the complete config means what the given one means
    if "seed" in config:  # a sweep sets the seed of every run (an experiment that seeds its own runs is no sweep's)
        assert Sweep(run=name, config={k: v for k, v in config.items() if k != "seed"}).keys() == [
            config_key(name, full)
        ]


def test_a_changed_default_makes_new_keys(monkeypatch):
    before = get_run("depth_point").keyed({"seed": 0})
    Point = dataclasses.make_dataclass("Point", [("adamw_lr", float, 1e-3)], bases=(depth_point.Point,), frozen=True)
    monkeypatch.setattr(depth_point, "Point", Point)
    after = get_run("depth_point").keyed({"seed": 0})
    assert (before["adamw_lr"], after["adamw_lr"]) == (3e-4, 1e-3)
    assert config_key("depth_point", before) != config_key("depth_point", after)  # a new run, not a stored one


def test_every_stored_row_holds_its_complete_config_and_the_hash_of_it():
    """Every run under results/reference: its config parses and completes to itself, its key is the
    hash of its run name and that config, and it records version and commit as provenance."""
    n = 0
    for chunk in S.chunks(STORE):
        for r in S.records(chunk, STORE, rescores=True):
            entry = get_run(r["run"])  # a registry name, never an import path
            assert entry.keyed(r["config"]) == r["config"], (chunk, r["key"])  # complete
            assert config_key(r["run"], r["config"]) == r["key"], (chunk, r["key"])
            stored_config(r)
            assert r["version"] == __version__ and re.fullmatch(r"[0-9a-f]{40}(\+dirty)?", r["commit"]), r["key"]
            n += 1
    assert n > 1000


def test_rows_record_version_and_commit_which_are_not_in_the_key(tmp_path):
    spec = dict(run="toy", grid={"n": [3]}, seeds=[0, 1], config={"steps": 3})
    rep = run_sweep(Sweep(**spec), tmp_path / "s")
    rows = Store(tmp_path / "s").records()
    assert [r["version"] for r in rows] == [__version__] * 2
    assert all(r["commit"] is None or re.fullmatch(r"[0-9a-f]{40}(\+dirty)?", r["commit"]) for r in rows)
    assert [r["key"] for r in rows] == [config_key("toy", r["config"]) for r in rows] == rep.ran
    assert {json.dumps(r["config"], sort_keys=True) for r in rows} == {
        json.dumps(get_run("toy").keyed({"n": 3, "steps": 3, "seed": s}), sort_keys=True) for s in (0, 1)
    }  # the complete configs
    assert run_sweep(Sweep(**spec), tmp_path / "s").ran == []  # resumes: the same keys


def test_verify_reruns_each_stored_run_under_its_stored_config(toy_store):
    _, root = toy_store
    out = R.verify(root, sample=2).runs
    assert len(out) == 2 and all(r["ok"] and r["result"] == "reproduced" for r in out)
    # a row whose config is not complete cannot be re-run as stored: reported, never re-run as another
    st = Store(root / "tiny")
    row = dict(next(iter(st.rows.values())))
    config = {k: v for k, v in json.loads(row["config"]).items() if k != "lr"}
    with st.writing():
        st.record({"key": config_key(row["run"], config), "run": row["run"], "version": __version__,
                   "status": "done", "config": config, "metrics": json.loads(row["metrics"]), "seconds": 0.0,
                   "artifacts": {}})  # fmt: skip
    man = json.loads((root / "tiny" / "manifest.json").read_text())
    man["runs"][config_key(row["run"], config)] = {**man["runs"][row["key"]], "config": config}
    write_manifest(root / "tiny" / "manifest.json", man)
    cannot = [r for r in R.verify(root, sample=7).runs if r["result"] == "cannot rerun"]
    assert len(cannot) == 1 and "not complete" in cannot[0]["problem"]
