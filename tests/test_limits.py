"""Config limits: a sweep refuses a config outside its allowed values when it is parsed, before any run."""

from dataclasses import dataclass, field
from pathlib import Path

import pytest

from volratio.errors import VolratioError
from volratio.experiments import ExperimentError, get_run
from volratio.runs import reference
from volratio.util.limits import LimitError, above, at_least, between, check_limits, nonzero, one_of

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
        ("emc2_dense", {"dense_steps": 0}, "dense_steps = 0"),
        ("connectivity", {"scale": "quick", "dense_steps": -5}, "dense_steps = -5"),
        ("connectivity", {"scale": "quick", "sp.tau": 2.0}, "tau"),
    ],
)
def test_every_run_function_refuses_a_bad_value_when_parsed(run, config, entry):
    with pytest.raises(ExperimentError, match=entry.replace("(", r"\(").replace(")", r"\)")):
        get_run(run).parse(config)


def test_every_stored_reference_config_is_within_its_limits():
    n = 0
    for chunk in sorted(p.name for p in ROOT.iterdir() if (p / "results.parquet").exists()):
        for r in reference.records(chunk, root=ROOT):
            name = r["run"].split(":")[-1] if r["run"].startswith("volratio.experiments:") else r["run"]
            get_run(name).parse(r["config"])  # raises if a stored config no longer parses
            n += 1
    assert n > 300
