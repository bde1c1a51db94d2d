"""The compositional volume ratio ρ(W, L): Monte Carlo, exact enumeration, and the basin model.

**Boolean model** (DESIGN §3.5.1). A random masked threshold network on n input bits (±1) has
L threshold layers: L−1 hidden layers of width W and one output unit; layer 1 reads the inputs,
every later layer reads only the layer below. A unit computes `h = +1 if h_prev·(w⊙m) + b > 0 else
−1`. Random configurations (`SamplerConfig`):
- weights `ternary` (uniform on {−1, 0, +1}) or `gaussian` (N(0, 1/fan_in));
- masks `bernoulli` (each connection kept with probability p) or `fanin` (each unit keeps exactly
  `fan_in` incoming connections, chosen uniformly);
- biases are never masked: uniform on {−1, 0, +1} (ternary) or N(0, 1/fan_in) (gaussian).

Two engines compute each sampled network's truth tables on all 2ⁿ inputs (n ≤ 10):
`engine="bits"` (the default; `volratio.bitslice`) packs every unit's table into uint64 words and
evaluates ternary units by bit-sliced popcount, numpy only, on CPU, in chunks with their own
random streams (`SeedSequence([seed, W, L]).spawn`), optionally in worker processes;
`engine="float"` uses batched matmuls (torch, CUDA if available) and draws from a torch generator
per (seed, W, L, batch). They sample the same distribution and give identical tables and verdicts
on the same networks (tests/test_bitslice.py); their random streams differ, so the counts for a
seed differ between engines. Only solutions reach the compositional check (float, batched).
`estimate` can stop a cell once ρ's relative interval width reaches a target or a time budget
runs out, and reports what a cell would need for a given width (`networks_for_width`);
`decay_fit` fits the decay rate of ρ away from (W_min, L*).

A network is a **solution** if its output table equals the target's. A solution is
**compositional** when every unit that influences the output computes a node of the target's DAG
(an input or a primitive) or its negation, and reads only units computing that node's children or
the node itself (a copy). "Influences": the unit has a non-zero weight into a unit that
influences (the output does, by definition), and flipping the unit's function — in every unit of
its layer that computes the same function or its negation, together, so that redundant copies
count — changes that consumer at some input; constant units only shift biases and never
influence. Other solutions are **fractured**. ρ(W, L) = P(compositional | solution); the absolute
volumes P(solution) and P(compositional) are reported too, with Wilson or Clopper–Pearson
intervals (`volratio.util.stats.binomial_interval`).

Consequences of the definition proved in the chapter and checked by the tests: ρ = 0 when L < L*
or when W is below the embedding width `target.min_width(L)`.

**Basin model** (DESIGN §3.5.2): see `BasinConfig` / `basin_rho` below.

References: Valle-Pérez et al. 2019 and Mingard et al. 2021 (sampling the parameter–function map
of random networks on all Boolean inputs); Do et al. 2026 (the volume-ratio argument). Used by the
chapter "The volume-ratio argument" (book/volume_ratio.md) and `volratio rho`.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np
import torch

from .boolean import BooleanTarget, input_table
from .errors import VolratioError
from .util.device import generator, resolve_device
from .util.stats import binomial_interval


class RhoError(VolratioError, ValueError):
    """A ρ estimation request that cannot be carried out as asked."""


# ---------------------------------------------------------------------------------------------
# Sampling configuration


@dataclass(frozen=True)
class SamplerConfig:
    """How random masked threshold networks are drawn (see module docstring)."""

    weights: str = "ternary"  # "ternary" (uniform {−1,0,+1}; exact enumeration possible) or "gaussian"
    masks: str = "bernoulli"  # "bernoulli" (density p) or "fanin" (exactly fan_in inputs per unit)
    p: float = (
        0.8  # mask density for "bernoulli" (0.8: P(weight = 0) = 0.47; the largest volumes on the book's targets)
    )
    fan_in: int = 2  # incoming connections per unit for "fanin" (capped at the layer's fan-in)
    batch: int = 1 << 16  # float engine: networks per batched draw; part of its random stream
    device: str = "auto"  # float engine: "auto" = CUDA if available (the bits engine runs on CPU)
    confidence: float = 0.95  # interval confidence level
    interval: str = "wilson"  # "wilson" or "clopper-pearson"
    engine: str = "bits"  # "bits": bit-sliced uint64 truth tables (volratio.bitslice); "float": batched matmuls
    chunk: int = 4096  # bits engine: networks per independent random stream; part of its random stream
    workers: int = 1  # bits engine: worker processes (1 = in-process); the counts do not depend on it

    def __post_init__(self):
        if self.weights not in ("ternary", "gaussian"):
            raise RhoError(f"weights={self.weights!r}: use 'ternary' or 'gaussian'")
        if self.masks not in ("bernoulli", "fanin"):
            raise RhoError(f"masks={self.masks!r}: use 'bernoulli' or 'fanin'")
        if not 0.0 < self.p <= 1.0:
            raise RhoError(f"mask density p={self.p} must lie in (0, 1]")
        if self.fan_in < 1:
            raise RhoError(f"fan_in={self.fan_in} must be ≥ 1")
        if self.interval not in ("wilson", "clopper-pearson"):
            raise RhoError(f"interval={self.interval!r}: use 'wilson' or 'clopper-pearson'")
        if self.engine not in ("bits", "float"):
            raise RhoError(f"engine={self.engine!r}: use 'bits' (bit-sliced, CPU) or 'float' (batched matmuls)")
        if not 1 <= self.chunk <= 1 << 16:
            raise RhoError(f"chunk={self.chunk}: networks per random stream must lie in 1..65536")
        if not 1 <= self.workers <= 64:
            raise RhoError(f"workers={self.workers}: use 1..64 worker processes (at most the free cores)")

    def draw_spec(self):
        """The fields the bit-sliced sampler needs (`volratio.bitslice.DrawSpec`)."""
        from .bitslice import DrawSpec

        return DrawSpec(self.weights, self.masks, self.p, self.fan_in)

    def weight_probs(self) -> tuple[float, float, float]:
        """P(effective weight = −1, 0, +1) for ternary weights under Bernoulli masks."""
        q = self.p / 3.0
        return (q, 1.0 - 2.0 * q, q)


def layer_dims(n: int, W: int, L: int) -> list[tuple[int, int]]:
    """(fan_in, fan_out) of each of the L threshold layers."""
    if L < 1 or (L > 1 and W < 1):
        raise RhoError(f"need L ≥ 1 layers and W ≥ 1 when L > 1 (got W={W}, L={L})")
    dims = [n] + [W] * (L - 1) + [1]
    return list(zip(dims[:-1], dims[1:]))


@dataclass
class Nets:
    """A batch of B networks: `weights[l]` (B, fan_in, fan_out) effective (masked) weights,
    `biases[l]` (B, fan_out)."""

    weights: list[torch.Tensor]
    biases: list[torch.Tensor]

    @property
    def batch(self) -> int:
        return self.weights[0].shape[0]

    def take(self, idx: torch.Tensor) -> "Nets":
        return Nets([w[idx] for w in self.weights], [b[idx] for b in self.biases])


def sample_networks(
    n: int, W: int, L: int, B: int, cfg: SamplerConfig, gen: torch.Generator, device=None, dtype=torch.float32
) -> Nets:
    """Draw B random masked threshold networks (on CPU from `gen`, then moved to `device`)."""
    device = resolve_device(device or cfg.device)
    ws, bs = [], []
    for fi, fo in layer_dims(n, W, L):
        if cfg.masks == "bernoulli" and cfg.weights == "ternary":
            # one uniform per weight gives mask and sign at once, in place:
            # u − ½ scaled so that |·| ≥ 1 exactly when |u − ½| ≥ ½ − p/3, then truncated to {−1, 0, 1}
            q = cfg.p / 3.0
            w = torch.rand(B, fi, fo, generator=gen).sub_(0.5)
            w = w.mul_(1.0 / (0.5 - q)).trunc_().clamp_(-1.0, 1.0).to(dtype)  # q ≤ 1/3 < 1/2
        else:
            if cfg.masks == "bernoulli":
                m = torch.rand(B, fi, fo, generator=gen) < cfg.p
            else:  # exactly min(fan_in, fi) incoming connections per unit: top-k of uniform noise
                k = min(cfg.fan_in, fi)
                order = torch.rand(B, fi, fo, generator=gen).argsort(dim=1)
                m = order < k
            if cfg.weights == "ternary":
                w = torch.randint(-1, 2, (B, fi, fo), generator=gen).to(dtype)
            else:
                w = torch.randn(B, fi, fo, generator=gen).to(dtype) / math.sqrt(fi)
            w = w * m.to(dtype)
        if cfg.weights == "ternary":
            b = torch.randint(-1, 2, (B, fo), generator=gen).to(dtype)
        else:
            b = torch.randn(B, fo, generator=gen).to(dtype) / math.sqrt(fi)
        ws.append(w.to(device))
        bs.append(b.to(device))
    return Nets(ws, bs)


def inputs(n: int, device=None, dtype=torch.float32) -> torch.Tensor:
    """All 2ⁿ inputs as ±1, (2ⁿ, n) — same row order as `BooleanTarget.table`."""
    return torch.as_tensor(input_table(n), dtype=dtype, device=device)


def forward(nets: Nets, X: torch.Tensor, keep: bool = False):
    """Output tables (B, P) in ±1; with `keep=True` also the per-layer pre-activations
    [(B, P, W_l)] and unit outputs [(B, P, W_l)] (the inputs, broadcast, first)."""
    h = X  # (P, n) shared by every network
    zs, hs = [], [X.expand(nets.batch, *X.shape)] if keep else []
    for w, b in zip(nets.weights, nets.biases):
        z = torch.baddbmm(b[:, None, :], h.expand(nets.batch, *h.shape[-2:]), w)  # (B, P, fan_out)
        if keep:
            zs.append(z)
            h = torch.where(z > 0, 1.0, -1.0).to(z.dtype)
            hs.append(h)
        else:
            h = z.gt_(0).mul_(2).sub_(1)  # ±1 in place
    out = h[..., 0]  # (B, P)
    return (out, zs, hs) if keep else out


# ---------------------------------------------------------------------------------------------
# Classification


def classify(nets: Nets, target: BooleanTarget, chunk: int = 1024) -> tuple[torch.Tensor, torch.Tensor]:
    """(solution, compositional), two bool tensors (B,). Only solutions are examined in detail."""
    dev = nets.weights[0].device
    dtype = nets.weights[0].dtype
    X = inputs(target.n, dev, dtype)
    tab = torch.as_tensor(target.table, device=dev, dtype=dtype)
    out = forward(nets, X)
    sol = (out == tab).all(dim=1)
    comp = torch.zeros_like(sol)
    idx = torch.nonzero(sol).flatten()
    for a in range(0, idx.numel(), chunk):
        part = idx[a : a + chunk]
        comp[part] = _compositional(nets.take(part), target, X)
    return sol, comp


def _compositional(nets: Nets, target: BooleanTarget, X: torch.Tensor) -> torch.Tensor:
    """For networks already known to be solutions: is every influencing unit a consistent node?"""
    dev, dtype = X.device, X.dtype
    S, P, m = nets.batch, X.shape[0], target.n_nodes
    _, zs, hs = forward(nets, X, keep=True)
    T = torch.as_tensor(target.node_tables, device=dev, dtype=dtype)  # (P, m)
    allowed = torch.zeros(m + 1, m + 1, dtype=torch.bool, device=dev)  # index m = unlabelled
    allowed[:m, :m] = torch.as_tensor(target.allowed(), device=dev)
    # labels and constancy of every layer's units: inputs, hidden layers, output
    labels = [torch.arange(target.n, device=dev).expand(S, -1)]
    const = [torch.zeros(S, target.n, dtype=torch.bool, device=dev)]
    for h in hs[1:-1]:
        match = torch.einsum("spw,pm->swm", h, T).abs() == P  # equal up to negation
        lab = torch.where(match.any(-1), match.to(torch.int8).argmax(-1), m)
        labels.append(lab)
        const.append(h.sum(1).abs() == P)
    labels.append(torch.full((S, 1), target.root, device=dev))
    const.append(torch.zeros(S, 1, dtype=torch.bool, device=dev))
    ok = torch.ones(S, dtype=torch.bool, device=dev)
    infl = torch.ones(S, 1, dtype=torch.bool, device=dev)  # the output influences
    for j in range(len(nets.weights) - 1, -1, -1):  # consumer layer j+1, producer layer j
        z, h, w = zs[j], hs[j], nets.weights[j]  # (S,P,Wc), (S,P,Wp), (S,Wp,Wc)
        fire = z > 0
        # the producers computing the same function up to negation flip together (a node's value
        # changes in every unit that carries it: single flips would miss redundant copies)
        same = (torch.einsum("spu,spv->suv", h, h).abs() == P) & ~const[j][:, :, None] & ~const[j][:, None, :]
        contrib = h[..., None] * w[:, None]  # (S,P,Wp,Wc)
        group = torch.einsum("suv,spvc->spuc", same.to(dtype), contrib)  # (S,P,Wp,Wc)
        flipped = (z[:, :, None, :] - 2.0 * group) > 0
        used = (flipped != fire[:, :, None, :]).any(dim=1)  # (S,Wp,Wc): the group changes the consumer
        used &= (w != 0) & ~const[j][:, :, None] & infl[:, None, :]
        pair_ok = allowed[labels[j + 1][:, None, :], labels[j][:, :, None]]  # (S,Wp,Wc)
        ok &= ~(used & ~pair_ok).flatten(1).any(dim=1)
        infl = used.any(dim=2)  # (S, Wp)
    return ok


# ---------------------------------------------------------------------------------------------
# Counting, intervals, exact enumeration


@dataclass
class Counts:
    samples: int = 0
    solutions: int = 0
    compositional: int = 0

    def __iadd__(self, other: "Counts") -> "Counts":
        self.samples += other.samples
        self.solutions += other.solutions
        self.compositional += other.compositional
        return self


def cell_seed(seed: int, W: int, L: int, chunk: int) -> int:
    """Independent stream per (seed, W, L, chunk): results do not depend on the grid's order."""
    return int(np.random.SeedSequence([int(seed), int(W), int(L), int(chunk)]).generate_state(1)[0])


