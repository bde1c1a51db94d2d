"""The paper's claims that the book tests: the catalogue.

Each claim of Do, Shah, Le, Liu (2026) has a key, the paper's statement, the chapter (`doc`, a file
under book/) whose experiment tests it, and what that experiment measures. `table` lists them;
`NO_JUDGE` are the claims measured without an EMC2 judge. The verdicts are decided by
`volratio.report.deciders` and shown by `volratio.report.render`.

Chapter: "The paper's claims, tested" (book/claims.md).
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd


@dataclass(frozen=True)
class Claim:
    key: str
    statement: str  # the paper's claim, in our words
    chapter: str  # title of the chapter whose experiment tests it
    experiment: str  # what we measure
    doc: str  # the chapter's file under book/ (the claims page pastes the verdict glued there)


CLAIMS: dict[str, Claim] = {
    c.key: c
    for c in [
        Claim(
            "picbreeder-vs-sgd",
            "Picbreeder networks score high on EMC2-Bench; dense SGD networks score near 0.",
            "EMC2-Bench",
            "EMC2 score of the layerized genomes vs the FER SGD and our dense networks",
            "emc2",
        ),
        Claim(
            "sp-vs-pruners",
            "Only similarity-based pruning scores above 0; Lottery Ticket, Wanda and LLM-Pruner score 0.",
            "Connectivity: which connections remain",
            "EMC2 score of SP and each baseline at matched sparsity, over seeds",
            "connectivity",
        ),
        Claim(
            "depth-optimum",
            "The compositional score peaks at a target-specific depth; shallower and deeper networks fail.",
            "Depth: a narrow, target-dependent regime",
            "EMC2 score vs depth per target, with intervals over seeds",
            "depth",
        ),
        Claim(
            "muon-above-adam",
            "Muon reaches a lower loss and a higher compositional score than Adam.",
            "Optimization: Adam, Muon, SGD",
            "final loss and EMC2 score of Adam, Muon and SGD at the sweet spot",
            "optimization",
        ),
        Claim(
            "png-ratio-linear",
            "The PNG compression ratio of a target is linear in its sweet-spot depth.",
            "Depth: a narrow, target-dependent regime",
            "linear fit of sweet-spot depth on PNG ratio: R², leave-one-out error",
            "depth",
        ),
        Claim(
            "rho-concentrated",
            "ρ(W, L) is concentrated at (W_min, L*) and decays exponentially away from it.",
            "The volume-ratio argument",
            "Monte Carlo ρ over a (W, L) grid on Boolean targets",
            "volume_ratio",
        ),
        Claim(
            "welch-r-le-d",
            "Monosemantic (orthogonal) features are feasible only when r ≤ d.",
            "Feature interference and the Welch bound",
            "coherence of frames and learned features against the Welch bound",
            "welch",
        ),
        Claim(
            "scenes-weaker",
            "The effect is weaker for multi-object scenes.",
            "Unknown targets",
            "compositional score on single-object images vs scenes",
            "unknown_targets",
        ),
    ]
}


# claims that can be measured without an EMC2 judge (the predictor: on true depths; on measured sweet
# spots it names the judge that found them)
NO_JUDGE = ("rho-concentrated", "welch-r-le-d", "png-ratio-linear")


def table():
    """One row per claim: statement, the chapter (and its file) whose experiment tests it, what it measures."""
    rows = [
        {"claim": c.statement, "chapter": c.chapter, "doc": f"book/{c.doc}.md", "experiment": c.experiment}
        for c in CLAIMS.values()
    ]
    return pd.DataFrame(rows, index=list(CLAIMS))
