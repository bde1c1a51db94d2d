"""Fitting and checking the target-anchored judge's rule on the anchored verdicts.

`volratio.judges.AnchoredJudge` ("anchored", the library's default judge) reads a rule
(`volratio.judges.anchored_rule`: features of an image against its label's target image, a
logistic model, per-label thresholds). This module fits that rule on the anchored verdicts
(`volratio.calibration.anchored_set`, `data/judge_reference/anchored/verdicts.csv`) and checks it:

- `verdict_table` — every judged image, regenerated from the stored networks, with its features;
- `fit` fits a `LogisticRule` on a training split (L2-penalised log-loss, L-BFGS, deterministic;
  one threshold per label the verdicts cover, plus a pooled `"*"` for any other label);
  `compare` evaluates candidates (`CANDIDATES`) on the held-out split, overall and per group, with
  κ and its bootstrap interval; `best_rule`, `fit_default` and `fit_second` pick the stored rules;
  `write_rule` stores one in `data/judge_reference/anchored/`;
- `check_judge` scores any judge on the set, `new_target_agreement` on held-out new targets, and
  `emc2_by_network` gives S per network under the verdicts and under a rule.

Chapter: "EMC2-Bench" (book/emc2.md), section "The judge, validated".
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import numpy as np
import pandas as pd
import scipy
import torch

from ..emc2 import perturbed_images
from ..errors import VolratioError
from ..judges.anchored import ANCHORED, AnchoredJudge, target_anchor
from ..judges.anchored_rule import (
    FEATURES,
    FIT_RES,
    GATE_FEATURES,
    GATED_RULE_JSON,
    KNOWN_FEATURES,
    RULE_JSON,
    SECOND_FEATURES,
    SECOND_RULE_JSON,
    LogisticRule,
    features,
    read_rule,
)
from ..judges.registry import make_judge
from ..util.fileio import atomic_path
from ..util.stats import binomial_interval, cohen_kappa, roc_auc
from . import anchored_set as A


def _logistic(X: np.ndarray, y: np.ndarray, l2: float) -> tuple[np.ndarray, float]:
    n, d = X.shape

    def loss(theta):
        w, b = theta[:d], theta[d]
        z = X @ w + b
        lz = np.logaddexp(0, z)
        f = (lz - y * z).mean() + 0.5 * l2 * (w @ w)
        p = 1 / (1 + np.exp(-z))
        g = np.r_[X.T @ (p - y) / n + l2 * w, (p - y).mean()]
        return f, g

    r = scipy.optimize.minimize(loss, np.zeros(d + 1), jac=True, method="L-BFGS-B")
    return r.x[:d], float(r.x[d])


def best_threshold(p, truth) -> float:
    """The threshold on `p` maximising Cohen's κ (candidates: midpoints of consecutive distinct
    values; ties: the middle one)."""
    v, y = np.asarray(p, float), np.asarray(truth, bool)
    s = np.unique(v)
    cands = np.r_[s[0] - 1e-9, (s[:-1] + s[1:]) / 2, s[-1] + 1e-9]
    k = np.array([cohen_kappa(v >= t, y) if y.any() and (~y).any() else float((v >= t) == y).mean() for t in cands])
    best = np.flatnonzero(k >= np.nanmax(k) - 1e-12)
    return float(cands[best[len(best) // 2]])


def fit(feats: dict, truth, labels, names, per_label: bool = True, l2: float = 1e-2) -> LogisticRule:
    """A `LogisticRule` on the features `names`, fitted on (`feats`, `truth`, `labels`)."""
    y = np.asarray(truth, float)
    X = np.stack([np.asarray(feats[f], float) for f in names], 1)
    mu, sd = X.mean(0), X.std(0) + 1e-12
    w, b = _logistic((X - mu) / sd, y, l2)
    rule = LogisticRule(tuple(names), w.tolist(), b, mu.tolist(), sd.tolist(), {"*": 0.5})
    p = rule.prob(feats)
    labels = np.asarray(labels)
    th = {"*": best_threshold(p, y > 0.5)}
    if per_label:
        for lab in np.unique(labels):
            sel = labels == lab
            yl = y[sel] > 0.5
            if yl.all() or (~yl).all():  # one class only: the pooled threshold says it as well as any
                continue
            th[str(lab)] = best_threshold(p[sel], yl)
    rule.thresholds = th
    return rule


def agreement(pred, truth) -> dict:
    """n, accuracy, Cohen's κ (NaN when the verdicts hold one class only) and the confusion counts."""
    p, y = np.asarray(pred, bool), np.asarray(truth, bool)
    one_class = bool(y.all() or (~y).all())
    return {
        "n": int(len(y)),
        "accuracy": float((p == y).mean()) if len(y) else float("nan"),
        "kappa": float("nan") if (one_class or not len(y)) else cohen_kappa(p, y),
        "kept_kept": int((p & y).sum()),
        "kept_notkept": int((p & ~y).sum()),
        "notkept_kept": int((~p & y).sum()),
        "notkept_notkept": int((~p & ~y).sum()),
    }


