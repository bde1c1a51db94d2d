"""Small helpers shared by the subcommand modules (output formatting, common options)."""

from __future__ import annotations

import json
import sys
from typing import Any


def add_json_flag(p) -> None:
    p.add_argument("--json", action="store_true", help="print machine-readable JSON instead of text")


def emit(args, payload: Any, text: str | None = None) -> None:
    """Print `payload` as JSON when `--json` was given, else `text` (or a plain rendering)."""
    if getattr(args, "json", False):
        json.dump(payload, sys.stdout, indent=None, default=_default)
        sys.stdout.write("\n")
    else:
        print(text if text is not None else payload)


def _default(o):
    try:
        import numpy as np

        if isinstance(o, np.generic):
            return o.item()
        if isinstance(o, np.ndarray):
            return o.tolist()
    except ImportError:  # pragma: no cover
        pass
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")
