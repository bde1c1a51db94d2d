"""Run-function versions: version 1 reads a config through a frozen table and keys it as given;
version 2 keys and stores the complete config; a store never resumes another version's runs."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path

import pytest

from volratio import __version__
from volratio.experiments import depth_regime
from volratio.runs import reference as R
from volratio.runs import run_versions
from volratio.runs.registry import _BUILTIN_RUNS, EXPERIMENTS, get_run, module, stored_config
from volratio.runs.store import Store, config_key
from volratio.runs.sweep import Sweep, SweepSpecError, run_sweep

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


def test_the_frozen_table_is_never_edited():
    """Stored version-1 runs mean what v1_readings.json says; a change to it would change their meaning
    under the same keys. Make a new version instead."""
    digest = hashlib.sha256(run_versions.READINGS_FILE.read_bytes()).hexdigest()
    assert digest == "622695538621f7c480d291b173c136a034f24f491beac3994ecbfa72ef09a25e", (
        "v1_readings.json changed: stored version-1 runs would be misread"
    )


@pytest.mark.parametrize("name,config", small_configs(), ids=[n for n, _ in small_configs()])
def test_version_2_keys_the_complete_config_and_reads_it_back_alike(name, config):
    v2 = get_run(name)
    assert v2.version == run_versions.LATEST == 2 and v2.completes
    full = v2.keyed(config)
    json.dumps(full, allow_nan=False)  # plain data: a key can hash it, a row can store it
    assert set(full) >= set(config) - {"scale"} and v2.keyed(full) == full  # complete, and a fixed point
    assert v2.parse(full) == v2.parse(config)  # the complete config means what the given one means
    v1 = get_run(name, 1)
    assert not v1.completes and v1.keyed(config) == config  # version 1 keys the config as given
    assert config_key(v2.key, full, v2.key_version(__version__)) != config_key(v1.key, config, __version__)


def test_a_changed_default_changes_version_2_keys_but_not_what_version_1_reads(monkeypatch):
    before = get_run("depth_point").keyed({"seed": 0})
    Point = dataclasses.make_dataclass("Point", [("adamw_lr", float, 1e-3)], bases=(depth_regime.Point,), frozen=True)
    monkeypatch.setattr(depth_regime, "Point", Point)
    after = get_run("depth_point").keyed({"seed": 0})
    assert (before["adamw_lr"], after["adamw_lr"]) == (3e-4, 1e-3)
    assert config_key("k", before, "v") != config_key("k", after, "v")  # a new run, not a stored one
    assert get_run("depth_point", 1).parse({"seed": 0}).adamw_lr == 3e-4  # version 1: the frozen reading


def test_version_1_reads_a_nested_entry_on_top_of_its_frozen_readings():
    read = run_versions.read_v1("connectivity", {"scale": "reference", "sp": {"tau": 0.8}})
    assert read["sp.tau"] == 0.8 and read["sp.loss_factor"] is None and "sp" not in read
    cfg = get_run("connectivity", 1).parse({"scale": "reference", "sp": {"tau": 0.8}})
    assert cfg.sp.tau == 0.8 and cfg.sp.loss_factor is None and cfg.legacy_rows
    with pytest.raises(run_versions.VersionError, match="scale 'huge'"):
        run_versions.read_v1("connectivity", {"scale": "huge"})
    train = get_run("train", 1).parse({"arch": "2;gaussian:3,sin:2", "target": "planted:0"})
    assert train.arch == "2;gaussian:3,sin:2"  # an arch replaces the depth × width readings


def test_every_stored_run_reads_back_through_its_recorded_version():
    """Every run under results/reference was made by version 1: its key is that of its config and tag,
    and its config parses by version 1's reading."""
    n = 0
    for chunk in R.chunks(STORE):
        for r in R.records(chunk, STORE, rescores=True):
            assert run_versions.version_of(r["version"]) == 1 and r["version"] == __version__
            assert config_key(r["run"], r["config"], r["version"]) == r["key"]
            stored_config(r)
            n += 1
    assert n > 1000


