"""Sweeps: a grid of configs × seeds, run in-process, on local processes or on a Dask cluster.

A sweep names a run function of the registry `volratio.runs.registry` (`"train"`, `"toy"`,
`"depth_point"`, `"optimizer_point"`, any chapter experiment, or a function registered in code with
`volratio.runs.registry.register_run`), called as `run(config) -> dict`. Nothing named in a spec is
ever imported. Its configs are every combination of the `grid` lists (times each of `cases`, if
given), each run once per seed; every config also holds the shared entries of `config` and its
`"seed"`. Every config is validated against the run function's `Config` before the first run, and
keyed, run and stored as its complete config (`volratio.runs.registry.RunFunction.keyed`).

    sweep = Sweep(run="train", config={"steps": 200}, grid={"depth": [1, 2, 3]}, seeds=[0, 1])
    report = run_sweep(sweep, "results/quick")                   # in-process
    report = run_sweep(sweep, "results/quick", Dask(workers=4))  # a LocalCluster of 4 workers
    report = run_sweep(sweep, "results/quick", Dask("tcp://host:8786"))  # an existing cluster
    report.table                                                  # pandas, one row per run

Results go to a `volratio.runs.store.Store`; a rerun skips every run already done there (so an
interrupted sweep resumes where it stopped), and failed runs are retried only on request
(`retry_failed=True`). Chapters call `run_sweep` with their quick or full config: what is in the
store is read, what is missing runs.

Scheduling is left to `concurrent.futures` and `dask.distributed` (the driver only keeps as many
runs in flight as there are worker slots, so the progress bar's "running" is true). Each run is
executed by `execute`, which returns plain data — metrics, artifacts as bytes, or the error and
its traceback — so that workers need no shared file system; only the driver writes the store.
Each run executes with `threads` torch threads (default 1), which with seeded run functions makes
results bitwise identical across executors on CPU.

Used by `volratio sweep` / `volratio results` and by the chapter "Rerunning at scale on a cluster"
(book/practice_cluster.md). Dask: https://distributed.dask.org (LocalCluster, Client.get_executor).
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import copy
import ctypes
import datetime
import itertools
import logging
import math
import multiprocessing
import os
import signal
import socket
import sys
import tempfile
import threading
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import torch
import yaml
from tqdm import tqdm  # plain text bar: works in terminals and notebooks without ipywidgets

from .. import __version__
from ..errors import VolratioError
from ..util import autopick
from ..util.presets import ConfigError
from ..util.provenance import git_commit
from .heartbeat import beating, wanted
from .registry import get_run, known_run, run_names
from .store import Store, _plain, config_key, encode_array, encode_net

try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib


class SweepSpecError(VolratioError, ValueError):
    """A sweep spec (file or `Sweep`) that cannot be run as written."""


class SweepStalled(VolratioError, TimeoutError):
    """No run of a sweep finished within its `timeout`."""


# ---------------------------------------------------------------------------------------------
# The sweep


@dataclass(frozen=True)
class Sweep:
    """A grid of configs × seeds and the function that runs one config."""

    run: str  # a registered run function (volratio.runs.registry.run_names()), called as run(config) -> dict
    config: dict = field(default_factory=dict)  # entries shared by every run
    grid: dict = field(default_factory=dict)  # name -> list of values; every combination runs
    seeds: tuple = (0,)  # each combination runs once per seed, as config["seed"]
    cases: tuple = ()  # optional list of dicts, each crossed with the grid (for non-product designs)
    name: str = "sweep"  # label of the progress bar and the report
    threads: int | None = 1  # torch threads per run (1: bitwise repeatable anywhere); None: leave as is

    def __post_init__(self):
        if not isinstance(self.run, str) or not known_run(self.run):
            raise SweepSpecError(
                f"run = {self.run!r}: not a registered run function; choose one of {', '.join(run_names())} "
                "(or register your own in code with volratio.runs.registry.register_run)"
            )
        if isinstance(self.seeds, int):  # `seeds = 3` means seeds 0, 1, 2
            object.__setattr__(self, "seeds", tuple(range(self.seeds)))
        object.__setattr__(self, "seeds", tuple(self.seeds))
        if not self.seeds or not all(isinstance(s, int) and not isinstance(s, bool) for s in self.seeds):
            raise SweepSpecError(f"seeds = {self.seeds!r}: give a list of integers (or a count, e.g. seeds = 3)")
        for name, values in self.grid.items():
            if not isinstance(values, (list, tuple)) or not values:
                raise SweepSpecError(f"grid.{name} = {values!r}: each grid entry is a non-empty list of values")
        object.__setattr__(self, "cases", tuple(self.cases))
        if not all(isinstance(c, dict) for c in self.cases):
            raise SweepSpecError("cases: give a list of tables (dicts), each a partial config")
        clash = {"seed"} & (set(self.config) | set(self.grid) | {k for c in self.cases for k in c})
        if clash:
            raise SweepSpecError("'seed' is set by `seeds`; remove it from config, grid and cases")
        if self.threads is not None and (not isinstance(self.threads, int) or self.threads < 1):
            raise SweepSpecError(f"threads = {self.threads!r}: give a positive integer")
        resolve_run(self.run)
        _plain(self.config, "config")  # fail early on values a key cannot hash

    def configs(self) -> list[dict]:
        """Every run's config, in order: cases, then grid combinations (first entry slowest), then seeds."""
        names = list(self.grid)
        out = []
        for case in self.cases or ({},):
            for values in itertools.product(*(self.grid[n] for n in names)):
                for seed in self.seeds:
                    cfg = copy.deepcopy(dict(self.config))
                    cfg.update(copy.deepcopy(case))
                    cfg.update(zip(names, copy.deepcopy(values)))
                    cfg["seed"] = seed
                    out.append(cfg)
        return out

    def keys(self) -> list[str]:
        """The store key of every run: the hash of the run function's name and the run's complete config."""
        entry = resolve_run(self.run)
        return [config_key(entry.name, entry.keyed(c)) for c in self.configs()]

    @classmethod
    def from_dict(cls, spec: dict, source: str = "spec") -> "Sweep":
        """The sweep a spec describes, every run's config checked (`check_configs`): a value its run
        function refuses (a target spec, a judge name, a step count) fails here, before any run."""
        known = {"run", "config", "grid", "seeds", "cases", "name", "threads"}
        unknown = set(spec) - known
        if unknown:
            raise SweepSpecError(f"{source}: unknown entries {sorted(unknown)}; a sweep spec has {sorted(known)}")
        if "run" not in spec:
            raise SweepSpecError(f'{source}: no `run` entry; add e.g. run = "train"')
        sweep = cls(**spec)
        try:
            check_configs(resolve_run(sweep.run), sweep.configs())
        except SweepSpecError as e:
            raise SweepSpecError(f"{source}: {e}") from None
        return sweep

    @classmethod
    def from_file(cls, path: "str | Path") -> "Sweep":
        """Read a `.toml` or `.yaml`/`.yml` spec; the sweep's name defaults to the file's stem."""
        path = Path(path)
        if not path.is_file():
            raise SweepSpecError(f"{path}: no such sweep spec (see examples/sweeps/quick.toml for one)")
        text = path.read_text()
        try:
            if path.suffix == ".toml":
                spec = tomllib.loads(text)
            elif path.suffix in (".yaml", ".yml"):
                spec = yaml.safe_load(text)
            else:
                raise SweepSpecError(f"{path}: unknown spec format {path.suffix!r}; use .toml, .yaml or .yml")
        except SweepSpecError:
            raise
        except Exception as e:  # tomllib.TOMLDecodeError, yaml.YAMLError
            raise SweepSpecError(f"{path}: not a valid spec ({e}); fix the syntax") from e
        if not isinstance(spec, dict):
            raise SweepSpecError(f"{path}: a spec is a table of entries (run, config, grid, seeds, …)")
        spec.setdefault("name", path.stem)
        return cls.from_dict(spec, source=str(path))


