"""An experiment's stored results as a `Result`: `load(name, scale="reference", reading=PAPER)`.

The third way to a `Result`, beside `run(cfg)` and `score(train(cfg), reading)`: the runs the
reference plan stored for experiment `name` — the chunks it owns (`reference_chunks()` of its
module, `volratio.runs.plan`) that are stored under `root` (default `results/reference`) — read back
without running anything. Only the reference scale is stored; the quick scale is computed by `run`.

The table has one row per stored unit, with the `chunk` and the run's `key` it comes from: a
whole-run chunk (the experiment's own run function, e.g. `sparse_regime`) gives its runs' rows as
`run` tabulated them; a chunk of points (`depth_point`, `twin_point`, …) gives one
row per run, its config's entries beside its metrics. The reading says which scores:

- `PAPER` (the default): every owned chunk, each run's scores as it stored them;
- a reading with a judge (`Reading("anchored-v2")`, any δ scale, every weight): the chunks whose
  stored networks can be scored again (`volratio.runs.reference.rescorable`), each run's `score`,
  `scores` and `base_kept` those under the reading (`volratio.runs.stored.judged`: its own, or its
  score run's; a chunk not scored so is an error naming the `volratio reference rescore` command);
- `RECOVERY` (judge-free): the chunks that store networks trained on planted targets, one row per
  network as `volratio.runs.recovered.table` reads it (computed where the chunk keeps no table for
  the default `RecoveryConfig`, and then not written).

A reading that no owned chunk can give is an `ExperimentError` that says why. `Result.judge` is the
reading's judge, or the one judge every row names, else None; `seconds` the runs' CPU seconds.
"""

from __future__ import annotations

from dataclasses import asdict

import pandas as pd

from ..emc2.reading import Reading
from ..runs import recovered, registry, stored
from ..runs.reference import rescorable
from ._base import PAPER, ExperimentError, Result, check_reading

SCALES = ("reference",)  # the scales whose runs are stored (results/reference)


def load(name: str, scale: str = "reference", reading: Reading = PAPER, chunks=None, root=None) -> Result:
    """The stored runs of experiment `name` at `scale` under `reading` (see the module docstring):
    of every chunk it owns, or of `chunks` (some of them)."""
    check_reading(reading, recovery=True)
    if scale not in SCALES:
        raise ExperimentError(
            f"{name}: scale {scale!r} is not stored (only {', '.join(SCALES)} is, under results/reference); "
            f"compute it with `volratio run {name} --scale {scale}`"
        )
    mod = registry.module(name)
    root = stored.DEFAULT_ROOT if root is None else root
    declared = list(getattr(mod, "reference_chunks", dict)())
    if not declared:
        raise ExperimentError(
            f"{name}: no chunk of the reference plan is its own, so nothing of it is stored; compute it with "
            f"`volratio run {name} --scale {scale}`"
        )
    if chunks is not None:
        chunks = [chunks] if isinstance(chunks, str) else list(chunks)
        if unknown := [c for c in chunks if c not in declared]:
            raise ExperimentError(f"{name}: it owns no chunk {', '.join(unknown)}; its chunks: {', '.join(declared)}")
        declared = chunks
    owned = [c for c in declared if c in stored.chunks(root)]
    if not owned:
        raise ExperimentError(
            f"{name}: none of its chunks ({', '.join(declared) or 'none declared'}) is stored under {root}; run them "
            "with `volratio reference run examples/sweeps/reference.toml --chunk NAME`"
        )
    if reading.recovery:
        frames, runs = _recovered(name, owned, root)
    else:
        frames, runs = _scored(name, owned, root, reading)
    table = pd.concat(frames, ignore_index=True)
    judges = set(table["judge"].dropna().astype(str)) if "judge" in table else set()
    judge = reading.judge if reading.judge is not None else (judges.pop() if len(judges) == 1 else None)
    seeds = sorted({int(r["config"]["seed"]) for r in runs if isinstance(r["config"].get("seed"), int)})
    cpu = sum(float(r["cpu_s"] or 0.0) for r in runs)
    config = asdict(mod.Config.reference())
    return Result(name, config, table, seeds, cpu, judge, extras={"chunks": sorted({str(c) for c in table["chunk"]})})


def _scored(name: str, owned: list, root, reading: Reading) -> tuple:
    """The rows of the owned chunks under an EMC2 reading, and their runs."""
    frames, runs, unscored, populations = [], [], [], []
    for chunk in owned:
        records = stored.records(chunk, root)
        if not reading.own:
            if not all(rescorable(r["run"]) for r in records):
                continue  # whole runs, or score runs: their scores are their config's
            if any(stored.several_populations(r) for r in records):
                populations.append(chunk)  # each population scored apart: the experiment's own reader
                continue
            try:
                records = stored.judged(chunk, root, reading, error=ExperimentError)
            except ExperimentError:
                unscored.append(chunk)
                continue
        frames.append(pd.DataFrame([row for r in records for row in _rows(chunk, r)]))
        runs += records
    if unscored:
        raise ExperimentError(
            f"{name}: the chunks {', '.join(unscored)} hold runs without scores under {reading.describe()}; "
            f"score them (`volratio reference rescore CHUNK {reading.flags()}`, for each), or load the others "
            f"(chunks=[…])"
        )
    if not frames and populations:
        raise ExperimentError(
            f"{name}: the runs of its chunks {', '.join(populations)} store several populations each, scored one "
            f"by one under a reading; read them with volratio.experiments.sparse_regime.scores.stored_scores"
        )
    if not frames:
        raise ExperimentError(
            f"{name}: no chunk of its holds networks that can be scored under {reading.describe()} (its chunks "
            f"store whole runs or scores: {', '.join(owned)}); load it under the default reading"
        )
    return frames, runs


def _recovered(name: str, owned: list, root) -> tuple:
    """The judge-free rows of the owned chunks that store networks on planted targets, and their runs."""
    frames, runs = [], []
    for chunk in owned:
        records = stored.records(chunk, root)
        planted = [r for r in records if str(r["config"].get("target", "")).startswith("planted:")]
        if not any(a == "net" or a.startswith("net_") for r in planted for a in r.get("artifacts", {})):
            continue
        frames.append(recovered.table(chunk, root=root, keep=False).assign(chunk=chunk))
        runs += planted
    if not frames:
        raise ExperimentError(
            f"{name}: none of its stored chunks ({', '.join(owned)}) holds networks trained on planted targets, "
            "which the judge-free reading (primitive recovery) needs"
        )
    return frames, runs


def _rows(chunk: str, record: dict) -> list[dict]:
    """A stored run as rows: a whole run's own rows, or one row of its config and metrics; where an
    entry shares a name with the row's `chunk` or `key` (a score run's source chunk), as `config.<name>`."""
    where = {"chunk": chunk, "key": record["key"]}

    def own(entries: dict) -> dict:
        return {f"config.{k}" if k in where else k: v for k, v in entries.items()}

    metrics = record["metrics"]
    if "rows" in metrics:
        return [{**where, **own(row)} for row in metrics["rows"]]
    return [{**where, "run": record["run"], **own(record["config"]), **own(metrics)}]
