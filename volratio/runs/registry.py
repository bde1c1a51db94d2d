"""The registry of what can be run by name: the chapter experiments and the run functions of sweeps.

The command line (`volratio run NAME --scale S --set k=v`), sweep specs (`run = "NAME"` in a `.toml`)
and the book name what they run; this module maps the names to code:

- `EXPERIMENTS`: chapter experiments (whole runs: a `Config` and `run`), `module(name)` their
  modules, `make_config` and `run` a preset with overrides and its run;
- *run functions* for sweeps (`get_run(name)` → `RunFunction`): `fn(config: dict) -> dict` of
  metrics and artifacts, with a `parse(config) -> Config` that validates one run's config before
  anything runs. Every chapter experiment is a run function too (its config: `scale` plus
  overrides of that preset).

A spec can only name what is registered here, or what a user registers in code with
`register_run(name, fn, parse)`; the library never imports a module named in a config file.
A run is keyed by its run function's name and its *complete* config (`RunFunction.keyed`: every
entry of the parsed config, today's defaults where a spec gives none): the store key hashes exactly
what the run computes (`volratio.runs.store.config_key`), so changing a default makes new keys and a
store never hands back a run made under other defaults.

The registry sits in the runs layer, below the experiments (`tests/test_architecture.py`): it names
the experiment modules by their module paths (under `volratio.experiments`) and imports each with
`importlib` on first use, never with an import statement. That is the one place where the runs
layer refers to the experiments, by name. Its errors are `ConfigError`s (`volratio.util.presets`):
an unknown name, a run function that cannot be registered, a parse that gives no config to complete.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import importlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from ..util.presets import ConfigError, complete, preset

EXPERIMENTS_PACKAGE = "volratio.experiments"  # where the chapter experiments' modules live

# name -> module (under EXPERIMENTS_PACKAGE) of each chapter experiment, in book order
EXPERIMENTS = {
    "twins": "twins",  # Picbreeder networks and their SGD twins
    "emc2_bench": "emc2_bench",  # EMC2-Bench: Picbreeder vs dense SGD vs SP
    "sparse_regime": "sparse_regime",  # SP's sparsity–fit frontier from an over-parameterised start
    "depth_regime": "depth_regime",  # EMC2 score vs depth, sweet spot, PNG-ratio predictor
    "optimizers": "optimizers",  # Adam vs Muon vs SGD at the sweet spot
    "unknown_targets": "unknown_targets",  # natural images and a scene against its parts
    "volume_ratio": "volume_ratio",  # ρ(W, L): Boolean model and basin model
    "frames": "frames",  # low-coherence frames against the Welch bound
    "superposition": "superposition_toy",  # the superposition toy model
    "interference": "interference",  # learned features (Picbreeder, dense, SP) against the Welch bound
}


@dataclass(frozen=True)
class RunFunction:
    """A function a sweep can run: `fn(config dict) -> dict`, validated by `parse(config dict)`, keyed
    and stored with its complete config (`keyed`)."""

    name: str  # the name a spec uses; hashed into store keys and recorded in the store's `run` column
    fn: Callable[[dict], dict]
    parse: Callable[[dict], Any]  # raises ConfigError (a VolratioError) for a bad config
    complete_fn: Callable[[Any], dict] = complete  # parsed config → complete config
    reads_store: bool = False  # fn reads stored networks: called as fn(config, root=ROOT) (`reading_store`)

    def reading_store(self, root: "str | Path") -> Callable[[dict], dict]:
        """The function to run: `fn` itself, or for a run function that reads stored networks (the
        score stage's, a population scored from its chunk) `fn` with the folder of the chunks it reads
        bound (`root=`). A partial of a module-level function, so worker processes receive the
        root with the function, not from their environment."""
        return functools.partial(self.fn, root=Path(root)) if self.reads_store else self.fn

    def keyed(self, config: dict) -> dict:
        """The config a run is keyed, run and stored with: every entry (from `parse`, today's defaults
        where `config` has none)."""
        return self.complete_fn(self.parse(copy.deepcopy(config)))


# name -> (module, function[, completion]) of the built-in run functions. `module` is a module under
# EXPERIMENTS_PACKAGE or a full module path, and `parse_<function>` of it validates; `completion` (a
# function of the module) turns a parsed config into the complete one where `complete` cannot (default).
# The run functions of READS_STORE read stored networks from the chunks under a root they are given.
_BUILTIN_RUNS = {
    "train": ("training", "train", "complete_train"),
    "toy": ("toy", "toy"),
    "depth_point": ("volratio.depth.point", "point", "complete_point"),
    "sparse_depth_point": ("volratio.depth.sparse_point", "sparse_point", "complete_sparse_point"),  # the sparse regime
    "optimizer_point": ("optimizers", "point", "complete_point"),
    "sparse_optimizer_point": ("optimizers", "sparse_point", "complete_sparse_point"),  # … in the sparse regime
    "emc2_point": ("emc2_bench", "point"),
    "emc2_dense": ("emc2_bench", "dense_point"),
    "rescore": ("volratio.runs.score", "point"),  # the score stage: stored networks under a reading
    "fit_budget": ("fit_budget", "point", "complete_point"),  # MSE against steps
    "twin_point": ("twins", "point"),  # one network of the sixteen-target comparison
}

READS_STORE = frozenset({"rescore"})

_USER_RUNS: dict[str, RunFunction] = {}


def module(name: str):
    """The module of experiment `name` (`ConfigError` listing the known ones otherwise)."""
    if name not in EXPERIMENTS:
        raise ConfigError(f"unknown experiment {name!r}; known: {', '.join(EXPERIMENTS)}")
    return importlib.import_module(f"{EXPERIMENTS_PACKAGE}.{EXPERIMENTS[name]}")


def run_names() -> list[str]:
    return [*_BUILTIN_RUNS, *EXPERIMENTS, *_USER_RUNS]


def get_run(name: str) -> RunFunction:
    """The run function a sweep spec names; `ConfigError` naming the choices when there is none."""
    if name in _USER_RUNS:
        return _USER_RUNS[name]
    if name in _BUILTIN_RUNS:
        mod, fn, *completion = _BUILTIN_RUNS[name]
        m = importlib.import_module(mod if mod.startswith("volratio.") else f"{EXPERIMENTS_PACKAGE}.{mod}")
        extra = {"complete_fn": getattr(m, completion[0])} if completion else {}
        extra["reads_store"] = name in READS_STORE
        return RunFunction(name, getattr(m, fn), getattr(m, f"parse_{fn}"), **extra)
    if name in EXPERIMENTS:
        return RunFunction(name, _WholeRun(name), _WholeParse(name))
    raise ConfigError(
        f"unknown run {name!r}; a sweep runs one of {', '.join(run_names())} "
        "(or a function registered in code with volratio.runs.registry.register_run)"
    )


def stored_config(record: dict):
    """The parsed config of a stored run (a store row with `run` and `config`)."""
    return get_run(record["run"]).parse(copy.deepcopy(dict(record["config"])))


def known_run(name: str) -> bool:
    return name in set(run_names())


def register_run(name: str, fn: Callable[[dict], dict], parse: Callable[[dict], Any] | None = None) -> RunFunction:
    """Make `fn(config) -> dict` runnable by sweeps as `run = name`. `parse(config)` validates a
    config before any run starts and returns it parsed (a config dataclass, or a dict; default: the
    config as given): what it returns, completed, is what a run is keyed and stored with. On local
    processes and Dask the function is sent by reference, so it must be importable there (a module,
    not a notebook cell). When `fn`'s results change for the same config, register it under a new
    name: a store holds the runs of the old one under the old name."""
    if not isinstance(name, str) or not name.replace("_", "").replace("-", "").isalnum():
        raise ConfigError(f"run name {name!r}: use letters, digits, '_' or '-'")
    if name in _BUILTIN_RUNS or name in EXPERIMENTS:
        raise ConfigError(f"run name {name!r} is taken by the library; choose another")
    entry = RunFunction(name, fn, parse or _as_given)
    _USER_RUNS[name] = entry
    return entry


def _as_given(config: dict) -> dict:
    return config


def unregister_run(name: str) -> None:
    _USER_RUNS.pop(name, None)


def make_config(name: str, scale: str = "quick", overrides: dict | None = None):
    """`Config.<scale>()` of experiment `name` with `overrides` (validated)."""
    return preset(module(name).Config, scale, **(overrides or {}))


def run(name: str, scale: str = "quick", overrides: dict | None = None, **kw):
    """Run experiment `name` at `scale` with `overrides` (what `volratio run` does): its `Result`."""
    return module(name).run(make_config(name, scale, overrides), **kw)


class _WholeParse:
    """A chapter experiment as a sweep run: its config is `scale` (default quick) plus overrides,
    `seed` included."""

    def __init__(self, name: str):
        self.name = name

    def __call__(self, config: dict):
        over = dict(config)
        if "seed" in over and "seed" not in {f.name for f in dataclasses.fields(module(self.name).Config)}:
            raise ConfigError(
                f"{self.name} has no `seed` (it seeds its own runs, `seeds` of them), so a sweep cannot run it: "
                f"run it with `volratio run {self.name}`, or sweep the run function of its points"
            )
        return make_config(self.name, over.pop("scale", "quick"), over)


class _WholeRun:
    def __init__(self, name: str):
        self.name = name

    def __call__(self, config: dict) -> dict:
        cfg = _WholeParse(self.name)(config)
        res = module(self.name).run(cfg)
        frame = res.to_frame()
        if "judge" not in res.table:  # a run's rows: its table with experiment and scale (its judge is its config's)
            frame = frame.drop(columns="judge")
        out = {"rows": frame.to_dict("records"), "seconds_run": res.seconds, "versions": res.versions}
        if getattr(cfg, "keep_nets", False):  # the trained populations as artifacts `net_<name>` (safetensors)
            out.update({f"net_{artifact_name(name)}": net.to("cpu") for name, net in res.extras["nets"].items()})
        return out


def artifact_name(key) -> str:
    """The artifact name of an experiment's `nets` key: a string as it is, a tuple's parts joined by
    "_", with "." read as "p" (sparse_regime's `("sp", "0.75")` → `sp_0p75`)."""
    text = "_".join(map(str, key)) if isinstance(key, tuple) else str(key)
    return text.replace(".", "p")
