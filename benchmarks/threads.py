"""Torch threads chosen by `volratio.util.threads` vs torch's default (one per core), on this machine now.

Trains the network `volratio train` makes by default (depth 4, width 16, Gaussian units, 64×64
pixels, Adam) for the same steps twice from the same seed: with `threads_per_worker()` threads
(the free cores) and with torch's default, `os.cpu_count()`-ish threads. On a machine whose cores
are partly busy the default oversubscribes them. Prints the load, both thread counts, both times
and, as the last line, the speed ratio default / chosen (> 1: the rule is faster). Same numbers
either way is checked (CPU, seeded; thread count may change the last bits, so the check is a
tolerance).

    python benchmarks/threads.py --quick
"""

from __future__ import annotations

import argparse
import os
import time

import torch

from volratio.data.targets import get_target
from volratio.nets import CoordMLP
from volratio.train import TrainConfig, train
from volratio.util import threads


def _time(n_threads: int, steps: int, img) -> tuple[float, float]:
    torch.set_num_threads(n_threads)
    net = CoordMLP("4;gaussian:16", head="grey", seed=0)
    t = time.perf_counter()
    res = train(net, img, TrainConfig(steps=steps, device="cpu"))
    return time.perf_counter() - t, float(res.final_loss[0])


def main(argv=None) -> float:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="30 steps (seconds)")
    ap.add_argument("--steps", type=int, default=None)
    args = ap.parse_args(argv)
    steps = args.steps or (30 if args.quick else 100)
    img = get_target("planted:1").image(64)
    default = torch.get_num_threads()
    chosen = threads.threads_per_worker()
    print(
        f"cores usable {threads.usable_cores()}, busy (load) {threads.busy_cores()}, 1-min load {os.getloadavg()[0]:.2f}"
    )
    _time(1, 2, img)  # warm-up
    t_chosen, l_chosen = _time(chosen, steps, img)
    t_default, l_default = _time(default, steps, img)
    assert abs(l_chosen - l_default) <= 1e-5 * max(1.0, abs(l_default)), (l_chosen, l_default)
    print(f"chosen  {chosen} thread(s): {t_chosen:.2f} s for {steps} steps")
    print(f"default {default} thread(s): {t_default:.2f} s")
    ratio = t_default / t_chosen
    print(f"default / chosen time: {ratio:.2f}x")
    return ratio


if __name__ == "__main__":
    main()