def resolve_run(name: str):
    """The registered run function `name` (`volratio.runs.registry.RunFunction`); `SweepSpecError`
    naming the choices when there is none."""
    try:
        return get_run(name)
    except ConfigError as e:
        raise SweepSpecError(str(e)) from None


def check_configs(entry, configs: list[dict]) -> list[dict]:
    """Validate every config of a sweep against its run function before anything runs, and return
    each as it is keyed, run and stored (`RunFunction.keyed`: the complete config)."""
    out = []
    for i, cfg in enumerate(configs):
        try:
            out.append(entry.keyed(cfg))
        except (VolratioError, TypeError, ValueError) as e:  # a user's parse may raise the plain kinds
            raise SweepSpecError(f"run {i + 1} of {len(configs)} ({entry.name}, seed {cfg.get('seed')}): {e}") from None
    return out


# ---------------------------------------------------------------------------------------------
# One run (executed on a worker)


def execute(
    fn: Callable[[dict], Any], run: str, config: dict, key: str, threads: int | None = 1, commit: str | None = None
) -> dict:
    """Run one config and return its outcome as plain data (never raises for a failing run). The
    outcome records the library version and `commit` (the driver's git commit) as provenance.

    The result dict of the run function is split: numbers, strings, booleans and lists of them are
    metrics; arrays (numpy, torch) become `.npy` artifacts and `CoordMLP`s `.safetensors`
    artifacts, carried back as bytes.
    """
    t0, c0 = time.perf_counter(), time.process_time()
    out = {
        "key": key,
        "run": run,
        "version": __version__,
        "commit": commit,
        "config": config,
        "host": socket.gethostname(),
    }
    try:
        with _torch_threads(threads), autopick.rule():  # a stored run repeats bit for bit: no timed choice
            result = fn(copy.deepcopy(config))
        out["metrics"], out["artifacts"] = _split_result(result, run)
        out["status"] = "done"
    except Exception as e:  # a failing run is data, recorded with its traceback
        out.update(
            status="failed",
            metrics={},
            artifacts={},
            error=f"{type(e).__name__}: {e}",
            traceback=traceback.format_exc(),
        )
    out["seconds"] = time.perf_counter() - t0
    out["cpu_seconds"] = time.process_time() - c0  # this process's CPU time (all its threads)
    out["finished_at"] = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    return out


