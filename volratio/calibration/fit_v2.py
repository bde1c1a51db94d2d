"""The default judge's rule ("anchored-v2"): aligned, gated, refit on recognisable degraded drawings.

The gated judge ("anchored-gated", `fit_anchored.fit_gated`) rejects every generated negative
(`hard_negatives`), but its gate was fitted on the first verdict set alone and rejected drawings that
plainly show the label when they are blurrier, shifted, faded or recoloured. The default judge's
rule is fitted so that it passes them (`fit_rule`):

1. every image is aligned to its target within `ALIGN` pixels before any feature
   (`volratio.judges.anchored_rule.align`): a drawing a few pixels off its target is compared
   where it lies;
2. the logistic model and the per-label thresholds are fitted, as the default's, on the first
   verdict set's training rows only (`fit_anchored.fit`; the degraded set's labels and edits do
   not move them);
3. the structure gate (`GATE_FEATURES`) is fitted for the best κ on the first set's and the
   degraded set's training rows (`volratio.calibration.degraded`) *among the gates that reject
   every training generated negative* the model keeps (`fit_anchored.fit_gate(reject=…)`).

The stored rule (`V2_RULE_JSON`) is cross-fitted by network (`volratio.calibration.crossfit`, the
same folds as "anchored-xfit": the first set's, the degraded set's and the generated networks dealt
per group): the judge scores a network of either verdict set by the rule fitted without its fold and
any other network by the rule fitted on every row. `compare_defaults` reports the held-out agreement
of the old default ("anchored") and this one on every verdict set, by network and by label, with
network-bootstrap intervals, and the share of generated negatives each rejects held out.

Chapter: "EMC2-Bench" (book/emc2.md), section "The judge, validated".
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..judges.anchored_rule import ALIGN, FIT_RES, LogisticRule, read_rule
from . import crossfit as cf
from . import degraded
from . import fit_anchored as fa
from . import hard_negatives as H

NAME = "anchored-v2"  # the judge, and its stored rule file
OLD = "anchored"  # the default it replaces, kept under its own name


def tables(root=None, shift: int = ALIGN) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """`(fitted, generated, held_out)` feature tables, every image aligned within `shift` pixels:
    the first verdict set's rows and the degraded set's (`set` "set" / "degraded"), the generated
    negatives (with 8×8 mosaics too, `hard_negatives.MOSAICS_V2`), and the three held-out sets' rows (`set` "fork", "new", "sparse"; never fitted on).
    Needs the Picbreeder data, the fork's targets and the reference store (`root`). A minute."""
    first = fa.verdict_table(names=H.TABLE_FEATURES, shift=shift).assign(set="set")
    fitted = pd.concat([first, degraded.feature_table(root=root, shift=shift).assign(set="degraded")],
                       ignore_index=True)  # fmt: skip
    held = pd.concat([fa.held_out_table(path, H.TABLE_FEATURES, root, shift).assign(set=name)
                      for name, path in fa.VERDICT_SETS.items() if path is not None], ignore_index=True)  # fmt: skip
    generated = H.feature_table(shift=shift, mosaics=H.MOSAICS_V2)
    return fitted, generated, held[held["pass1"].notna()].reset_index(drop=True)


def fit_rule(table, generated, train_mask=None, gen_mask=None, names=None, shift: int = ALIGN) -> LogisticRule:
    """The default judge's rule on the training rows (`train_mask` of `table`, `gen_mask` of
    `generated`; default all): the model and thresholds on the first set's rows (`fit_anchored.fit`,
    features `names`, default the old default's), the gate on those and the degraded set's rows for
    the best κ among the gates that reject every generated negative the model keeps. `table`'s
    features must have been computed with the same `shift`."""
    names = tuple(names or read_rule().features)
    t = table if train_mask is None else table[np.asarray(train_mask, bool)]
    g = generated if gen_mask is None else generated[np.asarray(gen_mask, bool)]
    rule = _model(t, names)
    both = pd.concat([t, g], ignore_index=True)
    fb = {f: both[f].to_numpy() for f in both.columns if f in (*names, *fa.GATE_FEATURES)}
    pred = rule.predict(fb, both["label"].to_numpy())
    rule.gate = fa.fit_gate(fb, both["pass1"].to_numpy().astype(bool), pred,
                            reject=(both["group"] == H.GROUP).to_numpy())  # fmt: skip
    rule.shift = int(shift)
    rule.fitted_on = {"n": int((~t["group"].isin(degraded.GROUPS)).sum()), "n_gate": int(len(t)), "n_generated": int(len(g)), "res": FIT_RES,
                      "selected_by": "model on the first set; gate by kappa on the first and degraded sets, "
                                     "rejecting every generated negative"}  # fmt: skip
    return rule


