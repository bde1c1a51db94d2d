"""The family judge's cost: its tangent projection and witnesses (a full Levenberg–Marquardt fit only
near the tolerance, `volratio.judges.family.FamilyJudge`) against a full LM fit of every image from
the base fit, on the same images — every single-weight perturbation (δ ∈ {±0.5, ±1}) of the
layerized planted network of `--target`, and degenerate images (flat pages, other planted targets).

Rates are images per CPU second of this process, single-threaded, one round each (LM fits dominate,
so the rounds are long); the verdicts of the two are compared and their agreement printed. The last
line is

    family judge: … images/s (tangent + witnesses)  … images/s (full LM per image)  …x  agree …  [CPU model]

    OMP_NUM_THREADS=1 PYTHONPATH=. python benchmarks/family_judge.py --quick    # a minute or two
    OMP_NUM_THREADS=1 PYTHONPATH=. python benchmarks/family_judge.py            # 48×48, a few minutes
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from volratio.data.targets import get_target
from volratio.emc2.engine import nonzero_params, perturbed_images
from volratio.judges.family import FamilyJudge
from volratio.util.machine import identity

DELTAS = (-1.0, -0.5, 0.5, 1.0)


def images(spec: str, res: int, n_weights: int | None) -> tuple[torch.Tensor, torch.Tensor]:
    """`(base, images)`: the planted network's own image, its single-weight perturbations (the first
    `n_weights` non-zero weights, all when None) and degenerate images."""
    net = get_target(spec).graph.layerize(ink_as_hsv=False, dtype=torch.float64).net
    params = nonzero_params(net, 0)[:n_weights]
    P, D = np.repeat(params, len(DELTAS), axis=0), np.tile(np.asarray(DELTAS), len(params))
    base, it = perturbed_images(net, res, P, D, device="cpu")
    out = [imgs.double() for _, imgs in it]
    out += [torch.full((1, res, res, 3), v, dtype=torch.float64) for v in (0.0, 0.5)]
    out += [get_target(f"planted:{s}").image(res).double()[None] for s in (4, 5)]
    return base.double(), torch.cat(out)


def full_lm(judge: FamilyJudge, imgs: torch.Tensor) -> np.ndarray:
    """The baseline: every image fitted by LM from the base fit θ_b; kept as the judge keeps."""
    delta = imgs.reshape(len(imgs), -1, 3) - judge.base
    kept = np.zeros(len(imgs), bool)
    for i in range(len(imgs)):
        mean = delta[i].mean(1)
        colour = (delta[i] - mean[:, None]).pow(2).mean()
        theta, _ = judge.family.fit(mean + judge.draw_b, judge.theta_b, judge.cfg.lm)
        g = judge.family.draw(theta[None])
        s = judge._share(((g[0] - judge.draw_b - mean).pow(2).mean() + colour).sqrt(), delta[i].pow(2).mean().sqrt())
        kept[i] = bool(s <= judge.cfg.tolerance) and bool(judge._passes(g)[0]) and judge.base_in_family
    return kept


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target", default="planted:13:depth=3,width=3")
    ap.add_argument("--res", type=int, default=48)
    ap.add_argument("--weights", type=int, default=None, help="perturb only the first N non-zero weights")
    ap.add_argument("--quick", action="store_true", help="32×32, the first 8 weights (a minute or two)")
    a = ap.parse_args(argv)
    if a.quick:
        a.res, a.weights = 32, 8
    torch.set_num_threads(1)
    base, imgs = images(a.target, a.res, a.weights)
    judge = FamilyJudge(base, a.target)
    t0 = time.process_time()
    fast = judge(imgs, "planted").verdicts
    t_fast = time.process_time() - t0
    t0 = time.process_time()
    slow = full_lm(judge, imgs)
    t_slow = time.process_time() - t0
    n = len(imgs)
    print(f"{a.target} at {a.res}×{a.res}: {n} images, {judge.counts['full_fit']} full fits by the judge; "
          f"kept {fast.sum()} (judge) and {slow.sum()} (full LM)")  # fmt: skip
    print(f"family judge: {n / t_fast:.1f} images/s (tangent + witnesses)  {n / t_slow:.1f} images/s (full LM per image)  "
          f"{t_slow / t_fast:.1f}x  agree {np.mean(fast == slow):.3f}  [{identity()['cpu_model']}]")  # fmt: skip


if __name__ == "__main__":
    main()
