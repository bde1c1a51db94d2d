"""The paper's claims and our verdicts on them.

Each claim of Do, Shah, Le, Liu (2026) that the book tests has a key, the paper's statement, and the
chapter whose experiment tests it. When a chapter runs, it calls `record(key, …)` with what it
measured; the verdict is computed from the measurements by the functions below
(`compare_estimates`, `verdict_from_fraction`), never typed by hand. Records are JSON files in the
results store (`results_dir()`), written atomically; the page "The paper's claims, tested" reads
them with `table()`.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path

from .errors import VolratioError
from .fileio import write_text_atomic

VERDICTS = ("reproduced", "partly", "not reproduced", "not measured")


@dataclass(frozen=True)
class Claim:
    key: str
    statement: str  # the paper's claim, in our words
    chapter: str  # title of the chapter whose experiment tests it
    experiment: str  # what we measure


CLAIMS: dict[str, Claim] = {
    c.key: c
    for c in [
        Claim("picbreeder-vs-sgd", "Picbreeder networks score high on EMC2-Bench; dense SGD networks score near 0.",
              "EMC2-Bench", "EMC2 score of the layerized genomes vs the FER SGD and our dense networks"),
        Claim("sp-vs-pruners", "Only similarity-based pruning scores above 0; Lottery Ticket, Wanda and LLM-Pruner score 0.",
              "Connectivity: which connections remain", "EMC2 score of SP and each baseline at matched sparsity, over seeds"),
        Claim("depth-optimum", "The compositional score peaks at a target-specific depth; shallower and deeper networks fail.",
              "Depth: a narrow, target-dependent regime", "EMC2 score vs depth per target, with intervals over seeds"),
        Claim("muon-above-adam", "Muon reaches a lower loss and a higher compositional score than Adam.",
              "Optimization: Adam, Muon, SGD", "final loss and EMC2 score of Adam, Muon and SGD at the sweet spot"),
        Claim("png-ratio-linear", "The PNG compression ratio of a target is linear in its sweet-spot depth.",
              "Depth: a narrow, target-dependent regime", "linear fit of sweet-spot depth on PNG ratio: R², leave-one-out error"),
        Claim("rho-concentrated", "ρ(W, L) is concentrated at (W_min, L*) and decays exponentially away from it.",
              "The volume-ratio argument", "Monte Carlo ρ over a (W, L) grid on Boolean targets"),
        Claim("welch-r-le-d", "Monosemantic (orthogonal) features are feasible only when r ≤ d.",
              "Feature interference and the Welch bound", "coherence of frames and learned features against the Welch bound"),
        Claim("scenes-weaker", "The effect is weaker for multi-object scenes.",
              "Unknown targets", "compositional score on single-object images vs scenes"),
    ]
}


def results_dir() -> Path:
    """`$VOLRATIO_RESULTS/claims`, else `results/claims` at the repository root."""
    base = os.environ.get("VOLRATIO_RESULTS")
    root = Path(base) if base else Path(__file__).resolve().parent.parent / "results"
    return root / "claims"


@dataclass(frozen=True)
class Estimate:
    """A measured quantity with an interval (e.g. a mean over seeds with its 95% CI)."""

    mean: float
    lo: float
    hi: float

    @classmethod
    def from_samples(cls, xs, level: float = 0.95) -> "Estimate":
        """Mean with a Student-t interval over the samples (a point when there is one sample)."""
        import numpy as np

        from .stats import mean_ci

        a = np.asarray(list(xs), dtype=float)
        if a.size == 0:
            raise VolratioError("an estimate needs at least one sample")
        return cls(*mean_ci(a, level))


def compare_estimates(higher: Estimate, lower: Estimate) -> str:
    """Verdict on "`higher` exceeds `lower`": reproduced when the intervals are separated in that
    direction, partly when only the means are ordered, not reproduced otherwise."""
    if higher.lo > lower.hi:
        return "reproduced"
    if higher.mean > lower.mean:
        return "partly"
    return "not reproduced"


def verdict_from_fraction(passed: int, total: int, all_needed: bool = True) -> str:
    """Verdict from a count of sub-claims that held: all → reproduced, some → partly, none → not."""
    if total <= 0:
        return "not measured"
    if passed == total:
        return "reproduced"
    return "partly" if passed > 0 else "not reproduced"


def combine(verdicts) -> str:
    """One verdict from the verdicts of a claim's parts: all reproduced → reproduced, none
    reproduced or partly → not reproduced, otherwise partly."""
    vs = [v for v in verdicts if v != "not measured"]
    if not vs:
        return "not measured"
    if all(v == "reproduced" for v in vs):
        return "reproduced"
    if all(v == "not reproduced" for v in vs):
        return "not reproduced"
    return "partly"


def lower_is_better(e: Estimate) -> Estimate:
    """Negate an estimate so that `compare_estimates` can test "lower than"."""
    return Estimate(-e.mean, -e.hi, -e.lo)


def record(key: str, verdict: str, measured: str, evidence: dict | None = None, scale: str = "quick",
           directory: Path | None = None, judge: str | None = None) -> Path:
    """Store what a chapter measured for claim `key` and the verdict computed from it; `judge`:
    which EMC2 judge the measurement used (None for claims that involve no judge)."""
    if key not in CLAIMS:
        raise VolratioError(f"unknown claim {key!r}; known: {', '.join(CLAIMS)}")
    if verdict not in VERDICTS:
        raise VolratioError(f"verdict must be one of {VERDICTS}, got {verdict!r}")
    from . import __version__

    payload = {"key": key, "verdict": verdict, "measured": measured, "evidence": evidence or {},
               "scale": scale, "volratio": __version__, "judge": judge}
    path = (directory or results_dir()) / f"{key}.json"
    return write_text_atomic(path, json.dumps(payload, indent=1, default=float))


def load(directory: Path | None = None) -> dict[str, dict]:
    """The records present (a corrupt record is reported as such, not silently dropped)."""
    out = {}
    d = directory or results_dir()
    for key in CLAIMS:
        p = d / f"{key}.json"
        if p.exists():
            try:
                out[key] = json.loads(p.read_text())
            except json.JSONDecodeError as e:
                out[key] = {"verdict": "not measured", "measured": f"corrupt record {p} ({e}); rerun its chapter",
                            "scale": "-"}
    return out


NO_JUDGE = ("rho-concentrated", "welch-r-le-d")  # claims whose measurement has no EMC2 judge


def _judge_text(key: str, rec: dict) -> str:
    if rec.get("judge"):
        return rec["judge"]
    if key in NO_JUDGE:
        return "no judge"
    return "not recorded" if rec.get("verdict") != "not measured" else "-"


def table(directory: Path | None = None):
    """One row per claim: statement, chapter, experiment, what we measured, verdict, scale, judge
    (the EMC2 judge the measurement used; "no judge" for claims without one, "not recorded" when
    the chapter did not say)."""
    import pandas as pd

    recs = load(directory)
    rows = []
    for key, c in CLAIMS.items():
        r = recs.get(key, {"verdict": "not measured", "measured": "its chapter has not recorded a result", "scale": "-"})
        rows.append({"claim": c.statement, "chapter": c.chapter, "experiment": c.experiment,
                     "we measured": r["measured"], "verdict": r["verdict"], "scale": r.get("scale", "-"),
                     "judge": _judge_text(key, r)})
    return pd.DataFrame(rows, index=list(CLAIMS))