def kappa_interval(pred, truth, n_boot: int = 1000, seed: int = 0) -> tuple[float, float]:
    """95% percentile bootstrap interval of Cohen's κ (NaN when the verdicts hold one class)."""
    p, y = np.asarray(pred, bool), np.asarray(truth, bool)
    if not len(y) or y.all() or (~y).all():
        return (float("nan"), float("nan"))
    rng = np.random.default_rng(seed)
    ks = []
    for _ in range(n_boot):
        i = rng.integers(0, len(y), len(y))
        if y[i].all() or (~y[i]).all():
            continue
        ks.append(cohen_kappa(p[i], y[i]))
    return (float(np.percentile(ks, 2.5)), float(np.percentile(ks, 97.5)))


def split(networks, groups, test_fraction: float = 0.4, seed: int = 0) -> np.ndarray:
    """`(n,)` bool, True for held-out rows. Whole *networks* are held out — a seeded
    `test_fraction` of each group's networks (at least one when the group has two or more) — so
    that no network is judged on held-out images of itself whose siblings it was fitted on."""
    networks, groups = np.asarray(networks), np.asarray(groups)
    rng = np.random.default_rng(seed)
    held = set()
    for g in np.unique(groups):
        names = np.unique(networks[groups == g])
        if len(names) < 2:
            continue
        n = min(len(names) - 1, max(1, round(test_fraction * len(names))))
        held |= set(names[rng.permutation(len(names))[:n]].tolist())
    return np.array([n in held for n in networks], bool)


def write_rule(rule: LogisticRule, path=None) -> None:
    p = path or RULE_JSON
    d = asdict(rule)
    d["features"] = list(rule.features)
    if not rule.gate:
        del d["gate"]
    with atomic_path(p) as tmp, open(tmp, "w") as f:
        json.dump(d, f, indent=2, sort_keys=True)
        f.write("\n")


CANDIDATES = {  # rule name -> features (each single feature, and logistic combinations)
    **{f: (f,) for f in FEATURES},
    "ssim@4+contrast": ("ssim@4", "contrast"),
    "ssim@4+-dcolour+contrast": ("ssim@4", "-dcolour", "contrast"),
    "ms-ssim+-dcolour+contrast": ("ms-ssim", "-dcolour", "contrast"),
    "all": FEATURES,
}


