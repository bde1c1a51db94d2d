"""Reading stored results: the chunks under a root, their runs and manifests, and a run's scores
under a judge.

A chunk is a results store `ROOT/NAME/` (`volratio.runs.store`) with its manifest
`ROOT/NAME/manifest.json` (`volratio.runs.reference` writes both). `records(name)` gives a chunk's
finished runs with their time and machine; `runs_of(names)` those of several chunks; `judged(names,
reading=…)` the same runs with each run's scores under one reading (`volratio.emc2.reading.Reading`:
a judge, the anchor, δ's scale, the weights and the engine): its own scores where it scored itself
so, else those of its score run (`volratio.runs.score`); on every weight, every run's scores on
every non-zero weight (its every-weight score run, through one engine). `depth_curves`
reads the depth sweeps' chunks as depth curves; `table` and `cost` are what the chapters show of a
chunk. The rescore runs stored beside a chunk's own: `rescores`, `rescore_table`, `rescore_cost`
(CPU seconds per judge and kind of rescore), and `judges_covering` (the judges every run of some
chunks has scores under).

Chapters: every chapter that reads `results/reference/`; commands: `volratio results`, `volratio reference`.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pandas as pd

from ..depth.curves import DepthError, curves_from_table
from ..emc2.reading import Reading
from ..errors import VolratioError
from ..judges import JUDGES
from ..util import machine as M
from .manifest import MANIFEST, RESCORE, rebuild
from .manifest import read as read_manifest
from .store import Store

DEFAULT_ROOT = Path(__file__).resolve().parents[2] / "results" / "reference"


OWN = Reading()  # each run's own scores, as stored


class ReferenceError(VolratioError, ValueError):
    """A reference plan, chunk or store that cannot be used as asked."""


def chunks(root: "str | Path" = DEFAULT_ROOT) -> list[str]:
    """Names of the chunks stored under `root` (folders holding a results table)."""
    root = Path(root)
    return sorted(p.parent.name for p in root.glob("*/results.parquet")) if root.is_dir() else []


def manifest(name: str, root: "str | Path" = DEFAULT_ROOT, store: Store | None = None) -> dict:
    """The manifest of chunk `name` (spec, sessions with versions and machine, runs with times), checked
    by `volratio.runs.manifest.read` (a damaged one is a `volratio.runs.manifest.ManifestError`, one line
    naming the file and the fix), with the store's finished runs it lacks added (`rebuild`: a writer
    killed between the store and the manifest; `store`: the chunk's, when the caller has it open)."""
    man = read_manifest(Path(root) / name / MANIFEST, name)
    if store is None and (Path(root) / name / "results.parquet").is_file():
        store = Store(Path(root) / name)
    if store is not None:
        rebuild(man, store.rows.values())
    return man


def records(name: str, root: "str | Path" = DEFAULT_ROOT, rescores: bool = False) -> list[dict]:
    """The finished runs of chunk `name` (`volratio.runs.store.Store.records`), each with its wall and
    CPU seconds from the manifest (`wall_s`, `cpu_s`) and the numerics parts and `kind` of the
    machine that stored it (`machine`; `run_machine`). The rescore runs stored beside the chunk's
    own (`volratio.runs.score`) are left out unless `rescores`."""
    path = Path(root) / name
    if not (path / "results.parquet").is_file():
        raise ReferenceError(f"{path}: no reference results for chunk {name!r} (run it with `volratio reference run`)")
    store = Store(path)
    man = manifest(name, root, store)
    out = []
    for r in store.records():
        if r["status"] == "done" and (rescores or r["run"] != RESCORE):
            r.update({k: man["runs"].get(r["key"], {}).get(k) for k in ("wall_s", "cpu_s")})
            r["machine"] = run_machine(man, r["key"])
            out.append(r)
    return out


def run_machine(man: dict, key: str) -> dict | None:
    """The numerics parts and `kind` of the machine that stored run `key` of a manifest: its
    session's (`volratio.util.machine.of_session`; sessions that predate the kind derive it from their
    CPU model, torch version and device). None when the manifest does not know the run."""
    run = man.get("runs", {}).get(key)
    sessions = man.get("sessions", [])
    if run is None or not sessions:
        return None
    i = run.get("session")
    return M.of_session(sessions[i - 1] if isinstance(i, int) and 1 <= i <= len(sessions) else sessions[-1])


