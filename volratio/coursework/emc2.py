"""Checks for the exercises of "EMC2-Bench" (book/emc2.md): one perturbed image and the score
S(θ; δ) at one δ, computed the plain way (copy, perturb, re-render, judge) and compared with the
batched engine (`volratio.emc2`, `volratio.judges`)."""

from __future__ import annotations

import numpy as np
import torch

from ..emc2 import EMC2Config, naive_render, score
from ..judges import SSIMJudge
from .check import (
    Check,
    CourseworkError,
    array,
    checker,
    close,
    number,
)

__all__ = ["check_perturbation_score", "check_perturbed_image"]


@checker
def check_perturbed_image(image, net, param, delta: float, res: int) -> Check:
    """The image `(res, res, 3)` of `net` with weight `param = (kernel, row, col)` moved by `delta`,
    rendered from scratch (`volratio.emc2.naive_render`)."""
    i, r, c = (int(v) for v in param)
    if net.masks[i][0, r, c] == 0:
        raise CourseworkError(f"weight {param} is masked out; pick a non-zero one (volratio.emc2.nonzero_params)")
    got = array(image, "your image")
    ref = naive_render(net, param, delta, res).double().numpy()
    if got.shape != ref.shape:
        hint = " — take render(res)[0], the first network of the population" if got.shape == (1, *ref.shape) else ""
        return Check("check_perturbed_image", False, f"shape {got.shape} ≠ {ref.shape}{hint}", ref.shape, got.shape)
    err = float(np.abs(got - ref).max())
    if err <= 1e-5:
        return Check("check_perturbed_image", True, f"matches the re-rendered image (max |difference| {err:.1e})")
    with torch.no_grad():
        base = net.render(res)[0].double().numpy()
        minus = naive_render(net, param, -delta, res).double().numpy()
    if np.abs(got - base).max() <= 1e-5:
        why = (
            "it is the unperturbed image — did you change a copy and render the original, or change the weight "
            "after rendering?"
        )
    elif np.abs(got - minus).max() <= 1e-5:
        why = "it is the image for −δ: add δ to the weight, do not subtract it"
    else:
        why = f"max |difference| {err:.3g}; perturb net.weights[{i}][0, {r}, {c}] (kernel {i}, row {r} = input unit, column {c} = output unit)"
    return Check("check_perturbed_image", False, f"wrong image: {why}")


@checker
def check_perturbation_score(
    answer, net, delta: float, res: int, threshold: float = 0.9, label: str = "target"
) -> Check:
    """S(θ; δ) of `net` at one δ: the fraction of its non-zero weights w for which the image with
    w ← w + δ is judged to keep its identity, the judge being SSIM ≥ `threshold` against the
    unperturbed image at `res` (`volratio.judges.SSIMJudge`). Recomputed with `volratio.emc2.score`."""
    got = number(answer, "your score")
    with torch.no_grad():
        ref_img = net.render(res)[0]
    judge = SSIMJudge(ref_img, threshold)
    cfg = EMC2Config(deltas=(float(delta),), res=res, max_params=None, device="cpu", dtype="float64")
    r = score(net, [judge], label, cfg)[0]
    s = float(r.scores[0])
    kept = round(s * r.n_params)
    n_all = net.n_params() // net.population
    # SSIM within 1e-4 of the threshold: float32 and float64 renders may judge these either way
    near = int((np.abs(r.table["score"].to_numpy() - threshold) < 1e-4).sum())
    if any(close(got, (kept + j) / r.n_params, rtol=0, atol=1e-9) for j in range(-near, near + 1)):
        extra = f" ({near} weight(s) sit at the threshold and may go either way)" if near else ""
        return Check(
            "check_perturbation_score",
            True,
            f"S(δ={delta:g}) = {s:.4f}: {kept} of {r.n_params} non-zero weights keep the identity{extra}",
            s,
            got,
        )
    neg = EMC2Config(deltas=(-float(delta),), res=res, max_params=None, device="cpu", dtype="float64")
    r_neg = score(net, [judge], label, neg)[0]
    wrong = {
        "1 − S: you counted the perturbations that *destroy* the identity": 1 - s,
        f"{kept}: a count — divide by |nz(θ)| = {r.n_params}": float(kept),
        f"you divided by all {n_all} weights; S averages over the non-zero ones only ({r.n_params})": kept / n_all,
        f"you perturbed masked weights too (they change nothing, so they count as kept); S averages over the "
        f"{r.n_params} non-zero weights only": (kept + n_all - r.n_params) / n_all,
        f"that is S at δ = {-delta:g}; check the sign of δ": float(r_neg.scores[0]),
    }
    for why, v in wrong.items():
        if close(got, v, rtol=0, atol=1e-9) and not close(v, s, rtol=0, atol=1e-9):
            return Check("check_perturbation_score", False, f"your score {got:.4f} ≠ {s:.4f}: {why}", s, got)
    return Check(
        "check_perturbation_score",
        False,
        f"your score {got:.4f} ≠ {s:.4f} ({kept} of {r.n_params} non-zero weights kept) — check the judge: SSIM "
        f"against the *unperturbed* image at {res}×{res}, kept when ≥ {threshold}",
        s,
        got,
    )
