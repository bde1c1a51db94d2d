"""Picbreeder above dense SGD, read from the store.

The claim is decided on sixteen targets (chunks `twins16_picbreeder` and `twins16`): each target's
Picbreeder network against three dense twins of its own architecture, every network judged against
one anchor, the target's `target.png` at the scoring resolution (the twins' training image). The
stored runs judged each network against the target's own image, so every label-anchored reading
comes from their rescore runs on that anchor (`volratio reference rescore CHUNK --anchor png`). The
three-target chunks (`emc2`: the Picbreeder and FER SGD networks; `emc2_dense`: our dense networks
and their SP copies) sit beside the deciding comparison in the verdict's parts.
"""

from __future__ import annotations

from functools import cache

import pandas as pd

from ...emc2.reading import Reading
from ...experiments import sparse_regime as regime
from ...experiments import twins
from ...experiments.sparse_regime import scores as regime_scores
from ...judges import SELF_ANCHORED
from ...runs import stored
from .. import claims

SIXTEEN = ("twins16_picbreeder", "twins16")  # the Picbreeder networks' chunk, then their twins'
THREE = "emc2"  # Picbreeder and FER SGD networks of skull, butterfly and apple
DENSE = "emc2_dense"  # our dense networks and their SP copies of the same three targets


def three_targets() -> pd.DataFrame:
    """One row per network × judge of the three-target chunk (Picbreeder and FER SGD)."""
    return _table(THREE).copy()


def dense() -> pd.DataFrame:
    """One row per seed × network × judge of our dense networks and their SP copies."""
    return _table(DENSE).copy()


@cache
def _table(chunk: str) -> pd.DataFrame:
    return stored.table(chunk)


def three_by_judge(judges) -> pd.DataFrame:
    """Each three-target network's AUC under each of `judges` (columns): exact where every weight was
    scored, else ± 1.96 standard errors of the sampled weights' mean (finite-population corrected)."""
    t = three_targets()
    t["AUC"] = [f"{a:.3f} ± {1.96 * s:.3f}" if s > 0 else f"{a:.3f}" for a, s in zip(t.auc, t.auc_se)]
    return t.pivot_table(index=["target", "network"], columns="judge", values="AUC", aggfunc="first").reindex(
        columns=list(judges)
    )


def dense_by_judge(judges, deciding: str) -> pd.DataFrame:
    """Our dense networks and their SP copies: the mean AUC over the seeds with its t-interval under
    each of `judges`, and, under `deciding`, the seeds, the median MSE and the networks SP collapsed."""

    def interval(a):
        e = claims.Estimate.from_samples(a)
        return f"{e.mean:.3f} [{e.lo:.3f}, {e.hi:.3f}]"

    by = (
        dense()
        .groupby(["target", "network", "judge"], sort=False)
        .agg(seeds=("auc", "size"), mse=("mse", "median"), collapsed=("collapsed", "sum"), auc=("auc", interval))
    )
    return (
        by.unstack("judge")["auc"]
        .reindex(columns=list(judges))
        .join(by.xs(deciding, level="judge")[["seeds", "mse", "collapsed"]])
    )


@cache
def sixteen_stored() -> pd.DataFrame:
    """The sixteen-target runs as stored: each network judged against its target's own image."""
    return pd.concat([stored.table(c) for c in SIXTEEN], ignore_index=True)


@cache
def twin_config() -> twins.Config:
    """The twins' settings (steps, resolution, weights scored): one config for every twin, the
    target and seed aside; the Picbreeder networks are scored at the same resolution."""
    return twins.parse_point(stored.records(SIXTEEN[1])[0]["config"])


def anchor() -> str:
    res = twin_config().res
    return f"target.png at {res}×{res}, the twins' training image"


@cache
def sixteen(judge: str, delta_scale: str = "absolute") -> "pd.DataFrame | None":
    """The sixteen-target rows under `judge`, δ read as `delta_scale`, on the one anchor; None where
    the rescore runs do not cover every stored network yet. A self-anchored judge compares each
    network with its own render, so under the paper's δ the stored runs stand."""
    if judge in SELF_ANCHORED and delta_scale == "absolute":
        return sixteen_stored()
    rs = pd.concat(
        [stored.rescore_table(c, Reading(judge, anchor="png", delta_scale=delta_scale)) for c in SIXTEEN],
        ignore_index=True,
    )
    base = sixteen_stored()
    return twins.rescored_as(base, rs, judge) if len(rs) == len(base) else None