def runs_of(names, root=None, error: type[Exception] = ReferenceError) -> list[dict]:
    """The finished runs (`records`) of those chunks among `names` (one name or several) that are
    stored under `root` (default `results/reference`), in the order of `names`; `error` (a class)
    is raised, naming the chunks and how to run them, when none of them is stored."""
    root = DEFAULT_ROOT if root is None else root
    names = [names] if isinstance(names, str) else list(names)
    present = [n for n in names if n in chunks(root)]
    if not present:
        raise error(f"{root}: none of the chunks {', '.join(names)} is stored; run them with `volratio reference run`")
    return [r for n in present for r in records(n, root)]


def judged(names, root=None, reading: Reading = OWN, error: type[Exception] = ReferenceError) -> list[dict]:
    """The stored runs of the chunks `names` (`runs_of`), each with its `score`, `scores` and
    `base_kept` under `reading` (`volratio.emc2.reading.Reading`): the run's own where it scored
    itself so, else those of its score run stored beside the chunk's runs (`volratio reference
    rescore CHUNK …`, the reading's flags); a run without one is an `error`.

    `reading.judge` None: the runs' own judge, which must be one (chunks judged differently are not
    mixed). A reading of δ other than "absolute" (the runs' own) is read from score runs only, and
    needs the judge. On every weight (`reading.weights == "every"`): every run's scores on every
    non-zero weight through the reading's engine, or its own where it scored every weight under the
    judge itself (float64, torch, δ absolute); each run then gains `weights_scored` ("every") and
    `engine`."""
    if reading.recovery:
        raise error(
            "the judge-free reading (primitive recovery) is not stored with a chunk's runs; read a chunk's "
            "networks by recovery with volratio.runs.recovered.table(CHUNK)"
        )
    stored = runs_of(names, root, error)
    names = [names] if isinstance(names, str) else list(names)
    if not reading.own and any(several_populations(r) for r in stored):
        raise error(
            f"the runs of {', '.join(names)} store several populations each (net_<population>), scored one by one; "
            "read their scores with volratio.experiments.sparse_regime.scores.stored_scores"
        )
    if reading.judge is None and reading.delta_scale != "absolute":
        raise error(f"δ read as {reading.delta_scale!r} is read from rescore runs: give the reading a judge")
    if reading.every:
        return _judged_on_all_weights(stored, names, root, reading, error)
    if reading.judge is None:
        seen = sorted({str(r["metrics"].get("judge")) for r in stored})
        if len(seen) > 1:
            raise error(
                f"the stored runs of {', '.join(names)} were judged differently ({', '.join(seen)}); read "
                "chunks judged alike, or give the reading a judge to score them all under one (rescored where needed)"
            )
        return stored
    root = DEFAULT_ROOT if root is None else root
    judge = reading.judge
    own_max = {r["key"]: r["config"]["max_params"] for r in stored if "max_params" in r["config"]}
    rescored = {
        r["config"]["source"]["key"]: r["metrics"]
        for n in names
        if n in chunks(root)
        for r in rescores(n, reading, root)
        if at_source_settings(r, own_max)
    }
    out = []
    for r in stored:
        if r["metrics"].get("judge") == judge and reading.delta_scale == "absolute":
            out.append(r)
            continue
        m = rescored.get(r["key"])
        if m is None:
            raise error(
                f"run {r['key']} ({_what(r['config'])}) has no scores under {reading.describe()}; rescore its "
                f"chunk (`volratio reference rescore CHUNK {reading.flags()}`)"
            )
        metrics = {**r["metrics"], **{c: m[c] for c in ("score", "scores", "base_kept")}, "judge": judge}
        out.append({**r, "metrics": metrics})
    return out


def several_populations(record: dict) -> bool:
    """Whether a stored run keeps several populations (artifacts net_<population>, a sparse_regime
    run's), each scored by score runs of its own, rather than one (artifact "net")."""
    return any(a.startswith("net_") for a in record.get("artifacts", {}))


