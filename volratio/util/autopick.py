"""What `auto` means on this machine: the fastest path, timed once and cached.

`TrainConfig(path="auto")` (`volratio.train.resolve_path`) and `PerturbationEngine(engine="auto")`
(`volratio.emc2.fused.resolve_engine`) choose among paths that compute the same quantities to within
the tolerances their tests state — training: the fused C++ kernel, the fast step, eager autograd;
EMC2: the fused kernel, the torch engine. Which is fastest depends on the CPU: on AVX-512 machines
the fused kernels win several-fold; elsewhere (the baseline build on ARM, a slow AVX2 part) the
fast step or the torch engine can be faster. So
`auto` on a float32 CPU network where the kernel builds is decided by measurement:

- **the calibration**: on first use per key (below), each candidate path runs a representative
  workload, in interleaved rounds (every round times every path once, so all see the same load),
  and the best rate of each is kept; about a second in all: the rounds stop once `BUDGET_S` of
  wall time is spent, after at least one (the kernels' one-off compilation, cached on disk by
  `volratio.train.fused_kernel`, is not counted). Workloads: training, one loss-and-gradient step of a population of 5 Gaussian networks
  of depth 10 and width 12 on 64×64 pixels (between the two depths of `benchmarks/training.py`);
  EMC2, perturbing the incoming weights of one middle unit by two δ at 64×64, on a dense network of
  the FER SGD networks' shape (depth 12, width 22) and on a sparse one of that shape (5 % of the
  weights): the fused kernel multiplies only the non-zero weights of a cone, so its gain depends
  on the density, and a network is scored with the pick of its class (`DENSE_FROM`).
- **the choice**: the fastest path, except that the fixed rule's path (the fused kernel) is kept
  unless another is at least `MARGIN` times as fast: timings on a loaded machine move by a few
  per cent, and a near-tie is not worth a different path.
- **the cache**: JSON (never pickle) in `<user cache>/volratio/autopick.json`
  (`platformdirs.user_cache_dir`, `$XDG_CACHE_HOME/volratio` on Linux), keyed by the task, the
  machine's CPU model and numerics kind (`volratio.util.machine.identity`: ISA, torch capability,
  torch and BLAS versions), the kernel variant and build (the cached library's name: a hash of
  source, flags and compiler), the volratio version and the thread count. Another CPU, variant,
  kernel or version measures anew; a damaged cache file is an error naming the fix (delete it).

Every choice carries its reason (`Choice.note()`: the rates and who decided), which the command
line prints and a trained network's provenance records (`Choice.record()`).

**Reproducibility.** A path named explicitly (`path="fused"`, `--engine torch`) is never
overridden. Which path `auto` takes is the only thing the calibration decides, and the paths
compute different roundings, so a run whose config says `auto` must not depend on a timing where
it is to be repeated bit for bit: `$VOLRATIO_AUTO=rule` (or `with autopick.rule():`) turns the
calibration off, and `auto` is then the fixed rule — the fused kernel where it builds, else the
fast step (training) or the torch engine (EMC2). The test suite pins it (tests/conftest.py), so
no test depends on what a calibration picks; a stored run runs under it (`volratio.runs.sweep.execute`
enters `rule()`), so a stored config with `auto` reruns the path it ran.
`injected(task, rates)` replaces the measurement by given rates (tests of the choice itself).
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Iterator

import platformdirs
import torch

from .. import __version__
from ..errors import VolratioError
from . import machine

ENV = "VOLRATIO_AUTO"  # "measure" (default): time the paths once per key; "rule": the fixed rule, no timing
MODES = ("measure", "rule")
TASKS = {  # task -> its candidate paths (the fixed rule's path first)
    "train": ("fused", "fast", "eager"),
    "emc2-dense": ("fused", "torch"),
    "emc2-sparse": ("fused", "torch"),
}
MARGIN = 1.10  # another path replaces the rule's only when at least this many times as fast
BUDGET_S = 2.0  # most seconds of timing per task (warm-up included; compilation not)
ROUNDS = 3  # interleaved rounds; each path's best round counts
DENSE_FROM = 0.5  # EMC2: a network with at least this share of its weights non-zero is "dense"
CACHE_NAME = "autopick.json"
CACHE_VERSION = 1

_forced_rule = 0  # > 0 inside `rule()`
_injected: dict[str, dict[str, float]] = {}  # task -> rates given by `injected`
_memo: dict[str, "Choice"] = {}  # cache key -> this process's choice
_latest: dict[str, "Choice"] = {}  # task -> the last choice made in this process


@dataclass(frozen=True)
class Choice:
    """What `auto` chose for a task and why."""

    task: str  # "train" | "emc2-dense" | "emc2-sparse"
    path: str  # the path chosen
    rule: str  # the fixed rule's path
    how: str  # "measured" (timed now), "cached" (timed before, read from the cache), "rule", "injected"
    rates: dict[str, float] = field(default_factory=dict)  # path -> workloads per second (empty under the rule)
    seconds: float = 0.0  # the timing's seconds (0 unless timed now)
    where: str = ""  # the CPU model and kernel variant the rates were measured on

    def note(self) -> str:
        """One sentence for the command line: the path, and why."""
        what = "training" if self.task == "train" else f"EMC2 ({self.task.split('-')[1]} networks)"
        if self.how == "rule":
            return f"auto chose {self.path} for {what}: the fixed rule ({ENV}=rule; no timing)"
        best = self.rates[self.path]
        others = ", ".join(f"{best / r:.1f}x {p}" for p, r in sorted(self.rates.items()) if p != self.path)
        why = {
            "measured": f"timed now in {self.seconds:.1f} s",
            "cached": f"timed on first use, cached in {cache_path()}",
            "injected": "rates given to the calibration",
        }[self.how]
        kept = self.path == self.rule and max(self.rates.values()) > best
        tie = f"; the rule's path, as no other is {MARGIN:g}x as fast" if kept else ""
        return f"auto chose {self.path} for {what}: {others}, on {self.where} ({why}{tie})"

    def record(self) -> dict:
        """The choice as plain data (the cache's entry; a trained network's provenance): the same
        whether it was timed now or read from the cache."""
        return {k: v for k, v in asdict(self).items() if k not in ("seconds", "how")}


def mode() -> str:
    """The mode of `auto`: "rule" inside `rule()` or when `$VOLRATIO_AUTO=rule`, else "measure"."""
    if _forced_rule:
        return "rule"
    m = os.environ.get(ENV, "").strip().lower() or "measure"
    if m not in MODES:
        raise VolratioError(f"{ENV}={m!r}: use 'measure' (time the paths once) or 'rule' (the fixed rule, no timing)")
    return m


@contextlib.contextmanager
def rule() -> Iterator[None]:
    """Within it, `auto` is the fixed rule in this process (no timing, no cache): for runs that must
    repeat bit for bit."""
    global _forced_rule
    _forced_rule += 1
    try:
        yield
    finally:
        _forced_rule -= 1


@contextlib.contextmanager
def injected(task: str, rates: dict[str, float]) -> Iterator[None]:
    """Within it, the calibration of `task` uses `rates` (path -> workloads per second) instead of
    timing, even under the rule mode (the cache is neither read nor written)."""
    if task not in TASKS or set(rates) - set(TASKS[task]) or not rates:
        raise VolratioError(f"injected rates for {task!r} must name paths among {TASKS.get(task)}, got {rates}")
    before = _injected.get(task)
    _injected[task] = dict(rates)
    try:
        yield
    finally:
        if before is None:
            _injected.pop(task, None)
        else:
            _injected[task] = before


def cache_path() -> Path:
    return Path(platformdirs.user_cache_dir("volratio")) / CACHE_NAME


def latest(task: str) -> Choice | None:
    """The last choice made for `task` in this process (None before any)."""
    return _latest.get(task)


def decide(rule_path: str, rates: dict[str, float]) -> str:
    """The path to take given the measured rates: the fastest, unless the rule's path is within
    `MARGIN` of it."""
    best = max(rates, key=lambda p: rates[p])
    if rule_path in rates and rates[best] < MARGIN * rates[rule_path]:
        return rule_path
    return best


def time_paths(steps: dict[str, Callable[[], object]], budget_s: float = BUDGET_S) -> tuple[dict[str, float], float]:
    """(path -> calls per second, seconds spent): each step is called once to warm up, then in
    `ROUNDS` interleaved rounds of about an equal share of the budget (fewer once the budget is
    spent: at least one); the best round counts.
    Single-threaded (torch's thread count 1), the clock is this process's CPU time, which other
    load on a shared machine moves less than wall time; else wall time."""
    clock = time.process_time if torch.get_num_threads() == 1 else time.perf_counter
    wall = time.perf_counter  # the budget is wall time: repetitions are counted by it
    t_start = wall()
    first = {}
    for p, step in steps.items():
        t0 = wall()
        step()
        first[p] = max(wall() - t0, 1e-6)
    share = max(0.0, budget_s - (wall() - t_start)) / (ROUNDS * len(steps))
    reps = {p: max(1, int(share / first[p])) for p in steps}
    best = dict.fromkeys(steps, float("inf"))
    for _ in range(ROUNDS):
        for p, step in steps.items():
            t0 = clock()
            for _ in range(reps[p]):
                step()
            best[p] = min(best[p], max(clock() - t0, 1e-9) / reps[p])
        if wall() - t_start > budget_s:  # a loaded machine: the rounds so far must do
            break
    return {p: 1.0 / t for p, t in best.items()}, wall() - t_start


def choose(task: str, key: dict, make_steps: Callable[[], dict[str, Callable[[], object]]]) -> Choice:
    """The choice for `task` (its rule path: `TASKS[task][0]`): injected rates, else the fixed
    rule under `mode() == "rule"`, else this process's earlier choice, the cache's, or a timing of
    `make_steps()` (path -> one workload) saved to the cache. `key`: what the rates depend on."""
    rule_path = TASKS[task][0]
    where = f"{key.get('cpu_model')}, kernel {key.get('variant')}"
    if task in _injected:
        rates = _injected[task]
        c = Choice(task, decide(rule_path, rates), rule_path, "injected", dict(rates), where=where)
    elif mode() == "rule":
        c = Choice(task, rule_path, rule_path, "rule")
    else:
        k = json.dumps({"task": task, **key}, sort_keys=True)
        c = _memo.get(k) or _from_cache(k)
        if c is None:
            rates, seconds = time_paths(make_steps())
            c = Choice(task, decide(rule_path, rates), rule_path, "measured", rates, seconds, where)
            _save(k, c)
        _memo[k] = c
    _latest[task] = c
    return c


def _read() -> dict:
    path = cache_path()
    if not path.is_file():
        return {"version": CACHE_VERSION, "entries": {}}
    try:
        doc = json.loads(path.read_text())
        if doc.get("version") != CACHE_VERSION or not isinstance(doc.get("entries"), dict):
            raise ValueError("not an autopick cache of this version")
    except (OSError, ValueError, AttributeError) as e:
        raise VolratioError(
            f"{path}: the calibration cache of `auto` is damaged ({e}); delete it to time anew"
        ) from None
    return doc


def _from_cache(k: str) -> Choice | None:
    entry = _read()["entries"].get(k)
    if entry is None:
        return None
    try:
        c = Choice(**entry, how="cached")
        ok = c.task in TASKS and set(c.rates) == set(TASKS[c.task]) and c.path in c.rates
    except TypeError:
        ok = False
    if not ok:
        raise VolratioError(f"{cache_path()}: a damaged entry for {k}; delete the file to time anew")
    return c


def _save(k: str, c: Choice) -> None:
    """Add one entry (write a temporary file, then rename: a concurrent reader never sees half a file)."""
    path = cache_path()
    doc = _read()
    doc["entries"][k] = c.record()
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix="autopick", suffix=".json.tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(doc, f, indent=1, sort_keys=True)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def key(variant: str, library: str) -> dict:
    """What a calibration's rates depend on (see the module docstring); `library`: the kernel's
    cached file name (it holds a hash of the source, the flags and the compiler)."""
    ident = machine.identity()
    return {
        "cpu_model": ident["cpu_model"],
        "kind": ident["kind"],
        "variant": variant,
        "kernel": library,
        "volratio": __version__,
        "threads": torch.get_num_threads(),
    }


def density(net, member: int = 0) -> float:
    """The share of a network's weights that its masks keep (member `member`)."""
    kept = sum(float((m[member] != 0).sum()) for m in net.masks)
    return kept / sum(m[member].numel() for m in net.masks)
