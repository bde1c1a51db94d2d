"""Train, then score (volratio.runs.score): stored networks rescored under another judge, resumably,
into the chunk's own store, re-checked by `results verify`."""

import io
import json
import shutil
import time

import numpy as np
import pytest
from training_helpers import compiler_missing

from volratio import __version__, emc2
from volratio.cli import main
from volratio.emc2.reading import Reading, ReadingError
from volratio.judges.anchored_rule import read_crossfit
from volratio.nets import CoordMLP
from volratio.runs import heartbeat
from volratio.runs import reference as R
from volratio.runs import score as RS
from volratio.runs import stored as S
from volratio.runs.registry import get_run
from volratio.runs.store import Store, config_key
from volratio.util import machine as M


def _chunk(run_plan, depth_plan, folder, keep: bool, steps: int = 20):
    _, root, report = run_plan(depth_plan(keep, steps=steps), "tiny", folder)
    assert len(report.ran) == 1
    return root


@pytest.fixture(scope="module")
def source(run_plan, depth_plan, tmp_path_factory):
    """A chunk of one depth_point run (2 networks) that stored its networks; copied per test."""
    return _chunk(run_plan, depth_plan, tmp_path_factory.mktemp("src"), keep=True)


@pytest.fixture()
def root(source, tmp_path):
    shutil.copytree(source, tmp_path / "reference")
    return tmp_path / "reference"


def test_stored_networks_are_safetensors_with_their_config(root):
    (rec,) = S.records("tiny", root)
    path = rec["artifacts"]["net"]
    assert path.endswith(".safetensors")
    with open(path, "rb") as f:
        assert f.read(1) != b"\x80"  # not a pickle
    net = CoordMLP.load(path)
    assert net.population == 2 and len(net.weights) == 3  # depth 2: three kernels
    assert Store(root / "tiny").artifact(rec["key"], "net").nonzero() == rec["metrics"]["nonzero"]
    cfg = R.rescore_config("tiny", rec, Reading("anchored"))  # built from the stored row alone
    assert cfg["emc2"]["res"] == 16 and cfg["emc2"]["deltas"] == [-0.25, 0.25] and cfg["emc2"]["max_params"] == 20
    assert cfg["emc2"]["dtype"] == "float64" and cfg["emc2"]["device"] == "cpu" and cfg["members"] == 2


def test_rescore_two_judges_keys_resume_and_readers(root, capsys):
    (src,) = S.records("tiny", root)
    for judge in ("stability", "anchored"):
        assert main(["reference", "rescore", "tiny", "--judge", judge, "--root", str(root), "--json"]) == 0
        out = json.loads(capsys.readouterr().out)
        assert (out["total"], out["ran"], out["skipped"], out["failed"]) == (1, 1, 0, [])
    runs = {r["config"]["judge"]: r for r in S.rescores("tiny", root=root)}
    assert set(runs) == {"stability", "anchored"}
    for judge, r in runs.items():
        assert r["version"] == src["version"] == __version__  # provenance: the library that ran it
        assert r["commit"] == src["commit"] and r["key"] == config_key("rescore", r["config"])
        assert r["config"]["source"]["key"] == src["key"] and r["config"]["source"]["chunk"] == "tiny"
        m = r["metrics"]
        assert m["judge"] == judge and len(m["score"]) == len(m["base_kept"]) == 2
        assert all(len(s) == 2 and all(0 <= x <= 1 for x in s) for s in m["scores"])
    assert runs["anchored"]["metrics"]["anchor"] == "target"
    assert runs["stability"]["metrics"]["anchor"] == "own image" and all(runs["stability"]["metrics"]["base_kept"])
    assert runs["stability"]["key"] != runs["anchored"]["key"]
    # resume: nothing recomputed, the store unchanged
    before = (root / "tiny" / "results.parquet").read_bytes()
    again = RS.score_chunk("tiny", Reading("anchored"), root, progress=False)
    assert (again.ran, again.skipped, again.total) == ([], 1, 1)
    assert (root / "tiny" / "results.parquet").read_bytes() == before
    # the chunk's own readers see its own run only; the manifest counts rescores apart
    assert [r["key"] for r in S.records("tiny", root)] == [src["key"]] and len(S.table("tiny", root)) == 1
    man = S.manifest("tiny", root)
    assert (man["runs_done"], man["rescores_done"]) == (1, 2)
    assert (
        man["sessions"][-1]["reading"] == Reading("anchored").as_dict() and man["runs"][runs["anchored"]["key"]]["kind"]
    )
    t = S.rescore_table("tiny", Reading("anchored"), root)
    assert len(t) == 2 and set(t["source"]) == {src["key"]} and list(t["member"]) == [0, 1]


