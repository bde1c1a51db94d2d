"""How far a perturbation moves a weight: δ itself, or δ on the scale of the weight's layer.

EMC2 perturbs one weight at a time, `w ← w + δ·s(w)`. The score's own reading (the paper's) moves
every weight by the same absolute amount, `s = 1` ("absolute"). Under one absolute δ a weight of a
large network, whose layer's weights are small, moves the image less than a weight of a small
network; the second reading ("layer_std") measures δ in units of the perturbed weight's layer:
`s(w)` = the standard deviation (population, ddof 0) of the non-zero effective weights of the kernel
that holds `w`, in the scored member. A kernel whose non-zero weights are all equal (std 0: a
Picbreeder network's output selection or a column of cache copies, all exactly 1) takes their root
mean square instead, so that no weight is perturbed by 0.

`step_sizes(net, params, member, how)` returns `s` per scored parameter; `volratio.emc2.scoring.render`
multiplies each perturbation's δ by it before either engine renders (both take one δ per
perturbation), and the score tables keep the nominal δ beside the applied step.

Chapter: "EMC2-Bench" (book/emc2.md).
"""

from __future__ import annotations

import numpy as np

from ..errors import VolratioError
from ..nets import CoordMLP

DELTA_SCALES = ("absolute", "layer_std")  # EMC2Config.delta_scale; the first is the paper's


def layer_scales(net: CoordMLP, member: int = 0) -> np.ndarray:
    """`(n_kernels,)` the "layer_std" scale of every kernel of member `member`: the std of its
    non-zero effective weights, their RMS where the std is 0, and 0 for a kernel with none."""
    out = []
    for w in net.effective_weights():
        a = w.detach()[member].cpu().double().numpy()
        nz = a[a != 0]
        if nz.size == 0:
            out.append(0.0)
            continue
        sd = float(nz.std())
        out.append(sd if sd > 0 else float(np.sqrt((nz**2).mean())))
    return np.asarray(out, dtype=np.float64)


def step_sizes(net: CoordMLP, params, member: int = 0, how: str = "absolute") -> np.ndarray:
    """`(N,)` the factor `s` each scored parameter's δ is multiplied by (`params` `(N, 3)` of
    `(kernel, row, col)`): 1 for "absolute", the kernel's `layer_scales` for "layer_std"."""
    params = np.asarray(params, dtype=np.int64).reshape(-1, 3)
    if how == "absolute":
        return np.ones(len(params))
    if how == "layer_std":
        return layer_scales(net, member)[params[:, 0]]
    raise VolratioError(f"delta_scale must be one of {', '.join(DELTA_SCALES)}, got {how!r}")
