"""Full-batch training of coordinate-network populations.

Every network of the population sees every pixel at every step and has its own loss (mean squared
error on RGB in [0, 1]); the population loss is their sum, so gradients — and Adam's/AdamW's
per-element statistics — never mix networks. Optimizers:

- `adam`, `adamw`, `sgd` (with momentum): `torch.optim` on all kernels;
- `muon`: `torch.optim.Muon` on the hidden W×W matrices, one 2-D matrix per network (Muon accepts
  only 2-D parameters), AdamW (betas 0.9, 0.95) on the input and output kernels — the standard
  recipe.

`grad_norm=True` divides each network's flattened gradient by its L2 norm before the step, as the
FER paper's SGD baseline did. Masks are respected: masked weights are zero after every step (Muon's
orthogonalised update would otherwise fill them). A NaN/Inf loss stops training with
`TrainingDiverged`, which names the step and carries the last good weights (also restored into the
network). Same seed, same device (CPU) → bit-identical results.

`TrainConfig.path` chooses how each step's losses and gradients are computed: `"eager"` (autograd,
the default and the path of every stored reference run), `"fast"` (`volratio.train.fast`, a
hand-written forward/backward with buffers allocated once) or `"fused"` (`volratio.train.fused`, a
C++ kernel that runs tiles of pixels through all layers in cache; float32 on the CPU, compiled on
first use); `"auto"` is the fastest of the three for a float32 network on the CPU where the kernel
builds (a C++ compiler is present; timed once per machine and cached, `volratio.util.autopick`; under
`$VOLRATIO_AUTO=rule`, as in stored runs and tests, the fused kernel), and "fast" otherwise (CUDA,
float64, no compiler): the rule `resolve_path` states, as `device="auto"` is CUDA when present. The
path a run used is `TrainResult.path` and the `path` of the network's `provenance["trained"]`
(with `path_choice`, why, when "auto" chose it). All paths share the optimizer step, masks,
gradient normalisation and divergence handling; `benchmarks/training.py` measures them.

Chapters: all of Part I; `benchmarks/population.py` measures the population speed-up.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, replace
from numbers import Integral, Real
from pathlib import Path

import numpy as np
import torch
from torch import nn
from tqdm import tqdm  # plain text bar: tqdm.auto warns in kernels without ipywidgets

from ..data.targets import check_image
from ..errors import TrainingDiverged, VolratioError
from ..nets import CoordMLP, coords
from ..util import autopick, budget
from ..util.device import device_name, resolve_device
from ..util.limits import above, at_least, between, one_of, parsed_by
from ..util.presets import Presets
from . import fused_kernel
from .fast import FastStep
from .fused import FusedStep

OPTIMIZERS = ("adam", "adamw", "sgd", "muon")
PATHS = ("eager", "fast", "fused", "auto")  # how a step's losses and gradients are computed (TrainConfig.path)


@dataclass
class TrainConfig(Presets):
    steps: int = 2000  # full-batch optimizer steps
    optimizer: str = "adam"  # adam | adamw | sgd | muon
    lr: float = 3e-3  # Adam/AdamW/SGD learning rate (FER baseline: 3e-3); AdamW part of Muon uses adamw_lr
    muon_lr: float = 0.02  # Muon's learning rate on hidden matrices
    adamw_lr: float = 3e-4  # AdamW's learning rate on the input/output kernels when optimizer="muon"
    weight_decay: float = 0.0  # AdamW / Muon decoupled weight decay
    momentum: float = 0.9  # SGD momentum
    grad_norm: bool = False  # divide each network's gradient by its global L2 norm (FER baseline)
    log_every: int = 1  # record the loss every this many steps
    progress: bool = False  # show a tqdm progress bar
    device: str = "auto"  # "auto" = CUDA when available, else CPU
    # "eager": autograd through CoordMLP.forward (what every stored run was trained with);
    # "fast": volratio.train.fast's hand-written step (same optimizers, losses equal to rounding,
    # several times faster for populations). The experiments choose "fast" for new runs.
    # "fused": volratio.train.fused's C++ kernel (float32, CPU; losses equal to rounding).
    path: str = "eager"

    # allowed values, checked when a config is parsed (`volratio.util.limits`)
    LIMITS = {
        "steps": at_least(0), "optimizer": one_of(*OPTIMIZERS), "lr": above(0), "muon_lr": above(0),
        "adamw_lr": above(0), "weight_decay": at_least(0), "momentum": between(0, 1), "log_every": at_least(1),
        "path": one_of(*PATHS), "device": parsed_by(device_name),
    }  # fmt: skip

    def finetune(self, steps: int, lr_factor: float = 1.0) -> "TrainConfig":
        """This optimizer for `steps` steps of fine-tuning an already trained network, every learning
        rate (`lr`, `muon_lr`, `adamw_lr`) times `lr_factor`. Each call starts a fresh optimizer: Adam's
        first steps move every weight by about its learning rate whatever the gradient, so fine-tuning a
        converged network at the training rate first undoes part of its fit (SP's module docstring)."""
        if not (np.isfinite(lr_factor) and lr_factor > 0):
            raise ValueError(f"fine-tuning lr_factor = {lr_factor!r}: give a finite factor > 0")
        kw = {"steps": int(steps)}
        if lr_factor != 1.0:
            kw.update(lr=self.lr * lr_factor, muon_lr=self.muon_lr * lr_factor, adamw_lr=self.adamw_lr * lr_factor)
        return replace(self, **kw)

    QUICK = {"steps": 600}  # the book's default: a few hundred steps, minutes on a laptop
    FULL = {"steps": 100_000, "grad_norm": True}  # paper-sized: FER's SGD baseline, 100,000 full-image steps


@dataclass
class TrainResult:
    net: CoordMLP
    losses: np.ndarray  # (n_logged, K) per-network MSE
    steps: np.ndarray  # (n_logged,) the step of each logged loss
    config: dict = field(default_factory=dict)
    path: str = ""  # the path the steps ran on ("eager" | "fast" | "fused": what "auto" chose)

    @property
    def final_loss(self) -> np.ndarray:
        """(K,) the MSE of each network after the last step."""
        return self.losses[-1]


def mse_per_network(net: CoordMLP, grid: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """(K,) mean squared RGB error of each network; target `(P, 3)` or `(K, P, 3)`."""
    rgb = net.to_rgb(net(grid))  # (K, P, 3)
    return ((rgb - target) ** 2).mean(dim=(1, 2))


def _check_target(target: torch.Tensor, K: int) -> torch.Tensor:
    t = torch.as_tensor(target)
    if t.dim() == 4:
        if t.shape[0] != K:
            raise VolratioError(f"target has {t.shape[0]} images for a population of {K}; give 1 or {K}")
        for i in range(K):
            check_image(t[i], f"target image {i}")
        return t
    return check_image(t, "target image")


class _Optimizer:
    """One optimizer step for a population, whatever the method (see the module docstring)."""

    def __init__(self, net: CoordMLP, cfg: TrainConfig):
        if cfg.optimizer not in OPTIMIZERS:
            raise VolratioError(f"unknown optimizer {cfg.optimizer!r}; choose one of {', '.join(OPTIMIZERS)}")
        self.net, self.cfg = net, cfg
        params = list(net.weights)
        self.muon_views: list[tuple[nn.Parameter, int, nn.Parameter]] = []
        if cfg.optimizer == "adam":
            self.opts = [torch.optim.Adam(params, lr=cfg.lr)]
        elif cfg.optimizer == "adamw":
            self.opts = [torch.optim.AdamW(params, lr=cfg.lr, weight_decay=cfg.weight_decay)]
        elif cfg.optimizer == "sgd":
            self.opts = [torch.optim.SGD(params, lr=cfg.lr, momentum=cfg.momentum)]
        else:
            hidden = list(range(1, net.n_kernels - 1))
            if not hidden:
                raise VolratioError("Muon needs at least 2 hidden layers (a hidden W×W matrix); use adam for depth 1")
            # Muon takes 2-D parameters: give it one (W, W) view per network and hidden layer,
            # sharing storage with the (K, W, W) kernel, and copy gradient slices in before a step.
            for i in hidden:
                w = net.weights[i]
                for k in range(net.population):
                    self.muon_views.append((w, k, nn.Parameter(w.data[k])))
            self.opts = [
                torch.optim.Muon(
                    [v for _, _, v in self.muon_views],
                    lr=cfg.muon_lr,
                    weight_decay=cfg.weight_decay,
                    adjust_lr_fn="match_rms_adamw",
                ),
                torch.optim.AdamW(
                    [net.weights[0], net.weights[-1]],
                    lr=cfg.adamw_lr,
                    betas=(0.9, 0.95),
                    weight_decay=cfg.weight_decay,
                ),
            ]

    def zero_grad(self):
        for o in self.opts:
            o.zero_grad(set_to_none=True)

    def step(self):
        if self.cfg.grad_norm:
            _normalise_per_network(self.net)
        for w, k, v in self.muon_views:
            v.grad = w.grad[k]
        for o in self.opts:
            o.step()
        self.net.apply_masks_()


@torch.no_grad()
def _normalise_per_network(net: CoordMLP) -> None:
    grads = [w.grad for w in net.weights if w.grad is not None]
    sq = sum((g.reshape(g.shape[0], -1) ** 2).sum(1) for g in grads)  # (K,)
    scale = 1.0 / sq.sqrt().clamp_min(1e-12)
    for g in grads:
        g.mul_(scale.view(-1, 1, 1))


def _check_config(cfg: TrainConfig) -> None:
    """Refuse settings outside their domain before any work (a negative step count or a NaN
    learning rate would otherwise fail deep inside torch, or silently train nothing)."""
    if not (isinstance(cfg.steps, Integral) and cfg.steps >= 0):
        raise VolratioError(f"TrainConfig.steps must be an integer ≥ 0, got {cfg.steps!r}")
    if cfg.path not in PATHS:
        raise VolratioError(f"TrainConfig.path must be one of {', '.join(PATHS)}, got {cfg.path!r}")
    if not (isinstance(cfg.log_every, Integral) and cfg.log_every >= 1):
        raise VolratioError(f"TrainConfig.log_every must be a positive integer, got {cfg.log_every!r}")
    for name in ("lr", "muon_lr", "adamw_lr"):
        v = getattr(cfg, name)
        if not (isinstance(v, Real) and math.isfinite(v) and v > 0):
            raise VolratioError(f"TrainConfig.{name} must be a finite number > 0, got {v!r}")
    for name in ("weight_decay", "momentum"):
        v = getattr(cfg, name)
        if not (isinstance(v, Real) and math.isfinite(v) and v >= 0):
            raise VolratioError(f"TrainConfig.{name} must be a finite number ≥ 0, got {v!r}")


def resolve_path(path: str, net: CoordMLP) -> str:
    """The training path `path` means for `net` where it is; any path but "auto" is itself (so
    `path="fused"` without a compiler raises the kernel's `FusedKernelError`, naming the fix).
    "auto" is "fast" for a network that is not float32 on the CPU, or where the fused kernel does
    not build (`fused_kernel.unavailable`: no C++ compiler); else the fastest path on this machine
    (`_timed_path`: timed once, cached; under `$VOLRATIO_AUTO=rule`, "fused")."""
    return choose_path(path, net)[0]


def choose_path(path: str, net: CoordMLP) -> "tuple[str, autopick.Choice | None]":
    """`(resolve_path(path, net), the calibration's choice behind it, or None)`."""
    if path != "auto":
        return path, None
    w = net.weights[0]
    if w.device.type != "cpu" or w.dtype != torch.float32 or fused_kernel.unavailable() is not None:
        return "fast", None
    choice = _timed_path()
    return choice.path, choice


def timing_steps() -> dict:
    """Training's workload per path: one loss-and-gradient step of a population of 5 Gaussian
    networks, depth 10, width 12, on a random 64×64 target (the optimizer step is the same on every
    path and is not timed)."""
    grid = coords(64)
    target = torch.rand(grid.shape[0], 3, generator=torch.Generator().manual_seed(0))
    nets = {p: CoordMLP("10;gaussian:12", population=5, seed=0) for p in autopick.TASKS["train"]}
    fused, fast = FusedStep(nets["fused"], grid, target), FastStep(nets["fast"], grid, target)

    def eager():
        net = nets["eager"]
        for w in net.weights:
            w.grad = None
        mse_per_network(net, grid, target).sum().backward()

    return {"fused": lambda: (fused.losses(), fused.backward()), "fast": lambda: (fast.losses(), fast.backward()),
            "eager": eager}  # fmt: skip


def _timed_path() -> autopick.Choice:
    (
        """`auto`'s training path for a float32 CPU network where the fused kernel builds (`choose_path`
    checks that: elsewhere the rule decides without a timing): timed once on `timing_steps`, cached."""
        ""
    )
    variant = fused_kernel.default_variant()
    fused_kernel.load(variant)
    library = Path(fused_kernel.build_info[variant]["path"]).name
    return autopick.choose("train", autopick.key(variant, library), timing_steps)


def auto_note(path: str, used: str) -> str:
    """The empty string unless `path` is "auto": then which path it chose and why, in a sentence for
    the command line's output (the calibration's rates, or that the fused kernel does not build)."""
    if path != "auto":
        return ""
    if used == "fast" and (why := fused_kernel.unavailable()) is not None:
        why = why.splitlines()[0].split("; " + fused_kernel.FIX)[0]
        return f"auto chose it: {why}; with a C++ compiler the fused kernel trains several times faster"
    choice = autopick.latest("train")
    return choice.note() if choice is not None and choice.path == used else ""


def train(net: CoordMLP, target, config: TrainConfig | None = None) -> TrainResult:
    """Train `net` (in place) to draw `target` — an image `(res, res, 3)` shared by the population,
    or `(K, res, res, 3)`, one per network. Returns the network and its loss history."""
    cfg = config or TrainConfig()
    _check_config(cfg)
    dev = resolve_device(cfg.device)
    t = _check_target(target, net.population)
    res = t.shape[-2]
    net.check_budget(res, training=True, what="training")
    budget.check(
        budget.network_bytes(net.n_params(), net.population, net.weights[0].element_size(), training=True),
        f"training {net.population} network(s) {net.arch}",
        "use a smaller width, depth or population",
    )
    net.to(dev)
    grid = coords(res, device=dev, dtype=net.weights[0].dtype)
    flat = t.to(device=dev, dtype=grid.dtype).reshape(*t.shape[:-3], res * res, 3)
    opt = _Optimizer(net, cfg)
    used, choice = choose_path(cfg.path, net)
    step_class = {"fast": FastStep, "fused": FusedStep}.get(used)
    fast = step_class(net, grid, flat) if step_class is not None else None  # None: autograd
    log_steps, log_losses = [], []
    last_good = [w.detach().clone() for w in net.weights]
    bar = None
    if cfg.progress:
        bar = tqdm(total=cfg.steps, desc="train", leave=False)
    for step in range(cfg.steps + 1):
        opt.zero_grad()
        losses = fast.losses() if fast is not None else mse_per_network(net, grid, flat)  # (K,)
        if not torch.isfinite(losses).all():
            bad = [int(i) for i in torch.nonzero(~torch.isfinite(losses)).flatten()]
            with torch.no_grad():
                for w, g in zip(net.weights, last_good):
                    w.copy_(g)
            raise TrainingDiverged(
                f"loss became NaN/Inf at step {step} (network(s) {bad}); the weights from step "
                f"{max(step - 1, 0)} were restored — lower the learning rate or enable grad_norm",
                step=step,
                state={f"weight{i}": g for i, g in enumerate(last_good)},
            )
        if step % cfg.log_every == 0 or step == cfg.steps:
            log_steps.append(step)
            log_losses.append(losses.detach().cpu().numpy().astype(np.float64))
        if step == cfg.steps:
            break
        with torch.no_grad():
            for g, w in zip(last_good, net.weights):
                g.copy_(w)
        if fast is not None:
            fast.backward()
        else:
            losses.sum().backward()
        opt.step()
        if bar is not None:
            bar.update(1)
            if step % 50 == 0:
                bar.set_postfix(loss=float(losses.mean()))
    if bar is not None:
        bar.close()
    trained = dict(asdict(cfg), path=used)
    if choice is not None and choice.how != "rule":
        # why "auto" took this path: the measured rates (nothing under the rule, which `path` says:
        # a stored run's network keeps the bytes it had before `auto` measured)
        trained["path_choice"] = choice.record()
    net.provenance = dict(net.provenance, trained=trained, res=int(res))
    return TrainResult(net, np.stack(log_losses), np.asarray(log_steps), asdict(cfg), used)


def new_network(
    target,
    depth: int,
    width: int,
    activation: str = "gaussian",
    population: int = 1,
    seed: int = 0,
    head: str | None = None,
    **kw,
) -> CoordMLP:
    """A fresh dense network for a target object (its head chosen by the target unless given)."""
    arch = activation if ";" in activation else f"{depth};{activation}:{width}"
    return CoordMLP(arch, head=head or getattr(target, "head", "hsv"), population=population, seed=seed, **kw)
