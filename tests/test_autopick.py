"""`auto` picks the fastest path (volratio.util.autopick): the choice from given rates, the cache, the
rule mode that stored runs and the suite use, and that an explicit path is never overridden."""

import json

import pytest
import torch
from training_helpers import compiler_missing
from training_helpers import random_target as _target

from volratio import emc2
from volratio import train as train_module
from volratio.emc2 import fused as emc2_fused
from volratio.errors import VolratioError
from volratio.nets import CoordMLP
from volratio.train import TrainConfig, auto_note, fused_kernel, resolve_path, train
from volratio.util import autopick


@pytest.fixture(scope="module")
def kernels(tmp_path_factory):
    """Both kernels built once into a fresh cache folder (skips where no C++ compiler exists)."""
    if compiler_missing():
        pytest.skip(compiler_missing())
    mp = pytest.MonkeyPatch()
    mp.setenv(fused_kernel.ENV_CACHE, str(tmp_path_factory.mktemp("kernels")))
    mp.setattr(fused_kernel, "_loaded", {})
    mp.setattr(emc2_fused, "_loaded", {})
    fused_kernel.load()
    emc2_fused.load()
    yield
    mp.undo()


@pytest.fixture
def fresh(monkeypatch, tmp_path):
    """The calibration measuring (not the suite's rule), with an empty cache file of its own and no memo."""
    monkeypatch.setenv(autopick.ENV, "measure")
    monkeypatch.setattr(autopick, "cache_path", lambda: tmp_path / "volratio" / autopick.CACHE_NAME)
    monkeypatch.setattr(autopick, "_memo", {})
    monkeypatch.setattr(autopick, "_latest", {})
    return tmp_path


needs_kernels = pytest.mark.usefixtures("kernels")


def test_decide_takes_the_fastest_unless_the_rule_is_within_the_margin():
    assert autopick.decide("fused", {"fused": 100.0, "fast": 250.0, "eager": 50.0}) == "fast"
    assert autopick.decide("fused", {"fused": 100.0, "fast": 105.0, "eager": 50.0}) == "fused"  # a near-tie
    assert autopick.decide("fused", {"fused": 300.0, "fast": 100.0}) == "fused"


@needs_kernels
def test_auto_trains_on_the_path_the_calibration_finds_fastest_and_says_so(fresh):
    net, img = CoordMLP("3;gaussian:4", seed=0), _target(8)
    with autopick.injected("train", {"fused": 100.0, "fast": 300.0, "eager": 40.0}):
        assert resolve_path("auto", net) == "fast"
        a = train(CoordMLP("3;gaussian:4", seed=0), img, TrainConfig(steps=3, device="cpu", path="auto"))
        note = auto_note("auto", a.path)
        # an explicit path is never overridden
        assert resolve_path("fused", net) == "fused" and resolve_path("eager", net) == "eager"
        f = train(CoordMLP("3;gaussian:4", seed=0), img, TrainConfig(steps=3, device="cpu", path="fused"))
    b = train(CoordMLP("3;gaussian:4", seed=0), img, TrainConfig(steps=3, device="cpu", path="fast"))
    assert a.path == "fast" and f.path == "fused"
    assert all(torch.equal(x, y) for x, y in zip(a.net.weights, b.net.weights))  # "auto" ran the fast path
    assert note.startswith("auto chose fast for training: ") and "3.0x fused" in note and "7.5x eager" in note
    choice = a.net.provenance["trained"]["path_choice"]  # the stored network records why
    assert choice["path"] == "fast" and choice["rates"]["fast"] == 300.0
    assert "path_choice" not in f.net.provenance["trained"]


