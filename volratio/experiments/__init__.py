"""The experiments of the book, one module per chapter experiment, and the registry that names them.

Every experiment follows one contract (`volratio.experiments._base`): a dataclass `Config` with
`quick()`, `reference()` and `full()` presets, and `run(cfg) -> Result` with `Result.to_frame()`.

    from volratio.experiments import depth_regime as X
    res = X.run(X.Config.quick())
    res.to_frame()

The registry maps names to code, for the command line (`volratio run NAME --scale S --set k=v`),
sweep specs (`run = "NAME"` in a `.toml`) and the book:

- `EXPERIMENTS`: chapter experiments (whole runs: a `Config` and `run`);
- `RUNS`: *run functions* for sweeps — `fn(config: dict) -> dict` of metrics and artifacts, with a
  `parse(config) -> Config` that validates one run's config before anything runs. Every chapter
  experiment is a run function too (its config: `scale` plus overrides of that preset).

A spec can only name what is registered here, or what a user registers in code with
`register_run(name, fn, parse)`; the library never imports a module named in a config file.
Store keys hash a run function's `key` — for the run functions that existed before this package,
their old import path (`"volratio.runs:train"`, …), so stores written then still resume.

The reference scale is budgeted at ≤ 8 CPU-hours for all claims on a 2-core machine.
The runs are the chunks of `examples/sweeps/reference.toml`, stored under `results/reference/`;
their measured cost (one thread, CPU time, `results/reference/*/manifest.json`) is what the
chapters state. The presets here hold the settings; the plan says which targets, seeds and grids.
"""

from __future__ import annotations

import dataclasses
import importlib
from dataclasses import dataclass
from typing import Any, Callable

from ._base import SCALES, ExperimentError, Result, configure, parse_sets, preset  # noqa: F401

# name -> module (under volratio.experiments) of each chapter experiment, in book order
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
    """A function a sweep can run: `fn(config dict) -> dict`, validated by `parse(config dict)`."""

    name: str  # the name a spec uses
    fn: Callable[[dict], dict]
    parse: Callable[[dict], Any]  # raises ExperimentError (a VolratioError) for a bad config
    key: str  # hashed into store keys (old import path for run functions older than the registry)
    version: int = 1  # bumped when the function's results change for the same config (`key_version`)

    def key_version(self, library: str, version: int | None = None) -> str:
        """The version hashed into a run's store key: the library's version for version 1 of the
        function (every store written before run functions had versions), `library/vN` for a later
        one — so the runs of an older version of the function are never taken for this one's."""
        v = self.version if version is None else int(version)
        return library if v == 1 else f"{library}/v{v}"


# name -> (module, function, key[, version]) of the built-in run functions; `parse_<function>`
# validates. The version (default 1) is bumped when a function's results change for the same config:
# a store holding the runs of an older version then refuses to resume (`volratio.runs.sweep.run_sweep`).
_BUILTIN_RUNS = {
    "train": ("training", "train", "volratio.runs:train"),
    "toy": ("toy", "toy", "volratio.runs:toy"),
    "depth_point": ("depth_regime", "point", "volratio.depth_runs:depth_point"),
    "optimizer_point": ("optimizers", "point", "volratio.depth_runs:optimizer_point"),
    "emc2_point": ("emc2_bench", "point", "volratio.experiments:emc2_point"),
    "emc2_dense": ("emc2_bench", "dense_point", "volratio.experiments:emc2_dense"),
    "rescore": ("volratio.runs.rescore", "point", "volratio.experiments:rescore"),  # stored networks, another judge
    "fit_budget": ("fit_budget", "point", "volratio.experiments:fit_budget"),  # dense MSE against training steps
    "twin_point": ("twins", "point", "volratio.experiments:twin_point"),  # one network of the sixteen-target comparison
}
# old spec names (import paths) → registry names; a spec may still say run = "volratio.runs:train"
ALIASES = {entry[2]: name for name, entry in _BUILTIN_RUNS.items()}

_USER_RUNS: dict[str, RunFunction] = {}


def module(name: str):
    """The module of experiment `name` (`ExperimentError` listing the known ones otherwise)."""
    if name not in EXPERIMENTS:
        raise ExperimentError(f"unknown experiment {name!r}; known: {', '.join(EXPERIMENTS)}")
    return importlib.import_module(f"{__name__}.{EXPERIMENTS[name]}")


def run_names() -> list[str]:
    return [*_BUILTIN_RUNS, *EXPERIMENTS, *_USER_RUNS]


def get_run(name: str) -> RunFunction:
    """The run function a sweep spec names (a registry name or an old alias)."""
    name = ALIASES.get(name, name)
    if name in _USER_RUNS:
        return _USER_RUNS[name]
    if name in _BUILTIN_RUNS:
        mod, fn, key, *version = _BUILTIN_RUNS[name]
        m = importlib.import_module(mod if mod.startswith("volratio.") else f"{__name__}.{mod}")
        return RunFunction(name, getattr(m, fn), getattr(m, f"parse_{fn}"), key, *version)
    if name in EXPERIMENTS:
        return RunFunction(name, _WholeRun(name), _WholeParse(name), f"volratio.experiments:{name}")
    raise ExperimentError(
        f"unknown run {name!r}; a sweep runs one of {', '.join(run_names())} "
        "(or a function registered in code with volratio.experiments.register_run)"
    )


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
        raise ExperimentError(f"run name {name!r}: use letters, digits, '_' or '-'")
    if name in _BUILTIN_RUNS or name in EXPERIMENTS or name in ALIASES:
        raise ExperimentError(f"run name {name!r} is taken by the library; choose another")
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise ExperimentError(f"run {name!r}: version must be a positive integer, got {version!r}")
    entry = RunFunction(name, fn, parse or (lambda config: config), key or f"user:{name}", version)
    _USER_RUNS[name] = entry
    return entry


def unregister_run(name: str) -> None:
    _USER_RUNS.pop(name, None)


def make_config(name: str, scale: str = "quick", overrides: dict | None = None):
    """`Config.<scale>()` of experiment `name` with `overrides` (validated)."""
    return preset(module(name).Config, scale, **(overrides or {}))


def run(name: str, scale: str = "quick", overrides: dict | None = None, **kw) -> Result:
    """Run experiment `name` at `scale` with `overrides` (what `volratio run` does)."""
    return module(name).run(make_config(name, scale, overrides), **kw)


class _WholeParse:
    """A chapter experiment as a sweep run: its config is `scale` (default quick) plus overrides,
    `seed` included."""

    def __init__(self, name: str):
        self.name = name

    def __call__(self, config: dict):
        # an experiment's LEGACY: entries a run stored before they existed means by leaving them out
        over = {**getattr(module(self.name), "LEGACY", {}), **config}
        if "seed" in over and "seed" not in {f.name for f in dataclasses.fields(module(self.name).Config)}:
            raise ExperimentError(
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
