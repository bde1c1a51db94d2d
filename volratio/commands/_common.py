"""Small helpers shared by the subcommand modules (output formatting, common options)."""

from __future__ import annotations

import json
import math
import sys
from typing import Any

import numpy as np


def add_json_flag(p) -> None:
    p.add_argument("--json", action="store_true", help="print machine-readable JSON instead of text")


def add_out(p, help: str, folder: bool = False, required: bool = True) -> None:
    """Add `--out` (and `--force` for a file) to a subcommand parser; check it with
    `volratio.util.fileio.check_out` before doing any work."""
    p.add_argument("--out", required=required, metavar="DIR" if folder else "PATH", help=help)
    if not folder:
        p.add_argument("--force", action="store_true", help="overwrite --out if it exists (also when it is the input)")


def emit(args, payload: Any, text: str | None = None) -> None:
    """Print `payload` as JSON when `--json` was given, else `text` (or a plain rendering).

    The JSON is strict (RFC 8259): NaN and ±Infinity, which `json` would write as bare tokens
    that other parsers reject, become null."""
    if getattr(args, "json", False):
        sys.stdout.write(json.dumps(strict(payload), indent=None, allow_nan=False) + "\n")
    else:
        print(text if text is not None else payload)


def strict(o: Any) -> Any:
    """`o` with numpy/torch scalars and arrays made plain, tuples made lists, and every non-finite
    float replaced by None — ready for `json.dumps(..., allow_nan=False)`."""
    if isinstance(o, float):
        return o if math.isfinite(o) else None
    if o is None or isinstance(o, (bool, int, str)):
        return o
    if isinstance(o, dict):
        return {str(k): strict(v) for k, v in o.items()}
    if isinstance(o, (list, tuple)):
        return [strict(v) for v in o]
    tolist = getattr(o, "tolist", None)  # numpy / torch scalars and arrays
    if callable(tolist):
        return strict(tolist())
    if hasattr(o, "__fspath__"):
        return str(o)
    return strict(_default(o))


def _default(o):
    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


def warn_line(message, category, filename, lineno, file=None, line=None) -> None:
    """`warnings.showwarning` for commands: a warning as one line on stderr ("warning: …")."""
    print(f"warning: {message}", file=sys.stderr)
