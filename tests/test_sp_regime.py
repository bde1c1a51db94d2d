"""SP in the sparse regime: from an over-parameterised start down to the width the target needs, a
τ schedule that always removes the most similar pair first, a non-zero target, and clear refusals."""

from dataclasses import replace

import numpy as np
import pytest
import torch
from training_helpers import needs_compiler, smooth_image

from volratio import prune as P
from volratio.nets import CoordMLP, coords
from volratio.prune.similarity_pruning import mask_nonzeros, sp_round


def removed_units(net):
    return [set(torch.nonzero(~a[0]).flatten().tolist()) for a in P.unit_alive(net.masks)]


TRUE_ARCH = "2;sin:3,gaussian:2"  # the width the target needs: 5 distinct units per layer


def true_net(seed=0) -> CoordMLP:
    g = torch.Generator().manual_seed(seed)
    kernels = [torch.randn(4, 5, generator=g) * 1.5, torch.randn(5, 5, generator=g), torch.randn(5, 3, generator=g)]
    return CoordMLP.from_kernels(TRUE_ARCH, kernels, head="hsv")


def widened(net: CoordMLP, copies: int) -> CoordMLP:
    """The same function at `copies` × the width: every hidden unit copied, its outgoing weights split
    evenly among its copies (a unit's copies feed the next layer `w / copies` each)."""
    k = [w[0].detach() for w in net.weights]
    wide = [k[0].repeat_interleave(copies, dim=1)]
    for kl in k[1:-1]:
        wide.append(kl.repeat_interleave(copies, dim=0).repeat_interleave(copies, dim=1) / copies)
    wide.append(k[-1].repeat_interleave(copies, dim=0) / copies)
    arch = "2;" + ",".join(f"{a}:{n * copies}" for a, n in (("sin", 3), ("gaussian", 2)))
    # unit order of the arch: all sin units first, then gaussian — which repeat_interleave keeps
    return CoordMLP.from_kernels(arch, wide, head="hsv")


@pytest.mark.parametrize("seed", range(3))
def test_sp_from_a_wide_start_ends_at_the_true_width(seed):
    truth = true_net(seed)
    wide = widened(truth, 4)
    grid = coords(16)
    assert torch.allclose(wide(grid), truth(grid), atol=1e-5)  # precondition: the same function, 4× the width
    # precondition: the distinct units of the true network are not similar above the first threshold
    for f in P.feature_maps(truth, grid):
        assert not P.redundant_pairs(P.similarity(f[0]), 0.999)
    before = truth(grid)
    cfg = P.SPConfig(tau=0.9999, tau_schedule=(0.9995,), rounds=6, retrain_steps=0, compensate="twin", seed=seed)
    res = P.sp(wide, smooth_image(16), cfg)
    assert wide.live_units() == [[5, 5]]  # every copy but one removed, no distinct unit touched
    assert res.extras["stop"] == ["no redundant pair"]
    assert res.extras["members"][0]["tau"] == 0.9995  # it went through the whole schedule
    assert mask_nonzeros(wide.masks) == [4 * 5 + 5 * 5 + 5 * 3]
    # the re-expressed copies keep the function: the pruned network draws what the true one draws
    # (SP retrains, here for 0 steps, on its `train.device`: "auto" is CUDA where there is one)
    assert torch.allclose(wide(grid.to(wide.weights[0].device)).cpu(), before, atol=1e-4)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("cap", [None, 3])
def test_tau_schedule_never_removes_a_less_similar_pair_than_one_it_keeps(seed, cap):
    net = CoordMLP("3;gaussian:6,sin:4", population=2, seed=seed)
    calib = P.CalibrationGrid.from_image(smooth_image(16), net)
    cfg = P.SPConfig(tau=0.999, tau_schedule=(0.9, 0.6, 0.3), per_round=cap, opposite_sign=False, seed=seed)
    feats = P.feature_maps(net, calib.grid)
    alive = P.unit_alive(net.masks)
    level = [0, 0]
    masks, removed, plan = sp_round(net, calib, cfg, torch.Generator().manual_seed(seed), [True, True], None, level)
    after = P.unit_alive(masks)
    for k in range(2):
        assert removed[k] > 0 and level[k] > 0  # nothing above 0.999 in a random network: the schedule moved
        gone = [r.similarity for r in plan if r.member == k]
        kept = []  # similarity of every pair of one layer whose two units both stay
        for l, f in enumerate(feats):
            idx = torch.nonzero(after[l][k] & alive[l][k]).flatten()
            sim = P.similarity(f[k][:, idx])
            iu = torch.triu_indices(len(idx), len(idx), offset=1)
            kept += sim[iu[0], iu[1]].tolist()
        assert min(gone) >= max(kept) - 1e-12
        assert min(gone) > cfg.taus()[level[k]]  # each removal is redundant at the network's threshold


