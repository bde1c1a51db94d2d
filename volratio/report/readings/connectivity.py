"""Claim "sp-vs-pruners" at the reference scale: SP against Lottery Ticket, Wanda and LLM-Pruner.

The verdict is read from the sparse regime's stored networks (experiment `sparse_regime`: SP from an
over-parameterised start, every baseline matched to it per layer, both checkpoints pooled) under one
reading, a judge and a `delta_scale`: "absolute" reads the score sets `regime.CLAIM` (the paper's
w ← w + δ, every judge), "layer_std" the set `regime.SCORES["regime_scaled"]` (δ × the std of the
weight's layer, the label-anchored judge only): the score stage's runs on the stored populations. A baseline network that has no path left from input to output
draws nothing: it scores 0, or is left out (`failed_as_zero`).

Chapters: book/connectivity.md decides the claim (`verdict`, `judges`, `layer_std_verdict`);
book/evidence_connectivity.md audits it (`per_checkpoint`), reads the near-dense check beside it
(`near_dense_verdict`: the same protocol's preset `NEAR_DENSE`, chunk `NEAR_DENSE_CHUNK` and its
score set `regime.SCORES["near_dense"]`) and words the quick-scale grid of SP's end points (`along_steps`,
`end_reasons`).
"""

from __future__ import annotations

import functools

import numpy as np
import pandas as pd

from ...errors import VolratioError
from ...experiments import sparse_regime as regime
from ...experiments.sparse_regime import scores as regime_scores
from ...judges import DEFAULT_JUDGE
from ...nets import Arch
from ...rho import recovery
from ...runs import recovered, stored
from ...runs.registry import artifact_name
from ...util.verdicts import Estimate
from ..deciders import sp_vs_pruners
from ..render import Verdict, unglued

COMPARED = ("sp", "imp", "wanda", "llm-pruner")  # SP and the three pruners the claim names

# delta_scale -> the score sets that read the claim's networks (`regime.SCORES`)
SCORED = {
    "absolute": regime.CLAIM,
    "layer_std": (regime.SCORES["regime_scaled"],),
}


@functools.cache
def _scores(delta_scale: str) -> pd.DataFrame:
    # the store does not change under a book build: read each reading's chunks once per process
    if delta_scale not in SCORED:
        raise VolratioError(f"delta_scale {delta_scale!r} is not a reading of δ; use one of {', '.join(SCORED)}")
    return regime_scores.stored_scores(SCORED[delta_scale])


def scores(delta_scale: str = "absolute") -> pd.DataFrame:
    """The sparse regime's stored networks, one row per network (every method, both checkpoints),
    with `emc2_auc:<judge>` and `base_kept:<judge>` per stored judge (`regime_scores.stored_scores`). A copy:
    the caller may change it."""
    return _scores(delta_scale).copy()


def judges(delta_scale: str = "absolute") -> list[str]:
    """The judges the claim's networks are scored under, in the order they are stored."""
    return [c.split(":", 1)[1] for c in _scores(delta_scale).columns if c.startswith("emc2_auc:")]


def rows(judge: str = DEFAULT_JUDGE, failed_as_zero: bool = True, delta_scale: str = "absolute") -> pd.DataFrame:
    """The networks the claim compares (`COMPARED`, both checkpoints) with `emc2_auc`, `base_kept` and
    `judge` those under `judge`. A network with no path left (`failed`) scores 0, or is left out when
    `failed_as_zero` is False."""
    table = _scores(delta_scale)
    if f"emc2_auc:{judge}" not in table:
        raise VolratioError(
            f"the sparse regime's networks are not scored under judge {judge!r} with δ read {delta_scale!r} "
            f"(stored: {', '.join(judges(delta_scale)) or 'none'}); score them with the score stage, "
            f"`volratio reference rescore CHUNK --judge {judge} …` as `regime.SCORES`' commands do"
        )
    return _under(table[table.method.isin(COMPARED)], judge, failed_as_zero)


def _under(table: pd.DataFrame, judge: str, failed_as_zero: bool = True) -> pd.DataFrame:
    """`table` with `emc2_auc`, `base_kept` and `judge` those under `judge`; a network with no path left
    (`failed`) scores 0, or is left out when `failed_as_zero` is False."""
    out = table.copy()
    out["emc2_auc"] = out[f"emc2_auc:{judge}"].astype(float)
    out["base_kept"] = out[f"base_kept:{judge}"]  # with `collapsed`: the decider scores a network that does not draw 0
    if "failed" in out:
        out.loc[out.failed.notna(), "emc2_auc"] = 0.0 if failed_as_zero else np.nan
    return out.dropna(subset=["emc2_auc"]).assign(judge=judge)


def no_path(delta_scale: str = "absolute") -> int:
    """How many of the compared networks have no path left (a baseline pruned to SP's sizes)."""
    table = _scores(delta_scale)
    return int(table[table.method.isin(COMPARED)].failed.notna().sum()) if "failed" in table else 0


