"""The label-anchored EMC2 score: a network that does not draw the label scores 0; the judge,
its rule and the anchored verdict set."""

import json

import numpy as np
import pytest
import torch

from volratio import emc2, judges
from volratio.calibration import anchored_set as A
from volratio.calibration import fit_anchored as fa
from volratio.data.specs import load_network
from volratio.judges import anchored_rule as ar
from volratio.prune import flat_images

CFG = emc2.EMC2Config(deltas=emc2.UNIT_DELTAS, res=32, max_params=40, seed=0, device="cpu")


def by_name(net, spec: str, cfg, judge: str = "anchored", **kw):
    """EMC2 of `net` under the judge named `judge`, asked about the label of the target `spec`."""
    return emc2.score(net, emc2.judges_for(net, [judge], spec, cfg), emc2.target_label(spec), cfg, **kw)[0]


def flat(spec: str):
    """`spec`'s network with its last hidden kernel zeroed: one flat colour."""
    net = load_network(spec)
    with torch.no_grad():
        net.weights[-2].zero_()
        net.set_mask(len(net.weights) - 2, torch.zeros_like(net.masks[-2]))
    return net


@pytest.mark.parametrize("label", ["skull", "butterfly", "apple"])
def test_a_flat_image_network_scores_zero_for_every_label(label, picbreeder_dir):
    r = by_name(flat("fer-sgd:skull"), f"picbreeder:{label}", CFG)
    assert r.judge == "anchored" and r.anchor == "target" and r.measure == "compositional"
    assert not r.base_kept and np.all(r.scores == 0) and r.auc == 0
    # the self-anchored stability measure calls the same grey square perfectly stable
    s = by_name(flat("fer-sgd:skull"), f"picbreeder:{label}", CFG, judge="stability")
    assert s.measure == "stability" and s.anchor == "own image" and s.auc > 0.9


def test_another_targets_network_scores_zero(picbreeder_dir):
    apple_as_skull = by_name(load_network("picbreeder:apple"), "picbreeder:skull", CFG)
    assert not apple_as_skull.base_kept and apple_as_skull.auc == 0
    butterfly_as_apple = by_name(load_network("fer-sgd:butterfly"), "picbreeder:apple", CFG)
    assert not butterfly_as_apple.base_kept and butterfly_as_apple.auc == 0


def test_the_picbreeder_skull_scores_above_zero_as_a_skull(picbreeder_dir):
    r = by_name(load_network("picbreeder:skull"), "picbreeder:skull", CFG)
    assert r.base_kept and r.auc > 0
    j = r.to_json()
    assert j["base_kept"] is True and j["anchor"] == "target" and j["judge"] == "anchored"
    # a weight is counted as preserving the identity only when the base image shows the label
    t = r.table
    assert (t["verdict"] == (t["shown"] & r.base_kept)).all()


def test_collapsed_sp_networks_of_the_verdict_set_are_not_shown(picbreeder_dir):
    """The deep SP networks of the set pruned without the loss guard: every one whose image is flat
    (`prune.flat_images`) was judged by inspection not to show its target, and the judge agrees."""
    rows = A.load_verdicts()
    nets = A.networks(groups=["sp-deep"])
    flat = [n for n, rn in nets.items() if flat_images(rn.net, 64)[rn.member]]
    assert flat, "the set must hold deep SP networks that collapsed into a flat image"
    base = rows[(rows.kernel < 0) & rows.network.isin(flat)]
    assert len(base) == len(flat) and (base.pass1 == 0).all()
    for name in flat:
        rn = nets[name]
        r = by_name(rn.net, rn.target, CFG)
        assert not r.base_kept and r.auc == 0, name


def test_anchored_judge_needs_a_target_or_an_anchor():
    with pytest.raises(judges.JudgeError, match="--target"):
        judges.make_judge("anchored", torch.rand(16, 16, 3))


