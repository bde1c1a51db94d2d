"""The run contract every experiment follows, and the helpers it shares.

An experiment module `volratio.experiments.<name>` has

- `Config`: a dataclass with a comment on every default, a `scale` field, and three presets —
  `quick()` (what the book executes live on a 2-core laptop), `reference()` (the stored,
  claim-deciding scale: all claims together ≤ 8 CPU-hours on 2 cores) and `full()` (paper-sized,
  for a GPU or a cluster); each preset takes keyword overrides;
- `run(cfg) -> Result`, where `Result.to_frame()` is a tidy pandas table (one row per measured
  unit: network × method × δ, …) and the result records the config, the seeds its runs used, the
  scale, the EMC2 judge its scores used (None: the experiment has no EMC2 judge) and the versions.

`configure(Config, scale, overrides)` builds a config from a preset and `key=value` overrides (the
command line `volratio run NAME --scale S --set key=value`, sweep specs); it rejects unknown keys
and values of the wrong type before anything runs.
"""

from __future__ import annotations

import dataclasses
import json
import platform
import time
import typing
from dataclasses import dataclass, field
from typing import Any

import numpy
import PIL
import torch

from .. import __version__
from ..errors import VolratioError
from ..util.limits import LimitError, check_limits
from ..util.presets import SCALES, Presets  # noqa: F401  (re-exported: every experiment's Config mixes it in)


class ExperimentError(VolratioError, ValueError):
    """An experiment name, scale or config entry that cannot be used."""


def versions() -> dict:
    """The versions that determine an experiment's numbers (recorded with every result)."""
    return {
        "volratio": __version__,
        "torch": torch.__version__,
        "numpy": numpy.__version__,
        "pillow": PIL.__version__,
        "python": platform.python_version(),
    }


@dataclass
class Result:
    """What `run(cfg)` returns: a tidy table plus what produced it."""

    experiment: str  # registry name
    config: dict  # the config, as plain data (`dataclasses.asdict`)
    table: Any  # pandas DataFrame, one row per measured unit
    seeds: list  # every seed the run drew from
    seconds: float  # wall time of the run
    judge: str | None  # the EMC2 judge the scores used (`volratio.judges.JUDGES`); None: no judge
    # (the experiment has no EMC2 score: frames, the toy model, ρ without the basin model, …)
    versions: dict = field(default_factory=versions)
    extras: dict = field(default_factory=dict)  # objects the chapter draws (networks, images, curves)

    @property
    def scale(self) -> str:
        return str(self.config.get("scale", "custom"))

    def to_frame(self):
        """The tidy table with the experiment, scale and judge as columns (a copy). A table with a
        `judge` column of its own (the judge each row's score names) keeps it."""
        t = self.table.copy()
        if "judge" not in t:
            t.insert(0, "judge", self.judge)
        t.insert(0, "scale", self.scale)
        t.insert(0, "experiment", self.experiment)
        return t

    def __getitem__(self, name: str):
        return self.extras[name]


class Timer:
    """`with Timer() as t: …` then `t.seconds`."""

    def __enter__(self):
        self.t0 = time.perf_counter()
        return self

    def __exit__(self, *exc):
        self.seconds = time.perf_counter() - self.t0


# ---------------------------------------------------------------------------------------------
# Configs from presets and overrides


def preset(config_cls: type, scale: str, **overrides):
    """`config_cls.<scale>(**overrides)` after checking the scale and the override names/types."""
    if scale not in SCALES:
        raise ExperimentError(f"scale {scale!r}: choose one of {', '.join(SCALES)}")
    base = getattr(config_cls, scale)()
    return configure(base, overrides)


def configure(cfg, overrides: dict, where: str = "config"):
    """A copy of dataclass `cfg` with `overrides` applied (dotted names reach nested dataclasses:
    `sp.tau`). Unknown names, values of the wrong type and values outside the config's `LIMITS`
    (`volratio.util.limits`, every entry checked, not only the overridden ones) raise
    `ExperimentError`."""
    nested: dict[str, dict] = {}
    flat = {}
    for name, value in overrides.items():
        head, dot, rest = str(name).partition(".")
        if dot:
            nested.setdefault(head, {})[rest] = value
        else:
            flat[head] = value
    fields = {f.name: f for f in dataclasses.fields(cfg)}
    hints = typing.get_type_hints(type(cfg))
    changes = {}
    for name, value in flat.items():
        if name not in fields:
            raise ExperimentError(f"{where}: unknown entry {name!r}; {type(cfg).__qualname__} has {', '.join(fields)}")
        changes[name] = _coerce(value, getattr(cfg, name), hints.get(name), f"{where}.{name}")
    for name, sub in nested.items():
        inner = changes.get(name, getattr(cfg, name, None)) if name in fields else None
        if not dataclasses.is_dataclass(inner):
            raise ExperimentError(f"{where}: {name!r} is not a nested config; write {name}=VALUE")
        changes[name] = configure(inner, sub, f"{where}.{name}")
    try:
        out = dataclasses.replace(cfg, **changes)
    except (TypeError, ValueError) as e:
        raise ExperimentError(f"{where}: {e}") from e
    try:
        check_limits(out, where)
    except LimitError as e:
        raise ExperimentError(str(e)) from e
    return out


def _coerce(value, current, hint, where: str):
    """`value` in the type of the field (given by its current value or its annotation)."""
    if dataclasses.is_dataclass(current):
        if isinstance(value, dict):
            return configure(current, value, where)
        if dataclasses.is_dataclass(value):
            return value
        raise ExperimentError(f"{where}: give a table of its entries, not {value!r}")
    optional = hint is not None and type(None) in typing.get_args(hint)
    if value is None:
        if current is None or optional:
            return None
        raise ExperimentError(f"{where}: None is not allowed; give a {type(current).__name__}")
    kind = type(current) if current is not None else _first_type(hint)
    if kind is bool:
        if isinstance(value, bool):
            return value
    elif kind is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    elif kind is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
    elif kind is str:
        if isinstance(value, str):
            return value
    elif kind in (tuple, list):
        if isinstance(value, (list, tuple)):
            return tuple(_plain_item(v) for v in value) if kind is tuple else list(value)
    elif kind is None:
        return value
    else:
        return value
    raise ExperimentError(f"{where} = {value!r}: expected a {kind.__name__}")


def _plain_item(v):
    return tuple(_plain_item(x) for x in v) if isinstance(v, list) else v


def _first_type(hint):
    for t in typing.get_args(hint) or (hint,):
        if isinstance(t, type) and t is not type(None):
            return t
    return None


def parse_value(text: str):
    """A `--set key=value` value: JSON when it parses (numbers, true/false/null, lists), else the string."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def parse_sets(items) -> dict:
    """`["a=1", "sp.tau=0.8"]` → `{"a": 1, "sp.tau": 0.8}`."""
    out = {}
    for item in items or ():
        name, eq, value = str(item).partition("=")
        if not eq or not name.strip():
            raise ExperimentError(f"--set {item!r}: write KEY=VALUE, e.g. --set seeds=5")
        out[name.strip()] = parse_value(value)
    return out
