"""EMC2-Bench: the engine against re-rendering from scratch, the score, sweeps, judges, the CLI."""

import argparse
import json

import numpy as np
import pandas as pd
import pytest
import torch
from fake_models import FakeProcessor, FakeVLM, tiny_clip

from volratio import emc2, judges
from volratio.errors import VolratioError
from volratio.nets import CoordMLP
from volratio.report import plots
from volratio.util.limits import LimitError, check_limits

ARCH = "4;gaussian:3,sin:2,sigmoid:1,identity:2"


def by_name(net, spec: str, cfg, judge: str = "anchored", **kw):
    """EMC2 of `net` under the judge named `judge`, asked about the label of the target `spec`."""
    return emc2.score(net, emc2.judges_for(net, [judge], spec, cfg), emc2.target_label(spec), cfg, **kw)[0]


def _net(sparse: bool, dtype=torch.float64, seed=1, head="hsv"):
    net = CoordMLP(ARCH, head=head, seed=seed, dtype=dtype, init_scale=1.5)
    if sparse:
        g = torch.Generator().manual_seed(seed + 10)
        for i, w in enumerate(net.weights):
            net.set_mask(i, (torch.rand(w.shape[1:], generator=g) < 0.35).float())
    return net


def _naive(net, P, D, res):
    return torch.stack([emc2.naive_render(net, p, d, res) for p, d in zip(P, D)]).double()


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("head,merge_below", [("hsv", 1), ("hsv", 10**6), ("grey", 4)])
def test_engine_equals_rerendering_every_layer(sparse, head, merge_below):
    # merge_below=1: one batch per target unit; 10**6: one batch per kernel (union of cones)
    net = _net(sparse, head=head)
    P = np.repeat(emc2.nonzero_params(net), 2, axis=0)
    assert set(P[:, 0]) == set(range(net.n_kernels))  # first, hidden and last kernels all perturbed
    D = np.linspace(-2, 2, len(P))
    eng = emc2.PerturbationEngine(
        net, 20, device="cpu", dtype=torch.float64, memory_bytes=200_000, merge_below=merge_below
    )
    got = eng.render(P, D).double()
    err = (got - _naive(net, P, D, 20)).abs().max().item()
    assert err <= 1e-6
    assert (eng.base.double() - net.render(20)[0].detach().double()).abs().max() <= 1e-12


def test_engine_float32_and_memory_cap_do_not_change_images():
    net = _net(False, dtype=torch.float32)
    P = emc2.nonzero_params(net)[::3]
    D = np.full(len(P), 0.7)
    a = emc2.PerturbationEngine(net, 16, device="cpu", dtype=torch.float32, memory_bytes=50_000).render(P, D)
    b = emc2.PerturbationEngine(net, 16, device="cpu", dtype=torch.float32, memory_bytes=2**30).render(P, D)
    assert torch.equal(a, b)  # chunking never changes a number
    assert (a.double() - _naive(net, P, D, 16)).abs().max() <= 1e-5


def test_compaction_drops_dead_units_and_keeps_their_images_exact():
    net = _net(False)
    with torch.no_grad():  # unit 2 of hidden layer 2 loses its outgoing weights: it is dead
        m = net.masks[2][0].clone()
        m[2, :] = 0
        net.set_mask(2, m)
    eng = emc2.PerturbationEngine(net, 12, device="cpu")
    assert eng.width_kept[1] == net.width - 1
    P = np.array([[1, 0, 2], [1, 3, 2], [2, 0, 1], [4, 5, 0]])  # two weights into the dead unit
    D = np.array([1.5, -2.0, 1.0, 0.5])
    got = eng.render(P, D)
    assert torch.equal(got[0], eng.base) and torch.equal(got[1], eng.base)
    assert (got.double() - _naive(net, P, D, 12)).abs().max() <= 1e-6


