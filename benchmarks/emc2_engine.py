"""EMC2 perturbation engine vs re-rendering each perturbed network from scratch.

On the FER paper's dense SGD skull (`fer-sgd:skull`) and on the layerized Picbreeder skull
(`picbreeder:skull`), at 64×64, single-threaded, one run measures:

- perturbed images per second of `volratio.emc2.PerturbationEngine` — the fused C++ kernel
  (`--engine fused`, `volratio.emc2.fused`; the default `auto` uses it where a compiler builds it
  and says which it used) and the torch path (`engine="torch"`) — and of the way one would write
  it without the library (`naive_render`: copy the network, move one weight, render from
  scratch), on the same perturbations; the engine's images are checked against the naive ones;
- the engine's achieved floating-point rate (its multiply-adds, 2 FLOP each, over its whole run
  time: base pass, activations and colour conversion included) against two rates measured in the
  same run: `torch.matmul` on the torch engine's own shapes (`(W, W) @ (B, W, P)`, one dense layer
  in its units-major layout) and a single-thread 2048² sgemm (`roofline.py`), the honest roofline.

- the *whole scoring* (`volratio.emc2.score`: the engine's renders and the label-anchored judge on
  every image, what `volratio emc2` runs) on the dense network's perturbations, on `--device` and,
  when that is a GPU, on the host CPU with all its cores (the engine `auto` picks there), the same
  perturbations: images per second of each and their ratio (`--no-whole` leaves it out).

Every rate is the best of `--repeats` rounds, each round timing every method and the sgemm once,
in CPU seconds of this single-threaded process on the CPU (wall time on CUDA): the machines are
shared and noisy, and the ratios of one run are the result. The last line is

    emc2: … images/s  …x naive (dense)  …x naive (picbreeder)  roofline …% (sgemm)  [CPU model, kernel variant]

and, with the whole scoring on a GPU, one more:

    scoring: … images/s on cuda (engine + judge)  … images/s on the host CPU (N threads)  …x  engine at …% of the matmul rate

    python benchmarks/emc2_engine.py --quick     # under two minutes on 2 cores
    python benchmarks/emc2_engine.py             # every parameter, 8 δ (a few minutes)

`--quick` perturbs, on the dense network, every incoming weight of 8 randomly drawn units (the
same per-unit batches as the full run, fewer of them) and all 147 weights of the Picbreeder skull.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
import torch
from roofline import sgemm_gflops

from volratio import emc2
from volratio.data.specs import load_network
from volratio.train.fused_kernel import default_variant
from volratio.util.device import resolve_device
from volratio.util.machine import identity

# CPU: CPU seconds of this single-threaded process (other load on a shared machine moves them less
# than wall time; as benchmarks/training.py); CUDA: wall time
CLOCK = {False: time.process_time, True: time.perf_counter}


def unit_sample(params: np.ndarray, n_units: int | None, seed: int = 0) -> np.ndarray:
    """Every incoming weight of `n_units` target units drawn at random (seeded): a smaller workload
    with the same per-unit structure as perturbing every weight (None = all parameters)."""
    if n_units is None:
        return params
    units = np.unique(params[:, [0, 2]], axis=0)
    pick = units[np.random.default_rng(seed).choice(len(units), size=min(n_units, len(units)), replace=False)]
    keep = (params[:, None, [0, 2]] == pick[None]).all(-1).any(1)
    return params[keep]


def bench(spec: str, res: int, n_units: int | None, deltas, n_naive: int, device, dtype, memory_bytes, repeats: int,
          engine: str, sgemm: list):  # fmt: skip
    """Rates of the engine (`engine`), the torch engine and naive re-rendering on `spec`; appends one
    single-thread sgemm rate per round to `sgemm` (measured between the methods, under the same load)."""
    net = load_network(spec).to(dtype=dtype, device=device)
    params = unit_sample(emc2.nonzero_params(net), n_units, seed=0)
    P = np.repeat(params, len(deltas), axis=0)
    D = np.tile(np.asarray(deltas, float), len(params))
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    clock = CLOCK[device.type == "cuda"]

    def run(which):
        t0 = clock()
        eng = emc2.PerturbationEngine(net, res, device=device, dtype=dtype, memory_bytes=memory_bytes, engine=which)
        n = sum(len(idx) for idx, _img in eng.iter_images(P, D))
        sync()
        return clock() - t0, eng, n

    t_eng, t_torch, t_naive = float("inf"), float("inf"), float("inf")
    sub = np.linspace(0, len(P) - 1, min(n_naive, len(P))).astype(int)
    for _ in range(repeats):  # best of `repeats` rounds, each timing every method, against the machine's noise
        t, eng, n = run(engine)
        t_eng = min(t_eng, t)
        t, eng_torch, _ = run("torch")
        t_torch = min(t_torch, t)
        t0 = clock()  # naive: the same perturbations (an evenly spaced subset), copy → perturb → render
        ref = [emc2.naive_render(net, P[k], D[k], res) for k in sub]
        sync()
        t_naive = min(t_naive, (clock() - t0) / len(sub))
        sgemm.append(sgemm_gflops(clock=clock))
    eng_rate = n / t_eng
    check = eng.render(P[sub], D[sub])
    err = max(float((a.double() - b.double()).abs().max()) for a, b in zip(check, ref))
    return {
        "spec": spec,
        "n": n,
        "engine": eng.engine_used,
        "note": eng.engine_note,
        "engine_per_s": eng_rate,
        "torch_per_s": n / t_torch,
        "naive_per_s": 1.0 / t_naive,
        "speedup": eng_rate * t_naive,
        "engine_gflops": eng.flops / t_eng / 1e9,
        "torch_gflops": eng_torch.flops / t_torch / 1e9,
        "max_abs_diff": err,
        "width_kept": eng.width_kept,
        "width": net.width,
        "res": res,
        "batch": max(
            1, eng_torch.memory_bytes // (res * res * torch.finfo(dtype).bits // 8 * (4 * (net.width + 3) + 6))
        ),
    }


def scoring_rate(spec: str, res: int, n_units: int | None, deltas, device, dtype, engine: str, repeats: int) -> dict:
    """Images per second of the whole scoring (`emc2.score`: renders and the label-anchored judge) of
    `spec`'s perturbations (`unit_sample` of `n_units` units), best of `repeats` (wall time: on the
    CPU this runs on every thread, as `volratio emc2` does). The judge is built outside the timing."""
    net = load_network(spec)
    params = unit_sample(emc2.nonzero_params(net), n_units, seed=0)
    target = spec.split(":", 1)[1]
    cfg = emc2.EMC2Config(deltas=tuple(deltas), res=res, device=str(device), dtype=str(dtype).split(".")[-1],
                          engine=engine, max_params=None)  # fmt: skip
    judges = emc2.judges_for(net, ["anchored"], f"picbreeder:{target}", cfg)
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    best, auc = float("inf"), None
    for _ in range(repeats):
        t0 = time.perf_counter()
        (r,) = emc2.score(net, judges, target, cfg, params=params)
        sync()
        best = min(best, time.perf_counter() - t0)
        auc = r.auc
    return {"n": len(params) * len(deltas), "per_s": len(params) * len(deltas) / best, "seconds": best, "auc": auc}


def matmul_rate(batch: int, pixels: int, width: int, device, dtype, seconds: float = 1.0, repeats: int = 3) -> float:
    """Measured FLOP/s of `(W, W) @ (B, W, P)`: the engine's product on a dense layer (units-major)."""
    clock = CLOCK[device.type == "cuda"]
    x = torch.randn(batch, width, pixels, device=device, dtype=dtype)
    w = torch.randn(width, width, device=device, dtype=dtype)
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    for _ in range(3):
        torch.matmul(w, x)
    sync()
    best = 0.0
    for _ in range(repeats):  # best of `repeats` windows of `seconds`
        reps, t0 = 0, clock()
        while clock() - t0 < seconds:
            torch.matmul(w, x)
            reps += 1
        sync()
        best = max(best, 2.0 * batch * pixels * width * width * reps / (clock() - t0))
    return best


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument(
        "--quick", action="store_true", help="dense net: the incoming weights of 8 random units (Picbreeder: all); 4 δ"
    )
    ap.add_argument("--res", type=int, default=64)
    ap.add_argument("--device", default="auto")
    ap.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    ap.add_argument("--engine", default="auto", choices=["auto", "fused", "torch"], help="the engine measured")
    ap.add_argument(
        "--threads", type=int, default=1, help="torch CPU threads (shared machines: 1 is the stable choice)"
    )
    ap.add_argument(
        "--memory-mib", type=int, default=None, help="engine working-memory cap per batch (default: the engine's)"
    )
    ap.add_argument("--repeats", type=int, default=3, help="best of this many rounds of every method")
    ap.add_argument("--no-whole", action="store_true", help="leave out the whole scoring (engine + judge)")
    ap.add_argument(
        "--scoring-units",
        type=int,
        default=None,
        help="whole scoring: the incoming weights of this many random "
        "units of the dense network (default: as the engine's measurement)",
    )
    a = ap.parse_args(argv)
    torch.set_num_threads(a.threads)
    device, dtype = resolve_device(a.device), getattr(torch, a.dtype)
    deltas = (-1.0, -0.25, 0.25, 1.0) if a.quick else emc2.DEFAULT_DELTAS
    n_dense, n_naive = (8, 60) if a.quick else (None, 300)  # quick: 8 units' incoming weights of the dense net
    mem = None if a.memory_mib is None else a.memory_mib * 2**20
    print(
        f"device {device}, {a.dtype}, {a.threads} thread(s), res {a.res}, δ {list(deltas)}, "
        f"{'quick' if a.quick else 'full'} scale, engine {a.engine}"
    )
    rows, sgemm = [], []
    for spec, n_units in (("fer-sgd:skull", n_dense), ("picbreeder:skull", None)):
        r = bench(spec, a.res, n_units, deltas, n_naive, device, dtype, mem, a.repeats, a.engine, sgemm)
        rows.append(r)
        if r["note"]:
            print(r["note"])
        print(
            f"{spec:<18} {r['n']:>6} perturbations  {r['engine']} {r['engine_per_s']:9.1f}/s  "
            f"torch {r['torch_per_s']:8.1f}/s  naive {r['naive_per_s']:7.1f}/s  speed-up {r['speedup']:6.1f}x  "
            f"{r['engine']} {r['engine_gflops']:.2f} GFLOP/s  torch {r['torch_gflops']:.2f} GFLOP/s  "
            f"max |engine − naive| {r['max_abs_diff']:.1e}  units kept/layer {r['width_kept']}"
        )
    dense = rows[0]
    peak = matmul_rate(dense["batch"], a.res * a.res, dense["width"], device, dtype)
    gemm = max(sgemm)
    roof_mm = 100.0 * dense["engine_gflops"] * 1e9 / peak
    roof = 100.0 * dense["engine_gflops"] / gemm
    print(
        f"matmul ({dense['width']}, {dense['width']}) @ ({dense['batch']}, {dense['width']}, {a.res * a.res}): "
        f"{peak / 1e9:.2f} GFLOP/s; single-thread sgemm 2048²: {gemm:.2f} GFLOP/s; the dense engine "
        f"({dense['engine']}) reaches {roof_mm:.0f}% of the first, {roof:.0f}% of the sgemm"
    )
    print(
        f"emc2: {dense['engine_per_s']:.0f} images/s  {dense['speedup']:.1f}x naive (dense)  "
        f"{rows[1]['speedup']:.1f}x naive (picbreeder)  roofline {roof:.0f}% (sgemm)  "
        f"[{identity()['cpu_model']}, kernel {default_variant()}]"
    )
    if a.no_whole:
        return
    n_score = n_dense if a.scoring_units is None else a.scoring_units
    whole = scoring_rate("fer-sgd:skull", a.res, n_score, deltas, device, dtype, a.engine, a.repeats)
    line = f"scoring: {whole['per_s']:.0f} images/s on {device.type} (engine + judge, {whole['n']} images)"
    if device.type == "cuda":  # the same command on the host CPU, every core
        threads = torch.get_num_threads()
        torch.set_num_threads(os.cpu_count() or 1)
        host = scoring_rate("fer-sgd:skull", a.res, n_score, deltas, torch.device("cpu"), dtype, "auto", 1)
        torch.set_num_threads(threads)
        line += (
            f"  {host['per_s']:.0f} images/s on the host CPU ({os.cpu_count()} threads)  "
            f"{whole['per_s'] / host['per_s']:.1f}x  |ΔAUC| {abs(whole['auc'] - host['auc']):.1e}  "
            f"engine at {roof_mm:.0f}% of the matmul rate"
        )
    print(line)


if __name__ == "__main__":
    main()
