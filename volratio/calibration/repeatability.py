"""How repeatable an inspection is: κ between a verdict set's first pass and its blind repeat, per group.

A judge cannot be shown to agree with inspection better than inspection agrees with itself. Every
verdict set used to fit or check a judge has a blind second pass on part of its rows (`pass2`: the
same written criteria, a new shuffled order, without the first answers). `repeat_kappa` reports
Cohen's κ between the two passes per group (label × network kind by default):

- a group with at least `min_group` repeated images is reported on its own, with a bootstrap
  interval (images resampled, seeded);
- smaller groups are pooled, level by level (`levels`: by default into their network kind across
  labels, then into the whole set); a pool reaching `min_group` gets an interval, a smaller one its κ
  alone;
- a group whose two passes use one class only (every image kept by both, or by neither) has no κ:
  `kappa` is NaN and `one_class` True;
- a group with κ under `AMBIGUOUS_BELOW` is **ambiguous**: the inspection does not repeat on such
  images, and they never support a claim about a judge's agreement.

Rows may carry sampling weights (column `weight`, the inverse of their sampling rate): κ is then the
weighted κ, its interval from the weighted bootstrap. `all_sets` applies it to every stored verdict set.

Chapter: "EMC2-Bench" (book/emc2.md), section "The judge, validated".
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from ..errors import VolratioError
from . import anchored_set as A
from . import clear16
from . import reference_verdicts as rv

MIN_GROUP = 30  # repeated images a group needs for its own row and an interval
AMBIGUOUS_BELOW = 0.8  # repeat κ under which a group is ambiguous
LEVELS = (("label", "group"), ("group",), ())  # finest first; () is the whole set
VERDICT_SETS = {  # name -> the stored verdict set's CSV (each with a blind repeat on part of its rows)
    "first": rv.DATA_DIR / "verdicts.csv",
    "anchored": A.VERDICTS_CSV,
    "fork": A.FORK_CSV,
    "new": A.NEW_CSV,
    "sparse": A.SPARSE_CSV,
    "degraded": A.SET_DIR / "degraded.csv",
    "clear16": clear16.VERDICTS_CSV,
}


def weighted_kappa(a, b, w=None) -> float:
    """Cohen's κ of two binary labellings with row weights `w` (default equal); NaN when both use
    one class only (no chance agreement to correct)."""
    a, b = np.asarray(a, bool), np.asarray(b, bool)
    w = np.ones(len(a)) if w is None else np.asarray(w, float)
    w = w / w.sum()
    po = float(w[a == b].sum())
    pa, pb = float(w[a].sum()), float(w[b].sum())
    pe = pa * pb + (1 - pa) * (1 - pb)
    return float("nan") if pe >= 1 - 1e-12 else (po - pe) / (1 - pe)


def kappa_interval(a, b, w=None, level: float = 0.95, n_boot: int = 2000, seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap interval of `weighted_kappa` (images resampled with replacement, seeded;
    resamples with one class only are dropped, as they have no κ)."""
    a, b = np.asarray(a, bool), np.asarray(b, bool)
    w = np.ones(len(a)) if w is None else np.asarray(w, float)
    rng = np.random.default_rng(seed)
    ks = [weighted_kappa(a[i], b[i], w[i]) for i in rng.integers(0, len(a), size=(n_boot, len(a)))]
    ks = np.asarray(ks)[np.isfinite(ks)]
    if ks.size == 0:
        return float("nan"), float("nan")
    q = (1 - level) / 2
    return float(np.quantile(ks, q)), float(np.quantile(ks, 1 - q))


def _name(level: tuple, key, pooled: bool) -> str:
    key = key if isinstance(key, tuple) else (key,)
    name = " × ".join(str(k) for k in key) if level else ("rest" if pooled else "all")
    return f"{name} (pooled)" if pooled else name


