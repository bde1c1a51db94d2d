"""Config limits: a sweep refuses a config outside its allowed values when it is parsed, before any run."""

from dataclasses import dataclass, field
from pathlib import Path

import pytest

from volratio.errors import VolratioError
from volratio.runs import stored
from volratio.runs.registry import get_run
from volratio.util.limits import LimitError, above, at_least, between, check_limits, nonzero, one_of
from volratio.util.presets import ConfigError

ROOT = Path(__file__).resolve().parents[1] / "results" / "reference"


@dataclass
class Inner:
    tau: float = 0.5
    LIMITS = {"tau": between(0, 1, open_lo=True)}

    def check(self):
        if self.tau == 0.25:
            raise VolratioError("a quarter is not allowed")


@dataclass
class Outer:
    steps: int = 10
    deltas: tuple = (-1.0, 1.0)
    cap: int | None = None
    inner: Inner = field(default_factory=Inner)
    LIMITS = {"steps": at_least(1), "deltas": nonzero(), "cap": at_least(1)}


def test_limits_in_words_and_values():
    assert above(0).allows(1e-9) and not above(0).allows(0) and not at_least(1).allows(float("nan"))
    assert not at_least(1).allows(True)  # a bool is not a count
    assert one_of("adam", "sgd").allows("sgd") and not one_of("adam").allows("Adam")
    assert between(0, 1, open_lo=True).text() == "a finite number > 0 and ≤ 1"


def test_check_limits_names_the_entry_nested_configs_and_own_checks():
    check_limits(Outer())  # defaults pass; None passes where a field allows it
    with pytest.raises(LimitError, match=r"run\.steps = 0: must be a finite number ≥ 1"):
        check_limits(Outer(steps=0), "run")
    with pytest.raises(LimitError, match=r"deltas = \(0.0, 1.0\).*other than 0 \(each entry\)"):
        check_limits(Outer(deltas=(0.0, 1.0)))
    with pytest.raises(LimitError, match=r"config\.inner\.tau = 1.5"):
        check_limits(Outer(inner=Inner(tau=1.5)))
    with pytest.raises(LimitError, match="config.inner: a quarter is not allowed"):
        check_limits(Outer(inner=Inner(tau=0.25)))


@pytest.mark.parametrize(
    "run, config, entry",
    [
        ("depth_point", {"target": "planted:1:depth=2", "depth": 2, "steps": -5}, "steps = -5"),
        ("depth_point", {"target": "planted:1:depth=2", "depth": 0}, "depth = 0"),
        ("depth_point", {"judge": "nosuch"}, "judge = 'nosuch'"),
        ("optimizer_point", {"lr": -1}, "lr = -1.0"),
        ("optimizer_point", {"hessian_iters": 0}, "hessian_iters = 0"),
        ("emc2_point", {"max_params": -3}, "max_params = -3"),
        ("emc2_dense", {"train.steps": -1}, "steps = -1"),
        ("sparse_regime", {"scale": "quick", "dense_steps": -5}, "dense_steps = -5"),
        ("sparse_regime", {"scale": "quick", "sp.tau": 2.0}, "tau"),
    ],
)
def test_every_run_function_refuses_a_bad_value_when_parsed(run, config, entry):
    with pytest.raises(ConfigError, match=entry.replace("(", r"\(").replace(")", r"\)")):
        get_run(run).parse(config)


def test_every_stored_reference_config_is_within_its_limits():
    n = 0
    for chunk in sorted(p.name for p in ROOT.iterdir() if (p / "results.parquet").exists()):
        for r in stored.records(chunk, root=ROOT):
            name = r["run"].split(":")[-1] if r["run"].startswith("volratio.experiments:") else r["run"]
            get_run(name).parse(r["config"])  # raises if a stored config no longer parses
            n += 1
    assert n > 300


# ---------------------------------------------------------------------------------------------
# Every run a sweep can name validates its whole config before the first run

# a valid config of each built-in run function (the experiments: `scale` alone)
_SOURCE = {"chunk": "depth_picbreeder", "key": "abc", "run": "depth_point", "net_sha256": "x"}
VALID = {
    "train": {"target": "planted:0", "res": 8},
    "toy": {"n": 4},
    "depth_point": {"target": "planted:0", "depth": 2},
    "sparse_depth_point": {"target": "planted:0", "depth": 2},
    "optimizer_point": {"target": "planted:0", "depth": 2},
    "sparse_optimizer_point": {"target": "planted:0", "depth": 2},
    "emc2_point": {"target": "skull"},
    "emc2_dense": {"scale": "quick"},
    "rescore": {"source": _SOURCE, "target": "planted:0", "emc2": {"res": 8}},
    "fit_budget": {"target": "planted:0", "depth": 2},
    "twin_point": {"target": "skull"},
}
# what the generated values below cannot reach: entries whose configs are plain dicts (rescore's
# `emc2`) and values that are bad for one entry only
EXTRA_BAD = {
    "rescore": [("members", 0), ("seed", -5), ("judge", "nosuch"), ("emc2", {"res": -5}), ("emc2", {"deltas": [0.0]})],
    "depth_point": [("judge", "nosuch"), ("deltas", [0.0, 1.0])],
    "train": [("optimizer", "adamm"), ("activation", "nosuch")],
    "frames": [("also", [[0, 2]])],
    "volume_ratio": [("basin.interval", "nosuch")],
}