def test_engine_rejects_masked_and_out_of_range_weights():
    net = _net(True)
    ew = net.effective_weights()[1][0]
    r, c = [int(v) for v in torch.nonzero(ew == 0)[0]]
    eng = emc2.PerturbationEngine(net, 8, device="cpu")
    with pytest.raises(emc2.PerturbationError, match="masked"):
        eng.render([[1, r, c]], [1.0])
    with pytest.raises(emc2.PerturbationError, match="masked"):
        emc2.naive_render(net, (1, r, c), 1.0, 8)
    with pytest.raises(emc2.PerturbationError, match="outside"):
        eng.render([[9, 0, 0]], [1.0])


class DistanceJudge(judges.Judge):
    """Kept ⇔ RMS distance to the reference below `tol` (a judge with a known answer)."""

    name = "distance"

    def __init__(self, ref, tol):
        self.ref, self.tol = ref, tol

    def settings(self):
        return {"tol": self.tol}

    def _judge(self, images, label):
        d = ((judges.as_images(images) - self.ref.double()) ** 2).mean(dim=(1, 2, 3)).sqrt().numpy()
        return d < self.tol, d


def test_score_is_the_fraction_of_kept_perturbations_per_delta():
    net = _net(True)
    cfg = emc2.EMC2Config(deltas=(-1.0, 0.5, 2.0), res=12, device="cpu")
    eng = emc2.PerturbationEngine(net, 12, device="cpu")
    res = emc2.score(net, [DistanceJudge(eng.base, 0.05)], "thing", cfg)[0]
    t = res.table
    assert list(t.columns[:9]) == ["layer", "row", "col", "weight", "delta", "shown", "verdict", "score", "distance"]
    assert len(t) == 3 * len(emc2.nonzero_params(net)) and res.n_params == res.n_nonzero
    assert np.allclose(t["score"], t["distance"])
    for d, s in zip(res.deltas, res.scores):
        assert s == pytest.approx((t[t.delta == d].distance < 0.05).mean())
    assert res.judge == "distance" and res.judge_settings["tol"] == 0.05
    assert res.auc == pytest.approx(emc2.normalised_auc(res.deltas, res.scores))
    d, sc, auc = emc2.summarise(t)
    assert np.array_equal(d, res.deltas) and np.allclose(sc, res.scores) and auc == res.auc
    sub = emc2.nonzero_params(net)[:5]
    _, sc5, _ = emc2.summarise(t, params=sub, threshold=0.01)
    rows5 = t.merge(pd.DataFrame(sub, columns=["layer", "row", "col"]))
    assert len(rows5) == 5 * 3
    assert np.allclose(sc5, (rows5.score >= 0.01).groupby(rows5.delta).mean().to_numpy())
    # bigger perturbations move the image further
    assert t[t.delta.abs() == 2].distance.mean() > t[t.delta.abs() == 0.5].distance.mean()


def test_normalised_auc_and_subsample():
    assert emc2.normalised_auc([-1, 1], [1, 1]) == 1.0
    assert emc2.normalised_auc([1, -1, 0], [0, 0, 1]) == pytest.approx(0.5)
    P = np.arange(30).reshape(10, 3)
    a, b = emc2.subsample(P, 4, seed=3), emc2.subsample(P, 4, seed=3)
    assert np.array_equal(a, b) and len(a) == 4 and np.all(np.diff(a[:, 0]) > 0)


def test_weight_sweep_rows_columns_and_control():
    net = _net(True, dtype=torch.float32)
    P = emc2.pick_params(net, 3, "effect", res=12, device="cpu")
    sw = emc2.weight_sweep(net, P, offsets=(-1, 0, 1), res=12, controls=1, device="cpu")
    assert sw.images.shape == (4, 3, 12, 12, 3) and len(sw.labels) == 4
    base = net.render(12)[0].detach().numpy()
    assert np.allclose(sw.images[:, 1], base, atol=1e-6)  # Δw = 0 is the network itself
    assert not np.allclose(sw.images[0, 0], base)
    fig = plots.draw_weight_sweep(sw)
    assert len(fig.axes) == 12


