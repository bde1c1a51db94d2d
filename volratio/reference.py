"""The reference-scale results: a plan of chunks, each a sweep into its own store, with a manifest.

The reference scale (issue 16) decides the paper's claims at a size a 2-core machine can afford
(all claims ≤ 8 CPU-hours). Its runs are described by a *plan* (`examples/sweeps/reference.toml`,
`full.toml`): a TOML file whose `[chunks.NAME]` tables are sweep specs (`volratio.sweep.Sweep`:
`run` names a registered run function, plus `config`, `grid`, `seeds`, `threads`). Each chunk is
run by `volratio.sweep.run_sweep` into its own results store `ROOT/NAME/` (`volratio.store`), so a
chunk is resumable, committed to git as soon as it finishes, and read back without the others.

Next to each chunk's store, `ROOT/NAME/manifest.json` records what is needed to trust and re-run
it: the chunk's spec, the library version and git commit, torch/numpy/python versions, device, CPU
model, and per run its key, config, seed, wall and CPU seconds.

`verify(ROOT, sample=K)` re-runs K runs drawn with a seeded generator (optionally only among runs
whose recorded CPU time is ≤ `max_cpu_seconds`) and checks that they reproduce the stored metrics
and artifacts bit for bit (timing entries excepted). Used by `volratio reference run`,
`volratio results verify` and the chapters that show reference-scale results (book/volume_ratio.md,
book/emc2.md, book/claims.md).
"""

from __future__ import annotations

import json
import os
import platform
import random
import subprocess
import time
import warnings
from pathlib import Path

from .errors import VolratioError
from .fileio import atomic_path

MANIFEST = "manifest.json"
DEFAULT_ROOT = Path(__file__).resolve().parent.parent / "results" / "reference"
# metric entries that measure time, not results: left out of the bit-for-bit comparison
TIMING_KEYS = frozenset({"seconds_run", "elapsed_s", "seconds", "wall_s", "cpu_s", "versions"})


class ReferenceError(VolratioError, ValueError):
    """A reference plan, chunk or store that cannot be used as asked."""


# ---------------------------------------------------------------------------------------------
# The plan


def load_plan(path: "str | Path") -> dict:
    """`{chunk name: Sweep}` from a plan file (see `examples/sweeps/reference.toml`)."""
    try:
        import tomllib
    except ImportError:  # Python 3.10
        import tomli as tomllib

    from .sweep import Sweep

    path = Path(path)
    if not path.is_file():
        raise ReferenceError(f"{path}: no such plan; see examples/sweeps/reference.toml for one")
    try:
        spec = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as e:
        raise ReferenceError(f"{path}: not valid TOML ({e}); fix the syntax") from None
    chunks = spec.get("chunks")
    if not isinstance(chunks, dict) or not chunks:
        raise ReferenceError(f"{path}: no [chunks.NAME] tables; each chunk is a sweep spec (run, config, grid, seeds)")
    unknown = set(spec) - {"chunks", "scale"}
    if unknown:
        raise ReferenceError(
            f"{path}: unknown top-level entries {sorted(unknown)}; a plan has `scale` and [chunks.NAME]"
        )
    plan = {}
    for name, body in chunks.items():
        if not isinstance(body, dict):
            raise ReferenceError(f"{path}: chunks.{name} is not a table")
        plan[name] = Sweep.from_dict({"name": name, **body}, source=f"{path} chunks.{name}")
    return plan


# ---------------------------------------------------------------------------------------------
# Running a chunk


def machine() -> dict:
    """What ran the chunk: versions, commit, device, CPU model."""
    from .experiments._base import versions

    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        **versions(),
        "commit": git_commit(),
        "device": "cpu",
        "cpu_model": cpu,
        "cpu_count": os.cpu_count(),
        "platform": platform.platform(),
    }


def git_commit() -> str | None:
    """HEAD of the repository the library lives in, with "+dirty" when tracked files differ."""
    root = Path(__file__).resolve().parent.parent
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=10)
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no", "--", "volratio"],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if head.returncode:
        return None
    return head.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")


