"""The superposition toy model (Elhage et al. 2022, "Toy Models of Superposition"), as one population.

n sparse features x ∈ [0, 1]ⁿ (each feature is 0 with probability S, the *sparsity*, else uniform
on [0, 1]) pass through a bottleneck of m < n hidden dimensions and are read back out:

    h = W x,   x' = ReLU(Wᵀ h + b),   loss = Σᵢ Iᵢ (xᵢ − x'ᵢ)²,   Iᵢ = decayⁱ (feature importance).

Column Wᵢ ∈ ℝᵐ is feature i's direction in the hidden space. Dense features (S = 0) get the m most
important features an orthogonal direction each and drop the rest; as S grows the model packs more
than m features into ℝᵐ — *superposition* — and the Welch bound at (r = features represented,
d = m) is the least interference such a packing can have.

The whole sweep is one batched model: K = (sparsity levels × replicas) instances with weights
`(K, m, n)`, contracted with `einsum`, the loss reduced per instance and summed (the instances
share no parameters, so their gradients are independent). Data and initialisation are seeded.

Used by the chapter "Feature interference and the Welch bound" (book/welch.md).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np
import torch

from ..errors import VolratioError
from ..util.device import generator, resolve_device
from ..util.limits import above, at_least, between
from ..util.presets import Presets
from .bounds import welch_bound
from .frames import max_sq_inner, mean_sq_inner


@dataclass
class ToyConfig(Presets):
    """One toy-model sweep. Defaults follow Elhage et al.'s "n = 20, m = 5" figure."""

    n_features: int = 20  # n: sparse input features
    n_hidden: int = 5  # m: bottleneck dimension
    sparsities: tuple[float, ...] = (0.0, 0.7, 0.9, 0.97, 0.99, 0.997, 0.999)  # S = P(feature is 0)
    replicas: int = 1  # independent initialisations per sparsity level
    importance_decay: float = 0.7  # Iᵢ = decay**i (Elhage et al.: 0.7)
    steps: int = 10_000  # Adam steps (Elhage et al.: 10,000)
    batch: int = 1024  # samples per step and instance (Elhage et al.: 1024)
    lr: float = 1e-3  # Adam learning rate (Elhage et al.: 1e-3)
    seed: int = 0  # seeds initialisation and the data stream
    device: str = "auto"  # "auto": CUDA when available, else CPU
    scale: str = "custom"  # the preset this config came from, printed by the chapter

    # allowed values, checked when a config is parsed (`volratio.util.limits`); `__post_init__` the rest
    LIMITS = {"n_features": at_least(1), "n_hidden": at_least(1), "replicas": at_least(1),
              "importance_decay": between(0, 1, open_lo=True), "steps": at_least(1), "batch": at_least(1),
              "lr": above(0), "seed": at_least(0)}  # fmt: skip

    # the presets (also the experiment `superposition`'s, `volratio.experiments.superposition_toy`):
    QUICK = {"steps": 3000, "batch": 512}  # what the book executes on two CPU cores: 7 sparsity levels
    # Elhage et al.'s training length (10,000 steps, batch 1024), 3 replicas (budget ~10 CPU-minutes, an estimate)
    REFERENCE = {"steps": 10_000, "batch": 1024, "replicas": 3}
    # Elhage et al.'s settings, 13 sparsity levels, 3 replicas each
    FULL = {
        "sparsities": (0.0, 0.5, 0.7, 0.8, 0.9, 0.95, 0.97, 0.98, 0.99, 0.995, 0.997, 0.998, 0.999),
        "replicas": 3,
        "steps": 10_000,
        "batch": 1024,
    }

    def __post_init__(self):
        if not (0 < self.n_hidden and 0 < self.n_features):
            raise VolratioError(f"n_features and n_hidden must be positive (got {self.n_features}, {self.n_hidden})")
        bad = [s for s in self.sparsities if not 0.0 <= float(s) < 1.0]
        if bad or not self.sparsities:
            raise VolratioError(
                f"sparsities must be in [0, 1) (a feature must sometimes be present); got {bad or '()'}"
            )
        if self.replicas < 1 or self.steps < 0 or self.batch < 1:
            raise VolratioError("replicas and batch must be ≥ 1 and steps ≥ 0")