@contextlib.contextmanager
def _torch_threads(n: int | None):
    if n is None:
        yield
        return
    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        # Restore only in a main thread (in-process runs, process-pool workers). A Dask worker runs
        # tasks in several threads of one process, and restoring there would change the setting
        # under a run still going in another thread.
        if threading.current_thread() is threading.main_thread():
            torch.set_num_threads(before)


def _split_result(result: Any, run: str) -> tuple[dict, dict]:
    if not isinstance(result, dict):
        raise TypeError(f"{run} returned {type(result).__name__}; a run function returns a dict of metrics")
    metrics, artifacts = {}, {}
    for name, value in result.items():
        if not isinstance(name, str) or not name.replace("_", "").replace("-", "").isalnum():
            raise TypeError(f"{run}: result name {name!r} must be letters, digits, '_' or '-'")
        if type(value).__name__ == "CoordMLP":
            artifacts[name] = encode_net(value)
        elif getattr(value, "ndim", 0) >= 1 and hasattr(value, "shape"):
            artifacts[name] = encode_array(value)
        else:
            metrics[name] = _metric(value, f"{run}: result {name!r}")
    return metrics, artifacts


def _metric(value: Any, where: str) -> Any:
    if value is None or isinstance(value, (bool, str, int)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)  # "nan"/"inf" stay visible in JSON
    if isinstance(value, (list, tuple)):
        return [_metric(v, where) for v in value]
    if isinstance(value, dict):
        return {str(k): _metric(v, where) for k, v in value.items()}
    item = getattr(value, "item", None)
    if callable(item) and getattr(value, "shape", None) == ():
        return _metric(item(), where)
    raise TypeError(f"{where} is a {type(value).__name__}; return numbers, strings, lists, arrays or CoordMLPs")


# ---------------------------------------------------------------------------------------------
# Executors: each is a context manager that yields (concurrent.futures.Executor, slots())


