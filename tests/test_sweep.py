"""Sweeps and their results store: executors agree bit for bit, kills resume cleanly, damage is
recomputed, keys are stable."""

from __future__ import annotations

import json
import os
import random
import signal
import socket
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

from volratio.cli import main as cli_main
from volratio.runs.registry import register_run
from volratio.runs.store import CorruptResultWarning, Store, StoreError, canonical_json, config_key
from volratio.runs.sweep import Dask, Processes, Sweep, SweepSpecError, SweepStalled, resolve_run, run_sweep

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
LOG_ENV = "VOLRATIO_TEST_SWEEP_LOG"
# `volratio …` with this module's run functions registered (what a user's own driver script does)
DRIVER = "import sys, test_sweep; from volratio.cli import main; sys.exit(main(sys.argv[1:]))"


# ---------------------------------------------------------------------------------------------
# Run functions used by the tests (importable as "test_sweep:…" with tests/ on sys.path)


def logged(config: dict) -> dict:
    """A numpy run that logs its start and end (to $VOLRATIO_TEST_SWEEP_LOG) and takes a while."""
    log = os.environ.get(LOG_ENV)
    tag = os.environ.get(LOG_ENV + "_PHASE", "?")
    line = canonical_json(config)
    if log:
        with open(log, "a") as f:
            f.write(f"start {tag} {line}\n")
    time.sleep(config["sleep"])
    rng = np.random.default_rng(config["seed"])
    x = rng.standard_normal(config["n"])
    out = {"mean": float(x.mean()), "cumsum": np.cumsum(x)}
    if log:
        with open(log, "a") as f:
            f.write(f"end {tag} {line}\n")
    return out


def flaky(config: dict) -> dict:
    """Fails while the file named in the config exists."""
    if Path(config["fail_if"]).exists():
        raise RuntimeError(f"asked to fail for seed {config['seed']}")
    return {"value": config["seed"] * 1.5}


# Registered in code, as a user would (a spec can only name registered run functions); workers get
# them by reference, so they import this module (tests/ is on their path).
register_run("logged", logged)
register_run("flaky", flaky)


def _env(**extra) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(TESTS), str(ROOT), env.get("PYTHONPATH", "")])
    env.update(extra)
    return env


def _no_corruption_warnings(fn, *args, **kw):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = fn(*args, **kw)
    bad = [str(w.message) for w in caught if issubclass(w.category, CorruptResultWarning)]
    assert not bad, bad
    return out


# ---------------------------------------------------------------------------------------------
# Keys


