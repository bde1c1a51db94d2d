"""The experiments and their registry: one run contract, one registry, sweeps that run only registered code
and validate before they start, old stores that still resume, workers that die with their driver."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from experiment_sizes import NEEDS_PICBREEDER, TINY

from volratio.cli import main
from volratio.experiments._base import ExperimentError, Result
from volratio.runs import registry
from volratio.runs.registry import get_run, register_run, unregister_run
from volratio.runs.store import Store, StoreError, config_key
from volratio.runs.sweep import Sweep, SweepSpecError, run_sweep
from volratio.util.presets import SCALES, ConfigError, configure

ROOT = Path(__file__).resolve().parent.parent
OLD_STORE = Path(__file__).resolve().parent / "data" / "old_store"


# ---------------------------------------------------------------------------------------------
# The contract


@pytest.mark.parametrize("name", list(registry.EXPERIMENTS))
def test_every_experiment_has_the_contract(name):
    mod = registry.module(name)
    assert mod.__doc__ and callable(mod.run)
    for scale in SCALES:
        cfg = registry.make_config(name, scale)
        assert dataclasses.is_dataclass(cfg) and cfg.scale == scale, (name, scale)
    q, r = registry.make_config(name, "quick"), registry.make_config(name, "reference")
    assert q != r  # the reference scale is a different, larger run


def test_configure_rejects_unknown_names_and_wrong_types():
    from volratio.experiments import sparse_regime

    cfg = configure(sparse_regime.Config.quick(), {"members": 5, "sp.rounds": 3, "checkpoints": [0.5, 0.9]})
    assert cfg.members == 5 and cfg.sp.rounds == 3 and cfg.checkpoints == (0.5, 0.9) and cfg.sp.tau == 0.95
    with pytest.raises(ConfigError, match="unknown entry 'membrs'"):
        configure(cfg, {"membrs": 5})
    with pytest.raises(ConfigError, match="members = 0.5: expected a int"):
        configure(cfg, {"members": 0.5})
    with pytest.raises(ConfigError, match="config.sp: unknown entry .tua."):
        configure(cfg, {"sp.tua": 0.5})
    with pytest.raises(ConfigError, match="scale 'huge'"):
        registry.make_config("sparse_regime", "huge")


def test_cli_run_an_experiment_with_overrides(tmp_path, capsys):
    out = tmp_path / "frames.csv"
    args = [
        "run",
        "frames",
        "--set",
        "dims=[2]",
        "--set",
        "extra=0",
        "--set",
        "also=[]",
        "--set",
        "frame.restarts=1",
        "--set",
        "frame.ap_iters=20",
        "--set",
        "frame.descent_steps=20",
        "--out",
        str(out),
        "--json",
    ]
    assert main(args) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["experiment"] == "frames" and payload["scale"] == "quick" and payload["versions"]["volratio"]
    assert payload["judge"] is None and all(r["judge"] is None for r in payload["rows"])  # frames: no EMC2 judge
    assert [(r["m"], r["n"]) for r in payload["rows"]] == [(3, 2)]
    assert payload["rows"][0]["max_sq_inner"] >= payload["rows"][0]["bound"] - 1e-12  # never beats Welch
    assert out.read_text().startswith("experiment,scale,")
    assert main(["run", "frames", "--set", "dimz=[2]"]) == 2
    assert "unknown entry 'dimz'" in capsys.readouterr().err


# ---------------------------------------------------------------------------------------------
# Sweeps: registered code only, validated before the first run


def test_a_spec_cannot_name_code(tmp_path):
    spec = tmp_path / "evil.toml"
    spec.write_text('run = "os:system"\n[config]\ncommand = "touch pwned"\n')
    with pytest.raises(SweepSpecError, match="not a registered run function"):
        Sweep.from_file(spec)
    assert not (tmp_path / "pwned").exists()


def test_bad_config_or_artifact_fails_before_any_run(tmp_path):
    out = tmp_path / "store"
    bad = Sweep(run="toy", grid={"n": [4, 8, -1]}, seeds=[0])  # the third run is invalid
    with pytest.raises(SweepSpecError, match="run 3 of 3.*n ≥ 1"):
        run_sweep(bad, out)
    typo = Sweep(run="train", config={"stpes": 5, "res": 8}, seeds=[0])
    with pytest.raises(SweepSpecError, match="stpes"):
        run_sweep(typo, out)
    art = Sweep(run="train", config={"steps": 1, "res": 8, "artifacts": ["net", "weights"]}, seeds=[0])
    with pytest.raises(SweepSpecError, match="unknown artifacts \\['weights'\\]"):
        run_sweep(art, out)
    wrong_type = Sweep(run="depth_point", config={"target": "planted:0", "depth": "three"}, seeds=[0])
    with pytest.raises(SweepSpecError, match="depth = 'three'"):
        run_sweep(wrong_type, out)
    assert not (out / "results.parquet").exists()  # nothing ran


def _double(config: dict) -> dict:
    return {"y": 2 * config["x"] + config["seed"]}


def test_user_registered_run_function(tmp_path):
    register_run(
        "double",
        _double,
        parse=lambda c: c if isinstance(c.get("x"), int) else (_ for _ in ()).throw(ExperimentError("x: give an int")),
    )
    try:
        rep = run_sweep(Sweep(run="double", grid={"x": [1, 2]}, seeds=[0, 10]), tmp_path / "s")
        assert sorted(rep.table["y"]) == [2, 4, 12, 14]
        with pytest.raises(SweepSpecError, match="x: give an int"):
            run_sweep(Sweep(run="double", config={"x": "1"}), tmp_path / "t")
        with pytest.raises(ConfigError, match="taken by the library"):
            register_run("toy", _double)
    finally:
        unregister_run("double")
    with pytest.raises(SweepSpecError, match="not a registered"):
        Sweep(run="double")


# ---------------------------------------------------------------------------------------------
# One rule for keys: the hash of the run name and the complete config


def test_a_store_of_the_old_key_format_is_refused_with_the_fix(tmp_path):
    """A table whose keys hashed a version tag cannot be found by today's keys: reading it is an error
    that names the fix, never a silent recompute into the same folder."""
    out = tmp_path / "old"
    shutil.copytree(OLD_STORE, out)
    with pytest.raises(StoreError, match=r"volratio.store/1.*write the sweep to a new folder \(--out\)"):
        Store(out)
    with pytest.raises(StoreError, match="volratio.store/1"):
        run_sweep(Sweep(run="toy", grid={"n": [3, 5]}, seeds=[0, 1], config={"steps": 5}), out)


def test_store_keys_hash_the_run_name_and_the_complete_config():
    entry = get_run("depth_point")
    full = entry.keyed({"seed": 0})
    assert full == entry.keyed(full) and "sp.loss_factor" in full  # complete: today's defaults filled in
    assert Sweep(run="depth_point", seeds=[0]).keys() == [config_key("depth_point", full)]
    given = {k: v for k, v in full.items() if k != "seed"}  # every entry written out: the same run
    assert Sweep(run="depth_point", config=given, seeds=[0]).keys() == Sweep(run="depth_point", seeds=[0]).keys()
    with pytest.raises(SweepSpecError, match="not a registered run function"):
        Sweep(run="volratio.depth_runs:depth_point")  # import paths are not names
    with pytest.raises(SweepSpecError, match=r"unknown entries \['version'\]"):
        Sweep.from_dict({"run": "toy", "version": 1})


# ---------------------------------------------------------------------------------------------
# A SIGKILLed driver leaves no worker behind


def _children(pid: int) -> list[int]:
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                stat = (d / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                out.append(int(d.name))
    return out


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="needs /proc to find the worker processes")
def test_workers_die_with_a_sigkilled_driver(tmp_path):
    spec = tmp_path / "slow.toml"
    spec.write_text('run = "toy"\nseeds = [0, 1, 2, 3]\n[config]\nn = 64\nsteps = 50000000\n')
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "volratio",
            "sweep",
            str(spec),
            "--processes",
            "2",
            "--out",
            str(tmp_path / "store"),
            "--no-progress",
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 120
        workers = []
        while time.monotonic() < deadline and len(workers) < 2:  # the pool's two workers (plus the resource tracker)
            workers = [p for p in _children(proc.pid) if "spawn_main" in Path(f"/proc/{p}/cmdline").read_text()]
            time.sleep(0.2)
        assert len(workers) == 2, "the sweep did not start its workers"
        time.sleep(1.0)  # the workers are computing
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(_alive(p) for p in workers):
        time.sleep(0.2)
    left = [p for p in workers if _alive(p)]
    for p in left:  # do not leave them running if the test fails
        os.kill(p, signal.SIGKILL)
    assert not left, f"workers {left} outlived their SIGKILLed driver"


def test_a_chapter_experiment_runs_as_a_sweep(tmp_path):
    tiny = {"dims": [2], "extra": 0, "also": [], "frame": {"restarts": 1, "ap_iters": 20, "descent_steps": 20}}
    with pytest.raises(SweepSpecError, match="unknown entry 'dimz'"):
        run_sweep(Sweep(run="frames", config={"dimz": [2]}), tmp_path / "bad")
    rep = run_sweep(Sweep(run="frames", config=tiny, seeds=[0, 1]), tmp_path / "s")
    assert not rep.failed and len(rep.table) == 2
    rows = rep.table["rows"].tolist()
    assert [r[0]["experiment"] for r in rows] == ["frames", "frames"] and rows[0][0]["m"] == 3
    assert rows[0][0]["max_sq_inner"] >= rows[0][0]["bound"] - 1e-12


def _triple(config: dict) -> dict:
    return {"y": 3 * config["x"]}


def _as_dict(config: dict) -> dict:
    return {"x": int(config["x"]), "seed": config["seed"], "scale": config.get("scale", 1)}


def test_a_user_run_is_keyed_by_its_name_and_its_parsed_config(tmp_path):
    try:
        register_run("tripled", _triple, _as_dict)
        sweep = Sweep(run="tripled", grid={"x": [1, 2]}, seeds=[0])
        full = [{"x": x, "seed": 0, "scale": 1} for x in (1, 2)]
        assert sweep.keys() == [config_key("tripled", c) for c in full]
        rep = run_sweep(sweep, tmp_path / "s")
        assert sorted(rep.table["y"]) == [3, 6] and [r["config"] for r in Store(tmp_path / "s").records()] == full
        register_run("doubled", _double, _as_dict)  # other results: another name, other keys
        assert not set(Sweep(run="doubled", grid={"x": [1, 2]}, seeds=[0]).keys()) & set(sweep.keys())
        with pytest.raises(ConfigError, match="taken by the library"):
            register_run("train", _double)
    finally:
        unregister_run("tripled")
        unregister_run("doubled")


def test_every_experiment_runs_on_its_config_alone():
    """The run contract: `run(cfg)` takes the config as its only positional argument (anything else —
    an output folder, an executor, a progress bar — is keyword-only), and the config has the three
    presets, all from the one mechanism (`Presets`: quick = the defaults, REFERENCE and FULL the changes)."""
    import inspect

    from volratio.runs.registry import EXPERIMENTS, module
    from volratio.util.presets import Presets

    for name in EXPERIMENTS:
        m = module(name)
        params = list(inspect.signature(m.run).parameters.values())
        positional = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        assert len(positional) == 1, f"{name}.run takes {positional} positionally; make all but the config keyword-only"
        assert issubclass(m.Config, Presets), f"{name}.Config: derive it from Presets"
        for preset in ("quick", "reference", "full"):
            own, mechanism = getattr(m.Config, preset).__func__, getattr(Presets, preset).__func__
            assert own is mechanism, f"{name}.Config.{preset} is written by hand; give REFERENCE / FULL instead"


def test_every_experiment_has_a_tiny_contract_run():
    assert set(TINY) == set(registry.EXPERIMENTS), "give every registered experiment a TINY config"


def _seeds_named(res) -> list[int] | None:
    """The seeds the result's rows (or the rows of the sweep it ran) name, if they name any."""
    for table in (res.table, getattr(res.extras.get("report"), "table", None)):
        if table is not None and "seed" in table:
            return sorted({int(s) for s in table["seed"]})
    return None


