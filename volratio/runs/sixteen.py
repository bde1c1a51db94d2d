"""The sixteen targets of the claims "sp-vs-pruners" and "muon-above-adam": the pre-registered plan.

Both claims were first decided on three Picbreeder targets (skull, butterfly, apple). This module
holds what the plan fixed before any of its new runs was scored (results/reference/PREREGISTRATION.md
says it in words, with the statistic, m, the judges and the reading): the thirteen fork targets and the
size each is pruned to, the chunks that run them (`sp_chunks`, `muon_fit_chunks`), and the entry rule,
which decides from the dense networks' fit alone — never from a score — which targets a claim reads
(`entry`).

The entry rule: a dense network *fits* its target when its MSE is at most `FIT_SHARE` of the MSE of a
flat image of the target's mean colour (`flat_mse`: R² ≥ 0.9 at the run's resolution); a target
*enters* when at least `FIT_NETWORKS` of its dense networks fit. Targets whose dense networks cannot
draw them say nothing about which connections a pruner keeps (the pilot of the verdicts issue found
one: plane, MSE 0.015–0.029 against 0.027 for its flat image).

Chapters: "Connectivity: which connections remain" and "Optimization: Adam, Muon, SGD" (the
sixteen-target verdicts), and the claims page.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..data.targets import get_target
from .plan import Chunk

# The fork's layered networks' non-zero counts (`volratio info picbreeder:NAME --json`, "nonzero"), the size
# SP prunes each target towards, as 147, 281 and 918 are for skull, butterfly and apple
# (tests/test_sixteen.py checks them against the networks where the data is present)
FORK_NONZEROS = {
    "sad-face": 150, "firefly": 287, "ghost": 52, "plane": 265, "letter-g": 101, "coif": 72,
    "butterfly-grey": 176, "squares": 258, "mystic": 493, "spotlight": 370, "dolphin": 351, "moon": 691,
    "face": 271,
}  # fmt: skip
FORK_TARGETS = tuple(f"picbreeder:{n}" for n in FORK_NONZEROS)

FIT_SHARE = 0.1  # a dense network fits when its MSE ≤ this share of its target's flat-image MSE (R² ≥ 0.9)
FIT_NETWORKS = 2  # a target enters when at least this many of its dense networks fit

# "sp-vs-pruners": the sparse regime's reference preset with the claim's three pruners only (as the chunk
# sparse_regime_more), three networks a target. A pilot chunk of two targets first, then chunks of at most
# three targets (~25–40 CPU-minutes a target at one thread), so that each finishes inside a session.
SP_CHUNKS = {
    "sparse_regime_fork_a": ("sad-face", "firefly"),  # the pilot
    "sparse_regime_fork_b": ("ghost", "plane", "letter-g"),
    "sparse_regime_fork_c": ("coif", "butterfly-grey", "squares"),
    "sparse_regime_fork_d": ("mystic", "spotlight", "dolphin"),
    "sparse_regime_fork_e": ("moon", "face"),
}
SP_METHODS = ("imp", "wanda", "llm-pruner")  # the pruners the claim names
SP_SOURCE = {"scale": "reference", "members": 3, "methods": list(SP_METHODS), "scratch": False}

# "muon-above-adam": the matched protocol of chunk optimizers_matched, with its depth and settings fixed by
# rule rather than by new sweeps: depth 6 (where the sparse regime and two of the first three targets' cells
# ran), Adam at lr 3e-3 and Muon at 3e-3 on the hidden matrices with AdamW 1e-2 (the best settings by dense
# MSE on the first three targets: Adam's in 2 of 3 cells, Muon's in 3 of 3). Step one runs each network to
# its fit point (these chunks); step two reruns both at the sparser optimizer's median fit-point count
# (`optimizers.matched_counts`, sizes only), as optimizers_matched does, and is declared once step one is stored.
MUON_DEPTH = 6
MUON_SETTINGS = ({"optimizer": "adam", "lr": 3e-3}, {"optimizer": "muon", "muon_lr": 3e-3, "adamw_lr": 1e-2})
MUON_FIT_CHUNKS = {
    "optimizers_fork_fit_a": tuple(FORK_NONZEROS)[:7],
    "optimizers_fork_fit_b": tuple(FORK_NONZEROS)[7:],
}
PLAN = "results/reference/PREREGISTRATION.md"  # the plan in words, committed before these runs
PLAN_COMMIT = "9fc525cc"  # the commit that added PLAN (tests/test_sixteen.py checks it against git)


def why(claim: str, names: tuple, extra: str) -> str:
    listed = ", ".join(f"{n} ({FORK_NONZEROS[n]})" for n in names)
    return (
        f'The sixteen-target extension of claim "{claim}", pre-registered ({PLAN}): fork targets {listed} '
        f"(the fork network's non-zero count in brackets). {extra}"
    )


def sp_chunks() -> dict:
    """The sparse regime's fork chunks (run function `sparse_regime`, owned by that experiment): one run
    a target, three networks, pruned towards the fork network's count."""
    return {
        name: Chunk(
            run="sparse_regime",
            why=why(
                "sp-vs-pruners",
                names,
                "SP and the matched IMP, Wanda and LLM-Pruner at 75 % sparsity and at SP's end, every population "
                "stored; a target enters the claim by the entry rule (`volratio.runs.sixteen.entry`).",
            ),
            seeds=[0],
            cases=[{"target": f"picbreeder:{n}", "target_nonzeros": FORK_NONZEROS[n]} for n in names],
            config=dict(SP_SOURCE),
        )
        for name, names in SP_CHUNKS.items()
    }


def muon_fit_cases(names: tuple) -> list:
    """Step one of the fork cells of "muon-above-adam": per target both optimizers' settings at
    `MUON_DEPTH`, SP towards the fork network's count, each network read at its fit point."""
    return [
        {"target": f"picbreeder:{n}", "depth": MUON_DEPTH, "sp.target_nonzeros": FORK_NONZEROS[n], **s}
        for n in names
        for s in MUON_SETTINGS
    ]


def flat_mse(target: str, res: int) -> float:
    """MSE of a flat image of `target`'s mean colour at `res` × `res`: the fit a network reaches by drawing
    nothing."""
    image = np.asarray(get_target(target).image(res), dtype=np.float64)  # (res, res) or (res, res, C)
    pixels = image.reshape(res * res, -1)
    return float(((pixels - pixels.mean(axis=0)) ** 2).mean())


def entry(dense: pd.DataFrame, res: int) -> pd.DataFrame:
    """The entry rule on `dense`, one row per dense network (`target`, `member`, `dense_mse`): per target
    the flat-image MSE at `res`, how many of its dense networks fit (MSE ≤ `FIT_SHARE` × flat) out of how
    many, and whether it `enters` (at least `FIT_NETWORKS` fit). Reads the fit only, never a score."""
    rows = []
    for target, g in dense.groupby("target", sort=False):
        flat = flat_mse(target, res)
        share = g.dense_mse.to_numpy(dtype=float) / flat
        fitting = int((share <= FIT_SHARE).sum())
        rows.append({"target": target, "flat_mse": flat, "networks": len(g), "fitting": fitting,
                     "worst_share": float(share.max()), "enters": fitting >= FIT_NETWORKS})  # fmt: skip
    return pd.DataFrame(rows)