def test_config_key_is_stable_across_processes_and_sessions():
    config = {"depth": 3, "lr": 0.003, "target": "planted:0", "grid": {"b": [1, 2], "a": None}, "seed": 7}
    # A literal: the key must not change between Python sessions, machines or library releases
    # (a change would silently orphan every stored result).
    assert config_key("train", config) == "31f3f30e103c4485"
    shuffled = dict(reversed(list(config.items())))
    assert config_key("train", shuffled) == "31f3f30e103c4485"
    code = (
        "import json,sys; from volratio.runs.store import config_key; "
        "print(config_key('train', json.loads(sys.argv[1])))"
    )
    for hashseed in ("0", "12345"):
        out = subprocess.run(
            [sys.executable, "-c", code, json.dumps(shuffled)],
            env=_env(PYTHONHASHSEED=hashseed),
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        assert out.stdout.strip() == "31f3f30e103c4485"
    # what is hashed matters: the run function and int-vs-float change the key; the library version does not
    assert config_key("toy", config) != "31f3f30e103c4485"
    assert config_key("train", {**config, "depth": 3.0}) != "31f3f30e103c4485"


def test_configs_that_cannot_be_hashed_are_refused():
    with pytest.raises(StoreError, match="finite"):
        config_key("m:f", {"lr": float("nan")})
    with pytest.raises(StoreError, match="cannot go in a config"):
        config_key("m:f", {"path": Path("/tmp")})


# ---------------------------------------------------------------------------------------------
# Specs


def test_spec_files_toml_and_yaml_give_the_same_sweep(tmp_path):
    (tmp_path / "s.toml").write_text(
        'run = "toy"\nseeds = 2\n[config]\nsteps = 10\n[grid]\nn = [4, 8]\nlr = [0.1, 0.2]\n'
    )
    (tmp_path / "s.yaml").write_text(
        "run: toy\nseeds: [0, 1]\nconfig: {steps: 10}\ngrid:\n  n: [4, 8]\n  lr: [0.1, 0.2]\n"
    )
    a, b = Sweep.from_file(tmp_path / "s.toml"), Sweep.from_file(tmp_path / "s.yaml")
    assert a.configs() == b.configs() and a.keys() == b.keys()
    assert len(a.configs()) == 8
    assert a.configs()[:3] == [
        {"steps": 10, "n": 4, "lr": 0.1, "seed": 0},
        {"steps": 10, "n": 4, "lr": 0.1, "seed": 1},
        {"steps": 10, "n": 4, "lr": 0.2, "seed": 0},
    ]
    (tmp_path / "bad.toml").write_text('run = "toy"\ngird = {n = [1]}\n')
    with pytest.raises(SweepSpecError, match="unknown entries.*gird"):
        Sweep.from_file(tmp_path / "bad.toml")
    with pytest.raises(SweepSpecError, match="'seed' is set by `seeds`"):
        Sweep(run="toy", config={"seed": 1})
    with pytest.raises(SweepSpecError, match="not a registered run function"):  # nothing named in a spec is imported
        run_sweep(Sweep(run="volratio.no_such_module:f"), tmp_path / "out")


# ---------------------------------------------------------------------------------------------
# The store: resume, failures, damage


def test_rerun_skips_done_runs_and_records_failures_with_traceback(tmp_path):
    flag = tmp_path / "fail"
    flag.touch()
    sweep = Sweep(run="flaky", config={"fail_if": str(flag)}, seeds=[0, 1, 2])
    out = tmp_path / "store"
    r1 = run_sweep(sweep, out)
    assert len(r1.ran) == 3 and len(r1.failed) == 3
    rec = Store(out).records()[0]
    assert rec["status"] == "failed" and rec["error"] == "RuntimeError: asked to fail for seed 0"
    assert "raise RuntimeError" in rec["traceback"] and "in flaky" in rec["traceback"]

    r2 = run_sweep(sweep, out)  # failures are not retried unless asked
    assert r2.ran == [] and r2.skipped == 3 and len(r2.failed) == 3

    flag.unlink()
    r3 = run_sweep(sweep, out, retry_failed=True)
    assert len(r3.ran) == 3 and r3.failed == []
    assert list(r3.table["value"]) == [0.0, 1.5, 3.0]
    assert list(r3.table["attempts"]) == [2, 2, 2]
    assert run_sweep(sweep, out, retry_failed=True).ran == []  # done runs are never rerun


def _toy_store(tmp_path) -> tuple[Sweep, Path, dict]:
    sweep = Sweep(run="toy", grid={"n": [4, 8, 16]}, seeds=[0, 1], config={"steps": 20})
    out = tmp_path / "store"
    report = run_sweep(sweep, out)
    assert len(report.ran) == 6
    return sweep, out, {r["key"]: r["metrics"] for r in Store(out).records()}


@pytest.mark.parametrize("damage", ["truncate", "flip", "garbage"])
def test_corrupt_parquet_is_rebuilt_from_run_records(tmp_path, damage):
    sweep, out, before = _toy_store(tmp_path)
    table = out / "results.parquet"
    data = bytearray(table.read_bytes())
    if damage == "truncate":
        data = data[: len(data) // 2]
    elif damage == "flip":
        data[len(data) // 3] ^= 0x5A  # inside the data pages
    else:
        data = bytearray(b"not parquet at all")
    table.write_bytes(bytes(data))
    with pytest.warns(CorruptResultWarning, match="damaged results table.*rebuilt 6 run"):
        reader = Store(out)  # a reader never sees the damaged rows: it sees the rebuilt ones
    assert {r["key"]: r["metrics"] for r in reader.records()} == before
    with pytest.warns(CorruptResultWarning):
        report = run_sweep(sweep, out)
    assert report.ran == [] and report.skipped == 6  # every artifact is intact: nothing recomputed
    assert (out / "results.parquet.corrupt-0").read_bytes() == bytes(data)  # kept for inspection
    after = _no_corruption_warnings(Store, out)
    assert {r["key"]: r["metrics"] for r in after.records()} == before


def test_damaged_table_and_record_recomputes_that_run_only(tmp_path):
    sweep, out, before = _toy_store(tmp_path)
    (out / "results.parquet").write_bytes(b"not parquet at all")
    victim = min(before)
    (out / "artifacts" / victim / "_row.json").write_text('{"key": "tampered"}')
    with pytest.warns(CorruptResultWarning, match="rebuilt 5 run"):
        report = run_sweep(sweep, out)
    assert report.ran == [victim]
    after = _no_corruption_warnings(Store, out)
    assert {r["key"]: r["metrics"] for r in after.records()} == before


def test_corrupt_artifact_is_detected_and_recomputed(tmp_path):
    sweep, out, before = _toy_store(tmp_path)
    store = Store(out)
    key = store.records()[2]["key"]
    path = store.artifact_path(key, "x")
    good = path.read_bytes()
    bad = bytearray(good)
    bad[-3] ^= 0x01  # one bit of one float
    path.write_bytes(bytes(bad))
    with pytest.raises(StoreError, match="damaged"):
        Store(out).artifact(key, "x")
    with pytest.warns(CorruptResultWarning, match=f"artifact 'x' of run {key}"):
        report = run_sweep(sweep, out)
    assert report.ran == [key]
    assert path.read_bytes() == good
    assert np.array_equal(Store(out).artifact(key, "x"), np.load(path, allow_pickle=False))
    path.unlink()  # a missing artifact counts as damage too
    with pytest.warns(CorruptResultWarning):
        assert run_sweep(sweep, out).ran == [key]


def test_two_writers_cannot_share_a_store(tmp_path):
    store = Store(tmp_path)
    with store.writing():
        with pytest.raises(StoreError, match="being written by another sweep"):
            with Store(tmp_path).writing():
                pass
    with Store(tmp_path).writing():  # released
        pass


# ---------------------------------------------------------------------------------------------
# Kill and resume


def _n_rows(out: Path) -> int:
    try:
        return len(_no_corruption_warnings(Store, out).rows)
    except FileNotFoundError:
        return 0


def _wait_for(predicate, timeout: float, what: str):
    t0 = time.monotonic()
    while not predicate():
        if time.monotonic() - t0 > timeout:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


@pytest.mark.slow
def test_sigkill_at_a_random_point_then_resume_loses_nothing_and_repeats_nothing(tmp_path):
    rng = random.Random(20261129)
    spec = tmp_path / "kill.toml"
    spec.write_text('run = "logged"\nseeds = [0, 1, 2, 3]\n[config]\nsleep = 0.15\n[grid]\nn = [3, 5, 7]\n')
    sweep = Sweep.from_file(spec)
    keys = sweep.keys()
    out, log = tmp_path / "store", tmp_path / "log.txt"
    log.touch()
    expected = {k: logged({**c, "sleep": 0}) for k, c in zip(keys, sweep.configs())}

    def lines(kind, phase=None):
        return [
            config_key(resolve_run(sweep.run).name, json.loads(l.split(" ", 2)[2]))
            for l in log.read_text().splitlines()
            if l.startswith(kind + " ") and (phase is None or l.split(" ")[1] == phase)
        ]

    recorded = {}
    for phase in ("1", "2"):  # kill twice, the second time in a resumed sweep
        n_rec = len(recorded.get("1", ()))
        proc = subprocess.Popen(
            [sys.executable, "-c", DRIVER, "sweep", str(spec), "--out", str(out), "--resume", "--no-progress"],
            env=_env(**{LOG_ENV: str(log), LOG_ENV + "_PHASE": phase}),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        try:
            # once the sweep has recorded a run, kill it anywhere: mid-run, mid-write, between runs
            _wait_for(lambda n_rec=n_rec: _n_rows(out) > n_rec, 90, "the sweep to record a run")
            delay = rng.uniform(0.0, 0.6)
            time.sleep(delay)
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=30)
        assert proc.returncode == -signal.SIGKILL
        store = _no_corruption_warnings(Store, out)  # the table on disk is whole
        for key in store.rows:  # and so is every artifact it names
            assert _no_corruption_warnings(store.status, key) == "done", (phase, delay)
        recorded[phase] = set(store.rows)
        assert recorded[phase] < set(keys), (phase, delay)  # the kill landed mid-sweep
        if phase == "2":
            assert recorded["1"] < recorded["2"]
            assert not set(lines("start", "2")) & recorded["1"], "a recorded run was started again"

    os.environ[LOG_ENV], os.environ[LOG_ENV + "_PHASE"] = str(log), "3"
    try:
        report = _no_corruption_warnings(run_sweep, sweep, out)
    finally:
        del os.environ[LOG_ENV], os.environ[LOG_ENV + "_PHASE"]
    assert sorted(report.ran) == sorted(set(keys) - recorded["2"])
    assert not set(lines("start", "3")) & recorded["2"], "a recorded run was started again"

    store = Store(out)
    assert sorted(store.rows) == sorted(keys)  # each run once, none lost
    for rec in store.records():
        assert rec["status"] == "done" and rec["attempts"] == 1
        assert rec["metrics"] == {"mean": expected[rec["key"]]["mean"]}
        assert np.array_equal(store.artifact(rec["key"], "cumsum"), expected[rec["key"]]["cumsum"])
    # a run can be executed twice only if the kill struck between its end and its record
    ends = lines("end")
    for key in keys:
        assert ends.count(key) <= 2
    assert sum(ends.count(k) - 1 for k in keys) <= 2  # at most one such run per kill
    assert not list(out.rglob("*.tmp"))  # temporaries of killed writers are cleaned up


# ---------------------------------------------------------------------------------------------
# Executors agree bit for bit


def _tiny_train_spec(path: Path) -> Path:
    path.write_text(
        'run = "train"\nseeds = [0, 1]\n'
        '[config]\ntarget = "planted:1:depth=2,width=3"\nres = 12\nsteps = 25\nwidth = 4\ndevice = "cpu"\n'
        "[grid]\ndepth = [1, 2]\n"
    )
    return path


def _fingerprint(out: Path) -> dict:
    rows = Store(out).rows
    return {k: (r["status"], r["metrics"], json.loads(r["artifacts"])) for k, r in rows.items()}


@pytest.mark.slow
def test_dask_localcluster_equals_in_process_bitwise(tmp_path):
    sweep = Sweep.from_file(_tiny_train_spec(tmp_path / "tiny.toml"))
    report = run_sweep(sweep, tmp_path / "inproc")
    assert report.failed == [] and len(report.ran) == 4
    on_dask = run_sweep(sweep, tmp_path / "dask", Dask(workers=2), timeout=180)  # no hang: a stall raises
    assert sorted(on_dask.ran) == sorted(report.ran) and on_dask.failed == []
    # metrics as stored JSON text and artifact SHA-256s (network weights, images, loss curves)
    assert _fingerprint(tmp_path / "dask") == _fingerprint(tmp_path / "inproc")
    hosts = {r["host"] for r in Store(tmp_path / "dask").records()}
    assert hosts and None not in hosts
    net = Store(tmp_path / "dask").artifact(report.ran[0], "net")
    image = Store(tmp_path / "dask").artifact(report.ran[0], "image")
    assert np.array_equal(net.render(12).detach().numpy(), image)  # the stored network draws the stored image


def test_local_processes_equal_in_process(tmp_path):
    # threads=None: a pure-numpy run needs no torch, so the spawned workers start quickly
    sweep = Sweep(run="toy", grid={"n": [3, 6]}, seeds=[0, 1, 2], threads=None)
    run_sweep(sweep, tmp_path / "inproc")
    report = run_sweep(sweep, tmp_path / "procs", Processes(2), timeout=120)
    assert len(report.ran) == 6 and report.failed == [] and report.executor == "2 local processes"
    assert _fingerprint(tmp_path / "procs") == _fingerprint(tmp_path / "inproc")


def test_an_existing_scheduler_by_address(tmp_path, capsys):
    from distributed import LocalCluster

    spec = tmp_path / "toy.toml"
    spec.write_text('run = "toy"\nseeds = 3\n[grid]\nn = [4, 9]\n')
    run_sweep(Sweep.from_file(spec), tmp_path / "inproc")
    # a scheduler with one in-process worker of 3 threads: cheap to start, and runs overlap in threads
    with LocalCluster(n_workers=1, threads_per_worker=3, processes=False, dashboard_address=None) as cluster:
        argv = [
            "sweep",
            str(spec),
            "--scheduler",
            cluster.scheduler_address,
            "--out",
            str(tmp_path / "remote"),
            "--json",
        ]
        assert cli_main(argv) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["ran"] == 6 and summary["executor"] == f"Dask scheduler {cluster.scheduler_address}"
    assert _fingerprint(tmp_path / "remote") == _fingerprint(tmp_path / "inproc")
    # a port bound here and never listened on: connections to it are refused whatever else runs
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        address = f"tcp://127.0.0.1:{closed.getsockname()[1]}"
        with pytest.raises(SweepSpecError, match=f"cannot reach the Dask scheduler at {address}"):
            run_sweep(Sweep.from_file(spec), tmp_path / "x", Dask(address, timeout=2))


def test_a_stalled_sweep_raises_instead_of_hanging(tmp_path):
    sweep = Sweep(run="logged", config={"sleep": 5.0, "n": 2})
    t0 = time.monotonic()
    with pytest.raises(SweepStalled, match="no run finished in 0.5 s"):
        run_sweep(sweep, tmp_path / "store", Processes(1), timeout=0.5)
    assert time.monotonic() - t0 < 30


def test_train_run_function_reports_metrics_and_refuses_typos():
    from volratio.experiments.training import train

    out = train(
        {
            "seed": 3,
            "target": "planted:1:depth=2,width=3",
            "res": 8,
            "steps": 5,
            "depth": 2,
            "width": 3,
            "device": "cpu",
            "artifacts": ["losses"],
        }
    )
    assert out["steps"] == 5 and out["depth"] == 2 and out["width"] == 3 and out["device"] == "cpu"
    assert out["losses"].shape == (6, 1) and out["final_loss"] == out["losses"][-1, 0]
    assert out["best_loss"] <= out["losses"][0, 0] and "net" not in out
    with pytest.raises(ValueError, match="stpes"):
        train({"seed": 0, "stpes": 5})


# ---------------------------------------------------------------------------------------------
# Command line


def test_cli_sweep_refuses_a_used_store_without_resume_and_results_json(tmp_path, capsys):
    spec = tmp_path / "toy.toml"
    spec.write_text('run = "toy"\nseeds = [0, 1]\n[grid]\nn = [2, 3]\n')
    out = str(tmp_path / "store")
    assert cli_main(["sweep", str(spec), "--out", out, "--no-progress"]) == 0
    assert "ran 4" in capsys.readouterr().out
    assert cli_main(["sweep", str(spec), "--out", out]) == 2
    assert "--resume" in capsys.readouterr().err
    assert cli_main(["sweep", str(spec), "--out", out, "--resume", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["ran"] == 0

    assert cli_main(["results", out, "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert len(rows) == 4
    assert {(r["config"]["n"], r["config"]["seed"]) for r in rows} == {(2, 0), (2, 1), (3, 0), (3, 1)}
    for r in rows:
        assert r["key"] == config_key("toy", r["config"])
        assert r["config"] == {"n": r["config"]["n"], "seed": r["config"]["seed"], "lr": 0.1, "steps": 200}  # complete
        assert set(r["metrics"]) == {"loss", "loss0"} and r["metrics"]["loss"] < r["metrics"]["loss0"]
    assert cli_main(["results", out]) == 0
    text = capsys.readouterr().out
    assert "4 runs — 4 done" in text and rows[0]["key"] in text
    assert cli_main(["results", str(tmp_path / "nowhere")]) == 2
