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
from ...runs import plan, sixteen, stored
from ..deciders import sp_vs_pruners
from ..render import Verdict, unglued
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


def _targets_run(chunks) -> set:
    """The targets that have at least one run stored in `chunks` (those of the plan that are stored)."""
    present = set(stored.chunks())
    return {r["config"]["target"] for c in chunks if c in present for r in stored.records(c)}


def plan_status(judge: str = DEFAULT_JUDGE) -> pd.DataFrame:
    """Where the pre-registered plan stands, one row per claim: the targets planned, those with runs
    stored, those scored under `judge` and entered by the fit rule (the sparse regime's), and the
    chunks still to run (`volratio reference list` gives each one's runs)."""
    present = set(stored.chunks())
    first = 3  # skull, butterfly, apple: in the store when the plan was made
    planned = first + len(sixteen.FORK_NONZEROS)
    entered = entry_table(judge)
    sp_runs = _targets_run(sixteen.SP_CHUNKS)
    muon_runs = _targets_run(sixteen.MUON_FIT_CHUNKS)
    muon = {n: c for n, (_, c) in plan.chunks().items() if n in sixteen.MUON_FIT_CHUNKS}

    def left(declared: dict) -> str:
        """The chunks of `declared` whose runs are not all stored."""
        todo = []
        for name, chunk in declared.items():
            done = len(stored.records(name)) if name in present else 0
            if done < len(chunk.cases) * len(chunk.seeds):
                todo.append(name)
        return ", ".join(todo) or "none"

    return pd.DataFrame(
        [
            {"claim": "sp-vs-pruners", "targets planned": planned, "run": first + len(sp_runs),
             "scored": len(entered), "entered": int(entered.enters.sum()), "chunks to run": left(sixteen.sp_chunks())},
            {"claim": "muon-above-adam", "targets planned": planned, "run": first + len(muon_runs),
             "scored": first, "entered": first, "chunks to run": left(muon) + " (then step two, declared once step one is stored)"},
        ]
    ).set_index("claim")  # fmt: skip


def complete() -> bool:
    """Whether every chunk of the sparse regime's part of the plan is stored (its word is given then)."""
    return plan_status().loc["sp-vs-pruners", "chunks to run"] == "none"


def announcement() -> str:
    """The claims page's paragraph on the plan: what it is, the commit that fixed it, where it stands."""
    status = plan_status()
    runs = ", ".join(f"{c}: {r['run']} of {r['targets planned']} targets run" for c, r in status.iterrows())
    return (
        f"The claims *sp-vs-pruners* and *muon-above-adam* are decided above on three targets. Their extension to "
        f"sixteen targets was pre-registered in commit `{sixteen.PLAN_COMMIT}` ({sixteen.PLAN}), before any of its "
        f"runs: its targets and entry rule, statistics, m, judges, reading and word rule were fixed first. These are "
        f"the book's first pre-registered verdicts. Its words are given here once its chunks are stored ({runs})."
    )


def verdict(judge: str = DEFAULT_JUDGE) -> tuple[Verdict, pd.DataFrame]:
    """The claim decided on the targets that entered, under `judge` (never glued while the plan is being
    run: the claims page shows it beside the three-target word with `progress()`)."""
    table, _ = rows(judge)
    with unglued():
        return sp_vs_pruners(table, scale="reference", judge=judge, stored=True, at=progress())
