"""ρ sampling throughput: the bit-sliced engine vs the batched float path, against the machine's
measured uint64 bitwise-operation rate.

Work: random masked ternary threshold networks of width W = 8 and depth L = 4 on n = 6 input bits
(the target `dag:0`), each sampled, evaluated on all 64 inputs and classified (solution,
compositional) — `volratio.rho.count`. Three ways, same sampler distribution and classifier:
- bits: `SamplerConfig(engine="bits")`, one process, and with `--workers` worker processes;
- float: `SamplerConfig(engine="float")`, the batched matmul path (2^16 networks per draw), torch
  with one thread and with `--workers` threads (the whole machine either way).
The roofline: uint64 bitwise operations (AND/XOR on in-cache arrays of the size the evaluator
uses, numpy, one process) per second, measured in the same run, times the number of processes;
the share is rate × operations per network / that. Operations per network:
`volratio.rho.bitslice.op_count` (the word operations of the ternary evaluator; layer 1 is a table
lookup, the random draws and byte-wide work on the int8 codes are not counted — they are the rest
of the time).
The last line prints `…networks/s  …x  roofline …%  [CPU model, numpy version]` for the bits engine
on `--workers` processes, its speed-up over the faster of the two float configurations, and the share.

    python benchmarks/rho_sampling.py --quick
    NPY_DISABLE_CPU_FEATURES="X86_V4 AVX512_ICL AVX512_SPR" python benchmarks/rho_sampling.py --quick --workers 1
    (the second: numpy's AVX2 loops on an AVX-512 machine)
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
import torch

from volratio.rho import SamplerConfig, bitslice, count
from volratio.rho.boolean import get_boolean_target
from volratio.util.machine import identity


def bitwise_rate(words: int, seconds: float = 1.0) -> float:
    """uint64 operations/s of numpy AND/XOR on cache-resident arrays of `words` words (best of 5)."""
    rng = np.random.default_rng(0)
    a = rng.integers(0, 2**63, words, dtype=np.uint64)
    b = rng.integers(0, 2**63, words, dtype=np.uint64)
    best = 0.0
    for _ in range(5):
        reps = 0
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < seconds / 5:
            for _ in range(50):
                np.bitwise_and(a, b, out=a)
                np.bitwise_xor(a, b, out=a)
            reps += 100
        best = max(best, reps * words / (time.perf_counter() - t0))
    return best


def rate(t, W, L, n, cfg) -> tuple[float, object]:
    t0 = time.perf_counter()
    c = count(t, W, L, n, cfg, seed=0)
    return n / (time.perf_counter() - t0), c


def main(argv=None) -> tuple[float, float, float]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer networks (about a minute)")
    ap.add_argument("--W", type=int, default=8)
    ap.add_argument("--L", type=int, default=4)
    ap.add_argument("--target", default="dag:0", help="a Boolean target (n = 6 inputs: one word per table)")
    ap.add_argument("--workers", type=int, default=2, help="processes for the bits engine, threads for the float path")
    args = ap.parse_args(argv)
    t = get_boolean_target(args.target)
    n_bits = (1 << 21) if args.quick else (1 << 24)
    n_float = (1 << 17) if args.quick else (1 << 20)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(
        f"target {t.spec} (n={t.n}), W={args.W}, L={args.L}; {os.cpu_count()} cores, load average {load:.2f} "
        "(a loaded machine lowers every rate below)"
    )

    bits1 = SamplerConfig(device="cpu")
    bitsk = SamplerConfig(device="cpu", workers=args.workers)
    count(t, args.W, args.L, 1 << 15, bits1, seed=99)  # warm-up (layer-1 table, caches)
    count(t, args.W, args.L, 1 << 16, bitsk, seed=99)  # start the worker processes
    r_b1, c1 = rate(t, args.W, args.L, n_bits // 2, bits1)
    r_bk, ck = rate(t, args.W, args.L, n_bits, bitsk)
    print(
        f"bits,  1 process:   {r_b1:.3g} networks/s ({c1.solutions} solutions, {c1.compositional} compositional "
        f"in {c1.samples:,})"
    )
    print(
        f"bits,  {args.workers} processes: {r_bk:.3g} networks/s ({ck.solutions} solutions, {ck.compositional} "
        f"compositional in {ck.samples:,})"
    )

    before = torch.get_num_threads()
    fl = SamplerConfig(device="cpu", engine="float")
    torch.set_num_threads(1)
    count(t, args.W, args.L, 1 << 12, fl, seed=99)
    r_f1, _ = rate(t, args.W, args.L, n_float, fl)
    torch.set_num_threads(args.workers)
    r_fk, cf = rate(t, args.W, args.L, n_float, fl)
    torch.set_num_threads(before)
    print(f"float, 1 thread:    {r_f1:.3g} networks/s")
    print(f"float, {args.workers} threads:   {r_fk:.3g} networks/s ({cf.solutions} solutions in {cf.samples:,})")

    words = args.W * SamplerConfig().chunk  # one (W, chunk) array: what one evaluator operation touches
    peak1 = bitwise_rate(words)
    ops = bitslice.op_count(t.n, args.W, args.L)
    print(
        f"uint64 AND/XOR on {words}-word arrays: {peak1 / 1e9:.3g} G operations/s per process; "
        f"evaluator: {ops['total']} word operations per network ({ops})"
    )
    pct1 = 100 * r_b1 * ops["total"] / peak1
    pct = 100 * r_bk * ops["total"] / (args.workers * peak1)
    speed1, speedup = r_b1 / r_f1, r_bk / max(r_f1, r_fk)  # against the faster float configuration
    print(f"one core: {speed1:.1f}x the float path, roofline {pct1:.1f}%")
    ok = r_bk >= 2e6 and speedup >= 10 and pct >= 30
    print(
        f"goals on an idle 2-core machine: ≥ 2e6 networks/s, ≥ 10x the float path, ≥ 30% of the bitwise rate "
        f"({'met' if ok else 'not met'} in this run)"
    )
    where = f"{identity()['cpu_model']}, numpy {np.__version__}: no compiled kernel"  # numpy's own SIMD dispatch
    print(f"{r_bk:.3g} networks/s  {speedup:.1f}x  roofline {pct:.1f}%  [{where}]")
    bitslice.shutdown_pools()
    return r_bk, speedup, pct


if __name__ == "__main__":
    main()
