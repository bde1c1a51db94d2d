"""Checks for the exercises of "Rerunning at scale on a cluster" (book/practice_cluster.md): the
table of a resumed sweep holds every grid point exactly once (`volratio.runs.sweep`)."""

from __future__ import annotations

import itertools

from .check import (
    BadAnswer,
    Check,
    answered,
    checker,
)

__all__ = ["check_sweep_table"]


@checker
def check_sweep_table(table, grid: dict, seeds=(0,)) -> Check:
    """A results table (pandas DataFrame) from a sweep over `grid` ({parameter: values}) × `seeds`:
    one row per combination of the values and seed, no duplicates, every parameter a column."""
    answered(table, "your table")
    if not hasattr(table, "columns"):
        raise BadAnswer(f"give the results as a pandas DataFrame, got {type(table).__name__}")
    grid = {**grid, "seed": list(seeds)}
    keys = list(grid)
    missing = [k for k in keys if k not in table.columns]
    if missing:
        return Check(
            "check_sweep_table",
            False,
            f"column(s) {missing} missing; every swept parameter (and the seed) should be a column",
        )
    want = {tuple(c) for c in itertools.product(*(list(grid[k]) for k in keys))}
    rows = [tuple(r) for r in table[keys].itertuples(index=False, name=None)]
    have = set(rows)
    if len(rows) != len(have):
        return Check(
            "check_sweep_table",
            False,
            f"{len(rows) - len(have)} duplicate row(s): a resumed sweep must not rerun finished points",
        )
    if have != want:
        miss = sorted(want - have)[:3]
        extra = sorted(have - want)[:3]
        return Check(
            "check_sweep_table",
            False,
            f"grid points missing {miss}" + (f", unexpected {extra}" if extra else ""),
            len(want),
            len(have),
        )
    return Check("check_sweep_table", True, f"{len(want)} grid points, each exactly once", len(want), len(have))
