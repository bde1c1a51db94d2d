"""Each registered experiment at its contract size: the configs `tests/test_experiments.py` runs on
the CPU and `tests/test_cuda.py` runs on a GPU (a helper module, as `training_helpers`: no test
module imports another)."""

# Each experiment at a size that runs in seconds, with a seed and (where it has one) a judge other
# than the defaults, so that a Result that records the defaults instead of what ran fails. The
# judge each Result must name: the EMC2 judge of its scores, None for an experiment without one.
_TINY_DEPTH = {"width": 3, "res": 8, "steps": 3, "sp.rounds": 1, "sp.retrain_steps": 1, "max_params": 2,
               "deltas": [-1.0, 1.0], "ratio_res": 8, "judge": "anchored-ssim"}  # fmt: skip
TINY = {
    "twins": ({"targets": ["skull"], "res": 8, "steps": 2, "seed": 3}, None),
    "emc2_bench": (
        {"targets": ["skull"], "res": 8, "max_params": 3, "deltas": [-1.0, 1.0], "dense_depth": 1, "dense_width": 2,
         "train.steps": 2, "sp.rounds": 1, "sp.retrain_steps": 1, "judge": "anchored-ssim", "judges": ["stability"],
         "seed": 3},
        "anchored-ssim",
    ),
    "sparse_regime": (
        {"target": "planted:1:depth=2,width=3", "members": 2, "width": 6, "depth": 2, "res": 8, "dense_steps": 3,
         "sp.rounds": 3, "sp.retrain_steps": 1, "target_nonzeros": 20, "seed": 3},
        None,
    ),
    "depth_regime": (
        {**_TINY_DEPTH, "targets": ["planted:1:depth=2,width=3"], "depths": [1, 2], "seeds": 2, "members": 1},
        "anchored-ssim",
    ),
    "optimizers": (
        {"depth": 1, "seeds": 2, "cases": [{"optimizer": "adam", "lr": 0.01}], "hessian_iters": 2,
         **{f"base.{k}": v for k, v in _TINY_DEPTH.items()}},
        "anchored-ssim",
    ),
    "unknown_targets": (
        {**_TINY_DEPTH, "targets": ["image:camera"], "depths": [1, 2], "seeds": 2, "members": 1}, "anchored-ssim"
    ),
    "volume_ratio": (
        {"targets": ["chain:2"], "samples": [2000], "Ws": [1], "Ls": [1], "basin_Ws": [2], "basin_Ls": [1],
         "basin.population": 2, "basin.steps": 2, "basin.res": 8, "basin.emc2_params": 2, "seed": 3},
        "calibrated",  # the basin model's EMC2 criterion (volratio.rho.BASIN_JUDGE); the Boolean model has none
    ),
    "frames": ({"dims": [2], "extra": 0, "also": [], "frame.restarts": 1, "frame.ap_iters": 20,
                "frame.descent_steps": 20, "seed": 3}, None),  # fmt: skip
    "superposition": (
        {"n_features": 4, "n_hidden": 2, "sparsities": [0.0], "steps": 5, "batch": 8, "seed": 3}, None
    ),
    "interference": (
        {"dense_arch": "2;gaussian:4", "dense_res": 8, "train.steps": 3, "taus": [0.9], "sp.rounds": 1, "sp.retrain_steps": 1,
         "res": 8, "seed": 3},
        None,
    ),
}  # fmt: skip
NEEDS_PICBREEDER = {"twins", "emc2_bench", "interference"}
