"""The `Check` verdict that every coursework checker returns, and the helpers checkers share.

A student computes something in an exercise — a number, an array, a network, a function — and a
check cell passes it to a `check_…` function of the chapter's module (`volratio.coursework.depth`,
…). The checker recomputes the reference with the library and compares:

- a right answer returns a passing `Check`, shown as `[PASS] check_…: what was verified`;
- a wrong or missing answer raises `CheckFailed`, whose message says *what* is wrong and gives a
  hint (`[FAIL] check_…: your ratio 0.31 ≠ 3.2: you inverted it — the ratio is raw / PNG bytes`).
  In Jupyter it is shown as that one line, without a traceback (`_render_traceback_`); in the book
  build it stops the build, so a broken reference solution cannot be published.

`checker.verdict(...)` returns the `Check` without raising (what the tests use). A checker raises
`CourseworkError` only when it is *called* wrongly (an unknown target, a cell too large to
enumerate). Every checker is a pure function of its arguments: the references are recomputed each
call, randomness is seeded by explicit arguments, nothing is cached between calls.

Chapters: every chapter's `## Exercises` section (book/*.md); notebooks/ are derived from them.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from ..errors import VolratioError
from ..nets import CoordMLP

__all__ = ["Check", "CheckFailed", "CourseworkError", "checker"]


class CourseworkError(VolratioError, ValueError):
    """A checker called with arguments it cannot work with (not a wrong answer)."""


@dataclass(frozen=True)
class Check:
    """The verdict of one checker. `bool(check)` is `check.ok`."""

    check: str  # the checker's name
    ok: bool
    message: str  # what is right, or what is wrong and what to look at
    expected: Any = None  # the reference value (when there is a single one to show)
    got: Any = None  # the student's answer as the checker read it

    def __bool__(self) -> bool:
        return self.ok

    def __repr__(self) -> str:
        return f"[{'PASS' if self.ok else 'FAIL'}] {self.check}: {self.message}"

    __str__ = __repr__

    def _repr_pretty_(self, p, cycle) -> None:  # IPython display
        p.text(repr(self))


class CheckFailed(VolratioError, AssertionError):
    """A wrong or missing answer. `.check` is the failed `Check`; the message is its one line."""

    def __init__(self, check: Check):
        super().__init__(repr(check))
        self.check = check

    def _render_traceback_(self) -> list[str]:
        """IPython shows this instead of a traceback: the student needs the verdict, not our stack."""
        return [f"\x1b[0;31m{self.check!r}\x1b[0m"]


# ---------------------------------------------------------------------------------------------
# Reading answers: problems become failed checks, never exceptions from deep inside


class Unanswered(Exception):
    """The answer is still the placeholder (`...` or `None`)."""


class BadAnswer(Exception):
    """The answer has the wrong type or shape to be compared at all."""


def answered(x, what: str):
    if x is None or x is Ellipsis:
        raise Unanswered(f"{what} is not answered yet (got {x!r}); replace the placeholder with your answer")
    return x


def number(x, what: str) -> float:
    answered(x, what)
    if isinstance(x, torch.Tensor):
        if x.numel() != 1:
            raise BadAnswer(f"{what} should be one number, got a tensor of shape {tuple(x.shape)}")
        x = x.item()
    if isinstance(x, np.ndarray):
        if x.size != 1:
            raise BadAnswer(f"{what} should be one number, got an array of shape {x.shape}")
        x = x.item()
    if isinstance(x, (bool, str)) or not isinstance(x, (int, float, np.integer, np.floating)):
        raise BadAnswer(f"{what} should be a number, got {type(x).__name__} {x!r}")
    v = float(x)
    if not math.isfinite(v):
        raise BadAnswer(f"{what} is {v}; a finite number was expected")
    return v


def array(x, what: str, dtype=np.float64) -> np.ndarray:
    answered(x, what)
    if isinstance(x, torch.Tensor):
        x = x.detach().cpu().numpy()
    try:
        a = np.asarray(x, dtype=dtype)
    except (TypeError, ValueError) as e:
        raise BadAnswer(f"{what} could not be read as a numeric array ({e})") from None
    if np.issubdtype(a.dtype, np.floating) and not np.all(np.isfinite(a)):
        raise BadAnswer(f"{what} contains NaN or Inf")
    return a


def close(a: float, b: float, rtol: float = 1e-6, atol: float = 1e-9) -> bool:
    return abs(a - b) <= atol + rtol * abs(b)


def network(x, what: str = "your network"):
    answered(x, what)
    if not isinstance(x, CoordMLP):
        hint = (
            " — train() returns a TrainResult; its .net is the network"
            if isinstance(getattr(x, "net", None), CoordMLP)
            else ""
        )
        raise BadAnswer(f"{what} should be a volratio.nets.CoordMLP, got {type(x).__name__}{hint}")
    return x


def checker(fn: Callable[..., Check]) -> Callable[..., Check]:
    """Make `fn` (which returns a `Check`) a checker: a failed `Check` — or an answer the helpers
    above could not read — raises `CheckFailed`; `.verdict(...)` returns the `Check` instead."""

    @functools.wraps(fn)
    def verdict(*args, **kwargs) -> Check:
        try:
            return fn(*args, **kwargs)
        except (Unanswered, BadAnswer) as e:
            return Check(fn.__name__, False, str(e))

    @functools.wraps(fn)
    def check(*args, **kwargs) -> Check:
        c = verdict(*args, **kwargs)
        if not c.ok:
            raise CheckFailed(c)
        return c

    check.verdict = verdict
    return check