def repeat_kappa(df: pd.DataFrame, levels=LEVELS, min_group: int = MIN_GROUP, level: float = 0.95,
                 n_boot: int = 2000, seed: int = 0) -> pd.DataFrame:  # fmt: skip
    """Per group, κ between `pass1` and `pass2` on the rows repeated blind (see the module
    docstring). One row per reported group: `group` (its name; a pool is named by its coarser key
    and marked `pooled`), `level` (the columns it groups by), `n`, `agree` (share of images both
    passes judge alike), `kappa`, `lo`, `hi` (the interval, NaN under `min_group` images),
    `one_class`, `ambiguous`, and `weighted` (whether `weight` weighted it). The first row,
    `overall`, holds every repeated row of the set; the groups after it partition them."""
    need = {"pass1", "pass2", *(c for lv in levels for c in lv)}
    if missing := need - set(df.columns):
        raise VolratioError(f"verdicts lack columns {sorted(missing)}: need pass1, pass2 and the group columns")
    if not levels or levels[-1] != ():
        raise VolratioError("repeat_kappa: the last level must be () (the whole set), so every row is reported")
    rep = df[df["pass1"].notna() & df["pass2"].notna()].reset_index(drop=True)
    weighted = "weight" in rep.columns
    left = np.ones(len(rep), bool)  # rows not yet reported at a finer level
    out = [_row(rep, "overall", "overall", False, weighted, min_group, level, n_boot, seed)]
    for i, lv in enumerate(levels):
        last = i == len(levels) - 1
        parts = rep[left].groupby(list(lv), sort=True) if lv else [((), rep[left])]
        for key, part in parts:
            if len(part) == 0 or (len(part) < min_group and not last):
                continue
            pooled = i > 0 and bool(lv or not left.all())  # the whole set is no pool
            out.append(_row(part, _name(lv, key, pooled), "×".join(lv) or "all", pooled, weighted, min_group, level,
                            n_boot, seed))  # fmt: skip
            left[part.index.to_numpy()] = False
    return pd.DataFrame(out)


def _row(part, name, lv, pooled, weighted, min_group, level, n_boot, seed) -> dict:
    a, b = part["pass1"].to_numpy(bool), part["pass2"].to_numpy(bool)
    w = part["weight"].to_numpy(float) if weighted else None
    k = weighted_kappa(a, b, w) if len(part) else float("nan")
    lo, hi = kappa_interval(a, b, w, level, n_boot, seed) if len(part) >= min_group else (np.nan, np.nan)
    one = bool(len(part) and (a == a[0]).all() and (b == a[0]).all())
    return {"group": name, "level": lv, "pooled": pooled, "n": len(part),
            "agree": float((a == b).mean()) if len(part) else float("nan"), "kappa": k, "lo": lo, "hi": hi,
            "one_class": one, "ambiguous": bool(np.isfinite(k) and k < AMBIGUOUS_BELOW), "weighted": weighted}  # fmt: skip


def group_of(df: pd.DataFrame, table: pd.DataFrame, levels=LEVELS) -> pd.Series:
    """The group of `table` (`repeat_kappa` with the same `levels`) each row of `df` belongs to: the
    finest level whose group `table` reports, else the last level's remainder; rows of a group the
    repeat never reached fall in the remainder too."""
    names = set(table["group"])
    rest = table.loc[table["level"] == "all", "group"]
    out = pd.Series(rest.iloc[0] if len(rest) else "overall", index=df.index, dtype=object)
    done = np.zeros(len(df), bool)
    for i, lv in enumerate(levels):
        if not lv:
            break
        key = df[list(lv)].astype(str).agg(" × ".join, axis=1) + (" (pooled)" if i > 0 else "")
        hit = key.isin(names).to_numpy() & ~done
        out[hit] = key[hit]
        done |= hit
    return out


def all_sets(sets: dict | None = None, **kw) -> pd.DataFrame:
    """`repeat_kappa` of every stored verdict set (`VERDICT_SETS`), with its name in column `set`.
    Raises `DataNotFoundError` naming a missing file."""
    parts = []
    for name, path in (sets or VERDICT_SETS).items():
        df = A.load_verdicts(Path(path))
        parts.append(repeat_kappa(df, **kw).assign(set=name))
    return pd.concat(parts, ignore_index=True)
