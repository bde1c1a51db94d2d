"""The machine's single-thread large-sgemm rate: the roofline the benchmarks report a share of.

`sgemm_gflops()` times `torch.mm` of two 2048×2048 float32 matrices on one thread (MKL or
OpenBLAS, whichever torch uses: the best dense kernel on this machine), best of a few products. A
kernel's achieved multiply-add rate over it is the honest share of the CPU's float32 peak that a
single core reaches on a large, cache-friendly product. Used by `benchmarks/emc2_engine.py` and
`benchmarks/training.py`, measured in the same run as what it is compared with.
"""

from __future__ import annotations

import time

import torch

N = 2048


def sgemm_gflops(repeats: int = 3, clock=time.perf_counter) -> float:
    """GFLOP/s (2·n³ per product) of a single-thread 2048² float32 matrix product, best of `repeats`
    timed with `clock` (wall time by default; `time.process_time` where the rates compared are per
    CPU-second)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        g = torch.Generator().manual_seed(0)
        a, b = torch.randn(N, N, generator=g), torch.randn(N, N, generator=g)
        out = torch.empty(N, N)
        torch.mm(a, b, out=out)  # warm-up
        best = float("inf")
        for _ in range(repeats):
            t0 = clock()
            torch.mm(a, b, out=out)
            best = min(best, clock() - t0)
        return 2.0 * N**3 / best / 1e9
    finally:
        torch.set_num_threads(threads)