def test_target_nonzeros_stops_at_the_first_count_at_or_below_it():
    wide = widened(true_net(1), 4)
    n0 = mask_nonzeros(wide.masks)[0]
    cfg = P.SPConfig(tau=0.9999, rounds=6, retrain_steps=0, compensate="twin", target_nonzeros=n0 - 100)
    res = P.sp(wide, smooth_image(16), cfg)
    m = res.extras["members"][0]
    assert m["stop"] == "target size" and m["nonzeros"] <= n0 - 100
    # one removal fewer would not have reached it: the count is the first at or below the target
    units = sum(wide.live_units()[0])
    assert units > 10 and m["nonzeros"] > n0 - 100 - 2 * (5 * 4 + 3)
    assert 0 < m["sparsity"] < 1


@pytest.mark.parametrize("bad", [0, -3, 10**9])
def test_impossible_targets_are_refused(bad):
    wide = widened(true_net(0), 2)
    with pytest.raises(P.PruneError, match="target_nonzeros"):
        P.sp(wide, smooth_image(16), P.SPConfig(target_nonzeros=bad, retrain_steps=0))


@pytest.mark.parametrize(
    "opts,match",
    [
        (dict(tau=0.9, tau_schedule=(0.95,)), "each below the one before"),
        (dict(tau=0.9, tau_schedule=(0.5, 1.5)), "tau_schedule"),
        (dict(per_round_fraction=0.0), "per_round_fraction"),
        (dict(per_round_fraction=1.5), "per_round_fraction"),
    ],
)
def test_bad_schedules_are_refused(opts, match):
    with pytest.raises(P.PruneError, match=match):
        P.SPConfig(**opts).check()


def test_per_round_fraction_caps_each_round():
    net = CoordMLP("2;gaussian:10", population=1, seed=3)
    cfg = P.SPConfig(tau=0.0, opposite_sign=True, per_round_fraction=0.25, rounds=1, retrain_steps=0, loss_factor=None)
    P.sp(net, smooth_image(16), cfg)
    assert sum(len(g) for g in removed_units(net)) == 5  # a quarter of 20 live units


def test_the_prune_command_reaches_a_nonzero_target_and_records_each_member(tmp_path, capsys):
    """`volratio prune --method sp --target-nonzeros N` from a 4× widened network: it stops at or
    below N, and says per member its sparsity, non-zero count, dense and final MSE and why it stopped."""
    from volratio.cli import main

    wide = tmp_path / "wide.safetensors"
    assert main(["train", "planted:3", "--depth", "2", "--width", "12", "--steps", "50", "--res", "12",
                 "--seed", "0", "--out", str(wide)]) == 0  # fmt: skip
    have = CoordMLP.load(wide).nonzero()[0]
    out = tmp_path / "sp.safetensors"
    argv = ["prune", str(wide), "--target", "planted:3", "--method", "sp", "--steps", "5", "--res", "12",
            "--tau", "0.99", "--tau-schedule", "0.5,0.0", "--per-round-fraction", "0.5", "--rounds", "30",
            "--target-nonzeros", "60", "--no-guard", "--out", str(out), "--json"]  # fmt: skip
    capsys.readouterr()
    assert main(argv) == 0
    import json

    s = json.loads(capsys.readouterr().out)
    (m,) = s["members"]
    assert m["stop"] == "target size" and m["nonzeros"] <= 60 < have and s["nonzero"] == [m["nonzeros"]]
    assert m["sparsity"] == pytest.approx(1 - m["nonzeros"] / s["weights"]) and m["final_loss"] >= 0
    assert {"dense_loss", "final_loss", "tau", "collapsed"} <= set(m)
    big = ["prune", str(wide), "--target", "planted:3", "--method", "sp", "--res", "12",
           "--target-nonzeros", str(have + 1), "--out", str(tmp_path / "x.safetensors")]  # fmt: skip
    assert main(big) == 2
    assert "is not below the network's" in capsys.readouterr().err
    assert main(big[:-4] + ["--target-nonzeros", "0", "--out", str(tmp_path / "y.safetensors")]) == 2
    assert "--target-nonzeros" in capsys.readouterr().err  # 0 is not a positive integer