@needs_kernels
def test_the_rule_mode_is_the_fused_kernel_without_timing(monkeypatch, fresh):
    monkeypatch.setenv(autopick.ENV, "rule")
    net = CoordMLP("3;gaussian:4", seed=0)
    assert resolve_path("auto", net) == "fused"
    c = autopick.latest("train")
    assert c.how == "rule" and c.rates == {} and "fixed rule" in c.note()
    monkeypatch.setenv(autopick.ENV, "measure")
    with autopick.rule():  # the context manager pins it too (stored runs)
        assert train_module.choose_path("auto", CoordMLP("3;gaussian:4", seed=0))[1].how == "rule"
        b = train(CoordMLP("3;gaussian:4", seed=0), _target(8), TrainConfig(steps=1, device="cpu", path="auto"))
    assert b.path == "fused" and "path_choice" not in b.net.provenance["trained"]  # the bytes of before
    assert not autopick.cache_path().exists()  # nothing was timed


@needs_kernels
def test_a_real_calibration_times_every_path_of_both_tasks(fresh):
    t = train_module.choose_path("auto", CoordMLP("3;gaussian:4", seed=0))[1]
    e = emc2.fused.choose_engine("auto", torch.device("cpu"), torch.float32, 0.05, emc2.engine.timing_steps)[1]
    assert t.how == e.how == "measured"
    assert set(t.rates) == {"fused", "fast", "eager"} and set(e.rates) == {"fused", "torch"}
    assert all(r > 0 for r in [*t.rates.values(), *e.rates.values()])
    assert t.path == autopick.decide("fused", t.rates) and e.task == "emc2-sparse"
    assert fused_kernel.default_variant() in t.note()


def test_a_bad_mode_is_a_clear_error(monkeypatch):
    monkeypatch.setenv(autopick.ENV, "fastest")
    with pytest.raises(VolratioError, match="VOLRATIO_AUTO='fastest'.*'measure'.*'rule'"):
        autopick.mode()


def test_the_calibration_is_timed_once_cached_as_json_and_read_back(fresh):
    calls = []

    def busy(n):  # CPU work (the calibration's clock is CPU time when single-threaded)
        return lambda: sum(i * i for i in range(n))

    def make_steps():
        calls.append(1)
        return {"fused": busy(20_000), "fast": busy(2_000), "eager": busy(80_000)}

    key = {"cpu_model": "test CPU", "variant": "avx2"}
    c = autopick.choose("train", key, make_steps)
    assert c.how == "measured" and c.path == "fast" and c.seconds > 0
    assert c.rates["fast"] > c.rates["fused"] > c.rates["eager"]
    assert autopick.choose("train", key, make_steps).path == "fast" and len(calls) == 1  # memo
    autopick._memo.clear()  # as a new process
    again = autopick.choose("train", key, make_steps)
    assert again.how == "cached" and again.rates == c.rates and len(calls) == 1
    assert "cached in" in again.note() and "test CPU, kernel avx2" in again.note()
    doc = json.loads(autopick.cache_path().read_text())  # plain JSON
    assert len(doc["entries"]) == 1
    other = autopick.choose("train", {**key, "variant": "avx512"}, make_steps)  # another variant: timed anew
    assert other.how == "measured" and len(calls) == 2


def test_the_cache_is_in_the_user_cache_folder(monkeypatch, tmp_path):
    monkeypatch.setattr(autopick.platformdirs, "user_cache_dir", lambda app: str(tmp_path / app))
    assert autopick.cache_path() == tmp_path / "volratio" / "autopick.json"


def test_the_timing_stops_at_its_budget_after_one_round():
    calls = {"a": 0, "b": 0}

    def step(p):
        def run():
            calls[p] += 1
            sum(range(20_000))

        return run

    rates, _ = autopick.time_paths({"a": step("a"), "b": step("b")}, budget_s=0.0)
    assert calls == {"a": 2, "b": 2} and set(rates) == {"a", "b"}  # a warm-up call and one round


def test_a_damaged_cache_is_a_clear_error(fresh):
    path = autopick.cache_path()
    path.parent.mkdir(parents=True)
    path.write_text("{not json")
    with pytest.raises(VolratioError, match="damaged.*delete it"):
        autopick.choose("train", {"cpu_model": "x"}, lambda: {})


