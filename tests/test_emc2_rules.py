"""The rules the EMC2 score rests on, each pinned by a test that a broken rule fails: a perturbation
counts only when the unperturbed image shows the label (`EMC2Result.base_kept`), the score is the
fraction of kept perturbations per δ and its area the normalised trapezoid; and the default
(label-anchored) judge, its real rule read from the package, refuses a flat image and a NaN image
of a built-in target. No downloaded data is needed."""

import numpy as np
import pytest
import torch

from volratio import emc2, judges
from volratio.emc2 import scoring
from volratio.errors import VolratioError
from volratio.judges.anchored import target_anchor
from volratio.nets import CoordMLP

CFG = emc2.EMC2Config(deltas=(-1.0, -0.5, 0.5, 2.0), res=12, device="cpu")
ANCHORED_CFG = emc2.EMC2Config(deltas=emc2.UNIT_DELTAS, res=32, max_params=40, seed=0, device="cpu")


def score_one(net, judge, label, cfg, **kw):
    """The score under one judge object."""
    return emc2.score(net, [judge], label, cfg, **kw)[0]


def by_name(net, spec, cfg, judge="anchored", label=None, anchor=None, **kw):
    """The score under the judge named `judge`, built for `spec` (`emc2.judges_for`)."""
    js = emc2.judges_for(net, [judge], spec, cfg, anchor=anchor)
    return emc2.score(net, js, label or emc2.target_label(spec), cfg, **kw)[0]


def _net(seed=1):
    return CoordMLP("3;gaussian:3,sin:2", seed=seed, dtype=torch.float64, init_scale=1.5)


class BaseJudge(judges.Judge):
    """Accepts every image except the network's unperturbed render (`base`), bit for bit — or,
    with `accept_base`, every image: two judges whose verdicts are known."""

    name = "base-stub"

    def __init__(self, base, accept_base=False):
        self.base, self.accept_base = judges.as_images(base)[0], accept_base

    def _judge(self, images, label):
        x = judges.as_images(images)
        is_base = (x == self.base).flatten(1).all(dim=1).numpy()
        return self.accept_base | ~is_base, (~is_base).astype(float)


def _base(net):
    """The unperturbed render, as `emc2.score` renders it."""
    return emc2.perturbed_images(net, CFG.res, [], [], 0, "cpu", torch.float64)[0]


def test_a_judge_that_rejects_the_base_image_gives_zero_whatever_it_says_of_the_perturbations():
    net = _net()
    (res,) = emc2.score(net, [BaseJudge(_base(net))], "thing", CFG)
    t = res.table
    assert t.shown.all()  # every perturbed image was accepted …
    assert res.base_kept is False and res.base_score == 0  # … but not the unperturbed one
    assert not t.verdict.any() and np.array_equal(res.scores, np.zeros(len(CFG.deltas)))
    assert res.auc == 0 and res.to_json()["base_kept"] is False
    assert not res.verdict_matrix().any()
    _, s, auc = emc2.summarise(t)
    assert not s.any() and auc == 0


def test_the_same_judge_accepting_the_base_image_keeps_every_perturbation():
    net = _net()
    (res,) = emc2.score(net, [BaseJudge(_base(net), accept_base=True)], "thing", CFG)
    assert res.base_kept is True and res.table.verdict.all()
    assert np.array_equal(res.scores, np.ones(len(CFG.deltas))) and res.auc == 1.0
    assert res.verdict_matrix().all() and res.verdict_matrix().shape == (res.n_params, len(CFG.deltas))


def test_several_judges_keep_their_own_base_rule():
    """Scored at once, a judge that rejects the base and one that accepts it keep their own verdicts."""
    net = _net()
    no, yes = emc2.score(net, [BaseJudge(_base(net)), BaseJudge(_base(net), accept_base=True)], "x", CFG)
    assert (no.base_kept, yes.base_kept) == (False, True)
    assert no.auc == 0 and yes.auc == 1 and no.table.shown.all() and yes.table.shown.all()


def test_the_perturbed_images_are_rendered_once_for_every_judge(monkeypatch):
    """`score` renders each perturbed image once and hands the same batches to every judge (the
    steps `render`, `judge_images`, `tabulate`), so adding a judge costs no rendering."""
    calls, seen = [], []
    real = scoring.perturbed_images

    def counting(net, res, params, deltas, *a, **kw):
        calls.append(len(params))
        return real(net, res, params, deltas, *a, **kw)

    class Recording(BaseJudge):
        def _judge(self, images, label):
            seen.append((id(self), len(images)))
            return super()._judge(images, label)

    monkeypatch.setattr(scoring, "perturbed_images", counting)
    net = _net()
    a, b = Recording(_base(net)), Recording(_base(net), accept_base=True)
    ra, rb = emc2.score(net, [a, b], "x", CFG)
    assert len(calls) == 1 and calls[0] == ra.n_params * len(CFG.deltas)  # one render of every perturbation
    per_judge = {k: sum(n for i, n in seen if i == k) for k in (id(a), id(b))}
    assert per_judge == {id(a): 1 + len(ra.table), id(b): 1 + len(rb.table)}  # the base, then every image
    assert ra.table.drop(columns=["shown", "verdict", "score"]).equals(
        rb.table.drop(columns=["shown", "verdict", "score"])
    )


