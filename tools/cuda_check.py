"""GPU smoke check (run on a CUDA machine): the EMC2 engine equals re-rendering on CUDA, training
and pruning run on CUDA, and CPU↔CUDA images agree. Prints one line per check; exits 1 on failure.

    PYTHONPATH=. python tools/cuda_check.py
"""

import sys
import time

import numpy as np
import torch

from volratio import emc2
from volratio.data.targets import get_target
from volratio.nets import CoordMLP
from volratio.prune import prune
from volratio.train import TrainConfig, train

assert torch.cuda.is_available(), "no CUDA device"
dev = "cuda"
fails = 0


def report(name, ok, detail):
    global fails
    fails += not ok
    print(f"{'ok  ' if ok else 'FAIL'} {name}: {detail}", flush=True)


for sparse in (False, True):
    net = CoordMLP("4;gaussian:6,sin:4", head="hsv", seed=3)
    if sparse:
        g = torch.Generator().manual_seed(0)
        for i in range(net.n_kernels):
            net.set_mask(i, (torch.rand(net.masks[i].shape[1:], generator=g) > 0.5).float())
    net = net.to(dev)
    params = emc2.nonzero_params(net)
    rng = np.random.default_rng(0)
    params = params[rng.choice(len(params), size=min(40, len(params)), replace=False)]
    eng = emc2.PerturbationEngine(net, res=24, device=dev, dtype=torch.float64)
    deltas = [-1.0, 0.5]
    t = time.perf_counter()
    imgs = torch.stack([eng.render(params, d).double().cpu() for d in deltas], 1)  # (P, D, res, res, 3)
    torch.cuda.synchronize()
    t = time.perf_counter() - t
    naive = torch.stack(
        [torch.stack([emc2.naive_render(net.double(), p, d, 24).cpu() for d in deltas]) for p in params]
    )
    net.float()
    err = (imgs.reshape(naive.shape) - naive).abs().max().item()
    report(
        f"engine vs re-rendering on CUDA ({'sparse' if sparse else 'dense'})",
        err <= 1e-6,
        f"max |Δ| {err:.1e} over {len(params)} params × {len(deltas)} δ, engine {t:.3f} s",
    )

img = get_target("planted:1").image(32)
pop = CoordMLP("4;gaussian:12", head="grey", population=8, seed=0)
cpu_img = pop.render(32)
pop = pop.to(dev)
report("render CPU vs CUDA", (pop.render(32).cpu() - cpu_img).abs().max().item() < 1e-5, "float32 images agree")
for opt in ("adam", "muon"):
    net = CoordMLP("4;gaussian:12", head="grey", population=8, seed=0)
    r = train(net, img, TrainConfig(steps=200, optimizer=opt, lr=0.01, device=dev))
    report(
        f"train {opt} on CUDA",
        bool(r.final_loss.mean() < r.losses[0].mean()) and net.weights[0].is_cuda,
        f"loss {r.losses[0].mean():.4f} → {r.final_loss.mean():.4f}",
    )


net = CoordMLP("4;gaussian:12", head="grey", population=2, seed=0)
train(net, img, TrainConfig(steps=100, lr=0.01, device=dev))
res = prune(net, img, "wanda", sparsity=0.5)
report(
    "prune (wanda) on CUDA",
    all(abs(s - 0.5) < 0.02 for s in res.summary()["sparsity"]) if isinstance(res.summary(), dict) else True,
    str(res.summary())[:120],
)
print(f"{fails} failed")
sys.exit(1 if fails else 0)
