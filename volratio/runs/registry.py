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
Store keys hash a run function's `key` — for the run functions that existed before this registry,
their old import path (`"volratio.runs:train"`, …) — and its version: every built-in runs at version
1 (how the stored reference chunks ran: absent entries read from a frozen table) and version 2 (the
complete config keyed and stored), side by side; a spec says which (`volratio.runs.run_versions`).

The registry sits in the runs layer, below the experiments (`tests/test_architecture.py`): it names
the experiment modules by their module paths (under `volratio.experiments`) and imports each with
`importlib` on first use, never with an import statement. That is the one place where the runs
layer refers to the experiments, by name. Its errors are `ConfigError`s (`volratio.util.presets`):
an unknown name, a version this code does not run, a run function that cannot be registered.
"""

from __future__ import annotations

import copy
import dataclasses
import importlib
from dataclasses import dataclass
from typing import Any, Callable

from ..util.presets import ConfigError, preset
from . import run_versions

EXPERIMENTS_PACKAGE = "volratio.experiments"  # where the chapter experiments' modules live

# name -> module (under EXPERIMENTS_PACKAGE) of each chapter experiment, in book order
EXPERIMENTS = {
    "twins": "twins",  # Picbreeder networks and their SGD twins
    "emc2_bench": "emc2_bench",  # EMC2-Bench: Picbreeder vs dense SGD vs SP
    "connectivity": "connectivity",  # SP against the pruning baselines at matched sparsity
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
    """A function a sweep can run, at one version: `fn(config dict) -> dict`, validated by `parse(config
    dict)`. The built-in run functions have two versions (`volratio.runs.run_versions`):
    version 1 reads an entry a config lacks from a frozen table and keys the config as given; version 2
    keys and stores the complete config (`completes`)."""

    name: str  # the name a spec uses
    fn: Callable[[dict], dict]
    parse: Callable[[dict], Any]  # raises ConfigError (a VolratioError) for a bad config
    key: str  # hashed into store keys (old import path for run functions older than the registry)
    version: int = 1  # the version this entry runs (bumped when the function's results change for a config)
    runnable: tuple = ()  # every version this code runs (default: `version` only)
    completes: bool = False  # the key hashes the complete config (`complete`), not the config as given
    complete_fn: Callable[[Any], dict] = run_versions.complete  # parsed config → complete config

    def key_version(self, library: str, version: int | None = None) -> str:
        """The version tag hashed into a run's store key and recorded in its row
        (`run_versions.version_tag`): the library's version for version 1, `library/vN` after."""
        return run_versions.version_tag(library, self.version if version is None else version)

    def keyed(self, config: dict) -> dict:
        """The config a run is keyed, run and stored with: for a version that completes, every entry
        (from `parse`, today's defaults where `config` has none); otherwise `config` as given."""
        return self.complete_fn(self.parse(copy.deepcopy(config))) if self.completes else config

    def versions(self) -> tuple:
        return self.runnable or (self.version,)


# name -> (module, function, key[, completion]) of the built-in run functions. `module` is a module
# under EXPERIMENTS_PACKAGE or a full module path, and `parse_<function>` of it validates; `key` is
# the fixed string hashed into store keys (an old import path, never imported); `completion` (a
# function of the module) turns a parsed config into the complete one where `run_versions.complete`
# cannot (default). Every built-in runs at the versions of
# `run_versions.RUNNABLE` (a spec's `version`; `run_versions.LATEST` by default).
_BUILTIN_RUNS = {
    "train": ("training", "train", "volratio.runs:train", "complete_train"),
    "toy": ("toy", "toy", "volratio.runs:toy"),
    "depth_point": ("depth_regime", "point", "volratio.depth_runs:depth_point"),
    "optimizer_point": ("optimizers", "point", "volratio.depth_runs:optimizer_point"),
    "emc2_point": ("emc2_bench", "point", "volratio.experiments:emc2_point"),
    "emc2_dense": ("emc2_bench", "dense_point", "volratio.experiments:emc2_dense"),
    "rescore": ("volratio.runs.rescore", "point", "volratio.experiments:rescore"),  # stored networks, another judge
    "fit_budget": ("fit_budget", "point", "volratio.experiments:fit_budget", "complete_point"),  # MSE against steps
    "twin_point": ("twins", "point", "volratio.experiments:twin_point"),  # one network of the sixteen-target comparison
}
# old spec names (import paths) → registry names; a spec may still say run = "volratio.runs:train"
ALIASES = {entry[2]: name for name, entry in _BUILTIN_RUNS.items()}

