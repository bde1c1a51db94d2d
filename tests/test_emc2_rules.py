"""The rules the EMC2 score rests on, each pinned by a test that a broken rule fails: a perturbation
counts only when the unperturbed image shows the label (`EMC2Result.base_kept`), the score is the
fraction of kept perturbations per δ and its area the normalised trapezoid; and the default
(label-anchored) judge, its real rule read from the package, refuses a flat image and a NaN image
of a built-in target. No downloaded data is needed."""

import numpy as np
import pytest
import torch

from volratio import emc2, judges
from volratio.judges.anchored import target_anchor
from volratio.nets import CoordMLP

CFG = emc2.EMC2Config(deltas=(-1.0, -0.5, 0.5, 2.0), res=12, device="cpu")
ANCHORED_CFG = emc2.EMC2Config(deltas=emc2.UNIT_DELTAS, res=32, max_params=40, seed=0, device="cpu")


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
    res = emc2.score(net, BaseJudge(_base(net)), "thing", CFG)
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
    res = emc2.score(net, BaseJudge(_base(net), accept_base=True), "thing", CFG)
    assert res.base_kept is True and res.table.verdict.all()
    assert np.array_equal(res.scores, np.ones(len(CFG.deltas))) and res.auc == 1.0
    assert res.verdict_matrix().all() and res.verdict_matrix().shape == (res.n_params, len(CFG.deltas))


def test_several_judges_keep_their_own_base_rule():
    """Scored at once, a judge that rejects the base and one that accepts it keep their own verdicts."""
    net = _net()
    no, yes = emc2.score_judges(net, [BaseJudge(_base(net)), BaseJudge(_base(net), accept_base=True)], "x", CFG)
    assert (no.base_kept, yes.base_kept) == (False, True)
    assert no.auc == 0 and yes.auc == 1 and no.table.shown.all() and yes.table.shown.all()


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
    assert judge.name == "anchored"
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
    r = emc2.score_network(net, "image:camera", ANCHORED_CFG)
    assert r.judge == judges.DEFAULT_JUDGE == "anchored"
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
    r = emc2.score_network(net, "image:camera", ANCHORED_CFG)
    assert r.base_kept is False and r.auc == 0 and not r.table.verdict.any()
    assert r.base_score < r.judge_settings["thresholds"]["camera"]