def _model(t: pd.DataFrame, names) -> LogisticRule:
    """The logistic model and per-label thresholds (`fit_anchored.fit`) on the first set's rows of `t`."""
    m = t[~t["group"].isin(degraded.GROUPS)]
    return fa.fit({f: m[f].to_numpy() for f in names}, m["pass1"].to_numpy(), m["label"].to_numpy(), names)


def _old(table, generated, train_mask=None, gen_mask=None) -> LogisticRule:
    """The old default's rule ("anchored": no gate, no alignment) fitted on the first set's training rows."""
    return _model(table if train_mask is None else table[np.asarray(train_mask, bool)], read_rule().features)


def fit_stored(fitted, generated) -> dict:
    """The cross-fitted rules the judge reads (`crossfit.crossfit` with `fit_rule`); store them with
    `crossfit.write(rules, V2_RULE_JSON)`."""
    return cf.crossfit(fitted, generated, fit=fit_rule)


def _predict(rule: LogisticRule, t: pd.DataFrame) -> np.ndarray:
    return rule.predict({c: t[c].to_numpy() for c in rule.needs}, t["label"].to_numpy())


def compare_defaults(tables_v2, tables_old, n_boot: int = 1000) -> pd.DataFrame:
    """Held-out agreement with the verdicts by inspection of the old default (`OLD`) and the new
    (`NAME`), per verdict set and overall: on the fitted sets by network (each row judged by the rule
    fitted without its network's fold) and by label (by a rule fitted without its label); on the
    held-out sets by the rule fitted on every row (they are never fitted on). Rows: n, accuracy, κ
    and its 95% network-bootstrap interval, and for the generated negatives the share rejected (held
    out by network). `tables_v2`: `tables()`; `tables_old`: `tables(shift=0)`, the images as the old
    default sees them (unaligned). Indexed by (judge, held out by, set)."""
    out = []
    for judge, fit, (fv, gen, ho) in ((OLD, _old, tables_old), (NAME, fit_rule, tables_v2)):
        folds = cf.crossfit(fv, gen, fit=fit)
        f_v, f_g = cf._fold_rows(fv, gen, folds["folds"])
        oof, oof_gen = np.zeros(len(fv), bool), np.zeros(len(gen), bool)
        for f, rule in enumerate(folds["rules"]):
            oof[f_v == f] = _predict(rule, fv[f_v == f])
            oof_gen[f_g == f] = _predict(rule, gen[f_g == f])
        by_label = cf.leave_label_out(fv, gen, fit=fit)
        schemes = [("network", fv, oof), ("label", fv, by_label), ("never fitted", ho, _predict(folds["all"], ho))]
        for scheme, t, pred in schemes:
            truth = t["pass1"].to_numpy().astype(bool)
            for s in [*sorted(set(t["set"])), "all"]:
                sel = np.ones(len(t), bool) if s == "all" else (t["set"] == s).to_numpy()
                lo, hi = cf.network_interval(pred[sel], truth[sel], t["network"].to_numpy()[sel], n_boot)
                out.append({"judge": judge, "held out by": scheme, "set": s, "n": int(sel.sum()),
                            "accuracy": float((pred[sel] == truth[sel]).mean()), "kappa": cf._kappa(pred[sel], truth[sel]),
                            "kappa_lo": lo, "kappa_hi": hi, "kept_of_shown": float(pred[sel][truth[sel]].mean())})  # fmt: skip
        out.append({"judge": judge, "held out by": "network", "set": "generated", "n": int(len(gen)),
                    "accuracy": float((~oof_gen).mean()), "kappa": np.nan, "kappa_lo": np.nan, "kappa_hi": np.nan,
                    "kept_of_shown": np.nan})  # fmt: skip
    return pd.DataFrame(out).set_index(["judge", "held out by", "set"])
