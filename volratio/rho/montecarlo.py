"""Monte Carlo estimation of one ρ(W, L) cell with either engine, and its stopping rules.

Two engines compute each sampled network's truth tables on all 2ⁿ inputs (n ≤ 10):
`engine="bits"` (the default; `volratio.rho.bitslice`) packs every unit's table into uint64 words
and evaluates ternary units by bit-sliced popcount, numpy only, on CPU, in chunks with their own
random streams (`SeedSequence([seed, W, L]).spawn`), optionally in worker processes;
`engine="float"` (`volratio.rho.sampler`) uses batched matmuls (torch, CUDA if available) and draws
from a torch generator per (seed, W, L, batch). They sample the same distribution and give
identical tables and verdicts on the same networks (tests/test_bitslice.py); their random streams
differ, so the counts for a seed differ between engines. Only solutions reach the compositional
check (float, batched). `estimate` can stop a cell once ρ's relative interval width reaches a
target or a time budget runs out.

Chapter: "The volume-ratio argument" (book/volume_ratio.md).
"""

from __future__ import annotations

import multiprocessing
import sys
import time

import numpy as np
import torch
from tqdm import tqdm

from ..util.device import generator
from . import bitslice as bs
from .boolean import BooleanTarget
from .intervals import Counts, _rel_width
from .sampler import (
    Nets,
    RhoError,
    SamplerConfig,
    _compositional,
    cell_seed,
    classify,
    inputs,
    layer_dims,
    n_params,
    sample_networks,
)

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