@pytest.mark.parametrize("name", list(registry.EXPERIMENTS))
def test_every_result_records_what_produced_it(name, tmp_path, request):
    """The run contract's record: config, the seeds actually used, scale, judge and versions, for
    every registered experiment; `to_frame()` carries experiment, scale and judge."""
    import inspect

    if name in NEEDS_PICBREEDER:
        request.getfixturevalue("picbreeder_dir")
    overrides, judge = TINY[name]
    cfg = registry.make_config(name, "quick", overrides)
    run = registry.module(name).run
    kw = {"out": tmp_path / "store"} if "out" in inspect.signature(run).parameters else {}
    res = run(cfg, **kw)
    assert isinstance(res, Result) and res.experiment == name
    assert res.config == dataclasses.asdict(cfg) and res.scale == cfg.scale == "quick"
    assert res.judge == judge, f"{name}: Result.judge = {res.judge!r}, its scores used {judge!r}"
    judges = {judge, *res.config.get("judges", ())}  # `judges`: more judges scored on the same images
    if "judge" in res.table:
        assert judge in set(res.table["judge"]) <= judges, f"{name}: the rows name judges {set(res.table['judge'])}"
    assert all(isinstance(s, int) for s in res.seeds) and res.seeds
    named = _seeds_named(res)
    if named is not None:
        assert sorted(set(res.seeds)) == named, f"{name}: records seeds {res.seeds}, its rows use {named}"
    elif res.config.get("seed") is not None:  # rows without seeds: the config's seed is the one used
        assert res.config["seed"] in res.seeds, f"{name}: ran with seed {res.config['seed']}, records {res.seeds}"
    assert {"volratio", "torch", "numpy", "python"} <= set(res.versions)
    frame = res.to_frame()
    assert list(frame.columns[:2]) == ["experiment", "scale"] and "judge" in frame
    assert set(frame["experiment"]) == {name} and set(frame["scale"]) == {"quick"}
    assert judge in set(frame["judge"]) <= judges and len(frame) == len(res.table)


def test_emc2_experiments_score_every_weight_unless_max_params_is_set():
    """Every non-zero weight by default; a sample only where a config sets `max_params` (the book's
    live quick scale of emc2_bench and of the connectivity chapter, and the stored reference chunks)."""
    from volratio.commands import emc2 as emc2_command
    from volratio.depth import point as depth_point
    from volratio.experiments import emc2_bench, optimizers
    from volratio.experiments.sparse_regime import quick, score_settings

    assert depth_point.Point().max_params is None and depth_point.Config.quick().max_params is None
    assert optimizers.Point().max_params is None and optimizers.Config.quick().base.max_params is None
    assert emc2_bench.Config().max_params is None and emc2_bench.Point().max_params is None
    assert score_settings().max_params is None
    assert emc2_bench.Config.quick().max_params == 150 and quick.QUICK_EMC2.max_params == 40
    assert emc2_bench.emc2_config(emc2_bench.Config()).max_params is None
    assert depth_point.emc2_config(depth_point.Point()).max_params is None
    import argparse

    sub = argparse.ArgumentParser().add_subparsers()
    emc2_command.register(sub)
    args = sub.choices["emc2"].parse_args(["picbreeder:skull", "--target", "picbreeder:skull"])
    assert args.max_params is None