def _run_names():
    from volratio.runs.registry import _BUILTIN_RUNS, EXPERIMENTS

    return [*_BUILTIN_RUNS, *EXPERIMENTS]


def _config_class(name):
    """The dataclass a run function parses its config into."""
    import importlib

    from volratio.runs.registry import _BUILTIN_RUNS, EXPERIMENTS, module

    if name in EXPERIMENTS:
        return module(name).Config
    mod, _fn, *_ = _BUILTIN_RUNS[name]
    m = importlib.import_module(mod if mod.startswith("volratio.") else f"volratio.experiments.{mod}")
    return getattr(m, "SparsePoint", None) or getattr(m, "Point", None) or m.Config


def _bad_values(cls, prefix=""):
    """`(entry, value)` for every number of `cls` and of the configs nested in it: NaN for a float,
    -5 for an integer (every count, size and seed of the library is ≥ 0)."""
    import dataclasses
    import typing

    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        if f.default is not dataclasses.MISSING:
            default = f.default
        elif f.default_factory is not dataclasses.MISSING:
            default = f.default_factory()
        else:
            default = None
        kinds = typing.get_args(hints[f.name]) or (hints[f.name],)
        if dataclasses.is_dataclass(default):
            yield from _bad_values(type(default), f"{prefix}{f.name}.")
        elif bool in kinds:
            continue
        elif float in kinds:
            yield f"{prefix}{f.name}", float("nan")
        elif int in kinds:
            yield f"{prefix}{f.name}", -5


def _bad_cases(name):
    from volratio.train import TrainConfig

    cases = list(_bad_values(_config_class(name))) if name != "rescore" else []
    if name == "train":  # its TrainConfig entries sit at the top level of a spec
        cases = [(k, v) for k, v in cases if not k.startswith("train.")] + list(_bad_values(TrainConfig))
    return cases + EXTRA_BAD.get(name, [])


def test_every_run_function_has_a_valid_config_here():
    from volratio.runs.registry import EXPERIMENTS

    assert set(VALID) | set(EXPERIMENTS) == set(_run_names())
    for name in _run_names():
        get_run(name).parse(VALID.get(name, {"scale": "quick"}))  # the valid configs parse


@pytest.mark.parametrize("name", _run_names())
def test_every_entry_of_every_run_function_is_checked_when_parsed(name):
    """NaN in every float, -5 in every integer (nested configs included) and the values of
    `EXTRA_BAD`: each is refused by the run function's `parse`, which a sweep calls on every config
    before its first run, with an error that names the entry."""
    valid = VALID.get(name, {"scale": "quick"})
    cases = _bad_cases(name)
    assert cases, f"{name}: no bad values generated"
    accepted = []
    for entry, value in cases:
        try:
            get_run(name).parse({**valid, entry: value})
        except VolratioError as e:
            assert entry.split(".")[-1] in str(e), f"{name}: the error for {entry} = {value!r} does not name it: {e}"
        else:
            accepted.append(f"{entry} = {value!r}")
    assert not accepted, f"{name} accepts {', '.join(accepted)}; give the entry a limit (LIMITS)"


@pytest.mark.parametrize("name", _run_names())
def test_a_sweep_refuses_a_bad_config_before_its_first_run(name, tmp_path):
    """A sweep whose second run has one bad entry (the first bad value of `_bad_cases` that a sweep
    may set: `seed` is the sweep's) stops before anything runs: no store is written. An experiment
    without a `seed` (it runs a sweep of its own) is refused as a sweep's run function, by name."""
    import dataclasses

    from volratio.runs.registry import EXPERIMENTS, module
    from volratio.runs.sweep import Sweep, SweepSpecError, run_sweep

    valid = VALID.get(name, {"scale": "quick"})
    if name in EXPERIMENTS and "seed" not in {f.name for f in dataclasses.fields(module(name).Config)}:
        with pytest.raises(SweepSpecError, match=f"run 1 of 1.*{name} has no `seed`.*volratio run {name}"):
            run_sweep(Sweep(run=name, config=valid), tmp_path / "store")
        assert not (tmp_path / "store").exists()
        return
    entry, value = next((k, v) for k, v in _bad_cases(name) if k != "seed")
    config = {k: v for k, v in valid.items() if k != entry}
    good = {entry: valid[entry]} if entry in valid else {}
    with pytest.raises(SweepSpecError, match=f"run 2 of 2.*{entry.split('.')[-1]}"):
        run_sweep(Sweep(run=name, config=config, cases=[good, {entry: value}]), tmp_path / "store")
    assert not (tmp_path / "store").exists()


def test_a_spec_file_with_steps_minus_5_is_refused_before_its_first_run(tmp_path):
    from volratio.cli import main

    spec = tmp_path / "bad.toml"
    spec.write_text(
        'run = "depth_point"\nseeds = [0]\n[config]\ntarget = "planted:0"\n[grid]\ndepth = [2]\nsteps = [10, -5]\n'
    )
    assert main(["sweep", str(spec), "--out", str(tmp_path / "store"), "--no-progress"]) == 2
    assert not (tmp_path / "store").exists()
