"""The reference-scale results: a plan of chunks, each a sweep into its own store, with a manifest.

The reference scale decides the paper's claims at a size a 2-core machine can afford
(all claims ≤ 8 CPU-hours). Its runs are described by a *plan* (`examples/sweeps/reference.toml`,
`full.toml`): a TOML file whose `[chunks.NAME]` tables are sweep specs (`volratio.runs.sweep.Sweep`:
`run` names a registered run function, plus `config`, `grid`, `seeds`, `threads`). Each chunk is
run by `volratio.runs.sweep.run_sweep` into its own results store `ROOT/NAME/` (`volratio.runs.store`), so a
chunk is resumable, committed to git as soon as it finishes, and read back without the others.

Next to each chunk's store, `ROOT/NAME/manifest.json` records what is needed to trust and re-run
it: the chunk's spec, per session the library version and git commit, torch/numpy/python versions
and the machine's numerics parts and `kind` (`volratio.util.machine`: device, CPU vendor, model, ISA,
torch's CPU capability, BLAS), and per run its key, config, seed, wall and CPU seconds and `kind`.

`verify(ROOT, sample=K)` re-runs K runs drawn with a seeded generator (optionally only among runs
whose recorded CPU time is ≤ `max_cpu_seconds`) and checks that they reproduce the stored metrics
and artifacts bit for bit (timing entries excepted). Float results repeat bit for bit only on the
CPU kind that stored them, so by default the sample is drawn among the runs *comparable* here: those
stored on this machine's kind, and those of the run functions in `MACHINE_INDEPENDENT` (verified to
reproduce across kinds). A run of another kind that scored networks (`score_checkable`: SCORE_ONLY
runs, and runs that stored their networks and say how they scored them, `Scoring.metrics`) is
checked by its scores instead: the networks
are re-scored under the same judge and engine, without training, and the scores compared within
SCORE_TOLERANCE; so is a run computed on a GPU (its config's `device` names CUDA), on any machine,
re-scored on the CPU where there is no GPU (`runnable_here`). `any_machine=True` draws among all runs and reports a difference on another
kind as such, not as a failure. A chunk's runs are read back with `volratio.runs.stored`. Used by `volratio reference run`,
`volratio results verify` and the chapters that show reference-scale results (book/volume_ratio.md,
book/emc2.md, book/claims.md).
"""

from __future__ import annotations

import datetime
import functools
import json
import os
import platform
import random
import time
import warnings
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import torch

from ..depth.point import CALIBRATION_SEED
from ..emc2.reading import Reading
from ..emc2.source import Scoring, scoring_of
from ..errors import VolratioError
from ..util import machine as M
from ..util.device import resolve_device
from ..util.provenance import git_commit, versions
from . import recovered
from .manifest import MANIFEST, rebuild
from .manifest import read as read_manifest
from .manifest import write as write_manifest
from .registry import get_run, stored_config
from .store import CorruptResultWarning, Store, config_key, sha256_bytes, sha256_file
from .stored import DEFAULT_ROOT, RESCORE, ReferenceError, chunks, records
from .sweep import Sweep, execute, run_sweep

try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib

# metric entries that measure time, not results: left out of the bit-for-bit comparison
TIMING_KEYS = frozenset({"seconds_run", "elapsed_s", "seconds", "wall_s", "cpu_s", "versions"})


def _boolean_only(record: dict) -> bool:
    """A stored `volume_ratio` run that computes the Boolean model only (no basin cells)."""
    try:
        cfg = stored_config(record)
    except (VolratioError, TypeError, ValueError):
        return False
    return not (cfg.basin_target and cfg.basin_Ws)


# Run functions whose stored results reproduce bit for bit on any CPU kind: name -> (what, test on
# a stored run). Only what was verified across kinds belongs here (results/reference/README.md):
# the Boolean model of ρ samples networks and counts matches with integer and bitwise operations;
# its basin cells train float networks and are not included (they differ across kinds).
MACHINE_INDEPENDENT = {
    "volume_ratio": ("Boolean ρ: integer and bitwise sampling", _boolean_only),
}


