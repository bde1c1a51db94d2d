"""The software versions that determine a result's numbers, recorded with every result.

`versions()` names the library and the packages its numbers depend on (torch, numpy, Pillow) and the
Python version. An experiment's `Result` records them (`volratio.experiments._base`), and so does
every session of a stored reference plan (`volratio.runs.reference`). `git_commit()` names the
commit of the library's checkout, which every stored run records (`volratio.runs.store`).
"""

from __future__ import annotations

import platform
import subprocess
from pathlib import Path

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


def git_commit() -> str | None:
    """HEAD of the repository the library lives in, with "+dirty" when its tracked files under
    `volratio/` differ from it; None outside a git checkout (an installed wheel)."""
    root = Path(__file__).resolve().parents[2]
    try:
        # --show-toplevel first: a wheel installed in a venv inside some other repository must not
        # report that repository's commit
        head = subprocess.run(
            ["git", "rev-parse", "--show-toplevel", "HEAD"], cwd=root, capture_output=True, text=True, timeout=10
        )
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no", "--", "volratio"],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if head.returncode:
        return None
    top, commit = head.stdout.split()
    if Path(top).resolve() != root:
        return None
    return commit + ("+dirty" if dirty.stdout.strip() else "")