def scored(judges) -> list[str]:
    """Of `judges`, those every chunk of the claim is scored under (three targets, our dense
    networks, and the sixteen targets' rescores)."""
    three, ours = _table(THREE), _table(DENSE)
    n_three, n_ours = three.groupby("judge").size(), ours.groupby("judge").size()
    full_three, full_ours = n_three.max(), n_ours.max()
    return [
        j
        for j in judges
        if n_three.get(j, 0) == full_three and n_ours.get(j, 0) == full_ours and sixteen(j) is not None
    ]


def verdict(judge: str, delta_scale: str = "absolute"):
    """The claim under `judge` and δ read as `delta_scale`: decided on the sixteen targets
    (networks that never draw their label scored 0; the reading with them left out beside it), with
    the three-target comparisons with FER's networks and ours beside it. Returns the verdict and its
    parts (one row per comparison and target)."""
    rows = sixteen(judge, delta_scale)
    if rows is None:
        raise LookupError(
            f"the sixteen-target networks have no rescore under {judge!r} with δ {delta_scale}: run "
            f"`volratio reference rescore twins16 --judge {judge} --anchor png --delta-scale {delta_scale}` "
            "(and twins16_picbreeder)"
        )
    three, ours = _table(THREE), _table(DENSE)
    return claims.picbreeder_vs_sgd_stored(
        three[three.judge == judge],
        dense=ours[ours.judge == judge],
        sixteen=twins.paired(rows, judge),
        sixteen_zero=twins.paired(rows, judge, failed="zero"),
        anchor=anchor(),
    )


def scaled_verdict(deciding: str, fallback: str = "anchored"):
    """The claim under δ × each weight's layer std: under the deciding judge where its rescores
    cover the sixteen targets, else under `fallback`; None where neither does."""
    judge = next((j for j in (deciding, fallback) if sixteen(j, "layer_std") is not None), None)
    return verdict(judge, "layer_std")[0] if judge else None


def size_twins(judge: str = "anchored", root=None, scores=None) -> pd.DataFrame:
    """Claim 1 at equal size: the networks of the sparse regime's targets by size, one row per
    network: `target`, `kind` ("Picbreeder", "dense twin": the Picbreeder architecture trained
    densely (chunk twins16), "SP twin": SP's networks, "scratch twin": dense networks of SP's size,
    at each `checkpoint`), `member`, `nonzero`, `auc` and `base_kept` under `judge`
    (`volratio.experiments.sparse_regime.scores.stored_scores` of the score set `scores`, default
    `regime.SCORES["regime"]`, and the sixteen-target chunks).

    Every network is judged against the target's own image at 64×64 (anchor "image": for a
    Picbreeder target, the Picbreeder network's render), the image the regime's networks are trained
    on: the SP and scratch twins are asked about their training image, and the Picbreeder network
    about its own render (its base RMSE is 0, the easier question on its side). The dense twins of
    twins16 were trained on target.png, so that anchor handicaps them (the EMC2 chapter's one-anchor
    reading judges them against target.png instead)."""
    scores = regime_scores.stored_scores(regime.SCORES["regime"] if scores is None else scores, root=root)
    targets = {t.split(":", 1)[1] for t in scores.target}
    rows = []
    for chunk, kind in zip(SIXTEEN, ("Picbreeder", "dense twin")):
        for r in stored.records(chunk, stored.DEFAULT_ROOT if root is None else root):
            c, m = r["config"], r["metrics"]
            if c["target"] not in targets or c.get("anchor", "image") != "image":
                continue
            rows.append({"target": f"picbreeder:{c['target']}", "kind": kind, "checkpoint": None,
                         "member": c["seed"], "nonzero": int(m["n_nonzero"]), "auc": float(m[f"auc_{judge}"]),
                         "base_kept": bool(m[f"base_kept_{judge}"])})  # fmt: skip
    ok = scores[scores.method.isin(["sp", "scratch"])]
    ok = ok[ok.failed.isna()] if "failed" in ok else ok
    for _, s in ok.iterrows():
        rows.append({"target": s.target, "kind": f"{'SP' if s.method == 'sp' else 'scratch'} twin",
                     "checkpoint": s.checkpoint, "member": int(s.member), "nonzero": int(s.nonzero),
                     "auc": float(s[f"emc2_auc:{judge}"]), "base_kept": bool(s[f"base_kept:{judge}"])})  # fmt: skip
    return pd.DataFrame(rows)