class InProcess:
    """Run in this process, one run at a time (the default)."""

    @contextlib.contextmanager
    def open(self):
        yield _InlineExecutor(), lambda: 1

    def __str__(self):
        return "in-process"


@dataclass
class Processes:
    """Run on `n` local worker processes (`concurrent.futures.ProcessPoolExecutor`, spawned)."""

    n: int = 2  # worker processes

    def __post_init__(self):
        if self.n < 1:
            raise SweepSpecError(f"Processes: n = {self.n}; give at least 1 worker process")

    @contextlib.contextmanager
    def open(self):
        ex = cf.ProcessPoolExecutor(
            max_workers=self.n,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=die_with_parent,
            initargs=(os.getpid(),),
        )
        try:
            yield ex, lambda: self.n
        except BaseException:
            # stopping early (stall, Ctrl-C, error): do not wait for runs in flight, end the workers
            workers = list((getattr(ex, "_processes", None) or {}).values())
            ex.shutdown(wait=False, cancel_futures=True)
            for p in workers:
                p.terminate()
            for p in workers:
                p.join(timeout=10)
            raise
        else:
            ex.shutdown(wait=True)

    def __str__(self):
        return f"{self.n} local processes"


def die_with_parent(parent: int) -> None:
    """Worker initialiser: end this worker when the sweep's driver process dies, however it dies
    (SIGKILL included), so that no orphaned worker goes on computing. Linux: the kernel sends
    SIGKILL on the parent's death (prctl PR_SET_PDEATHSIG); everywhere: a daemon thread checks
    every second that the parent is still the parent."""
    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # 1 = PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            pass  # the watcher thread below still ends the worker
    if os.getppid() != parent:  # the parent died before the setting took effect
        os._exit(1)

    def watch():
        while True:
            time.sleep(1.0)
            if os.getppid() != parent:
                os._exit(1)

    threading.Thread(target=watch, name="die-with-parent", daemon=True).start()


@dataclass
class Dask:
    """Run on Dask distributed: an existing scheduler (`address`) or a new `LocalCluster` of
    `workers` single-threaded worker processes on loopback."""

    address: str | None = None  # e.g. "tcp://10.0.0.1:8786" (from `dask scheduler`)
    workers: int | None = None  # start a LocalCluster with this many workers instead
    timeout: float = 30.0  # seconds to wait for the scheduler / cluster to come up

    def __post_init__(self):
        if (self.address is None) == (self.workers is None):
            raise SweepSpecError("Dask: give a scheduler address or a number of workers (exactly one of them)")
        if self.workers is not None and self.workers < 1:
            raise SweepSpecError(f"Dask: workers = {self.workers}; a LocalCluster needs at least 1 worker")

    @contextlib.contextmanager
    def open(self):
        try:
            from distributed import Client, LocalCluster  # optional: the [dask] extra
        except ImportError:
            raise SweepSpecError("Dask executors need dask.distributed: pip install 'volratio[dask]'") from None
        with contextlib.ExitStack() as stack:
            if self.address is None:
                cluster = stack.enter_context(
                    LocalCluster(
                        n_workers=self.workers,
                        threads_per_worker=1,
                        processes=True,
                        host="127.0.0.1",
                        dashboard_address=None,
                        silence_logs=logging.ERROR,  # no worker start/stop chatter on stderr
                    )
                )
                client = stack.enter_context(Client(cluster, timeout=self.timeout))
            else:
                try:
                    client = stack.enter_context(Client(self.address, timeout=self.timeout))
                except OSError as e:
                    raise SweepSpecError(
                        f"cannot reach the Dask scheduler at {self.address} ({e}); start one with `dask scheduler` "
                        "and workers with `dask worker ADDRESS`"
                    ) from e
            yield client.get_executor(pure=False), _DaskSlots(client)

    def __str__(self):
        return f"Dask scheduler {self.address}" if self.address else f"Dask LocalCluster of {self.workers} workers"


class _DaskSlots:
    """Total worker threads of the cluster, asked at most once a second (workers may come and go)."""

    def __init__(self, client):
        self.client, self.t, self.n = client, -1.0, 1

    def __call__(self) -> int:
        if time.monotonic() - self.t > 1.0:
            self.n = max(1, sum(self.client.nthreads().values()))
            self.t = time.monotonic()
        return self.n