def run_chunk(
    plan: dict,
    name: str,
    root: "str | Path" = DEFAULT_ROOT,
    executor=None,
    progress: bool | None = None,
    retry_failed: bool = False,
):
    """Run chunk `name` of `plan` into `root/name/` (resuming: finished runs are skipped; runs whose
    last attempt failed are rerun only with `retry_failed`) and write its manifest after every run.
    Returns the sweep report."""
    from .sweep import run_sweep

    if name not in plan:
        raise ReferenceError(f"no chunk {name!r} in the plan; it has {', '.join(plan)}")
    sweep = plan[name]
    out = Path(root) / name
    man_path = out / MANIFEST
    manifest = json.loads(man_path.read_text()) if man_path.is_file() else {}
    runs = manifest.get("runs", {})
    session = {"started_at": _now(), **machine()}

    def on_outcome(outcome: dict) -> None:
        if outcome["status"] != "done":
            return
        runs[outcome["key"]] = {
            "config": outcome["config"],
            "seed": outcome["config"].get("seed"),
            "wall_s": round(float(outcome["seconds"]), 3),
            "cpu_s": round(float(outcome.get("cpu_seconds", float("nan"))), 3),
            "finished_at": outcome.get("finished_at"),
            "session": len(sessions),
        }
        _write_manifest(man_path, sweep, sessions, runs)

    sessions = manifest.get("sessions", []) + [session]
    out.mkdir(parents=True, exist_ok=True)
    report = run_sweep(sweep, out, executor, retry_failed=retry_failed, progress=progress, on_outcome=on_outcome)
    _write_manifest(man_path, sweep, sessions, runs)
    return report


def _write_manifest(path: Path, sweep, sessions: list, runs: dict) -> None:
    import dataclasses

    total_cpu = sum(r["cpu_s"] for r in runs.values() if r["cpu_s"] == r["cpu_s"])
    doc = {
        "chunk": sweep.name,
        "spec": {k: v for k, v in dataclasses.asdict(sweep).items() if k != "name"},
        "runs_total": len(sweep.configs()),
        "runs_done": len(runs),
        "cpu_s_total": round(total_cpu, 1),
        "wall_s_total": round(sum(r["wall_s"] for r in runs.values()), 1),
        "sessions": sessions,
        "runs": runs,
    }
    with atomic_path(path) as tmp:
        tmp.write_text(json.dumps(doc, indent=1, sort_keys=False) + "\n")


def _now() -> str:
    import datetime

    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


# ---------------------------------------------------------------------------------------------
# Reading


def chunks(root: "str | Path" = DEFAULT_ROOT) -> list[str]:
    """Names of the chunks stored under `root` (folders holding a results table)."""
    root = Path(root)
    return sorted(p.parent.name for p in root.glob("*/results.parquet")) if root.is_dir() else []


def manifest(name: str, root: "str | Path" = DEFAULT_ROOT) -> dict:
    """The manifest of chunk `name` (spec, sessions with versions and machine, runs with times)."""
    path = Path(root) / name / MANIFEST
    if not path.is_file():
        raise ReferenceError(f"{path}: no manifest; run the chunk with `volratio reference run PLAN --chunk {name}`")
    return json.loads(path.read_text())


def records(name: str, root: "str | Path" = DEFAULT_ROOT) -> list[dict]:
    """The finished runs of chunk `name` (`volratio.store.Store.records`), each with its wall and
    CPU seconds from the manifest (`wall_s`, `cpu_s`)."""
    from .store import Store

    path = Path(root) / name
    if not (path / "results.parquet").is_file():
        raise ReferenceError(f"{path}: no reference results for chunk {name!r} (run it with `volratio reference run`)")
    store = Store(path)
    man = manifest(name, root)["runs"]
    out = []
    for r in store.records():
        if r["status"] == "done":
            r.update({k: man.get(r["key"], {}).get(k) for k in ("wall_s", "cpu_s")})
            out.append(r)
    return out


