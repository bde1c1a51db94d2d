"""Population training vs separate runs (DESIGN §6).

Trains K = 64 small networks (width 12, depth 6, 32×32 pixels) on one planted target two ways with
the same seeds and steps: as one `CoordMLP` population (one batched matmul per layer) and as 64
separate `CoordMLP`s trained one after another — what a user would write without the population
axis. Checks that both give the same networks, then prints the speed-up as the last line.

    python benchmarks/population.py --quick
"""

from __future__ import annotations

import argparse
import time

import torch

from volratio.nets import CoordMLP
from volratio.targets import get_target
from volratio.train import TrainConfig, train


def main(argv=None) -> float:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer steps (a minute or two)")
    ap.add_argument("--K", type=int, default=64)
    ap.add_argument("--width", type=int, default=12)
    ap.add_argument("--depth", type=int, default=6)
    ap.add_argument("--res", type=int, default=32)
    ap.add_argument("--steps", type=int, default=None)
    args = ap.parse_args(argv)
    steps = args.steps or (100 if args.quick else 1000)
    torch.set_num_threads(max(1, torch.get_num_threads()))
    img = get_target("planted:1").image(args.res)
    arch = f"{args.depth};gaussian:{args.width // 2},sin:{args.width - args.width // 2}"
    cfg = TrainConfig(steps=steps, optimizer="adam", lr=3e-3, device="cpu", log_every=steps)

    pop = CoordMLP.stack([CoordMLP(arch, head="grey", seed=s) for s in range(args.K)])
    t0 = time.perf_counter()
    train(pop, img, cfg)
    t_pop = time.perf_counter() - t0

    singles = [CoordMLP(arch, head="grey", seed=s) for s in range(args.K)]
    t0 = time.perf_counter()
    for net in singles:
        train(net, img, cfg)
    t_sep = time.perf_counter() - t0

    diff = max(
        (pop.weights[i][k] - singles[k].weights[i][0]).abs().max().item()
        for k in range(args.K)
        for i in range(pop.n_kernels)
    )
    print(f"K={args.K} arch={arch} res={args.res} steps={steps} threads={torch.get_num_threads()}")
    print(f"population: {t_pop:.2f} s   separate runs: {t_sep:.2f} s   max |Δw| between them: {diff:.2e}")
    if diff > 1e-4:
        raise SystemExit(f"population and separate runs disagree (max |Δw| = {diff:.2e})")
    speedup = t_sep / t_pop
    print(f"{speedup:.1f}x")
    return speedup


if __name__ == "__main__":
    main()