@pytest.mark.parametrize("method", ["magnitude", "random", "wanda"])
def test_matched_baselines_have_sp_s_non_zero_count_in_every_kernel(method):
    """A weight baseline given `match=` SP's network keeps exactly SP's non-zero count per kernel
    (not only in total), and records the counts it matched, not a copy of the network."""
    img = smooth_image(16)
    wide = CoordMLP("2;sin:6,gaussian:6", head="hsv", population=2, seed=3)
    sp_net = wide.select([0, 1])
    P.prune(sp_net, torch.stack([img, img]), "sp", P.SPConfig(tau=0.0, rounds=2, retrain_steps=0, per_round=3))
    want = P.nonzero_per_kernel(sp_net.masks)
    assert (want < P.nonzero_per_kernel(wide.masks)).any()  # SP removed something
    base = wide.select([0, 1])
    r = P.prune(base, torch.stack([img, img]), method, match=sp_net, retrain_steps=0)
    assert P.nonzero_per_kernel(base.masks).tolist() == want.tolist()
    assert r.config["match"] == want.tolist()
    again = wide.select([0, 1])  # the recorded counts are a match of their own
    P.prune(again, torch.stack([img, img]), method, match=r.config["match"], retrain_steps=0)
    assert P.nonzero_per_kernel(again.masks).tolist() == want.tolist()


def test_imp_matched_reaches_sp_s_count_in_every_kernel_level_by_level():
    """IMP given `match=` reaches SP's non-zero count in every kernel at its last level, each level
    pruning more in every kernel than the level before (never reviving a weight)."""
    img = smooth_image(16)
    wide = CoordMLP("2;sin:6,gaussian:6", head="hsv", population=2, seed=3)
    sp_net = wide.select([0, 1])
    P.prune(sp_net, torch.stack([img, img]), "sp", P.SPConfig(tau=0.0, rounds=3, retrain_steps=0, per_round=3))
    want = P.nonzero_per_kernel(sp_net.masks)
    base = wide.select([0, 1])
    r = P.prune(base, torch.stack([img, img]), "imp", match=sp_net, train_steps=2, rate=0.3)
    assert P.nonzero_per_kernel(base.masks).tolist() == want.tolist()
    levels = [np.asarray(lv) for lv in r.extras["levels"]]
    assert len(levels) > 1 and all((b >= a).all() for a, b in zip(levels, levels[1:]))
    assert r.config["match"] == want.tolist()


def test_llm_pruner_matched_keeps_sp_s_live_units_per_layer():
    img = smooth_image(16)
    wide = CoordMLP("2;sin:6,gaussian:6", head="hsv", population=2, seed=3)
    sp_net = wide.select([0, 1])
    P.prune(sp_net, torch.stack([img, img]), "sp", P.SPConfig(tau=0.0, rounds=2, retrain_steps=0, per_round=3))
    base = wide.select([0, 1])
    r = P.prune(base, torch.stack([img, img]), "llm-pruner", match=sp_net, retrain_steps=0)
    assert base.live_units() == sp_net.live_units() and base.live_units() != wide.live_units()
    assert r.config["match"] == [list(map(int, k)) for k in sp_net.live_units()]


def test_a_match_with_more_weights_than_the_network_is_refused():
    img = smooth_image(16)
    small = CoordMLP("2;sin:6,gaussian:6", head="hsv", seed=3)
    P.prune(small, img, "magnitude", sparsity=0.5, retrain_steps=0)
    dense = CoordMLP("2;sin:6,gaussian:6", head="hsv", seed=4)
    with pytest.raises(P.PruneError, match="fewer than the .* of the network to match"):
        P.prune(small, img, "random", match=dense, retrain_steps=0)
    with pytest.raises(P.PruneError, match="same architecture"):
        P.prune(small, img, "random", match=CoordMLP("3;sin:6,gaussian:6", head="hsv"), retrain_steps=0)


