"""A label-anchored judge against inspection, held to the inspection's own repeatability.

For every verdict set with a blind repeat whose images regenerate here (`SETS`), and every group of
`repeatability.repeat_kappa` (label × network kind, small groups pooled), `compare` reports:

- the judge's κ with the first inspection (`pass1`) on every judged row of the group, with a
  bootstrap interval for groups of at least `repeatability.MIN_GROUP` images — weighted by the
  rows' sampling weights where the set has them (`clear16`);
- beside it the inspection's repeat κ (first pass against the blind repeat) and whether the group
  is ambiguous (repeat κ under 0.8: it supports no claim about the judge);
- the false-rejection rate among images both inspections keep (Wilson interval);
- whether the judge meets the line the default judge is held to: κ ≥ repeat κ − `TOLERANCE` on a
  group that is not ambiguous.

`false_rejections` gives the false rejections per label (or any column) for several judges side by
side: among the images both inspections keep, how many each judge rejects.

Each judge is asked about each row as EMC2 asks: built for the row's network and target, so a
cross-fitted judge ("anchored-v2", "anchored-xfit") reads the rule fitted without that network's
fold — its verdicts are held out on every set. The other anchored judges were fitted on the anchored
set's rows (`held_out` False there) and on no other set's.

Chapter: "EMC2-Bench" (book/emc2.md), section "The judge, validated"; `volratio judge-check`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch

from ..errors import VolratioError
from ..judges.anchored import ANCHORED, CROSSFITTED
from ..judges.registry import make_judge
from ..util.stats import binomial_interval
from . import anchored_set as A
from . import clear16 as C
from . import degraded
from . import repeatability as R

SETS = ("anchored", "fork", "new", "sparse", "degraded", "clear16")  # the first set retrains networks: not here
FITTED_ON = ("anchored",)  # sets the label-anchored judges that are not cross-fitted were fitted on
TOLERANCE = 0.05  # the judge's κ may lie this far under the inspection's repeat κ


def load(name: str, root=None) -> tuple[pd.DataFrame, list[torch.Tensor]]:
    """`(rows, images)` of the stored verdict set `name` (one of `SETS`), judged rows only, the
    images regenerated from the Picbreeder data and the reference store (`root`)."""
    if name == "clear16":
        df = C.load_verdicts()
        images = C.render(df, C.networks(root))
    elif name == "degraded":
        df, images = degraded.load(root=root)
    elif name in ("anchored", "fork", "new", "sparse"):
        path = {"anchored": A.VERDICTS_CSV, "fork": A.FORK_CSV, "new": A.NEW_CSV, "sparse": A.SPARSE_CSV}[name]
        nets = {"anchored": A.networks, "fork": lambda: A.fork_networks(root), "new": A.new_target_networks,
                "sparse": lambda: A.sparse_networks(root)}[name]()  # fmt: skip
        df = A.load_verdicts(path)
        images = A.render(df, nets)
    else:
        raise VolratioError(f"verdict set {name!r}: choose one of {', '.join(SETS)}")
    keep = df["pass1"].notna().to_numpy()
    return df[keep].reset_index(drop=True), [im for im, k in zip(images, keep) if k]


def _check_judge(judge: str) -> None:
    if judge not in ANCHORED:
        raise VolratioError(
            f"judge {judge!r}: the comparison with inspection takes the label-anchored judges ({', '.join(ANCHORED)})"
        )


def verdicts(judge: str, df: pd.DataFrame, images) -> np.ndarray:
    """`(len(df),)` bool: judge `judge` (a label-anchored one) on each row's image, built for the
    row's network and target and asked about its label."""
    _check_judge(judge)
    out = np.zeros(len(df), bool)
    for (network, target, label, _), part in df.groupby(["network", "target", "label", "res"], sort=False):
        idx = part.index.to_numpy()
        x = torch.stack([images[i] for i in idx])
        out[idx] = make_judge(judge, x[0], target, network=network)(x, label).verdicts
    return out


