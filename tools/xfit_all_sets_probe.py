"""Probe: the cross-fitted gated rule fitted on *every* verdict set, and label-relative RMSE.

Not a judge of the library. "anchored-xfit" (`volratio.calibration.crossfit`) is fitted on the 849
rows of `verdicts.csv` (seven labels, three of them carrying nearly all rows), so its "held out by
label" test trains on two or three labels. Here the same cross-fitting (`crossfit.out_of_fold`,
`crossfit.leave_label_out`, unchanged) runs on the four verdict sets together — `verdicts.csv`,
`fork_targets.csv`, `new_targets.csv` and `sparse_regime.csv` (`fit_anchored.all_verdict_sets`,
every image regenerated from its network and hash-checked) — with the generated negatives
(`hard_negatives.feature_table`), for several feature sets.

Besides the library's features it tries *label-relative* RMSE: −RMSE divided by a reference RMSE
computed from the target alone (no verdict is fitted on), so one pooled threshold can carry to an
unseen label:

- `rel-flat`: the RMSE of the target's mean colour to the target;
- `rel-pix4`, `rel-pix8`: the RMSE of a 4×4 / 8×8 mosaic (area average) of the target to the target.

Prints Cohen's κ held out by network and by label, overall and per verdict set, and where the
by-network errors fall (false accepts and false rejections per set and group). Needs the Picbreeder
data, the fork targets and the reference store (`results/reference`). About 5 CPU-minutes.

    python tools/xfit_all_sets_probe.py
"""

from __future__ import annotations

import argparse

import pandas as pd
import torch.nn.functional as F

from volratio.calibration import crossfit, hard_negatives
from volratio.calibration import fit_anchored as fa
from volratio.judges.anchored import target_anchor
from volratio.judges.anchored_rule import FIT_RES
from volratio.judges.base import as_images, resample

FEATURE_SETS = [
    ("-rmse",),  # the stored rule's
    ("-rmse", "edges"),
    ("-rmse", "ssim@1"),
    ("-rmse", "edges", "-dcolour"),
    ("-rmse", "ssim@1", "ssim@2", "ssim@4", "ms-ssim", "edges", "-dcolour", "contrast", "detail"),
    ("rel-flat",),
    ("rel-pix8",),
    ("rel-pix8", "edges"),
    ("rel-pix8", "edges", "-dcolour"),
]


def reference_rmse(target: str) -> dict[str, float]:
    """The target's own reference RMSEs at `FIT_RES`: its mean colour, and 4×4 and 8×8 mosaics."""
    r = resample(as_images(target_anchor(target, FIT_RES)[None]), FIT_RES)[0]
    x = r.permute(2, 0, 1)[None]

    def rmse(img) -> float:
        return float(((img - r) ** 2).mean().sqrt())

    def mosaic(k: int):
        return F.interpolate(F.avg_pool2d(x, FIT_RES // k), scale_factor=FIT_RES // k, mode="nearest")[0].permute(
            1, 2, 0
        )

    return {"rel-flat": rmse(r.mean(dim=(0, 1))), "rel-pix4": rmse(mosaic(4)), "rel-pix8": rmse(mosaic(8))}


def add_relative(*tables: pd.DataFrame) -> None:
    refs = {t: reference_rmse(t) for t in set().union(*(set(d.target) for d in tables))}
    for d in tables:
        for name in ("rel-flat", "rel-pix4", "rel-pix8"):
            d[name] = d["-rmse"] / d.target.map(lambda t, n=name: refs[t][n])


def report(table: pd.DataFrame, generated: pd.DataFrame, names) -> dict:
    """Held-out κ by network and by label, overall and per set (`crossfit.agreement` itself)."""
    a = crossfit.agreement(table, generated, n_boot=1, by="set", names=names)["kappa"]
    return {f"{s}: {scheme}" if s != "all" else f"by {scheme}": round(float(v), 3) for (scheme, s), v in a.items()}


def errors(table: pd.DataFrame, generated: pd.DataFrame, names=("-rmse",)) -> pd.DataFrame:
    y = table.pass1.to_numpy().astype(bool)
    pred = crossfit.out_of_fold(table, generated, names=names)
    t = table.assign(false_accept=pred & ~y, false_reject=~pred & y)
    return t.groupby(["set", "group"]).agg(n=("pass1", "size"), kept=("pass1", "sum"),
                                            false_accept=("false_accept", "sum"),
                                            false_reject=("false_reject", "sum"))  # fmt: skip


def main(argv=None) -> None:
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args(argv)
    T, GEN = fa.all_verdict_sets(), hard_negatives.feature_table()
    add_relative(T, GEN)
    print(f"{len(T)} verdict rows, {T.label.nunique()} labels, {len(GEN)} generated negatives")
    print(pd.DataFrame({" + ".join(n): report(T, GEN, n) for n in FEATURE_SETS}).T.to_string())
    print("\nwhere the by-network errors fall (the stored rule's feature):")
    print(errors(T, GEN).to_string())


if __name__ == "__main__":
    main()