def test_the_frontier_matches_every_baseline_to_sp_per_layer_and_reads_the_fit_criterion():
    """`sparse_regime`: at each checkpoint the weight baselines hold SP's non-zero count and
    random-units SP's live units, member by member; the trajectory starts at the dense networks
    (ratio 1) and `at_fit` reads the fewest non-zeros among the rounds within the criterion."""
    from volratio.experiments import sparse_regime as S

    cfg = S.Config(target="planted:1:depth=2,width=3", members=2, width=8, depth=2, res=8, dense_steps=20,
                   sp=replace(S.Config().sp, rounds=3, retrain_steps=2), target_nonzeros=30, device="cpu")  # fmt: skip
    r = S.run(cfg)
    t = r.table
    cp = t[t.kind == "checkpoint"]
    for ckpt, g in cp[cp.method != "dense"].groupby("checkpoint"):
        sp_rows = g[g.method == "sp"].set_index("member")
        for m in ("magnitude", "random", "wanda", "random-units"):
            rows = g[g.method == m].set_index("member")
            assert rows.nonzero.to_dict() == sp_rows.nonzero.to_dict() or m == "random-units", (ckpt, m)
        units = g[g.method == "random-units"].set_index("member").live_units.to_dict()
        assert units == sp_rows.live_units.to_dict()
        sp_net = r["nets"][("sp", ckpt)]
        assert P.nonzero_per_kernel(r["nets"][("magnitude", ckpt)].masks).tolist() == (
            P.nonzero_per_kernel(sp_net.masks).tolist()
        )
    tr = t[t.kind == "trajectory"]
    assert (tr[tr["round"] == 0].loss_ratio == 1.0).all() and tr["round"].max() >= 1
    fit = S.at_fit(t, factor=1e9)  # everything fits: the last (smallest) round
    assert fit.nonzero.tolist() == [int(tr[tr.member == k].nonzero.min()) for k in (0, 1)]
    assert S.scratch_width(6, 1392) == 16 and S.scratch_width(2, 4 * 5 + 25 + 15) == 5


def test_the_frontier_figure_draws_every_method_and_the_marks():
    import matplotlib

    matplotlib.use("Agg")
    import pandas as pd

    from volratio.report import plots

    rows = [{"kind": "trajectory", "member": 0, "round": r, "nonzero": n, "loss_ratio": q}
            for r, (n, q) in enumerate([(500, 1.0), (300, 1.5), (150, 4.0)])]  # fmt: skip
    rows += [{"kind": "checkpoint", "member": 0, "round": None, "method": m, "nonzero": 150, "loss_ratio": q}
             for m, q in [("sp", 4.0), ("magnitude", 6.0), ("scratch", 0.8)]]  # fmt: skip
    fig = plots.frontier(pd.DataFrame(rows), "skull", picbreeder_nonzero=147)
    ax = fig.axes[0]
    labels = ax.get_legend_handles_labels()[1]
    assert {"SP, round by round", "sp", "magnitude", "scratch", "Picbreeder network"} <= set(labels)
    assert ax.get_xscale() == ax.get_yscale() == "log"
    assert any(list(line.get_xdata()) == [147, 147] for line in ax.lines)