def compare(table, test_fraction: float = 0.4, seed: int = 0, candidates=None):
    """Fit every candidate rule on the training split (whole networks held out, `split`) and
    evaluate it on the held-out rows: overall and per group, κ with its bootstrap interval.
    `table`: one row per judged image with `pass1`, `label`, `group`, `network` and a column per
    feature. Returns `(results DataFrame, {name: LogisticRule}, held-out mask)`."""
    cands = candidates or CANDIDATES
    y = table["pass1"].to_numpy().astype(bool)
    labels = table["label"].to_numpy()
    test = split(table["network"].to_numpy(), table["group"].to_numpy(), test_fraction, seed)
    feats = {f: table[f].to_numpy() for f in FEATURES if f in table}
    tr = {f: v[~test] for f, v in feats.items()}
    te = {f: v[test] for f, v in feats.items()}
    out, rules = [], {}
    for name, names in cands.items():
        rule = fit(tr, y[~test], labels[~test], names)
        rule.fitted_on = {"n": int((~test).sum()), "split_seed": seed, "test_fraction": test_fraction, "res": FIT_RES}
        rules[name] = rule
        pred = rule.predict(te, labels[test])
        a = agreement(pred, y[test])
        lo, hi = kappa_interval(pred, y[test])
        out.append({"rule": name, **a, "kappa_lo": lo, "kappa_hi": hi})
    return pd.DataFrame(out).set_index("rule"), rules, test


def per_group(rule: LogisticRule, table, rows_mask=None) -> "object":
    """Agreement of `rule` with the verdicts per group (and overall) over `rows_mask` (default all)."""
    t = table if rows_mask is None else table[np.asarray(rows_mask, bool)]
    feats = {f: t[f].to_numpy() for f in rule.needs}
    pred = rule.predict(feats, t["label"].to_numpy())
    y = t["pass1"].to_numpy().astype(bool)
    out = []
    for g in [*sorted(set(t["group"])), "all"]:
        sel = np.ones(len(t), bool) if g == "all" else (t["group"].to_numpy() == g)
        a = agreement(pred[sel], y[sel])
        lo, hi = kappa_interval(pred[sel], y[sel])
        out.append({"group": g, **a, "kappa_lo": lo, "kappa_hi": hi})
    return pd.DataFrame(out).set_index("group")


def best_rule(results, rules) -> LogisticRule:
    """The rule with the highest held-out κ (ties: fewer features, then the order of `CANDIDATES`)."""
    k = results["kappa"].to_numpy()
    names = [n for n, kk in zip(results.index, k) if kk >= np.nanmax(k) - 1e-12]
    names.sort(key=lambda n: (len(rules[n].features), list(rules).index(n)))
    return rules[names[0]]


# Feature tables of the stored verdict sets, computed once per process: (set, shift, store root) ->
# the table with at least `_TABLE_NAMES`. A chapter reads the same sets under several rules; their
# images regenerate bit for bit (the held-out sets' hashes are checked when a table is first made).
_TABLES: dict[tuple, pd.DataFrame] = {}
_TABLE_NAMES = tuple(f for f in KNOWN_FEATURES if f != "ms-ssim")  # every feature a stored rule or gate reads


def _cached(key: tuple, names, make) -> pd.DataFrame:
    """The table `make(names)` builds, from this process's cache when one for `key` holds every
    feature of `names` (its other features dropped, the columns in `make`'s order); otherwise made
    with `_TABLE_NAMES` too and kept. A copy: the caller may change it."""
    names = tuple(names)
    table = _TABLES.get(key)
    if table is None or not set(names) <= set(table.columns):
        table = _TABLES[key] = make(tuple(dict.fromkeys((*names, *_TABLE_NAMES))))
    other = [c for c in table.columns if c not in KNOWN_FEATURES]
    return table[other + list(names)].copy()


def clear_tables() -> None:
    """Forget the feature tables this process has made (after changing a verdict set or the store)."""
    _TABLES.clear()


def verdict_table(verdicts=None, nets=None, names=KNOWN_FEATURES, shift: int = 0):
    """The anchored verdicts (`volratio.calibration.anchored_set.load_verdicts`) with every feature of each
    image against its target (`names`, default every feature `features` computes), the images
    regenerated from the stored networks (seconds); `nets`: the networks the rows name, when they
    are not the set's (the held-out new-target and fork-target rows); `shift`: each image aligned to its
    target within that many pixels first (`anchored_rule.align`, as a rule with that `shift` reads it).
    The first set's table (no `verdicts`, no `nets`) is made once per process (`clear_tables`)."""
    if verdicts is None and nets is None:
        return _cached(("set", int(shift), None), names, lambda n: _verdict_table(None, None, n, shift))
    return _verdict_table(verdicts, nets, names, shift)


