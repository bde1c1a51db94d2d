"""ρ sampling throughput: batched vs a per-network loop, and against the matmul roofline (DESIGN §6).

Work: random masked ternary threshold networks of width W = 8 and depth L = 4 on n = 6 input bits
(the target `dag:0`), each sampled, evaluated on all 64 inputs and classified (solution,
compositional). Two ways, same sampler and classifier:
- batched: `volratio.rho.count` (2^16 networks per draw, one batched matmul per layer);
- loop: the same functions called for one network at a time — what a user writes without the
  population axis.
The roofline: the floating-point work the forward pass needs (2·P·Σ fan_in·fan_out multiply-adds
per network) at the achieved rate, as a share of the rate this machine reaches on one large square
fp32 matmul, measured in the same run. The last line prints `…networks/s  …x  roofline …%`.

The batched forward pass is a chain of (64 × 8) @ (8 × 8) matmuls per network: far too small for
a CPU BLAS to approach its large-matrix rate, so the roofline share on CPU is low by construction;
the random draws are made on CPU (so that results do not depend on the device).

    python benchmarks/rho_sampling.py --quick
"""

from __future__ import annotations

import argparse
import time

import torch

from volratio.boolean import get_boolean_target
from volratio.device import generator, resolve_device
from volratio.rho import SamplerConfig, classify, count, layer_dims, sample_networks


def matmul_rate(device, n: int = 2048, reps: int = 5) -> float:
    """FLOP/s of an n×n fp32 matmul (the best of `reps`)."""
    a = torch.randn(n, n, device=device)
    b = torch.randn(n, n, device=device)
    best = float("inf")
    for _ in range(reps + 1):
        if device.type == "cuda":
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        a @ b
        if device.type == "cuda":
            torch.cuda.synchronize()
        best = min(best, time.perf_counter() - t0)
    return 2 * n**3 / best


def main(argv=None) -> tuple[float, float, float]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer networks (well under a few minutes)")
    ap.add_argument("--W", type=int, default=8)
    ap.add_argument("--L", type=int, default=4)
    ap.add_argument("--target", default="dag:0", help="a Boolean target with n = 6 inputs")
    ap.add_argument("--device", default="auto")
    args = ap.parse_args(argv)
    dev = resolve_device(args.device)
    t = get_boolean_target(args.target)
    cfg = SamplerConfig(device=str(dev))
    n_batched = (1 << 18) if args.quick else (1 << 22)
    n_loop = 200 if args.quick else 2000
    print(f"target {t.spec} (n={t.n}), W={args.W}, L={args.L}, device {dev}, threads {torch.get_num_threads()}")

    count(t, args.W, args.L, 1 << 12, cfg, seed=99)  # warm-up
    t0 = time.perf_counter()
    c = count(t, args.W, args.L, n_batched, cfg, seed=0)
    if dev.type == "cuda":
        torch.cuda.synchronize()
    dt_b = time.perf_counter() - t0
    rate_b = n_batched / dt_b
    print(f"batched: {n_batched} networks in {dt_b:.2f} s = {rate_b:.3g} networks/s "
          f"({c.solutions} solutions, {c.compositional} compositional)")

    g = generator(0)
    t0 = time.perf_counter()
    for _ in range(n_loop):
        classify(sample_networks(t.n, args.W, args.L, 1, cfg, g), t)
    dt_l = time.perf_counter() - t0
    rate_l = n_loop / dt_l
    print(f"loop:    {n_loop} networks in {dt_l:.2f} s = {rate_l:.3g} networks/s")

    flops_per_net = 2 * (2**t.n) * sum(fi * fo for fi, fo in layer_dims(t.n, args.W, args.L))
    peak = matmul_rate(dev)
    achieved = rate_b * flops_per_net
    print(f"forward work {flops_per_net} FLOP/network; achieved {achieved / 1e9:.3g} GFLOP/s; "
          f"measured fp32 matmul {peak / 1e9:.3g} GFLOP/s")
    speedup = rate_b / rate_l
    pct = 100 * achieved / peak
    print("goals: ≥ 1e6 networks/s, ≥ 100x over the loop, ≥ 50% of the matmul rate "
          f"({'met' if rate_b >= 1e6 and speedup >= 100 and pct >= 50 else 'not met'} on this device)")
    print(f"{rate_b:.3g} networks/s  {speedup:.0f}x  roofline {pct:.1f}%")
    return rate_b, speedup, pct


if __name__ == "__main__":
    main()
