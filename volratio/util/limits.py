"""Allowed values of config entries, declared beside the fields and checked before anything runs.

A config dataclass lists its limits in a class attribute `LIMITS = {field: Limit}` (unannotated:
not a field); `check_limits(cfg)` tests every listed field of `cfg` and of the configs nested in it,
runs a config's own `check()` method where it has one (checks across entries), and raises one error
naming the entry, its value and what it may be. A tuple-valued field is checked
entry by entry; `None` passes (it means "off" or "all" wherever a field allows it).

    LIMITS = {"steps": at_least(1), "lr": above(0), "tau": between(0, 1, open_lo=True),
              "optimizer": one_of("adam", "adamw", "sgd", "muon"), "target": parsed_by(get_target)}

`parsed_by(parse)` allows what a parser of the value accepts (a target spec, an architecture, a
device name); a refused value's error is the parser's own, the line the command line prints for it.

`volratio.util.presets.configure` checks the result of every override, so a sweep refuses a config
with `steps = -5` when it is parsed, before its first run.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Callable

from ..errors import VolratioError


class LimitError(VolratioError):
    """A config entry outside its allowed values."""


@dataclass(frozen=True)
class Limit:
    lo: float | None = None  # smallest allowed value (None: no lower end)
    hi: float | None = None  # largest allowed value (None: no upper end)
    open_lo: bool = False  # the lower end itself is not allowed
    choices: tuple = ()  # allowed values of a string entry (empty: any number in [lo, hi])
    nonzero: bool = False  # 0 itself is not allowed (a perturbation size)
    parse: Callable | None = None  # a parser that raises for a refused value (a target spec); None: no parser

    def problem(self, x) -> str | None:
        """Why `x` is refused, in one line (None when it is allowed)."""
        if self.parse is not None:
            try:
                self.parse(x)
            except (VolratioError, ValueError, TypeError) as e:
                return str(e).splitlines()[0] if str(e) else type(e).__name__
            return None
        return None if self.allows(x) else f"must be {self.text()}"

    def allows(self, x) -> bool:
        if self.parse is not None:
            return self.problem(x) is None
        if self.choices:
            return x in self.choices
        if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x):
            return False
        if self.nonzero and x == 0:
            return False
        if self.lo is not None and (x < self.lo or (self.open_lo and x == self.lo)):
            return False
        return self.hi is None or x <= self.hi

    def text(self) -> str:
        """What the entry may be, in words."""
        if self.parse is not None:
            return f"a value {getattr(self.parse, '__name__', 'its parser')} accepts"
        if self.choices:
            return "one of " + ", ".join(map(str, self.choices))
        if self.nonzero:
            return "a finite number other than 0"
        lo = None if self.lo is None else f"{'>' if self.open_lo else '≥'} {self.lo:g}"
        hi = None if self.hi is None else f"≤ {self.hi:g}"
        return "a finite number " + " and ".join(p for p in (lo, hi) if p) if lo or hi else "a finite number"


def at_least(lo: float) -> Limit:
    return Limit(lo=lo)


def above(lo: float) -> Limit:
    return Limit(lo=lo, open_lo=True)


def between(lo: float, hi: float, open_lo: bool = False) -> Limit:
    return Limit(lo=lo, hi=hi, open_lo=open_lo)


def one_of(*choices: str) -> Limit:
    return Limit(choices=tuple(choices))


def nonzero() -> Limit:
    return Limit(nonzero=True)


def parsed_by(parse: Callable) -> Limit:
    """Any value `parse(value)` accepts without raising (e.g. `volratio.data.targets.get_target`)."""
    return Limit(parse=parse)


def check_limits(cfg, where: str = "config") -> None:
    """Raise `LimitError` for the first entry of `cfg` (or of a config nested in it) outside its
    `LIMITS`; `where` names `cfg` in the message (e.g. the run function)."""
    limits = getattr(type(cfg), "LIMITS", {})
    own = getattr(cfg, "check", None)  # a config's own checks across entries, e.g. `SPConfig.check`
    if callable(own):
        try:
            own()
        except VolratioError as e:
            raise LimitError(f"{where}: {e}") from e
    for f in dataclasses.fields(cfg):
        value = getattr(cfg, f.name)
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            check_limits(value, f"{where}.{f.name}")
        limit = limits.get(f.name)
        if limit is None or value is None:
            continue
        for x in value if isinstance(value, (tuple, list)) else (value,):
            why = limit.problem(x)
            if why is not None:
                raise LimitError(f"{where}.{f.name} = {value!r}: {why}" +
                                 (" (each entry)" if isinstance(value, (tuple, list)) and limit.parse is None else ""))  # fmt: skip
