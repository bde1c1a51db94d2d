"""A planted target's own family: its DAG drawn with the link weights moved, and fits within it.

A planted target (`volratio.data.targets.PlantedTarget`) is a DAG whose only parameters are its link
weights θ (`Graph.links`; its only offsets are the layer-1 links from the `bias` input). `Family`
draws the DAG for a batch of weight vectors at once, gives the Jacobian of its image in θ, and fits
θ to an image by damped Levenberg–Marquardt (`Family.fit`).

**The family is a box, not all of θ-space.** Every link keeps its generator sign and at least
`share` of its generator magnitude (`Family.project` clamps into that box): without the box the
family would hold images that are not the object — all of the output node's links at 0 draw a flat
page, a link flipped or nearly removed draws another picture.

Why the fit needs care, and what it does about it:

- the grey head draws `clip(|o|, 0, 1)` (`volratio.nets.head_to_rgb`): saturated pixels carry no
  gradient, and `o` and `−o` draw the same image;
- gaussian is even while sin and `2σ − 1` are odd, so flipping the signs of the links into a unit
  (and, for an odd unit, out of it) can leave the image unchanged: these sign symmetries put copies
  of every solution in other orthants. The box keeps θ in the generator's own orthant, so the fit
  starts there and stays there;
- near-identical chained primitives make JᵀJ singular: every step solves
  `(JᵀJ + λ·diag(JᵀJ) + ε·mean(diag JᵀJ)·I) s = −Jᵀr` (Marquardt's scaling, plus a floor ε that
  keeps a singular system solvable), and a step is taken only when it lowers the misfit (then λ
  shrinks); otherwise λ grows and the step is tried again (`LMConfig`).

The Jacobian is forward-mode automatic differentiation (`torch.func.jacfwd`), one pass per link;
the gaussian is written with plain operations here (`FORWARD`) because the library's own
(`volratio.nets.ACTIVATIONS`, a hand-written backward for training speed) has no forward-mode rule —
the two agree to rounding (tested).

Used by the family judge (`volratio.judges.family`). Chapter: "EMC2-Bench" (book/emc2.md) and the
depth chapter's evidence page, where the family judge decides on planted targets.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ..data.graph import INPUT_INDEX, Graph
from ..nets import ACTIVATIONS, coords, head_to_rgb
from ..util import budget
from .base import JudgeError


def _gaussian(z: torch.Tensor) -> torch.Tensor:
    return 2.0 * torch.exp(-z * z) - 1.0


# activations with plain torch operations (forward-mode differentiable); every other name is the library's own
FORWARD = {**ACTIVATIONS, "gaussian": _gaussian}


CHUNK_BYTES = 64 << 20  # `Family.draw` evaluates at most this many bytes of node values at once


@dataclass(frozen=True)
class LMConfig:
    """Damped Levenberg–Marquardt with step acceptance (`Family.fit`)."""

    iterations: int = 40  # Jacobians at most (each followed by at most `tries` damped solves)
    damping: float = 1e-3  # λ at the start
    grow: float = 10.0  # λ ×= grow after a step that does not lower the misfit, λ /= grow after one that does
    tries: int = 8  # damped solves per Jacobian before the fit stops (no step lowers the misfit)
    floor: float = 1e-9  # ε: × mean(diag JᵀJ) added to every diagonal entry (a singular JᵀJ stays solvable)
    rtol: float = 1e-6  # stop when an accepted step lowers the squared misfit by less than this share


class Family:
    """The family of the planted DAG `graph` drawn at `res`×`res`: images `draw(θ)` for link weights
    θ inside the box (every link keeps its sign and at least `share` of its magnitude in `graph`)."""

    def __init__(self, graph: Graph, res: int, share: float):
        if graph.head != "grey":
            raise JudgeError(
                f"{graph.name}: the family judge draws planted (grey-head) graphs; this one has {graph.head}"
            )
        if not 0.0 <= float(share) < 1.0:
            raise JudgeError(f"family magnitude share {share!r}: give a number in [0, 1)")
        self.graph, self.res, self.share = graph, int(res), float(share)
        self.theta0 = torch.tensor([w for _, _, w in graph.links], dtype=torch.float64)  # (n,) the generator's
        lo = torch.where(self.theta0 > 0, self.share * self.theta0, torch.full_like(self.theta0, -torch.inf))
        hi = torch.where(self.theta0 < 0, self.share * self.theta0, torch.full_like(self.theta0, torch.inf))
        self.lo, self.hi = lo, hi
        self.grid = coords(self.res, dtype=torch.float64)  # (P, 4)
        self.order = graph.topological_order()
        self.into: dict[str, list[tuple[str, int]]] = {k: [] for k in graph.nodes}  # node -> (source, link index)
        for i, (s, t, _) in enumerate(graph.links):
            self.into[t].append((s, i))
        self.out = graph.outputs().get("ink") or next(iter(graph.outputs().values()))
        # the Jacobian pushes one tangent per link through every node at once
        budget.check(
            budget.graph_render_bytes(len(self.grid), len(graph.nodes)) * (2 * self.n + 1),
            f"the family of {graph.name} ({self.n} links) at {self.res}×{self.res}",
            "judge at a lower resolution (--res)",
        )

    @property
    def n(self) -> int:
        """Number of parameters (links)."""
        return len(self.theta0)

    def project(self, theta: torch.Tensor) -> torch.Tensor:
        """θ `(…, n)` clamped into the family's box (signs kept, at least `share` of each magnitude)."""
        return torch.maximum(torch.minimum(theta, self.hi), self.lo)

    def raw(self, theta: torch.Tensor) -> torch.Tensor:
        """The output node's value `(B, P)` for weights `theta` `(B, n)`."""
        val: dict[str, torch.Tensor] = {}
        for k in self.order:
            node = self.graph.nodes[k]
            if node.kind == "in":
                val[k] = self.grid[:, INPUT_INDEX[node.label]].expand(len(theta), -1)  # (B, P)
                continue
            z = torch.zeros(len(theta), len(self.grid), dtype=theta.dtype)
            for s, i in self.into[k]:
                z = z + theta[:, i, None] * val[s]
            val[k] = FORWARD[node.activation](z)
        return val[self.out]

    def draw(self, theta: torch.Tensor) -> torch.Tensor:
        """Grey level `(B, P)` in [0, 1] of each weight vector of `theta` `(B, n)` (the grey head),
        evaluated in chunks of weight vectors that keep every node's values under `CHUNK_BYTES`."""
        per = budget.graph_render_bytes(len(self.grid), len(self.graph.nodes))  # one weight vector
        step = max(1, CHUNK_BYTES // per)
        parts = [self.raw(theta[i : i + step]) for i in range(0, len(theta), step)]
        return head_to_rgb(torch.cat(parts)[..., None], "grey")[..., 0]

    def jacobian(self, theta: torch.Tensor) -> torch.Tensor:
        """`(P, n)`: d draw / dθ at one weight vector `theta` `(n,)` (forward mode, one pass per link)."""
        return torch.func.jacfwd(lambda t: self.draw(t[None])[0])(theta)

    def fit(self, y: torch.Tensor, start: torch.Tensor, cfg: LMConfig = LMConfig()) -> tuple[torch.Tensor, float]:
        """`(θ, squared misfit)`: the member of the family closest to the grey image `y` `(P,)` found by
        projected, damped Levenberg–Marquardt from `start` `(n,)` (see the module docstring)."""
        theta = self.project(start.to(torch.float64))
        r = self.draw(theta[None])[0] - y
        cost = float(r @ r)
        lam = cfg.damping
        for _ in range(cfg.iterations):
            J = self.jacobian(theta)  # (P, n)
            A, g = J.T @ J, J.T @ r
            d = torch.diagonal(A)
            eye = torch.eye(self.n, dtype=A.dtype) * cfg.floor * max(float(d.mean()), 1e-300)
            for _ in range(cfg.tries):
                step = torch.linalg.solve(A + lam * torch.diag(d) + eye, -g)
                cand = self.project(theta + step)
                rc = self.draw(cand[None])[0] - y
                cc = float(rc @ rc)
                if cc < cost:
                    break
                lam *= cfg.grow
            else:
                return theta, cost  # no damped step lowers the misfit: a (constrained) minimum
            gain = (cost - cc) / max(cost, 1e-300)
            theta, r, cost, lam = cand, rc, cc, max(lam / cfg.grow, 1e-12)
            if gain < cfg.rtol:
                break
        return theta, cost