MAX_INPUTS = 10  # the bits engine packs up to 2^10 rows (16 words) per truth table


def count(
    target: BooleanTarget, W: int, L: int, samples: int, cfg: SamplerConfig = SamplerConfig(), seed: int = 0, **stop
) -> Counts:
    """Sample up to `samples` networks of width W and depth L and count solutions and
    compositional ones (`cfg.engine`; `stop`: `until_width`, `budget_s`, `progress` of `estimate`)."""
    return estimate(target, W, L, samples, cfg, seed, **stop)[0]


def _check_cell(target: BooleanTarget, W: int, L: int, samples: int, cfg: SamplerConfig) -> None:
    if target.n > MAX_INPUTS:
        raise RhoError(f"{target.spec}: n={target.n} inputs; the Boolean model supports n ≤ {MAX_INPUTS}")
    dims = layer_dims(target.n, W, L)
    if samples < 0:
        raise RhoError(f"samples={samples} must be ≥ 0")
    # memory of one chunk (bits) or batch (float): parameters and the tables of the widest layer
    per_net = (
        sum(fi * fo for fi, fo in dims) * 6 + max(fo for _, fo in dims) * 48 * max(1, 2**target.n // 64)
        if cfg.engine == "bits"
        else (n_params(target.n, W, L) + 3 * 2**target.n * max(W, target.n)) * 4
    )
    need = per_net * (cfg.chunk if cfg.engine == "bits" else cfg.batch)
    if need > 2 << 30:
        raise RhoError(
            f"W={W}, L={L} on {target.spec}: one {'chunk' if cfg.engine == 'bits' else 'batch'} needs "
            f"about {need / 2**30:.1f} GiB; lower SamplerConfig.{'chunk' if cfg.engine == 'bits' else 'batch'}"
        )


def estimate(
    target: BooleanTarget,
    W: int,
    L: int,
    samples: int,
    cfg: SamplerConfig = SamplerConfig(),
    seed: int = 0,
    until_width: float | None = None,
    budget_s: float | None = None,
    progress: bool = False,
) -> tuple[Counts, dict]:
    """Counts for one cell, and how the run went: `{"chunks", "elapsed_s", "stopped", "rel_width"}`.

    Stops at `samples` networks, or earlier — with the bits engine — once the relative width
    (hi − lo) / ρ̂ of ρ's interval is ≤ `until_width` (checked after every chunk in chunk order, so
    the answer does not depend on the number of workers), or once `budget_s` seconds have passed
    (then the answer depends on the machine's speed; the row says so). `progress`: a tqdm bar on
    stderr."""
    import sys
    import time

    from tqdm import tqdm

    _check_cell(target, W, L, samples, cfg)
    if until_width is not None and not until_width > 0:
        raise RhoError(f"until_width={until_width} must be a positive relative interval width (e.g. 0.2)")
    if budget_s is not None and not budget_s > 0:
        raise RhoError(f"budget_s={budget_s} must be a positive number of seconds")
    t0 = time.perf_counter()
    c = Counts()
    info = {"chunks": 0, "stopped": "samples"}
    bar = tqdm(
        total=int(samples),
        disable=not progress,
        file=sys.stderr,
        unit="net",
        unit_scale=True,
        leave=False,
        desc=f"{target.spec} W={W} L={L}",
    )
    if cfg.engine == "float":
        if until_width is not None or budget_s is not None:
            raise RhoError("until_width / budget_s need engine='bits' (the float engine draws fixed batches)")
        for i, a in enumerate(range(0, int(samples), cfg.batch)):
            B = min(cfg.batch, int(samples) - a)
            nets = sample_networks(target.n, W, L, B, cfg, generator(cell_seed(seed, W, L, i)))
            sol, comp = classify(nets, target)
            c += Counts(B, int(sol.sum()), int(comp.sum()))
            info["chunks"] += 1
            bar.update(B)
    else:
        for part in _bits_chunks(target, W, L, int(samples), cfg, seed):
            c += part
            info["chunks"] += 1
            bar.update(part.samples)
            bar.set_postfix(sol=c.solutions, comp=c.compositional, refresh=False)
            if until_width is not None and _rel_width(c, cfg) <= until_width:
                info["stopped"] = "width"
                break
            if budget_s is not None and time.perf_counter() - t0 > budget_s:
                info["stopped"] = "budget"
                break
    bar.close()
    info["elapsed_s"] = time.perf_counter() - t0
    info["rel_width"] = _rel_width(c, cfg)
    return c, info


def _bits_chunks(target: BooleanTarget, W: int, L: int, samples: int, cfg: SamplerConfig, seed: int):
    """Counts of each chunk of the bits engine, in chunk order (workers run ahead by a window)."""
    from . import bitslice as bs

    dims = layer_dims(target.n, W, L)
    tw = bs.pack_bits((target.table > 0)[None])[0]
    spec = cfg.draw_spec()
    chunks = [(c, min(cfg.chunk, samples - a)) for c, a in enumerate(range(0, samples, cfg.chunk))]
    per_task = max(1, (1 << 15) // cfg.chunk)  # a task of ~32k networks: IPC cost ≪ work
    tasks = [chunks[i : i + per_task] for i in range(0, len(chunks), per_task)]
    args = (target.n, dims, tw, spec, seed, W, L)
    if cfg.workers == 1 or len(tasks) == 1:
        for job in tasks:
            yield from _count_task(target, *args, job)
        return
    ex = bs.pool(cfg.workers)
    window = 2 * cfg.workers
    futures = [ex.submit(_count_task, target, *args, job) for job in tasks[:window]]
    done = 0
    try:
        for i in range(len(tasks)):
            yield from futures[i].result()
            done = i + 1
            if len(futures) < len(tasks):
                futures.append(ex.submit(_count_task, target, *args, tasks[len(futures)]))
    finally:  # stopped early: drop what is still queued
        for f in futures[done:]:
            f.cancel()


def _count_task(target: BooleanTarget, n, dims, tw, spec, seed, W, L, jobs) -> list[Counts]:
    """Counts of the chunks `jobs` (a worker's task): bit-sliced solutions, then one batched
    compositional check of all their solutions (the float classifier, on solutions only)."""
    import multiprocessing

    from . import bitslice as bs

    if multiprocessing.parent_process() is not None:
        torch.set_num_threads(1)  # a worker process: one thread (workers × threads ≤ cores)
    res = bs.run_chunks(n, dims, tw, spec, seed, W, L, jobs)
    sols = [blk for *_, blk in res]
    n_sol = [k for _, _, k, _ in res]
    comp = np.zeros(0, dtype=bool)
    if sum(n_sol):
        allsol = bs.Block(
            [np.concatenate([b.weights[i] for b in sols], axis=-1) for i in range(len(dims))],
            [np.concatenate([b.biases[i] for b in sols], axis=-1) for i in range(len(dims))],
            sols[0].ternary,
        )
        X = inputs(target.n)
        comp = np.concatenate(
            [
                _compositional(_nets_from_block(allsol.take(slice(a, a + 1024))), target, X).numpy()
                for a in range(0, allsol.batch, 1024)
            ]
        )
    splits = np.cumsum(n_sol)[:-1]
    return [Counts(B, k, int(c.sum())) for (_, B, k, _), c in zip(res, np.split(comp, splits))]


def _nets_from_block(block) -> Nets:
    """A `bitslice.Block` (networks on the last axis) as float32 `Nets` (networks first)."""
    ws = [torch.from_numpy(np.ascontiguousarray(np.moveaxis(w, -1, 0)).astype(np.float32)) for w in block.weights]
    bs_ = [torch.from_numpy(np.ascontiguousarray(b.T).astype(np.float32)) for b in block.biases]
    return Nets(ws, bs_)


def _rel_width(c: Counts, cfg: SamplerConfig) -> float:
    """(hi − lo) / ρ̂ of ρ's interval; inf while no compositional solution is seen."""
    if not c.compositional:
        return math.inf
    lo, hi = binomial_interval(c.compositional, c.solutions, cfg.confidence, cfg.interval)
    return (hi - lo) / (c.compositional / c.solutions)


def networks_for_width(c: Counts, width: float, confidence: float = 0.95) -> float | None:
    """Networks a cell needs for a relative width `width` of ρ's Wilson interval, at the cell's
    current estimates of ρ and P(solution); None while no compositional solution is seen."""
    from scipy.stats import norm

    if not c.compositional:
        return None
    rho, p_sol = c.compositional / c.solutions, c.solutions / c.samples
    z = float(norm.ppf(0.5 + confidence / 2))

    def rel(s):  # Wilson width / rho at s solutions
        return 2 * z * math.sqrt(rho * (1 - rho) / s + z * z / (4 * s * s)) / (1 + z * z / s) / rho

    lo, hi = 1.0, 2.0
    while rel(hi) > width:
        lo, hi = hi, hi * 2
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if rel(mid) > width else (lo, mid)
    return hi / p_sol


def n_params(n: int, W: int, L: int) -> int:
    return sum(fi * fo + fo for fi, fo in layer_dims(n, W, L))


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


def row(target: BooleanTarget, W: int, L: int, c: Counts, cfg: SamplerConfig) -> dict:
    """One result row (the JSON schema of `volratio rho boolean`)."""
    rho = c.compositional / c.solutions if c.solutions else None
    lo, hi = binomial_interval(c.compositional, c.solutions, cfg.confidence, cfg.interval)
    s_lo, s_hi = binomial_interval(c.solutions, c.samples, cfg.confidence, cfg.interval)
    k_lo, k_hi = binomial_interval(c.compositional, c.samples, cfg.confidence, cfg.interval)
    return {
        "W": W,
        "L": L,
        "samples": c.samples,
        "solutions": c.solutions,
        "compositional": c.compositional,
        "rho": rho,
        "lo": lo,
        "hi": hi,
        "p_solution": c.solutions / c.samples if c.samples else None,
        "p_solution_ci": [s_lo, s_hi],
        "p_compositional": c.compositional / c.samples if c.samples else None,
        "p_compositional_ci": [k_lo, k_hi],
        "confidence": cfg.confidence,
        "interval": cfg.interval,
    }


def boolean_grid(
    target: BooleanTarget,
    Ws,
    Ls,
    samples: int,
    cfg: SamplerConfig = SamplerConfig(),
    seed: int = 0,
    with_exact: bool = False,
    with_theory: bool = True,
    max_exact: int = 3**13,
    until_width: float | None = None,
    budget_s: float | None = None,
    width: float = 0.5,
    progress: bool = False,
) -> list[dict]:
    """One row per (W, L): Monte Carlo counts, ρ with interval, absolute volumes, and where
    available the exact values and the theory's closed-form lower bound (`volratio.theory`).
    `until_width`, `budget_s` (per cell): see `estimate`; every row also reports its run
    (`elapsed_s`, `stopped`, `rel_width`) and the networks it would need for a relative interval
    width `width` (`until_width` when given) at its current estimates (`networks_for_width`)."""
    rows = []
    width = until_width or width
    for L in Ls:
        for W in Ws:
            c, info = estimate(target, W, L, samples, cfg, seed, until_width, budget_s, progress)
            r = row(target, W, L, c, cfg)
            r.update(
                engine=cfg.engine,
                elapsed_s=info["elapsed_s"],
                stopped=info["stopped"],
                rel_width=None if math.isinf(info["rel_width"]) else info["rel_width"],
                width_target=width,
                networks_for_width=networks_for_width(c, width, cfg.confidence),
            )
            if with_exact:
                try:
                    e = exact(target, W, L, cfg, max_configs=max_exact)
                    r["exact"] = {"rho": e.rho, "p_solution": e.p_solution, "p_compositional": e.p_compositional}
                except RhoError:
                    r["exact"] = None  # too large to enumerate
            if with_theory:
                from .theory import clean_volume_value

                r["theory"] = clean_volume_value(target, W, L, cfg)
            rows.append(r)
    return rows


@dataclass(frozen=True)
class BooleanRhoConfig:
    """One ρ(W, L) grid of the Boolean model — the experiment of the chapter's heatmaps."""

    target: str = "chain:2"  # a Boolean target spec (volratio.boolean)
    Ws: tuple = (1, 2, 3, 4, 6)  # widths
    Ls: tuple = (1, 2, 3, 4)  # depths (threshold layers, output included)
    samples: int = 100_000  # networks per (W, L)
    sampler: SamplerConfig = SamplerConfig()  # weights, masks, density, intervals
    seed: int = 0
    exact: bool = False  # also enumerate exactly where ≤ 3^13 configurations
    scale: str = "quick"
    until_width: float | None = None  # stop a cell once ρ's relative interval width is ≤ this (bits engine)
    budget_s: float | None = None  # stop a cell after this many seconds (bits engine)

    @classmethod
    def quick(cls, **kw) -> "BooleanRhoConfig":
        """The book's scale: up to 2·10⁶ networks per cell, each cell stopping once ρ's relative
        interval width is ≤ 0.2, on 2 worker processes."""
        return cls(**{"samples": 2_000_000, "until_width": 0.2, "sampler": SamplerConfig(workers=2), **kw})

    @classmethod
    def reference(cls, **kw) -> "BooleanRhoConfig":
        """Up to 10^8 networks per cell, each cell stopping once ρ's relative interval width is
        ≤ 0.1 (deterministic: the stopping rule is checked in chunk order), on 2 worker
        processes. Pass `budget_s` to cap each cell's time instead (then the counts depend on the
        machine). About an hour for a 30-cell grid on 2 cores (bits engine, ~3·10⁶ networks/s)."""
        return cls(
            **{
                "samples": 100_000_000,
                "until_width": 0.1,
                "scale": "reference",
                "sampler": SamplerConfig(workers=2),
                **kw,
            }
        )

    @classmethod
    def full(cls, **kw) -> "BooleanRhoConfig":
        """10^9 networks per cell, stopping at relative width 0.05 (hours on 2 cores)."""
        return cls(
            **{
                "samples": 1_000_000_000,
                "until_width": 0.05,
                "scale": "full",
                "sampler": SamplerConfig(workers=2),
                **kw,
            }
        )


def run_boolean(cfg: BooleanRhoConfig) -> dict:
    """Run a grid; the result carries its config, the target's L* and W_min, and the rows."""
    from . import __version__
    from .boolean import get_boolean_target

    t = get_boolean_target(cfg.target)
    rows = boolean_grid(
        t,
        cfg.Ws,
        cfg.Ls,
        cfg.samples,
        cfg.sampler,
        cfg.seed,
        with_exact=cfg.exact,
        until_width=cfg.until_width,
        budget_s=cfg.budget_s,
    )
    return {
        "target": t.spec,
        "L_star": t.depth,
        "W_min": t.width,
        "rows": rows,
        "config": asdict(cfg),
        "version": __version__,
    }


def decay_fit(rows: list[dict], target: BooleanTarget, along: str = "WL", confidence: float = 0.95) -> dict:
    """Fit the decay of ρ away from (W_min, L*): a binomial regression of the compositional
    count k on the solution count s of each cell (maximum likelihood, logit link),

        logit ρ(W, L) = a − λ_W·(W − W_min) − λ_L·(L − L*),

    so where ρ is small, ρ ∝ exp(−λ_W ΔW − λ_L ΔL): λ is the exponential decay rate per unit of
    width or depth (the logit keeps ρ ≤ 1 near the peak, where ρ can be close to 1). Cells with
    solutions but no compositional one count (as k = 0), cells without solutions carry no
    information. `along="W"`: the cells at L = L*, W ≥ W_min (the width axis through the peak);
    `"L"`: W = W_min, L ≥ L* (the depth axis); `"WL"`: the whole support (L ≥ L*,
    W ≥ W_min(L)), both rates at once. The covariance (inverse Fisher information) is scaled by
    the Pearson χ²/dof when that exceeds 1 — the cells scatter more than binomial counts allow,
    i.e. the log-linear form does not fit them — so the intervals are not narrower than the data
    support. Returns the rates with `confidence` t-intervals, ρ at the peak from the fit, χ²/dof
    and the cells used. Used by the chapter's verdicts (`decay_verdict`)."""
    from scipy.special import expit
    from scipy.stats import t as student_t

    if along not in ("W", "L", "WL"):
        raise RhoError(f"along={along!r}: use 'W', 'L' or 'WL'")
    Wm, Ls_ = target.width, target.depth

    def in_scope(r):
        if along == "W":
            return r["L"] == Ls_ and r["W"] >= Wm
        if along == "L":
            return r["W"] == Wm and r["L"] >= Ls_
        return r["L"] >= Ls_ and r["W"] >= (target.min_width(r["L"]) or 0)

    cells = [r for r in rows if in_scope(r) and r["solutions"] > 0]
    names = [n for n in ("W", "L") if n in along]
    res = {
        "W_min": Wm,
        "L_star": Ls_,
        "along": along,
        "cells": [(r["W"], r["L"]) for r in cells],
        "confidence": confidence,
        "lambda_W": None,
        "lambda_L": None,
        "dof": len(cells) - 1 - len(names),
    }
    X = np.array([[1.0] + [-(r[n] - (Wm if n == "W" else Ls_)) for n in names] for r in cells]).reshape(
        -1, 1 + len(names)
    )
    k = np.array([r["compositional"] for r in cells], dtype=float)
    s = np.array([r["solutions"] for r in cells], dtype=float)
    if res["dof"] < 1 or np.linalg.matrix_rank(X) < X.shape[1] or k.sum() == 0:
        return {**res, "note": f"{len(cells)} cells with solutions, {int(k.sum())} compositional: too few to fit"}
    beta = np.zeros(X.shape[1])
    for _ in range(100):  # iteratively reweighted least squares (Newton's method for the logit model)
        p = expit(X @ beta)
        w = np.maximum(s * p * (1 - p), 1e-12)
        step = np.linalg.solve(X.T @ (X * w[:, None]), X.T @ (k - s * p))
        beta = beta + step
        if np.abs(step).max() < 1e-10:
            break
    else:
        return {**res, "note": "the fit does not converge (the counts separate perfectly along an axis)"}
    p = expit(X @ beta)
    info = X.T @ (X * (s * p * (1 - p))[:, None])
    chi2 = float(((k - s * p) ** 2 / np.maximum(s * p * (1 - p), 1e-300)).sum())
    cov = np.linalg.inv(info) * max(1.0, chi2 / res["dof"])
    tq = float(student_t.ppf(0.5 + confidence / 2, res["dof"]))
    res.update(chi2_per_dof=chi2 / res["dof"], peak_rho=float(expit(beta[0])))
    for i, n in enumerate(names, start=1):
        se = float(np.sqrt(cov[i, i]))
        res[f"lambda_{n}"] = {
            "rate": float(beta[i]),
            "lo": float(beta[i] - tq * se),
            "hi": float(beta[i] + tq * se),
            "se": se,
        }
    return res


def decay_verdict(rate: dict | None) -> str:
    """From a fitted rate's interval: 'decays' (above 0), 'grows' (below 0), 'no decay shown'
    (contains 0: any decay is slower than the interval's upper end) or 'not measured'."""
    if rate is None:
        return "not measured"
    return "decays" if rate["lo"] > 0 else "grows" if rate["hi"] < 0 else "no decay shown"


def rows_to_grid(rows: list[dict], key: str, Ws, Ls) -> np.ndarray:
    """Values of `key` from grid rows as an array (len(Ls), len(Ws)); None → NaN."""
    out = np.full((len(Ls), len(Ws)), np.nan)
    for r in rows:
        v = r.get(key)
        if v is not None and r["W"] in Ws and r["L"] in Ls:
            out[list(Ls).index(r["L"]), list(Ws).index(r["W"])] = v
    return out


# ---------------------------------------------------------------------------------------------
# Basin model (the image setting)


@dataclass(frozen=True)
class BasinConfig:
    """Train K random masked initialisations per (W, L) on a planted target and classify them.

    A trained network is a *solution* when its final MSE is ≤ `loss_tol`. A solution is
    *compositional* when all planted primitives (the output node included: in a network of depth
    L* a hidden unit of the last layer computes it and the linear head rescales it) can be
    assigned to distinct hidden units (any layer; optimal assignment by
    `scipy.optimize.linear_sum_assignment`) each with |Pearson correlation| ≥ `threshold` between
    the unit's feature map and the primitive's ground-truth map — and, with `use_emc2`, when its
    EMC2 area under the δ-curve (`volratio.emc2.score`) is ≥ `emc2_threshold`.
    """

    population: int = 16  # K networks per (W, L), trained as one population
    steps: int = 800  # Adam steps
    lr: float = 1e-2  # Adam learning rate (higher than FER's 3e-3: short runs)
    res: int = 32  # training and feature resolution
    p: float = 0.75  # Bernoulli density of the masks on every hidden-layer kernel (the head stays dense)
    activations: tuple = ("gaussian", "sin", "sigmoid")  # the planted targets' activation cycle
    loss_tol: float = 2e-3  # MSE (grey, [0, 1]) below which a network counts as a solution
    threshold: float = 0.9  # |correlation| a unit needs to carry a primitive
    use_emc2: bool = False  # also require the EMC2 criterion (needs volratio.emc2 and a judge)
    emc2_threshold: float = 0.5  # minimum normalised EMC2 AUC when use_emc2
    emc2_params: int | None = 100  # EMC2 scores a seeded subsample of this many non-zero weights per network
    seed: int = 0
    device: str = "auto"
    confidence: float = 0.95
    interval: str = "wilson"
    train_path: str = "fast"  # TrainConfig.path (volratio.fast_train); runs stored before it: "eager"

    @classmethod
    def quick(cls, **kw) -> "BasinConfig":
        """The book's scale: K = 16, 800 steps at 32×32."""
        return cls(**kw)

    @classmethod
    def full(cls, **kw) -> "BasinConfig":
        """K = 256, 5000 steps at 64×64, EMC2 on every non-zero weight."""
        return cls(**{"population": 256, "steps": 5000, "res": 64, "emc2_params": None, **kw})


def _arch(W: int, L: int, activations) -> str:
    counts = [sum(1 for j in range(W) if j % len(activations) == i) for i in range(len(activations))]
    return f"{L};" + ",".join(f"{a}:{c}" for a, c in zip(activations, counts) if c)


def primitive_correlations(feats: list[torch.Tensor], prims: dict[str, torch.Tensor]) -> np.ndarray:
    """|Pearson correlation| between every primitive map and every hidden unit: (K, n_prim, n_units).
    `feats`: per layer (K, res, res, W); `prims`: name → (res, res). Constant maps correlate 0."""
    F = torch.cat([f.flatten(1, 2) for f in feats], dim=-1).double()  # (K, P, U)
    Pm = torch.stack([p.flatten() for p in prims.values()], dim=-1).double()  # (P, n_prim)
    F = F - F.mean(1, keepdim=True)
    Pm = Pm - Pm.mean(0, keepdim=True)
    fn, pn = F.norm(dim=1), Pm.norm(dim=0)  # (K, U), (n_prim,)
    C = torch.einsum("kpu,pq->kqu", F, Pm) / (pn[None, :, None] * fn[:, None, :]).clamp_min(1e-12)
    C = torch.where((fn[:, None, :] > 1e-9) & (pn[None, :, None] > 1e-9), C, torch.zeros_like(C))
    return C.abs().cpu().numpy()


def assigned_correlations(C: np.ndarray) -> np.ndarray:
    """Per network, the |correlation| of each primitive with the unit an optimal one-to-one
    assignment gives it, (K, n_prim); 0 where there are fewer units than primitives."""
    from scipy.optimize import linear_sum_assignment

    K, n_prim, U = C.shape
    out = np.zeros((K, n_prim))
    for k in range(K):
        r, c = linear_sum_assignment(-C[k])
        out[k, r] = C[k, r, c]
    return out


def basin_cell(target, W: int, L: int, cfg: BasinConfig, judge: str | None = None) -> dict:
    """Train K masked networks of width W, depth L on a planted target; one result row. `judge`:
    the EMC2 judge's name when `cfg.use_emc2` (None: `BASIN_JUDGE`)."""
    from .data.targets import get_target
    from .nets import CoordMLP
    from .train import TrainConfig, train

    if isinstance(target, str):
        target = get_target(target)
    if not hasattr(target, "primitive_maps"):
        raise RhoError(f"{getattr(target, 'spec', target)}: the basin model needs a planted target (planted:SEED[:…])")
    K = cfg.population
    s = cell_seed(cfg.seed, W, L, 0)
    g = generator(s)
    arch = _arch(W, L, cfg.activations)
    dims = [4] + [W] * L + [1]
    masks = [
        (torch.rand(K, fi, fo, generator=g) < cfg.p).float() if i < L else torch.ones(K, fi, fo)
        for i, (fi, fo) in enumerate(zip(dims[:-1], dims[1:]))
    ]
    net = CoordMLP(arch, head="grey", population=K, seed=s, masks=masks)
    res = train(
        net,
        target.image(cfg.res),
        TrainConfig(steps=cfg.steps, lr=cfg.lr, device=cfg.device, log_every=max(cfg.steps, 1), path=cfg.train_path),
    )
    net = res.net
    loss = res.final_loss
    sol = loss <= cfg.loss_tol
    prims = target.primitive_maps(cfg.res)  # name → (res, res), the output node included
    with torch.no_grad():
        feats = [f.cpu() for f in net.features(cfg.res)]
    A = assigned_correlations(primitive_correlations(feats, prims))  # (K, n_prim)
    comp = sol & (A.min(axis=1) >= cfg.threshold)
    emc2_auc = None
    if cfg.use_emc2:
        emc2_auc = _emc2_aucs(net, np.nonzero(comp)[0], judge, cfg, getattr(target, "spec", "target"))
        comp = comp & np.array([a is not None and a >= cfg.emc2_threshold for a in emc2_auc])
    c = Counts(K, int(sol.sum()), int(comp.sum()))
    r = row(None, W, L, c, SamplerConfig(confidence=cfg.confidence, interval=cfg.interval))
    r.update(
        final_loss=loss.tolist(),
        primitive_corr=A.tolist(),
        emc2_auc=emc2_auc,
        criterion="correlation+emc2" if cfg.use_emc2 else "correlation",
    )
    return r


# The basin criterion's EMC2 judge when none is named: "calibrated" (similarity to the solution's own
# render, per-label thresholds of the first verdict set). The anchored judge has no verdicts on
# planted targets; stored basin runs (results/reference/rho_basin) name no judge and mean this one.
BASIN_JUDGE = "calibrated"


def _emc2_aucs(net, members, judge, cfg: BasinConfig, target_spec: str = "target") -> list:
    """Normalised EMC2 AUC of the chosen members (None for the others), each scored by
    `volratio.emc2.score_network` (the one EMC2 path) on its own unperturbed image with the label
    "target": `judge` is a `volratio.judges.make_judge` name (None: `BASIN_JUDGE`; "ssim" is
    calibrated per member, seeded by `cfg.seed`)."""
    from . import emc2

    out = [None] * net.population
    for k in members:
        ec = emc2.EMC2Config.quick(
            member=int(k), res=cfg.res, device=cfg.device, max_params=cfg.emc2_params, seed=cfg.seed
        )
        res = emc2.score_network(net, target_spec, ec, judge or BASIN_JUDGE, label="target", calibration_seed=cfg.seed)
        out[int(k)] = res.auc
    return out


def basin_grid(target, Ws, Ls, cfg: BasinConfig = BasinConfig(), judge: str | None = None) -> list[dict]:
    """`basin_cell` over a (W, L) grid."""
    from .data.targets import get_target

    t = get_target(target) if isinstance(target, str) else target
    return [basin_cell(t, W, L, cfg, judge) for L in Ls for W in Ws]


def basin_table(rows: list[dict], loss_tol: float, threshold: float):
    """A basin grid as a table: per (W, L) the networks trained (`samples`), the solutions, those
    that also pass the correlation criterion alone (`corr-only`: MSE ≤ `loss_tol` and every
    primitive on a unit with |corr| ≥ `threshold`), the compositional ones (the row's criterion)
    and ρ with its interval."""
    import pandas as pd

    def corr_only(r):
        return sum(
            1 for loss, a in zip(r["final_loss"], r["primitive_corr"]) if loss <= loss_tol and min(a) >= threshold
        )

    df = pd.DataFrame(rows)
    df["corr-only"] = [int(corr_only(r)) for r in rows]
    df["rho (95% CI)"] = ["—" if r["rho"] is None else f"{r['rho']:.2f} [{r['lo']:.2f}, {r['hi']:.2f}]" for r in rows]
    return df[["W", "L", "samples", "solutions", "corr-only", "compositional", "rho (95% CI)"]]


def basin_checks(rows: list[dict], depth: int, w_min: int) -> list[tuple[str, bool, str]]:
    """The two statements the volume-ratio chapter tests on a basin grid of a planted target with
    true depth `depth` (L*) and width `w_min`, each as (statement, holds, numbers): no network
    shallower than L* is compositional, and every wider cell at L* has ρ significantly below
    ρ(W_min, L*) (its interval entirely under the peak's)."""
    cell = {(r["W"], r["L"]): r for r in rows}
    if (w_min, depth) not in cell:
        raise RhoError(f"the basin grid has no cell (W_min, L*) = ({w_min}, {depth}); add W = {w_min} and L = {depth}")
    shallow = [r for r in rows if r["L"] < depth]
    checks = [
        (
            "ρ = 0 below L*",
            all(r["compositional"] == 0 for r in shallow),
            f"{sum(r['solutions'] for r in shallow)} shallow solutions, "
            f"{sum(r['compositional'] for r in shallow)} compositional",
        )
    ]
    peak = cell[(w_min, depth)]
    wide = [cell[(W, depth)] for W in sorted({W for W, L in cell if L == depth}) if W > w_min]

    def show(r):
        return "no solutions" if r["rho"] is None else f"{r['rho']:.2f} [{r['lo']:.2f}, {r['hi']:.2f}]"

    below = peak["rho"] is not None and all(r["rho"] is not None and r["hi"] < peak["lo"] for r in wide)
    checks.append(
        (
            "ρ decays with W at L* (every wider cell significantly below the peak)",
            bool(wide) and below,
            f"ρ(W_min, L*) = {show(peak)}; wider at L*: " + ", ".join(f"W={r['W']}: {show(r)}" for r in wide),
        )
    )
    return checks
