"""The family judge ("planted-family", `volratio.judges.family`) and the planted family it fits in
(`volratio.judges.family_fit`): small images (32×32) so that every test runs in seconds."""

import json

import numpy as np
import pytest
import scipy.ndimage
import torch
from PIL import Image

from volratio import emc2, judges
from volratio.cli import main
from volratio.data.graph import Graph
from volratio.data.targets import get_target
from volratio.errors import BudgetError
from volratio.judges.family import FamilyConfig, FamilyJudge
from volratio.judges.family_fit import FORWARD, Family
from volratio.nets import ACTIVATIONS
from volratio.runs import score as score_stage
from volratio.util import budget

RES = 32
SPEC = "planted:3"


@pytest.fixture(scope="module")
def target():
    return get_target(SPEC)


@pytest.fixture(scope="module")
def judge(target):
    """The judge built on the target's own image: the base of a network that draws it exactly."""
    return FamilyJudge(target.image(RES).double(), SPEC)


def moved(target, link: int, delta: float, res: int = RES) -> torch.Tensor:
    """The planted target's image with one link weight moved by `delta` (rendered by the graph itself)."""
    links = list(target.graph.links)
    s, t, w = links[link]
    links[link] = (s, t, w + delta)
    return Graph(target.graph.nodes, links, name="moved").render(res)


