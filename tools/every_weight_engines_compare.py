"""Every-weight rescores of a few stored depth_picbreeder runs under the anchored judge, through the
torch engine (float64) and the fused kernel (float32): CPU seconds of each, the largest difference in
S and in the AUC between them, and how far the stored sample of 200 weights is from every weight.
Computes in memory (rescore runs' `point`), writes nothing to the store.

    python tools/every_weight_engines_compare.py skull:2 butterfly:3 apple:4 skull:8 butterfly:11
"""

import sys
import time
from pathlib import Path

import numpy as np
import torch

from volratio.runs import rescore as RS
from volratio.runs import stored as S
from volratio.runs.reference import reading_from, rescore_config
from volratio.runs.registry import get_run

torch.set_num_threads(1)
root = Path("results/reference")
recs = {(r["config"]["target"], r["config"]["depth"]): r for r in S.records("depth_picbreeder", root)}
picks = [(f"picbreeder:{a.split(':')[0]}", int(a.split(":")[1])) for a in sys.argv[1:]] or [("picbreeder:skull", 2)]
entry = get_run("rescore")
with reading_from(root):
    for key in picks:
        r = recs[key]
        out = {}
        for eng in ("torch", "fused"):
            cfg = entry.keyed(rescore_config("depth_picbreeder", r, "anchored", True, eng))
            t = time.process_time()
            m = RS.point(cfg)
            out[eng] = (m, time.process_time() - t)
        a, b = (np.array(out[e][0]["scores"]) for e in ("torch", "fused"))
        A, B = (np.array(out[e][0]["score"]) for e in ("torch", "fused"))
        own = np.array(r["metrics"]["score"])
        print(
            key,
            f"torch64 {out['torch'][1]:.1f} CPU s, fused32 {out['fused'][1]:.1f} CPU s;",
            f"max |ΔS| {np.abs(a - b).max():.2e}, max |ΔAUC| {np.abs(A - B).max():.4f}, mean |ΔAUC| {np.abs(A - B).mean():.4f};",
            f"sample(200) vs every AUC mean |Δ| {np.abs(own - A).mean():.4f};",
            "base_kept equal",
            out["torch"][0]["base_kept"] == out["fused"][0]["base_kept"],
        )
        print(
            "   AUC every/torch",
            np.round(A, 4).tolist(),
            "fused",
            np.round(B, 4).tolist(),
            "sample",
            np.round(own, 4).tolist(),
        )