def stored_records(names, root=None, error: type[Exception] = ReferenceError) -> list[dict]:
    """The finished runs (`records`) of those chunks among `names` (one name or several) that are
    stored under `root` (default `results/reference`), in the order of `names`; `error` (a class)
    is raised, naming the chunks and how to run them, when none of them is stored."""
    root = DEFAULT_ROOT if root is None else root
    names = [names] if isinstance(names, str) else list(names)
    present = [n for n in names if n in chunks(root)]
    if not present:
        raise error(f"{root}: none of the chunks {', '.join(names)} is stored; run them with `volratio reference run`")
    return [r for n in present for r in records(n, root)]


# ---------------------------------------------------------------------------------------------
# Verifying


def verify(
    root: "str | Path" = DEFAULT_ROOT,
    sample: int = 1,
    seed: int = 0,
    max_cpu_seconds: float | None = None,
    chunk: str | None = None,
) -> list[dict]:
    """Re-run `sample` stored runs (drawn with `seed`, among runs whose recorded CPU time is ≤
    `max_cpu_seconds` when given) and compare. Returns one dict per run: chunk, key, ok, seconds,
    and `problem` (one line) when it does not reproduce."""
    from . import __version__
    from .experiments import get_run
    from .sweep import execute

    root = Path(root)
    names = [chunk] if chunk else chunks(root)
    if not names:
        raise ReferenceError(f"{root}: no reference chunks (folders with results.parquet); nothing to verify")
    pool = []
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a damaged store is an error here, not a silent recompute
        for name in names:
            for r in records(name, root):
                if max_cpu_seconds is None or (r["cpu_s"] is not None and r["cpu_s"] <= max_cpu_seconds):
                    pool.append((name, r))
    if not pool:
        raise ReferenceError(f"{root}: no stored run with CPU time ≤ {max_cpu_seconds} s; raise --max-cpu-seconds")
    picked = random.Random(seed).sample(pool, min(sample, len(pool)))
    out = []
    for name, r in picked:
        entry = get_run(_name_of(r["run"]))
        t0 = time.perf_counter()
        new = execute(entry.fn, entry.key, r["config"], r["key"], __version__, threads=1)
        res = {
            "chunk": name,
            "key": r["key"],
            "seconds": round(time.perf_counter() - t0, 2),
            "stored_cpu_s": r["cpu_s"],
        }
        if new["status"] != "done":
            res.update(ok=False, problem=f"{name}/{r['key']}: the rerun failed: {new['error']}")
        else:
            res.update(_compare(name, r, new))
        out.append(res)
    return out


def _name_of(run_key: str) -> str:
    """A store's `run` column (a run function's key) → its registry name."""
    from .experiments import ALIASES

    if run_key.startswith(("volratio.experiments:", "user:")):
        return run_key.split(":", 1)[1]
    return ALIASES.get(run_key, run_key)


def _strip(x):
    if isinstance(x, dict):
        return {k: _strip(v) for k, v in x.items() if k not in TIMING_KEYS}
    if isinstance(x, list):
        return [_strip(v) for v in x]
    return x


def _compare(name: str, stored: dict, new: dict) -> dict:
    from .store import sha256_bytes

    a, b = _strip(stored["metrics"]), _strip(json.loads(json.dumps(new["metrics"])))
    if a != b:
        where, x, y = _first_difference(a, b)
        return {
            "ok": False,
            "problem": f"{name}/{stored['key']}: metric {where} does not reproduce "
            f"(stored {_short(x)}, now {_short(y)}); rerun it and compare versions",
        }
    stored_arts = {n: Path(p) for n, p in stored["artifacts"].items()}
    for art, (_suffix, data) in new["artifacts"].items():
        p = stored_arts.get(art)
        if p is None or not p.is_file() or sha256_bytes(p.read_bytes()) != sha256_bytes(data):
            return {"ok": False, "problem": f"{name}/{stored['key']}: artifact {art!r} does not reproduce"}
    return {"ok": True}