def test_the_auc_is_the_normalised_trapezoid_over_the_sorted_deltas():
    assert emc2.normalised_auc([-1, 0, 1], [0, 1, 0]) == pytest.approx(0.5)
    assert emc2.normalised_auc([1, -1, 0], [1, 0, 0]) == pytest.approx(0.25)
    assert emc2.normalised_auc([2.0], [0.25]) == 0.25


def _flat_net():
    """A network whose last hidden kernel is zero: it draws one flat colour."""
    net = CoordMLP("3;gaussian:4", seed=0)
    with torch.no_grad():
        net.weights[-2].zero_()
        net.set_mask(len(net.weights) - 2, torch.zeros_like(net.masks[-2]))
    return net


def test_the_default_judge_accepts_the_target_itself_and_refuses_a_flat_and_a_nan_image():
    """The real anchored rule on `image:camera` (a label the verdicts cover: its own threshold): the
    target passes, a flat grey square and an all-NaN image do not."""
    anchor = target_anchor("image:camera", 32)
    judge = judges.make_judge(judges.DEFAULT_JUDGE, anchor, "image:camera")
    assert judge.name == judges.DEFAULT_JUDGE == "anchored-v2"
    v = judge(torch.stack([anchor, torch.full_like(anchor, 0.5), torch.full_like(anchor, float("nan"))]), "camera")
    assert v.verdicts.tolist() == [True, False, False]
    assert v.settings["label_fitted"] is True and v.scores[0] >= v.settings["thresholds"]["camera"]


@pytest.mark.parametrize("image", ["flat", "nan"])
def test_the_default_judge_scores_a_flat_or_nan_network_zero_on_a_built_in_target(image):
    net = _flat_net()
    if image == "nan":
        with torch.no_grad():
            net = CoordMLP("3;gaussian:4", seed=0)
            net.weights[-1][0, 0, 0] = float("nan")
    default = judges.DEFAULT_JUDGE
    r = emc2.score(net, emc2.judges_for(net, [default], "image:camera", ANCHORED_CFG), "camera", ANCHORED_CFG)[0]
    assert r.judge == default == "anchored-v2"
    assert r.anchor == "target" and r.measure == "compositional"
    assert r.base_kept is False and not r.table.verdict.any()
    assert np.array_equal(r.scores, np.zeros(len(ANCHORED_CFG.deltas))) and r.auc == 0
    if image == "nan":
        assert np.isnan(r.base_score)


@pytest.mark.parametrize("other", ["image:coffee", "image:astronaut", "planted:3"])
def test_the_default_judge_refuses_another_targets_image(other):
    """Built-in targets only: the camera's judge refuses another target's image."""
    anchor = target_anchor("image:camera", 32)
    judge = judges.make_judge(judges.DEFAULT_JUDGE, anchor, "image:camera")
    v = judge(target_anchor(other, 32)[None], "camera")
    assert v.verdicts.tolist() == [False] and v.scores[0] < v.settings["thresholds"]["camera"]


def test_the_default_judge_scores_a_network_that_draws_something_else_zero():
    """A random network draws no camera: its unperturbed image is refused, so every S is 0."""
    net = CoordMLP("3;gaussian:4,sin:4", seed=3, init_scale=2.0)
    r = by_name(net, "image:camera", ANCHORED_CFG)
    assert r.base_kept is False and r.auc == 0 and not r.table.verdict.any()
    assert r.base_score < r.judge_settings["thresholds"]["camera"]


class LabelJudge(judges.Judge):
    """Accepts every image; records the labels it is asked about (a judge with known verdicts)."""

    name = "label-stub"

    def __init__(self):
        self.labels = []

    def settings(self):
        return {"stub": 1}

    def _judge(self, images, label):
        self.labels.append(label)
        return np.ones(len(images), bool), np.full(len(images), 0.5)


