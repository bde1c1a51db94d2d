"""A sign of life for long runs whose output is not a terminal: a line every few seconds saying how
many runs are done and, once one is, about how long the rest will take.

tqdm's bar shows itself only on a terminal; a long score piped to a log (`volratio reference
rescore … | tee log`, a batch job) would otherwise print nothing until it ends. Used by
`volratio.runs.sweep.run_configs` for the score stage (`volratio.runs.score.score_chunk`,
`volratio reference rescore`).
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time

EVERY_S = 10.0  # seconds between two lines


def wanted(progress: bool | None) -> bool:
    """Whether to beat: progress left to the default (None) and stdout not a terminal (where the
    progress bar is hidden)."""
    return progress is None and not sys.stdout.isatty()


def line(name: str, done: int, total: int, elapsed: float) -> str:
    """The heartbeat's line: runs done of `total`, time elapsed and, once a run is done, the time
    left at the mean pace so far."""
    text = f"{name}: {done}/{total} runs done, {_duration(elapsed)} elapsed"
    if done and done < total:
        text += f", about {_duration(elapsed / done * (total - done))} left"
    elif not done:
        text += ", no run finished yet"
    return text


def _duration(seconds: float) -> str:
    s = int(round(seconds))
    return (
        f"{s // 3600} h {s % 3600 // 60:02d} min"
        if s >= 3600
        else f"{s // 60} min {s % 60:02d} s"
        if s >= 60
        else f"{s} s"
    )


@contextlib.contextmanager
def beating(name: str, total: int, counts: dict, every: float = EVERY_S, out=None):
    """While inside, print `line` to `out` (default stdout) every `every` seconds from a background
    thread, reading the runs done from `counts["done"] + counts["failed"]` (updated by the caller)."""
    stop = threading.Event()
    t0 = time.perf_counter()

    def beat():
        while not stop.wait(every):
            done = counts.get("done", 0) + counts.get("failed", 0)
            print(line(name, done, total, time.perf_counter() - t0), file=out or sys.stdout, flush=True)

    thread = threading.Thread(target=beat, name="volratio-heartbeat", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
