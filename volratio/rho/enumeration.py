"""Exact enumeration of a small ρ(W, L) cell: every ternary configuration, weighted by its probability.

With ternary weights and Bernoulli masks every effective weight and bias lies in {−1, 0, +1}; a cell
with N parameters has 3^N configurations, each classified by `volratio.rho.sampler.classify` and
weighted by P(weight = ±1) = p/3, P(0) = 1 − 2p/3, P(bias) = 1/3. `exact` gives P(solution),
P(compositional) and ρ without sampling error (for cells up to about 3^15 configurations); the
chapter and the tests compare the Monte Carlo counts with it.

Chapter: "The volume-ratio argument" (book/volume_ratio.md).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from ..util.device import resolve_device
from .boolean import BooleanTarget
from .sampler import Nets, RhoError, SamplerConfig, classify, layer_dims, n_params


@dataclass
class Exact:
    p_solution: float
    p_compositional: float
    configurations: int

    @property
    def rho(self) -> float | None:
        return self.p_compositional / self.p_solution if self.p_solution > 0 else None


def exact(
    target: BooleanTarget,
    W: int,
    L: int,
    cfg: SamplerConfig = SamplerConfig(),
    max_configs: int = 3**15,
    chunk: int = 1 << 17,
) -> Exact:
    """Exact P(solution), P(compositional) by enumerating every effective weight and bias in
    {−1, 0, +1} (ternary weights, Bernoulli masks: every mask and every weight), each
    configuration weighted by its probability."""
    if cfg.weights != "ternary" or cfg.masks != "bernoulli":
        raise RhoError("exact enumeration needs weights='ternary' and masks='bernoulli'")
    dims = layer_dims(target.n, W, L)
    npar = n_params(target.n, W, L)
    total = 3**npar
    if total > max_configs:
        raise RhoError(
            f"exact enumeration of W={W}, L={L} on {target.spec} needs 3^{npar} = {total:.3g} configurations "
            f"(limit {max_configs:.3g}); use Monte Carlo or a smaller cell"
        )
    pm, p0, _ = cfg.weight_probs()
    dev = resolve_device(cfg.device)
    powers = 3 ** torch.arange(npar, dtype=torch.int64)
    is_weight = torch.cat([torch.cat([torch.ones(fi * fo), torch.zeros(fo)]) for fi, fo in dims]).bool()
    p_sol = p_comp = 0.0
    for a in range(0, total, chunk):
        idx = torch.arange(a, min(a + chunk, total), dtype=torch.int64)
        digits = (idx[:, None] // powers[None, :]) % 3 - 1  # (C, npar) in {−1, 0, 1}
        nzw = (digits[:, is_weight] != 0).sum(1).double()
        logp = (
            nzw * math.log(pm)
            + (int(is_weight.sum()) - nzw) * math.log(p0)
            + (npar - int(is_weight.sum())) * math.log(1 / 3)
        )
        prob = logp.exp()
        ws, bs, o = [], [], 0
        for fi, fo in dims:
            ws.append(digits[:, o : o + fi * fo].reshape(-1, fi, fo).float().to(dev))
            o += fi * fo
            bs.append(digits[:, o : o + fo].float().to(dev))
            o += fo
        sol, comp = classify(Nets(ws, bs), target)
        p_sol += float(prob[sol.cpu()].sum())
        p_comp += float(prob[comp.cpu()].sum())
    return Exact(p_sol, p_comp, total)
