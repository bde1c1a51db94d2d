"""Training speed: eager single network, eager population, fast and fused populations, the bmm roofline.

On the reference shapes (64×64 pixels, width 12, Gaussian units, HSV head, Adam) and at each depth
asked for, one run measures, single-threaded:

- `eager`: K separate one-network `train` runs (`TrainConfig(path="eager")`), in net-steps/s;
- `population`: one `CoordMLP(population=K)` on the eager path;
- `fast`: the same population on `TrainConfig(path="fast")` (`volratio.train.fast`);
- `fused`: the same population on `TrainConfig(path="fused")` (`volratio.train.fused`'s C++
  kernel; its compile seconds, first build and cached reload, are printed once at the start);
- `torch.bmm` on the steps' hidden matmul shapes, in GFLOP/s, and a single-thread 2048² sgemm
  (`roofline.py`: the machine's large-matmul rate on one core, the honest roofline). A step's
  nominal matmul work (forward, input and kernel gradients) per second, as a share of each, is
  `roofline … (bmm)` and `… (sgemm)` (the same work for every path: the fused kernel does each of
  the three matmuls once per step).

Every rate is the best of `--rounds` measurements taken in turns (each round times every path and
`torch.bmm` and the sgemm once), so that the paths and the roofline are measured under the same load on a shared
machine. It checks that the fast and fused populations agree with the eager one (losses after the
measured steps, relative) and prints beside it the eager path's own float32-vs-float64 gap: deep
Gaussian networks amplify any rounding difference within a few Adam steps (at depth 14 two float64
paths that agree to 1e-15 before the first step part within ten), so a gap of that size after
training is the dynamics, not an error of the path; the per-step tolerances are those of
`tests/test_fused_train.py`. With `--compile` it also times `torch.compile` of the eager loss-and-gradient
step (compile seconds and step time; not in `--quick`, it costs about a minute per shape). Each
depth ends with

    depth 8: fused 1234 net-steps/s  3.4x eager  2.7x population  3.1x fast  roofline 55% (bmm)  60% (sgemm)  [CPU, kernel avx512]

naming the CPU model and the kernel variant (`$VOLRATIO_KERNEL_VARIANT=avx2` measures the AVX2 build on an
AVX-512 machine). It also prints the path `TrainConfig(path="auto")` takes here (`volratio.util.autopick`:
its calibration, timed once and cached) beside the fastest path of this run.

    python benchmarks/training.py --quick          # depths 8 and 14, under two minutes
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch
from roofline import sgemm_gflops

from volratio.data.targets import get_target
from volratio.nets import CoordMLP, coords, head_to_rgb
from volratio.train import TrainConfig, fused_kernel, resolve_path, train
from volratio.util import autopick
from volratio.util.machine import identity


def _net_steps_per_s(nets: list[CoordMLP], img, cfg: TrainConfig) -> tuple[float, np.ndarray]:
    """Train each of `nets` in turn; returns (net-steps per CPU-second of this one-thread process:
    other load on a shared machine moves it less than wall time, final losses of all members)."""
    t0 = time.process_time()
    final = [train(n, img, cfg).final_loss for n in nets]
    dt = time.process_time() - t0
    return sum(n.population for n in nets) * cfg.steps / dt, np.concatenate(final)


def _matmul_flops(net: CoordMLP, pixels: int) -> float:
    """FLOPs of one training step's matmuls: forward, kernel gradients, and input gradients
    (all kernels but the first)."""
    dims = [net.n_inputs] + [net.width] * net.depth + [net.weights[-1].shape[-1]]
    per = [2.0 * net.population * pixels * fi * fo for fi, fo in zip(dims[:-1], dims[1:])]
    return 3 * sum(per) - per[0]


def _bmm_gflops(net: CoordMLP, pixels: int, seconds: float) -> float:
    """GFLOP/s of `torch.bmm` on the step's hidden-layer shapes (K, P, W) × (K, W, W), over about
    `seconds` of CPU time."""
    K, W = net.population, net.width
    g = torch.Generator().manual_seed(0)
    a = torch.randn(K, pixels, W, generator=g)  # (K, P, W)
    b = torch.randn(K, W, W, generator=g)  # (K, W, W)
    out = torch.empty(K, pixels, W)
    n, t0 = 0, time.process_time()
    while (dt := time.process_time() - t0) < seconds or n < 10:
        torch.bmm(a, b, out=out)
        n += 1
    return 2.0 * K * pixels * W * W * n / dt / 1e9


def _compiled_step_ms(net: CoordMLP, img: torch.Tensor, steps: int) -> tuple[float, float]:
    """(compile seconds, ms per step) of `torch.compile` of the eager loss-and-gradient step."""
    grid = coords(img.shape[0])
    flat = img.reshape(-1, 3)
    ws = [w.detach().clone().requires_grad_(True) for w in net.weights]

    def step(ws, masks):
        h = grid
        for i, (w, m) in enumerate(zip(ws, masks)):
            z = torch.matmul(h, w * m)
            h = net.activate(z) if i < net.depth else z
        losses = ((head_to_rgb(h, net.head) - flat) ** 2).mean(dim=(1, 2))
        return losses, torch.autograd.grad(losses.sum(), ws)

    compiled = torch.compile(step)
    t0 = time.process_time()
    compiled(ws, net.masks)
    t_compile = time.process_time() - t0
    t0 = time.process_time()
    for _ in range(steps):
        compiled(ws, net.masks)
    return t_compile, (time.process_time() - t0) / steps * 1e3


def main(argv=None) -> list[str]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer steps: depths 8 and 14 in under two minutes")
    ap.add_argument("--depths", type=int, nargs="+", default=[8, 14])
    ap.add_argument("--K", type=int, default=5, help="population size (the reference runs train 5 members)")
    ap.add_argument("--width", type=int, default=12)
    ap.add_argument("--res", type=int, default=64)
    ap.add_argument("--steps", type=int, default=None, help="steps per measured run")
    ap.add_argument("--rounds", type=int, default=None, help="measurements per path, best taken (3, --quick 2)")
    ap.add_argument("--compile", action="store_true", help="also time torch.compile of the eager step")
    args = ap.parse_args(argv)
    steps = args.steps or (40 if args.quick else 200)
    args.rounds = args.rounds or (2 if args.quick else 3)
    # One thread: the comparison is about passes over memory, not intra-op threading (which, on a
    # shared machine, only adds noise). All speeds are ratios measured in this one run.
    torch.set_num_threads(1)
    img = get_target("picbreeder:skull").image(args.res)  # (res, res, 3)
    pixels = args.res * args.res
    print(f"res={args.res} width={args.width} K={args.K} steps={steps} threads={torch.get_num_threads()}")
    variant = fused_kernel.default_variant()
    t_build = fused_kernel.compile_seconds(variant)
    fused_kernel.load(variant)
    info = fused_kernel.build_info[variant]
    print(
        f"fused kernel ({variant}): {t_build:.1f} s to compile; this run "
        f"{'compiled' if info['compiled'] else 'loaded the cached'} {info['path']} in {info['seconds']:.2f} s"
    )
    where = f"{identity()['cpu_model']}, kernel {variant}"
    auto = resolve_path("auto", CoordMLP("2;gaussian:4"))  # what `auto` picks here (timed once, cached)
    print(f"path='auto' here: {autopick.latest('train').note() if autopick.latest('train') else auto}")
    lines = []
    for depth in args.depths:
        arch = f"{depth};gaussian:{args.width}"
        eager = TrainConfig(steps=steps, optimizer="adam", lr=3e-3, device="cpu", log_every=steps, path="eager")
        fast = TrainConfig(**{**eager.__dict__, "path": "fast"})
        fused = TrainConfig(**{**eager.__dict__, "path": "fused"})
        # warm-up (allocator, BLAS): a few steps of each path, not timed
        for cfg in (eager, fast, fused):
            train(CoordMLP(arch, population=args.K, seed=0), img, TrainConfig(**{**cfg.__dict__, "steps": 3}))
        rates = {"eager": 0.0, "population": 0.0, "fast": 0.0, "fused": 0.0, "bmm": 0.0, "sgemm": 0.0}
        probe = CoordMLP(arch, population=args.K, seed=0)
        for _ in range(args.rounds):  # in turns, best of each: every path sees the same load
            singles = [CoordMLP(arch, seed=s) for s in range(args.K)]
            r, _ = _net_steps_per_s(singles, img, eager)
            rates["eager"] = max(rates["eager"], r)
            r, loss_pop = _net_steps_per_s([CoordMLP(arch, population=args.K, seed=0)], img, eager)
            rates["population"] = max(rates["population"], r)
            r, loss_fast = _net_steps_per_s([CoordMLP(arch, population=args.K, seed=0)], img, fast)
            rates["fast"] = max(rates["fast"], r)
            r, loss_fused = _net_steps_per_s([CoordMLP(arch, population=args.K, seed=0)], img, fused)
            rates["fused"] = max(rates["fused"], r)
            rates["bmm"] = max(rates["bmm"], _bmm_gflops(probe, pixels, seconds=0.25))
            rates["sgemm"] = max(rates["sgemm"], sgemm_gflops(clock=time.process_time))
        r_eager, r_pop, r_fast, r_fused, gflops_bmm, gflops_sgemm = (rates[k] for k in rates)
        net = probe
        # the dynamics' own sensitivity: the eager population in float64 against float32
        loss_64 = train(CoordMLP(arch, population=args.K, seed=0).double(), img.double(), eager).final_loss
        gap_64 = float(np.max(np.abs(loss_pop - loss_64) / loss_64))
        gflops_fast = _matmul_flops(net, pixels) * r_fast / args.K / 1e9
        gflops_fused = _matmul_flops(net, pixels) * r_fused / args.K / 1e9
        gap = float(np.max(np.abs(loss_fast - loss_pop) / loss_pop))
        gap_fused = float(np.max(np.abs(loss_fused - loss_pop) / loss_pop))
        print(f"depth {depth}, {arch}:")
        print(f"  eager, {args.K} separate runs   {r_eager:8.0f} net-steps/s")
        print(f"  eager population of {args.K}     {r_pop:8.0f} net-steps/s")
        print(f"  fast population of {args.K}      {r_fast:8.0f} net-steps/s   matmul {gflops_fast:.1f} GFLOP/s")
        print(f"  fused population of {args.K}     {r_fused:8.0f} net-steps/s   matmul {gflops_fused:.1f} GFLOP/s")
        print(f"  torch.bmm on (K, P, W)×(K, W, W)      {gflops_bmm:.1f} GFLOP/s")
        print(f"  single-thread sgemm 2048²             {gflops_sgemm:.1f} GFLOP/s")
        print(f"  fast vs eager population after {steps} steps: max relative |Δ loss| = {gap:.1e}")
        print(f"  fused vs eager population after {steps} steps: max relative |Δ loss| = {gap_fused:.1e}")
        print(f"  (eager float32 vs float64 after {steps} steps: max relative |Δ loss| = {gap_64:.1e})")
        print(
            f"  fast {r_fast:.0f} net-steps/s  {r_fast / r_eager:.1f}x eager  "
            f"{r_fast / r_pop:.1f}x population  roofline {100 * gflops_fast / gflops_bmm:.0f}% (bmm)  "
            f"{100 * gflops_fast / gflops_sgemm:.0f}% (sgemm)"
        )
        if args.compile:
            t_c, ms = _compiled_step_ms(CoordMLP(arch, population=args.K, seed=0), img, steps)
            print(
                f"  torch.compile of the eager step: {t_c:.0f} s to compile, "
                f"{args.K * 1e3 / ms:.0f} net-steps/s (loss and gradients only, no optimizer)"
            )
        fastest = max(("fused", r_fused), ("fast", r_fast), ("eager", r_pop), key=lambda x: x[1])[0]
        print(
            f"  fused {r_fused / r_fast:.1f}x the fast path; fastest here: {fastest}; auto takes {auto}"
            + ("" if auto == fastest else " (its calibration's shape and load differ from this run's)")
        )
        line = (
            f"depth {depth}: fused {r_fused:.0f} net-steps/s  {r_fused / r_eager:.1f}x eager  "
            f"{r_fused / r_pop:.1f}x population  {r_fused / r_fast:.1f}x fast  "
            f"roofline {100 * gflops_fused / gflops_bmm:.0f}% (bmm)  "
            f"{100 * gflops_fused / gflops_sgemm:.0f}% (sgemm)  [{where}]"
        )
        print(line, flush=True)
        lines.append(line)
    return lines


if __name__ == "__main__":
    main()
