"""The reference store (volratio.runs.reference): chunks with manifests, and `results verify`."""

import json

import numpy as np
import pytest

from volratio import __version__
from volratio.cli import main
from volratio.errors import VolratioError
from volratio.runs import reference as R
from volratio.runs import stored as S
from volratio.runs.store import Store
from volratio.util import machine as M


def test_chunk_has_manifest_with_times_and_configs(toy_store):
    plan_file, root = toy_store
    man = S.manifest("tiny", root)
    assert man["runs_total"] == man["runs_done"] == 6
    assert man["spec"]["run"] == "toy" and man["spec"]["grid"] == {"n": [4, 8]}
    s = man["sessions"][0]
    for k in ("volratio", "torch", "commit", "cpu_model", "device"):
        assert k in s
    keys = {r["key"] for r in Store(root / "tiny").records()}
    assert set(man["runs"]) == keys
    for run in man["runs"].values():
        assert run["cpu_s"] >= 0 and run["wall_s"] >= 0 and run["seed"] in (0, 1, 2)
        assert run["config"]["steps"] == 30
    # a second run of the chunk resumes: nothing is recomputed, the manifest keeps its runs
    again = R.run_chunk(R.load_plan(plan_file), "tiny", root, progress=False)
    assert again.ran == [] and again.skipped == 6
    assert S.manifest("tiny", root)["runs_done"] == 6 and len(S.manifest("tiny", root)["sessions"]) == 2


def test_stored_records_reads_the_chunks_present_and_names_the_missing(toy_store):
    _, root = toy_store
    assert len(S.runs_of("tiny", root)) == 6
    # chunks that are not stored are skipped; a run's record carries its times from the manifest
    recs = S.runs_of(["not_there", "tiny"], root)
    assert len(recs) == 6 and all(r["cpu_s"] >= 0 and r["config"]["steps"] == 30 for r in recs)
    t = S.table("tiny", root)  # one row per run, with its seed
    assert len(t) == 6 and sorted(t.seed) == [0, 0, 1, 1, 2, 2] and t.key.is_unique
    with pytest.raises(R.ReferenceError, match="none of the chunks a, b is stored.*volratio reference run"):
        S.runs_of(("a", "b"), root)

    class Mine(Exception):
        pass

    with pytest.raises(Mine, match="none of the chunks"):
        S.runs_of("a", root, error=Mine)