def _first_difference(a, b, where: str = "") -> tuple:
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            if a.get(k) != b.get(k):
                return _first_difference(a.get(k), b.get(k), f"{where}.{k}" if where else k)
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            if x != y:
                return _first_difference(x, y, f"{where}[{i}]")
    return where or "(all)", a, b


def _short(x) -> str:
    s = json.dumps(x)
    return s if len(s) <= 60 else s[:57] + "..."


# ---------------------------------------------------------------------------------------------
# Tables the chapters show


def table(name: str, root: "str | Path" = DEFAULT_ROOT):
    """The stored results of chunk `name` as one tidy DataFrame: the rows a run returned (`rows`,
    for chapter experiments run whole) or one row of metrics per run, each with the run's `key`,
    `cpu_s` and `wall_s`, and its `seed` (unless the row has its own). Array artifacts are not
    included (`artifact(name, key, art)` reads one)."""
    import pandas as pd

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
    `volratio.sweep`); a column whose other values are all numbers gets them back as floats."""
    import pandas as pd

    for col in [c for c in df.columns if df[c].dtype == "object"]:
        vals = df[col]
        text = vals.map(lambda v: isinstance(v, str))
        if text.any() and vals[text].isin(list(_NON_FINITE)).all():
            rest = vals[~text]
            if rest.map(lambda v: v is None or (isinstance(v, (int, float)) and not isinstance(v, bool))).all():
                df[col] = pd.to_numeric(vals.map(lambda v: _NON_FINITE.get(v, v) if isinstance(v, str) else v))
    return df


def cost(name: str, root: "str | Path" = DEFAULT_ROOT) -> dict:
    """What chunk `name` cost: runs, CPU and wall seconds (sums over its runs), CPU model."""
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
        "cpu_model": ", ".join(dict.fromkeys(s["cpu_model"] for s in used)),
        "commit": ", ".join(dict.fromkeys(str(s["commit"])[:10] for s in used)),
    }


RHO_CHUNKS = (
    "rho",
    "rho_wmin",
    "rho_deep",
    "rho_deep_wmin",
)  # Boolean ρ: chain:2 and tree:2:2, their depth axis at W_min, the depth-3 target and its depth axis


def rho_grids(root: "str | Path" = DEFAULT_ROOT, names=RHO_CHUNKS) -> dict:
    """The stored ρ cells of the chunks `names` (those present under `root`) as
    `volratio.rho.run_boolean` outputs, one per target: `{spec: {"target", "L_star", "W_min",
    "rows"}}` with the rows (as `volratio.rho.boolean_grid` returns them: None where there is no
    estimate) in (L, W) order — what book/volume_ratio.md draws."""
    from .boolean import get_boolean_target

    by_target: dict[str, list] = {}
    for r in stored_records(names, root):
        for row in r["metrics"].get("rows", []):
            if row.get("model") == "boolean":
                by_target.setdefault(row["target"], []).append(
                    {k: v for k, v in row.items() if k not in ("model", "target")}
                )
    out = {}
    for spec, rows in by_target.items():
        bt = get_boolean_target(spec)
        out[spec] = {
            "target": spec,
            "L_star": bt.depth,
            "W_min": bt.width,
            "rows": sorted(rows, key=lambda x: (x["L"], x["W"])),
        }
    return out


def basin_rows(root: "str | Path" = DEFAULT_ROOT, names=("rho_basin",)) -> dict:
    """The stored basin-model cells of the chunks `names` (those present under `root`), one list of
    `volratio.rho.basin_cell` rows per planted target, in (L, W) order: `{spec: rows}`."""
    out: dict[str, list] = {}
    for r in stored_records(names, root):
        for row in r["metrics"].get("rows", []):
            if row.get("model") == "basin":
                out.setdefault(row["target"], []).append({k: v for k, v in row.items() if k not in ("model", "target")})
    return {spec: sorted(rows, key=lambda x: (x["L"], x["W"])) for spec, rows in out.items()}
