"""Every path on a CUDA GPU, and how a plan records the device it ran on.

The tests marked `cuda` need a GPU: they skip, saying so, on a machine without one (run them with
`pytest -m cuda`). They check that the EMC2 engine equals re-rendering on CUDA, that images, training
and pruning agree with or work as on the CPU, that the label-anchored judges computed on the GPU give
the CPU's features (to float64 rounding) and verdicts, and that every chapter experiment runs at its
contract size (`tests/experiment_sizes.py`'s TINY) with its device set to "cuda". The unmarked tests
check, on any machine, the device plumbing those rely on: `--device` of `volratio reference run`, the
stored config and manifest, how a GPU run is re-scored on a CPU, and the judges' device handling.
"""

import dataclasses

import numpy as np
import pytest
import torch
from experiment_sizes import NEEDS_PICBREEDER, TINY

from volratio import emc2
from volratio.data.targets import get_target
from volratio.errors import VolratioError
from volratio.judges import as_images, make_judge
from volratio.judges.anchored_rule import KNOWN_FEATURES, features
from volratio.nets import CoordMLP
from volratio.prune import prune
from volratio.runs import reference as R
from volratio.runs import registry
from volratio.train import TrainConfig, train

cuda = pytest.mark.cuda

# what puts each experiment on CUDA (None: it has no device setting; it computes on the CPU)
ON_CUDA = {
    "twins": {"device": "cuda"},
    "emc2_bench": {"device": "cuda"},
    "sparse_regime": {"device": "cuda"},
    "depth_regime": {"device": "cuda"},
    "optimizers": {"base.device": "cuda"},
    "unknown_targets": {"device": "cuda"},
    "volume_ratio": {"sampler.device": "cuda", "basin.device": "cuda"},
    "frames": None,
    "superposition": {"device": "cuda"},
    "interference": {"train.device": "cuda"},
}


def _sparse_net(seed=3) -> CoordMLP:
    net = CoordMLP("4;gaussian:6,sin:4", head="hsv", seed=seed)
    g = torch.Generator().manual_seed(0)
    for i in range(net.n_kernels):
        net.set_mask(i, (torch.rand(net.masks[i].shape[1:], generator=g) > 0.5).float())
    return net


def _images(n=6, res=32) -> torch.Tensor:
    """Renders of random networks: images with some structure, none of them the target."""
    return torch.cat([CoordMLP("3;gaussian:6,sin:3", head="hsv", seed=s).render(res).double() for s in range(n)])


# ---------------------------------------------------------------------------------------------
# On any machine: the device plumbing


def test_experiments_are_all_given_a_cuda_setting():
    assert set(ON_CUDA) == set(registry.EXPERIMENTS)
    for name, over in ON_CUDA.items():
        keys = set(dataclasses.asdict(registry.make_config(name)))
        flat = {k for k in _flat(dataclasses.asdict(registry.make_config(name)))}
        if over is None:
            assert not any("device" in k for k in flat), f"{name} has a device setting: put it in ON_CUDA"
        else:
            assert set(over) <= flat, f"{name}: {set(over) - flat} are not settings of its config ({sorted(keys)})"


def _flat(d, prefix=""):
    for k, v in d.items():
        if isinstance(v, dict):
            yield from _flat(v, f"{prefix}{k}.")
        else:
            yield f"{prefix}{k}"


def test_as_images_keeps_the_device_only_when_asked():
    x = torch.rand(2, 8, 8, 3, dtype=torch.float32)
    assert as_images(x).device.type == "cpu" and as_images(x).dtype == torch.float64
    assert as_images(x, None).device == x.device


def test_joining_judge_batches_leaves_cpu_batches_as_rendered():
    batches = [(np.array([0, 1]), torch.zeros(2, 8, 8, 3)), (np.array([2]), torch.ones(1, 8, 8, 3))]
    out = list(emc2.scoring.judge_batches(iter(batches), limit_bytes=1 << 40))
    assert len(out) == 2 and all(a[1] is b[1] for a, b in zip(out, batches))