def test_the_score_table_holds_each_weight_its_delta_and_the_judges_question():
    net = _net()
    judge = LabelJudge()
    params = [[2, 0, 1], [0, 1, 0]]  # unsorted, as given
    res = score_one(net, judge, "thing", CFG, params=np.asarray(params).ravel().tolist())
    assert set(judge.labels) == {"thing"} and res.judge_settings == {"stub": 1}
    assert res.n_params == 2 and res.n_nonzero == len(emc2.nonzero_params(net, 0))
    t = res.table
    assert t[["layer", "row", "col"]].drop_duplicates().values.tolist() == params
    W = [w.detach()[0].double().numpy() for w in net.effective_weights()]
    assert t.weight.tolist() == [W[l][r, c] for l, r, c in t[["layer", "row", "col"]].values]
    assert t.delta.tolist() == sorted(CFG.deltas) * 2 and res.deltas.tolist() == sorted(CFG.deltas)
    assert res.config["deltas"] == sorted(CFG.deltas) and res.config["res"] == CFG.res
    assert res.measure == "compositional" and res.anchor == "label"
    single = score_one(net, LabelJudge(), "thing", CFG, params=[params[0]])  # a single parameter is enough
    assert single.n_params == 1 and single.auc == 1.0


def test_the_score_refuses_what_it_cannot_score():
    net = _net()
    with pytest.raises(VolratioError, match="^score needs at least one judge"):
        emc2.score(net, [], "x", CFG)
    for deltas in [(), (float("nan"),), (1.0, float("inf"))]:
        with pytest.raises(VolratioError, match="deltas must be finite numbers"):
            score_one(net, LabelJudge(), "x", emc2.EMC2Config(deltas=deltas, res=12, device="cpu"))
    with pytest.raises(VolratioError, match="^the network has no non-zero parameters to perturb$"):
        score_one(net, LabelJudge(), "x", CFG, params=np.zeros((0, 3), int))


def test_the_verdict_matrix_sorts_weights_and_keeps_the_delta_order():
    import pandas as pd

    table = pd.DataFrame(
        {"layer": [1, 1, 0, 0], "row": [0, 0, 2, 2], "col": [0, 0, 1, 1], "delta": [-1.0, 1.0, -1.0, 1.0],
         "verdict": [True, False, False, True]}
    )  # fmt: skip
    r = emc2.EMC2Result(np.array([-1.0, 1.0]), np.array([0.5, 0.5]), 0.5, 2, 4, "j", {}, table, base_score=0.75)
    m = r.verdict_matrix()
    assert m.dtype == np.uint8 and m.tolist() == [[0, 1], [1, 0]]  # layer 0 first; columns in δ order
    assert r.auc_se() == pytest.approx(0.0)  # both weights have AUC ½
    j = r.to_json()
    assert (
        j["base_kept"] is True
        and j["base_score"] == 0.75
        and j["n_nonzero"] == 4
        and j["n_params"] == 2
        and j["config"] == {}
    )
    assert set(j) == {"judge", "anchor", "measure", "base_kept", "base_score", "judge_settings", "deltas", "scores",
                      "auc", "n_params", "n_nonzero", "config"}  # fmt: skip


def test_the_auc_standard_error_is_the_finite_population_corrected_spread():
    import pandas as pd

    per = [[1, 1], [0, 0], [1, 0]]  # three weights: AUC 1, 0, ½
    rows = [(0, i, 0, d, v) for i, vs in enumerate(per) for d, v in zip((-1.0, 1.0), vs)]
    table = pd.DataFrame(rows, columns=["layer", "row", "col", "delta", "verdict"])
    for N in (3, 10):
        r = emc2.EMC2Result(np.array([-1.0, 1.0]), np.zeros(2), 0.5, 3, N, "j", {}, table)
        expected = np.std([1, 0, 0.5], ddof=1) / np.sqrt(3) * np.sqrt((N - 3) / (N - 1))
        assert r.auc_se() == pytest.approx(expected)
    two = emc2.EMC2Result(np.array([-1.0, 1.0]), np.zeros(2), 0.5, 2, 10, "j", {}, table[table.row < 2])
    assert two.auc_se() == pytest.approx(np.std([1, 0], ddof=1) / np.sqrt(2) * np.sqrt(8 / 9))
    single = emc2.EMC2Result(np.array([-1.0, 1.0]), np.zeros(2), 0.5, 1, 5, "j", {}, table[table.row == 0])
    assert single.auc_se() == 0.0


def test_summarise_filters_parameters_and_re_thresholds_at_the_boundary():
    net = _net()
    res = score_one(net, LabelJudge(), "thing", CFG)  # every score is 0.5
    keep = res.table[["layer", "row", "col"]].drop_duplicates().values[:2].tolist()
    d, s, auc = emc2.summarise(res.table, params=keep, threshold=0.5)  # score ≥ threshold counts
    assert d.tolist() == sorted(CFG.deltas) and s.tolist() == [1.0] * len(CFG.deltas) and auc == 1.0
    assert emc2.summarise(res.table, threshold=0.51)[1].tolist() == [0.0] * len(CFG.deltas)


