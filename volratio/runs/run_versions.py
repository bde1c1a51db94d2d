"""Versions of the built-in run functions: what a run's config means, and what its store key hashes.

A stored run's key hashes its run function, its config and a version tag
(`volratio.runs.store.config_key`). Two versions of every built-in run function run side by side; a
sweep names the one it runs (`version = 1` in a spec; `LATEST` when it names none), and every row of
a store records its version in the `version` column (`version_tag`: "0.1.0" for version 1,
"0.1.0/v2" for version 2):

- **Version 1** is how every chunk under `results/reference/` was run. Its key hashes the config as
  the sweep gave it, which may leave entries out. An entry it lacks means what `v1_readings.json`
  says: the reading the code gave such configs when version 2 was made, frozen there, so that a
  default changed later never changes what a stored version-1 run means.
- **Version 2** completes the config first: every entry of the run function's config, taken from
  today's defaults where the sweep gives none. The complete config is what the key hashes and what
  the row stores. Changing a default therefore changes the keys, and a store never hands back a run
  made under other defaults.

Both versions run the same code; they differ in how they read a config and what they hash. Rows of
either record every metric the code records: the rows of runs stored before SP's guard, which lacked
`collapsed`, `sp_stop` and `base_kept`, are not made any more (no committed store holds one). A TOML
spec cannot write None (TOML has no null), so under version 2 an optional entry that should be None
is set from YAML or Python.

Bump a
run function's version (3, …) when its results change for the same complete config, and drop the
versions the code no longer reproduces from `RUNNABLE`: a store holding their runs then refuses to
resume (`volratio.runs.sweep`).
"""

from __future__ import annotations

import copy
import dataclasses
import json
from pathlib import Path
from typing import Any, Callable

from ..errors import VolratioError

LATEST = 2  # the version a sweep runs when it names none
RUNNABLE = (1, 2)  # the versions this code runs (and reproduces) for every built-in run function
READINGS_FILE = Path(__file__).with_name("v1_readings.json")
_READINGS: dict | None = None


class VersionError(VolratioError, ValueError):
    """A run-function version that this code cannot run or read."""


def version_tag(library: str, version: int) -> str:
    """The version recorded in a store's `version` column: the library's version for version 1 (the
    stores written before run functions had versions), `library/vN` for a later one."""
    return library if int(version) == 1 else f"{library}/v{int(version)}"


def version_of(tag: str) -> int:
    """The run-function version of a store's `version` column ("0.1.0" → 1, "0.1.0/v2" → 2)."""
    library, slash, v = str(tag).partition("/v")
    if not slash:
        return 1
    if not v.isdigit() or int(v) < 2:
        raise VersionError(f"version {tag!r}: not a run-function version tag (LIBRARY or LIBRARY/vN, N ≥ 2)")
    return int(v)


# ---------------------------------------------------------------------------------------------
# Version 1: a config's absent entries, read from the frozen table


def readings() -> dict:
    """The frozen version-1 readings: `{run name: {"config": {...}}}` for a run function, and `{run name:
    {"scales": {scale: {...}}, "default_scale": S}}` for one whose config names a preset (`scale`)."""
    global _READINGS
    if _READINGS is None:
        _READINGS = json.loads(READINGS_FILE.read_text())["runs"]
    return _READINGS


def read_v1(name: str, config: dict) -> dict:
    """`config` with every entry it lacks filled from version 1's reading of run function `name`."""
    table = readings().get(name)
    if table is None:
        raise VersionError(f"run {name!r} has no version 1 (it was made after versions); run version {LATEST}")
    if "scales" in table:
        scale = config.get("scale", table["default_scale"])
        if scale not in table["scales"]:
            raise VersionError(f"{name}: scale {scale!r}; version 1 reads {', '.join(table['scales'])}")
        base = table["scales"][scale]
    else:
        base = table["config"]
    for given, dropped in table.get("exclusive", {}).items():  # an entry given replaces these readings
        if given in config:
            base = {k: v for k, v in base.items() if k not in dropped}
    return {**base, **dotted(config, base)}


def dotted(config: dict, known: dict) -> dict:
    """`config` with each table of a nested config (`{"sp": {"tau": 0.8}}`) written as dotted entries
    (`{"sp.tau": 0.8}`), the form of the readings `known`, so that an entry given overrides only its
    own reading."""
    out = {}
    for name, value in config.items():
        if isinstance(value, dict) and any(k.startswith(f"{name}.") for k in known):
            out.update({f"{name}.{k}": v for k, v in dotted(value, {}).items()} if value else {})
        else:
            out[name] = value
    return out


class Reading:
    """A run function (or its parse) at version 1: called on the config with its absent entries read
    from the frozen table. A module-level class, so that process pools can send it."""

    def __init__(self, name: str, inner: Callable[[dict], Any]):
        self.name, self.inner = name, inner

    def __call__(self, config: dict):
        return self.inner(read_v1(self.name, config))

    def __repr__(self) -> str:
        return f"Reading({self.name!r}, {getattr(self.inner, '__qualname__', self.inner)!r})"


# ---------------------------------------------------------------------------------------------
# Version 2: the complete config


def complete(parsed: Any) -> dict:
    """A parsed config (a dataclass) as the complete config a version-2 run is keyed and stored with:
    every field, nested configs as dotted entries (`sp.tau`), tuples as lists."""
    if not dataclasses.is_dataclass(parsed):
        raise VersionError(f"{type(parsed).__name__}: a run's parse must return a config dataclass to be completed")
    out = {}
    for f in dataclasses.fields(parsed):
        value = getattr(parsed, f.name)
        if dataclasses.is_dataclass(value):
            out.update({f"{f.name}.{k}": v for k, v in complete(value).items()})
        else:
            out[f.name] = plain(value)
    return out


def plain(value: Any) -> Any:
    """Tuples as lists and numpy / torch scalars as Python numbers, recursively (JSON's types)."""
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    item = getattr(value, "item", None)
    if callable(item) and getattr(value, "shape", None) == ():
        return item()
    return copy.deepcopy(value)
