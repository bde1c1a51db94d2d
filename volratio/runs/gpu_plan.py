"""The full plan on one GPU: the GPU seconds its piloted runs took, and what the plan would take.

`benchmarks/gpu_pilot.py` runs, on a GPU, the first runs of `examples/sweeps/full.toml`'s chunks
`emc2` and `emc2_dense` (`volratio reference run … --device cuda`, stored under `results/full/`, each
run's GPU seconds in its chunk's manifest: its wall time with the GPU held) and times the training
step of the `sparse_regime` full preset (`time_training_steps`, stored as `sparse_regime_steps.json`).
From those files alone:

- `pilot_runs(root)` — one row per stored GPU run: chunk, what it scored, images, GPU seconds.
- `projection(plan, root)` — one row per chunk of the plan: its runs, how many were piloted, their GPU
  seconds, and the chunk's projected GPU hours, each by the rule its row names:
  - `emc2`: the piloted runs as measured; every other run at the piloted runs' GPU seconds per image
    (perturbed images: non-zero weights × δ), which its network's non-zero count sets;
  - `emc2_dense`: every run at the mean GPU seconds of its piloted runs (each run trains and scores
    the same networks, under one judge);
  - `sparse_regime`: per case, its training steps at most — the dense steps, every SP round's
    retraining, and at each checkpoint every baseline's fine-tuning and the scratch network, each
    budget at most SP's whole retraining — times the measured step time (an upper bound: SP stops
    early, and the scratch networks are narrower);
  - every other chunk: not projected (no run of it was piloted), its run count given.

`python -m volratio.runs.gpu_plan --device cuda --json FILE` times the step (what the pilot runs).
Chapter: "Reproducibility" (book/reproducibility.md).
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import replace
from pathlib import Path

import pandas as pd
import torch

from ..data.specs import load_network
from ..data.targets import get_target
from ..emc2 import nonzero_params
from ..nets import CoordMLP
from ..train import TrainConfig, train
from .reference import load_plan
from .registry import get_run, make_config
from .stored import chunks, manifest, records

REPO = Path(__file__).resolve().parents[2]
FULL_ROOT = REPO / "results" / "full"  # where the pilot's runs are stored
FULL_PLAN = REPO / "examples" / "sweeps" / "full.toml"
STEPS_JSON = "sparse_regime_steps.json"  # under the results root: the measured training step of the full preset
PROJECTED = ("emc2", "emc2_dense", "sparse_regime")  # the chunks a pilot measures


def time_training_steps(device: str = "cuda", steps: int = 300, **over) -> dict:
    """Seconds per Adam step of the `sparse_regime` full preset's population (its members, width,
    depth and resolution; `over` changes any of them, for a small check), on `device` with the
    preset's training path: the mean over `steps` steps after 20 untimed ones."""
    cfg = make_config("sparse_regime", "full", over)
    image = get_target(cfg.target).image(cfg.res)
    images = torch.stack([image] * cfg.members)
    net = CoordMLP(f"{cfg.depth};{cfg.activation}:{cfg.width}", head="hsv", population=cfg.members, seed=cfg.seed)
    tc = TrainConfig(lr=cfg.lr, device=device, path=cfg.train_path)
    train(net, images, replace(tc, steps=20))
    sync = torch.cuda.synchronize if net.weights[0].is_cuda else (lambda: None)
    sync()
    t0 = time.perf_counter()
    r = train(net, images, replace(tc, steps=steps, log_every=steps))
    sync()
    seconds = time.perf_counter() - t0
    return {
        "device": str(net.weights[0].device.type),
        "gpu": torch.cuda.get_device_name(0) if net.weights[0].is_cuda else None,
        "members": cfg.members,
        "width": cfg.width,
        "depth": cfg.depth,
        "res": cfg.res,
        "path": r.path,
        "steps": steps,
        "seconds": round(seconds, 3),
        "seconds_per_step": seconds / steps,
    }