def at(delta_scale: str = "absolute") -> str:
    """Where the claim is decided, in words: SP's median sparsity and non-zero count per checkpoint."""
    table = _scores(delta_scale)
    sparsity = ", ".join(
        f"{c}: median weight sparsity {g.sparsity.median():.3f}, {g.nonzero.median():,.0f} non-zero"
        for c, g in table[table.method == "sp"].groupby("checkpoint")
    )
    return f"decided on the sparse regime, both checkpoints pooled ({sparsity})"


def verdict(
    judge: str = DEFAULT_JUDGE, failed_as_zero: bool = True, delta_scale: str = "absolute"
) -> tuple[Verdict, pd.DataFrame]:
    """The claim's verdict under one reading, and its per-method table (`claims.sp_vs_pruners` on
    `rows`). Glued for the claims page when called in a notebook outside `claims.unglued()`."""
    return sp_vs_pruners(
        rows(judge, failed_as_zero, delta_scale), scale="reference", judge=judge, stored=True, at=at(delta_scale)
    )


def layer_std_verdict(judge: str = "anchored") -> Verdict | None:
    """The verdict with every weight moved by δ × the std of its layer (never glued: the claims page
    shows it beside the deciding one), or None until every score run of its set (`SCORED["layer_std"]`)
    is stored. `judge`: the one judge that set scores under."""
    if regime.REFERENCE_CHUNK not in stored.chunks():
        return None
    for s in SCORED["layer_std"]:
        done, total = s.progress()
        if done != total:
            return None
    with unglued():
        return verdict(judge, delta_scale="layer_std")[0]


def per_checkpoint(judge: str = DEFAULT_JUDGE) -> pd.DataFrame:
    """Per checkpoint and method: the networks, how many draw their target under `judge` (one with no
    path draws nothing), SP's median weight sparsity and the mean EMC2 AUC with its 95% interval."""
    out = []
    for c, g in rows(judge).groupby("checkpoint"):
        for m, h in g.groupby("method", sort=False):
            e = Estimate.from_samples(h.emc2_auc)
            drawn = h[f"base_kept:{judge}"].astype("boolean").fillna(False)
            out.append({"checkpoint": c, "method": m, "networks": len(h), "drawn": int(drawn.sum()),
                        "weight sparsity (median)": h.sparsity.median(),
                        "EMC2 AUC": f"{e.mean:.3f} [{e.lo:.3f}, {e.hi:.3f}]"})  # fmt: skip
    return pd.DataFrame(out).set_index(["checkpoint", "method"])


# The near-dense check: the same protocol on narrow networks, SP guarded (`regime.NEAR_DENSE`).


@functools.cache
def _near_dense() -> pd.DataFrame:
    return regime_scores.stored_scores(regime.SCORES["near_dense"])


def near_dense_table() -> pd.DataFrame:
    """The near-dense check's stored networks, one row per target × seed × method (the dense networks,
    SP and every baseline matched per layer at SP's end), with their fit, file and arch
    (`regime_scores.stored_scores`); a copy."""
    return _near_dense().copy()


def near_dense_judges() -> list[str]:
    """The judges the near-dense networks are scored under: the set's order (the deciding one first)."""
    have = {c.split(":", 1)[1] for c in _near_dense().columns if c.startswith("emc2_auc:")}
    return [j for j in regime.NEAR_DENSE_JUDGES if j in have] + sorted(have - set(regime.NEAR_DENSE_JUDGES))


def near_dense_rows(judge: str = DEFAULT_JUDGE) -> tuple[pd.DataFrame, list]:
    """`(rows, left_out)`: every near-dense network with `emc2_auc` and `base_kept` under `judge`, on the
    seeds whose dense network draws its target under that judge (`regime_scores.dense_drawn`), and the
    `(target, seed)` pairs left out."""
    if judge not in near_dense_judges():
        raise VolratioError(
            f"the near-dense networks are not scored under judge {judge!r} (stored: {', '.join(near_dense_judges())})"
        )
    table, left_out = regime_scores.dense_drawn(_near_dense(), judge)
    return _under(table, judge), left_out


def near_dense_verdict(judge: str = DEFAULT_JUDGE) -> tuple[Verdict, pd.DataFrame]:
    """The claim on the near-dense networks under `judge`, on the seeds whose dense network draws its
    target (`near_dense_rows`). A check beside the verdict: call it within `claims.unglued()` so that it
    does not replace the sparse regime's verdict."""
    rows, _ = near_dense_rows(judge)
    sp = rows[rows.method == "sp"]
    at = f"near-dense networks, SP's mean weight sparsity {sp.sparsity.mean():.3f}"
    return sp_vs_pruners(rows[rows.method.isin(COMPARED)], scale="reference", judge=judge, stored=True, at=at)


def near_dense_configs() -> tuple:
    """`(config, emc2)`: the settings of the stored near-dense runs (the first run's `sparse_regime.Config`:
    the runs differ in target and arch) and the EMC2 settings their networks were scored at."""
    return regime.stored_config(regime.NEAR_DENSE_CHUNK), regime.SCORES["near_dense"].settings()


def near_dense_archs() -> dict[str, Arch]:
    """The architecture each target's near-dense networks were trained in (its own or the preset's)."""
    return {
        t.split(":", 1)[1]: Arch.parse(a) for t, a in _near_dense().groupby("target", sort=False).arch.first().items()
    }


