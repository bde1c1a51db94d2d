"""Muon against Adam (the claim "muon-above-adam"), read from the stored runs under one reading.

Three studies of `volratio.experiments.optimizers` are stored, each optimizer read at its best
learning-rate setting, chosen on a loss and never on the score (`at_best_lr`):

- `matched` — the deciding comparison (chunk optimizers_matched): each cell's best settings by dense
  MSE, rerun on the same seeds, SP stopped at one non-zero count per cell (`matched_counts`: the
  sparser optimizer's median fit-point count) and every network scored there;
- `fit_point` — a check (the sparse chunks): each network scored at its own fit point, where the two
  optimizers' networks differ in size;
- `near_dense` — a check (chunk optimizers): width-12 networks that SP's loss guard keeps almost whole.

A reading is the judge the networks are scored under and how δ is read (`delta_scale`), on every
non-zero weight (`read=EVERY`, the every-weight rescores through the fused kernel) or on the runs'
own seeded sample (`read=SAMPLE`; both `volratio.emc2.reading.Reading`s of `volratio.report.readings`); each study's default reading is the one its verdict is decided on.
The runs are read once per process (the store does not change under a book build); the verdicts are
computed at each call, so that a verdict asked for outside `claims.unglued()` is always glued.

Chapters: "Optimization" (book/optimization.md) glues `matched` under the default judge;
"Evidence: optimization" (book/evidence_optimization.md) reads the other judges, δ and the checks.
"""

from __future__ import annotations

from functools import cache

import numpy as np
import pandas as pd

from ...emc2.reading import Reading
from ...experiments import optimizers as experiment
from ...judges import DEFAULT_JUDGE
from ...rho import recovery
from ...runs import recovered, stored
from ...util.verdicts import Estimate
from ..deciders import muon_above_adam_by_target
from ..render import Verdict, unglued
from . import EVERY
from . import SAMPLE as SAMPLE  # re-exported: the runs' own seeded sample, as a chapter passes `read=`

MATCHED = experiment.MATCHED_CHUNKS
SPARSE = experiment.SPARSE_CHUNKS
NEAR_DENSE = experiment.REFERENCE_CHUNKS
OWN_JUDGE = "anchored"  # the checks' runs' own judge: the fit-point and near-dense checks are read under it
ASKED = ("anchored-ssim", "stability")  # judges the comparison is asked under beyond those it is scored by


@cache
def _runs(chunks: tuple, read: Reading) -> pd.DataFrame:
    return experiment.stored_runs(chunks, reading=read)


@cache
def _reading(chunks: tuple, judges: tuple) -> Reading:
    return stored.judges_reading(chunks, judges)


def runs(chunks, judge: str, delta_scale: str = "absolute", read: Reading = EVERY) -> pd.DataFrame:
    """The stored runs of `chunks` scored under `judge`, δ read as `delta_scale`, on `read`
    (`experiment.stored_runs`, one row per run), read once per process; a copy, which the caller may
    change. A run without scores under that reading is an `ExperimentError` naming the rescore."""
    return _runs(tuple(chunks), read.but(judge=judge, delta_scale=delta_scale)).copy()


def reading(chunks, judges) -> Reading:
    """Every non-zero weight (`EVERY`) where each of `judges` has every-weight scores for every run of
    `chunks`, else the runs' own seeded sample (`SAMPLE`): `volratio.runs.stored.judges_reading`."""
    return _reading(tuple(chunks), tuple(judges))


def scored_on(chunks, read: Reading) -> str:
    """What a reading of `chunks` scores, in words, for the verdicts' text."""
    if read.every:
        return "every non-zero weight"
    n = stored.records(tuple(chunks)[0])[0]["config"]["max_params"]
    return f"the runs' own seeded sample of up to {n:,} weights per network"


def _seeds(runs_: pd.DataFrame) -> int:
    """The seeds per setting (the most any cell has)."""
    return int(runs_.groupby(["target", "depth", "setting"]).seed.nunique().max())


# --- the deciding comparison: one non-zero count per cell ------------------------------------