def test_version_tags_round_trip_and_bad_ones_are_refused():
    for v in (1, 2, 7):
        assert run_versions.version_of(run_versions.version_tag("0.1.0", v)) == v
    assert run_versions.version_tag("0.1.0", 1) == "0.1.0"
    with pytest.raises(run_versions.VersionError, match="not a run-function version tag"):
        run_versions.version_of("0.1.0/vx")


@pytest.mark.parametrize("version,match", [(3, "version 3 is not one this code runs"), (0, "positive integer"),
                                           ("1", "positive integer"), (True, "positive integer")])  # fmt: skip
def test_a_spec_naming_a_version_this_code_does_not_run_fails_before_running(version, match):
    with pytest.raises(SweepSpecError, match=match):
        Sweep(run="toy", version=version)


def test_a_store_refuses_the_runs_of_the_other_version(tmp_path):
    spec = dict(run="toy", grid={"n": [3]}, seeds=[0, 1], config={"steps": 3})
    one = run_sweep(Sweep(**spec, version=1), tmp_path / "one")
    assert [r["version"] for r in Store(tmp_path / "one").records()] == [__version__] * 2
    with pytest.raises(SweepSpecError, match=r"made by version 1 .* runs version 2: to resume them, run version 1"):
        run_sweep(Sweep(**spec), tmp_path / "one")
    two = run_sweep(Sweep(**spec), tmp_path / "two")
    rows = Store(tmp_path / "two").records()
    assert [r["version"] for r in rows] == [f"{__version__}/v2"] * 2
    assert {json.dumps(r["config"], sort_keys=True) for r in rows} == {
        json.dumps(get_run("toy").keyed({"n": 3, "steps": 3, "seed": s}), sort_keys=True) for s in (0, 1)
    }  # the complete configs
    with pytest.raises(SweepSpecError, match=r"made by version 2 .* runs version 1: to resume them, run version 2"):
        run_sweep(Sweep(**spec, version=1), tmp_path / "two")
    assert run_sweep(Sweep(**spec), tmp_path / "two").ran == []  # the same version resumes
    assert one.table["loss"].tolist() == two.table["loss"].tolist()  # same code: the two versions agree


PLAN = """
scale = "reference"

[chunks.one]
run = "toy"
version = 1
seeds = [0, 1]

[chunks.one.config]
steps = 20

[chunks.two]
run = "toy"
seeds = [0, 1]

[chunks.two.config]
steps = 20
"""


def test_verify_reruns_each_stored_run_by_its_recorded_version(tmp_path):
    (tmp_path / "plan.toml").write_text(PLAN)
    plan, root = R.load_plan(tmp_path / "plan.toml"), tmp_path / "reference"
    for chunk in ("one", "two"):
        assert not R.run_chunk(plan, chunk, root, progress=False).failed
    tags = {c: {r["version"] for r in R.records(c, root)} for c in ("one", "two")}
    assert tags == {"one": {__version__}, "two": {f"{__version__}/v2"}}
    out = R.verify(root, sample=4).runs
    assert len(out) == 4 and all(r["ok"] and r["result"] == "reproduced" for r in out)
    # a run stored by a version this code does not run is reported as such, never re-run as another
    st = Store(root / "two")
    row = dict(next(iter(st.rows.values())))
    tag, config = f"{__version__}/v9", json.loads(row["config"])
    with st.writing():
        st.record({"key": config_key(row["run"], config, tag), "run": row["run"], "version": tag, "status": "done",
                   "config": config, "metrics": json.loads(row["metrics"]), "seconds": 0.0, "artifacts": {}})  # fmt: skip
    other = [r for r in R.verify(root, sample=5, any_machine=True).runs if r["result"] == "other version"]
    assert len(other) == 1 and f"version {tag!r} of toy, which this code does not run" in other[0]["problem"]
