"""Cross-fitting the gated judge: no network is judged by a rule fitted on its own verdicts.

A rule fitted on a network's verdict rows and then used to score that network grades its own
homework. Here the verdict set's networks (`volratio.calibration.anchored_set`) and
the generated negatives (`volratio.calibration.hard_negatives`, each image its own "network") are
dealt into `K` folds by network, per group (`folds`), and the gated rule
(`volratio.calibration.fit_anchored.fit_gated`) is fitted once per fold on every row outside it,
and once on all rows (`crossfit`). The judge "anchored-xfit" (`volratio.judges.anchored`) reads
them (`volratio/judges/rules/anchored-xfit.json`): a network of the set is scored by the rule of its
own fold, fitted without its rows; any other network by the rule fitted on all rows; the fold is
recorded with every score.

`agreement` reports what that buys, held out two ways, overall and per group, with 95% intervals
from a bootstrap over networks (whole networks resampled, since a network's images are not
independent):

- **by network** — each verdict row judged by the rule of its fold (fitted without its network);
- **by label** — each label's rows judged by a rule fitted on every other label's rows (the label
  then has no threshold of its own and gets the pooled one, as a new label would).

Chapter: "EMC2-Bench" (book/emc2.md), section "The judge, validated".
"""

from __future__ import annotations

import json
from dataclasses import asdict

import numpy as np
import pandas as pd

from ..errors import VolratioError
from ..judges.anchored_rule import LogisticRule, read_rule
from ..judges.base import RULES_DIR
from ..util.fileio import atomic_path
from ..util.stats import cohen_kappa
from . import fit_anchored as fa

K = 5  # folds
SEED = 0  # deals the networks into folds
NAME = "anchored-xfit"  # the judge, and its stored rule file


def folds(networks, groups, k: int = K, seed: int = SEED) -> dict[str, int]:
    """`{network: fold}`: each group's networks shuffled (seeded) and dealt round-robin into `k`
    folds, so every fold holds some of every group that has `k` networks or more."""
    networks, groups = np.asarray(networks), np.asarray(groups)
    rng = np.random.default_rng(seed)
    out, start = {}, 0
    for g in np.unique(groups):
        names = np.unique(networks[groups == g])
        for i, n in enumerate(names[rng.permutation(len(names))]):
            out[str(n)] = (start + i) % k
        start += len(names)  # the next group starts where this one stopped: folds stay balanced
    return out


def _fold_rows(table, generated, fold_of: dict) -> tuple[np.ndarray, np.ndarray]:
    return (table["network"].map(fold_of).to_numpy(int), generated["network"].map(fold_of).to_numpy(int))


def _gated(names):
    """The gated rule's fit (`fit_anchored.fit_gated`) on the model features `names` (default the
    ungated rule's) as a `fit(table, generated, train_mask, gen_mask)`."""
    names = tuple(names or read_rule().features)
    return lambda t, g, tm, gm: fa.fit_gated(t, g, tm, gm, names)


def crossfit(table, generated, k: int = K, seed: int = SEED, names=None, fit=None) -> dict:
    """The cross-fitted rules: `{"k", "seed", "folds": {network: fold}, "rules": [one per fold],
    "all": the rule fitted on every row}` (rules as `LogisticRule`; `names`: the model's features,
    default the default judge's; `fit(table, generated, train_mask, gen_mask)`: how a rule is fitted,
    default the gated rule's, `fit_anchored.fit_gated`)."""
    fit = fit or _gated(names)
    both = pd.concat([table[["network", "group"]], generated[["network", "group"]]])
    fold_of = folds(both["network"], both["group"], k, seed)
    fv, fg = _fold_rows(table, generated, fold_of)
    rules = []
    for f in range(k):
        r = fit(table, generated, fv != f, fg != f)
        r.fitted_on.update({"fold": f, "k": k, "fold_seed": seed})
        rules.append(r)
    all_rows = fit(table, generated, None, None)
    all_rows.fitted_on.update({"fold": "all", "k": k, "fold_seed": seed})
    return {"k": k, "seed": seed, "folds": fold_of, "rules": rules, "all": all_rows}


def _rule_dict(rule: LogisticRule) -> dict:
    d = asdict(rule)
    d["features"] = list(rule.features)
    return d