def _group_row(part: pd.DataFrame, said: np.ndarray, rep: dict, min_group: int, n_boot: int, seed: int) -> dict:
    y = part["pass1"].to_numpy(bool)
    w = part["weight"].to_numpy(float) if "weight" in part else None
    k = R.weighted_kappa(said, y, w)
    lo, hi = R.kappa_interval(said, y, w, n_boot=n_boot, seed=seed) if len(part) >= min_group else (np.nan, np.nan)
    both = (part["pass1"] == 1).to_numpy() & (part["pass2"] == 1).to_numpy()
    rejected = int((~said[both]).sum())
    fr_lo, fr_hi = binomial_interval(rejected, int(both.sum()))
    ambiguous = bool(rep.get("ambiguous", False))
    rk = rep.get("kappa", np.nan)
    return {"n": len(part), "kappa": k, "lo": lo, "hi": hi, "repeat_n": rep.get("n", 0), "repeat_kappa": rk,
            "repeat_lo": rep.get("lo", np.nan), "repeat_hi": rep.get("hi", np.nan), "ambiguous": ambiguous,
            "one_class": bool(rep.get("one_class", False)), "both_keep": int(both.sum()), "false_rejections": rejected,
            "false_rejection_rate": rejected / both.sum() if both.any() else np.nan, "fr_lo": fr_lo, "fr_hi": fr_hi,
            "meets": bool(np.isfinite(rk) and not ambiguous and k >= rk - TOLERANCE)}  # fmt: skip


def compare(judge: str, sets=SETS, root=None, min_group: int = R.MIN_GROUP, n_boot: int = 1000, seed: int = 0,
            loaded: dict | None = None) -> pd.DataFrame:  # fmt: skip
    """One row per set and group (see the module docstring), the set's `overall` row first.
    `loaded`: `{set: (rows, images)}` already loaded (`load`), for the sets it holds."""
    _check_judge(judge)
    if unknown := sorted(set(sets) - set(SETS)):
        raise VolratioError(f"verdict sets {unknown}: choose from {', '.join(SETS)}")
    out = []
    for name in sets:
        df, images = (loaded or {}).get(name) or load(name, root)
        said = verdicts(judge, df, images)
        table = R.repeat_kappa(df, min_group=min_group, n_boot=n_boot, seed=seed)
        reps = table.set_index("group").to_dict("index")
        held = judge in CROSSFITTED or name not in FITTED_ON
        groups = R.group_of(df, table)
        parts = [("overall", df.index.to_numpy())] + [
            (g, idx.to_numpy()) for g, idx in df.groupby(groups).groups.items()
        ]
        for g, idx in parts:
            part = df.loc[idx]
            row = _group_row(part, said[idx], reps.get(g, {}), min_group, n_boot, seed)
            out.append({"set": name, "group": g, "judge": judge, "held_out": held, **row})
    return pd.DataFrame(out)


def false_rejections(judges, df: pd.DataFrame, images, by: str = "label") -> pd.DataFrame:
    """Per value of column `by` of the verdicts `df` (rows judged twice, `pass1` and `pass2`), the
    images both inspections keep (`both_keep`) and, per judge of `judges` (label-anchored), how many
    of them it rejects (`<judge>`) with the share (`<judge> rate`); a last row `all`. Unweighted:
    counts of images, as `compare`'s false-rejection rate."""
    if by not in df.columns:
        raise VolratioError(f"verdicts have no column {by!r} to group the false rejections by")
    both = ((df["pass1"] == 1) & (df["pass2"] == 1)).to_numpy()
    idx = np.flatnonzero(both)
    part = df.iloc[idx].reset_index(drop=True)
    out = part.groupby(by, sort=True).size().rename("both_keep").to_frame()
    for judge in judges:
        rejected = ~verdicts(judge, part, [images[i] for i in idx])
        out[judge] = part.assign(r=rejected).groupby(by, sort=True)["r"].sum()
    out.loc["all"] = out.sum()
    for judge in judges:
        out[f"{judge} rate"] = out[judge] / out["both_keep"]
    return out.reset_index().rename(columns={"index": by})