def test_rescore_under_the_source_judge_reproduces_its_scores(root):
    (src,) = S.records("tiny", root)
    assert src["metrics"]["judge"] == "stability" and any(s > 0 for s in src["metrics"]["score"])
    assert not RS.score_chunk("tiny", Reading("stability"), root, progress=False).failed
    (r,) = S.rescores("tiny", Reading("stability"), root)
    assert r["metrics"]["score"] == src["metrics"]["score"]  # exactly
    assert r["metrics"]["scores"] == src["metrics"]["scores"]


def test_verify_reruns_rescore_runs_bit_for_bit(root, capsys):
    RS.score_chunk("tiny", Reading("anchored"), root, progress=False)
    RS.score_chunk("tiny", Reading("stability"), root, progress=False)
    runs = R.verify(root, sample=3).runs
    assert len(runs) == 3 and all(r["ok"] for r in runs)
    rescored = {r["key"] for r in S.rescores("tiny", root=root)}
    assert rescored <= {r["key"] for r in runs}
    # a replaced source network is noticed: the rescore run refuses it instead of scoring another network
    (src,) = S.records("tiny", root)
    net = CoordMLP.load(src["artifacts"]["net"])
    net.weights[0].data.mul_(2.0)
    net.save(src["artifacts"]["net"])
    with pytest.raises(RS.RescoreError, match="SHA-256 differs|missing or damaged"):
        RS.point((next(iter(S.rescores("tiny", root=root))))["config"], root=root)


@pytest.mark.slow
def test_worker_processes_read_the_networks_under_the_root_they_are_given(root):
    """The score stage's run function is given the folder of the chunks it reads
    (`RunFunction.reading_store`), so a spawned worker process scores the networks under that root,
    not those of the library's default store, and gets the scores the driver gets."""
    from volratio.runs.sweep import Processes, run_configs

    (cfg,) = RS.plan("tiny", Reading("anchored"), root).values()
    rep = run_configs(get_run("rescore"), [cfg], root / "tiny", Processes(1), progress=False)
    assert rep.failed == [] and len(rep.ran) == 1
    (stored,) = S.rescores("tiny", Reading("anchored"), root)
    assert stored["metrics"]["score"] == RS.point(cfg, root=root)["score"]


def test_chunks_without_networks_are_one_line_errors(run_plan, depth_plan, tmp_path, capsys):
    root = _chunk(run_plan, depth_plan, tmp_path, keep=False, steps=2)
    rc = main(["reference", "rescore", "tiny", "--judge", "anchored", "--root", str(root)])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and "stored no networks" in err[0] and "keep_net = true" in err[0]
    assert not S.rescores("tiny", root=root)  # nothing was written
    rc = main(["reference", "rescore", "nosuch", "--judge", "anchored", "--root", str(root)])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and "nosuch" in err[0]
    with pytest.raises(RS.RescoreError, match="folder name"):
        RS.score_chunk("../tiny", Reading("anchored"), root)
    with pytest.raises(ReadingError, match="choose one of"):
        RS.score_chunk("tiny", Reading("nosuch"), root)
    with pytest.raises(RS.RescoreError, match="give the judge"):
        RS.score_chunk("tiny", Reading(), root)