def _verdict_table(verdicts, nets, names, shift: int):
    df = (A.load_verdicts() if verdicts is None else verdicts).reset_index(drop=True).copy()
    nets = nets if nets is not None else A.networks(groups=sorted(set(df["group"])))
    images = A.render(df, nets)
    anchors = {}
    for t, r in set(zip(df["target"], df["res"])):
        anchors[(t, r)] = target_anchor(t, int(r))  # as the judge: the target at the image's size
    feats = {f: np.zeros(len(df)) for f in names}
    for (t, r), part in df.groupby(["target", "res"], sort=False):
        idx = part.index.to_numpy()
        x = torch.stack([images[i] for i in idx])
        f = features(x, anchors[(t, r)][None].expand(len(idx), -1, -1, -1), names, shift)
        for k, v in f.items():
            feats[k][idx] = v
    for k, v in feats.items():
        df[k] = v
    return df


def repeated_kappa(table, names, repeats: int = 10, test_fraction: float = 0.4) -> np.ndarray:
    """Held-out κ of the rule on `names` over `repeats` random network splits (seeds 0…)."""
    return np.array(
        [compare(table, test_fraction, seed, {"r": tuple(names)})[0].loc["r", "kappa"] for seed in range(repeats)]
    )


def fit_default(table, repeats: int = 10, test_fraction: float = 0.4):
    """The stored rule, regenerable from the verdicts: the candidate with the best mean held-out κ
    over `repeats` network splits (ties: fewer features), fitted on the training split of seed 0.
    Returns `(rule, {candidate: κ per split})`."""
    ks = {name: repeated_kappa(table, names, repeats, test_fraction) for name, names in CANDIDATES.items()}
    best = max(ks, key=lambda n: (round(float(np.mean(ks[n])), 6), -len(CANDIDATES[n])))
    _, rules, _ = compare(table, test_fraction, 0, {best: CANDIDATES[best]})
    rule = rules[best]
    rule.fitted_on.update(
        {"selected_by": f"mean held-out kappa over {repeats} splits", "kappa_mean": float(np.mean(ks[best]))}
    )
    return rule, ks


def fit_second(table, repeats: int = 10, test_fraction: float = 0.4):
    """The second label-anchored judge's rule: `SECOND_FEATURES`, fitted like `fit_default`'s on the
    training split of seed 0. Returns `(rule, κ per split)`."""
    ks = repeated_kappa(table, SECOND_FEATURES, repeats, test_fraction)
    name = "+".join(SECOND_FEATURES)
    _, rules, _ = compare(table, test_fraction, 0, {name: SECOND_FEATURES})
    rule = rules[name]
    rule.fitted_on.update(
        {"selected_by": f"second judge; mean held-out kappa over {repeats} splits", "kappa_mean": float(np.mean(ks))}
    )
    return rule, ks


def preserved(table, shown) -> np.ndarray:
    """`(n,)` bool: each row's image shows the label *and* its network's unperturbed image (at the
    same size) does — the EMC2 verdict — from per-row `shown` verdicts (the judge's or `pass1`)."""
    t = table.reset_index(drop=True)
    shown = np.asarray(shown, bool)
    base = {(n, r): shown[i] for i, (n, r, k) in enumerate(zip(t["network"], t["res"], t["kernel"])) if k < 0}
    return shown & np.array([base[(n, r)] for n, r in zip(t["network"], t["res"])])


