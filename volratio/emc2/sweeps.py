"""Weight sweeps and judged examples: what single-weight changes do to a network's image.

**Weight sweeps** (`weight_sweep`; drawn by `volratio.report.plots.draw_weight_sweep`): one row per parameter, columns Δw over
[−1, +1], plus control rows along random unit directions in parameter space — the figures of FER
(Kumar, Clune, Lehman, Stanley 2025).

`judged_examples` shows the images and verdicts behind a score.

Chapter: "EMC2-Bench" (book/emc2.md).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from ..errors import VolratioError
from ..judges import DEFAULT_JUDGE
from ..nets import CoordMLP
from ..util import budget
from ..util.device import generator
from .engine import PerturbationEngine, nonzero_params, perturbed_images, subsample, torch_dtype
from .scoring import EMC2Config, judges_for, score, target_label


@dataclass
class WeightSweep:
    images: np.ndarray  # (rows, cols, res, res, 3) in [0, 1]
    offsets: np.ndarray  # (cols,) Δw of each column
    labels: list  # row labels: "k{kernel} r{row} c{col} (w=…)" or "random direction s"
    params: np.ndarray  # (n_param_rows, 3)


def pick_params(
    net: CoordMLP, n: int = 6, how: str = "effect", res: int = 32, seed: int = 0, params=None, device: str = "auto"
) -> np.ndarray:
    """`n` parameters to sweep: `"effect"` — those whose change by +1 moves the image most (RMS),
    `"random"` — a seeded uniform draw of non-zero parameters. `params` restricts the candidates."""
    cand = nonzero_params(net) if params is None else np.asarray(params, np.int64).reshape(-1, 3)
    if how == "random":
        return subsample(cand, n, seed)
    if how != "effect":
        raise VolratioError(f"how must be 'effect' or 'random', got {how!r}")
    eng = PerturbationEngine(net, res, device=device, dtype=torch.float32)
    rms = np.zeros(len(cand))
    for idx, img in eng.iter_images(cand, 1.0):
        rms[idx] = ((img - eng.base) ** 2).mean(dim=(1, 2, 3)).sqrt().cpu().numpy()
    order = np.argsort(-rms, kind="stable")[:n]
    return cand[np.sort(order)]


def weight_sweep(
    net: CoordMLP,
    params,
    offsets=(-1.0, -0.5, 0.0, 0.5, 1.0),
    res: int = 64,
    controls: int = 1,
    seed: int = 0,
    device: str = "auto",
) -> WeightSweep:
    """Images of the network as each parameter of `params` moves by each offset (engine, exact), plus
    `controls` rows moving all non-zero parameters along a random unit direction (seeded)."""
    params = np.asarray(params, np.int64).reshape(-1, 3)
    offsets = np.asarray(offsets, np.float64)
    if int(controls) < 0 or not np.isfinite(offsets).all() or offsets.size == 0:
        raise VolratioError(f"weight_sweep needs controls ≥ 0 and finite offsets, got {controls}, {offsets.tolist()}")
    budget.check(
        (len(params) + int(controls)) * len(offsets) * int(res) ** 2 * 3 * 4 * 3,
        f"a weight-sweep grid of {len(params) + int(controls)} rows × {len(offsets)} images at {res}×{res}",
        "sweep fewer parameters (--n, --params), fewer --controls or a lower --res",
    )
    eng = PerturbationEngine(net, res, device=device, dtype=torch.float32)
    P = np.repeat(params, len(offsets), axis=0)
    D = np.tile(offsets, len(params))
    imgs = eng.render(P, D).float().cpu().numpy().reshape(len(params), len(offsets), res, res, 3)
    W = [w.detach() for w in net.effective_weights()]
    labels = [f"k{i} r{r} c{c} (w={float(W[i][0, r, c]):+.2f})" for i, r, c in params.tolist()]
    rows = [imgs]
    g = generator(seed)
    for s in range(controls):
        dirs = [
            torch.randn(w.shape[1:], generator=g, dtype=torch.float64) * (m[0].cpu() != 0)
            for w, m in zip(net.weights, net.masks)
        ]
        norm = math.sqrt(sum(float((d * d).sum()) for d in dirs))
        row = []
        for o in offsets:
            new = net.select(0)
            with torch.no_grad():
                for w, d in zip(new.weights, dirs):
                    w[0] += (o / norm) * d.to(w.dtype).to(w.device)
            row.append(new.render(res)[0].detach().cpu().numpy())
        rows.append(np.stack(row)[None])
        labels.append(f"random direction {s}")
    return WeightSweep(np.concatenate(rows).clip(0, 1), offsets, labels, params)


@dataclass
class JudgedExamples:
    """What a judge saw: a network's unperturbed image and a grid of its perturbed images, each
    with the judge's verdict (the identity preserved, as EMC2 counts it)."""

    base: np.ndarray  # (res, res, 3) the unperturbed render
    base_kept: bool  # the judge says the unperturbed image shows the label
    images: np.ndarray  # (n_δ, n_params, res, res, 3): row i is δ = deltas[i], column j parameter j
    kept: np.ndarray  # (n_δ, n_params) bool: the identity is preserved (shown before and after)
    deltas: np.ndarray  # (n_δ,)
    params: np.ndarray  # (n_params, 3) kernel, row, column
    judge: str


def judged_examples(
    net: CoordMLP,
    target_spec: str,
    judge: str = DEFAULT_JUDGE,
    n: int = 6,
    deltas=(-1.0, 1.0),
    res: int = 64,
    seed: int = 0,
    device: str = "cpu",
) -> JudgedExamples:
    """`n` perturbations per δ of `deltas` (a seeded uniform draw of non-zero parameters), their
    images and the verdicts EMC2 gives them under `judge` — the same scoring path as
    `score`, restricted to these parameters — so a figure can show what a score counts."""
    params = subsample(nonzero_params(net), int(n), seed)
    cfg = EMC2Config(deltas=tuple(float(d) for d in deltas), res=int(res), seed=seed, device=device)
    r = score(net, judges_for(net, [judge], target_spec, cfg), target_label(target_spec), cfg, params=params)[0]
    P = np.repeat(params, len(r.deltas), axis=0)  # the order of score's table: δ varies fastest
    D = np.tile(r.deltas, len(params))
    base, batches = perturbed_images(net, int(res), P, D, device=device, dtype=torch_dtype(cfg.dtype))
    imgs = np.zeros((len(P), int(res), int(res), 3), np.float32)
    for idx, batch in batches:
        imgs[idx] = batch.float().cpu().numpy().clip(0, 1)
    shape = (len(params), len(r.deltas))
    return JudgedExamples(
        base=base.float().cpu().numpy().clip(0, 1),
        base_kept=bool(r.base_kept),
        images=imgs.reshape(*shape, int(res), int(res), 3).swapaxes(0, 1),
        kept=r.table["verdict"].to_numpy(bool).reshape(shape).T,
        deltas=r.deltas,
        params=params,
        judge=r.judge,
    )
