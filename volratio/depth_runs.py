"""Run functions of the depth and optimizer sweeps, for `volratio.sweep` (`"volratio.depth_runs:NAME"`).

- `depth_point`: one SP network on a target at one depth and seed — dense training, SP
  (`volratio.prune.sp`), then the EMC2 score (`volratio.emc2.score`) under the default offline judge
  (SSIM, calibrated per network against its own unperturbed image, `volratio.judges.calibrate`).
- `optimizer_point`: the same pipeline with a chosen optimizer (adam | muon | sgd), plus the
  sharpness (top Hessian eigenvalue, `volratio.flatness`).

Each reads everything from its config, seeds every draw from `config["seed"]` and returns flat
metrics (see `volratio.runs` for the contract). The judge's identity-destroying images (other
targets, random CPPNs, noise) depend only on the resolution and are computed once per process.

Chapters: "Depth: a narrow, target-dependent regime", "Optimization: Adam, Muon, SGD",
"Unknown targets".
"""

from __future__ import annotations

import functools

import numpy as np

DEFAULTS = {
    "width": 8, "activation": "gaussian", "res": 16, "steps": 120, "lr": 0.01, "optimizer": "adam",
    "tau": 0.9, "sp_rounds": 2, "retrain_steps": 30, "deltas": [-1.0, -0.5, 0.5, 1.0], "max_params": 20,
    "judge": "ssim", "device": "cpu", "members": 1, "muon_lr": 0.02,
}


@functools.lru_cache(maxsize=8)
def _negatives(res: int) -> dict:
    from . import judges

    return {**judges.other_target_images(res), **judges.random_cppn_images(res, seed=0), **judges.noise_images(res, seed=0)}


def judge_for(reference, target_spec: str, res: int, name: str = "ssim"):
    """The judge of one network: SSIM calibrated on `reference` (its unperturbed image); the
    target itself is left out of the identity-destroying set."""
    from . import judges

    if name != "ssim":
        from .commands.emc2 import make_judge

        return make_judge(name, reference, target_spec)
    neg = {k: v for k, v in _negatives(int(res)).items() if k != target_spec}
    cal = judges.calibrate(reference, negatives=neg)
    return judges.SSIMJudge(reference, cal.threshold, cal)


def _config(config: dict, extra: tuple = ()) -> dict:
    cfg = {**DEFAULTS, **config}
    known = set(DEFAULTS) | {"seed", "target", "depth"} | set(extra)
    unknown = set(cfg) - known
    if unknown:
        raise ValueError(f"unknown config entries {sorted(unknown)}; known: {sorted(known)}")
    return cfg


def sp_network(cfg: dict):
    """Train a population of `members` dense networks (independent initialisations drawn from
    `seed`) and prune each with SP; returns `(net, target, image, dense_loss (K,), sp_result)`."""
    from .nets import Arch, CoordMLP
    from .prune import SPConfig, sp
    from .targets import get_target
    from .train import TrainConfig, train

    target = get_target(cfg["target"])
    res = int(cfg["res"])
    img = target.image(res)  # (res, res, 3)
    net = CoordMLP(Arch.uniform(int(cfg["depth"]), int(cfg["width"]), cfg["activation"]),
                   head=getattr(target, "head", "hsv"), population=int(cfg["members"]), seed=int(cfg["seed"]))
    tc = TrainConfig(steps=int(cfg["steps"]), optimizer=cfg["optimizer"], lr=float(cfg["lr"]),
                     muon_lr=float(cfg["muon_lr"]), device=cfg["device"])
    dense = train(net, img, tc).final_loss
    spc = SPConfig(tau=float(cfg["tau"]), rounds=int(cfg["sp_rounds"]), retrain_steps=int(cfg["retrain_steps"]),
                   seed=int(cfg["seed"]), train=tc)
    pr = sp(net, img, spc) if int(cfg["sp_rounds"]) > 0 else None
    return net, target, img, np.asarray(dense, dtype=np.float64), pr


def emc2_score(net, target_spec: str, cfg: dict, member: int = 0):
    """The EMC2 result of one member of `net` under the config's judge."""
    import torch

    from . import emc2

    res = int(cfg["res"])
    with torch.no_grad():
        ref = net.render(res)[member].detach().cpu().double()  # (res, res, 3)
    judge = judge_for(ref, target_spec, res, cfg["judge"])
    ec = emc2.EMC2Config(deltas=tuple(float(d) for d in cfg["deltas"]), res=res, max_params=cfg["max_params"],
                         seed=int(cfg["seed"]), member=member, device=cfg["device"], dtype="float64")
    return emc2.score(net, judge, target_spec, ec)


def depth_point(config: dict) -> dict:
    """SP networks at one depth: `members` of them (default 1) trained together as one population
    from `seed`. Config: `target`, `depth`, `seed` and the entries of `DEFAULTS`
    (`volratio.depth.DepthSweepConfig` documents them). Metrics, one list entry per member:
    `score` (EMC2 AUC), `scores` (S per δ), `loss` (MSE after SP), `dense_loss`, `nonzero`; and
    `live_units` (first member), `judge`, `ratio` (the target's PNG compression ratio at `res`).
    Artifact: `net` (the population)."""
    cfg = _config(config, ("keep_net",))
    net, target, img, dense_loss, pr = sp_network(cfg)
    loss = pr.final_loss if pr is not None else dense_loss
    results = [emc2_score(net, cfg["target"], cfg, k) for k in range(net.population)]
    from .depth import png_ratio

    out = {
        "score": [float(r.auc) for r in results], "scores": [[float(s) for s in r.scores] for r in results],
        "loss": [float(x) for x in loss], "dense_loss": [float(x) for x in dense_loss],
        "nonzero": [int(n) for n in net.nonzero()], "live_units": [int(u) for u in net.live_units()[0]],
        "judge": results[0].judge, "ratio": float(png_ratio(target, int(cfg["res"])).ratio),
    }
    if cfg.get("keep_net", True):
        out["net"] = net.to("cpu")
    return out


def optimizer_point(config: dict) -> dict:
    """`depth_point` with the config's `optimizer` (adam | muon | sgd) and, in addition, the
    sharpness: top Hessian eigenvalue of the final MSE (`volratio.flatness.top_eigenvalue`).
    Extra config: `hessian_iters` [30]. Muon uses `muon_lr`/`adamw_lr` of `TrainConfig` defaults."""
    from .flatness import top_eigenvalue

    cfg = _config(config, ("hessian_iters", "keep_net"))
    if int(cfg["members"]) != 1:
        raise ValueError("optimizer_point trains one network per run (members = 1); use more seeds")
    net, target, img, dense_loss, pr = sp_network(cfg)
    loss = float(pr.final_loss[0]) if pr is not None else float(dense_loss[0])
    res = emc2_score(net, cfg["target"], cfg)
    eig = top_eigenvalue(net, img, iters=int(cfg.get("hessian_iters", 30)), seed=int(cfg["seed"]))
    out = {
        "score": float(res.auc), "scores": [float(s) for s in res.scores], "loss": loss,
        "dense_loss": float(dense_loss[0]), "nonzero": int(net.nonzero()[0]), "sharpness": float(eig.value), "sharpness_iters": int(eig.iters),
        "judge": res.judge,
    }
    if cfg.get("keep_net", False):
        out["net"] = net.to("cpu")
    return out


def curve_array(values) -> np.ndarray:
    """Helper for chapters: a list-valued metric column → `(n_rows, n)` array."""
    return np.asarray([list(v) for v in values], dtype=np.float64)