@needs_compiler  # the score sets read on the fused engine
def test_the_score_stage_scores_a_stored_regime_population_as_score_does_in_memory(tmp_path):
    """Train once, score under any reading: the score stage (`volratio.runs.score`) reads each stored
    population of a `sparse_regime` run by its artifact, keyed by the source run's key and the reading,
    and gives every member the AUC `sparse_regime.score` gives it in memory under the same reading; a
    second call scores nothing again, and a population the run stores no network for is not planned."""
    from dataclasses import asdict

    from volratio.emc2 import EMC2Config
    from volratio.emc2.reading import Reading
    from volratio.experiments import sparse_regime as S
    from volratio.runs import reference as R
    from volratio.runs import score as SC
    from volratio.runs import stored
    from volratio.runs.registry import make_config

    source = {"target": "planted:0", "members": 2, "width": 8, "depth": 2, "res": 8, "dense_steps": 30,
              "target_nonzeros": 30, "checkpoints": [0.5], "methods": ["magnitude"], "scratch": False,
              "keep_nets": True, "device": "cpu", "sp.rounds": 4, "sp.retrain_steps": 5}  # fmt: skip
    plan = {"src": R.Sweep.from_dict({"name": "src", "run": "sparse_regime", "seeds": [0], "config": source})}
    R.run_chunk(plan, "src", tmp_path, progress=False)
    reading = Reading("stability", weights=12, engine="fused")
    wanted = ["net_sp_0p50", "net_dense_dense", "net_nosuch_end"]
    assert {c["source"]["artifact"] for c in SC.plan("src", reading, tmp_path, wanted).values()} == set(wanted[:2])
    report = SC.score_chunk("src", reading, tmp_path, progress=False, artifacts=wanted)
    assert (report.total, len(report.ran), report.failed) == (2, 2, [])
    assert len(SC.score_chunk("src", reading, tmp_path, progress=False, artifacts=wanted).ran) == 0
    runs = stored.rescores("src", reading, tmp_path)
    assert {r["config"]["emc2"]["max_params"] for r in runs} == {12}
    trained = S.train(make_config("sparse_regime", "quick", source))
    settings = {k: v for k, v in asdict(S.score_settings()).items() if k != "member"}
    res = S.score(trained, reading, EMC2Config(**settings)).table
    for r in runs:
        method, _, ckpt = r["config"]["source"]["artifact"].removeprefix("net_").rpartition("_")
        rows = res[(res["kind"] == "checkpoint") & (res["method"] == method)]
        rows = rows[rows["checkpoint"].astype(str).str.replace(".", "p") == ckpt].sort_values("member")
        assert list(rows["emc2_auc"]) == r["metrics"]["score"] and len(rows) == 2
    assert res[res["kind"] == "trajectory"]["emc2_auc"].isna().all()  # SP's rounds keep no network
    assert "emc2_auc" not in S.score(trained).table and S.score(trained).judge is None  # the frontier, unscored
    with pytest.raises(Exception, match="under a judge"):
        S.score(trained, Reading(delta_scale="layer_std"))
    (one,) = [r["config"] for r in runs if r["config"]["source"]["artifact"] == "net_sp_0p50"]
    with pytest.raises(SC.RescoreError, match="not stored|no artifact|net_nosuch_end"):
        SC.point({**one, "source": {**one["source"], "artifact": "net_nosuch_end"}}, tmp_path)
    with pytest.raises(SC.RescoreError, match="source must name"):
        SC.point({**one, "source": {**one["source"], "artifact": "net"}}, tmp_path)  # "net" goes unnamed


@needs_compiler  # the score sets read on the fused engine
def test_stored_scores_list_the_populations_the_source_could_not_make_as_failed(tmp_path):
    """A stored source run records a baseline it could not match as `failed` rows and stores no network
    for it: the score stage plans no run for it, and `stored_scores` lists its members with why, beside
    every scored network (the stored NaN of the rows that did not fail is not a reason)."""
    from volratio.cli import main
    from volratio.emc2.reading import Reading
    from volratio.experiments import sparse_regime as S
    from volratio.experiments.sparse_regime import scores as RS
    from volratio.runs import reference as R

    source = {"target": "planted:0", "members": 1, "width": 8, "depth": 5, "res": 8, "dense_steps": 20,
              "target_nonzeros": 16, "checkpoints": [0.5], "methods": ["random", "random-units"],
              "scratch": False, "keep_nets": True, "device": "cpu", "sp.rounds": 12, "sp.retrain_steps": 2}  # fmt: skip
    plan = {"src": R.Sweep.from_dict({"name": "src", "run": "sparse_regime", "seeds": [0], "config": source})}
    R.run_chunk(plan, "src", tmp_path, progress=False)
    table = S.stored_table("src", tmp_path)
    failed = {(r.method, r.checkpoint) for r in table.itertuples() if isinstance(r.failed, str)}
    assert failed == {("random", "end")}  # random weights at SP's end counts leave no path here
    pops = tuple(f"{m}_{c}" for m in ("sp", "random", "random-units") for c in ("0p50", "end"))
    scores = RS.Scores("src", Reading(weights=8, engine="fused"), ("stability",), pops)
    assert scores.progress(tmp_path) == (0, 5)  # every population but the one that failed
    (command,) = scores.commands()  # the score stage's command line, as the plan's comments give it
    assert main([*command.split()[1:], "--root", str(tmp_path), "--no-progress"]) == 0
    assert scores.progress(tmp_path) == (5, 5)
    got = RS.stored_scores(scores, tmp_path)
    assert {(m, c) for m, c, f in zip(got.method, got.checkpoint, got.failed) if isinstance(f, str)} == failed
    assert got[got.failed.isna()]["emc2_auc:stability"].notna().all() and len(got) == 6
    with pytest.raises(Exception, match="two readings"):
        RS.stored_scores([scores, RS.Scores("src", Reading(weights=9, engine="fused"), ("stability",), pops)], tmp_path)