def matched_reading() -> Reading:
    """The deciding reading of the matched chunk: every weight where the default judge has scored it."""
    return reading(MATCHED, (DEFAULT_JUDGE,))


def matched_runs(
    judge: str = DEFAULT_JUDGE, delta_scale: str = "absolute", read: Reading | None = None
) -> pd.DataFrame:
    """The matched chunk's runs under a reading (`read=None`: `matched_reading()`)."""
    return runs(MATCHED, judge, delta_scale, matched_reading() if read is None else read)


def matched_counts() -> pd.DataFrame:
    """The non-zero count each cell's optimizers are compared at (`experiment.matched_counts`), from
    the fit-point networks' sizes alone."""
    return experiment.matched_counts(fit_point_runs())


@cache
def _matched_detail() -> str:
    counts = ", ".join(f"{c:,}" for c in matched_counts()["count"])
    return (
        f"each optimizer at its best lr by dense MSE, {_seeds(matched_runs())} seeds; sparse regime, both "
        f"optimizers' networks pruned by SP to one non-zero count per cell ({counts}), scored there on "
        f"{scored_on(MATCHED, matched_reading())}; pooled over the target × depth cells"
    )


def matched(judge: str = DEFAULT_JUDGE, delta_scale: str = "absolute", read: Reading | None = None) -> Verdict:
    """The claim's verdict, decided at one non-zero count per cell: the matched chunk's networks
    under a reading (`read=None`: `matched_reading()`), each optimizer at its best setting by dense
    MSE, pooled over the target × depth cells (`claims.muon_above_adam_by_target`, matched)."""
    r = matched_runs(judge, delta_scale, read)
    best = experiment.at_best_lr(r, loss="dense_loss")
    return muon_above_adam_by_target(best, _matched_detail(), scale="reference", judge=judge, stored=True,
                                     runs=r, matched=True, loss="dense_loss")  # fmt: skip


def matched_judges() -> tuple[list, list]:
    """`(scored, missing)`: the judges whose scores cover every matched network on the deciding
    reading, and those of `ASKED` that have none yet."""
    scored = stored.judges_covering(MATCHED, reading=matched_reading())
    return scored, [j for j in ASKED if j not in scored]


def matched_layer_std() -> Verdict | None:
    """The deciding comparison with each weight moved by δ × the std of its layer, under the default
    judge where its rescores cover every network (else the label-anchored judge's); None where no
    judge has scored that reading on every weight."""
    judge = stored.scaled_judge(MATCHED, DEFAULT_JUDGE, reading=EVERY) if matched_reading().every else None
    return matched(judge, "layer_std") if judge else None


# --- a check: each network at its own fit point ----------------------------------------------


def fit_point_reading() -> Reading:
    """The fit-point runs' reading: every weight where their own judge has scored every network."""
    return reading(SPARSE, (OWN_JUDGE,))


def fit_point_runs(judge: str = OWN_JUDGE, delta_scale: str = "absolute", read: Reading | None = None) -> pd.DataFrame:
    """The sparse chunks' runs, each network at its fit point, under a reading (`read=None`:
    `fit_point_reading()`)."""
    return runs(SPARSE, judge, delta_scale, fit_point_reading() if read is None else read)


@cache
def _fit_point_detail() -> str:
    r = fit_point_runs()
    return (
        f"each optimizer at its best lr by dense MSE, {_seeds(r)} seeds; sparse regime, each network at its fit "
        f"point (median weight sparsity {r.sparsity.median():.2f}, {r.nonzero.median():,.0f} non-zero weights), "
        f"scored on {scored_on(SPARSE, fit_point_reading())}; pooled over the target × depth cells"
    )


def fit_point(judge: str = OWN_JUDGE, delta_scale: str = "absolute", read: Reading | None = None) -> Verdict:
    """The comparison of each network at its own fit point (a check: the optimizers' networks differ
    in size there), each optimizer at its best setting by dense MSE, which no reading changes."""
    r = fit_point_runs(judge, delta_scale, read)
    best = experiment.at_best_lr(r, loss="dense_loss")
    return muon_above_adam_by_target(
        best, _fit_point_detail(), scale="reference", judge=judge, stored=True, runs=r, loss="dense_loss"
    )