def test_picbreeder_genome_and_cache_parameters(picbreeder_dir):
    from volratio.data import picbreeder

    lay = picbreeder.layerize("skull")
    allp = emc2.params_of(lay.net, "all")
    gen = emc2.params_of(lay.net, "genome", lay)
    cache = emc2.cache_params(lay)
    assert (len(allp), len(gen), len(cache)) == (147, lay.n_genome_weights, lay.n_cache_weights) == (147, 57, 90)
    W = [w.detach() for w in lay.net.effective_weights()]
    assert all(float(W[i][0, r, c]) == 1.0 for i, r, c in cache.tolist())
    with pytest.raises(VolratioError, match="layerize"):
        emc2.params_of(lay.net, "genome")
    # the engine on the Picbreeder skull equals re-rendering (a sample of every kernel)
    P = np.concatenate([allp[allp[:, 0] == k][:2] for k in range(lay.net.n_kernels)])
    D = np.linspace(-2, 2, len(P))
    eng = emc2.PerturbationEngine(lay.net, 24, device="cpu", dtype=torch.float64)
    assert (eng.render(P, D).double() - _naive(lay.net.double(), P, D, 24)).abs().max() <= 1e-6


# ---------------------------------------------------------------------------------------------
# judges


def test_batched_ssim_equals_skimage():
    from skimage.metrics import structural_similarity

    g = torch.Generator().manual_seed(0)
    ref = torch.rand(17, 17, 3, generator=g, dtype=torch.float64)
    imgs = (ref + 0.2 * torch.randn(4, 17, 17, 3, generator=g, dtype=torch.float64)).clamp(0, 1)
    want = [structural_similarity(i.numpy(), ref.numpy(), data_range=1.0, channel_axis=-1) for i in imgs]
    assert np.allclose(judges.ssim(imgs, ref), want, atol=1e-10)
    assert judges.ssim(ref, ref)[0] == pytest.approx(1.0)


def test_ms_ssim_equals_torchmetrics():
    """The anchored judges' multi-scale SSIM (two 1-D window passes) is torchmetrics' to rounding,
    on images that share their reference and images that do not, at the judges' size and at half
    it; an image under 24×24 (where the third scale is narrower than its window) is a clear error."""
    tm = pytest.importorskip("torchmetrics.functional.image")
    from volratio.judges.similarity import MS_SSIM_BETAS, ms_ssim

    g = torch.Generator().manual_seed(1)
    betas = tuple(b / sum(MS_SSIM_BETAS) for b in MS_SSIM_BETAS)
    for size in (64, 32):
        ref = torch.rand(5, size, size, 3, generator=g, dtype=torch.float64)
        imgs = (ref + 0.3 * torch.randn(5, size, size, 3, generator=g, dtype=torch.float64)).clamp(0, 1)
        imgs[0] = ref[0]  # identical: 1
        imgs[1] = 0.5  # flat
        want = tm.multiscale_structural_similarity_index_measure(
            imgs.permute(0, 3, 1, 2), ref.permute(0, 3, 1, 2), kernel_size=7, betas=betas, data_range=1.0,
            reduction="none", normalize="relu",
        )  # fmt: skip
        got = ms_ssim(imgs, ref)
        assert np.allclose(got, want.numpy(), atol=1e-12, rtol=0) and got[0] == pytest.approx(1.0)
    with pytest.raises(judges.JudgeError, match="at least 24×24"):
        ms_ssim(imgs[:, :16, :16], ref[:, :16, :16])


def test_threshold_choice_and_roc():
    pos, neg = np.array([0.6, 0.7, 0.9]), np.array([0.1, 0.2, 0.5])
    t = judges.choose_threshold(pos, neg)
    assert 0.5 < t < 0.6
    fpr, tpr, th, auc = judges.roc(pos, neg)
    assert auc == 1.0 and fpr[0] == tpr[0] == 0 and fpr[-1] == tpr[-1] == 1
    assert np.all(np.diff(fpr) >= 0) and np.all(np.diff(tpr) >= 0)
    _, _, _, auc2 = judges.roc(np.array([0.1, 0.2]), np.array([0.8, 0.9]))
    assert auc2 == 0.0