def emc2_by_network(table, rule: LogisticRule):
    """Per network and size: S, the share of its sampled perturbations that preserve the identity
    (δ drawn uniformly, so S is the δ-averaged score), under the verdicts (95% Wilson interval) and
    under `rule`; and whether the unperturbed image shows the label by each."""
    t = table.reset_index(drop=True)
    by_rule = rule.predict({f: t[f].to_numpy() for f in rule.needs}, t["label"].to_numpy())
    v_ref, v_rule = preserved(t, t["pass1"].to_numpy()), preserved(t, by_rule)
    out = []
    for (name, res), part in t.groupby(["network", "res"], sort=False):
        pert = part.index[part["kernel"] >= 0].to_numpy()
        base = part.index[part["kernel"] < 0].to_numpy()
        k, n = int(v_ref[pert].sum()), len(pert)
        lo, hi = binomial_interval(k, n)
        out.append({"network": name, "res": int(res), "group": part["group"].iloc[0], "n": n,
                    "shown (verdicts)": bool(t.loc[base[0], "pass1"]), "shown (judge)": bool(by_rule[base[0]]),
                    "S (verdicts)": k / n if n else np.nan, "lo": lo, "hi": hi,
                    "S (judge)": float(v_rule[pert].mean()) if n else np.nan})  # fmt: skip
    return pd.DataFrame(out).set_index(["network", "res"])


def check_judge(name: str, groups=None, model: str | None = None, device: str = "auto", max_images=None, seed=0):
    """Agreement of judge `name` (any `volratio.judges.make_judge` name) with the anchored verdicts,
    asked as EMC2 asks it: each network's unperturbed image and its perturbations, each judged
    "shows the label" with the judge built for that network and its target. Over all images of
    `groups` (default all; `max_images`: a seeded subsample of whole networks' rows) — accuracy, κ
    and the confusion counts of the per-image verdicts, and of the EMC2 verdicts (base and
    perturbed image both shown)."""
    df = A.load_verdicts()
    if groups:
        if unknown := set(groups) - set(A.GROUPS):
            raise VolratioError(f"unknown groups {sorted(unknown)}; known: {', '.join(A.GROUPS)}")
        df = df[df["group"].isin(groups)]
    df = df.reset_index(drop=True)
    if max_images is not None and max_images < len(df):
        keys = df[["network", "res"]].drop_duplicates().sample(frac=1.0, random_state=seed)
        keep, n = [], 0
        for nw, r in keys.itertuples(index=False):
            part = df.index[(df["network"] == nw) & (df["res"] == r)]
            keep += part.tolist()
            n += len(part)
            if n >= max_images:
                break
        df = df.loc[sorted(keep)].reset_index(drop=True)
    nets = A.networks(groups=sorted(set(df["group"])))
    images = A.render(df, nets)
    shown, scores, settings = np.zeros(len(df), bool), np.zeros(len(df)), {}
    for (nw, r), part in df.groupby(["network", "res"], sort=False):
        rn = nets[nw]
        base = perturbed_images(rn.net, int(r), [], [], rn.member, "cpu")[0].cpu()
        j = make_judge(name, base, rn.target, model=model, device=device)
        idx = part.index.to_numpy()
        v = j(torch.stack([images[i] for i in idx]), rn.label)
        shown[idx], scores[idx] = v.verdicts, v.scores
        settings = {"judge": v.judge, **{k: x for k, x in v.settings.items() if k != "label"}}
    y = df["pass1"].to_numpy().astype(bool)
    return {
        "settings": settings,
        "groups": sorted(set(df["group"])),
        "images": agreement(shown, y),
        "emc2": agreement(preserved(df, shown), preserved(df, y)),
        "auc": roc_auc(scores, y),
    }


def new_target_agreement(rules: dict | None = None):
    """Agreement with the held-out verdicts on five of the thirteen new Picbreeder targets
    (`anchored_set.NEW_CSV`: labels no rule was fitted on, so each rule applies its pooled
    threshold), per group and overall, for each of `rules` (`{name: LogisticRule}`, default the
    anchored judge's two rules). The images are regenerated from the Picbreeder data and checked
    against the stored hashes first. Returns a DataFrame indexed by (rule, group)."""
    rules = rules or {"anchored": read_rule(), "anchored-ssim": read_rule(SECOND_RULE_JSON)}
    table = held_out_table(A.NEW_CSV, _needs(rules))
    return pd.concat({name: per_group(rule, table) for name, rule in rules.items()}, names=["rule", "group"])