class _InlineExecutor(cf.Executor):
    def submit(self, fn, /, *args, **kwargs):
        f = cf.Future()
        try:
            f.set_result(fn(*args, **kwargs))
        except BaseException as e:
            if not isinstance(e, Exception):  # KeyboardInterrupt, SystemExit: stop the sweep
                raise
            f.set_exception(e)
        return f


def make_executor(scheduler: str | None = None, workers: int | None = None, processes: int | None = None):
    """The executor the command line's `--scheduler ADDR | --workers N | --processes N` ask for."""
    given = [x is not None for x in (scheduler, workers, processes)]
    if sum(given) > 1:
        raise SweepSpecError("choose one of --scheduler, --workers and --processes")
    if scheduler is not None:
        return Dask(address=scheduler)
    if workers is not None:
        return Dask(workers=workers)
    if processes is not None:
        return Processes(processes)
    return InProcess()


# ---------------------------------------------------------------------------------------------
# Running a sweep


@dataclass
class SweepReport:
    """What `run_sweep` did, and the sweep's rows."""

    name: str
    store: Path
    executor: str
    total: int  # distinct runs in the sweep
    ran: list  # keys executed now (done or failed)
    skipped: int  # runs already done (or failed, without retry) in the store
    failed: list  # keys whose latest attempt failed
    seconds: float  # wall time of this call
    table: Any = None  # pandas DataFrame of the sweep's rows, in sweep order

    def summary(self) -> str:
        return (
            f"sweep {self.name!r}: {self.total} runs — ran {len(self.ran)}, skipped {self.skipped} already in the store, "
            f"failed {len(self.failed)} ({self.executor}, {self.seconds:.1f} s) → {self.store}"
        )


def run_sweep(
    sweep: Sweep,
    out: "str | Path",
    executor: Any = None,
    *,
    retry_failed: bool = False,
    progress: bool | None = None,
    timeout: float | None = None,
    on_outcome: Callable[[dict], None] | None = None,
) -> SweepReport:
    """Run every config of `sweep` that `out` does not hold yet, and return the report.

    `executor`: `InProcess()` (default), `Processes(n)` or `Dask(...)`. `retry_failed`: rerun runs
    whose last attempt failed (otherwise they are reported, not rerun). `progress`: show a tqdm bar
    (None: only on a terminal). `timeout`: give up (`SweepStalled`) when no run has finished for
    this many seconds — finished runs stay in the store (None: wait forever). `on_outcome`: called
    with each run's outcome (`execute`'s dict, `cpu_seconds` included) once it is in the store.

    A run interrupted by a crash or a kill is rerun next time; a run recorded in the store is never
    run again.
    """
    entry = resolve_run(sweep.run)
    configs = check_configs(entry, sweep.configs())  # a bad config fails here, before any run or worker starts
    return run_configs(
        entry,
        configs,
        out,
        executor,
        name=sweep.name,
        threads=sweep.threads,
        retry_failed=retry_failed,
        progress=progress,
        timeout=timeout,
        on_outcome=on_outcome,
    )