def test_verify_reproduces_and_detects_a_changed_metric(toy_store, capsys):
    _, root = toy_store
    out = R.verify(root, sample=6, seed=3).runs
    assert len(out) == 6 and all(r["ok"] and r["why"] == "same CPU kind" for r in out)
    # the sample is seeded: the same seed, the same runs
    twice = [[r["key"] for r in R.verify(root, sample=2, seed=5).runs] for _ in range(2)]
    assert twice[0] == twice[1]
    # change one stored metric (the row's key does not cover metrics): verify must notice
    st = Store(root / "tiny")
    key = next(iter(st.rows))
    with st.writing():
        row = dict(st.rows[key])
        metrics = json.loads(row["metrics"])
        metrics["loss"] = metrics["loss"] * (1 + 1e-12)
        st.record(
            {
                "key": key,
                "run": row["run"],
                "version": row["version"],
                "status": "done",
                "config": json.loads(row["config"]),
                "metrics": metrics,
                "seconds": 0.0,
                "artifacts": {
                    n: (".npy", (root / "tiny" / a["file"]).read_bytes())
                    for n, a in json.loads(row["artifacts"]).items()
                },
            }
        )
    bad = R.verify(root, sample=6).failures
    assert len(bad) == 1 and bad[0]["key"] == key and "metric loss does not reproduce" in bad[0]["problem"]
    rc = main(["results", "verify", str(root), "--sample", "6"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 1 and len(err) == 1 and err[0].startswith("volratio results verify: error: tiny/") and key in err[0]


def test_verify_cli_and_cheap_sample(toy_store, capsys):
    _, root = toy_store
    assert main(["results", "verify", str(root), "--sample", "2", "--max-cpu-seconds", "1000", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert len(out["runs"]) == 2 and all(r["ok"] for r in out["runs"])
    assert out["machine"]["kind"] == M.identity()["kind"] and out["chunks"][0]["comparable"] == 6
    man_path = root / "tiny" / R.MANIFEST
    man = json.loads(man_path.read_text())
    for i, run in enumerate(man["runs"].values()):
        run["cpu_s"] = 5.0 if i else 0.5  # one cheap run, five dear ones
    R.write_manifest(man_path, man)  # a hand edit goes through the writer, which updates its digest
    with pytest.raises(R.ReferenceError, match="CPU time"):
        R.verify(root, sample=1, max_cpu_seconds=0.1)
    cheap = R.verify(root, sample=3, max_cpu_seconds=1.0).runs  # only the cheap run can be drawn
    assert len(cheap) == 1 and cheap[0]["key"] == next(iter(man["runs"])) and cheap[0]["ok"]
    assert main(["results", "verify", str(root / "nosuch")]) == 2
    assert "no such folder" in capsys.readouterr().err
    assert main(["results", str(root / "tiny"), "--sample", "2"]) == 2  # --sample belongs to verify
    assert "applies to `volratio results verify" in capsys.readouterr().err


# ---------------------------------------------------------------------------------------------
# Machine kinds: runs are compared bit for bit only on the CPU kind that stored them

AMD_SESSION = {  # a session written before the kind was recorded (what the AMD manifests hold)
    "volratio": "0.1.0",
    "torch": "2.13.0+cpu",
    "commit": "0" * 40,
    "device": "cpu",
    "cpu_model": "AMD EPYC",
    "cpu_count": 2,
}
# the same, on a CPU model no machine has: "another machine" for the tests, whatever this one is
OTHER_SESSION = {**AMD_SESSION, "cpu_model": "AMD EPYC 0000 (no such model)"}
CPUINFO = """processor\t: 0
vendor_id\t: GenuineIntel
model name\t: Intel(R) Xeon(R) Processor
flags\t\t: fpu sse4_2 avx avx2 fma avx512f avx512bw amx_tile hypervisor
"""
CONFIG = """  - Intel(R) oneAPI Math Kernel Library Version 2024.2-Product Build 20240605 for Intel(R) 64
  - Intel(R) MKL-DNN v3.12.0 (Git Hash 80afa71049cd69a3df32adcccb623b12cd7baa22)
  - Build settings: BLAS_INFO=mkl, BUILD_TYPE=Release, LAPACK_INFO=mkl
"""


def test_machine_identity_and_kinds(tmp_path):
    import torch

    here = M.identity()
    assert set(M.PARTS) | {"kind"} == set(here) and here["kind"] == M.kind_of(here)
    assert here["torch"] == torch.__version__ and here["cpu_capability"] == torch.backends.cpu.get_cpu_capability()
    assert M.same_kind(here, here) and M.same_kind(M.of_session({**AMD_SESSION, **here}), here)
    for part in ("cpu_capability", "cpu_model", "torch", "blas"):
        changed = {**here, part: f"not {here[part]}"}  # a value no machine has: the test holds on any machine
        assert M.kind_of(changed) != here["kind"] and not M.same_kind(changed, here)
    (tmp_path / "cpuinfo").write_text(CPUINFO)
    vendor, model, isa = M._cpuinfo(tmp_path / "cpuinfo")
    assert (vendor, model) == ("GenuineIntel", "Intel(R) Xeon(R) Processor")
    assert isa == ["amx_tile", "avx", "avx2", "avx512bw", "avx512f", "fma", "sse4_2"]  # fpu, hypervisor: no
    assert M._blas(CONFIG) == "mkl 2024.2, onednn 3.12.0" and M._blas("BLAS_INFO=open") == "open"
    # an old session: vendor from the model name, ISA, capability and BLAS not recorded
    old = M.of_session(AMD_SESSION)
    assert old["cpu_vendor"] == "AuthenticAMD" and old["cpu_isa"] is old["blas"] is old["cpu_capability"] is None
    assert old["kind"].startswith("amd-") and old["kind"] == M.of_session(dict(AMD_SESSION))["kind"]
    assert "AMD EPYC, torch 2.13.0+cpu (ISA, capability, BLAS not recorded)" == M.describe(old)
    amd_here = {**here, "cpu_vendor": "AuthenticAMD", "cpu_model": "AMD EPYC", "torch": "2.13.0+cpu"}
    assert M.same_kind(old, amd_here)  # recorded parts agree: the same kind
    assert not M.same_kind(old, {**amd_here, "torch": "2.14.0+cpu"}) and not M.same_kind(
        old, {**here, "cpu_model": "x"}
    )
    assert not M.same_kind({**old, "cpu_model": None}, amd_here)  # CPU model, torch, device are required


def _move_runs_to(root, session: dict, n: int) -> list:
    """Mark the first `n` runs of the tiny chunk as stored in `session` (another machine)."""
    path = root / "tiny" / R.MANIFEST
    man = json.loads(path.read_text())
    man["sessions"].append(session)
    keys = list(man["runs"])[:n]
    for k in keys:
        man["runs"][k]["session"] = len(man["sessions"])
        man["runs"][k].pop("kind", None)
    R.write_manifest(path, man)
    return keys


def _change_metric(root, key):
    st = Store(root / "tiny")
    with st.writing():
        row = st.rows[key]
        metrics = {**json.loads(row["metrics"]), "loss": json.loads(row["metrics"])["loss"] + 1e-9}
        arts = {n: (".npy", (root / "tiny" / a["file"]).read_bytes()) for n, a in json.loads(row["artifacts"]).items()}
        st.record({**row, "config": json.loads(row["config"]), "metrics": metrics, "artifacts": arts})


def test_runs_and_sessions_record_the_machine_kind(toy_store):
    _, root = toy_store
    man = S.manifest("tiny", root)
    here = M.identity()
    assert {k: man["sessions"][0][k] for k in (*M.PARTS, "kind")} == here
    assert {r["kind"] for r in man["runs"].values()} == {here["kind"]}
    assert all(r["machine"]["kind"] == here["kind"] for r in S.records("tiny", root))


def test_verify_draws_only_runs_comparable_here(toy_store, capsys):
    _, root = toy_store
    amd = M.of_session(OTHER_SESSION)
    other = set(_move_runs_to(root, OTHER_SESSION, 4))
    report = R.verify(root, sample=6)
    assert len(report.runs) == 2 and not other & {r["key"] for r in report.runs}
    assert all(r["ok"] and r["comparable"] for r in report.runs) and not report.failures
    (chunk,) = report.chunks
    assert chunk == {"chunk": "tiny", "runs": 6, "comparable": 2, "independent": 0, "other": {amd["kind"]: 4},
                     "scores": 0, "checked_bit_for_bit": 2, "checked_scores": 0}  # fmt: skip
    text = report.summary()
    assert f"other CPU kind {amd['kind']}: {M.describe(amd)}" in text and f"4 stored on {amd['kind']}" in text
    assert "2 of 6 comparable here" in text and text.endswith("2 of 2 re-run(s) reproduce the stored results")
    # --any-machine: every run is drawn; a difference on another kind is reported, not a failure
    changed = sorted(other)[0]
    _change_metric(root, changed)
    everything = R.verify(root, sample=6, any_machine=True)
    assert len(everything.runs) == 6 and not everything.failures
    (diff,) = [r for r in everything.runs if not r["ok"]]
    assert diff["key"] == changed and not diff["comparable"] and diff["kind"] == amd["kind"]
    assert f"tiny/{changed}: differs (other CPU kind {amd['kind']}; not a failure): metric loss" in everything.summary()
    assert main(["results", "verify", str(root), "--sample", "6", "--any-machine"]) == 0
    out = capsys.readouterr()
    assert "differs (other CPU kind" in out.out and "5 of 6 re-run(s) reproduce" in out.out and not out.err
    # a run of this machine's kind that differs is still a failure, with or without --any-machine
    mine = sorted(set(json.loads((root / "tiny" / R.MANIFEST).read_text())["runs"]) - other)[0]
    _change_metric(root, mine)
    assert [r["key"] for r in R.verify(root, sample=6, any_machine=True).failures] == [mine]
    assert main(["results", "verify", str(root), "--sample", "6"]) == 1
    assert mine in capsys.readouterr().err


def test_verify_with_nothing_comparable_is_an_error(toy_store, capsys, monkeypatch):
    _, root = toy_store
    _move_runs_to(root, OTHER_SESSION, 6)
    kind = M.of_session(OTHER_SESSION)["kind"]
    with pytest.raises(R.ReferenceError, match=f"none of the 6 stored run.*stored on {kind}.*--any-machine"):
        R.verify(root, sample=2)
    assert main(["results", "verify", str(root), "--max-cpu-seconds", "1000"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--any-machine" in err and M.identity()["kind"] in err
    assert len(R.verify(root, sample=2, any_machine=True).runs) == 2
    # runs of a machine-independent run function are comparable on any kind
    monkeypatch.setitem(R.MACHINE_INDEPENDENT, "toy", ("test", lambda record: record["config"]["n"] == 4))
    report = R.verify(root, sample=6)
    assert len(report.runs) == 3 and all(r["why"] == "machine-independent" and r["ok"] for r in report.runs)
    assert report.chunks[0]["independent"] == 3 and report.chunks[0]["other"] == {kind: 3}


def test_machine_independent_run_functions_are_the_boolean_sampler():
    """Of the stored chunks, the Boolean ρ runs are comparable on any kind; basin cells, trained
    networks and EMC2 are comparable only on the kind that stored them (for these chunks: AMD)."""
    here = M.identity()
    intel = {**here, "cpu_vendor": "GenuineIntel", "cpu_model": "Intel(R) Xeon(R) Processor", "torch": "2.13.0+cpu"}
    first = {n: S.records(n)[0] for n in ("rho", "rho_deep", "rho_basin", "welch_toy", "interference")}
    assert {n: R.comparable(r, here=intel) for n, r in first.items()} == {
        "rho": "machine-independent",
        "rho_deep": "machine-independent",
        "rho_basin": None,
        "welch_toy": None,
        "interference": None,
    }
    amd = {**intel, "cpu_vendor": "AuthenticAMD", "cpu_model": "AMD EPYC"}
    assert (
        R.comparable(first["interference"], here=amd) == R.comparable(first["rho_basin"], here=amd) == "same CPU kind"
    )
    # a volume_ratio config that leaves the basin model at its default computes basin cells
    stored = {"run": "volume_ratio", "version": __version__}
    assert not R._boolean_only({**stored, "config": {"scale": "reference", "targets": ["chain:2"], "samples": [10]}})
    only = {"scale": "reference", "targets": ["chain:2"], "samples": [10], "basin_target": None}
    assert R._boolean_only({**stored, "config": only})
    assert set(R.MACHINE_INDEPENDENT) == {"volume_ratio"}


def test_plan_errors(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("[chunks.a]\nrun = 'no_such_run'\n")
    with pytest.raises(Exception, match="no_such_run"):
        R.load_plan(bad)
    bad.write_text("scale = 'reference'\n")
    with pytest.raises(R.ReferenceError, match="chunks"):
        R.load_plan(bad)
    with pytest.raises(R.ReferenceError, match="no such plan"):
        R.load_plan(tmp_path / "none.toml")


def test_repository_plan_names_registered_runs():
    from pathlib import Path

    from volratio.runs.sweep import check_configs, resolve_run

    root = Path(__file__).resolve().parent.parent / "examples" / "sweeps"
    chunks = {}
    for name in ("reference.toml", "full.toml"):
        plan = R.load_plan(root / name)
        assert {"rho", "emc2"} <= set(plan)
        for sweep in plan.values():
            check_configs(resolve_run(sweep.run), sweep.configs())
        chunks[name] = {k: s.run for k, s in plan.items()}
    assert chunks["full.toml"] == chunks["reference.toml"]  # the full plan is the reference plan, larger


def test_reference_commands(toy_store, tmp_path, capsys):
    plan_file, _ = toy_store
    root = tmp_path / "ref"
    root.mkdir()
    assert main(["reference", "run", str(plan_file), "--chunk", "tiny", "--out", str(root), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["ran"] == 6
    assert main(["reference", "list", str(plan_file), "--out", str(root), "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == [{"chunk": "tiny", "run": "toy", "runs": 6, "done": 6}]
    assert main(["reference", "run", str(plan_file), "--chunk", "nosuch", "--out", str(root)]) == 2
    err = capsys.readouterr().err.strip()
    assert "no chunk 'nosuch'" in err and len(err.splitlines()) == 1


def test_emc2_point_scores_one_network_and_its_sampling_error(picbreeder_dir):
    import numpy as np

    from volratio.experiments import emc2_bench
    from volratio.util.presets import ConfigError

    full = emc2_bench.point({"target": "skull", "network": "picbreeder", "res": 16})
    assert full["n_params"] == full["n_nonzero"] == 147 and full["auc_se"] == 0.0  # every weight: no sampling error
    V = full["verdicts"]
    assert V.shape == (147, len(full["deltas"])) and V.dtype == np.uint8
    assert np.allclose(V.mean(axis=0), full["scores"])  # S(δ) is the mean verdict per δ
    sub = emc2_bench.point({"target": "skull", "network": "picbreeder", "res": 16, "max_params": 40})
    assert sub["n_params"] == 40 and sub["auc_se"] > 0
    with pytest.raises(ConfigError, match="network"):
        emc2_bench.parse_point({"network": "dense"})


DEPTH_PLAN = """
[chunks.depth_tiny]
run = "depth_point"
seeds = [0]
cases = [
    { target = "planted:1:depth=2,width=3", depth = 1 }, { target = "planted:1:depth=2,width=3", depth = 2 },
    { target = "planted:2:depth=3,width=3", depth = 2 }, { target = "planted:2:depth=3,width=3", depth = 3 },
    { target = "planted:3:depth=4,width=3", depth = 3 }, { target = "planted:3:depth=4,width=3", depth = 4 },
    { target = "planted:4:depth=2,width=3", depth = 1 }, { target = "planted:4:depth=2,width=3", depth = 2 },
]

[chunks.depth_tiny.config]
members = 2
width = 4
res = 8
steps = 3
"sp.rounds" = 1
"sp.retrain_steps" = 1
max_params = 3
deltas = [-1.0, 1.0]
judge = "ssim"
# in effect no SP guard and every pair at once (TOML has no None), no compensation, retraining at the
# training rate, the eager path: 3 steps draw something, so the curves have sweet spots
"sp.loss_factor" = 1e9
"sp.per_round" = 1000
"sp.compensate" = "none"
"sp.retrain_lr_factor" = 1.0
train_path = "eager"
keep_net = false
"""


def test_stored_depth_curves_and_predictor_check(run_plan, tmp_path):
    """A depth chunk stored by the reference machinery reads back as one curve per target (one column
    per network); the predictor is fitted on some targets' measured sweet spots and checked on another."""
    from volratio.experiments import depth_regime as D

    _, root, _ = run_plan(DEPTH_PLAN, "depth_tiny", tmp_path)
    curves = D.stored_curves(("depth_tiny", "not_there"), root=root)
    assert len(curves) == 4
    c = curves["planted:2:depth=3,width=3"]
    assert c.depths == [2, 3] and c.score.shape == (2, 2) and ((0 <= c.score) & (c.score <= 1)).all()
    fit_on = [t for t in curves if not t.startswith("planted:4")]
    check = D.check_predictor(curves, fit_on, ["planted:4:depth=2,width=3"], res=16)
    assert check.fit.n == sum(curves[t].spot.depth is not None for t in fit_on)
    (row,) = check.held_out
    lo, hi = row["prediction interval"]
    assert row["measured sweet spot"] == curves["planted:4:depth=2,width=3"].spot.depth
    assert row["inside"] == (lo <= row["measured sweet spot"] <= hi) and check.inside == int(row["inside"])
    assert D.short_name("scene:picbreeder:skull+image:coffee") == "skull+coffee"
    assert D.short_name("planted:2:depth=3,width=3") == "depth=3,width=3"
    grid = D.interval_depths(curves)  # the depths a later study runs at instead of the argmax
    for t, c in curves.items():
        assert grid[t] == sorted(grid[t]) and set(grid[t]) <= set(c.depths)
        assert (c.spot.depth in grid[t]) if c.spot.depth is not None else grid[t] == []
    with pytest.raises(D.DepthError, match="none of the chunks"):
        D.stored_curves(("nothing",), root=root)
    with pytest.raises(D.DepthError, match="appears 2 times"):  # never averaged silently, never one dropped
        D.stored_curves(("depth_tiny", "depth_tiny"), root=root)


NEAR_DENSE_PLAN = """
[chunks.nd_tiny]
run = "sparse_regime"
seeds = [0]
cases = [{ target = "picbreeder:skull", arch = "picbreeder" }, { target = "picbreeder:apple", arch = "2;gaussian:4" }]

[chunks.nd_tiny.config]
members = 2
res = 8
dense_steps = 2
target_nonzeros = 0
checkpoints = []
scratch = false
methods = ["magnitude"]
device = "cpu"
keep_nets = true
"sp.rounds" = 1
"sp.retrain_steps" = 1
"""


def test_the_regime_as_a_sweep_run_stores_its_networks_in_their_arch(run_plan, tmp_path, picbreeder_dir):
    """A `sparse_regime` chunk with an arch per case (the near-dense chunk's shape) reads back as one
    table with each target's arch on every row, and each checkpoint row names the stored population
    it measured."""
    from volratio.data.picbreeder import fer_arch
    from volratio.experiments import sparse_regime as R
    from volratio.experiments._base import ExperimentError
    from volratio.nets import CoordMLP

    _, root, _ = run_plan(NEAR_DENSE_PLAN, "nd_tiny", tmp_path)
    t = R.stored_table("nd_tiny", root)
    cp = t[t.kind == "checkpoint"]
    assert len(cp) == 2 * 2 * 3  # targets × members × (dense, sp, magnitude)
    assert dict(t.groupby("target").arch.first()) == {
        "picbreeder:apple": "2;gaussian:4",
        "picbreeder:skull": fer_arch("skull"),
    }
    assert cp.net.notna().all()
    sp = cp[cp.method == "sp"].iloc[0]
    assert CoordMLP.load(sp.net).nonzero()[int(sp.member)] == sp.nonzero  # the population the row measured
    with pytest.raises(ExperimentError, match="none of the chunks"):
        R.stored_table("nothing", root)


SCENES_PLAN = """
[chunks.depth_scenes]
run = "depth_point"
seeds = [0]

[chunks.depth_scenes.config]
members = 3
width = 4
res = 8
steps = 3
"sp.rounds" = 1
"sp.retrain_steps" = 1
max_params = 3
deltas = [-1.0, 1.0]
keep_net = false

[chunks.depth_scenes.grid]
target = ["scene:planted:1+planted:2", "planted:1", "scene:planted:1+planted:3"]
depth = [1, 2]
"""


def test_stored_scenes_compare_each_scene_with_its_parts(run_plan, tmp_path):
    """Scenes read back from a stored chunk are compared with their parts on the scene's depths; a
    scene whose parts are not all stored is left out."""
    from volratio.experiments import unknown_targets as U

    _, root, _ = run_plan(SCENES_PLAN.replace('"planted:1", ', '"planted:1", "planted:2", '), "depth_scenes", tmp_path)
    curves, rows = U.stored_scenes(root, n_boot=50)
    assert U.scene_parts("scene:planted:1+planted:2") == ("planted:1", "planted:2")
    assert set(curves) == {"scene:planted:1+planted:2", "planted:1", "planted:2"}  # planted:3 was not stored
    assert [r["effect"] for r in rows] == [f"planted:1+planted:2: {e}" for e in U.EFFECTS]
    assert all(r["spec"] == "scene:planted:1+planted:2" and r["lo"] <= r["hi"] for r in rows)
    one = U.restrict(curves["planted:1"], [2, 5])
    assert one.depths == [2] and one.score.shape == (1, 3) and one.spot.depth in (2, None)
    # only the networks that fit: each curve keeps those with MSE ≤ factor × its median (at least half)
    fit, fit_rows = U.stored_scenes(root, n_boot=50, fitting=1.0)
    for t, c in fit.items():
        kept = np.isfinite(c.score)
        assert kept.sum() >= c.score.size / 2 and (c.loss[kept] <= np.nanmedian(curves[t].loss) + 1e-12).all()
    assert [r["effect"] for r in fit_rows] == [r["effect"] for r in rows]


def test_stored_tables_read_non_finite_metrics_back_as_floats():
    """Runs store NaN and ±inf as "nan", "inf", "-inf" (strict JSON); a numeric column gets them back
    as floats, a text column keeps its strings."""
    import math

    import pandas as pd

    df = S.non_finite_as_floats(
        pd.DataFrame({"x": [1.0, "nan", "-inf", None], "msg": ["ok", "nan", "x", None], "n": [1, 2, 3, 4]})
    )
    assert df["x"].dtype == float and math.isnan(df["x"][1]) and df["x"][2] == -math.inf and df["x"][0] == 1.0
    assert list(df["msg"][:3]) == ["ok", "nan", "x"] and list(df["n"]) == [1, 2, 3, 4]


def test_fit_budget_chunk_stores_what_the_experiment_measures(run_plan, tmp_path):
    from volratio.experiments import fit_budget as FB

    _, root, report = run_plan(
        '[chunks.budget]\nrun = "fit_budget"\nseeds = [0]\n\n[chunks.budget.config]\nwidth = 4\nres = 8\n'
        'members = 2\ncheckpoints = [4, 8]\ndevice = "cpu"\n\n[chunks.budget.grid]\n'
        'target = ["planted:1:depth=2,width=3"]\ndepth = [1, 2]\n',
        "budget",
        tmp_path,
    )
    assert len(report.ran) == 2
    stored = FB.stored_table("budget", root).sort_values(["depth", "steps", "member"]).reset_index(drop=True)
    live = FB.run(FB.Config(targets=("planted:1:depth=2,width=3",), depths=(1, 2), width=4, res=8, members=2,
                            checkpoints=(4, 8)))  # fmt: skip
    live = live.sort_values(["depth", "steps", "member"]).reset_index(drop=True)
    assert stored[["target", "depth", "member", "steps"]].equals(live[["target", "depth", "member", "steps"]])
    assert stored.mse.tolist() == live.mse.tolist()  # bit for bit
    t = FB.budget_table(stored)
    assert (t.groupby("steps").ratio_to_best.min() == 1.0).all()
    with pytest.raises(VolratioError, match="give depth"):
        FB.parse_point({"target": "planted:1"})
