"""The outcome of a pruning method: the pruned population and its history, one entry per round.

`PruneResult` is what every method of `volratio.prune` returns; `record` takes one history entry
(non-zeros, sparsity, live units and the MSE of every network after a round).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from ..nets import CoordMLP
from ..train import mse_per_network
from .criteria import CalibrationGrid
from .masks import PruneError, sparsity_report, weight_sparsity


@dataclass
class PruneResult:
    net: CoordMLP  # the pruned population (the same object that was passed in)
    method: str
    config: dict
    history: list[dict]  # one entry per round/level: round, nonzero, sparsity, live_units, loss (per network)
    extras: dict = field(default_factory=dict)  # method-specific (SP: stop reasons, members; IMP: θ_k, rewound weights)

    @property
    def final_loss(self) -> np.ndarray:
        """(K,) MSE of each network at the end."""
        return np.asarray(self.history[-1]["loss"])

    @property
    def dense_loss(self) -> np.ndarray:
        """(K,) MSE of each network before pruning (the first history entry)."""
        return np.asarray(self.history[0]["loss"])

    @property
    def collapsed(self) -> np.ndarray:
        """(K,) bool: members that ended as a (near) constant image or far above their dense loss
        (`similarity_pruning.collapsed`, recorded by SP)."""
        if "members" not in self.extras:
            raise PruneError(
                f"{self.method}: this result does not record collapsed members (SP does); "
                "call volratio.prune.collapsed(net, res, dense_loss, final_loss) instead"
            )
        return np.array([m["collapsed"] for m in self.extras["members"]], dtype=bool)

    def summary(self) -> dict:
        """What `volratio prune` prints: method, sparsity reached, live units per layer, final loss."""
        rep = sparsity_report(self.net)
        out = {
            "method": self.method,
            "rounds": len(self.history) - 1,
            "sparsity": [m["sparsity"] for m in rep["members"]],
            "nonzero": [m["nonzero"] for m in rep["members"]],
            "weights": rep["members"][0]["weights"],
            "live_units": [m["live_units"] for m in rep["members"]],
            "unit_sparsity": [m["unit_sparsity"] for m in rep["members"]],
            "final_loss": [float(x) for x in self.final_loss],
        }
        if "stop" in self.extras:
            out["stop"] = self.extras["stop"]
        if "members" in self.extras:
            out["dense_loss"] = [m["dense_loss"] for m in self.extras["members"]]
            out["collapsed"] = [m["collapsed"] for m in self.extras["members"]]
        return out


@torch.no_grad()
def record(net: CoordMLP, calib: CalibrationGrid, round_: int, **extra) -> dict:
    """One history entry: the state of every network after a round."""
    loss = mse_per_network(net, calib.grid, calib.target).cpu().numpy().astype(np.float64)
    return {
        "round": round_,
        "nonzero": net.nonzero(),
        "sparsity": [float(s) for s in weight_sparsity(net.masks)],
        "live_units": net.live_units(),
        "loss": [float(x) for x in loss],
        **extra,
    }
