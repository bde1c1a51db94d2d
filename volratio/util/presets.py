"""The scales of a config: one preset mechanism for every config dataclass of the library.

A config that mixes in `Presets` has three class methods, `quick()`, `reference()` and `full()`.
Each returns the dataclass's defaults changed by the class's `QUICK`, `REFERENCE` or `FULL` (a dict,
or a function of no arguments returning one, for presets that build objects), then by keyword
overrides; a config with a `scale` field records the preset's name there. The experiments' configs
(`volratio.experiments`) keep their defaults as the quick scale (`QUICK` empty); the building
blocks' configs (training, SP, EMC2, the Welch sweeps) set `QUICK` to what the book runs.

`preset(Config, scale, **overrides)` and `configure(cfg, overrides)` build a config from a preset and
`key=value` overrides (the command line `volratio run NAME --scale S --set key=value`, sweep specs):
they reject unknown keys, values of the wrong type and values outside the config's `LIMITS`
(`volratio.util.limits`) before anything runs, with a `ConfigError`. `parse_sets` reads the
command line's `--set KEY=VALUE` items. `complete(cfg)` is a parsed config as the flat dict a stored
run is keyed by (nested configs as dotted entries, `sp.tau`; `volratio.runs.registry`).
"""

from __future__ import annotations

import copy
import dataclasses
import json
import typing
from typing import Any

from ..errors import VolratioError
from .limits import LimitError, check_limits

SCALES = ("quick", "reference", "full")  # the presets every config has, smallest first


class ConfigError(VolratioError, ValueError):
    """A scale, an override or a config entry that cannot be used."""


class Presets:
    QUICK: Any = {}  # changes to the defaults for the quick scale (what the book executes)
    REFERENCE: Any = {}  # … for the reference scale (what decides the claims, results/reference/)
    FULL: Any = {}  # … for the full scale (paper-sized)

    @classmethod
    def _preset(cls, changes, scale: str, kw: dict):
        changes = changes() if callable(changes) else changes
        named = {"scale": scale} if any(f.name == "scale" for f in dataclasses.fields(cls)) else {}
        return cls(**{**changes, **named, **kw})

    @classmethod
    def quick(cls, **kw):
        return cls._preset(cls.QUICK, "quick", kw)

    @classmethod
    def reference(cls, **kw):
        return cls._preset(cls.REFERENCE, "reference", kw)

    @classmethod
    def full(cls, **kw):
        return cls._preset(cls.FULL, "full", kw)


# ---------------------------------------------------------------------------------------------
# Configs from presets and overrides


def preset(config_cls: type, scale: str, **overrides):
    """`config_cls.<scale>(**overrides)` after checking the scale and the override names/types."""
    if scale not in SCALES:
        raise ConfigError(f"scale {scale!r}: choose one of {', '.join(SCALES)}")
    base = getattr(config_cls, scale)()
    return configure(base, overrides)


def configure(cfg, overrides: dict, where: str = "config"):
    """A copy of dataclass `cfg` with `overrides` applied (dotted names reach nested dataclasses:
    `sp.tau`). Unknown names, values of the wrong type and values outside the config's `LIMITS`
    (`volratio.util.limits`, every entry checked, not only the overridden ones) raise
    `ConfigError`."""
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
            raise ConfigError(f"{where}: unknown entry {name!r}; {type(cfg).__qualname__} has {', '.join(fields)}")
        changes[name] = _coerce(value, getattr(cfg, name), hints.get(name), f"{where}.{name}")
    for name, sub in nested.items():
        inner = changes.get(name, getattr(cfg, name, None)) if name in fields else None
        if not dataclasses.is_dataclass(inner):
            raise ConfigError(f"{where}: {name!r} is not a nested config; write {name}=VALUE")
        changes[name] = configure(inner, sub, f"{where}.{name}")
    try:
        out = dataclasses.replace(cfg, **changes)
    except (TypeError, ValueError) as e:
        raise ConfigError(f"{where}: {e}") from e
    try:
        check_limits(out, where)
    except LimitError as e:
        raise ConfigError(str(e)) from e
    return out


def _coerce(value, current, hint, where: str):
    """`value` in the type of the field (given by its current value or its annotation)."""
    if dataclasses.is_dataclass(current):
        if isinstance(value, dict):
            return configure(current, value, where)
        if dataclasses.is_dataclass(value):
            return value
        raise ConfigError(f"{where}: give a table of its entries, not {value!r}")
    optional = hint is not None and type(None) in typing.get_args(hint)
    if value is None:
        if current is None or optional:
            return None
        raise ConfigError(f"{where}: None is not allowed; give a {type(current).__name__}")
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
    raise ConfigError(f"{where} = {value!r}: expected a {kind.__name__}")


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
            raise ConfigError(f"--set {item!r}: write KEY=VALUE, e.g. --set seeds=5")
        out[name.strip()] = parse_value(value)
    return out


# ---------------------------------------------------------------------------------------------
# Complete configs (what a stored run is keyed by: `volratio.runs.registry`)


KEYED_WHEN_SET = "volratio.keyed_when_set"  # field metadata: see `keyed_when_set`


def keyed_when_set(default: Any) -> Any:
    """A config field that enters a run's complete config, and so its key, only when it is set away
    from `default` (`complete`): an option that most runs leave alone, which a config gains without
    renaming the runs that leave it at its default."""
    return dataclasses.field(default=default, metadata={KEYED_WHEN_SET: True})


def complete(parsed: Any) -> dict:
    """A parsed config as the complete config a run is keyed and stored with: every field of a config
    dataclass, nested configs as dotted entries (`sp.tau`), tuples as lists, but for the dotted entries
    the config's `RUN_SET` names (a nested config's entries the run sets from its own, e.g. SP's seed
    from the run's `seed`: the config's `__post_init__` refuses them), and but for the fields keyed only
    when set (`keyed_when_set`) while they keep their default; a parse that returns a dict (a user's run function) gives
    that dict."""
    if isinstance(parsed, dict):
        return plain(parsed)
    if not dataclasses.is_dataclass(parsed):
        raise ConfigError(
            f"{type(parsed).__name__}: a run's parse must return a config dataclass (or a dict) to be completed"
        )
    out = {}
    for f in dataclasses.fields(parsed):
        value = getattr(parsed, f.name)
        if f.metadata.get(KEYED_WHEN_SET) and value == f.default:
            continue  # an option keyed only when set, left at its default
        if dataclasses.is_dataclass(value):
            out.update({f"{f.name}.{k}": v for k, v in complete(value).items()})
        else:
            out[f.name] = plain(value)
    run_set = getattr(type(parsed), "RUN_SET", ())  # nested entries the run sets itself, from its own entries
    return {k: v for k, v in out.items() if not any(k == p or k.startswith(f"{p}.") for p in run_set)}


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