@needs_compiler  # the score sets read on the fused engine
def test_size_twins_reads_claim_one_networks_of_the_regime_targets_on_one_anchor(tmp_path, picbreeder_dir):
    """Claim 1 at equal size: the Picbreeder network and its dense twins (only the runs judged against
    the target's own image, the regime's training image), and the regime's SP and scratch networks
    at every checkpoint; each drawn by `plots.auc_by_size`."""
    import matplotlib

    matplotlib.use("Agg")
    from volratio.emc2.reading import Reading
    from volratio.experiments import sparse_regime as S
    from volratio.experiments.sparse_regime import scores as RS
    from volratio.report import plots
    from volratio.report.readings.emc2 import size_twins
    from volratio.runs import reference as R
    from volratio.runs.score import score_chunk

    source = {"target": "picbreeder:skull", "members": 1, "width": 12, "depth": 2, "res": 8, "dense_steps": 10,
              "target_nonzeros": 120, "checkpoints": [0.25], "methods": ["magnitude"], "scratch": True,
              "keep_nets": True, "device": "cpu", "sp.rounds": 4, "sp.retrain_steps": 2}  # fmt: skip
    twin = {"target": "skull", "res": 8, "steps": 3, "deltas": [1.0], "judges": ["anchored"], "max_params": 10}
    plan = {
        S.REFERENCE_CHUNK: R.Sweep.from_dict({"name": S.REFERENCE_CHUNK, "run": "sparse_regime", "seeds": [0],
                                              "config": source}),
        "twins16_picbreeder": R.Sweep.from_dict({"name": "twins16_picbreeder", "run": "twin_point", "seeds": [0],
                                                 "config": {**twin, "network": "picbreeder"},
                                                 "grid": {"anchor": ["image", "png"]}}),
        "twins16": R.Sweep.from_dict({"name": "twins16", "run": "twin_point", "seeds": [0, 1],
                                      "config": {**twin, "network": "twin", "anchor": "image"}}),
    }  # fmt: skip
    for name in plan:
        R.run_chunk(plan, name, tmp_path, progress=False)
    scored = RS.Scores(S.REFERENCE_CHUNK, Reading(weights=10, engine="fused"), ("anchored",),
                       ("sp_0p25", "scratch_0p25", "magnitude_0p25"))  # fmt: skip
    for reading in scored.readings():
        score_chunk(S.REFERENCE_CHUNK, reading, tmp_path, progress=False, artifacts=scored.artifacts())
    rows = size_twins("anchored", root=tmp_path, scores=scored)
    kinds = rows.groupby("kind").size().to_dict()
    assert kinds == {"Picbreeder": 1, "dense twin": 2, "SP twin": 1, "scratch twin": 1}  # no png run, no magnitude
    pb = rows[rows.kind == "Picbreeder"].iloc[0]
    assert pb.nonzero == 147 and pb.target == "picbreeder:skull" and 0.0 <= pb.auc <= 1.0
    scores = RS.stored_scores(scored, root=tmp_path)
    sp = scores[scores.method == "sp"].iloc[0]
    got = rows[rows.kind == "SP twin"].iloc[0]
    assert (got.nonzero, got.auc, got.checkpoint) == (sp.nonzero, sp["emc2_auc:anchored"], "0.25")
    # the same populations scored under another judge by a set of their own: one row per network, both judges
    more = RS.Scores(S.REFERENCE_CHUNK, scored.reading, ("anchored-v2",), ("sp_0p25",))
    score_chunk(S.REFERENCE_CHUNK, more.readings()[0], tmp_path, progress=False, artifacts=more.artifacts())
    both = RS.stored_scores((scored, more), root=tmp_path)
    assert len(both) == len(scores) and both["emc2_auc:anchored"].tolist() == scores["emc2_auc:anchored"].tolist()
    assert both.loc[both.method == "sp", "emc2_auc:anchored-v2"].notna().all()
    assert both.loc[both.method != "sp", "emc2_auc:anchored-v2"].isna().all()
    ax = plots.auc_by_size(rows, "skull").axes[0]
    labels = set(ax.get_legend_handles_labels()[1])
    assert {"Picbreeder", "dense twin", "SP twin, 25% sparse", "scratch twin, 25% sparse"} <= labels
    assert ax.get_xscale() == "log"