@needs_kernels
def test_auto_engine_takes_the_pick_of_the_networks_density(fresh):
    dense = CoordMLP("3;gaussian:6", seed=0)
    masks = [torch.zeros(4, 6), torch.zeros(6, 6), torch.zeros(6, 6), torch.zeros(6, 3)]
    for m in masks:
        m[0, 0] = 1.0
    sparse = CoordMLP("3;gaussian:6", seed=0, masks=masks)
    assert autopick.density(dense) == 1.0 and autopick.density(sparse) < autopick.DENSE_FROM
    kw = dict(device="cpu", dtype=torch.float32)
    with autopick.injected("emc2-dense", {"fused": 10.0, "torch": 30.0}):
        with autopick.injected("emc2-sparse", {"fused": 90.0, "torch": 30.0}):
            d = emc2.PerturbationEngine(dense, 8, engine="auto", **kw)
            s = emc2.PerturbationEngine(sparse, 8, engine="auto", **kw)
            explicit = emc2.PerturbationEngine(dense, 8, engine="fused", **kw)
    assert d.engine_used == "torch" and "auto chose torch for EMC2 (dense networks): 3.0x fused" in d.engine_note
    assert s.engine_used == "fused" and "EMC2 (sparse networks): 3.0x torch" in s.engine_note
    assert explicit.engine_used == "fused" and explicit.engine_note == ""
    params = emc2.nonzero_params(dense)[:5]
    ref = emc2.PerturbationEngine(dense, 8, engine="torch", **kw).render(params, 0.5)
    assert torch.equal(d.render(params, 0.5), ref)  # "auto" ran the torch engine


def test_injected_rates_must_name_known_paths():
    with pytest.raises(VolratioError, match="must name paths"):
        with autopick.injected("train", {"turbo": 1.0}):
            pass


def test_a_forced_kernel_variant_is_checked(monkeypatch):
    best = fused_kernel.cpu_variant()
    monkeypatch.setenv(fused_kernel.ENV_VARIANT, "baseline")
    assert fused_kernel.default_variant() == "baseline"  # every CPU runs the baseline
    monkeypatch.setenv(fused_kernel.ENV_VARIANT, "avx9000")
    with pytest.raises(VolratioError, match="not a kernel variant"):
        fused_kernel.default_variant()
    if best != "avx512":
        monkeypatch.setenv(fused_kernel.ENV_VARIANT, "avx512")
        with pytest.raises(VolratioError, match="runs at most"):
            fused_kernel.default_variant()


@needs_kernels
def test_the_command_line_says_which_path_auto_chose_and_why(fresh, tmp_path, capsys):
    from volratio.cli import main

    args = ["train", "planted:3", "--depth", "3", "--width", "4", "--steps", "2", "--res", "8", "--device", "cpu"]
    with autopick.injected("train", {"fused": 100.0, "fast": 300.0, "eager": 40.0}):
        assert main([*args, "--out", str(tmp_path / "a.safetensors")]) == 0
        out = capsys.readouterr().out
        assert main([*args, "--out", str(tmp_path / "b.safetensors"), "--path", "fused"]) == 0
        explicit = capsys.readouterr().out
    assert "fast path; auto chose fast for training: 7.5x eager, 3.0x fused" in out
    assert "fused path" in explicit and "auto chose" not in explicit


@needs_kernels
def test_the_emc2_command_says_which_engine_auto_chose_and_why(fresh, tmp_path, capsys):
    from volratio.cli import main

    f = tmp_path / "net.safetensors"
    CoordMLP("3;gaussian:4", seed=3).save(f)
    args = ["emc2", str(f), "--target", "image:camera", "--deltas", "-1,1", "--res", "16", "--dtype", "float32"]
    with autopick.injected("emc2-dense", {"fused": 10.0, "torch": 40.0}):
        assert main(args) == 0
        out = capsys.readouterr().out
        assert main([*args, "--engine", "fused"]) == 0
        explicit = capsys.readouterr().out
    assert "(engine torch)" in out and "auto chose torch for EMC2 (dense networks): 4.0x fused" in out
    assert "(engine fused)" in explicit and "auto chose" not in explicit
