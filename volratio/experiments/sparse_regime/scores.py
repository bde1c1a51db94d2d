"""The sparse regime's second stage: EMC2 of the populations a `sparse_regime` run stored.

A `sparse_regime` run trains and prunes once and stores every population (`net_<method>_<checkpoint>`);
the run function `regime_point` (`point`) scores one of them, read back from its chunk, under a list
of judges on the same perturbed images (every non-zero weight by default), with the scorer of
`sparse_regime.score` (`sparse_regime.score_population`). Its config names the source run by the
source's config as its chunk gives it (`source`, `seed`), so its key follows the source's
(`source_key`). `stored_scores(chunks)` reads the score runs back, one row per network, with the
source runs' fit. The chunks that run it are declared with the source chunks
(`sparse_regime.reference_chunks`).

Chapter: "Connectivity: which connections remain" (the sparse regime, at the reference scale).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from ...emc2 import EMC2Config
from ...judges.registry import JUDGES
from ...nets import CoordMLP
from ...prune.masks import weight_sparsity
from ...runs import stored
from ...runs.registry import get_run
from ...runs.store import Store, StoreError, config_key, sha256_file
from ...util.limits import at_least, one_of, parsed_by
from ...util.presets import configure
from .._base import ExperimentError
from . import (
    METHODS,
    REFERENCE_CHUNK,
    SCORE_CHUNK,
    SCORE_JUDGES,
    score_population,
    score_settings,
    stored_table,
    with_failed_reasons,
)


@dataclass(frozen=True)
class Point:
    """EMC2 of one population stored by a `sparse_regime` run, read back from its chunk: the networks
    are pruned and stored once, and scored here (every non-zero weight by default)."""

    source: dict = field(default_factory=lambda: {"scale": "reference", "target": "picbreeder:skull",
                                                  "target_nonzeros": 147})  # the source run's config as its chunk gives it  # fmt: skip
    population: str = "sp_end"  # <method>_<checkpoint> of the source's `nets` (artifact net_<population>)
    chunk: str = REFERENCE_CHUNK  # the source chunk's folder under the reference root
    judges: tuple = SCORE_JUDGES  # each judges the same perturbed images
    emc2: EMC2Config = field(default_factory=score_settings)  # `member` is ignored: every member is scored
    calibration_seed: int = 0  # seeds a calibrated judge's calibration
    seed: int = 0  # the source run's `seed` (with `source`, it names the source run)

    LIMITS = {"population": parsed_by(lambda p: _population(p)), "judges": one_of(*JUDGES),
              "calibration_seed": at_least(0), "seed": at_least(0)}  # fmt: skip


def _population(name: str) -> str:
    method, _, checkpoint = str(name).rpartition("_")
    if method not in ("dense", "sp", "scratch", *METHODS) or not checkpoint:
        raise ValueError(f"{name!r} is not <method>_<checkpoint> (e.g. sp_end, wanda_0p75, dense_dense)")
    return name


def parse_point(config: dict) -> Point:
    cfg = configure(Point(), config, "regime_point")
    if not isinstance(cfg.source, dict) or "seed" in cfg.source:
        raise ExperimentError(
            f"regime_point: source = {cfg.source!r}; give the source run's config (a table) without its seed (`seed`)"
        )
    return cfg


def source_key(cfg: Point) -> str:
    """The store key of the source run: the hash of `sparse_regime` and its complete config."""
    entry = get_run("sparse_regime")
    return config_key(entry.name, entry.keyed({**cfg.source, "seed": cfg.seed}))


def _failed(row: dict) -> bool:
    """A stored row of a baseline that could not be matched (its reason; rows of the others hold NaN,
    stored as "nan")."""
    return isinstance(row.get("failed"), str) and row["failed"] != "nan"


def _failed_population(cfg: Point, key: str, root: Path) -> tuple:
    """`(why, members)` when the source run could not make population `cfg.population` (its `failed`
    rows, one per member), else `(None, 0)`."""
    method, _, ckpt = cfg.population.rpartition("_")
    for r in stored.records(cfg.chunk, root):
        if r["key"] == key:
            whys = [row["failed"] for row in r["metrics"]["rows"] if _failed(row)
                    and row["method"] == method and str(row["checkpoint"]).replace(".", "p") == ckpt]  # fmt: skip
            return (whys[0], len(whys)) if whys else (None, 0)
    return None, 0


def point(config: dict, root: "str | Path | None" = None) -> dict:
    """EMC2 of every member of the stored population `population` of the source run, read from the
    chunk `chunk` under `root` (default `volratio.runs.stored.DEFAULT_ROOT`; a sweep passes the folder
    beside its own store, `volratio.runs.registry.RunFunction.reading_store`). Metrics, one list
    entry per member: `nonzero`, `sparsity`, `auc_<judge>`, `base_kept_<judge>` per judge, and
    `n_params`; `source_key` and `net_sha256` (what was scored). A population the source run could
    not make (a `failed` row) gives `source_key` and `failed` (why) only."""
    cfg = parse_point(config)
    root = stored.DEFAULT_ROOT if root is None else Path(root)
    key = source_key(cfg)
    art = f"net_{cfg.population}"
    why, members = _failed_population(cfg, key, root)
    if why is not None:  # the source could not prune this population: recorded, nothing to score
        return {"source_key": key, "failed": why, "members": members}
    try:
        path = Store(root / cfg.chunk).artifact_path(key, art)
    except StoreError as e:
        raise ExperimentError(
            f"regime_point: {e}; run the source chunk first (`volratio reference run PLAN --chunk {cfg.chunk}`)"
        ) from None
    net = CoordMLP.load(path)
    out = {"source_key": key, "net_sha256": sha256_file(path), "nonzero": [int(n) for n in net.nonzero()],
           "sparsity": [float(s) for s in weight_sparsity(net.masks)]}  # fmt: skip
    return {**out, **score_population(net, cfg.source["target"], cfg.judges, cfg.emc2, cfg.calibration_seed)}


def stored_scores(name=SCORE_CHUNK, root=None, sources=REFERENCE_CHUNK) -> pd.DataFrame:
    """The stored `regime_point` runs of chunk `name` (or of those of several names that are stored,
    e.g. `CLAIM_SCORES`, whose chunks score one network under different judges) as one table, one row
    per network: `target`, `method`, `checkpoint` ("0.75",
    "end"), `member`, `seed` (the network's own: the run's seed + member, as `run` records it),
    `nonzero`, `sparsity`, `n_params`, and per judge `emc2_auc:<judge>` and `base_kept:<judge>`; with the source run's `loss`
    and `loss_ratio` (÷ the member's dense MSE), `collapsed`, `net` (the population's file) and `arch`
    where the source chunks `sources` (`CLAIM_SOURCES` for `CLAIM_SCORES`) are stored too."""
    rows = []
    for r in stored.runs_of(name, root, error=ExperimentError):
        cfg, m = r["config"], r["metrics"]
        method, _, ckpt = cfg["population"].rpartition("_")
        if m.get("failed"):  # one row per member the source could not prune, with why
            rows += [{"target": cfg["source"]["target"], "method": method, "checkpoint": ckpt.replace("p", "."),
                      "member": k, "seed": cfg["seed"] + k, "failed": m["failed"], "cpu_s": r["cpu_s"]}
                     for k in range(m["members"])]  # fmt: skip
            continue
        judges = [k.removeprefix("auc_") for k in m if k.startswith("auc_")]
        for k in range(len(m["nonzero"])):
            row = {"target": cfg["source"]["target"], "method": method, "checkpoint": ckpt.replace("p", "."),
                   "member": k, "seed": cfg["seed"] + k, "nonzero": m["nonzero"][k], "sparsity": m["sparsity"][k],
                   "n_params": m["n_params"][k], "cpu_s": r["cpu_s"]}  # fmt: skip
            for j in judges:
                row[f"emc2_auc:{j}"] = m[f"auc_{j}"][k]
                row[f"base_kept:{j}"] = m[f"base_kept_{j}"][k]
            rows.append(row)
    table = pd.DataFrame(rows)
    if len(table) and not isinstance(name, str):  # one network scored in several chunks: one row, every judge's columns
        keys = ["target", "method", "checkpoint", "member", "seed"]
        table = table.groupby(keys, sort=False, as_index=False, dropna=False).first()
    table = with_failed_reasons(table)
    try:
        fits = stored_table(sources, root=root)
    except ExperimentError:
        return table
    on = ["target", "seed", "method", "checkpoint", "member"]
    fits = fits[fits.kind == "checkpoint"][[*on, "loss", "loss_ratio", "collapsed", "net", "arch"]]
    return table.merge(fits, on=on, how="left")


def dense_drawn(table: pd.DataFrame, judge: str) -> tuple:
    """`(rows, left_out)`: the rows of `table` (`stored_scores`'s, its dense networks scored too) whose
    dense network draws its target under `judge` (`base_kept:<judge>` of its `dense` row, one per target
    and seed), and the `(target, seed)` pairs left out. Pruning is compared on a dense network that fits
    its target: on one that does not, every method scores 0 by the label-anchored judges' rule, whatever
    it keeps, so such a network says nothing about which connections remain."""
    col = f"base_kept:{judge}"
    if col not in table:
        raise ExperimentError(f"the networks are not scored under judge {judge!r}: no column {col!r}")
    dense = table[table.method == "dense"]
    if dense.empty:
        raise ExperimentError("the table has no dense networks' scores (population dense_dense): score them first")
    bad = {(t, s) for t, s, k in zip(dense.target, dense.seed, dense[col]) if not bool(k)}
    keep = [(t, s) not in bad for t, s in zip(table.target, table.seed)]
    return table[keep], sorted(bad)
