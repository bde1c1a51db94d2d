"""Every entry of a sweep's config is checked when the spec is read, before the first run: a target
spec, a judge name, a device, an architecture and every number, each refused with the one line the
command line gives for the same value."""

from __future__ import annotations

import argparse
from dataclasses import dataclass

import pytest

from volratio.cli import main
from volratio.commands import _args as A
from volratio.data.targets import get_target
from volratio.experiments import sparse_regime
from volratio.judges import JUDGES
from volratio.nets import Arch
from volratio.rho.boolean import get_boolean_target
from volratio.runs import registry
from volratio.runs.sweep import Sweep, SweepSpecError
from volratio.util.device import device_name
from volratio.util.limits import LimitError, at_least, check_limits, parsed_by
from volratio.util.presets import ConfigError


def _error_of(fn, value) -> str:
    with pytest.raises(Exception) as e:
        fn(value)
    return str(e.value)


def _spec(tmp_path, run: str, entries: str) -> str:
    path = tmp_path / "spec.toml"
    path.write_text(f'run = "{run}"\nseeds = 1\n[config]\n{entries}\n')
    return str(path)


@pytest.mark.parametrize(
    "run, entry, value, parser",
    [
        ("depth_point", "target", "planted:abc", get_target),
        ("depth_point", "target", "picbreeder:nope", get_target),
        ("depth_point", "target", "skull", get_target),
        ("optimizer_point", "target", "scene:picbreeder:skull", get_target),
        ("train", "target", "planted:1:depth=x", get_target),
        ("train", "arch", "3;bogus:4", Arch.parse),
        ("depth_point", "device", "gpu", device_name),
        ("emc2_point", "device", "cuda:x", device_name),
    ],
)
def test_a_spec_with_a_refused_value_fails_when_read_with_the_parsers_line(tmp_path, run, entry, value, parser):
    why = _error_of(parser, value)
    with pytest.raises(SweepSpecError) as e:
        Sweep.from_file(_spec(tmp_path, run, f'{entry} = "{value}"'))
    msg = str(e.value)
    assert "\n" not in msg and msg.endswith(f"{run}.{entry} = {value!r}: {why}")


def test_the_cli_refuses_the_spec_in_one_line_before_any_run(tmp_path, capsys):
    out = tmp_path / "out"
    rc = main(["sweep", _spec(tmp_path, "depth_point", 'target = "planted:abc"\nsteps = 2'), "--out", str(out)])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and len(err.splitlines()) == 1
    assert err.endswith(_error_of(get_target, "planted:abc"))
    assert not (out / "results.parquet").exists()  # nothing ran


def test_the_device_line_is_the_one_the_cli_gives():
    # the command line's --device refuses an unknown name with the same line a config gets
    with pytest.raises(argparse.ArgumentTypeError) as cli:
        A.device("gpu")
    assert str(cli.value) == _error_of(device_name, "gpu")
    # a device this machine lacks is still a device name: a sweep's runs may execute elsewhere
    assert device_name("cuda:3") == "cuda:3" and device_name("auto") == "auto"


@pytest.mark.parametrize(
    "run, entries, words",
    [
        ("depth_point", 'judge = "nope"', f"must be one of {', '.join(JUDGES)}"),
        ("depth_point", "steps = -5", "depth_point.steps = -5: must be a finite number ≥ 1"),
        ("depth_point", 'targets = ["planted:1"]', "unknown entry 'targets'"),  # a run has one target
        ("twin_point", 'judges = ["anchored", "nope"]', f"give one or more of {', '.join(JUDGES)}"),
        ("emc2_point", 'target = "coif"', "target='coif'"),
    ],
)
def test_other_refused_entries_fail_when_read(tmp_path, run, entries, words):
    with pytest.raises(SweepSpecError, match="run 1 of 1") as e:
        Sweep.from_file(_spec(tmp_path, run, entries))
    assert words in str(e.value)


def test_a_grid_value_is_checked_too(tmp_path):
    path = tmp_path / "grid.toml"
    path.write_text('run = "depth_point"\nseeds = 1\n[grid]\ntarget = ["planted:1", "planted:x"]\n')
    with pytest.raises(SweepSpecError, match=r"run 2 of 2 .*planted target 'planted:x'"):
        Sweep.from_file(path)


@pytest.mark.parametrize(
    "name, overrides, why",
    [
        ("depth_regime", {"targets": ("planted:1", "planted:abc")}, _error_of(get_target, "planted:abc")),
        ("unknown_targets", {"scene": "scene:image:camera"}, _error_of(get_target, "scene:image:camera")),
        ("unknown_targets", {"parts": ("image:nope",)}, _error_of(get_target, "image:nope")),
        ("volume_ratio", {"targets": ("chain:x",)}, _error_of(get_boolean_target, "chain:x")),
        ("volume_ratio", {"basin_target": "planted:-1"}, _error_of(get_target, "planted:-1")),
        ("interference", {"dense_arch": "x"}, _error_of(Arch.parse, "x")),
        ("sparse_regime", {"arch": "6;nope:3", "scratch": False}, _error_of(Arch.parse, "6;nope:3")),
        ("sparse_regime", {"device": "gpu"}, _error_of(device_name, "gpu")),
        ("optimizers", {"cases": ({"optimizer": "adamx"},)}, "cases[0].optimizer = 'adamx'"),
        ("optimizers", {"cases": ({"nope": 1},)}, "cases[0]: unknown entry 'nope'"),
        ("emc2_bench", {"targets": ("coif",)}, "must be one of skull, butterfly, apple"),
    ],
)
def test_an_experiment_config_is_checked_when_made(name, overrides, why):
    with pytest.raises(ConfigError) as e:
        registry.make_config(name, "quick", overrides)
    assert why in str(e.value)


def test_the_allowed_special_values_pass():
    assert sparse_regime.Config.quick(arch="picbreeder", scratch=False).arch == "picbreeder"
    for name in registry.EXPERIMENTS:  # every preset of every experiment passes its own checks
        for scale in ("quick", "reference", "full"):
            registry.make_config(name, scale)


def test_a_parsed_limit_reports_the_parsers_line():
    @dataclass
    class C:
        target: str = "planted:0"
        n: int = 1
        LIMITS = {"target": parsed_by(get_target), "n": at_least(1)}

    check_limits(C())
    with pytest.raises(LimitError) as e:
        check_limits(C(target="planted:abc"), "c")
    assert str(e.value) == f"c.target = 'planted:abc': {_error_of(get_target, 'planted:abc')}"
    assert not parsed_by(get_target).allows("nope") and parsed_by(get_target).allows("image:camera")