def test_artifacts_naming_no_stored_network_list_the_ones_stored(root, capsys):
    rc = main(["reference", "rescore", "tiny", "--judge", "stability", "--root", str(root), "--artifacts", "nosuch"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and "nosuch" in err[0] and "its runs store net:" in err[0]
    assert "stored no networks" not in err[0] and not S.rescores("tiny", root=root)


def test_a_long_score_whose_output_is_no_terminal_beats_with_an_eta(monkeypatch):
    assert heartbeat.line("rescore x", 0, 4, 12.0) == "rescore x: 0/4 runs done, 12 s elapsed, no run finished yet"
    assert (
        heartbeat.line("rescore x", 1, 4, 70.0) == "rescore x: 1/4 runs done, 1 min 10 s elapsed, about 3 min 30 s left"
    )
    assert heartbeat.line("rescore x", 4, 4, 3700.0) == "rescore x: 4/4 runs done, 1 h 01 min elapsed"
    monkeypatch.setattr("sys.stdout.isatty", lambda: False)
    assert heartbeat.wanted(None) and not heartbeat.wanted(False) and not heartbeat.wanted(True)
    out, counts = io.StringIO(), {"done": 0, "failed": 0}
    with heartbeat.beating("rescore x", 2, counts, every=0.02, out=out):
        time.sleep(0.1)
        counts["done"] = 1
        time.sleep(0.1)
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("rescore x: 0/2 runs done") and lines[-1].startswith("rescore x: 1/2 runs done")
    assert "left" in lines[-1] and len(lines) >= 4


def test_stored_curves_read_another_judges_scores_from_the_rescore_runs(root):
    from volratio.experiments import depth_regime as D

    own = D.stored_curves(["tiny"], root)["planted:1:depth=2,width=3"]
    with pytest.raises(D.DepthError, match="rescore its chunk"):
        D.stored_curves(["tiny"], root, reading=Reading("anchored"))
    RS.score_chunk("tiny", Reading("anchored"), root, progress=False)
    (re,) = S.rescores("tiny", Reading("anchored"), root)
    anch = D.stored_curves(["tiny"], root, reading=Reading("anchored"))["planted:1:depth=2,width=3"]
    assert anch.score[0].tolist() == re["metrics"]["score"]
    assert anch.loss.tolist() == own.loss.tolist()  # the same networks: only the judge differs
    same = D.stored_curves(["tiny"], root, reading=Reading("stability"))["planted:1:depth=2,width=3"]
    assert same.score.tolist() == own.score.tolist()  # the runs' own judge: their own scores


def test_fit_table_and_stored_images_show_what_was_scored(root):
    from volratio.experiments import depth_regime as D

    t = "planted:1:depth=2,width=3"
    table = D.fit_table(D.stored_curves(["tiny"], root))
    assert table.loc[(t, 2), "× best depth"] == 1.0  # one depth: it is the best
    (rec,) = S.records("tiny", root)
    assert table.loc[(t, 2), "dense MSE (median)"] == pytest.approx(
        float(sorted(rec["metrics"]["dense_loss"])[0] + sorted(rec["metrics"]["dense_loss"])[1]) / 2
    )
    imgs = D.stored_images(["tiny"], root, res=8)[t]
    assert imgs["depths"] == [2] and len(imgs["images"][0]) == 2 and imgs["images"][0][0].shape == (8, 8, 3)
    assert imgs["score"][0] == rec["metrics"]["score"]
    one = D.stored_network(t, 2, member=1, names=["tiny"], root=root)
    assert one.population == 1 and np.allclose(one.render(8)[0].detach().numpy(), imgs["images"][0][1])
    with pytest.raises(D.DepthError, match="member 2 out of range"):
        D.stored_network(t, 2, member=2, names=["tiny"], root=root)
    with pytest.raises(D.DepthError, match="no stored run"):
        D.stored_network(t, 3, names=["tiny"], root=root)
    # whether the judge said each network draws its label travels into the curve and the tables:
    # recorded by the runs under their own judge, and by a rescore under its judge
    assert table.loc[(t, 2), "drawn"] == pytest.approx(np.mean(rec["metrics"]["base_kept"]))
    RS.score_chunk("tiny", Reading("anchored"), root, progress=False)
    (re,) = S.rescores("tiny", Reading("anchored"), root)
    curve = D.stored_curves(["tiny"], root, reading=Reading("anchored"))[t]
    assert curve.kept[0].tolist() == [float(k) for k in re["metrics"]["base_kept"]]
    assert D.fit_table({t: curve}).loc[(t, 2), "drawn"] == pytest.approx(np.mean(re["metrics"]["base_kept"]))


def test_chunks_judged_differently_are_not_mixed(root, depth_plan, tmp_path):
    from volratio.experiments import depth_regime as D

    other = root.parent / "other"
    plan = other.parent / "plan-other.toml"
    plan.write_text(
        depth_plan(keep=False)
        .replace("[chunks.tiny", "[chunks.tiny2")
        .replace('judge = "stability"', 'judge = "anchored"')
    )
    R.run_chunk(R.load_plan(plan), "tiny2", root, progress=False)
    with pytest.raises(D.DepthError, match="judged differently"):
        D.stored_curves(["tiny", "tiny2"], root)


def test_judges_covering_names_the_judges_every_run_has_scores_under(root):
    assert S.judges_covering(["tiny"], root) == ["stability"]  # the runs' own judge
    RS.score_chunk("tiny", Reading("anchored"), root, progress=False)
    assert S.judges_covering(["tiny"], root) == ["anchored", "stability"]


def test_the_delta_row_is_read_under_the_deciding_judge_where_it_can_be(root):
    """`scaled_judge`: the judge whose δ × layer-std rescores cover the chunk — the deciding one,
    else the fallback, else none."""
    assert S.scaled_judge(["tiny"], "anchored-v2", root=root) is None  # nothing scored with δ on each weight's scale
    RS.score_chunk("tiny", Reading("anchored", delta_scale="layer_std"), root, progress=False)
    assert S.scaled_judge(["tiny"], "anchored-v2", root=root) == "anchored"
    RS.score_chunk("tiny", Reading("anchored-v2", delta_scale="layer_std"), root, progress=False)
    assert S.scaled_judge(["tiny"], "anchored-v2", root=root) == "anchored-v2"


def test_optimizer_runs_read_under_another_judge(depth_plan, tmp_path):
    from volratio.experiments import optimizers as O

    plan = tmp_path / "plan.toml"
    plan.write_text(
        depth_plan(keep=True)
        .replace("[chunks.tiny", "[chunks.opt")
        .replace('run = "depth_point"', 'run = "optimizer_point"')
        .replace("members = 2", "members = 1\nhessian_iters = 2")
    )
    root = tmp_path / "reference"
    assert not R.run_chunk(R.load_plan(plan), "opt", root, progress=False).failed
    own = O.stored_runs(["opt"], root)
    stored = S.records("opt", root)[0]["metrics"]
    assert own.score.tolist() == [stored["score"]] and own.drawn.tolist() == [stored["base_kept"]]
    RS.score_chunk("opt", Reading("anchored"), root, progress=False)
    (re,) = S.rescores("opt", Reading("anchored"), root)
    anch = O.stored_runs(["opt"], root, reading=Reading("anchored"))
    assert anch.score.tolist() == re["metrics"]["score"] and anch.drawn.tolist() == re["metrics"]["base_kept"]
    assert anch.loss.tolist() == own.loss.tolist()  # the same network, judged again


def _another_cpu_kind(monkeypatch) -> dict:
    """Pretend this machine is of another numerics kind than the one that stored the runs."""
    here = dict(M.identity())
    other = {**here, "cpu_vendor": "AuthenticAMD", "cpu_model": "AMD EPYC 9654 96-Core Processor", "cpu_isa": ["avx2"]}
    other["kind"] = M.kind_of(other)
    assert other["kind"] != here["kind"]
    monkeypatch.setattr(M, "identity", lambda: other)
    return other


def test_on_another_cpu_kind_verify_rescores_the_stored_networks_without_retraining(root, monkeypatch, capsys):
    RS.score_chunk("tiny", Reading("anchored"), root, progress=False)
    other = _another_cpu_kind(monkeypatch)
    report = R.verify(root, sample=5)
    (c,) = report.chunks
    assert (c["runs"], c["comparable"], c["scores"], c["other"]) == (2, 0, 2, {})
    assert (c["checked_bit_for_bit"], c["checked_scores"]) == (0, 2) and report.tolerance == R.SCORE_TOLERANCE
    assert sorted(r["rerun"] for r in report.runs) == ["rescore", "rescore"]  # scored, not trained again
    assert len(report.runs) == 2 and not report.failures
    assert all(r["ok"] and r["check"] == "scores" and r["comparable"] for r in report.runs)
    text = report.summary()
    assert f"this machine: {other['kind']}" in text and "2 by their scores" in text
    assert "checked: 0 bit for bit, 2 by their scores" in text and text.count("scores reproduced within 0.01") == 2
    assert main(["results", "verify", str(root), "--sample", "1", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["tolerance"] == R.SCORE_TOLERANCE and out["runs"][0]["check"] == "scores"


def test_on_another_cpu_kind_a_score_beyond_the_tolerance_fails(root, monkeypatch):
    (src,) = R.records("tiny", root)
    _another_cpu_kind(monkeypatch)
    records = R.records

    def shifted(name, root, rescores=False):  # the stored scores, one beyond the tolerance and one within
        out = records(name, root, rescores)
        for r in out:
            if r["key"] == src["key"]:
                m = r["metrics"]
                m["scores"][0][0] += R.SCORE_TOLERANCE / 2
                m["score"][1] += 2 * R.SCORE_TOLERANCE
        return out

    monkeypatch.setattr(R, "records", shifted)
    (bad,) = R.verify(root, sample=1).failures
    assert bad["key"] == src["key"] and bad["check"] == "scores" and bad["result"] == "differs"
    assert "score[1]" in bad["problem"] and "tolerance 0.01" in bad["problem"]
    assert main(["results", "verify", str(root), "--sample", "1"]) == 1


def test_score_comparison_within_a_tolerance():
    same = {"score": [0.5, 0.25], "scores": [[0.1, 0.2]], "base_kept": [True, False], "judge": "anchored"}
    near = {"score": [0.505, 0.25], "scores": [[0.1, 0.195]], "base_kept": [True, False], "judge": "anchored"}
    assert R._compare_scores("c", "k", same, near, 0.01) == {"ok": True}
    for key, value in [("base_kept", [True, True]), ("judge", "stability"), ("score", [0.52, 0.25])]:
        out = R._compare_scores("c", "k", same, {**near, key: value}, 0.01)
        assert not out["ok"] and out["problem"].startswith("c/k: the re-computed scores differ: metric " + key)
    assert not R._compare_scores("c", "k", same, {**near, "scores": [[0.1]]}, 0.01)["ok"]
    assert R._compare_scores("c", "k", {"x": float("nan")}, {"x": float("nan")}, 0.01)["ok"]
    assert not R._compare_scores("c", "k", {"x": 1}, {"x": 2}, 0.01)["ok"]  # integers are compared exactly


TWIN_PLAN = """
[chunks.twin]
run = "twin_point"
seeds = [0]

[chunks.twin.config]
target = "skull"
network = "twin"
res = 16
steps = 4
max_params = 6
judges = ["anchored"]
anchor = "image"
deltas = [-0.5, 0.5]
"""


@pytest.fixture(scope="module")
def twin_root(tmp_path_factory, picbreeder_dir):
    root = tmp_path_factory.mktemp("twin") / "reference"
    plan = root.parent / "plan.toml"
    plan.write_text(TWIN_PLAN)
    report = R.run_chunk(R.load_plan(plan), "twin", root, progress=False)
    assert not report.failed and len(report.ran) == 1
    return root


def test_twin_networks_rescore_on_the_one_anchor_and_under_each_delta_reading(twin_root, capsys):
    (src,) = S.records("twin", twin_root)
    assert src["config"]["anchor"] == "image"
    same = RS.score_chunk("twin", Reading("anchored"), twin_root, progress=False)
    (r,) = S.rescores("twin", Reading("anchored"), twin_root)
    assert not same.failed and r["metrics"]["score"] == [src["metrics"]["auc_anchored"]]  # its own scoring, exactly
    assert r["config"]["target"] == "picbreeder:skull" and r["config"]["emc2"]["dtype"] == "float32"
    rc = main(["reference", "rescore", "twin", "--judge", "anchored", "--anchor", "png", "--root", str(twin_root),
               "--no-progress"])  # fmt: skip
    assert rc == 0 and "anchor png" in capsys.readouterr().out
    png = S.rescore_table("twin", Reading("anchored", anchor="png"), twin_root)
    assert len(png) == 1 and png.anchor_rmse.iloc[0] == pytest.approx(np.sqrt(src["metrics"]["mse"]), rel=1e-5)
    assert len(S.rescore_table("twin", Reading("anchored"), twin_root)) == 1  # the readings are never mixed
    RS.score_chunk("twin", Reading("anchored", anchor="png", delta_scale="layer_std"), twin_root, progress=False)
    scaled = S.rescores("twin", Reading("anchored", anchor="png", delta_scale="layer_std"), twin_root)
    assert len(scaled) == 1 and scaled[0]["config"]["emc2"]["delta_scale"] == "layer_std"
    readings = (("image", "absolute"), ("png", "absolute"), ("png", "layer_std"))
    keys = {r["key"] for a, d in readings for r in S.rescores("twin", Reading(anchor=a, delta_scale=d), twin_root)}
    assert len(keys) == 3  # one run per reading, each keyed by it
    again = RS.score_chunk(
        "twin", Reading("anchored", anchor="png", delta_scale="layer_std"), twin_root, progress=False
    )
    assert again.skipped == 1 and not again.ran
    with pytest.raises(ReadingError, match="anchor 'pixels'"):
        RS.plan("twin", Reading("anchored", anchor="pixels"), twin_root)
    with pytest.raises(ReadingError, match="delta_scale 'relative'"):
        RS.plan("twin", Reading("anchored", delta_scale="relative"), twin_root)


def test_readers_take_the_delta_reading_from_its_rescore_runs_only(root):
    (src,) = S.records("tiny", root)
    with pytest.raises(S.ReferenceError, match="δ layer_std.*--delta-scale layer_std"):
        S.judged("tiny", root, Reading("stability", delta_scale="layer_std"))  # its own scores are the paper's δ
    assert S.judges_covering("tiny", root, Reading(delta_scale="layer_std")) == []
    RS.score_chunk("tiny", Reading("stability", delta_scale="layer_std"), root, progress=False)
    (r,) = S.rescores("tiny", Reading("stability", delta_scale="layer_std"), root)
    (got,) = S.judged("tiny", root, Reading("stability", delta_scale="layer_std"))
    assert got["metrics"]["score"] == r["metrics"]["score"] and got["key"] == src["key"]
    assert S.judged("tiny", root, Reading("stability"))[0]["metrics"]["score"] == src["metrics"]["score"]
    assert S.judges_covering("tiny", root, Reading(delta_scale="layer_std")) == ["stability"]
    with pytest.raises(S.ReferenceError, match="give the reading a judge"):
        S.judged("tiny", root, Reading(delta_scale="layer_std"))


def test_every_weight_rescore_is_stored_beside_the_sampled_one_and_read_on_request(root, capsys):
    """`--every-weight`: every non-zero weight of the stored networks, its engine and arithmetic named in
    the config, a key of its own beside the sampled rescore, its CPU seconds in the manifest; the
    readers take it only when asked, and say how to make it when it is missing."""
    from volratio import emc2
    from volratio.experiments import depth_regime as D

    (src,) = S.records("tiny", root)
    t = "planted:1:depth=2,width=3"
    with pytest.raises(D.DepthError, match="--every-weight --engine torch"):
        D.stored_curves(["tiny"], root, reading=Reading(weights="every"))
    assert main(["reference", "rescore", "tiny", "--judge", "stability", "--root", str(root), "--json"]) == 0
    capsys.readouterr()
    argv = ["reference", "rescore", "tiny", "--judge", "stability", "--every-weight", "--root", str(root), "--json"]
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    assert (out["ran"], out["weights"], out["engine"]) == (1, "every", "torch") and out["cpu_s"] > 0
    (every,) = S.rescores("tiny", Reading("stability", weights="every"), root)
    (sampled,) = [r for r in S.rescores("tiny", Reading("stability"), root) if S.weights_scored(r) == "sample"]
    assert every["key"] != sampled["key"] and every["config"]["source"] == sampled["config"]["source"]
    emc = every["config"]["emc2"]
    assert (emc["max_params"], emc["engine"], emc["dtype"]) == (None, "torch", "float64")
    # the sampled one names the source's engine and arithmetic too: every rescore config is complete
    assert (sampled["config"]["emc2"]["engine"], sampled["config"]["emc2"]["max_params"]) == ("torch", 20)
    man = S.manifest("tiny", root)
    assert (
        man["runs"][every["key"]]["cpu_s"] > 0
        and man["sessions"][-1]["reading"] == Reading("stability", weights="every").as_dict()
    )
    # the scores are those of every non-zero weight, exactly (float64, torch), and not the sample's
    net = CoordMLP.load(src["artifacts"]["net"])
    for k in range(net.population):
        n_nonzero = len(emc2.nonzero_params(net, k))
        assert n_nonzero > 20  # more than the sample, so the two rescores score different weights
        ec = emc2.EMC2Config(deltas=(-0.25, 0.25), res=16, max_params=None, seed=0, member=k, device="cpu")
        r = emc2.score(net, emc2.judges_for(net, ["stability"], t, ec, calibration_seed=0), t, ec)[0]
        assert r.n_params == n_nonzero and every["metrics"]["scores"][k] == [float(s) for s in r.scores]
    assert sampled["metrics"]["scores"] == src["metrics"]["scores"]  # the sample's rescore: the source's own
    # the readers: sampled by default (the source's own scores), every weight when asked
    assert D.stored_curves(["tiny"], root)[t].score[0].tolist() == src["metrics"]["score"]
    curve = D.stored_curves(["tiny"], root, reading=Reading(weights="every"))[t]
    assert curve.score[0].tolist() == every["metrics"]["score"]
    assert S.judges_covering(["tiny"], root, Reading(weights="every")) == ["stability"]
    assert S.judges_covering(["tiny"], root, Reading(weights="every", engine="fused")) == []
    # a judge comparison reads every weight only where every judge compared has it, else the sample
    assert S.judges_reading(["tiny"], ["stability"], root, engine="torch") == Reading(weights="every", engine="torch")
    assert S.judges_reading(["tiny"], ["anchored", "stability"], root, engine="torch") == S.OWN  # anchored: a sample
    assert S.judges_reading(["tiny"], ["stability"], root) == S.OWN  # no fused every-weight rescore
    table = S.rescore_table("tiny", Reading("stability"), root)
    assert sorted(table["weights"]) == ["every", "every", "sample", "sample"]
    cost = S.rescore_cost("tiny", root).set_index("weights")
    assert cost.loc["every", "runs"] == 1 and cost.loc["every", "networks"] == 2 and cost.loc["every", "cpu_s"] > 0
    # re-run by verify like any stored run, bit for bit
    report = R.verify(root, sample=10)
    assert every["key"] in {r["key"] for r in report.runs} and all(r["ok"] for r in report.runs)
    # resumable: asked again, nothing runs
    again = RS.score_chunk("tiny", Reading("stability", weights="every"), root, progress=False)
    assert (again.ran, again.skipped) == ([], 1)


def test_every_weight_rescore_through_the_fused_kernel_is_close_to_float64(root, capsys):
    """The fused kernel (float32) and the torch engine (float64) score the same weights; their images
    differ by float32 rounding, so a verdict may flip where a judge's score sits on its threshold."""
    if compiler_missing():
        pytest.skip(compiler_missing().replace("fused training kernel", "fused perturbation kernel"))
    for engine in ("torch", "fused"):
        assert not RS.score_chunk(
            "tiny", Reading("anchored", weights="every", engine=engine), root, progress=False
        ).failed
    by = {
        S.rescore_engine(r): r for r in S.rescores("tiny", Reading("anchored"), root) if S.weights_scored(r) == "every"
    }
    assert set(by) == {"torch", "fused"} and by["fused"]["config"]["emc2"]["dtype"] == "float32"
    assert by["torch"]["key"] != by["fused"]["key"]
    f, t = (np.array(by[e]["metrics"]["scores"]) for e in ("fused", "torch"))
    assert np.abs(f - t).max() <= 0.05
    assert by["fused"]["metrics"]["base_kept"] == by["torch"]["metrics"]["base_kept"]
    # a rescore at the source's own settings has the source's engine: another one is refused
    rc = main(["reference", "rescore", "tiny", "--judge", "anchored", "--engine", "fused", "--root", str(root)])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and "--every-weight" in err[0]


PICBREEDER_PLAN = """
[chunks.pb]
run = "twin_point"
seeds = [0]

[chunks.pb.config]
target = "skull"
network = "picbreeder"
res = 16
max_params = 12
judges = ["anchored-xfit"]
anchor = "image"
deltas = [-2.0, -1.0, 1.0, 2.0]
"""


@pytest.fixture(scope="module")
def picbreeder_root(tmp_path_factory, picbreeder_dir):
    """A chunk of one twin_point run: the Picbreeder skull network (no training), scored under the
    cross-fitted judge, its network stored."""
    root = tmp_path_factory.mktemp("pb") / "reference"
    plan = root.parent / "plan.toml"
    plan.write_text(PICBREEDER_PLAN)
    report = R.run_chunk(R.load_plan(plan), "pb", root, progress=False)
    assert not report.failed and len(report.ran) == 1
    return root


def test_a_verdict_set_network_is_rescored_by_the_rule_fitted_without_its_fold(picbreeder_root):
    """The Picbreeder skull network is the verdict set's "picbreeder:skull": rescored under
    "anchored-xfit", it is judged by the rule of its fold (fitted without its rows), recorded with
    the score, and its verdicts are that rule's, not the all-rows rule's (which differ here)."""
    (src,) = S.records("pb", picbreeder_root)
    assert R.source_scoring(src).networks == ("picbreeder:skull",)
    xf = read_crossfit()
    fold = xf.folds["picbreeder:skull"]
    assert src["metrics"]["fold_anchored-xfit"] == fold  # the run's own scoring names the network too
    rep = RS.score_chunk("pb", Reading("anchored-xfit"), picbreeder_root, progress=False)
    (r,) = S.rescores("pb", Reading("anchored-xfit"), picbreeder_root)
    assert not rep.failed and r["metrics"]["network"] == ["picbreeder:skull"] and r["metrics"]["fold"] == [fold]
    assert r["metrics"]["score"] == [src["metrics"]["auc_anchored-xfit"]]  # its own scoring, exactly
    net = CoordMLP.load(src["artifacts"]["net"])
    cfg = RS.emc2_config(RS.parse_point(r["config"]), 0)

    def scores(network):
        js = emc2.judges_for(net, ["anchored-xfit"], "picbreeder:skull", cfg, calibration_seed=0, network=network)
        return [float(s) for s in emc2.score(net, js, "skull", cfg)[0].scores]

    held_out, all_rows = scores("picbreeder:skull"), scores(None)
    assert held_out != all_rows  # the two rules disagree on this network's perturbations …
    assert r["metrics"]["scores"] == [held_out]  # … and the rescore took the one without its rows


def test_a_network_outside_the_verdict_set_is_rescored_by_the_all_rows_rule_and_says_so(twin_root, root):
    (src,) = S.records("twin", twin_root)
    assert R.source_scoring(src).networks == (None,)  # a twin trained here is not in the verdict set
    (depth,) = S.records("tiny", root)
    assert R.source_scoring(depth).networks == (None, None)  # nor is an SP population trained by its run
    RS.score_chunk("twin", Reading("anchored-xfit"), twin_root, progress=False)
    (r,) = S.rescores("twin", Reading("anchored-xfit"), twin_root)
    assert r["metrics"]["network"] == [None] and r["metrics"]["fold"] == ["all"]
    RS.score_chunk("twin", Reading("anchored"), twin_root, progress=False)  # skipped if already stored
    (plain,) = S.rescores("twin", Reading("anchored"), twin_root)
    assert "fold" not in plain["metrics"]  # only the cross-fitted judge has folds


SPARSE_PLAN = """
[chunks.sparse]
run = "sparse_depth_point"
seeds = [0]

[chunks.sparse.config]
target = "planted:1:depth=2,width=3"
members = 2
width = 8
res = 16
steps = 150
"sp.rounds" = 4
"sp.retrain_steps" = 10
max_params = 20
deltas = [-0.25, 0.25]
judge = "stability"
train_path = "fast"

[chunks.sparse.grid]
depth = [1, 2]
"""


def test_the_sparse_regime_s_depth_runs_are_read_rescored_and_drawn_as_depth_runs(run_plan, depth_plan, tmp_path):
    """A chunk of `sparse_depth_point` runs: the depth readers see it (curves, the sparsity table, the
    mosaic), and `volratio reference rescore` scores its stored networks like a depth chunk's."""
    from volratio.experiments import depth_regime as D

    _, root, report = run_plan(SPARSE_PLAN, "sparse", tmp_path)
    assert len(report.ran) == 2
    t = "planted:1:depth=2,width=3"
    table = D.sparsity_table(["sparse"], root)
    recs = {int(r["config"]["depth"]): r["metrics"] for r in S.records("sparse", root)}
    for d, m in recs.items():
        assert table.loc[(t, d), "sparsity"] == pytest.approx(np.median(m["sparsity"]))
        assert table.loc[(t, d), "non-zero"] == pytest.approx(np.median(m["nonzero"]))
        assert table.loc[(t, d), "scored dense"] == pytest.approx(np.mean([r == 0 for r in m["fit_round"]]))
        assert table.loc[(t, d), "networks"] == 2
    curve = D.stored_curves(["sparse"], root)[t]
    assert curve.depths == [1, 2] and curve.nonzero[1].tolist() == recs[2]["nonzero"]
    imgs = D.stored_images(["sparse"], root, res=8)
    grid = D.mosaic(imgs, [t], [2, 1], nonzero=True)
    assert grid["row_labels"] == ["depth 2", "depth 1"] and len(grid["rows"][0]) == 2
    assert grid["captions"][0][1] == f"{recs[2]['score'][1]:.2f} · {recs[2]['nonzero'][1]:,}"
    with pytest.raises(D.DepthError, match="no stored networks at depth 3"):
        D.mosaic(imgs, [t], [3])
    RS.score_chunk("sparse", Reading("anchored", weights="every", engine="torch"), root, progress=False)
    every = D.stored_curves(["sparse"], root, reading=Reading("anchored", weights="every", engine="torch"))[t]
    assert every.loss.tolist() == curve.loss.tolist()  # the same networks, scored on every weight
    # the near-dense depth runs record no dense size: the table reads it from their stored networks
    near = D.sparsity_table(["tiny"], _chunk(run_plan, depth_plan, tmp_path / "near", keep=True))
    assert near.loc[(t, 2), "dense weights"] == sum(m[0].numel() for m in CoordMLP(
        "2;gaussian:4", head="grey").masks)  # fmt: skip
    assert np.isnan(near.loc[(t, 2), "fit round"])


SPARSE_OPT_PLAN = """
[chunks.opt]
run = "sparse_optimizer_point"
seeds = [0, 1]
cases = [{ optimizer = "adam", lr = 0.003 }, { optimizer = "adam", lr = 0.01 }, { optimizer = "muon", muon_lr = 0.003, adamw_lr = 0.01 }]

[chunks.opt.config]
target = "planted:1:depth=2,width=3"
depth = 2
width = 8
res = 16
steps = 150
"sp.rounds" = 4
"sp.retrain_steps" = 10
max_params = 20
deltas = [-0.25, 0.25]
judge = "stability"
train_path = "fast"
hessian_iters = 5
"""


def test_the_sparse_regime_s_optimizer_runs_are_read_rescored_and_drawn_as_optimizer_runs(tmp_path):
    """A chunk of `sparse_optimizer_point` runs: one network per run at its fit point with its
    sharpness; `optimizers.stored_runs` reads them (with sparsity and dense MSE), `mosaic` draws them,
    and `volratio reference rescore` scores their stored networks."""
    from volratio.experiments import optimizers as O

    assert R.rescorable("sparse_optimizer_point") and get_run("sparse_optimizer_point").parse({}).scoring().metrics
    root = tmp_path / "reference"
    plan = tmp_path / "plan.toml"
    plan.write_text(SPARSE_OPT_PLAN)
    report = R.run_chunk(R.load_plan(plan), "opt", root, progress=False)
    assert not report.failed and len(report.ran) == 6
    runs = O.stored_runs(["opt"], root)
    recs = {r["key"]: r for r in S.records("opt", root)}
    assert len(runs) == 6 and set(runs.optimizer) == {"adam", "muon"}
    for r in recs.values():
        m = r["metrics"]
        assert len(m["score"]) == 1 and np.isfinite(m["sharpness"])
        assert m["loss"][0] <= max(2 * m["dense_loss"][0], 0.002)  # scored at its fit point
        assert CoordMLP.load(r["artifacts"]["net"]).nonzero() == m["nonzero"]
    row = runs[(runs.optimizer == "muon") & (runs.seed == 1)].iloc[0]
    (m,) = [r["metrics"] for r in recs.values() if r["config"]["optimizer"] == "muon" and r["config"]["seed"] == 1]
    assert (row.nonzero, row.sparsity, row.dense_loss) == (m["nonzero"][0], m["sparsity"][0], m["dense_loss"][0])
    table = O.by_setting(runs)
    assert table.loc[("planted:1:depth=2,width=3", 2, "adam", "lr 0.01"), "seeds"] == 2
    grid = O.mosaic(runs, res=8, nonzero=True)
    assert grid["row_labels"] == ["adam, lr 0.003", "adam, lr 0.01", "muon, lr 0.003, AdamW 0.01"]
    assert len(grid["rows"][0]) == 2 and " · " in grid["captions"][0][0]
    RS.score_chunk("opt", Reading("anchored", weights="every", engine="torch"), root, progress=False)
    every = O.stored_runs(["opt"], root, reading=Reading("anchored", weights="every", engine="torch"))
    assert every.loss.tolist() == runs.loss.tolist() and len(every) == 6  # the same networks, scored again
    with pytest.raises(O.ExperimentError, match="keep_net"):
        O.mosaic(runs.assign(net=None))
    import pandas as pd

    from volratio.report import plots

    best = O.at_best_lr(runs, loss="dense_loss")
    fig = plots.optimizers_at_best(pd.concat(best, names=["target"]).droplevel(1).reset_index(), "dense MSE")
    assert len(fig.axes) == 2 and fig.axes[0].get_yscale() == "log"