def fork_target_agreement(rules: dict | None = None):
    """Agreement with the verdicts on the thirteen fork targets (`anchored_set.FORK_CSV`: each
    target's Picbreeder network and its three dense twins, labels no rule was fitted on), per group
    and overall, for each of `rules` (`{name: LogisticRule}`, default the default rule and the
    gated one). The images are regenerated (the Picbreeder data and the `twins16` chunk's stored
    twins) and checked against the stored hashes first. Returns a DataFrame indexed by (rule, group)."""
    rules = rules or {"anchored": read_rule(), "anchored-gated": read_rule(GATED_RULE_JSON)}
    table = held_out_table(A.FORK_CSV, _needs(rules))
    return pd.concat({name: per_group(rule, table) for name, rule in rules.items()}, names=["rule", "group"])


def sparse_regime_agreement(rules: dict | None = None, root=None):
    """Agreement with the held-out verdicts on the sparse regime's networks (`anchored_set.SPARSE_CSV`:
    the first network of each run of the reference chunk `depth_sparse_picbreeder`, at its fit point —
    the networks the depth claims are decided on; no rule was fitted on them), per group and overall,
    for each of `rules` (`{name: LogisticRule}`, default every label-anchored judge's rule as it scores
    these networks: none of them is in a fold, so "anchored-xfit" scores them with its all-rows
    rule). The images are regenerated from the stored networks (under `root`) and checked against
    the stored hashes first, and each rule reads them aligned as it aligns (`LogisticRule.shift`).
    Returns a DataFrame indexed by (rule, group)."""
    rules = rules or {n: AnchoredJudge(torch.zeros(1, 1, 3), variant=n).rule for n in ANCHORED}
    # each rule sees the images as it scores them: aligned within its `shift` (the default's 4 px)
    tables = {k: held_out_table(A.SPARSE_CSV, _needs(rules), root, shift=k) for k in {r.shift for r in rules.values()}}
    return pd.concat(
        {name: per_group(rule, tables[rule.shift]) for name, rule in rules.items()}, names=["rule", "group"]
    )


# the verdict sets: the one the rules are fitted on (None: `A.load_verdicts()`'s) and the three held out
VERDICT_SETS = {"set": None, "fork": A.FORK_CSV, "new": A.NEW_CSV, "sparse": A.SPARSE_CSV}


def _needs(rules: dict) -> tuple[str, ...]:
    return tuple(dict.fromkeys(f for r in rules.values() for f in r.needs))


def held_out_table(path, names=KNOWN_FEATURES, root=None, shift: int = 0):
    """`verdict_table` of a held-out verdict set (`A.NEW_CSV`, `A.FORK_CSV` or `A.SPARSE_CSV`), its
    images regenerated from their networks (the Picbreeder data, the `twins16` chunk's twins, the
    `depth_sparse_picbreeder` chunk's networks under `root`) and checked against the stored hashes
    first: a mismatch is an error, never a silently different table. Made once per process and
    store (`clear_tables`)."""
    path = Path(path)
    networks = {A.NEW_CSV: lambda: A.new_target_networks(), A.FORK_CSV: lambda: A.fork_networks(root),
                A.SPARSE_CSV: lambda: A.sparse_networks(root)}  # fmt: skip
    if path not in networks:
        raise VolratioError(f"{path} is not a held-out verdict set; give one of {', '.join(map(str, networks))}")

    def make(names):
        rows, nets = A.load_verdicts(path), networks[path]()
        if A.image_sha(A.render(rows, nets)) != rows["sha256"].tolist():
            raise VolratioError(f"{path}: the images do not regenerate from their networks (hash mismatch)")
        return _verdict_table(rows, nets, names, shift)

    return _cached((str(path), int(shift), None if root is None else str(Path(root).resolve())), names, make)