def _tiny_regime():
    from volratio.experiments import sparse_regime as S

    # trained long enough that pruning costs fit (the fit point is denser than the end point on some pairs)
    return S, S.Config(target="planted:1:depth=2,width=3", members=2, width=8, depth=2, res=8, dense_steps=300,
                       sp=replace(S.Config().sp, rounds=5), target_nonzeros=30, fit_floor=0.0, device="cpu")  # fmt: skip


def test_endpoint_grid_reads_sp_s_end_and_fit_point_per_tau_start_and_budget_as_run_would():
    """`endpoint_grid`: one row per τ start × retraining steps × member, the τ asked for, the same table
    twice, the fit point never sparser than the end point, and each pair's end point the one `run`
    records for that pair's config (the schedule cut below the start)."""
    import pandas as pd

    S, cfg = _tiny_regime()
    taus, steps = (0.95, 0.5), (1, 3)
    grid = S.endpoint_grid(cfg, taus=taus, retrain_steps=steps)
    assert len(grid) == len(taus) * len(steps) * cfg.members
    assert sorted(zip(grid.tau, grid.retrain_steps, grid.member)) == sorted(
        (t, n, k) for t in taus for n in steps for k in range(cfg.members)
    )
    assert grid.groupby("tau").size().to_dict() == {t: len(steps) * cfg.members for t in taus}
    assert (grid.fit_nonzero >= grid.nonzero).all() and (grid.fit_round <= grid.rounds).all()
    assert (grid.fit_nonzero > grid.nonzero).any()  # precondition: the fit point is not just the end point
    assert (grid.fit_loss_ratio <= cfg.fit_factor).all()
    assert ((grid.sparsity > 0) & (grid.sparsity < 1)).all() and (grid.rounds <= cfg.sp.rounds).all()
    pd.testing.assert_frame_equal(grid, S.endpoint_grid(cfg, taus=taus, retrain_steps=steps), check_exact=True)

    one = replace(cfg, methods=(), scratch=False,
                  sp=replace(cfg.sp, tau=0.5, tau_schedule=(0.4, 0.3, 0.2, 0.1, 0.0), retrain_steps=3))  # fmt: skip
    t = S.run(one).table
    tr = t[t.kind == "trajectory"]
    last = tr[tr["round"] == tr["round"].max()].set_index("member")
    fit = S.at_fit(t, cfg.fit_factor, cfg.fit_floor).set_index("member")
    row = grid[(grid.tau == 0.5) & (grid.retrain_steps == 3)].set_index("member")
    assert row.nonzero.to_dict() == last.nonzero.to_dict()
    assert row.loss_ratio.to_dict() == last.loss_ratio.to_dict()
    assert row.fit_nonzero.to_dict() == fit.nonzero.to_dict() and row.fit_round.to_dict() == fit["round"].to_dict()
    sp_end = t[(t.kind == "checkpoint") & (t.method == "sp")]
    final = sp_end[sp_end.checkpoint == row.stage.iloc[0]].set_index("member")
    assert final.nonzero.to_dict() == row.nonzero.to_dict() and final.collapsed.to_dict() == row.collapsed.to_dict()


@pytest.mark.parametrize(
    "opts,match",
    [
        (dict(taus=()), "taus = \\(\\); give one or more τ starts in \\(0, 1\\]"),
        (dict(taus=(0.9, 0.0)), "τ starts in \\(0, 1\\]"),
        (dict(taus=(1.5,)), "τ starts in \\(0, 1\\]"),
        (dict(taus=(float("nan"),)), "τ starts in \\(0, 1\\]"),
        (dict(retrain_steps=()), "retrain_steps = \\(\\); give one or more whole numbers"),
        (dict(retrain_steps=(100, 0)), "each at least 1"),
        (dict(retrain_steps=(2.5,)), "whole numbers"),
    ],
)
def test_endpoint_grid_refuses_bad_input_before_training(opts, match):
    S, cfg = _tiny_regime()
    with pytest.raises(S.ExperimentError, match=match):
        S.endpoint_grid(replace(cfg, dense_steps=10**9), **opts)  # would take hours if it trained