def test_ssim_calibration_separates_edits_from_other_images():
    net = CoordMLP("5;gaussian:4,sin:2,sigmoid:2", seed=7, init_scale=2.0)
    ref = net.render(32)[0].detach()
    negs = {**judges.random_cppn_images(32, n=6, seed=1), **judges.noise_images(32, n=2)}
    cal = judges.calibrate(ref, negatives=negs)
    assert set(cal.positive) == set(judges.identity_edits(ref))
    j = judges.SSIMJudge(ref, cal.threshold, cal)
    v = j(torch.stack([ref, torch.rand(32, 32, 3)]), "pattern")
    assert v.verdicts.tolist() == [True, False] and v.judge == "ssim"
    assert v.settings["threshold"] == cal.threshold and v.settings["label"] == "pattern"
    assert v.settings["calibration"]["roc_auc"] == cal.auc


def test_vlm_prompt_parsing_batching_and_cache():
    msgs = judges.vlm_messages("skull")
    assert msgs[0]["content"][0] == {"type": "image"} and "picture of a skull?" in msgs[0]["content"][1]["text"]
    assert judges.parse_answer("<think>maybe no</think>\nYes, it is.") is True
    assert judges.parse_answer("No.") is False
    assert judges.parse_answer("<think>still thinking, yes") is None
    assert judges.parse_answer("I cannot tell") is None
    model, proc = FakeVLM(), FakeProcessor()
    j = judges.VLMJudge(model="fake", model_obj=model, processor_obj=proc, batch_size=2, device="cpu")
    assert proc.tokenizer.padding_side == "left"
    imgs = torch.stack([torch.full((8, 8, 3), v) for v in (0.9, 0.1, 0.9, 0.8)])
    v = j(imgs, "skull")
    assert v.verdicts.tolist() == [True, False, True, True] and v.scores.tolist() == [1.0, 0.0, 1.0, 1.0]
    assert model.calls == 2  # 3 distinct images in batches of 2
    assert "skull" in proc.seen[0][0][0] and proc.seen[0][1][0].size == (224, 224)
    j(imgs, "skull")
    assert model.calls == 2 and j.cache_hits == 4  # the second call comes from the cache
    assert v.judge == "vlm" and v.settings["model"] == "fake" and v.settings["decoding"] == "greedy"


def test_clip_judge_with_a_tiny_random_model(tmp_path):
    folder = tiny_clip(tmp_path)
    j = judges.CLIPJudge(model=str(folder), distractors=("dog", "cat"), image_size=32, device="cpu", batch_size=2)
    assert judges.clip_prompts("skull", ("dog", "skull", "cat")) == [
        "a picture of a skull",
        "a picture of a dog",
        "a picture of a cat",
    ]
    g = torch.Generator().manual_seed(0)
    imgs = torch.rand(3, 16, 16, 3, generator=g)
    v = j(imgs, "skull")
    assert v.verdicts.shape == (3,) and np.all((v.scores > 0) & (v.scores < 1))
    # verdict = the label's prompt wins the softmax over the three prompts
    assert v.judge == "clip" and v.settings["model"] == str(folder) and v.settings["distractors"] == ["dog", "cat"]
    again = j(imgs, "skull")
    assert j.cache_hits == 3 and np.array_equal(again.scores, v.scores)
    jt = judges.CLIPJudge(model=str(folder), distractors=("dog", "cat"), image_size=32, device="cpu", threshold=0.0)
    assert jt(imgs, "skull").verdicts.all()


def test_model_judges_without_weights_say_how_to_provide_them(tmp_path):
    pytest.importorskip("transformers")
    for cls in (judges.CLIPJudge, judges.VLMJudge):
        with pytest.raises(judges.JudgeWeightsMissing, match="hf download") as e:
            cls(model=str(tmp_path / "no-such-model"), device="cpu")
        assert isinstance(e.value, VolratioError) and "--judge calibrated" in str(e.value)