# Stored runs of another CPU kind whose *scores* can still be checked here. Float training does not
# repeat across kinds, but scoring a stored network does, up to a verdict that flips where a judge's
# score sits on its threshold to the last bit. So `verify` re-scores, under the same judge and
# engine (float64), what these runs scored and compares within SCORE_TOLERANCE:
# - SCORE_ONLY: run functions that score networks and train none (re-run as stored);
# - runs that train and store their final population (artifact NET) and whose config says how it
#   scored them (`scoring()`, `volratio.emc2.source.Scoring`, with the metrics of its scores): their
#   stored networks are re-scored under the run's own judge as the score stage (`volratio.runs.score`) does.
SCORE_ONLY = ("emc2_point", RESCORE)
RUN = RESCORE  # the registry name of the score stage's run function (volratio.runs.score.point)
NET = "net"  # the artifact holding a run's final population
# the largest difference allowed, on another CPU kind, between a stored and a re-computed float of a
# scoring run (S at each δ, the AUC, …): 1 % of the scored perturbations (a few flipped verdicts)
SCORE_TOLERANCE = 0.01


@functools.cache
def rescorable(run: str) -> bool:
    """Whether the stored networks of run function `run` can be scored again: its config says how it
    scored them (`scoring()`, `volratio.emc2.source.Scoring`). Its default config is asked."""
    try:
        return scoring_of(get_run(run).parse({})) is not None
    except (VolratioError, TypeError, ValueError):
        return False


def source_scoring(record: dict) -> Scoring:
    """How a stored run scored the networks it stores (`volratio.emc2.source.Scoring`: the target, the
    members, member 0's EMC2 settings, each member's name in the verdict set, the metrics of its
    scores). `ReferenceError` for a run whose networks cannot be scored again.

    The names are what a rescore tells the cross-fitted judge "anchored-xfit", so that a network of the
    set is scored by the rule fitted without its verdict rows: a `twin_point`'s Picbreeder network is
    the set's `picbreeder:TARGET`; the SP populations of the depth and optimizer runs are trained by
    their run (seed 0 in every stored chunk), and the set's SP networks (`sp-deep:…`, `sp-guarded:…`)
    were trained apart from any stored run (seed 101): none of them is in the set."""
    scoring = scoring_of(stored_config(record))
    if scoring is None:
        raise ReferenceError(f"run {record['run']!r} stores no networks that can be scored again (no `scoring()`)")
    return scoring


def rescore_config(chunk: str, record: dict, reading: Reading, artifact: str = NET) -> dict:
    """The config of the score stage's run (`volratio.runs.score.point`) that scores the stored
    population `artifact` of a source run (a `records` entry of a run function whose config says how
    it scored them, `scoring()`) under `reading` (`volratio.emc2.reading.Reading`, which names the
    judge). The source names its artifact only where it is not NET (a run's one population), so
    that the score runs of such runs keep their keys.

    Its `emc2` holds every `EMC2Config` entry but `member` (engine and dtype included): a run is
    keyed by its complete config. The EMC2 settings are the source's own scoring's
    (`source_scoring`) under the reading (`Reading.emc2`: δ's scale; on every weight `max_params`
    None through the reading's engine)."""
    if reading.judge is None:
        raise ReferenceError("a rescore scores under a judge: give the reading one (Reading(judge=NAME))")
    scoring = source_scoring(record)
    target, members, ec = scoring.target, scoring.members, scoring.emc2
    emc = {k: v for k, v in asdict(ec).items() if k != "member"}
    emc["deltas"] = [float(d) for d in ec.deltas]
    return {
        "source": {
            "chunk": chunk,
            "key": record["key"],
            "run": record["run"],
            "net_sha256": sha256_file(Path(record["artifacts"][artifact])),
            **({} if artifact == NET else {"artifact": artifact}),
        },
        "judge": reading.judge,
        "target": target,
        "members": members,
        "emc2": reading.emc2(emc),
        "calibration_seed": CALIBRATION_SEED,
        "seed": int(stored_config(record).seed),
        "anchor": reading.anchor,
    }