@dataclass
class ToyResult:
    config: ToyConfig
    W: np.ndarray  # (K, m, n) feature directions are the columns
    b: np.ndarray  # (K, n)
    sparsity: np.ndarray  # (K,) the S of each instance
    replica: np.ndarray  # (K,)
    losses: np.ndarray  # (n_logged, K) per-instance loss every `log_every` steps
    log_every: int

    @property
    def final_loss(self) -> np.ndarray:
        return self.losses[-1]

    def interference(self, threshold: float = 0.5) -> list[dict]:
        """Per instance: `feature_interference` of its W (see there)."""
        return [
            {
                "sparsity": float(self.sparsity[i]),
                "replica": int(self.replica[i]),
                **feature_interference(self.W[i], threshold),
            }
            for i in range(self.W.shape[0])
        ]


def feature_interference(W: np.ndarray, threshold: float = 0.5) -> dict:
    """Interference of the represented features of one toy model, against the Welch bound.

    A feature is *represented* when its direction has norm ‖Wᵢ‖ > `threshold` (Elhage et al. plot
    ‖Wᵢ‖; trained models put features either near 1 or near 0). The vectors compared are the
    represented columns, normalised; r = how many, d = m. Returns r, d, max and mean of
    ⟨Ŵᵢ, Ŵⱼ⟩² over i≠j (None when r < 2) and the k = 1 Welch bound at (r, d).
    """
    W = np.asarray(W, dtype=np.float64)  # (m, n)
    m = W.shape[0]
    norms = np.linalg.norm(W, axis=0)
    rep = norms > threshold
    V = W[:, rep].T  # (r, m)
    r = V.shape[0]
    mx = max_sq_inner(V) if r >= 2 else None
    mn = mean_sq_inner(V) if r >= 2 else None
    return {"r": int(r), "d": int(m), "max_sq_inner": mx, "mean_sq_inner": mn, "bound": welch_bound(max(r, 1), m)}


def train_toy(config: ToyConfig | None = None, log_every: int = 100) -> ToyResult:
    """Train the whole sweep as one population (see module docstring). Same seed on CPU → same
    numbers bit for bit."""
    cfg = config or ToyConfig.quick()
    dev = resolve_device(cfg.device)
    n, m = int(cfg.n_features), int(cfg.n_hidden)
    S = np.repeat(np.asarray(cfg.sparsities, dtype=np.float64), cfg.replicas)  # (K,)
    rep = np.tile(np.arange(cfg.replicas), len(cfg.sparsities))
    K = S.shape[0]

    g = generator(cfg.seed)
    std = math.sqrt(2.0 / (m + n))  # Xavier normal, as Elhage et al.
    W = (torch.randn(K, m, n, generator=g, dtype=torch.float64) * std).float().to(dev).requires_grad_(True)
    b = torch.zeros(K, n, device=dev, requires_grad=True)
    importance = torch.tensor([cfg.importance_decay**i for i in range(n)], device=dev)  # (n,)
    present = torch.tensor(1.0 - S, dtype=torch.float32, device=dev)[:, None, None]  # (K, 1, 1)

    data_gen = torch.Generator(device=dev)
    data_gen.manual_seed(int(cfg.seed) + 1)
    opt = torch.optim.Adam([W, b], lr=cfg.lr)
    logged = []
    for step in range(int(cfg.steps)):
        u = torch.rand(K, cfg.batch, n, generator=data_gen, device=dev)
        keep = torch.rand(K, cfg.batch, n, generator=data_gen, device=dev) < present
        x = u * keep  # (K, B, n)
        h = torch.einsum("kbn,kmn->kbm", x, W)  # (K, B, m)
        out = torch.relu(torch.einsum("kbm,kmn->kbn", h, W) + b[:, None, :])  # (K, B, n)
        per_inst = ((x - out) ** 2 * importance).sum(-1).mean(-1)  # (K,)
        if not torch.isfinite(per_inst).all():
            raise VolratioError(f"toy model loss became NaN/Inf at step {step}; lower lr (now {cfg.lr})")
        opt.zero_grad()
        per_inst.sum().backward()
        opt.step()
        if step % log_every == 0 or step == cfg.steps - 1:
            logged.append(per_inst.detach().cpu().numpy())
    return ToyResult(
        config=cfg,
        W=W.detach().cpu().double().numpy(),
        b=b.detach().cpu().double().numpy(),
        sparsity=S,
        replica=rep,
        losses=np.stack(logged) if logged else np.zeros((0, K)),
        log_every=log_every,
    )


def config_dict(cfg: ToyConfig) -> dict:
    return asdict(cfg)
