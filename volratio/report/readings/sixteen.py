"""Claim "sp-vs-pruners" on the sixteen targets of its pre-registered plan.

The plan (`volratio.runs.sixteen`, results/reference/PREREGISTRATION.md) runs the sparse regime on the
thirteen fork targets beside the first three (chunks `sparse_regime_fork_*`); a target enters the
claim by the entry rule, read from its dense networks' fit alone (`sixteen.entry`). This module reads
the first three targets' networks (`connectivity.rows`) and the fork chunks' scored networks under
one judge, applies the entry rule to every target, and decides the claim on the targets that entered
(`deciders.sp_vs_pruners`), saying how many are stored, entered and planned.

Chapters: book/connectivity.md and the claims page (the sixteen-target row).
"""

from __future__ import annotations

import pandas as pd

from ...experiments import sparse_regime as regime
from ...experiments.sparse_regime import scores as regime_scores
from ...judges import DEFAULT_JUDGE
from ...runs import sixteen, stored
from ..deciders import sp_vs_pruners
from ..render import Verdict
from . import connectivity

RES = regime.Config.reference().res  # the resolution the fork chunks train and score at


def fork_sets() -> list:
    """The fork chunks' score sets (`regime.SCORES`) whose chunk is stored, in the plan's order."""
    present = set(stored.chunks())
    return [regime.SCORES[c] for c in sixteen.SP_CHUNKS if c in present]


def dense_fit(table: pd.DataFrame) -> pd.DataFrame:
    """One row per dense network of `table` (rows of scored networks, `loss` ÷ `loss_ratio` is the
    member's dense MSE): `target`, `member` (its `seed`), `dense_mse`."""
    sp = table[(table.method == "sp") & table.loss_ratio.notna() & (table.loss_ratio > 0)]
    mse = (sp.loss / sp.loss_ratio).rename("dense_mse")
    return (
        pd.concat([sp[["target", "seed"]], mse], axis=1).groupby(["target", "seed"], sort=False).first().reset_index()
    )


def fork_rows(judge: str = DEFAULT_JUDGE, failed_as_zero: bool = True) -> pd.DataFrame:
    """The fork chunks' networks of SP and the claim's three pruners under `judge` (empty until a fork
    chunk is stored and scored)."""
    sets = fork_sets()
    if not sets:
        return pd.DataFrame()
    table = regime_scores.stored_scores(sets)
    if table.empty or f"emc2_auc:{judge}" not in table:
        return pd.DataFrame()
    return connectivity._under(table[table.method.isin(connectivity.COMPARED)], judge, failed_as_zero)


def entry_table(judge: str = DEFAULT_JUDGE) -> pd.DataFrame:
    """The entry rule on every target read so far (the first three and the stored fork targets)."""
    both = pd.concat([connectivity.rows(judge), fork_rows(judge)], ignore_index=True)
    return sixteen.entry(dense_fit(both), RES)


def rows(judge: str = DEFAULT_JUDGE, failed_as_zero: bool = True) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The networks of the targets that entered, under `judge`, and the entry table."""
    both = pd.concat([connectivity.rows(judge, failed_as_zero), fork_rows(judge, failed_as_zero)], ignore_index=True)
    entered = sixteen.entry(dense_fit(both), RES)
    keep = set(entered.target[entered.enters])
    return both[both.target.isin(keep)].reset_index(drop=True), entered


def progress() -> str:
    """How far the plan is, in words: targets stored and scored, entered, planned."""
    entered = entry_table()
    planned = 3 + len(sixteen.FORK_NONZEROS)
    return (
        f"{len(entered)} of {planned} planned targets stored and scored, {int(entered.enters.sum())} entered "
        f"by the fit rule (pre-registered in {sixteen.PLAN})"
    )


def verdict(judge: str = DEFAULT_JUDGE) -> tuple[Verdict, pd.DataFrame]:
    """The claim decided on the targets that entered, under `judge` (never glued while the plan is being
    run: the claims page shows it beside the three-target word with `progress()`)."""
    table, _ = rows(judge)
    return sp_vs_pruners(table, scale="reference", judge=judge, stored=True, at=progress())
