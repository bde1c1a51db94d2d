"""Run functions for sweeps: each is `run(config: dict) -> dict`, named in a spec as `"volratio.runs:NAME"`.

A run function reads everything it needs from its config (which always holds `"seed"`), seeds
every random draw from it, and returns a flat dict: numbers and strings are metrics (columns of the
results table); arrays and `CoordMLP`s are stored as artifacts (see `volratio.sweep.execute`). It
must not depend on anything else — not the time, not the machine, not global random state — so that
the store's content hash of the config names its result.

- `train`: train a `CoordMLP` on a target with `volratio.train` (the book's basic experiment).
- `toy`: a pure-numpy least-squares descent that takes milliseconds; checks that a cluster is set
  up right (`volratio sweep` with `run = "volratio.runs:toy"`) without torch on the workers.

Used by `examples/sweeps/*.toml` and the chapter "Rerunning at scale on a cluster".
"""

from __future__ import annotations

import dataclasses

import numpy as np


def train(config: dict) -> dict:
    """Train a population of coordinate MLPs on a target; return losses, size and artifacts.

    Config entries (defaults in brackets):
    - `target` ["planted:0"]: a `volratio.targets.get_target` spec; `res` [32]: training resolution;
    - `arch` [none]: an arch string "L;act:n,…"; or else `depth` [3], `width` [8], `activation`
      ["gaussian"] for a uniform one;
    - `head` [the target's]: "hsv", "rgb" or "grey"; `population` [1]: K networks trained at once;
    - `seed`: seeds the initialisation (training itself is full-batch and deterministic);
    - any field of `volratio.train.TrainConfig` (`steps`, `optimizer`, `lr`, `grad_norm`,
      `device`, …) — unknown entries are an error, so a typo never runs silently;
    - `artifacts` [["net", "image", "losses"]]: which artifacts to return.

    Metrics: `final_loss` and `best_loss` (mean over the population), `final_loss_min` (best
    network), `n_params` (non-zero weights per network), `depth`, `width`, `steps`, `device`
    (where it trained: "cpu" or "cuda"). Artifacts: `net` (the trained population), `image`
    (its render, `(K, res, res, 3)`), `losses` (`(steps + 1, K)` loss curve).
    """
    from .device import resolve_device
    from .nets import Arch, CoordMLP
    from .targets import get_target
    from .train import TrainConfig
    from .train import train as train_net

    cfg = dict(config)
    seed = int(cfg.pop("seed"))
    target = get_target(cfg.pop("target", "planted:0"))
    res = int(cfg.pop("res", 32))
    if "arch" in cfg:
        arch = Arch.parse(cfg.pop("arch"))
        given = sorted({"depth", "width", "activation"} & set(cfg))
        if given:
            raise ValueError(f"config gives both `arch` and {given}; give one or the other")
    else:
        arch = Arch.uniform(int(cfg.pop("depth", 3)), int(cfg.pop("width", 8)), cfg.pop("activation", "gaussian"))
    head = cfg.pop("head", getattr(target, "head", "hsv"))
    population = int(cfg.pop("population", 1))
    wanted = cfg.pop("artifacts", ["net", "image", "losses"])
    fields = {f.name for f in dataclasses.fields(TrainConfig)} - {"progress"}
    unknown = set(cfg) - fields
    if unknown:
        raise ValueError(f"unknown config entries {sorted(unknown)}; a train run takes target, res, arch or "
                         f"depth/width/activation, head, population, artifacts and {sorted(fields)}")
    tc = TrainConfig(**cfg)  # progress bars stay off on workers
    net = CoordMLP(arch, head=head, population=population, seed=seed)
    result = train_net(net, target.image(res), tc)
    losses = np.asarray(result.losses, dtype=np.float64)  # (n_logged, K)
    final = losses[-1]  # (K,)
    out = {
        "final_loss": float(final.mean()),
        "final_loss_min": float(final.min()),
        "best_loss": float(losses.min(axis=0).mean()),
        "n_params": int(sum(result.net.nonzero()) // population),
        "depth": arch.depth,
        "width": arch.width,
        "steps": int(result.steps[-1]),
        # the device that trained it: with device="auto" the key does not say, and CPU and CUDA
        # results differ in the last bits (and, through chaotic training, sometimes more)
        "device": resolve_device(tc.device).type,
    }
    if "net" in wanted:
        out["net"] = result.net.to("cpu")
    if "image" in wanted:
        out["image"] = result.net.render(res).detach().cpu().numpy()  # (K, res, res, 3)
    if "losses" in wanted:
        out["losses"] = losses
    return out


def toy(config: dict) -> dict:
    """Gradient descent on a random least-squares problem, in numpy (milliseconds).

    Config: `seed`; `n` [32] unknowns; `steps` [200]; `lr` [0.1]. Metrics: `loss` (final),
    `loss0` (initial); artifact `x` (the solution).
    """
    rng = np.random.default_rng(int(config["seed"]))
    n, steps, lr = int(config.get("n", 32)), int(config.get("steps", 200)), float(config.get("lr", 0.1))
    a = rng.standard_normal((2 * n, n)) / np.sqrt(2 * n)  # (2n, n)
    b = rng.standard_normal(2 * n)  # (2n,)
    x = np.zeros(n)
    loss0 = float(np.mean((a @ x - b) ** 2))
    for _ in range(steps):
        x -= lr * 2 * a.T @ (a @ x - b) / len(b)
    return {"loss": float(np.mean((a @ x - b) ** 2)), "loss0": loss0, "x": x}
