"""The sparse regime's store: its runs read back, and their populations scored by the score stage.

A `sparse_regime` run trains and prunes once and stores every population (`net_<method>_<checkpoint>`);
`stored_table(chunk)` and `stored_config(chunk)` read its chunks back. The score stage
(`volratio.runs.score`, `volratio reference rescore`) scores a stored population under a reading
(`volratio.emc2.reading.Reading`), into the source chunk's own store, keyed by the source run's key
and the reading. `Scores` names one set of such score runs: a source chunk, the populations, and the
readings (one reading, under several judges, on the same settings); `sparse_regime.SCORES` holds the
reference scale's. `stored_scores(sets)` reads them back, one row per network, with the source runs'
fit; `dense_drawn` keeps the networks whose dense network draws.

This module imports nothing of its package (the package re-exports its readers).

Chapter: "Connectivity: which connections remain" (the sparse regime, at the reference scale).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from ...data.picbreeder import fer_arch
from ...emc2 import EMC2Config
from ...emc2.reading import Reading
from ...runs import score as score_stage
from ...runs import stored
from ...runs.registry import artifact_name, get_run
from .._base import ExperimentError


def dense_arch(cfg) -> str:
    """The dense networks' architecture string: `cfg.arch`, the target's Picbreeder architecture, or
    `depth` layers of `width` `activation` units."""
    if cfg.arch == "picbreeder":
        return fer_arch(cfg.target.split(":", 1)[1])
    return cfg.arch or f"{cfg.depth};{cfg.activation}:{cfg.width}"


REFERENCE_CHUNK = "sparse_regime"  # results/reference/<chunk>: one run per target
MORE_CHUNK = "sparse_regime_more"  # more members (seeds 3–6), SP and the claim's three pruners only


def stored_table(name=REFERENCE_CHUNK, root=None) -> pd.DataFrame:
    """The stored reference runs of chunk `name` (or of those of several names that are stored, e.g.
    `CLAIM_SOURCES`; under `root`, default `results/reference`) as one
    table like `run`'s, plus `target`, `target_nonzeros`, the run's `key` and `cpu_s`, and `net`:
    the file of the population a checkpoint row's network belongs to (member `member`), and `arch`:
    the dense networks' architecture (`dense_arch`)."""
    rows = []
    parse = get_run("sparse_regime").parse
    for r in stored.runs_of(name, root, error=ExperimentError):
        cfg = r["config"]
        arch = dense_arch(parse(cfg))
        arts = r.get("artifacts", {})
        for row in r["metrics"]["rows"]:
            net = None
            if row["kind"] == "checkpoint":
                net = arts.get(f"net_{artifact_name((row['method'], row['checkpoint']))}")
            rows.append({**row, "target": cfg["target"], "target_nonzeros": cfg["target_nonzeros"],
                         "key": r["key"], "cpu_s": r["cpu_s"], "net": net, "arch": arch})  # fmt: skip
    return with_failed_reasons(stored.non_finite_as_floats(pd.DataFrame(rows)))


def with_failed_reasons(table: pd.DataFrame) -> pd.DataFrame:
    """`failed` holds a reason, or a missing value (NaN) for the rows of methods that worked (stored
    as the text "nan")."""
    if "failed" in table:
        table["failed"] = table["failed"].astype(object).map(lambda f: f if isinstance(f, str) and f != "nan" else None)
    return table


def stored_config(name: str = REFERENCE_CHUNK, root=None):
    """The settings of the stored runs of chunk `name` (its first run's `sparse_regime.Config`; the
    runs differ only in `target` and `target_nonzeros`)."""
    return get_run("sparse_regime").parse(stored.runs_of(name, root, error=ExperimentError)[0]["config"])