def score_checkable(record: dict) -> bool:
    """Whether a stored run's scores can be re-computed on any CPU kind: a SCORE_ONLY run, or one that
    stored its networks and the metrics of its scores (`Scoring.metrics`)."""
    if record["run"] in SCORE_ONLY:
        return True
    return _scores_stored(record) and NET in record["artifacts"] and "judge" in record["metrics"]


def _scores_stored(record: dict) -> bool:
    """Whether a stored run keeps its own scores as `Scoring.metrics`, checked by re-scoring its networks."""
    return rescorable(record["run"]) and bool(source_scoring(record).metrics)


# ---------------------------------------------------------------------------------------------
# The plan


def load_plan(path: "str | Path") -> dict:
    """`{chunk name: Sweep}` from a plan file (see `examples/sweeps/reference.toml`)."""
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
    """What ran the chunk: versions, commit, CPU count, platform and the numerics parts and `kind`
    of this machine (`volratio.util.machine.identity`: device, CPU vendor, model, ISA, capability, BLAS)."""
    return {
        **versions(),
        "commit": git_commit(),
        **M.identity(),
        "cpu_count": os.cpu_count(),
        "platform": platform.platform(),
    }


def device_name_here(device: str) -> str:
    """The device `device` ("auto", "cpu", "cuda", "cuda:N") names on this machine, as a run's config
    records it: "auto" resolved ("cuda" when CUDA is available, else "cpu"); `VolratioError` when
    this machine has no such device."""
    dev = resolve_device(device)
    return dev.type if dev.index is None else str(dev)


def on_device(sweep: Sweep, device: str | None) -> Sweep:
    """`sweep` with every run's `device` set to `device` as this machine resolves it
    (`device_name_here`), so that each stored config says where the run computed and runs on a GPU
    never share a key with runs on the CPU. With `device` None the plan's own device stays, but a plan's
    "auto" is resolved the same way (a stored config never says "auto"), and a device this machine
    lacks is refused before any run (`VolratioError`). `ReferenceError` when `device` is given and the
    chunk's run function has no `device` setting."""
    planned = get_run(sweep.run).keyed(sweep.configs()[0]).get("device")
    if device is None:  # as the plan says: refused up front when this machine lacks the plan's device
        if not isinstance(planned, str):
            return sweep
        name = device_name_here(planned)
        if planned != "auto":
            return sweep
    else:
        name = device_name_here(device)
    if planned is None:
        raise ReferenceError(
            f"chunk {sweep.name!r}: its run function {sweep.run!r} has no device setting; run it without --device"
        )
    return replace(sweep, config={**sweep.config, "device": name})


def _on_cuda(config: dict) -> bool:
    return str(config.get("device", "")).startswith("cuda")


def runnable_here(config: dict) -> dict:
    """`config` with every `device` entry (nested ones too) that names CUDA replaced by "cpu" when this
    machine has no CUDA device: how a run stored on a GPU is re-scored on a CPU (its scores compared
    within SCORE_TOLERANCE, as across CPU kinds); unchanged where CUDA is available."""
    if torch.cuda.is_available():
        return config

    def cpu(x):
        if isinstance(x, dict):
            return {k: "cpu" if k == "device" and str(v).startswith("cuda") else cpu(v) for k, v in x.items()}
        return x

    return cpu(config)