def all_verdict_sets(names=KNOWN_FEATURES, root=None, shift: int = 0) -> pd.DataFrame:
    """Every judged row of the four verdict sets (`VERDICT_SETS`), with the features
    `names` and its set in column `set`: the table on which a rule fitted on every label is
    held out by network and by label (`crossfit.agreement(all_verdict_sets(), generated, by="set")`).
    The stored rules are fitted on the first set only."""
    parts = [(verdict_table(names=names, shift=shift) if path is None else held_out_table(path, names, root, shift))
             .assign(set=name)
             for name, path in VERDICT_SETS.items()]  # fmt: skip
    table = pd.concat(parts, ignore_index=True)
    return table[table["pass1"].notna()].reset_index(drop=True)


# ---------------------------------------------------------------------------------------------
# The structure gate ("anchored-gated"): the default's rule, and minimums on GATE_FEATURES fitted
# on the verdicts together with the generated negatives (volratio.calibration.hard_negatives)


def _kappa_grid(pass_a: np.ndarray, pass_b: np.ndarray, pred: np.ndarray, y: np.ndarray) -> np.ndarray:
    """`(A, B)` Cohen's κ of `pred & pass_a[i] & pass_b[j]` against `y`, from confusion counts
    (`pass_a` `(A, n)`, `pass_b` `(B, n)` bool)."""
    n = len(y)
    a, b = pass_a.astype(float), pass_b.astype(float)
    tp = (a * (pred & y)) @ b.T
    fp = (a * (pred & ~y)) @ b.T
    pos = float(y.sum())
    fn, tn = pos - tp, (n - pos) - fp
    po = (tp + tn) / n
    pe = ((tp + fp) * pos + (fn + tn) * (n - pos)) / n**2
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(pe >= 1, 1.0, (po - pe) / (1 - pe))


def _candidates(v: np.ndarray, most: int = 80) -> np.ndarray:
    """Gate minimums to try for one feature: −∞ (no gate), then midpoints between consecutive
    distinct values (at most `most`, evenly spaced in rank)."""
    s = np.unique(np.asarray(v, float))
    mids = (s[:-1] + s[1:]) / 2
    if len(mids) > most:
        mids = mids[np.linspace(0, len(mids) - 1, most).round().astype(int)]
    return np.r_[-np.inf, mids]


def fit_gate(feats: dict, truth, pred, names=GATE_FEATURES, reject=None) -> dict:
    """The gate `{feature: minimum}` on the two features `names` maximising Cohen's κ of
    `pred & gate` against `truth` on the rows given (a training fold: the verdicts' rows and the
    generated negatives'). Ties: the tied pair nearest, in rank, to the tied pairs' centroid.
    A minimum is exact on one CPU kind only: features equal there may differ by 1e-16 on another,
    which moves `_candidates`' rank-spaced grid and so where, in the gap between two training values,
    a minimum falls; the gate keeps the same training rows either way (tests/test_crossfit.py).
    `reject` (bool per row): rows the gate must reject wherever `pred` keeps them (generated
    negatives); gates that keep any are not considered (an error when every gate keeps one)."""
    fa, fb = names
    va, vb = np.asarray(feats[fa], float), np.asarray(feats[fb], float)
    ca, cb = _candidates(va), _candidates(vb)
    pa, pb, pred = va[None] >= ca[:, None], vb[None] >= cb[:, None], np.asarray(pred, bool)
    k = _kappa_grid(pa, pb, pred, np.asarray(truth, bool))
    if reject is not None:
        kept = (pa * (pred & np.asarray(reject, bool))).astype(float) @ pb.T.astype(float)
        if (kept > 0).all():
            raise VolratioError("no gate on these features rejects every row it must reject")
        k = np.where(kept > 0, -np.inf, k)
    ties = np.argwhere(k >= np.nanmax(k) - 1e-12)
    i, j = ties[np.argmin(((ties - ties.mean(0)) ** 2).sum(1))]
    return {fa: float(ca[i]), fb: float(cb[j])}