def dense_weights(arch: Arch, n_in: int = 4, n_out: int = 3) -> int:
    """The weights of a dense network of `arch`: `n_in` inputs (y, x, d and the constant bias input),
    `n_out` colour channels."""
    dims = [n_in] + [arch.width] * arch.depth + [n_out]
    return sum(a * b for a, b in zip(dims[:-1], dims[1:]))


# Words for the quick-scale grid of SP's end points (`regime.endpoint_grid`), built from its numbers.


def trend(values) -> str:
    """Which way a sequence moves: rising or falling at every step, or neither."""
    d = np.diff(np.asarray(values, dtype=float))
    if (d > 0).all() or (d < 0).all():
        return ("rising" if d[0] > 0 else "falling") + " at every step"
    return "neither rising nor falling at every step"


def along_steps(grid_by: pd.DataFrame, col: str, fmt: str) -> str:
    """Per τ start, the medians of `col` as the retraining steps grow, and which way they move.
    `grid_by`: the grid's medians indexed by (`tau`, `retrain_steps`)."""
    return "; ".join(
        f"from τ {t:g}: " + " → ".join(fmt.format(v) for v in g[col]) + f" ({trend(g[col])})"
        for t, g in grid_by.groupby(level="tau", sort=False)
    )


def _end_reason(row) -> str:
    if row.stage == "end" and row.stop == "target size":
        return "reached the goal"
    return "had no redundant pair left" if row.stop == "no redundant pair" else "ran out of rounds"


def end_reasons(grid: pd.DataFrame) -> str:
    """Why SP stopped, counted over the grid's end points ("3 reached the goal, 2 ran out of rounds");
    the goal is always named, with 0 when no network reached it."""
    whys = grid.apply(_end_reason, axis=1).value_counts()
    reasons = ("reached the goal", *whys.index.drop("reached the goal", errors="ignore"))
    return ", ".join(f"{int(whys.get(w, 0))} {w}" for w in reasons)


# --- judge-free: the recovery of the planted primitives ------------------------------------------

PLANTED_CHUNK = "sparse_regime_planted"  # the same protocol on planted targets at L*, every population stored
JUDGE_FREE_ARMS = (*COMPARED, "random-units")  # the claim's pruners, and units kept at random as a floor


def recovery_rows(field: str = "recovery", cfg: recovery.RecoveryConfig | None = None) -> pd.DataFrame:
    """The planted chunk's compared networks (`JUDGE_FREE_ARMS`, at SP's end) with `emc2_auc` their
    `field` of the judge-free score (`volratio.runs.recovered`: "recovery", or its chance levels
    "chance_other", "chance_init"), in the place of the EMC2 AUC. No judge reads an image: every
    network counts as drawing (`base_kept`) unless SP's or the baseline's run flagged it collapsed,
    which scores it 0 as under every claim; one with no path left (`failed`) scores 0."""
    t = regime.stored_table(PLANTED_CHUNK)
    t = t[(t.kind == "checkpoint") & t.method.isin(JUDGE_FREE_ARMS)].copy()
    t["population"] = [artifact_name((m, c)) for m, c in zip(t.method, t.checkpoint)]
    rec = recovered.table(PLANTED_CHUNK, cfg)[["key", "population", "member", field]]
    out = t.merge(rec, on=["key", "population", "member"], how="left", validate="one_to_one")
    out["emc2_auc"] = out[field].astype(float)
    out.loc[out.collapsed.fillna(False).astype(bool), "emc2_auc"] = 0.0  # the rule of every claim, made visible
    if "failed" in out:
        out.loc[out.failed.notna(), "emc2_auc"] = 0.0
    return out.assign(base_kept=True, judge="recovery")


def judge_free(cfg: recovery.RecoveryConfig | None = None) -> tuple[Verdict, dict]:
    """The claim decided by the judge-free score on planted targets (never glued: the claims page
    shows it as its own instrument): SP against the strongest of the claim's pruners by the pooled
    statistic of `sp_vs_pruners`, and the same statistic on the score's two chance levels. Returns
    the verdict and `{"chance_other": Estimate, "chance_init": Estimate}`."""
    with unglued():
        v, _ = sp_vs_pruners(recovery_rows("recovery", cfg), scale="reference", stored=True, at=planted_at())
        chance = {f: _statistic(sp_vs_pruners(recovery_rows(f, cfg), scale="reference", stored=True)[0])
                  for f in ("chance_other", "chance_init")}  # fmt: skip
    return v, chance


def _statistic(v: Verdict) -> Estimate:
    s = v.evidence["statistic"]
    return Estimate(s["mean"], s["lo"], s["hi"])


def planted_at() -> str:
    t = regime.stored_table(PLANTED_CHUNK)
    sp = t[(t.kind == "checkpoint") & (t.method == "sp")]
    return (f"judge-free, on {sp.target.nunique()} planted targets at L*: recovery of the planted primitives at "
            f"SP's end (median weight sparsity {sp.sparsity.median():.2f}, {sp.nonzero.median():,.0f} non-zero)")  # fmt: skip