def gpu_step(root: Path) -> dict | None:
    """The training step of the sparse_regime full preset measured on a GPU and stored under `root`
    (`STEPS_JSON`), or None (none stored, or measured on another device: a check of the command)."""
    path = Path(root) / STEPS_JSON
    step = json.loads(path.read_text()) if path.is_file() else None
    return step if step is not None and step.get("device") == "cuda" else None


def _gpu_seconds(name: str, root: Path) -> dict:
    return {k: r["gpu_s"] for k, r in manifest(name, root)["runs"].items() if "gpu_s" in r}


def _images(config: dict) -> int:
    """The perturbed images an `emc2_point` run of this complete config scores: its network's non-zero
    weights (at most `max_params`) × its δ."""
    n = len(nonzero_params(load_network(f"{config['network']}:{config['target']}")))
    if config.get("max_params") is not None:
        n = min(n, int(config["max_params"]))
    return n * len(config["deltas"])


def pilot_runs(root: "str | Path") -> pd.DataFrame:
    """One row per run stored on a GPU under `root`: `chunk`, `what` (network and target, or seed),
    `judge`, `images` (perturbed images scored: non-zero weights × δ; summed over the run's networks),
    `gpu_s`."""
    root = Path(root)
    rows = []
    for name in chunks(root):
        gpu = _gpu_seconds(name, root)
        for r in records(name, root):
            if r["key"] not in gpu:
                continue
            c, m = r["config"], r["metrics"]
            if "rows" in m:  # emc2_dense: one row per network × target
                what = f"seed {c['seed']}: dense and SP networks, {len(m['rows']) // 2} targets"
                images = sum(int(x["n_params"]) * len(x["deltas"]) for x in m["rows"])
                judge = m["rows"][0]["judge"]
            else:
                what = f"{c.get('network')}:{c.get('target')}"
                images = int(m["n_params"]) * len(m["deltas"])
                judge = c.get("judge")
            rows.append({"chunk": name, "what": what, "judge": judge, "res": c.get("res"), "images": images,
                         "gpu_s": float(gpu[r["key"]])})  # fmt: skip
    return pd.DataFrame(rows, columns=["chunk", "what", "judge", "res", "images", "gpu_s"])


def _sparse_regime_steps(sweep) -> list[int]:
    """Per case of the chunk, the most training steps one full sparse_regime run takes (see the module)."""
    out = []
    entry = get_run(sweep.run)
    for config in sweep.configs():
        cfg = entry.parse(dict(config))
        sp = cfg.sp.rounds * cfg.sp.retrain_steps
        per_checkpoint = len(cfg.methods) * sp + (cfg.dense_steps + sp if cfg.scratch else 0)
        out.append(cfg.dense_steps + sp + (len(cfg.checkpoints) + 1) * per_checkpoint)
    return out


def projection(plan_path: "str | Path", root: "str | Path") -> pd.DataFrame:
    """One row per chunk of the plan: `chunk`, `runs`, `piloted` (runs stored on a GPU), `piloted_gpu_s`,
    `projected_gpu_h` (NaN: not projected) and `rule` (how; see the module)."""
    plan, root = load_plan(plan_path), Path(root)
    pilot = pilot_runs(root) if root.is_dir() else pd.DataFrame(columns=["chunk", "what", "judge", "images", "gpu_s"])
    step = gpu_step(root)
    rows = []
    for name, sweep in plan.items():
        configs = sweep.configs()
        mine = pilot[pilot["chunk"] == name]
        row = {"chunk": name, "runs": len(configs), "piloted": len(mine), "piloted_gpu_s": float(mine["gpu_s"].sum())}
        hours, rule = float("nan"), "not projected: no run piloted"
        if name == "emc2" and len(mine):
            per_image = mine["gpu_s"].sum() / mine["images"].sum()
            done = {(w.split(":")[0], w.split(":")[1], j) for w, j in zip(mine["what"], mine["judge"])}
            keyed = [get_run(sweep.run).keyed(c) for c in configs]
            rest = [c for c in keyed if (c["network"], c["target"], c["judge"]) not in done]
            rest_s = sum(_images(c) * per_image for c in rest)
            hours = (mine["gpu_s"].sum() + rest_s) / 3600
            rule = f"piloted runs as measured, the other {len(rest)} at {per_image * 1e3:.3g} GPU-ms per image"
        elif name == "emc2_dense" and len(mine):
            hours = len(configs) * mine["gpu_s"].mean() / 3600
            rule = f"every run at the piloted runs' mean, {mine['gpu_s'].mean():.0f} GPU-s"
        elif name == "sparse_regime" and step is not None:
            steps = _sparse_regime_steps(sweep)
            hours = sum(steps) * step["seconds_per_step"] / 3600
            rule = (f"at most {max(steps):,} training steps a run × {step['seconds_per_step'] * 1e3:.2f} ms a step "
                    f"(measured, {step['members']} networks of width {step['width']} at {step['res']}²)")  # fmt: skip
        rows.append({**row, "projected_gpu_h": hours, "rule": rule})
    return pd.DataFrame(rows)