def write(cf: dict, path=None) -> None:
    """Store the cross-fitted rules (`volratio/judges/rules/anchored-xfit.json`)."""
    p = path or RULES_DIR / f"{NAME}.json"
    d = {"k": cf["k"], "seed": cf["seed"], "folds": dict(sorted(cf["folds"].items())),
         "rules": [_rule_dict(r) for r in cf["rules"]], "all": _rule_dict(cf["all"])}  # fmt: skip
    with atomic_path(p) as tmp, open(tmp, "w") as f:
        json.dump(d, f, indent=1, sort_keys=True)
        f.write("\n")


def _kappa(p, y) -> float:
    return float("nan") if (y.all() or (~y).all()) else cohen_kappa(p, y)


def network_interval(pred, truth, networks, n_boot: int = 1000, seed: int = 0) -> tuple[float, float]:
    """95% percentile interval of Cohen's κ over a bootstrap of whole networks (NaN when the
    verdicts hold one class)."""
    p, y, nets = np.asarray(pred, bool), np.asarray(truth, bool), np.asarray(networks)
    if not len(y) or y.all() or (~y).all():
        return (float("nan"), float("nan"))
    names, inv = np.unique(nets, return_inverse=True)
    rows = [np.flatnonzero(inv == i) for i in range(len(names))]
    rng = np.random.default_rng(seed)
    ks = []
    for _ in range(n_boot):
        idx = np.concatenate([rows[i] for i in rng.integers(0, len(names), len(names))])
        if y[idx].all() or (~y[idx]).all():
            continue
        ks.append(cohen_kappa(p[idx], y[idx]))
    return (float(np.percentile(ks, 2.5)), float(np.percentile(ks, 97.5))) if ks else (float("nan"),) * 2


def out_of_fold(table, generated, k: int = K, seed: int = SEED, names=None, fit=None) -> np.ndarray:
    """`(n,)` bool: each verdict row judged by the rule (`fit`, default the gated rule's) fitted
    without its network's fold."""
    cf = crossfit(table, generated, k, seed, names, fit)
    fv, _ = _fold_rows(table, generated, cf["folds"])
    pred = np.zeros(len(table), bool)
    for f, rule in enumerate(cf["rules"]):
        sel = fv == f
        t = table[sel]
        pred[sel] = rule.predict({c: t[c].to_numpy() for c in rule.needs}, t["label"].to_numpy())
    return pred


def leave_label_out(table, generated, names=None, fit=None) -> np.ndarray:
    """`(n,)` bool: each verdict row judged by the rule (`fit`, default the gated rule's) fitted on
    every other label's rows (verdicts and generated negatives), so with the pooled threshold."""
    fit = fit or _gated(names)
    pred = np.zeros(len(table), bool)
    lv, lg = table["label"].to_numpy(), generated["label"].to_numpy()
    for lab in np.unique(lv):
        rule = fit(table, generated, lv != lab, lg != lab)
        sel = lv == lab
        t = table[sel]
        pred[sel] = rule.predict({c: t[c].to_numpy() for c in rule.needs}, t["label"].to_numpy())
    return pred


def agreement(table, generated, k: int = K, seed: int = SEED, n_boot: int = 1000, by: str = "group",
              names=None, fit=None) -> pd.DataFrame:  # fmt: skip
    """Held-out agreement of the gated rule (on the features `names`, default the stored rule's)
    with the verdicts by inspection, by network (`out_of_fold`) and by label (`leave_label_out`),
    per value of column `by` (default each group; the folds are dealt by group whatever `by` is) and
    overall: n, accuracy, κ and its 95% network-bootstrap interval. Indexed by (held out by, `by`).
    `fit`: how a rule is fitted (default the gated rule's). Seconds."""
    if by not in table.columns:
        raise VolratioError(
            f"the verdict table has no column {by!r} to report by; give one of {', '.join(table.columns)}"
        )
    y = table["pass1"].to_numpy().astype(bool)
    groups, nets = table[by].to_numpy(), table["network"].to_numpy()
    out = []
    for scheme, pred in (("network", out_of_fold(table, generated, k, seed, names, fit)),
                         ("label", leave_label_out(table, generated, names, fit))):  # fmt: skip
        for g in [*sorted(set(groups)), "all"]:
            sel = np.ones(len(y), bool) if g == "all" else groups == g
            lo, hi = network_interval(pred[sel], y[sel], nets[sel], n_boot)
            out.append({"held out by": scheme, by: g, "n": int(sel.sum()),
                        "accuracy": float((pred[sel] == y[sel]).mean()), "kappa": _kappa(pred[sel], y[sel]),
                        "kappa_lo": lo, "kappa_hi": hi})  # fmt: skip
    return pd.DataFrame(out).set_index(["held out by", by])