def _judged_on_all_weights(stored: list, names: list, root, reading: Reading, error) -> list[dict]:
    """`judged` on every weight: see there."""
    root = DEFAULT_ROOT if root is None else root
    judge, engine = reading.judge, reading.engine
    if judge is None:
        seen = sorted({str(r["metrics"].get("judge")) for r in stored})
        if len(seen) > 1:
            raise error(
                f"the stored runs of {', '.join(names)} were judged differently ({', '.join(seen)}); give the reading a judge"
            )
        judge = seen[0]
        reading = reading.with_judge(judge)
    rescored, chunk_of = {}, {}
    for n in names:
        if n in chunks(root):
            chunk_of.update({r["key"]: n for r in records(n, root)})
            for r in rescores(n, reading, root):
                rescored.setdefault(r["config"]["source"]["key"], r["metrics"])
    out = []
    for r in stored:
        own = (
            r["metrics"].get("judge") == judge
            and r["config"].get("max_params", 0) is None
            and engine == "torch"
            and reading.delta_scale == "absolute"
        )
        m = r["metrics"] if own else rescored.get(r["key"])
        if m is None:
            chunk = chunk_of.get(r["key"], "CHUNK")
            raise error(
                f"run {r['key']} ({_what(r['config'])}) has no scores on every weight under {reading.describe()}; "
                f"rescore its chunk (`volratio reference rescore {chunk} {reading.flags()}`)"
            )
        metrics = {**r["metrics"], **{c: m[c] for c in ("score", "scores", "base_kept")}, "judge": judge}
        out.append({**r, "metrics": metrics, "weights_scored": "every", "engine": engine})
    return out


def _what(config: dict) -> str:
    """A stored run in words: its target and depth, where it has them."""
    return ", ".join(f"{k} {config[k]}" for k in ("target", "depth") if k in config) or "no target"


def depth_curves(names, root=None, tol: float = 1e-9, reading: Reading = OWN) -> dict:
    """Depth curves (`volratio.depth.curves.DepthCurve`) from the stored depth-sweep chunks `names`
    (those present under `root`, default `results/reference`): one per target, one column per network
    (seed.member), every network scored under `reading` (`judged`); a curve's `kept` is `draws`:
    kept by the judge and not collapsed."""
    rows = [
        {
            "status": "done",
            "key": r["key"],
            "seed": r["config"]["seed"],
            "target": r["config"]["target"],
            "depth": r["config"]["depth"],
            **{c: r["metrics"][c] for c in ("score", "loss", "dense_loss", "nonzero")},
            "base_kept": draws(r["metrics"]),
        }
        for r in judged(names, root, reading, DepthError)
    ]
    return curves_from_table(pd.DataFrame(rows), tol)


def draws(metrics: dict):
    """Per network of a run's `metrics`: does it draw its label — the judge kept its base image
    (`base_kept`) and the network is not collapsed (`collapsed`, where the run recorded it; the rule
    of `volratio.report.evidence`). `base_kept` as stored where the run recorded no collapse flags."""
    kept, gone = metrics.get("base_kept"), metrics.get("collapsed")
    if not isinstance(kept, (list, tuple)) or not isinstance(gone, (list, tuple)) or len(kept) != len(gone):
        return kept
    return [bool(k) and not bool(c) for k, c in zip(kept, gone)]


def table(name: str, root: "str | Path" = DEFAULT_ROOT):
    """The stored results of chunk `name` as one tidy DataFrame: the rows a run returned (`rows`,
    for chapter experiments run whole) or one row of metrics per run, each with the run's `key`,
    `cpu_s` and `wall_s`, and its `seed` (unless the row has its own). Array artifacts are not
    included (`artifact(name, key, art)` reads one)."""
    out = []
    for r in records(name, root):
        seed = {"seed": r["config"].get("seed")}
        base = {"key": r["key"], "cpu_s": r["cpu_s"], "wall_s": r["wall_s"]}
        m = r["metrics"]
        if isinstance(m.get("rows"), list):
            out += [{**seed, **row, **base} for row in m["rows"]]
        else:
            out.append({**seed, **m, **base})
    return non_finite_as_floats(pd.DataFrame(out))


_NON_FINITE = {"nan": float("nan"), "inf": float("inf"), "-inf": float("-inf")}


def non_finite_as_floats(df):
    """Runs store NaN and ±inf metrics as the strings "nan", "inf", "-inf" (strict JSON,
    `volratio.runs.sweep`); a column whose other values are all numbers gets them back as floats."""
    for col in [c for c in df.columns if df[c].dtype == "object"]:
        vals = df[col]
        text = vals.map(lambda v: isinstance(v, str))
        if text.any() and vals[text].isin(list(_NON_FINITE)).all():
            rest = vals[~text]
            if rest.map(lambda v: v is None or (isinstance(v, (int, float)) and not isinstance(v, bool))).all():
                df[col] = pd.to_numeric(vals.map(lambda v: _NON_FINITE.get(v, v) if isinstance(v, str) else v))
    return df