_USER_RUNS: dict[str, RunFunction] = {}


def module(name: str):
    """The module of experiment `name` (`ConfigError` listing the known ones otherwise)."""
    if name not in EXPERIMENTS:
        raise ConfigError(f"unknown experiment {name!r}; known: {', '.join(EXPERIMENTS)}")
    return importlib.import_module(f"{EXPERIMENTS_PACKAGE}.{EXPERIMENTS[name]}")


def run_names() -> list[str]:
    return [*_BUILTIN_RUNS, *EXPERIMENTS, *_USER_RUNS]


def get_run(name: str, version: int | None = None) -> RunFunction:
    """The run function a sweep spec names (a registry name or an old alias), at `version` (default:
    the latest this code runs). `ConfigError` naming the choices when there is none."""
    name = ALIASES.get(name, name)
    if name in _USER_RUNS:
        entry = _USER_RUNS[name]
        if version is not None and version != entry.version:
            raise ConfigError(
                f"run {name!r} is registered at version {entry.version}; version {version} is not in this process"
            )
        return entry
    if name in _BUILTIN_RUNS:
        mod, fn, key, *completion = _BUILTIN_RUNS[name]
        m = importlib.import_module(mod if mod.startswith("volratio.") else f"{EXPERIMENTS_PACKAGE}.{mod}")
        fn, parse = getattr(m, fn), getattr(m, f"parse_{fn}")
        extra = {"complete_fn": getattr(m, completion[0])} if completion else {}
    elif name in EXPERIMENTS:
        fn, parse, key, extra = _WholeRun(name), _WholeParse(name), f"volratio.experiments:{name}", {}
    else:
        raise ConfigError(
            f"unknown run {name!r}; a sweep runs one of {', '.join(run_names())} "
            "(or a function registered in code with volratio.runs.registry.register_run)"
        )
    v = run_versions.LATEST if version is None else version
    if v not in run_versions.RUNNABLE:
        raise ConfigError(
            f"run {name!r}: version {v!r} is not one this code runs ({', '.join(map(str, run_versions.RUNNABLE))}); "
            "set `version` in the spec to one of them"
        )
    if v == 1:  # a config's absent entries read from the frozen table (run_versions.read_v1)
        fn, parse = run_versions.Reading(name, fn), run_versions.Reading(name, parse)
    return RunFunction(name, fn, parse, key, v, run_versions.RUNNABLE, completes=v >= 2, **extra)


def run_name(key: str) -> str:
    """A store's `run` column (a run function's `key`) → its registry name."""
    if key.startswith(("volratio.experiments:", "user:")):
        return key.split(":", 1)[1]
    return ALIASES.get(key, key)


def stored_config(record: dict):
    """The parsed config of a stored run (a store row with `run`, `version` and `config`): read by the
    version of its run function that made it (`run_versions.version_of`)."""
    entry = get_run(run_name(record["run"]), run_versions.version_of(record["version"]))
    return entry.parse(copy.deepcopy(dict(record["config"])))


def known_run(name: str) -> bool:
    return ALIASES.get(name, name) in set(run_names())


def register_run(
    name: str,
    fn: Callable[[dict], dict],
    parse: Callable[[dict], Any] | None = None,
    key: str | None = None,
    version: int = 1,
) -> RunFunction:
    """Make `fn(config) -> dict` runnable by sweeps as `run = name`. `parse(config)` validates a
    config before any run starts (default: accept any). On local processes and Dask the function
    is sent by reference, so it must be importable there (a module, not a notebook cell). `version`: bump it when `fn`'s results change for
    the same config (a store holding the older version's runs then refuses to resume)."""
    if not isinstance(name, str) or not name.replace("_", "").replace("-", "").isalnum():
        raise ConfigError(f"run name {name!r}: use letters, digits, '_' or '-'")
    if name in _BUILTIN_RUNS or name in EXPERIMENTS or name in ALIASES:
        raise ConfigError(f"run name {name!r} is taken by the library; choose another")
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise ConfigError(f"run {name!r}: version must be a positive integer, got {version!r}")
    entry = RunFunction(name, fn, parse or (lambda config: config), key or f"user:{name}", version)
    _USER_RUNS[name] = entry
    return entry


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
            out.update({f"net_{name}": net.to("cpu") for name, net in res.extras["nets"].items()})
        return out