def degenerate(target) -> dict:
    """Images that are never the object: flat pages, the target blurred and pixelated, noise, other
    planted targets' images."""
    img = target.image(RES).double()
    blocks = torch.nn.functional.avg_pool2d(img.permute(2, 0, 1)[None], 8)
    noise = torch.rand(RES, RES, 1, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    out = {f"flat {v}": torch.full_like(img, v) for v in (0.0, 0.5, 1.0)}
    out["flat mean"] = torch.full_like(img, float(img.mean()))  # the target's own mean grey
    out["blurred"] = torch.from_numpy(scipy.ndimage.gaussian_filter(img.numpy(), (2, 2, 0)))
    out["pixelated"] = torch.nn.functional.interpolate(blocks, scale_factor=8, mode="nearest")[0].permute(1, 2, 0)
    out["noise"] = noise.expand(-1, -1, 3)
    for other in ("planted:4", "planted:5", "planted:13:depth=3,width=3"):
        out[other] = get_target(other).image(RES).double()
    return out


def test_the_family_draws_the_planted_graph_and_its_jacobian_is_the_derivative(target):
    fam = Family(target.graph, RES, 0.25)
    assert torch.allclose(fam.draw(fam.theta0[None])[0], target.graph.render(RES)[..., 0].reshape(-1), atol=1e-12)
    z = torch.linspace(-3, 3, 101, dtype=torch.float64)
    assert torch.allclose(FORWARD["gaussian"](z), ACTIVATIONS["gaussian"](z), atol=1e-14)
    J = fam.jacobian(fam.theta0)
    eps = 1e-6
    for i in (0, 7, fam.n - 1):
        th = fam.theta0.clone()
        th[i] += eps
        fd = (fam.draw(th[None])[0] - fam.draw(fam.theta0[None])[0]) / eps
        assert torch.allclose(fd, J[:, i], atol=1e-4)


def test_the_box_keeps_every_sign_and_a_share_of_every_magnitude(target):
    fam = Family(target.graph, RES, 0.25)
    p = fam.project(torch.cat([torch.zeros(1, fam.n), -fam.theta0[None], 3 * fam.theta0[None]]).double())
    assert (torch.sign(p) == torch.sign(fam.theta0)).all()
    assert (p.abs() >= 0.25 * fam.theta0.abs() - 1e-12).all()
    assert torch.equal(p[2], 3 * fam.theta0)  # inside the box: unchanged


def test_the_fit_recovers_a_small_link_move_and_stays_in_the_box(target):
    fam = Family(target.graph, RES, 0.25)
    th = fam.theta0.clone()
    th[4] += 0.15
    theta, cost = fam.fit(fam.draw(th[None])[0], fam.theta0)
    assert cost < 1e-12
    assert torch.equal(fam.project(theta), theta)
    # a flat page is not in the box: the fit stays far from it
    _, cost = fam.fit(torch.zeros(RES * RES, dtype=torch.float64), fam.theta0)
    assert (cost / RES**2) ** 0.5 > 0.1


def test_it_keeps_the_target_and_small_moves_of_its_link_weights(target, judge):
    assert judge.base_in_family and judge.base_misfit < 1e-6
    imgs = torch.stack([target.image(RES).double(), moved(target, 0, 0.1), moved(target, 9, -0.1)])
    v = judge(imgs, "planted")
    assert v.verdicts.tolist() == [True, True, True]
    assert v.judge == "planted-family" and v.settings["target"] == target.spec
    assert (v.scores > 0.8).all()


@pytest.mark.parametrize("name", ["flat 0.0", "flat 0.5", "flat mean", "flat 1.0", "blurred", "pixelated",
                                  "noise", "planted:4", "planted:5", "planted:13:depth=3,width=3"])  # fmt: skip
def test_degenerate_images_are_never_kept(target, judge, name):
    v = judge(degenerate(target)[name][None], "planted")
    assert not v.verdicts[0], (name, v.scores)


def test_a_sign_flip_or_the_output_cut_off_is_not_the_object(target, judge):
    w = target.graph.links[5][2]
    flipped = moved(target, 5, -2 * w)
    cut = [(s, t, 0.0 if t == "out" else w) for s, t, w in target.graph.links]  # zero the output node's links
    flat = Graph(target.graph.nodes, cut, name="cut").render(RES)
    share, _ = judge.shares(torch.stack([flipped, flat]))
    assert (share > judge.cfg.tolerance).all()
    assert not judge(torch.stack([flipped, flat]), "planted").verdicts.any()


def test_the_base_misfit_is_not_held_against_a_perturbation(target):
    img = target.image(RES).double()
    misfit = 0.03 * torch.sin(torch.arange(RES * RES, dtype=torch.float64) * 0.7).reshape(RES, RES, 1)
    base = (img + misfit).clamp(0, 1)  # a network that draws the target, not exactly
    j = FamilyJudge(base, SPEC)
    assert j.base_in_family and 0.01 < j.base_misfit < j.cfg.tolerance
    change = moved(target, 2, 0.1) - img  # a family move, added to the network's own drawing
    assert j(base + change, "planted").verdicts[0]
    assert not j(torch.full_like(base, 0.5), "planted").verdicts[0]


def test_a_network_that_never_drew_its_target_keeps_nothing(target):
    for base in (torch.full((RES, RES, 3), 0.5, dtype=torch.float64), get_target("planted:4").image(RES).double()):
        j = FamilyJudge(base, SPEC)
        assert not j.base_in_family
        assert not j(torch.stack([base, target.image(RES).double()]), "planted").verdicts.any()


def test_it_refuses_other_targets_an_anchor_image_and_another_size(target):
    img = target.image(RES).double()
    for spec in ("picbreeder:skull", "image:camera", None):
        with pytest.raises(judges.JudgeError, match="needs a planted target") as e:
            judges.make_judge("planted-family", img, spec)
        assert "\n" not in str(e.value)
    with pytest.raises(judges.JudgeError, match="not on an image"):
        judges.make_judge("planted-family", img, SPEC, anchor=img)
    j = judges.make_judge("planted-family", img, SPEC)
    assert isinstance(j, FamilyJudge) and judges.anchor_of(j) == "target"
    with pytest.raises(judges.JudgeError, match="one size"):
        j(get_target(SPEC).image(RES * 2), "planted")
    with pytest.raises(judges.JudgeError, match="tolerance"):
        FamilyConfig(tolerance=0.0)


def test_the_same_images_give_the_same_numbers(target):
    imgs = torch.stack([moved(target, 3, 0.5), moved(target, 11, -1.0), target.image(RES).double()])
    a = FamilyJudge(target.image(RES).double(), SPEC)(imgs, "p")
    b = FamilyJudge(target.image(RES).double(), SPEC)(imgs, "p")
    assert np.array_equal(a.scores, b.scores) and np.array_equal(a.verdicts, b.verdicts)


def test_emc2_scores_the_layerized_planted_network_under_the_family_judge(target):
    net = target.graph.layerize(ink_as_hsv=False, dtype=torch.float64).net
    cfg = emc2.EMC2Config(res=RES, deltas=(-0.25, 0.25), device="cpu")
    js = emc2.judges_for(net, ["planted-family"], SPEC, cfg)
    (res,) = emc2.score(net, js, "planted", cfg)
    assert res.base_kept and res.judge == "planted-family" and res.anchor == "target"
    assert res.auc > 0.5  # the planted network's own moves are mostly its family's


def _png(path, img):
    Image.fromarray((img.numpy() * 255).round().astype(np.uint8)).save(path)
    return str(path)


def test_the_judge_command_keeps_the_target_and_a_small_move_and_rejects_flat_and_another_target(
    target, tmp_path, capsys
):
    files = [
        _png(tmp_path / "target.png", target.image(RES).double()),
        _png(tmp_path / "moved.png", moved(target, 0, 0.1)),
        _png(tmp_path / "flat.png", torch.full((RES, RES, 3), 0.5, dtype=torch.float64)),
        _png(tmp_path / "other.png", get_target("planted:4").image(RES).double()),
    ]
    rc = main(["judge", *files, "--target", SPEC, "--judge", "planted-family", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0 and out["judge"] == "planted-family"
    assert [im["kept"] for im in out["images"]] == [True, True, False, False]
    rc = main(["judge", files[0], "--target", "image:camera", "--judge", "planted-family"])
    err = capsys.readouterr().err
    assert rc == 2 and "needs a planted target" in err and len(err.strip().splitlines()) == 1


def test_the_emc2_command_scores_a_saved_planted_network_under_the_family_judge(target, tmp_path, capsys):
    path = target.graph.layerize(ink_as_hsv=False, dtype=torch.float64).net.save(tmp_path / "planted.safetensors")
    argv = ["emc2", str(path), "--target", SPEC, "--judge", "planted-family", "--res", str(RES)]
    rc = main([*argv, "--deltas", "-0.25,0.25", "--max-params", "6", "--device", "cpu", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0 and out["judge"] == "planted-family" and out["base_kept"] and out["auc"] > 0.5
    rc = main([*argv[:3], "picbreeder:skull", *argv[4:], "--deltas", "0.25", "--device", "cpu"])
    assert rc == 2 and "needs a planted target" in capsys.readouterr().err


def test_a_family_too_large_for_the_memory_budget_is_refused_before_any_work(target, monkeypatch):
    monkeypatch.setenv(budget.ENV, "1MB")
    with pytest.raises(BudgetError, match="lower resolution") as e:
        Family(target.graph, 256, 0.25)
    assert "\n" not in str(e.value)
    monkeypatch.setenv(budget.ENV, "64MB")  # a big batch of weight vectors is drawn in chunks, not refused
    fam = Family(target.graph, RES, 0.25)
    many = fam.theta0[None].repeat(3000, 1)
    assert torch.equal(fam.draw(many)[-1], fam.draw(fam.theta0[None])[0])


def test_a_rescore_under_the_family_judge_refuses_a_chunk_of_other_targets_before_reading_a_network():
    src = {"chunk": "c", "key": "k", "run": "depth_point", "net_sha256": "0" * 64}
    cfg = {"source": src, "judge": "planted-family", "emc2": {"res": RES}}
    assert score_stage.parse_point({**cfg, "target": SPEC}).judge == "planted-family"
    with pytest.raises(score_stage.RescoreError, match="needs a planted target"):
        score_stage.parse_point({**cfg, "target": "picbreeder:skull"})