def run_chunk(
    plan: dict,
    name: str,
    root: "str | Path" = DEFAULT_ROOT,
    executor=None,
    progress: bool | None = None,
    retry_failed: bool = False,
    device: str | None = None,
):
    """Run chunk `name` of `plan` into `root/name/` (resuming: finished runs are skipped; runs whose
    last attempt failed are rerun only with `retry_failed`) and write its manifest after every run.
    `device` (None: as the plan says) sets every run's device (`on_device`); a run on CUDA records its
    wall seconds as `gpu_s` too (the GPU held for the run). Runs that read stored networks read them
    from the chunks under `root`, in this process and in worker processes alike
    (`volratio.runs.registry.RunFunction.reading_store`). Returns the sweep report."""
    if name not in plan:
        raise ReferenceError(f"no chunk {name!r} in the plan; it has {', '.join(plan)}")
    sweep = on_device(plan[name], device)
    out = Path(root) / name
    man_path = out / MANIFEST
    manifest = read_for_writing(man_path, name)
    runs = manifest.get("runs", {})
    session = {"started_at": now(), **machine()}

    def on_outcome(outcome: dict) -> None:
        if outcome["status"] == "done":
            runs[outcome["key"]] = manifest_entry(outcome, len(sessions), session["kind"])
            _write_manifest(man_path, sweep, sessions, runs)

    sessions = manifest.get("sessions", []) + [session]
    out.mkdir(parents=True, exist_ok=True)
    report = run_sweep(sweep, out, executor, retry_failed=retry_failed, progress=progress, on_outcome=on_outcome)
    _write_manifest(man_path, sweep, sessions, runs)
    return report


def read_for_writing(path: Path, name: str) -> dict:
    """The manifest a writer of chunk `name` continues (`volratio.runs.manifest.read`; {} when there is
    none), with the finished runs of the store beside it that it lacks added (`rebuild`: a writer killed
    between the store and the manifest)."""
    man = read_manifest(path, name) if path.is_file() else {}
    if path.parent.is_dir():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the store's own damage is reported by the sweep that opens it
            rebuild(man, Store(path.parent).rows.values())
    return man


def manifest_entry(outcome: dict, session: int, kind: str) -> dict:
    """A finished run as its chunk's manifest records it: config, seed, wall and CPU seconds, when
    it finished, its session (1-based) and the machine's `kind` (runs execute locally: on the
    session's machine); `gpu_s` for a run on CUDA (the GPU held for the run), and `"run": "rescore"`
    for a run of the score stage stored beside the chunk's own."""
    entry = {
        "config": outcome["config"],
        "seed": outcome["config"].get("seed"),
        "wall_s": round(float(outcome["seconds"]), 3),
        "cpu_s": round(float(outcome.get("cpu_seconds", float("nan"))), 3),
        "finished_at": outcome.get("finished_at"),
        "session": session,
        "kind": kind,
    }
    if _on_cuda(outcome["config"]):
        entry["gpu_s"] = entry["wall_s"]
    if outcome.get("run") == RESCORE:
        entry["run"] = RESCORE
    return entry


def _write_manifest(path: Path, sweep, sessions: list, runs: dict) -> None:
    doc = {
        "chunk": sweep.name,
        "spec": {k: v for k, v in asdict(sweep).items() if k != "name"},
        "runs_total": len(sweep.configs()),
        "sessions": sessions,
        "runs": runs,
    }
    write_manifest(path, doc)


def now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


# ---------------------------------------------------------------------------------------------
# Verifying