def test_an_unfitted_label_uses_the_pooled_threshold_and_says_so():
    img = torch.rand(2, 32, 32, 3, generator=torch.Generator().manual_seed(0))
    j = judges.AnchoredJudge(img[0], anchor_name="file:x.png")
    v = j(img, "a label nobody fitted")
    assert v.settings["label_fitted"] is False
    assert v.settings["thresholds"]["*"] == j.rule.threshold("a label nobody fitted")[0]
    assert j(img, "skull").settings["label_fitted"] is True


def test_features_are_one_for_the_target_itself_and_sizes_do_not_matter():
    g = torch.Generator().manual_seed(1)
    t = torch.rand(1, 64, 64, 3, generator=g, dtype=torch.float64)
    f = ar.features(t, t)
    assert f["ssim@1"][0] == pytest.approx(1.0) and f["-rmse"][0] == 0 and f["contrast"][0] == pytest.approx(0)
    small = ar.features(torch.nn.functional.avg_pool2d(t.permute(0, 3, 1, 2), 2).permute(0, 2, 3, 1), t)
    assert set(small) == set(ar.FEATURES) and small["ssim@4"][0] > 0.8
    flat_img = torch.full_like(t, 0.5)
    assert ar.features(flat_img, t)["contrast"][0] < -2  # a flat image has no contrast


def test_rule_round_trip_and_refusal(tmp_path):
    rule = ar.read_rule()
    p = tmp_path / "rule.json"
    fa.write_rule(rule, p)
    assert ar.read_rule(p) == rule
    p.write_text(json.dumps({"features": ["nope"], "thresholds": {}}))
    with pytest.raises(ar.VolratioError, match="not an anchored judge rule"):
        ar.read_rule(p)


def test_split_holds_out_whole_networks_per_group():
    nets = np.array(["a", "a", "b", "b", "c", "c", "d", "e"])
    groups = np.array(["x", "x", "x", "x", "x", "x", "y", "y"])
    test = fa.split(nets, groups, 0.4, seed=0)
    for n in np.unique(nets):
        assert len(set(test[nets == n])) == 1  # a network is all in or all out
    assert test[groups == "x"].any() and (~test[groups == "x"]).any()
    assert test[groups == "y"].sum() == 1


def test_stored_networks_are_checked(tmp_path):
    index = json.loads(A.NETWORKS_JSON.read_text())
    name, entry = next((k, v) for k, v in index["networks"].items() if "file" in v)
    folder = tmp_path / "networks"
    folder.mkdir()
    (tmp_path / "networks.json").write_text(json.dumps({"networks": {name: entry}}))
    (folder / entry["file"]).write_bytes(b"not a network")
    with pytest.raises(A.DataNotFoundError, match="SHA-256"):
        A.networks(folder=folder)


@pytest.fixture(scope="module")
def verdicts():
    return A.load_verdicts()


def test_the_anchored_set_has_its_shape(verdicts):
    assert set(verdicts["group"]) == set(A.GROUPS) and set(verdicts["res"]) == {32, 64}
    assert verdicts["pass1"].isin([0, 1]).all() and verdicts["id"].is_unique
    # every network's unperturbed image is a row, at each resolution it is drawn
    base = verdicts[verdicts.kernel < 0]
    assert len(base) == verdicts.groupby(["network", "res"]).ngroups
    # networks that do not draw the label are in it: other targets, flat images, collapsed SP
    for g in ("other-target", "flat"):
        assert (verdicts[verdicts.group == g].pass1 == 0).all()
    twice = verdicts[(verdicts.source == "new")].dropna(subset=["pass2"])
    assert len(twice) >= 0.15 * (verdicts.source == "new").sum()


