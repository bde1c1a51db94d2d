"""The stored controls of the instruments on planted targets, read back: the table that
`tools/planted_controls.py` wrote once (`data/controls/`), turned into the controls table of the
depth evidence page: per instrument, the positive control, each kind of negative and the gap to it
and to the hardest, the graded response, each with its interval over targets, and the instrument's
word at the claims' smallest effect of interest m ("decides" / "insensitive", the 3m rule of
`controls.sensitivity`). Nothing is trained or scored here; the book reads the stored table.

Chapter: "Evidence: depth" (book/evidence_depth.md), the controls table.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pandas as pd

from .controls import NEGATIVES, Controls, ControlsConfig, sensitivity, summary
from .curves import DepthError

DEFAULT_DIR = Path(__file__).resolve().parents[2] / "data" / "controls"  # the repository's data/controls
TABLE_FILE = "planted_controls.csv"  # one row per (target, control, seed, α, instrument)
CONFIG_FILE = "planted_controls.json"  # its ControlsConfig, the command that wrote it, its CPU time
COLUMNS = ("target", "control", "seed", "share", "instrument", "score", "mse")
# instruments whose graded series cannot rise along α by construction: they read the planted units
# themselves. Recovery (the best assignment of primitives to live units) is 1 while the planted units
# are live (α < 1) and the student's alone at α = 1; the per-unit reading (the mean over live units)
# is 1 at α = 0 and falls as the student's units join. What an EMC2 judge reads is the image, which
# stays the target's along the series: whether it falls is what the control measures, not a given.
ORDERED_BY_CONSTRUCTION = ("recovery", "per-unit")


def config_json(cfg: ControlsConfig) -> dict:
    """`cfg` as plain JSON values (tuples as lists), as stored beside the table."""
    return json.loads(json.dumps(dataclasses.asdict(cfg)))


def config_from_json(d: dict) -> ControlsConfig:
    """The `ControlsConfig` stored as `d` (`config_json`); an unknown field is an error."""
    fields = {f.name for f in dataclasses.fields(ControlsConfig)}
    unknown = sorted(set(d) - fields)
    if unknown:
        raise DepthError(f"stored controls config: unknown fields {', '.join(unknown)}; rebuild it with "
                         "tools/planted_controls.py")  # fmt: skip
    return ControlsConfig(**{k: tuple(v) if isinstance(v, list) else v for k, v in d.items()})


def load(folder: str | Path = DEFAULT_DIR) -> tuple[Controls, dict]:
    """The stored controls (`Controls`) and their metadata (command, CPU seconds, …) from `folder`.
    A missing, incomplete or malformed table is a clear error."""
    folder = Path(folder)
    table, meta_file = folder / TABLE_FILE, folder / CONFIG_FILE
    for f in (table, meta_file):
        if not f.is_file():
            raise DepthError(f"{f}: no stored controls; build them with tools/planted_controls.py")
    try:
        meta = json.loads(meta_file.read_text())
        cfg = config_from_json(meta["config"])
    except (json.JSONDecodeError, KeyError, TypeError) as e:
        raise DepthError(
            f"{meta_file}: unreadable controls metadata ({e}); rebuild with tools/planted_controls.py"
        ) from e
    if not meta.get("complete"):
        raise DepthError(
            f"{meta_file}: the stored run is incomplete; finish it with tools/planted_controls.py --resume"
        )
    try:
        t = pd.read_csv(table)  # pandas reads every float back as written
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as e:
        raise DepthError(f"{table}: not a readable table ({e}); rebuild with tools/planted_controls.py") from e
    missing = sorted(set(COLUMNS) - set(t.columns))
    if missing:
        raise DepthError(f"{table}: missing columns {', '.join(missing)}; rebuild with tools/planted_controls.py")
    if set(t.target) != set(cfg.targets) or set(t.instrument) != set(cfg.instruments):
        raise DepthError(f"{table}: its targets or instruments differ from its config's; rebuild it")
    if not np.isfinite(t.score.to_numpy(dtype=np.float64)).all():
        raise DepthError(f"{table}: non-finite scores; rebuild with tools/planted_controls.py")
    return Controls(cfg, t[list(COLUMNS)]), meta


def controls_table(controls: Controls, m: float) -> pd.DataFrame:
    """The controls table: per instrument, the positive control's mean; per kind of negative its
    mean and the gap to it with its interval; the gap to the hardest negative with its interval;
    the graded response (mean Spearman ρ between α and the score, its interval, the share of targets
    whose series falls); and the instrument's word at `m` (the smallest effect of interest of the
    claims it would decide, in the instrument's units) from the hardest gap's lower end."""
    s = summary(controls)
    s["sensitivity"] = [sensitivity(lo, m) for lo in s.gap_hardest_lo]
    cols = ["targets", "positive"]
    for k in (*NEGATIVES, "hardest"):
        cols += ([k] if k != "hardest" else []) + [f"gap_{k}", f"gap_{k}_lo", f"gap_{k}_hi"]
    return s[cols + ["graded_rho", "graded_rho_lo", "graded_rho_hi", "graded_falls", "sensitivity"]]


def ordered_by_construction(name: str) -> bool:
    """Whether instrument `name`'s graded series cannot rise along α by construction
    (`ORDERED_BY_CONSTRUCTION`)."""
    return name in ORDERED_BY_CONSTRUCTION