@dataclass
class Verification:
    """What `verify` checked. `machine`: this machine's parts and kind. `chunks`: per chunk, the
    runs within the CPU-time limit (`runs`), how many are comparable here bit for bit
    (`comparable`: stored on this kind, `independent`: of a machine-independent run function), how
    many of the others can have their scores checked within SCORE_TOLERANCE (`scores`), those of
    other kinds that cannot (`other`: kind -> count), and of the drawn runs how many were checked bit
    for bit (`checked_bit_for_bit`) and by their scores (`checked_scores`). `kinds`: kind ->
    description of every other kind met. `runs`: the drawn runs — chunk, key, kind, comparable,
    `check` ("bit for bit" or "scores"), `rerun` (the run function re-run), ok, `result` (one word), seconds, stored_cpu_s, and
    `problem` (one line) when it does not reproduce. `checks`: the files of each chunk — its store's (every run's record against its row, every
    artifact against its SHA-256: `volratio.runs.store.Store.check`) and the tables kept beside it
    (the recovery table, `volratio.runs.recovered`: against its SHA-256, a seeded sample
    recomputed) — as chunk, `what` ("store files" or the table's file name), ok, `detail` and
    `problem` (one line) when something is damaged or differs."""

    machine: dict
    max_cpu_seconds: float | None = None
    tolerance: float = SCORE_TOLERANCE
    chunks: list = field(default_factory=list)
    kinds: dict = field(default_factory=dict)
    runs: list = field(default_factory=list)
    checks: list = field(default_factory=list)

    @property
    def failures(self) -> list:
        """Drawn runs that fail — a comparable run that does not reproduce, or a rerun that failed — and
        the chunks' files that are damaged (`checks`)."""
        runs = [r for r in self.runs if not r["ok"] and (r["comparable"] or r["result"] == "rerun failed")]
        return runs + [c for c in self.checks if not c["ok"]]

    def to_json(self) -> dict:
        return {
            "machine": self.machine,
            "max_cpu_seconds": self.max_cpu_seconds,
            "tolerance": self.tolerance,
            "kinds": self.kinds,
            "chunks": self.chunks,
            "runs": self.runs,
            "checks": self.checks,
        }

    def summary(self) -> str:
        """The report `volratio results verify` prints: this machine, the chunks, the drawn runs."""
        lines = [f"this machine: {self.machine['kind']} ({M.describe(self.machine)})"]
        lines += [f"other CPU kind {k}: {d}" for k, d in self.kinds.items()]
        limit = "" if self.max_cpu_seconds is None else f" with CPU time ≤ {self.max_cpu_seconds:g} s"
        lines.append(
            f"stored runs{limit}, per chunk: how many are comparable here bit for bit, how many of another "
            f"CPU kind have their scores checked (re-scored, within {self.tolerance:g}), and how many were checked"
        )
        w = max((len(c["chunk"]) for c in self.chunks), default=0)
        for c in self.chunks:
            if not c["runs"]:
                lines.append(f"  {c['chunk']:{w}s}  no run{limit}")
                continue
            text = f"  {c['chunk']:{w}s}  {c['comparable']} of {c['runs']} comparable here"
            if c["independent"]:
                text += f" ({c['independent']} machine-independent)"
            if c["scores"]:
                text += f", {c['scores']} by their scores"
            if c["other"]:
                text += ", not comparable: " + ", ".join(f"{n} stored on {k}" for k, n in c["other"].items())
            if c["checked_bit_for_bit"] or c["checked_scores"]:
                text += f"; checked: {c['checked_bit_for_bit']} bit for bit, {c['checked_scores']} by their scores"
            lines.append(text)
        for r in self.runs:
            name = f"{r['chunk']}/{r['key']}"
            if r["ok"] and r["check"] == "scores":
                lines.append(f"{name}: scores reproduced within {self.tolerance:g} ({r['seconds']:.1f} s, {r['why']})")
            elif r["ok"]:
                lines.append(f"{name}: reproduced bit for bit ({r['seconds']:.1f} s, {r['why']})")
            elif r["comparable"] or r["result"] == "rerun failed":
                lines.append(r["problem"])
            else:
                lines.append(f"{name}: differs (other CPU kind {r['kind']}; not a failure): {r['difference']}")
        for c in self.checks:
            lines.append(f"{c['chunk']} {c['what']}: {c['detail']}" if c["ok"] else c["problem"])
        n_ok = sum(r["ok"] for r in self.runs)
        other = sum(1 for r in self.runs if not r["ok"] and r not in self.failures)
        lines.append(
            f"{n_ok} of {len(self.runs)} re-run(s) reproduce the stored results"
            + (f"; {other} of another CPU kind differ (not failures)" if other else "")
        )
        return "\n".join(lines)


def comparable(record: dict, here: dict | None = None) -> str | None:
    """Why a stored run (a `records` entry) can be compared bit for bit on this machine
    ("same CPU kind" or "machine-independent"), or None when it was stored on another kind or computed
    on a GPU (its config's `device` names CUDA: checked by its scores, within SCORE_TOLERANCE)."""
    here = M.identity() if here is None else here
    if _on_cuda(record.get("config") or {}):  # a GPU's float results repeat to tolerance only, even there
        return None
    independent = MACHINE_INDEPENDENT.get(record["run"])
    if independent and independent[1](record):
        return "machine-independent"
    if record.get("machine") and M.same_kind(record["machine"], here):
        return "same CPU kind"
    return None