def test_anchored_features_on_the_cpu_are_those_of_the_rule():
    """The features keep their values on the CPU whatever the device handling: one target for the
    batch or one per row, the same numbers."""
    x, t = _images(4), get_target("image:camera").image(32).double()
    one = features(x, t[None].expand(len(x), -1, -1, -1), KNOWN_FEATURES)
    rows = features(x, torch.stack([t.clone() for _ in range(len(x))]), KNOWN_FEATURES)
    for k in KNOWN_FEATURES:
        assert np.array_equal(one[k], rows[k]), k


PLAN = """
[chunks.score]
run = "emc2_point"
seeds = [0]

[chunks.score.config]
res = 16
max_params = 4
deltas = [-1.0, 1.0]

[chunks.score.grid]
network = ["picbreeder"]
target = ["skull"]

[chunks.toy]
run = "toy"
seeds = [0]

[chunks.toy.config]
steps = 5
"""


def test_reference_run_records_the_device_it_resolved(tmp_path, picbreeder_dir):
    plan_file = tmp_path / "plan.toml"
    plan_file.write_text(PLAN)
    plan = R.load_plan(plan_file)
    here = "cuda" if torch.cuda.is_available() else "cpu"
    report = R.run_chunk(plan, "score", tmp_path / "full", progress=False, device="auto")
    assert not report.failed
    from volratio.runs.stored import records

    (rec,) = records("score", tmp_path / "full")
    assert rec["config"]["device"] == here  # "auto" is stored as what it resolved to
    manifest = (tmp_path / "full" / "score" / "manifest.json").read_text()
    assert ('"gpu_s"' in manifest) == (here == "cuda")
    # without --device, a plan's "auto" is stored as what it resolved to as well
    auto = R.on_device(dataclasses.replace(plan["score"], config={**plan["score"].config, "device": "auto"}), None)
    assert auto.configs()[0]["device"] == here
    # the other device's run of the same config is another key
    other = R.on_device(plan["score"], "cpu" if here == "cuda" else "auto")
    if here == "cuda":
        assert other.configs()[0]["device"] == "cpu"
        assert set(other.keys()).isdisjoint(R.on_device(plan["score"], "cuda").keys())


def test_device_of_a_reference_run_is_checked(tmp_path):
    plan_file = tmp_path / "plan.toml"
    plan_file.write_text(PLAN)
    plan = R.load_plan(plan_file)
    with pytest.raises(R.ReferenceError, match="has no device setting"):
        R.on_device(plan["toy"], "cpu")
    assert R.on_device(plan["toy"], None) is plan["toy"]
    if not torch.cuda.is_available():
        with pytest.raises(VolratioError, match="CUDA is not available"):
            R.on_device(plan["score"], "cuda")


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the CPU-only re-scoring of a GPU run")
def test_a_gpu_run_is_rescored_on_the_cpu_where_there_is_no_gpu():
    config = {"device": "cuda", "emc2": {"device": "cuda:0", "res": 8}, "judge": "anchored"}
    assert R.runnable_here(config) == {"device": "cpu", "emc2": {"device": "cpu", "res": 8}, "judge": "anchored"}
    assert R.runnable_here({"device": "cpu"}) == {"device": "cpu"}


def test_a_gpu_run_is_checked_by_its_scores_never_bit_for_bit():
    from volratio.util import machine as M

    here = M.identity()
    record = {"run": "emc2_point", "config": {"device": "cpu"}, "machine": here}
    assert R.comparable(record, here) == "same CPU kind"
    assert R.comparable({**record, "config": {"device": "cuda"}}, here) is None  # even on its own machine
    assert R.score_checkable({**record, "config": {"device": "cuda"}})


def test_reference_run_cli_refuses_a_device_this_machine_lacks(capsys, tmp_path):
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    from volratio.cli import main

    assert main(["reference", "run", "examples/sweeps/full.toml", "--chunk", "emc2", "--device", "cuda"]) != 0
    err = capsys.readouterr().err
    assert "CUDA is not available" in err and "Traceback" not in err
    # the full plan's chunk names cuda itself: refused before any run, with the fix
    out = tmp_path / "full"
    assert main(["reference", "run", "examples/sweeps/full.toml", "--chunk", "emc2", "--out", str(out)]) != 0
    err = capsys.readouterr().err
    assert "CUDA is not available" in err and "--device cpu" in err and "Traceback" not in err
    assert not (out / "emc2").exists()


