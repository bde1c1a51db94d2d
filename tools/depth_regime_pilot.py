"""Pilot for the depth claim in the sparse regime: one `depth_point` run per depth from a wide start,
SP with the sparse regime's τ schedule and at most a fifth of the units per round, but with the 2×
fit guard (and back-off), so that SP stops where the fit would be lost. Prints, per depth, the
members' EMC2 AUC (every non-zero weight, float64, the torch engine: the depth point's own
settings), MSE after SP and dense, non-zero weights, whether the judge sees the label, and the CPU
seconds of the run.

    python tools/depth_regime_pilot.py picbreeder:skull 48 64 4,8     # TARGET WIDTH RES DEPTHS

What it measured is in tools/depth_regime_pilot.md.
"""

import json
import sys
import time

import numpy as np
import torch

from volratio.depth.point import point
from volratio.experiments.sparse_regime import SCHEDULE

torch.set_num_threads(1)

target, width, res = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
for depth in [int(d) for d in sys.argv[4].split(",")]:
    cfg = {
        "target": target,
        "depth": depth,
        "seed": 0,
        "members": 3,
        "width": width,
        "res": res,
        "steps": 2000,
        "lr": 3e-3,
        "train_path": "fused",
        "keep_net": False,
        "max_params": None,
        "deltas": [-1.0, -0.5, -0.25, -0.1, 0.1, 0.25, 0.5, 1.0],
        "sp.tau": 0.95,
        "sp.tau_schedule": list(SCHEDULE),
        "sp.centred": True,
        "sp.rounds": 30,
        "sp.retrain_steps": 200,
        "sp.retrain_lr_factor": 0.3,
        "sp.per_round_fraction": 0.2,
        "sp.loss_factor": 2.0,
        "sp.backoff": True,
    }
    t0 = time.process_time()
    m = point(cfg)
    dt = time.process_time() - t0
    keep = {k: m[k] for k in m if k in ("nonzero", "sparsity", "loss", "dense_loss", "score", "base_kept", "n_params")}
    print(
        json.dumps(
            {
                "depth": depth,
                "cpu_s": round(dt, 1),
                **{
                    k: (np.round(np.asarray(v, float), 4).tolist() if isinstance(v, (list, tuple)) else v)
                    for k, v in keep.items()
                },
            }
        ),
        flush=True,
    )
