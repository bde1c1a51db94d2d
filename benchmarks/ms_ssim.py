"""Multi-scale SSIM, the anchored judges' `ms-ssim` feature: the library's (`volratio.judges.similarity.
ms_ssim`, the Gaussian window as two banded matrix products) against torchmetrics' (a 2-D grouped
convolution), on the same float64 images at the judges' size (64×64), single-threaded.

Every rate is the best of `--repeats` rounds, each timing both once, in CPU seconds of this
process; the two results are checked equal to 1e-12 first. The last line is

    ms-ssim: … images/s (library)  … images/s (torchmetrics)  …x  [CPU model, ATen capability]

    python benchmarks/ms_ssim.py                                  # about half a minute
    ATEN_CPU_CAPABILITY=avx2 MKL_ENABLE_INSTRUCTIONS=AVX2 python benchmarks/ms_ssim.py   # as on an AVX2 laptop
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from volratio.judges.similarity import MS_SSIM_BETAS, ms_ssim
from volratio.util.machine import identity


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--images", type=int, default=300, help="images per round (default 300)")
    ap.add_argument("--repeats", type=int, default=3, help="rounds; the best of each is kept (default 3)")
    a = ap.parse_args(argv)
    from torchmetrics.functional.image import multiscale_structural_similarity_index_measure as tm

    torch.set_num_threads(1)
    g = torch.Generator().manual_seed(0)
    ref = torch.rand(a.images, 64, 64, 3, generator=g, dtype=torch.float64)
    img = (ref + 0.2 * torch.randn(a.images, 64, 64, 3, generator=g, dtype=torch.float64)).clamp(0, 1)
    betas = tuple(b / sum(MS_SSIM_BETAS) for b in MS_SSIM_BETAS)

    def theirs():
        x, r = img.permute(0, 3, 1, 2), ref.permute(0, 3, 1, 2)
        return tm(x, r, kernel_size=7, betas=betas, data_range=1.0, reduction="none", normalize="relu").numpy()

    if not np.allclose(ms_ssim(img, ref), theirs(), atol=1e-12, rtol=0):
        raise SystemExit("the library's MS-SSIM differs from torchmetrics'")
    best = {"library": np.inf, "torchmetrics": np.inf}
    for _ in range(a.repeats):
        for name, f in (("library", lambda: ms_ssim(img, ref)), ("torchmetrics", theirs)):
            t0 = time.process_time()
            f()
            best[name] = min(best[name], time.process_time() - t0)
    rate = {k: a.images / v for k, v in best.items()}
    print(f"ms-ssim: {rate['library']:.0f} images/s (library)  {rate['torchmetrics']:.0f} images/s (torchmetrics)  "
          f"{rate['library'] / rate['torchmetrics']:.1f}x  [{identity()['cpu_model']}, {torch.backends.cpu.get_cpu_capability()}]")  # fmt: skip


if __name__ == "__main__":
    main()