def verify(
    root: "str | Path" = DEFAULT_ROOT,
    sample: int = 1,
    seed: int = 0,
    max_cpu_seconds: float | None = None,
    chunk: str | None = None,
    any_machine: bool = False,
) -> Verification:
    """Re-run `sample` stored runs (drawn with `seed` among the runs that can be checked on this
    machine — or among all with `any_machine` —, and among runs whose recorded CPU time is ≤
    `max_cpu_seconds` when given) and check them. A run comparable here (`comparable`) is compared
    bit for bit; a run of another CPU kind whose scores can be re-computed (`score_checkable`) has
    its scores re-computed under the same judge and engine and compared within SCORE_TOLERANCE,
    without re-training. A checked run that differs is a failure; with `any_machine`, another run
    of another CPU kind that differs is reported as such (see `Verification`).
    Raises `ReferenceError` when no run can be drawn."""
    root = Path(root)
    here = M.identity()
    names = [chunk] if chunk else chunks(root)
    if not names:
        raise ReferenceError(f"{root}: no reference chunks (folders with results.parquet); nothing to verify")
    report = Verification(machine=here, max_cpu_seconds=max_cpu_seconds)
    pool = []
    with warnings.catch_warnings():
        warnings.simplefilter("error", CorruptResultWarning)  # a damaged store is an error here, not a silent recompute
        try:
            _summarise(root, names, report, here, max_cpu_seconds, any_machine, pool)
            for n in names:
                report.checks.append(_check_files(root, n))
                if _keeps_derived(root / n):
                    report.checks.append(_verify_derived(root, n, sample, seed))
        except CorruptResultWarning as e:
            raise ReferenceError(
                f"{e}; `results verify` does not repair a store: restore the chunk (`git checkout` for a committed "
                "one), or let `volratio reference run` rebuild it"
            ) from None
    within = sum(c["runs"] for c in report.chunks)
    if not within:
        raise ReferenceError(f"{root}: no stored run with CPU time ≤ {max_cpu_seconds} s; raise --max-cpu-seconds")
    if not pool:
        others = "; ".join(f"{k}: {d}" for k, d in report.kinds.items())
        raise ReferenceError(
            f"{root}: none of the {within} stored run(s) can be checked on this machine's CPU kind {here['kind']} "
            f"({M.describe(here)}); they were stored on {others}. Pass --any-machine to re-run them anyway "
            "(differences reported, not failures), or store runs of this kind with `volratio reference run`"
        )
    picked = random.Random(seed).sample(pool, min(sample, len(pool)))
    counts = {c["chunk"]: c for c in report.chunks}
    for name, r, why, check in picked:
        entry, problem = _stored_by(r)
        t0 = time.perf_counter()
        rescored = check == "scores" and _scores_stored(r)
        if entry is not None:  # re-run under its stored complete config (a source run: re-score its networks)
            config, key = r["config"], r["key"]
            if rescored:
                entry = get_run(RUN)
                config = entry.keyed(rescore_config(name, r, Reading(r["metrics"]["judge"])))
                key = config_key(entry.name, config)
            if check == "scores":  # stored on a GPU, re-scored on this machine's CPU when it has none
                config = runnable_here(config)
            new = execute(entry.reading_store(root), entry.name, config, key, threads=1)
        res = {
            "chunk": name,
            "key": r["key"],
            "kind": (r["machine"] or {}).get("kind"),
            "comparable": why is not None,
            "check": check or "bit for bit",
            "rerun": None if entry is None else entry.name,  # the run function re-run ("rescore": scored only)
            "why": why or "other CPU kind",
            "seconds": round(time.perf_counter() - t0, 2),
            "stored_cpu_s": r["cpu_s"],
        }
        if check:
            counts[name]["checked_scores" if check == "scores" else "checked_bit_for_bit"] += 1
        if entry is None:  # a row this library cannot re-run as stored
            res.update(ok=False, result="cannot rerun", problem=f"{name}/{r['key']}: {problem}")
        elif new["status"] != "done":
            res.update(ok=False, result="rerun failed", problem=f"{name}/{r['key']}: the rerun failed: {new['error']}")
        elif check == "scores":
            stored = r["metrics"]
            if rescored:  # the source's metrics about its scores, as lists per member like the rescore run's
                metrics = source_scoring(r).metrics
                stored = {k: stored[k] if isinstance(stored[k], list) else [stored[k]] for k in metrics}
                stored["scores"] = stored["scores"] if isinstance(stored["scores"][0], list) else [stored["scores"]]
            new_metrics = {k: new["metrics"][k] for k in stored} if rescored else new["metrics"]
            res.update(_compare_scores(name, r["key"], stored, new_metrics, report.tolerance))
            res["result"] = "reproduced" if res["ok"] else "differs"
        else:
            res.update(_compare(name, r, new))
            res["result"] = "reproduced" if res["ok"] else "differs"
        report.runs.append(res)
    return report