# ---------------------------------------------------------------------------------------------
# On a GPU


@cuda
@pytest.mark.parametrize("sparse", [False, True])
def test_engine_equals_rerendering_on_cuda(sparse):
    net = (_sparse_net() if sparse else CoordMLP("4;gaussian:6,sin:4", head="hsv", seed=3)).double()
    params = emc2.nonzero_params(net)
    params = params[np.random.default_rng(0).choice(len(params), size=min(40, len(params)), replace=False)]
    deltas = [-1.0, 0.5]
    eng = emc2.PerturbationEngine(net.to("cuda"), res=24, device="cuda", dtype=torch.float64)
    imgs = torch.stack([eng.render(params, d).double().cpu() for d in deltas], 1)  # (P, D, res, res, 3)
    naive = torch.stack([torch.stack([emc2.naive_render(net, p, d, 24).cpu() for d in deltas]) for p in params])
    assert (imgs.reshape(naive.shape) - naive).abs().max().item() <= 1e-9


@cuda
def test_renders_agree_between_cpu_and_cuda():
    pop = CoordMLP("4;gaussian:12", head="grey", population=8, seed=0)
    cpu_img = pop.render(32)
    assert (pop.to("cuda").render(32).cpu() - cpu_img).abs().max().item() < 1e-5


@cuda
@pytest.mark.parametrize("optimizer", ["adam", "muon"])
def test_training_on_cuda_lowers_the_loss(optimizer):
    img = get_target("planted:1").image(32)
    net = CoordMLP("4;gaussian:12", head="grey", population=8, seed=0)
    r = train(net, img, TrainConfig(steps=200, optimizer=optimizer, lr=0.01, device="cuda"))
    assert net.weights[0].is_cuda and r.final_loss.mean() < r.losses[0].mean()


@cuda
def test_wanda_prunes_on_cuda():
    img = get_target("planted:1").image(32)
    net = CoordMLP("4;gaussian:12", head="grey", population=2, seed=0)
    train(net, img, TrainConfig(steps=100, lr=0.01, device="cuda"))
    res = prune(net, img, "wanda", sparsity=0.5)
    assert net.weights[0].is_cuda
    assert all(abs(s - 0.5) < 0.02 for s in res.summary()["sparsity"])


@cuda
def test_anchored_features_and_verdicts_on_cuda_equal_the_cpus():
    """Tolerance: 1e-9 on every feature (float64; the GPU sums in another order), and the same verdicts."""
    x = _images(8)
    t = get_target("image:camera").image(32).double()
    cpu = features(x, t[None].expand(len(x), -1, -1, -1), KNOWN_FEATURES)
    gpu = features(x.cuda(), t.cuda()[None].expand(len(x), -1, -1, -1), KNOWN_FEATURES)
    for k in KNOWN_FEATURES:
        assert np.abs(cpu[k] - gpu[k]).max() <= 1e-9, k
    for name in ("anchored", "anchored-ssim", "anchored-gated", "anchored-xfit", "ssim", "calibrated", "stability"):
        judge = make_judge(name, x[0], "image:camera")
        a, b = judge(x, "camera"), judge(x.cuda(), "camera")
        assert np.array_equal(a.verdicts, b.verdicts) and np.abs(a.scores - b.scores).max() <= 1e-9, name


@cuda
def test_emc2_scores_on_cuda_equal_the_cpus_and_joining_batches_changes_nothing(monkeypatch, picbreeder_dir):
    """The Picbreeder skull (its base image shows the label, so verdicts vary): the same verdicts on
    the GPU as on the CPU, float64, under a label-anchored judge and the stability judge."""
    from volratio.data.specs import load_network

    net = load_network("picbreeder:skull")
    names, label = ["anchored", "stability"], "picbreeder:skull"
    cfg = emc2.EMC2Config(deltas=(-1.0, -0.5, 0.5, 1.0), res=32, dtype="float64", device="cpu")
    cpu = emc2.score(net, emc2.judges_for(net, names, label, cfg), "skull", cfg)
    gcfg = dataclasses.replace(cfg, device="cuda")
    gpu = emc2.score(net, emc2.judges_for(net, names, label, gcfg), "skull", gcfg)
    assert cpu[0].base_kept and 0 < cpu[0].auc < 1  # verdicts of both kinds
    for a, b in zip(cpu, gpu):
        assert np.array_equal(a.verdict_matrix(), b.verdict_matrix()) and abs(a.auc - b.auc) <= 1e-12
    monkeypatch.setattr(emc2.scoring, "JUDGE_BATCH_BYTES", 1)  # every rendered batch judged on its own
    alone = emc2.score(net, emc2.judges_for(net, names[:1], label, gcfg), "skull", gcfg)
    assert np.array_equal(alone[0].verdict_matrix(), gpu[0].verdict_matrix())