def cost(name: str, root: "str | Path" = DEFAULT_ROOT) -> dict:
    """What chunk `name` cost: runs, CPU and wall seconds (sums over its runs), the CPU seconds of
    its rescore runs (scoring its stored networks under other judges), CPU model."""
    man = manifest(name, root)
    used = [man["sessions"][i - 1] for i in sorted({r["session"] for r in man["runs"].values()})] or man["sessions"][
        -1:
    ]
    return {
        "chunk": name,
        "runs": man["runs_done"],
        "of": man["runs_total"],
        "cpu_s": man["cpu_s_total"],
        "wall_s": man["wall_s_total"],
        "rescore_cpu_s": float(man.get("rescore_cpu_s_total", 0.0)),
        "cpu_model": ", ".join(dict.fromkeys(s["cpu_model"] for s in used)),
        "commit": ", ".join(dict.fromkeys(str(s["commit"])[:10] for s in used)),
    }


# ---------------------------------------------------------------------------------------------
# Rescore runs


def rescores(chunk: str, reading: "Reading | None" = None, root: "str | Path | None" = None) -> list[dict]:
    """The finished score runs of `chunk` under `reading` (`matches`; its judge None: every
    judge's), as `records` gives runs; `reading` None: every score run of the chunk, whatever its
    reading."""
    recs = records(chunk, DEFAULT_ROOT if root is None else root, rescores=True)
    return [r for r in recs if r["run"] == RESCORE and (reading is None or matches(reading, r))]


def matches(reading: Reading, record: dict) -> bool:
    """Whether a stored score run was scored under `reading`: its judge (any, for a reading without
    one), anchor and δ's scale; where the reading names its weights (every one, or at most N), those
    weights through the reading's engine (the runs' own settings: any weights, which
    `at_source_settings` tells apart); on the reading's device where it names one."""
    cfg = record["config"]
    emc = cfg["emc2"]
    return (
        (reading.judge is None or cfg["judge"] == reading.judge)
        and cfg["anchor"] == reading.anchor
        and emc["delta_scale"] == reading.delta_scale
        and (
            reading.weights == "own"
            or (emc.get("max_params") == reading.max_params and rescore_engine(record) == reading.engine)
        )  # fmt: skip
        and (reading.device is None or emc.get("device") == reading.device)
    )


def weights_scored(record: dict) -> str:
    """Which weights a score run perturbed: "every" non-zero weight (`max_params` None), or a "sample"."""
    return "every" if record["config"]["emc2"].get("max_params") is None else "sample"


def rescore_engine(record: dict) -> str:
    """The perturbation engine of a rescore run (its config names it; "torch" for a config without one)."""
    return record["config"]["emc2"].get("engine", "torch")


def at_source_settings(record: dict, own_max: dict) -> bool:
    """Whether a rescore run scored its source's networks at the source's own settings: the source's
    `max_params` (`own_max`: source key → the source config's `max_params`), and for a source that
    scored every weight itself, through the torch engine (its every-weight torch rescore)."""
    emc = record["config"]["emc2"]
    src_max = own_max.get(record["config"]["source"]["key"], emc.get("max_params"))
    return emc.get("max_params") == src_max and (src_max is not None or rescore_engine(record) == "torch")


def rescore_cost(chunk: str, root: "str | Path | None" = None):
    """What the rescore runs stored beside chunk `chunk` cost, one row per judge and kind of rescore:
    `judge`, `weights` ("every" or "sample"), `engine`, `dtype`, `runs`, `networks`, `cpu_s` and
    `wall_s` (sums of each run's own, from the manifest); every reading of δ and anchor."""
    rows = {}
    for r in _all_rescores(chunk, root):
        emc = r["config"]["emc2"]
        k = (r["config"]["judge"], weights_scored(r), rescore_engine(r), emc["dtype"])
        row = rows.setdefault(
            k, dict(zip(("judge", "weights", "engine", "dtype"), k), runs=0, networks=0, cpu_s=0.0, wall_s=0.0)
        )
        row["runs"] += 1
        row["networks"] += int(r["config"]["members"])
        row["cpu_s"] += float(r["cpu_s"] or 0.0)
        row["wall_s"] += float(r["wall_s"] or 0.0)
    return pd.DataFrame(
        list(rows.values()), columns=["judge", "weights", "engine", "dtype", "runs", "networks", "cpu_s", "wall_s"]
    )


