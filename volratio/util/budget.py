"""Memory budget: estimate what a request needs *before* allocating it, and refuse past a budget.

A typo (`--res 1000000`, `--width 100000000`, `depth=100000`) must not take a machine down with it.
Every place that allocates in proportion to a user-chosen size calls `check(estimate, what, fix)`
first; past the budget it raises `BudgetError` with the estimate, the budget, and how to shrink the
request or raise the budget. The estimators below are deliberately simple upper-ish bounds (counts
of the large arrays alive at the peak), not measurements.

The budget (`budget_bytes()`):
- `VOLRATIO_MEMORY_BUDGET` (e.g. `16G`, `512M`, `2e9`, or `none` for no limit), which the command
  line's `volratio --memory-budget SIZE …` sets for itself and for the worker processes it starts;
- otherwise `DEFAULT_BUDGET`: 4 GiB, or half of the machine's physical memory when that is smaller.

Used by `volratio.nets` (networks, rendering, features), `volratio.train`, `volratio.data.targets`
(planted DAGs, image files), `volratio.welch` (frames) and the command line. CONTRIBUTING.md states
the rule for new code.
"""

from __future__ import annotations

import math
import os
import re

from ..errors import BudgetError, VolratioError

ENV = "VOLRATIO_MEMORY_BUDGET"
DEFAULT_BUDGET = 4 << 30  # 4 GiB (or half the physical memory when that is less)
_UNITS = {"": 1, "B": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def parse_size(text: str) -> int | None:
    """`"16G"`, `"512M"`, `"2e9"`, `"1073741824"` → bytes; `"none"`/`"unlimited"` → None (no limit)."""
    t = str(text).strip().upper().removesuffix("IB").removesuffix("B")
    if t in ("NONE", "UNLIMITED", "INF"):
        return None
    m = re.fullmatch(r"([0-9]*\.?[0-9]+(?:E[+-]?[0-9]+)?)\s*([KMGT]?)", t)
    if not m:
        raise VolratioError(f"memory budget {text!r} is not a size; write e.g. 16G, 512M, 2e9 or none")
    n = float(m.group(1)) * _UNITS[m.group(2)]
    if not math.isfinite(n) or n < 1:
        raise VolratioError(f"memory budget {text!r} must be a positive size; write e.g. 16G, 512M or none")
    return int(n)


def _physical_memory() -> int | None:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # pragma: no cover - non-POSIX
        return None


def default_budget() -> int:
    phys = _physical_memory()
    return min(DEFAULT_BUDGET, phys // 2) if phys else DEFAULT_BUDGET


def budget_bytes() -> int | None:
    """The budget in bytes now (None: unlimited)."""
    env = os.environ.get(ENV)
    return parse_size(env) if env else default_budget()


def fmt(n: float) -> str:
    """Bytes as a short human size: 1.6 GB, 512 MB, 3.2 TB."""
    for unit, size in (("PB", 1e15), ("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= size:
            return f"{n / size:.3g} {unit}"
    return f"{int(n)} bytes"


def check(nbytes: float, what: str, fix: str) -> None:
    """Raise `BudgetError` when `nbytes` (an estimate) exceeds the budget. `what` names the request
    ("rendering 1000000×1000000 pixels of a width-16 network"), `fix` how to make it smaller."""
    budget = budget_bytes()
    if budget is not None and nbytes > budget:
        raise BudgetError(
            f"{what} needs about {fmt(nbytes)} of memory, more than the budget of {fmt(budget)}; "
            f"{fix}, or raise the budget ({ENV}=32G or `volratio --memory-budget 32G …`)"
        )


# ---------------------------------------------------------------------------------------------
# Estimators: bytes of the arrays alive at the peak of each kind of request


def network_bytes(n_params: int, population: int = 1, itemsize: int = 4, training: bool = False) -> int:
    """Kernels and masks of a CoordMLP (+ gradient and two Adam moments when training); the float64
    initialisation draw is transient but counted."""
    per = itemsize * (2 + (3 if training else 0)) + 8
    return int(n_params) * int(population) * per


def forward_bytes(
    pixels: int,
    width: int,
    depth: int,
    population: int = 1,
    itemsize: int = 4,
    keep_layers: bool = False,
    training: bool = False,
) -> int:
    """One evaluation over `pixels` inputs: the grid, ~4 live `(K, P, W)` activations (input,
    pre-activation, two temporaries of the activation), the head; all layers when they are kept
    (features) and ~5 per layer when autograd keeps them for the backward pass (training)."""
    layer = int(population) * int(pixels) * int(width) * itemsize
    if training:
        act = 5 * layer * max(1, int(depth))
    elif keep_layers:
        act = layer * max(1, int(depth)) + 3 * layer
    else:
        act = 4 * layer
    head = int(population) * int(pixels) * 3 * itemsize * 6
    grid = int(pixels) * 4 * 8 * 3
    return act + head + grid


def graph_render_bytes(pixels: int, nodes: int) -> int:
    """A NEAT/planted graph evaluated on `pixels` inputs keeps one float64 map per node (plus a
    few temporaries and the image)."""
    return int(pixels) * (int(nodes) + 16) * 8


def image_bytes(width: int, height: int, bands: int = 3) -> int:
    """An image file decoded (uint8 per band) plus its float64 square crop and the resize buffers."""
    side = min(int(width), int(height))
    return int(width) * int(height) * int(bands) + side * side * 3 * 8 * 3


def frame_bytes(m: int, n: int) -> int:
    """A low-coherence frame of m vectors in R^n: ~6 live m×m float64 Gram matrices (projection,
    clipping, masks, eigen-decomposition work) plus the m×n frame."""
    return 6 * int(m) * int(m) * 8 + 4 * int(m) * int(n) * 8