def fit_gated(table, generated, train_mask=None, gen_mask=None, names=("-rmse",)) -> LogisticRule:
    """The gated rule on the training rows: the logistic model and per-label thresholds of `fit`
    on the verdicts' rows of `table` (`train_mask`, default all), then the gate (`fit_gate`) on
    those rows and the generated negatives' (`generated`, `gen_mask`, default all)."""
    t = table if train_mask is None else table[np.asarray(train_mask, bool)]
    g = generated if gen_mask is None else generated[np.asarray(gen_mask, bool)]
    rule = fit({f: t[f].to_numpy() for f in names}, t["pass1"].to_numpy(), t["label"].to_numpy(), names)
    both = pd.concat([t, g], ignore_index=True)
    fb = {f: both[f].to_numpy() for f in (*names, *GATE_FEATURES)}
    pred = rule.predict(fb, both["label"].to_numpy())
    rule.gate = fit_gate(fb, both["pass1"].to_numpy().astype(bool), pred)
    rule.fitted_on = {"n": int(len(t)), "n_generated": int(len(g)), "res": FIT_RES}
    return rule


def _split_both(table, generated, test_fraction: float, seed: int):
    """Held-out masks of the verdicts' rows (exactly `compare`'s split) and the generated rows'."""
    return (split(table["network"].to_numpy(), table["group"].to_numpy(), test_fraction, seed),
            split(generated["network"].to_numpy(), generated["group"].to_numpy(), test_fraction, seed))  # fmt: skip


def gated_splits(table, generated, repeats: int = 10, test_fraction: float = 0.4, names=("-rmse",)):
    """Held-out comparison of the gated rule with the same rule ungated over `repeats` network
    splits (seeds 0…; the verdicts split as `compare` splits them, whole networks held out per
    group; the generated images split the same way, each its own network): per split, κ on the
    held-out verdicts of each, the share of held-out generated negatives each rejects, and the gate.
    Returns a DataFrame, one row per split."""
    out = []
    for seed in range(repeats):
        tv, tg = _split_both(table, generated, test_fraction, seed)
        rule = fit_gated(table, generated, ~tv, ~tg, names)
        plain = LogisticRule(rule.features, rule.weights, rule.bias, rule.mean, rule.scale, rule.thresholds)
        ho, hg = table[tv], generated[tg]
        fv = {f: ho[f].to_numpy() for f in rule.needs}
        fg = {f: hg[f].to_numpy() for f in rule.needs}
        y = ho["pass1"].to_numpy().astype(bool)
        out.append({"seed": seed, "kappa_gated": cohen_kappa(rule.predict(fv, ho["label"]), y),
                    "kappa_plain": cohen_kappa(plain.predict(fv, ho["label"]), y),
                    "rejected_gated": float(1 - rule.predict(fg, hg["label"]).mean()),
                    "rejected_plain": float(1 - plain.predict(fg, hg["label"]).mean()),
                    "n_generated": int(len(hg)), **{f"gate {k}": v for k, v in rule.gate.items()}})  # fmt: skip
    return pd.DataFrame(out).set_index("seed")


def fit_gated_default(table, generated, repeats: int = 10, test_fraction: float = 0.4):
    """The stored gated rule (`GATED_RULE_JSON`, judge "anchored-gated"): the default's features,
    fitted like `fit_default`'s on the training split of seed 0 (verdicts and generated negatives
    split by network), with the mean held-out κ and rejection share over `repeats` splits recorded.
    Returns `(rule, gated_splits DataFrame)`."""
    names = read_rule().features
    res = gated_splits(table, generated, repeats, test_fraction, names)
    tv, tg = _split_both(table, generated, test_fraction, 0)
    rule = fit_gated(table, generated, ~tv, ~tg, names)
    rule.fitted_on.update({"split_seed": 0, "test_fraction": test_fraction,
                           "selected_by": f"default's features; gate by kappa on the training split; "
                                          f"mean held-out over {repeats} splits",
                           "kappa_mean": float(res["kappa_gated"].mean()),
                           "generated_rejected_mean": float(res["rejected_gated"].mean())})  # fmt: skip
    return rule, res