def _all_rescores(chunk: str, root) -> list[dict]:
    """Every finished score run of `chunk`: all judges, anchors and readings of δ."""
    return rescores(chunk, None, root)


def judges_covering(names, root: "str | Path | None" = None, reading: Reading = OWN) -> list[str]:
    """The judges under which every stored run of the chunks `names` has scores read as `reading`
    (its judge aside; in `volratio.judges.JUDGES` order): the runs' own judge when all share it and
    their own scores are that reading (δ absolute; on every weight, only where they scored every
    weight through the torch engine), and each judge whose score runs cover every run."""
    root = DEFAULT_ROOT if root is None else root
    names = [names] if isinstance(names, str) else list(names)
    runs = [r for c in names for r in records(c, root)]
    if not runs:
        return []
    reading = reading.with_judge(None)
    own = {r["metrics"].get("judge") for r in runs} if reading.delta_scale == "absolute" else set()
    if reading.every and not (
        reading.engine == "torch" and all(r["config"].get("max_params", 0) is None for r in runs)
    ):
        own = set()  # the runs' own scores are a sample (or another engine's)
    own_max = {r["key"]: r["config"]["max_params"] for r in runs if "max_params" in r["config"]}
    covered = {}
    for c in names:
        for r in rescores(c, reading, root):
            if reading.every or at_source_settings(r, own_max):
                covered.setdefault(r["config"]["judge"], set()).add(r["config"]["source"]["key"])
    keys = {r["key"] for r in runs}
    return [j for j in JUDGES if own == {j} or keys <= covered.get(j, set())]


def scaled_judge(names, deciding: str, fallback: str = "anchored", root=None, reading: Reading = OWN) -> "str | None":
    """The judge to read the chunks `names` under with δ × each weight's layer std (the claims'
    robustness row on δ): `deciding` when its layer-std score runs cover every stored run (read as
    `reading` otherwise: its weights and engine), else `fallback` when its do, else None (not scored)."""
    covering = judges_covering(names, root, replace(reading, delta_scale="layer_std"))
    return next((j for j in (deciding, fallback) if j in covering), None)


def judges_reading(names, judges, root: "str | Path | None" = None, engine: str = "fused") -> Reading:
    """What the judges `judges` are compared on over the chunks `names`: every non-zero weight
    through `engine` where every stored run has every-weight scores under each of them, else the
    runs' own seeded sample (the reading every judge of `judges_covering(names)` has). Read the
    chunks under it (`judged`, the experiments' readers, each with the judge set), so that a judge
    comparison never mixes weights scored with samples."""
    every = Reading(weights="every", engine=engine)
    return every if set(judges) <= set(judges_covering(names, root, every)) else OWN


def rescore_table(chunk: str, reading: "Reading | None" = None, root: "str | Path | None" = None):
    """One row per network scored by the score runs of `chunk` under `reading` (see `rescores`):
    chunk, source key, seed, member, judge, anchor, score, scores, base_kept, `anchor_rmse` (NaN under
    the "image" anchor, which does not record it), what was scored (`weights`: "every" or "sample";
    `max_params`, `engine`, `dtype`), the score run's key and its CPU seconds (the whole run's: all
    its members)."""
    rows = []
    for r in rescores(chunk, reading, root):
        m = r["metrics"]
        emc = r["config"]["emc2"]
        what = {
            "weights": weights_scored(r),
            "max_params": emc.get("max_params"),
            "engine": rescore_engine(r),
            "dtype": emc["dtype"],
        }
        for k, s in enumerate(m["score"]):
            rows.append(
                {
                    "chunk": chunk,
                    "source": r["config"]["source"]["key"],
                    "target": r["config"]["target"],
                    "seed": r["config"]["seed"],
                    "member": k,
                    "judge": m["judge"],
                    "anchor": m["anchor"],
                    "score": s,
                    "scores": m["scores"][k],
                    "base_kept": m["base_kept"][k],
                    "anchor_rmse": m["anchor_rmse"][k] if "anchor_rmse" in m else float("nan"),
                    **what,
                    "key": r["key"],
                    "cpu_s": r["cpu_s"],
                }
            )
    return pd.DataFrame(rows)