def report(root: "str | Path" = FULL_ROOT, plan: "str | Path" = FULL_PLAN) -> str:
    """What the chapter prints: the GPU each piloted run ran on, its GPU seconds, and the projection
    of every chunk (`projection`), with the projected chunks' total; or, when no run under `root` ran
    on a GPU, one line saying so and how to run the pilot."""
    root = Path(root)
    pilot = pilot_runs(root) if root.is_dir() else None
    step = gpu_step(root)
    if (pilot is None or pilot.empty) and step is None:
        shown = root.relative_to(REPO) if root.is_relative_to(REPO) else root
        return (
            f"no GPU pilot is stored under {shown}: on a CUDA machine, "
            "`PYTHONPATH=. python benchmarks/gpu_pilot.py --log-dir LOGS` runs and stores it"
        )
    gpus = {s.get("gpu") for s in manifest_sessions(root)} | ({step.get("gpu")} if step else set())
    lines = [f"GPU: {', '.join(sorted(g for g in gpus if g))}", "", "piloted runs (GPU seconds each):"]
    lines.append(pilot.to_string(index=False) if pilot is not None and len(pilot) else "(none)")
    if step is not None:
        lines += ["", f"sparse_regime full preset: {step['seconds_per_step'] * 1e3:.2f} ms a training step "
                  f"({step['members']} networks, width {step['width']}, depth {step['depth']}, {step['res']}², "
                  f"{step['path']} path, mean of {step['steps']} steps)"]  # fmt: skip
    proj = projection(plan, root)
    done = proj[proj["projected_gpu_h"].notna()]
    lines += ["", "projection of the full plan (GPU hours):",
              done[["chunk", "runs", "piloted", "projected_gpu_h", "rule"]].to_string(index=False),
              f"projected chunks together: {done['projected_gpu_h'].sum():.1f} GPU hours",
              f"not projected (no run piloted): {', '.join(proj.loc[proj['projected_gpu_h'].isna(), 'chunk'])}"]  # fmt: skip
    return "\n".join(lines)


def manifest_sessions(root: Path) -> list[dict]:
    """Every session of every chunk under `root`, with `gpu`: the CUDA device of the session's machine
    (from its recorded `device`, "cuda (NAME)"), or None."""
    out = []
    for name in chunks(root):
        for s in manifest(name, root).get("sessions", []):
            dev = str(s.get("device", ""))
            out.append({**s, "gpu": dev[6:-1] if dev.startswith("cuda (") else None})
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="time the training step of the sparse_regime full preset")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--json", required=True, help="where to write the measurement")
    ap.add_argument("--width", type=int, help="a smaller width (a check of this command)")
    ap.add_argument("--res", type=int, help="a smaller resolution (a check of this command)")
    a = ap.parse_args(argv)
    over = {k: v for k, v in (("width", a.width), ("res", a.res)) if v is not None}
    out = time_training_steps(a.device, a.steps, **over)
    Path(a.json).parent.mkdir(parents=True, exist_ok=True)
    Path(a.json).write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