# ---------------------------------------------------------------------------------------------
# command line


def _cli(argv):
    from volratio.commands import emc2 as cmd

    p = argparse.ArgumentParser()
    cmd.register(p.add_subparsers(dest="command"))
    args = p.parse_args(argv)
    return args.func(args)


def test_cli_emc2_json_and_sweep(tmp_path, capsys):
    net = CoordMLP("3;gaussian:4,sin:2", seed=3, init_scale=2.0)
    f = tmp_path / "net.safetensors"
    net.save(f)
    assert (
        _cli(
            [
                "emc2",
                str(f),
                "--target",
                "image:camera",
                "--deltas",
                "-1,0.5,1",
                "--res",
                "16",
                "--max-params",
                "12",
                "--json",
            ]
        )
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    assert {"judge", "deltas", "scores", "auc", "n_params"} <= set(out)
    assert out["judge"] == judges.DEFAULT_JUDGE and out["deltas"] == [-1.0, 0.5, 1.0] and out["n_params"] == 12
    assert out["anchor"] == "target" and isinstance(out["base_kept"], bool) and out["measure"] == "compositional"
    assert len(out["scores"]) == 3 and all(0 <= s <= 1 for s in out["scores"])
    assert "*" in out["judge_settings"]["thresholds"] and out["judge_settings"]["anchor_res"] == 16
    assert (
        _cli(
            ["emc2", str(f), "--target", "image:camera", "--deltas=-0.5", "--res", "16", "--max-params", "3", "--json"]
        )
        == 0
    )
    assert json.loads(capsys.readouterr().out)["deltas"] == [-0.5]
    png = tmp_path / "sweep.png"
    assert _cli(["sweep-weights", str(f), "--out", str(png), "--params", "0:0:1", "1:2:3", "--res", "16"]) == 0
    assert png.read_bytes()[:4] == b"\x89PNG"
    with pytest.raises(VolratioError, match="genome"):
        _cli(["emc2", str(f), "--target", "image:camera", "--which", "genome"])


def test_inplace_activations_match_the_network_bit_for_bit():
    from volratio.nets import ACTIVATIONS

    z = torch.linspace(-6, 6, 1001, dtype=torch.float32)
    for name, f in emc2.engine._INPLACE.items():
        assert torch.equal(f(z.clone()), ACTIVATIONS[name](z)), name


def test_judged_examples_are_the_scored_perturbations(picbreeder_dir):
    from volratio.data import picbreeder

    net = picbreeder.layerized("skull")
    ex = emc2.judged_examples(net, "picbreeder:skull", n=3, deltas=(1.0, -1.0), res=24, seed=2)
    assert ex.images.shape == (2, 3, 24, 24, 3) and ex.kept.shape == (2, 3) and ex.judge == judges.DEFAULT_JUDGE
    assert list(ex.deltas) == [-1.0, 1.0] and ex.base_kept  # sorted δ; the layerized skull draws a skull
    cfg = emc2.EMC2Config(deltas=(-1.0, 1.0), res=24, device="cpu")
    t = by_name(net, "picbreeder:skull", cfg, params=ex.params).table
    for i, d in enumerate(ex.deltas):
        for j, (k, r, c) in enumerate(ex.params.tolist()):
            row = t[(t.delta == d) & (t.layer == k) & (t.row == r) & (t.col == c)]
            assert bool(row.verdict.iloc[0]) == bool(ex.kept[i, j])
            img = emc2.naive_render(net, (k, r, c), d, 24).float().numpy().clip(0, 1)
            assert np.allclose(ex.images[i, j], img, atol=1e-5)
    assert np.allclose(ex.base, net.render(24)[0].detach().float().numpy().clip(0, 1), atol=1e-5)


def test_several_judges_at_once_equal_each_judge_alone(picbreeder_dir):
    from volratio.data import picbreeder

    net = picbreeder.layerized("apple")
    cfg = emc2.EMC2Config(deltas=(-1.0, 0.5), res=16, max_params=12, device="cpu")
    names = ["anchored", "anchored-ssim", "stability"]
    many = emc2.score(net, emc2.judges_for(net, names, "picbreeder:apple", cfg), "apple", cfg)
    assert [r.judge for r in many] == names
    for j, r in zip(names, many):
        alone = by_name(net, "picbreeder:apple", cfg, judge=j)
        assert r.judge == alone.judge and r.base_kept == alone.base_kept and r.auc == alone.auc
        assert r.table.equals(alone.table)
    with pytest.raises(VolratioError, match="at least one judge"):
        emc2.score(net, [], "apple", cfg)


def _layer_std(net, kernel: int) -> float:
    """The std of kernel `kernel`'s non-zero effective weights (their RMS where all are equal),
    computed here from the weights, independently of `volratio.emc2.delta_scale`."""
    w = net.effective_weights()[kernel][0].detach().double()
    nz = w[w != 0]
    sd = float(nz.std(unbiased=False))
    return sd if sd > 0 else float(nz.pow(2).mean().sqrt())


@pytest.mark.parametrize("sparse", [False, True])
def test_layer_std_delta_equals_rerendering_with_the_scaled_step(sparse):
    net = _net(sparse)
    with torch.no_grad():  # one kernel whose weights are all equal: its std is 0, its RMS is used
        net.weights[0].fill_(0.75)
    cfg = emc2.EMC2Config(deltas=(-1.0, 0.5), res=10, device="cpu", delta_scale="layer_std")
    pert = emc2.render(net, cfg)
    want = np.array([d * _layer_std(net, int(p[0])) for p, d in zip(pert.P, pert.D)])
    assert np.allclose(pert.steps, want, rtol=1e-12, atol=0)
    assert _layer_std(net, 0) == pytest.approx(0.75)  # the equal kernel is perturbed by δ × 0.75
    assert not np.allclose(pert.steps, pert.D)  # the scale does change the steps
    got = torch.zeros(len(pert.P), 10, 10, 3, dtype=torch.float64)
    for idx, imgs in pert.images:
        got[torch.as_tensor(idx)] = imgs.double()
    assert (got - _naive(net, pert.P, want, 10)).abs().max().item() <= 1e-6
    res = emc2.score(net, [DistanceJudge(pert.base, 0.05)], "thing", cfg)[0]
    assert np.array_equal(res.table.delta.to_numpy(), pert.D)  # the table keeps the nominal δ
    assert np.allclose(res.table.step.to_numpy(), want, rtol=1e-12, atol=0)
    assert sorted(res.deltas) == [-1.0, 0.5]


def test_absolute_delta_is_the_papers_step_bit_for_bit():
    net = _net(True)
    cfg = emc2.EMC2Config(deltas=(-2.0, 0.25, 1.0), res=12, device="cpu")
    assert cfg.delta_scale == "absolute"
    pert = emc2.render(net, cfg)
    assert pert.steps is pert.D  # w ← w + δ: nothing multiplied
    eng = emc2.PerturbationEngine(net, 12, device="cpu")
    want = eng.render(pert.P, pert.D)
    got = torch.zeros_like(want)
    for idx, imgs in pert.images:
        got[torch.as_tensor(idx)] = imgs
    assert torch.equal(got, want)
    judge = DistanceJudge(eng.base, 0.05)
    a = emc2.score(net, [judge], "thing", cfg)[0]
    b = emc2.score(
        net, [judge], "thing", emc2.EMC2Config(deltas=cfg.deltas, res=12, device="cpu", delta_scale="absolute")
    )[0]
    assert np.array_equal(a.scores, b.scores) and a.auc == b.auc


def test_delta_scale_refuses_an_unknown_reading():
    with pytest.raises(LimitError, match="delta_scale"):
        check_limits(emc2.EMC2Config(delta_scale="relative"), "cfg")
    with pytest.raises(VolratioError, match="delta_scale must be one of absolute, layer_std"):
        emc2.step_sizes(_net(False), emc2.nonzero_params(_net(False)), how="relative")