def test_rows_regenerate_bit_for_bit_from_the_stored_networks(verdicts, picbreeder_dir):
    sample = verdicts.groupby(["group", "res"]).head(2).reset_index(drop=True)
    nets = A.networks(groups=sorted(set(sample.group)))
    assert A.image_sha(A.render(sample, nets)) == sample["sha256"].tolist()
    moved = sample.assign(delta=-sample["delta"])
    moved = moved[moved.kernel >= 0].reset_index(drop=True)
    assert A.image_sha(A.render(moved, nets)) != moved["sha256"].tolist()  # the hashes are not vacuous


def test_the_shared_rows_are_the_first_sets_images(verdicts, picbreeder_dir):
    from volratio.calibration import reference_verdicts as rv

    shared = verdicts[verdicts.source == "first set"]
    old = rv.load_verdicts()
    old = old[old.group.isin(A.DATA_GROUPS)]
    assert shared["sha256"].tolist() == old["sha256"].tolist() and shared["pass1"].tolist() == old["pass1"].tolist()


@pytest.mark.slow
def test_refitting_on_the_anchored_verdicts_gives_the_stored_rule(picbreeder_dir):
    table = fa.verdict_table()
    rule, ks = fa.fit_default(table)
    stored = ar.read_rule()
    assert rule.features == stored.features and set(rule.thresholds) == set(stored.thresholds)
    assert rule.thresholds == pytest.approx(stored.thresholds, abs=1e-9)
    assert rule.weights == pytest.approx(stored.weights, abs=1e-9)
    assert set(ks) == set(fa.CANDIDATES) and all(len(k) == 10 for k in ks.values())


def test_judge_check_on_the_anchored_set_tells_stability_from_the_label(picbreeder_dir):
    anchored = fa.check_judge("anchored", groups=["flat", "other-target"])
    stability = fa.check_judge("stability", groups=["flat", "other-target"])
    assert anchored["images"]["n"] == stability["images"]["n"] == 72
    assert anchored["images"]["accuracy"] == 1.0  # no flat image, no other target's drawing shows the label
    assert stability["images"]["accuracy"] < 0.2  # the own-render similarity keeps them all
    with pytest.raises(ar.VolratioError, match="unknown groups"):
        fa.check_judge("anchored", groups=["nope"])


@pytest.mark.parametrize("name", ["anchored-ssim", "anchored-pooled"])
def test_the_other_label_anchored_judges_ask_the_same_question(name, picbreeder_dir):
    """The second judge (another similarity) and the pooled one also score a flat grey square and
    another target's network 0, and the Picbreeder skull above 0."""
    assert by_name(flat("fer-sgd:skull"), "picbreeder:skull", CFG, judge=name).auc == 0
    assert by_name(load_network("picbreeder:apple"), "picbreeder:skull", CFG, judge=name).auc == 0
    r = by_name(load_network("picbreeder:skull"), "picbreeder:skull", CFG, judge=name)
    assert r.judge == name and r.anchor == "target" and r.measure == "compositional"
    assert r.base_kept and r.auc > 0


def test_the_second_judge_uses_another_similarity_and_its_stored_rule_regenerates(picbreeder_dir):
    second = ar.read_rule(ar.SECOND_RULE_JSON)
    table = fa.verdict_table()  # renders the verdict set's images: its Picbreeder rows need the data
    _, rules, _ = fa.compare(table, 0.4, 0, {"second": ar.SECOND_FEATURES})
    assert rules["second"].thresholds == pytest.approx(second.thresholds)


def test_the_second_and_pooled_judges_read_their_own_rules():
    second = ar.read_rule(ar.SECOND_RULE_JSON)
    assert second.features == ar.SECOND_FEATURES and set(second.features) != set(ar.read_rule().features)
    pooled = judges.AnchoredJudge(torch.zeros(8, 8, 3), variant="anchored-pooled")
    assert set(pooled.rule.thresholds) == {"*"}
    with pytest.raises(judges.JudgeError, match="anchored judge"):
        judges.AnchoredJudge(torch.zeros(8, 8, 3), variant="anchored-vlm")
