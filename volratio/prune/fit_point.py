"""SP read at its fit point: each network's sparsest state that still fits its target.

In the sparse regime SP runs unguarded down its τ schedule towards a target size (the Picbreeder
network's non-zero count), and most networks lose the fit long before they get there. The
sparsity–fit frontier (`volratio.experiments.sparse_regime.at_fit`) reads, off that trajectory, the
sparsest round at which a network still fits: MSE ≤ max(`factor` × its dense MSE, `floor`). The
guard (`SPConfig.loss_factor`) would stop SP at the *first* round past that line; the fit point is
the sparsest fitting round of the whole trajectory, which can come after a round that did not fit
(retraining recovers). `SparsestFit` keeps that state per member while SP runs (pass it as
`sp(..., on_round=keeper)`) and puts it back afterwards (`restore`), so that the network a run
scores is the one the frontier's fit point names.

The dense network (round 0) always fits (ratio 1): a member that never fits after any round is
restored to its dense state, and says so (`fit_round` 0).
"""

from __future__ import annotations

import numpy as np
import torch

from ..nets import CoordMLP


def fits(loss, dense_loss, factor: float = 2.0, floor: float = 0.002) -> np.ndarray:
    """`(K,)` bool: MSE ≤ max(factor × dense MSE, floor), per member (NaN never fits)."""
    loss, dense = np.asarray(loss, dtype=np.float64), np.asarray(dense_loss, dtype=np.float64)
    return loss <= np.maximum(factor * dense, floor)


class SparsestFit:
    """Per member, the sparsest state of SP's trajectory that fits (`fits`); ties keep the earlier round.

    Call it as SP's `on_round(r, net, loss)`; round 0 must come first (it records the dense MSE).
    After SP, `restore(net)` writes each member's kept weights and masks back into `net` in place."""

    def __init__(self, factor: float = 2.0, floor: float = 0.002):
        self.factor, self.floor = float(factor), float(floor)
        self.dense_loss: np.ndarray | None = None
        self.round: list[int] = []  # per member: the round kept
        self.nonzero: list[int] = []  # … its non-zero weights
        self.loss: list[float] = []  # … its MSE then
        self._weights: list[list[torch.Tensor]] = []  # per member: one tensor per layer
        self._masks: list[list[torch.Tensor]] = []
        self.end_nonzero: list[int] = []  # per member: where SP itself ended
        self.end_loss: list[float] = []

    @torch.no_grad()
    def __call__(self, r: int, net: CoordMLP, loss) -> None:
        loss = np.asarray(loss, dtype=np.float64)
        nz = net.nonzero()
        if r == 0:
            self.dense_loss = loss.copy()
            self.round, self.nonzero, self.loss = [0] * len(nz), list(nz), [float(x) for x in loss]
            self._weights = [[w[k].clone() for w in net.weights] for k in range(len(nz))]
            self._masks = [[m[k].clone() for m in net.masks] for k in range(len(nz))]
        elif self.dense_loss is None:
            raise ValueError("SparsestFit: round 0 (the dense network) must be recorded first")
        else:
            ok = fits(loss, self.dense_loss, self.factor, self.floor)
            for k in range(len(nz)):
                if ok[k] and nz[k] < self.nonzero[k]:
                    self.round[k], self.nonzero[k], self.loss[k] = int(r), int(nz[k]), float(loss[k])
                    self._weights[k] = [w[k].clone() for w in net.weights]
                    self._masks[k] = [m[k].clone() for m in net.masks]
        self.end_nonzero, self.end_loss = list(nz), [float(x) for x in loss]

    @torch.no_grad()
    def restore(self, net: CoordMLP) -> None:
        """Write every member's kept state back into `net` (in place)."""
        if self.dense_loss is None:
            raise ValueError("SparsestFit.restore: SP recorded no round (call it as sp(..., on_round=keeper))")
        for k, (ws, ms) in enumerate(zip(self._weights, self._masks)):
            for w, kept in zip(net.weights, ws):
                w[k] = kept
            for i, kept in enumerate(ms):
                net.masks[i][k] = kept
