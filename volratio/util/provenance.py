"""The software versions that determine a result's numbers, recorded with every result.

`versions()` names the library and the packages its numbers depend on (torch, numpy, Pillow) and the
Python version. An experiment's `Result` records them (`volratio.experiments._base`), and so does
every session of a stored reference plan (`volratio.runs.reference`).
"""

from __future__ import annotations

import platform

import numpy
import PIL
import torch

from .. import __version__


def versions() -> dict:
    """The versions that determine an experiment's numbers (recorded with every result)."""
    return {
        "volratio": __version__,
        "torch": torch.__version__,
        "numpy": numpy.__version__,
        "pillow": PIL.__version__,
        "python": platform.python_version(),
    }
