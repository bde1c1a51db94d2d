"""Population training vs separate runs.

Trains K = 64 small networks (width 12, depth 6, Gaussian units, 32×32 pixels) on one planted target two ways with
the same seeds and steps: as one `CoordMLP` population (one batched matmul per layer) and as 64
separate `CoordMLP`s trained one after another — what a user would write without the population
axis. Checks that both give the same networks, then prints the speed-up as the last line.

    python benchmarks/population.py --quick
"""

from __future__ import annotations

import argparse
import resource
import time

import numpy as np
import torch

from volratio.data.targets import get_target
from volratio.nets import CoordMLP
from volratio.train import TrainConfig, train


def main(argv=None) -> float:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer steps (a minute or two)")
    ap.add_argument("--K", type=int, default=64)
    ap.add_argument("--width", type=int, default=12)
    ap.add_argument("--depth", type=int, default=6)
    ap.add_argument("--res", type=int, default=32)
    ap.add_argument("--steps", type=int, default=None)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args(argv)
    steps = args.steps or (100 if args.quick else 1000)
    # One thread: the comparison is about batching, not about intra-op threading (which, on a
    # shared machine, only adds noise).
    torch.set_num_threads(args.threads)
    img = get_target("planted:1").image(args.res)
    arch = f"{args.depth};gaussian:{args.width}"
    cfg = TrainConfig(steps=steps, optimizer="adam", lr=3e-3, device="cpu", log_every=steps)

    cpu = lambda: resource.getrusage(resource.RUSAGE_SELF).ru_utime  # noqa: E731

    pop = CoordMLP.stack([CoordMLP(arch, head="grey", seed=s) for s in range(args.K)])
    t0, c0 = time.perf_counter(), cpu()
    pop_loss = train(pop, img, cfg).final_loss
    t_pop, c_pop = time.perf_counter() - t0, cpu() - c0

    singles = [CoordMLP(arch, head="grey", seed=s) for s in range(args.K)]
    t0, c0 = time.perf_counter(), cpu()
    sep_loss = np.array([train(net, img, cfg).final_loss[0] for net in singles])
    t_sep, c_sep = time.perf_counter() - t0, cpu() - c0

    # Same results: one step gives the same weights to rounding (the batched matmul only changes
    # the order of additions); over many Adam steps rounding differences in near-zero gradients
    # are amplified to lr-sized weight differences, so the final losses are compared instead.
    one = TrainConfig(steps=1, optimizer="adam", lr=3e-3, device="cpu")
    pop1 = CoordMLP.stack([CoordMLP(arch, head="grey", seed=s) for s in range(args.K)])
    train(pop1, img, one)
    diff = 0.0
    for k in range(args.K):
        single = CoordMLP(arch, head="grey", seed=k)
        train(single, img, one)
        diff = max(
            diff, max((pop1.weights[i][k] - single.weights[i][0]).abs().max().item() for i in range(pop1.n_kernels))
        )
    loss_gap = float(np.max(np.abs(pop_loss - sep_loss) / sep_loss))
    print(f"K={args.K} arch={arch} res={args.res} steps={steps} threads={torch.get_num_threads()}")
    print(f"population: {t_pop:.2f} s wall, {c_pop:.2f} s CPU   separate runs: {t_sep:.2f} s wall, {c_sep:.2f} s CPU")
    print(
        f"after one step max |Δw| = {diff:.1e}; after {steps} steps max relative |Δ final MSE| = {loss_gap:.1e} "
        f"(mean final MSE {pop_loss.mean():.4f})"
    )
    print(f"CPU-time ratio {c_sep / c_pop:.1f}x (less sensitive to other load)")
    if diff > 1e-5 or loss_gap > 0.05:
        raise SystemExit(
            f"population and separate runs disagree (one-step |Δw| {diff:.1e}, final-loss gap {loss_gap:.1e})"
        )
    speedup = t_sep / t_pop
    print(f"{speedup:.1f}x")
    return speedup


if __name__ == "__main__":
    main()
