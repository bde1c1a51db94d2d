"""How many torch intra-op threads to use: workers × threads never exceed the free cores.

The networks here are small; torch's default (one thread per core) on a core that another process
is using makes every matmul wait for the slowest thread (`benchmarks/threads.py` measures it).
So the rule is: count the cores this process may use (`os.sched_getaffinity`), subtract the ones other processes keep busy (the load), and give each
of `workers` processes an equal share, at least one thread.

    from volratio.util.threads import set_threads
    set_threads()            # this process is the only worker (the CLI, a chapter)
    set_threads(workers=4)   # in each of 4 sweep workers

`VOLRATIO_THREADS=N` overrides the choice (for benchmarks and machines the load misjudges).
Used by the command line (`volratio.cli`), the sweeps (`volratio.runs.sweep`) and the book's chapters.
"""

from __future__ import annotations

import os

import torch

from ..errors import VolratioError

ENV = "VOLRATIO_THREADS"


def usable_cores() -> int:
    """Cores this process may run on (its CPU affinity; containers and `taskset` restrict it)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # pragma: no cover - macOS / Windows
        return max(1, os.cpu_count() or 1)


def busy_cores() -> int:
    """Cores other processes keep busy: the larger of the 1-minute load average (rounded) and the
    number of other runnable tasks right now (`/proc/loadavg`). Overestimating costs at most a
    thread; underestimating oversubscribes a core, which costs ~10× (see the module docstring)."""
    load = 0.0
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):  # pragma: no cover
        pass
    running = 0
    try:
        with open("/proc/loadavg") as f:
            running = int(f.read().split()[3].split("/")[0]) - 1  # minus this process
    except (OSError, ValueError, IndexError):
        pass
    return max(0, round(load), running)


def free_cores() -> int:
    """Usable cores not kept busy by other processes (at least 1)."""
    return max(1, usable_cores() - busy_cores())


def threads_per_worker(workers: int = 1) -> int:
    """Intra-op threads for each of `workers` processes so that workers × threads ≤ free cores."""
    env = os.environ.get(ENV)
    if env:
        try:
            n = int(env)
        except ValueError:
            raise VolratioError(f"{ENV}={env!r} is not a positive integer; unset it or give e.g. {ENV}=1") from None
        if n >= 1:
            return n
    return max(1, free_cores() // max(1, int(workers)))


def set_threads(workers: int = 1) -> int:
    """Set torch's intra-op threads by `threads_per_worker(workers)`; returns the number set."""
    n = threads_per_worker(workers)
    torch.set_num_threads(n)
    return n