def _summarise(
    root: Path, names: list, report: Verification, here: dict, max_cpu_seconds, any_machine: bool, pool: list
):
    """`verify`'s count of the stored runs of each chunk (`report.chunks`), and the runs that can be
    drawn (`pool`: chunk, record, why comparable, how checked)."""
    for name in names:
        summary = {"chunk": name, "runs": 0, "comparable": 0, "independent": 0, "scores": 0, "other": {}}
        summary.update(checked_bit_for_bit=0, checked_scores=0)
        for r in records(name, root, rescores=True):
            if max_cpu_seconds is not None and (r["cpu_s"] is None or r["cpu_s"] > max_cpu_seconds):
                continue
            summary["runs"] += 1
            why = comparable(r, here)
            check = "bit for bit" if why else None
            if why:
                summary["comparable"] += 1
                summary["independent"] += why == "machine-independent"
            elif score_checkable(r):
                summary["scores"] += 1
                where = "on a GPU" if _on_cuda(r.get("config") or {}) else "on another CPU kind"
                why, check = f"scores re-computed (stored {where})", "scores"
                report.kinds.setdefault((r["machine"] or {}).get("kind", "unknown"), M.describe(r["machine"] or {}))
            else:
                kind = (r["machine"] or {}).get("kind", "unknown")
                summary["other"][kind] = summary["other"].get(kind, 0) + 1
                report.kinds.setdefault(kind, M.describe(r["machine"] or {}))
            if why or any_machine:
                pool.append((name, r, why, check))
        report.chunks.append(summary)


def _keeps_derived(folder: Path) -> bool:
    """Whether a chunk keeps a derived table beside its store (the recovery table or its metadata)."""
    return (folder / recovered.FILE).exists() or (folder / recovered.META).exists()


def _check_files(root: Path, name: str) -> dict:
    """The store files of chunk `name` checked (`volratio.runs.store.Store.check`), as a
    `Verification.checks` entry."""
    store = Store(root / name)
    problems = store.check()
    out = {"chunk": name, "what": "store files", "ok": not problems}
    out["detail"] = f"{len(store.rows)} run(s): every record and artifact intact"
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        out["problem"] = f"{problems[0]}{more}; restore the chunk (`git checkout` for a committed one) or re-run it"
    return out


def _verify_derived(root: Path, name: str, sample: int, seed: int) -> dict:
    """The recovery table kept beside chunk `name`, checked and a seeded sample of `sample` network
    files recomputed (`volratio.runs.recovered.verify`), as a `Verification.checks` entry."""
    out = {"chunk": name, "what": recovered.FILE}
    try:
        rows = recovered.verify(name, sample=sample, root=root, seed=seed)
        out.update(ok=True, detail=f"intact, {rows} row(s) recomputed exactly")
    except recovered.StaleTable as e:  # not damage: out of date, recomputed when next read
        out.update(ok=True, detail=" ".join(str(e).split()))
    except recovered.RecoveryStoreError as e:
        out.update(ok=False, problem=" ".join(str(e).split()))
    return out