@pytest.mark.parametrize(
    "spec, label",
    [("picbreeder:skull", "skull"), ("image:camera", "camera"), ("image:a:b", "a:b"), ("planted:3", "planted:3"),
     ("image:", "image:"), ("scene:picbreeder:skull+image:coffee", "scene:picbreeder:skull+image:coffee")],
)  # fmt: skip
def test_target_label(spec, label):
    assert emc2.target_label(spec) == label


def test_scoring_by_name_passes_its_anchor_and_label_and_matches_several_judges_at_once():
    net = _net()
    cfg = emc2.EMC2Config(deltas=(-0.5, 0.5), res=32, max_params=6, seed=0, device="cpu")
    base = emc2.perturbed_images(net, cfg.res, [], [], 0, "cpu", torch.float64)[0]
    own = by_name(net, "image:camera", cfg, anchor=base)  # anchored on its own render
    assert own.base_kept is True and own.base_score > own.judge_settings["thresholds"]["camera"]
    camera = by_name(net, "image:camera", cfg)
    assert camera.base_kept is False and camera.judge_settings["label_fitted"] is True  # asked about "camera"
    assert by_name(net, "image:camera", cfg, label="nobody").judge_settings["label_fitted"] is False
    names = ["anchored", "stability"]
    both = dict(zip(names, emc2.score(net, emc2.judges_for(net, names, "image:camera", cfg), "camera", cfg)))
    assert both["stability"].measure == "stability" and both["stability"].anchor == "own image"
    for name, r in both.items():
        alone = by_name(net, "image:camera", cfg, judge=name)
        assert r.judge == name and r.base_kept == alone.base_kept and r.auc == alone.auc
        assert np.array_equal(r.scores, alone.scores) and r.judge_settings == alone.judge_settings


class Bar:
    """Stands in for tqdm: records how the progress bar was made and how far it went."""

    made = []

    def __init__(self, **kw):
        self.kw, self.n, self.closed = kw, 0, False
        Bar.made.append(self)

    def update(self, n):
        self.n += n

    def close(self):
        self.closed = True


def test_the_progress_bar_counts_every_perturbed_image_and_is_off_unless_asked(monkeypatch):
    from volratio.emc2 import scoring

    monkeypatch.setattr(scoring, "tqdm", Bar)
    net = _net()
    Bar.made = []
    score_one(net, LabelJudge(), "x", CFG)
    emc2.score(net, [LabelJudge(), LabelJudge()], "x", CFG)
    by_name(net, "image:camera", ANCHORED_CFG)
    assert Bar.made == []  # no bar unless asked
    r = score_one(net, LabelJudge(), "x", CFG, progress=True)
    by_name(net, "image:camera", ANCHORED_CFG, progress=True)
    first, second = Bar.made
    total = r.n_params * len(CFG.deltas)
    assert first.kw == {"total": total, "desc": "EMC2", "unit": "img", "leave": False, "disable": None}
    assert first.n == total and first.closed and second.n == second.kw["total"] == 40 * len(ANCHORED_CFG.deltas)


def test_scoring_by_name_scores_the_parameters_it_is_given():
    net = _net()
    r = by_name(net, "image:camera", ANCHORED_CFG, params=[[0, 0, 0], [1, 2, 0]])
    assert r.n_params == 2 and r.table[["layer", "row", "col"]].drop_duplicates().values.tolist() == [
        [0, 0, 0],
        [1, 2, 0],
    ]


def test_the_score_takes_the_member_and_the_subsample_seed_of_its_config():
    net = CoordMLP("3;gaussian:3,sin:2", population=2, seed=1, dtype=torch.float64, init_scale=1.5)
    with torch.no_grad():
        net.set_mask(0, torch.cat([net.masks[0][:1], torch.zeros_like(net.masks[0][1:])]))  # member 1: no first layer
    one = emc2.EMC2Config(deltas=(0.5,), res=12, device="cpu", member=1)
    r = score_one(net, LabelJudge(), "x", one)
    assert r.n_nonzero == len(emc2.nonzero_params(net, 1)) < len(emc2.nonzero_params(net, 0))
    assert (r.table.layer > 0).all()
    W = net.effective_weights()[1].detach()[1]
    assert [W[i, j].item() for i, j in r.table.loc[r.table.layer == 1, ["row", "col"]].values] == r.table.weight[
        r.table.layer == 1
    ].tolist()
    picks = [
        score_one(net, LabelJudge(), "x", emc2.EMC2Config(deltas=(0.5,), res=12, device="cpu", max_params=5, seed=s))
        .table[["layer", "row", "col"]]
        .values.tolist()
        for s in (0, 1)
    ]
    assert picks[0] != picks[1]  # the subsample follows the config's seed