def run_configs(
    entry,
    configs: list[dict],
    out: "str | Path",
    executor: Any = None,
    *,
    name: str = "sweep",
    threads: int | None = 1,
    retry_failed: bool = False,
    progress: bool | None = None,
    timeout: float | None = None,
    on_outcome: Callable[[dict], None] | None = None,
    heartbeat: bool = False,
) -> SweepReport:
    """`run_sweep` on explicit configs: every complete config (`RunFunction.keyed`) of run function
    `entry` that `out` does not hold yet, as `run_sweep` runs a sweep's (see there). A sweep's
    configs are a grid; the score stage's (`volratio.runs.score`) are one per stored run.

    A run function that reads stored networks (`RunFunction.reads_store`) reads them from the chunks
    beside `out` (`out`'s parent folder), in this process and in worker processes alike. `heartbeat`:
    where the progress bar is hidden (`volratio.runs.heartbeat.wanted`), print a line of progress every
    few seconds instead."""
    t0 = time.perf_counter()
    executor = executor or InProcess()
    fn = entry.reading_store(Path(out).parent)
    keys = [config_key(entry.name, c) for c in configs]
    todo = dict(zip(keys, configs))  # duplicates collapse: one run per key
    commit = git_commit()
    store = Store(out)
    ran, failed = [], []
    with store.writing():
        skipped = 0
        for key in list(todo):
            status = store.status(key)
            if status == "done" or (status == "failed" and not retry_failed):
                skipped += 1
                if status == "failed":
                    failed.append(key)
                del todo[key]
        queue = list(todo.items())
        bar = tqdm(total=len(queue), desc=name, unit="run", disable=(None if progress is None else not progress))
        counts = {"done": 0, "running": 0, "failed": 0}
        beat = heartbeat and queue and wanted(progress)
        with beating(name, len(queue), counts) if beat else contextlib.nullcontext(), executor.open() as (ex, slots):
            inflight: dict[cf.Future, str] = {}
            try:
                while queue or inflight:
                    while queue and len(inflight) < slots():
                        key, cfg = queue.pop(0)
                        counts["running"] = len(inflight) + 1
                        bar.set_postfix(counts, refresh=True)
                        inflight[ex.submit(execute, fn, entry.name, cfg, key, threads, commit)] = key
                    done, _ = cf.wait(list(inflight), timeout=timeout, return_when=cf.FIRST_COMPLETED)
                    if not done:
                        raise SweepStalled(
                            f"no run finished in {timeout} s ({len(inflight)} running on {executor}); finished runs "
                            "are in the store — check the workers, then rerun to resume"
                        )
                    for fut in done:
                        key = inflight.pop(fut)
                        outcome = _outcome(fut, key, todo[key], entry.name, commit)
                        store.record(outcome)
                        if on_outcome is not None:
                            on_outcome(outcome)
                        ran.append(key)
                        counts[outcome["status"]] += 1
                        if outcome["status"] == "failed":
                            failed.append(key)
                        counts["running"] = len(inflight)
                        bar.set_postfix(counts, refresh=False)
                        bar.update(1)
            finally:
                for fut in inflight:
                    fut.cancel()
                bar.close()
    table = store.frame(list(dict.fromkeys(keys)))
    return SweepReport(
        name, Path(out), str(executor), len(set(keys)), ran, skipped, failed, time.perf_counter() - t0, table
    )


def _outcome(fut: cf.Future, key: str, config: dict, run: str, commit: str | None) -> dict:
    """The outcome of a finished future; a worker that died (out of memory, killed) counts as a
    failed run, so that the sweep goes on and the failure is on record."""
    exc = fut.exception()
    if exc is None:
        return fut.result()
    if isinstance(exc, cf.BrokenExecutor):  # the process pool is unusable now
        raise VolratioError(
            f"a worker process died while running {key} (out of memory?); the store keeps every finished run — "
            "rerun the sweep with --resume to continue"
        ) from exc
    return {
        "key": key,
        "run": run,
        "version": __version__,
        "commit": commit,
        "config": config,
        "status": "failed",
        "metrics": {},
        "artifacts": {},
        "error": f"{type(exc).__name__}: {exc}",
        "traceback": "".join(traceback.format_exception(exc)),
        "seconds": 0.0,
        "host": None,
        "finished_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }


def results_dir(name: str) -> Path:
    """Where a chapter keeps the store of its sweep `name`: `$VOLRATIO_RESULTS/name` when that
    variable is set (e.g. a store filled at full scale on a cluster, so the chapter only reads it),
    else a fresh temporary directory (the chapter computes its runs itself)."""
    root = os.environ.get("VOLRATIO_RESULTS")
    if root:
        return Path(root).expanduser() / name
    return Path(tempfile.mkdtemp(prefix=f"volratio-{name}-"))


def load_results(out: "str | Path", sweep: Sweep | None = None):
    """The rows of a store as a DataFrame — all of them, or those of `sweep` in its order."""
    store = Store(out)
    keys = None if sweep is None else list(dict.fromkeys(sweep.keys()))
    return store.frame(keys)
