"""Argument validators shared by every subcommand (`type=` callables for argparse).

Each validator turns the text of one option into a value inside its domain, or raises
`argparse.ArgumentTypeError` with a message that names the value and what to give instead; the
CLI's parser (`volratio.cli.Parser`) turns that into one line on stderr and exit status 2. A new
option that takes a number, a device or a list uses one of these (CONTRIBUTING.md), so that no
value outside its domain ever reaches the library — no NaN learning rate, no negative step count
acting as a Python slice, no seed that overflows deep inside torch.

    p.add_argument("--steps", type=positive_int)
    p.add_argument("--lr", type=Float(0, lo_open=True))       # finite, > 0
    p.add_argument("--confidence", type=Float(0, 1, lo_open=True, hi_open=True))
    p.add_argument("--deltas", type=FloatList())               # "-1,-0.5,0.5,1" → [-1.0, -0.5, 0.5, 1.0]

Validators carry their domain (`lo`, `hi`, …) so that the property test (tests/test_bad_input.py)
can check that every accepted value lies inside it.
"""

from __future__ import annotations

import argparse
import math
import re

from ..errors import VolratioError
from ..util.device import resolve_device

SEED_MAX = 2**63 - 1  # torch.Generator.manual_seed and numpy accept [0, 2^63)


def _number(text: str) -> float:
    try:
        return float(str(text).strip())
    except ValueError:
        return math.nan


class Int:
    """An integer in [lo, hi]; also accepts integer-valued scientific notation (`1e6`)."""

    def __init__(self, lo: int | None = None, hi: int | None = None, hint: str = ""):
        self.lo, self.hi, self.hint = lo, hi, hint
        self.__name__ = "integer"

    def domain(self) -> str:
        if self.lo is not None and self.hi is not None:
            return f"an integer in [{self.lo}, {self.hi}]"
        if self.lo == 1:
            return "a positive integer"
        if self.lo == 0:
            return "an integer ≥ 0"
        if self.lo is not None:
            return f"an integer ≥ {self.lo}"
        return "an integer"

    def __call__(self, text: str) -> int:
        t = str(text).strip()
        try:
            v = int(t)
        except ValueError:
            f = _number(t)
            if not (math.isfinite(f) and f.is_integer()):
                raise argparse.ArgumentTypeError(f"{text!r} is not {self.domain()}{self.hint}") from None
            v = int(f)
        if (self.lo is not None and v < self.lo) or (self.hi is not None and v > self.hi):
            raise argparse.ArgumentTypeError(f"{text} is out of range; give {self.domain()}{self.hint}")
        return v


class Float:
    """A finite float in [lo, hi] (ends excluded with lo_open / hi_open)."""

    def __init__(
        self, lo: float = -math.inf, hi: float = math.inf, lo_open: bool = False, hi_open: bool = False, hint: str = ""
    ):
        self.lo, self.hi, self.lo_open, self.hi_open, self.hint = lo, hi, lo_open, hi_open, hint
        self.__name__ = "number"

    def domain(self) -> str:
        if self.lo == -math.inf and self.hi == math.inf:
            return "a finite number"
        if self.hi == math.inf:
            return f"a finite number {'>' if self.lo_open else '≥'} {self.lo:g}"
        if self.lo == -math.inf:
            return f"a finite number {'<' if self.hi_open else '≤'} {self.hi:g}"
        return f"a number in {'(' if self.lo_open else '['}{self.lo:g}, {self.hi:g}{')' if self.hi_open else ']'}"

    def ok(self, v: float) -> bool:
        if not math.isfinite(v):
            return False
        if v < self.lo or (self.lo_open and v == self.lo):
            return False
        return not (v > self.hi or (self.hi_open and v == self.hi))

    def __call__(self, text: str) -> float:
        v = _number(text)
        if not self.ok(v):
            raise argparse.ArgumentTypeError(f"{text!r} is not {self.domain()}{self.hint}")
        return v


class FloatList:
    """Comma-separated finite floats (`"-1,-0.5,0.5,1"`), at least one, each inside `item`'s domain."""

    def __init__(self, item: Float | None = None, hint: str = ", e.g. -1,-0.5,0.5,1"):
        self.item = item or Float()
        self.hint = hint
        self.__name__ = "list of numbers"

    def __call__(self, text: str) -> list[float]:
        parts = [p.strip() for p in str(text).split(",") if p.strip()]
        if not parts:
            raise argparse.ArgumentTypeError(f"{text!r} is empty; give comma-separated numbers{self.hint}")
        out = []
        for p in parts:
            v = _number(p)
            if not self.item.ok(v):
                raise argparse.ArgumentTypeError(
                    f"{p!r} in {text!r} is not {self.item.domain()}; give comma-separated numbers{self.hint}"
                )
            out.append(v)
        return out


def device(text: str) -> str:
    """`auto`, `cpu`, `cuda`, `cuda:N` or `mps` — and present on this machine."""
    t = str(text).strip()
    try:
        resolve_device(t)
    except VolratioError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return t


device.__name__ = "device"

_ADDR = re.compile(r"^(?:(?:tcp|tls|ucx|ws|wss)://)?\[?[A-Za-z0-9_.:-]*[A-Za-z0-9_.\]-]:\d{1,5}$")


def scheduler_address(text: str) -> str:
    """A Dask scheduler address: `tcp://HOST:PORT` (or `HOST:PORT`, `tls://…`)."""
    t = str(text).strip()
    if re.fullmatch(r"inproc://\S+", t):  # an in-process scheduler (tests, notebooks)
        return t
    if not _ADDR.match(t) or not 0 < int(t.rsplit(":", 1)[1]) < 65536:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a scheduler address; give tcp://HOST:PORT, e.g. tcp://10.0.0.1:8786"
        )
    return t


scheduler_address.__name__ = "address"

_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*$")


def key_value(text: str) -> str:
    """`KEY=VALUE` with a (dotted) identifier as KEY; the value is checked against the config later."""
    key, sep, _ = str(text).partition("=")
    if not sep or not _KEY.match(key.strip()):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not KEY=VALUE; write e.g. steps=2000 or sp.tau=0.8 (volratio run NAME --dry-run shows the keys)"
        )
    return str(text)


key_value.__name__ = "KEY=VALUE"

_ARTIFACT = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")


def artifact_names(text: str) -> list[str]:
    """A comma-separated list of a stored run's artifact names (e.g. `net_sp_end,net_imp_end`)."""
    names = [a.strip() for a in str(text).split(",")]
    if not all(_ARTIFACT.match(a) for a in names):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a comma-separated list of artifact names; write e.g. net_sp_end,net_imp_0p75"
        )
    return names


artifact_names.__name__ = "artifact names"

# The common domains
positive_int = Int(1)
nonneg_int = Int(0)
seed = Int(0, SEED_MAX)
res = Int(1, hint=" (pixels per side)")
positive_float = Float(0, lo_open=True)
finite_float = Float()
probability = Float(0, 1)
fraction = Float(0, 1, hi_open=True)  # [0, 1): a share removed, never everything
open_unit = Float(0, 1, lo_open=True, hi_open=True)  # (0, 1): confidence levels, rates