def test_the_endpoint_figure_draws_the_end_and_fit_point_per_tau_start():
    import matplotlib

    matplotlib.use("Agg")
    import pandas as pd

    from volratio.report import plots

    rows = [{"tau": t, "retrain_steps": n, "member": k, "sparsity": 0.6 + 0.01 * k, "loss_ratio": 20.0,
             "collapsed": k == 1, "fit_sparsity": 0.3, "fit_loss_ratio": 1.5}
            for t in (0.95, 0.8) for n in (30, 100, 300) for k in range(2)]  # fmt: skip
    fig = plots.sp_endpoints(pd.DataFrame(rows), fit_factor=2.0, title="quick scale")
    left, right = fig.axes[:2]
    labels = right.get_legend_handles_labels()[1]
    assert {f"τ from {t:g}: {p} point" for t in (0.95, 0.8) for p in ("end", "fit")} <= set(labels)
    assert left.get_ylim() == (0, 1) and right.get_yscale() == "log" and left.get_xscale() == "log"
    assert [list(line.get_xdata()) for line in left.lines] == [[30, 100, 300]] * 4


def test_the_near_dense_preset_is_the_same_protocol_on_a_given_arch_without_a_size_to_reach():
    """`NEAR_DENSE` over a scale: the networks are the given arch, SP stops at its guard or its rounds
    (never "target size": 0 is no size to reach), and every baseline is matched per layer at SP's end."""
    from volratio.experiments import sparse_regime as S

    cfg = S.near_dense("quick", target="planted:1:depth=2,width=3", arch="2;gaussian:4,sin:2", res=8,
                       dense_steps=30, members=2, device="cpu", **{"sp.retrain_steps": 2, "sp.rounds": 2})  # fmt: skip
    assert (cfg.target_nonzeros, cfg.checkpoints, cfg.scratch) == (0, (), False)
    assert (cfg.sp.tau, cfg.sp.loss_factor, cfg.sp.tau_schedule) == (0.9, 2.0, ())
    r = S.run(cfg)
    assert str(r["nets"][("dense", "dense")].arch) == "2;gaussian:4,sin:2"
    cp = r.table[r.table.kind == "checkpoint"]
    assert set(cp.checkpoint) == {"dense", "end"} and set(cp.method) == {"dense", "sp", *S.METHODS}
    sp_end = r["nets"][("sp", "end")]
    assert P.nonzero_per_kernel(r["nets"][("magnitude", "end")].masks).tolist() == (
        P.nonzero_per_kernel(sp_end.masks).tolist()
    )
    # the same settings spelt as the chunk spells them (dotted, over the scale's preset) give the same config
    from volratio.runs.registry import get_run

    spelt = {"scale": "quick", **S.NEAR_DENSE, "target": cfg.target, "arch": cfg.arch, "res": 8, "dense_steps": 30,
             "members": 2, "device": "cpu", "sp.retrain_steps": 2, "sp.rounds": 2}  # fmt: skip
    assert get_run("sparse_regime").parse(spelt) == cfg


@pytest.mark.parametrize(
    "overrides, match",
    [
        ({"arch": "2;gaussian:4", "scratch": True}, "scratch networks"),
        ({"arch": "picbreeder", "target": "planted:1:depth=2,width=3", "scratch": False}, "needs a Picbreeder target"),
        ({"arch": "2;nope:4"}, "nope"),
        ({"target_nonzeros": -1}, "target_nonzeros"),
    ],
)
def test_the_regime_config_refuses_an_arch_it_cannot_build(overrides, match):
    from volratio.experiments import sparse_regime as S
    from volratio.util.presets import ConfigError, preset

    with pytest.raises(ConfigError, match=match):
        preset(S.Config, "quick", **overrides)


def test_an_arch_left_unset_keeps_the_stored_runs_keys():
    """`arch` enters a run's key only when set (`keyed_when_set`): the chunks stored before it existed
    keep their keys."""
    from volratio.experiments import sparse_regime as S
    from volratio.runs.registry import get_run

    keyed = get_run("sparse_regime").keyed({"scale": "reference"})
    assert "arch" not in keyed and S.dense_arch(S.Config.reference()) == "6;gaussian:64"
    picbreeder = {"scale": "reference", "arch": "picbreeder", "scratch": False}
    assert get_run("sparse_regime").keyed(picbreeder)["arch"] == "picbreeder"