def _run_on_cuda(name, tmp_path, request, tiny: bool):
    import inspect

    if ON_CUDA[name] is None:
        pytest.skip(f"{name} has no device setting: it computes on the CPU")
    if name in NEEDS_PICBREEDER:
        request.getfixturevalue("picbreeder_dir")
    overrides = {**(TINY[name][0] if tiny else {}), **ON_CUDA[name]}
    cfg = registry.make_config(name, "quick", overrides)
    run = registry.module(name).run
    kw = {"out": tmp_path / "store"} if "out" in inspect.signature(run).parameters else {}
    res = run(cfg, **kw)
    assert res.experiment == name and len(res.table) > 0


@cuda
@pytest.mark.parametrize("name", list(registry.EXPERIMENTS))
def test_every_experiment_runs_on_cuda_at_its_contract_size(name, tmp_path, request):
    """Each experiment at its contract size (experiment_sizes.TINY), its device set to CUDA: seconds."""
    _run_on_cuda(name, tmp_path, request, tiny=True)


@cuda
@pytest.mark.slow
@pytest.mark.parametrize("name", list(registry.EXPERIMENTS))
def test_every_experiment_runs_its_quick_scale_on_cuda(name, tmp_path, request):
    """Each experiment at its quick scale (what the book executes), its device set to CUDA."""
    _run_on_cuda(name, tmp_path, request, tiny=False)


# ---------------------------------------------------------------------------------------------
# The pilot's GPU seconds and the plan's projection (volratio.runs.gpu_plan), from stored files

PILOT_PLAN = """
[chunks.emc2]
run = "emc2_point"
seeds = [0]

[chunks.emc2.config]
res = 16
max_params = 6
deltas = [-1.0, 1.0]

[chunks.emc2.grid]
network = ["picbreeder"]
target = ["skull", "butterfly"]

[chunks.toy]
run = "toy"
seeds = [0, 1]

[chunks.toy.config]
steps = 5
"""


def test_projection_reads_the_gpu_seconds_of_the_stored_runs(tmp_path, picbreeder_dir):
    """A run's GPU seconds are what its manifest records (`gpu_s`, written by a run on CUDA; set here
    on a CPU run to check the arithmetic); runs without them are projected by the rule of their chunk."""
    import json

    from volratio.runs import gpu_plan

    plan_file = tmp_path / "plan.toml"
    plan_file.write_text(PILOT_PLAN)
    root = tmp_path / "full"
    assert not R.run_chunk(R.load_plan(plan_file), "emc2", root, progress=False).failed
    man_path = root / "emc2" / "manifest.json"
    man = json.loads(man_path.read_text())
    (k1, r1), (k2, _) = man["runs"].items()
    if torch.cuda.is_available():
        man["runs"][k2].pop("gpu_s", None)
    r1["gpu_s"] = 2.0  # the first run "on a GPU"; the second not piloted
    R.write_manifest(man_path, man)
    pilot = gpu_plan.pilot_runs(root)
    assert len(pilot) == 1 and pilot["gpu_s"][0] == 2.0 and pilot["images"][0] == 6 * 2
    proj = gpu_plan.projection(plan_file, root).set_index("chunk")
    row = proj.loc["emc2"]
    assert row["runs"] == 2 and row["piloted"] == 1 and row["piloted_gpu_s"] == 2.0
    # the other run scores 6 weights × 2 δ too: the same GPU seconds per image
    assert row["projected_gpu_h"] == pytest.approx(4.0 / 3600)
    assert np.isnan(proj.loc["toy", "projected_gpu_h"]) and proj.loc["toy", "piloted"] == 0