# --- a check: the near-dense networks --------------------------------------------------------


def near_dense_runs(judge: str = OWN_JUDGE, delta_scale: str = "absolute", read: Reading = EVERY) -> pd.DataFrame:
    """The near-dense chunk's runs under a reading (default: every weight, the label-anchored judge)."""
    return runs(NEAR_DENSE, judge, delta_scale, read)


def near_dense(judge: str = OWN_JUDGE, delta_scale: str = "absolute", read: Reading = EVERY) -> Verdict:
    """The comparison on the near-dense networks (a check), each optimizer at its best setting by
    the final loss, which no reading changes."""
    r = near_dense_runs(judge, delta_scale, read)
    detail = f"each optimizer at its best lr by loss, {_seeds(r)} seeds"
    return muon_above_adam_by_target(experiment.at_best_lr(r), detail, runs=r, scale="reference", judge=judge,
                                     stored=True)  # fmt: skip


# --- judge-free: the recovery of the planted primitives ------------------------------------------

PLANTED = ("optimizers_planted",)  # Muon and Adam on planted targets at L*, one count per cell, every network kept


def planted_runs(field: str = "recovery", cfg: recovery.RecoveryConfig | None = None) -> pd.DataFrame:
    """The planted chunk's runs with `score` their network's `field` of the judge-free score
    (`volratio.runs.recovered`: "recovery", or its chance levels "chance_other", "chance_init"). No
    judge reads an image: every network counts as drawing unless SP flagged it collapsed, which
    scores it 0 as under every claim."""
    r = experiment.stored_runs(PLANTED)
    rec = recovered.table(PLANTED[0], cfg).set_index("key")[field]
    r["score"] = np.where(r.collapsed.fillna(False).astype(bool), 0.0, rec.loc[r.key].to_numpy())
    return r.assign(drawn=True)


def spread(runs_: pd.DataFrame) -> float:
    """The largest spread of the non-zero counts within one target's networks, (max − min) / min."""
    g = runs_.groupby("target").nonzero
    return float(((g.max() - g.min()) / g.min()).max())


def judge_free(cfg: recovery.RecoveryConfig | None = None) -> tuple[Verdict, dict]:
    """The claim decided by the judge-free score on planted targets (never glued: the claims page
    shows it as its own instrument): Muon's recovery minus Adam's, pooled over the targets, each
    optimizer at the planted chunk's one setting; and the same statistic on the score's two chance
    levels. Returns the verdict and `{"chance_other": Estimate, "chance_init": Estimate}`.

    Read as unmatched (`matched=False`: the size-adjusted regression is a sub-check beside it). SP
    prunes whole units, and a unit of these 24-wide networks carries about 3 % of their weights, so
    the counts of a target's networks lie up to 5.3 % apart, past the 5 % (`MATCHED_WITHIN`) a
    matched comparison allows. The chunk was committed as a matched comparison; this reading was
    chosen after its runs, when the matched one refused them."""
    out = {}
    with unglued():
        for field in ("recovery", "chance_other", "chance_init"):
            r = planted_runs(field, cfg)
            detail = (
                f"judge-free, on {r.target.nunique()} planted targets at L*, {_seeds(r)} seeds, both optimizers' "
                f"networks pruned by SP towards one non-zero count per target (within {spread(r):.1%}); recovery "
                "of the planted primitives"
            )
            out[field] = muon_above_adam_by_target(experiment.at_best_lr(r, loss="dense_loss"), detail,
                                                   scale="reference", stored=True, runs=r, loss="dense_loss")  # fmt: skip
    chance = {f: Estimate(**{k: out[f].evidence["statistic"][k] for k in ("mean", "lo", "hi")})
              for f in ("chance_other", "chance_init")}  # fmt: skip
    return out["recovery"], chance