def _stored_by(record: dict) -> tuple:
    """`(its run function, None)` for a stored run (a `records` entry) that can be re-run as stored, or
    `(None, why not)`: a run function this library does not have, a config it refuses, or a key that
    is not the hash of its run name and config."""
    try:
        entry = get_run(record["run"])
        if entry.keyed(record["config"]) != record["config"]:
            return None, "its config is not complete under this library's run function; re-run the chunk"
    except (VolratioError, TypeError, ValueError) as e:
        return None, f"this library cannot run its config ({e}); re-run the chunk"
    if config_key(entry.name, record["config"]) != record["key"]:
        return None, "its key is not the hash of its run name and config: the store is damaged; re-run the chunk"
    return entry, None


def _compare_scores(name: str, key: str, stored: dict, new: dict, tolerance: float) -> dict:
    """ok when every float of `new` is within `tolerance` of the stored one and everything else is
    equal (timing entries excepted); else `difference` and `problem`, as `_compare`."""
    a, b = _strip(stored), _strip(json.loads(json.dumps(new)))
    where, x, y = _first_difference_beyond(a, b, tolerance)
    if where is None:
        return {"ok": True}
    diff = f"metric {where} (stored {_short(x)}, now {_short(y)}; tolerance {tolerance:g})"
    return {
        "ok": False,
        "difference": diff,
        "problem": f"{name}/{key}: the re-computed scores differ: {diff}; rerun it and compare versions",
    }


def _first_difference_beyond(a, b, tolerance: float, where: str = "") -> tuple:
    """`(where, a part, b part)` of the first difference of `a` and `b` beyond `tolerance` (floats)
    or at all (anything else); `(None, None, None)` when there is none."""
    if isinstance(a, dict) and isinstance(b, dict):
        if set(a) != set(b):
            return where or "(keys)", sorted(a), sorted(b)
        for k in sorted(a):
            found = _first_difference_beyond(a[k], b[k], tolerance, f"{where}.{k}" if where else k)
            if found[0] is not None:
                return found
        return None, None, None
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return where or "(all)", a, b
        for i, (x, y) in enumerate(zip(a, b)):
            found = _first_difference_beyond(x, y, tolerance, f"{where}[{i}]")
            if found[0] is not None:
                return found
        return None, None, None
    floats = isinstance(a, float) or isinstance(b, float)
    if (
        floats
        and not isinstance(a, bool)
        and not isinstance(b, bool)
        and isinstance(a, (int, float))
        and isinstance(b, (int, float))
    ):
        close = abs(a - b) <= tolerance or (a != a and b != b)  # NaN equals NaN here
        return (None, None, None) if close else (where or "(all)", a, b)
    return (None, None, None) if a == b else (where or "(all)", a, b)


def _strip(x):
    if isinstance(x, dict):
        return {k: _strip(v) for k, v in x.items() if k not in TIMING_KEYS}
    if isinstance(x, list):
        return [_strip(v) for v in x]
    return x


def _compare(name: str, stored: dict, new: dict) -> dict:
    """ok, and when not: `difference` (what differs) and `problem` (the one-line error)."""
    a, b = _strip(stored["metrics"]), _strip(json.loads(json.dumps(new["metrics"])))
    diff = None
    if a != b:
        where, x, y = _first_difference(a, b)
        diff = f"metric {where} (stored {_short(x)}, now {_short(y)})"
    else:
        stored_arts = {n: Path(p) for n, p in stored["artifacts"].items()}
        for art, (_suffix, data) in new["artifacts"].items():
            p = stored_arts.get(art)
            if p is None or not p.is_file() or sha256_bytes(p.read_bytes()) != sha256_bytes(data):
                diff = f"artifact {art!r}"
                break
    if diff is None:
        return {"ok": True}
    what, _, rest = diff.partition(" (")
    detail = f" ({rest}" if rest else ""
    return {
        "ok": False,
        "difference": diff,
        "problem": f"{name}/{stored['key']}: {what} does not reproduce{detail}; rerun it and compare versions",
    }


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