@dataclass(frozen=True)
class Scores:
    """The score runs of some populations of one source chunk under one reading, judge by judge."""

    chunk: str  # the source chunk: its sparse_regime runs stored the populations
    reading: Reading  # how they are scored, but the judge (EMC2's weights, engine and δ's scale)
    judges: tuple  # each judge's score runs are a reading of their own, on the same perturbed images
    populations: tuple  # <method>_<checkpoint> (artifact net_<population>) of every source run

    def __post_init__(self):
        if self.reading.judge is not None or not self.judges:
            raise ExperimentError(f"{self.chunk}: give the reading without a judge, and the judges apart")

    def readings(self) -> list[Reading]:
        return [self.reading.with_judge(j) for j in self.judges]

    def artifacts(self) -> list[str]:
        return [f"net_{p}" for p in self.populations]

    def commands(self) -> list[str]:
        """The `volratio reference rescore` commands that make these score runs."""
        only = ",".join(self.artifacts())
        return [f"volratio reference rescore {self.chunk} {r.flags()} --artifacts {only}" for r in self.readings()]

    def progress(self, root=None) -> tuple[int, int]:
        """`(stored, total)`: this set's score runs in the store, of those it needs (one per source run
        × population it stores × judge)."""
        root = stored.DEFAULT_ROOT if root is None else Path(root)
        done = total = 0
        for r in self.readings():
            todo = score_stage.plan(self.chunk, r, root, self.artifacts())
            have = {x["key"] for x in stored.rescores(self.chunk, r, root)}
            total, done = total + len(todo), done + len(have & set(todo))
        return done, total

    def settings(self, root=None) -> EMC2Config:
        """The EMC2 settings the stored score runs scored at (the first run's: they share them)."""
        for r in self.readings():
            for run in stored.rescores(self.chunk, r, root):
                return score_stage.emc2_config(score_stage.parse_point(run["config"]), 0)
        raise ExperimentError(f"{self.chunk}: no score run under {self.reading.describe()}; {self.commands()[0]}")


def stored_scores(sets, root=None) -> pd.DataFrame:
    """The networks the score sets `sets` (a `Scores`, or several: e.g. `sparse_regime.CLAIM`, which
    score one network under different judges) scored, as one table, one row per network: the source
    run's checkpoint row (`sparse_regime.stored_table`: `target`, `method`, `checkpoint` ("0.75",
    "end", "dense"), `member`, `seed`, `nonzero`, `sparsity`, `loss`, `loss_ratio` (÷ the member's dense
    MSE), `collapsed`, `net` (the population's file), `arch`) with, per judge, `emc2_auc:<judge>` and
    `base_kept:<judge>`; and one row per member of a population the source run could not make
    (`failed`: why). Networks no set scored are left out. Two sets that score one chunk under one
    judge with different readings are refused."""
    sets = [sets] if isinstance(sets, Scores) else list(sets)
    root = stored.DEFAULT_ROOT if root is None else Path(root)
    scored: dict = {}  # (chunk, source key, population, member) -> {column: value}
    judged: dict = {}  # (chunk, judge) -> the reading it was read under
    for s in sets:
        wanted = set(s.artifacts())
        for reading in s.readings():
            if judged.setdefault((s.chunk, reading.judge), reading) != reading:
                raise ExperimentError(f"{s.chunk}: judge {reading.judge!r} under two readings; read them apart")
            for r in stored.rescores(s.chunk, reading, root):
                src, m = r["config"]["source"], r["metrics"]
                if src.get("artifact") not in wanted:
                    continue
                for k, (auc, kept) in enumerate(zip(m["score"], m["base_kept"])):
                    cols = scored.setdefault((s.chunk, src["key"], src["artifact"], k), {})
                    cols[f"emc2_auc:{reading.judge}"] = float(auc)
                    cols[f"base_kept:{reading.judge}"] = bool(kept)
    rows = []
    for chunk in dict.fromkeys(s.chunk for s in sets):
        wanted = {a for s in sets if s.chunk == chunk for a in s.artifacts()}
        table = stored_table(chunk, root)
        for row in table[table.kind == "checkpoint"].to_dict("records"):
            art = f"net_{artifact_name((row['method'], row['checkpoint']))}"
            cols = scored.get((chunk, row["key"], art, row["member"]))
            if cols is not None:
                rows.append({**_fields(row), **cols})
            elif isinstance(row.get("failed"), str) and art in wanted:
                rows.append({**_fields(row), "failed": row["failed"]})
    return pd.DataFrame(rows)


_FIELDS = ("target", "method", "checkpoint", "member", "seed", "nonzero", "sparsity", "loss", "loss_ratio",
           "collapsed", "net", "arch", "failed")  # fmt: skip


def _fields(row: dict) -> dict:
    return {f: row.get(f) for f in _FIELDS}


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
