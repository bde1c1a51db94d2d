"""Probe of the sparse regime (the design work of the sparse-regime chapter, not a reference chunk).

Two questions, on one Picbreeder target at one resolution:

1. How far does SP get from an over-parameterised start? Dense networks of width `--width` are
   trained, then SP runs towards `--target-nonzeros` with a τ schedule (0.95, then 0.9 down to 0 in
   steps of 0.1), centred maps, at most `--per-round-fraction` of the live units per round and
   `--retrain-steps` at `--lr-factor` × the training rate after each round. `--loss-factor none`
   switches the relative guard off (the trajectory is then the whole frontier); a number keeps it
   (`max(factor × dense MSE, 0.002)`), with an undone round retried with half as many units.
   Printed per round: each member's non-zero count, its MSE ÷ its dense MSE, and its MSE.
2. What does a dense network of the same size reach when trained from scratch? `--scratch` trains
   dense networks of widths 6 … 64 at the same depth for 2,000 and 6,000 steps and prints their
   non-zero count and MSE: the capacity line the frontier is read against.

    python tools/sp_regime_probe.py --target skull --res 32 --width 64 --depth 6
    python tools/sp_regime_probe.py --target skull --res 32 --depth 6 --scratch

One thread; seeded (same arguments → the same numbers on one CPU kind).
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace

import numpy as np
import torch

from volratio.data.targets import get_target
from volratio.nets import CoordMLP
from volratio.prune import prune
from volratio.prune.similarity_pruning import SPConfig
from volratio.train import TrainConfig, train

SCHEDULE = tuple(round(t, 2) for t in np.arange(0.9, -0.01, -0.1))  # after τ = 0.95


def sp_trajectory(a) -> None:
    image = get_target(f"picbreeder:{a.target}").image(a.res)
    images = torch.stack([image] * a.members)
    net = CoordMLP(f"{a.depth};gaussian:{a.width}", head="hsv", population=a.members, seed=a.seed)
    tc = TrainConfig(lr=3e-3, device="cpu", path="auto", steps=a.steps)
    t0 = time.process_time()
    train(net, images, tc)
    print(f"dense: width {a.width}, depth {a.depth}, {net.nonzero()} non-zero, {time.process_time() - t0:.0f} CPU s")
    factor = None if a.loss_factor == "none" else float(a.loss_factor)
    cfg = SPConfig(tau=0.95, tau_schedule=SCHEDULE, centred=True, rounds=a.rounds, retrain_steps=a.retrain_steps,
                   retrain_lr_factor=a.lr_factor, per_round_fraction=a.per_round_fraction, loss_factor=factor,
                   backoff=factor is not None, target_nonzeros=a.target_nonzeros, train=replace(tc, steps=0))  # fmt: skip
    t0 = time.process_time()
    result = prune(net, images, "sp", cfg)
    print(f"SP: {time.process_time() - t0:.0f} CPU s; per round: non-zero, MSE ÷ dense MSE, MSE")
    dense = np.asarray(result.history[0]["loss"])
    for h in result.history:
        loss = np.asarray(h["loss"])
        print(h["round"], h["nonzero"], np.round(loss / dense, 2).tolist(), np.round(loss, 5).tolist())
    for k, m in enumerate(result.extras["members"]):
        print(f"member {k}: {m['nonzeros']} non-zero (sparsity {m['sparsity']:.3f}), stopped: {m['stop']}")


def from_scratch(a) -> None:
    image = get_target(f"picbreeder:{a.target}").image(a.res)
    images = torch.stack([image] * a.members)
    print("width, steps, non-zero, MSE per member")
    for width in (6, 8, 12, 16, 24, 32, 64):
        for steps in (2000, 6000):
            net = CoordMLP(f"{a.depth};gaussian:{width}", head="hsv", population=a.members, seed=a.seed)
            r = train(net, images, TrainConfig(lr=3e-3, device="cpu", path="auto", steps=steps))
            print(width, steps, net.nonzero()[0], np.round(np.asarray(r.losses[-1]), 5).tolist(), flush=True)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target", default="skull")
    ap.add_argument("--res", type=int, default=32)
    ap.add_argument("--width", type=int, default=64)
    ap.add_argument("--depth", type=int, default=6)
    ap.add_argument("--members", type=int, default=2)
    ap.add_argument("--steps", type=int, default=2000)
    ap.add_argument("--retrain-steps", type=int, default=500)
    ap.add_argument("--lr-factor", type=float, default=0.3)
    ap.add_argument("--per-round-fraction", type=float, default=0.2)
    ap.add_argument("--loss-factor", default="2.0", help="a factor ≥ 1, or none")
    ap.add_argument("--target-nonzeros", type=int, default=150)
    ap.add_argument("--rounds", type=int, default=40)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--scratch", action="store_true", help="dense networks trained from scratch instead of SP")
    a = ap.parse_args(argv)
    torch.set_num_threads(1)
    from_scratch(a) if a.scratch else sp_trajectory(a)


if __name__ == "__main__":
    main()
