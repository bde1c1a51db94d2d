"""Image conversions shared by the library: the one float → uint8 quantisation.

`to_uint8` is used for PNG export (`volratio render`), the PNG compression ratio
(`volratio.depth.complexity.png_ratio`: quantise to uint8 RGB, then save) and the model judges'
inputs (`volratio.judges`). Rounding: clip to [0, 1], then floor(x · 255 + 0.5) — round half up,
as PNG export tools do — so that the same float image gives the same bytes everywhere.
"""

from __future__ import annotations

import numpy as np

from ..errors import ImageError


def to_uint8(image) -> np.ndarray:
    """uint8 RGB from an image (or a batch) in [0, 1], torch or numpy: `(..., H, W, 3)` stays
    `(..., H, W, 3)`; grey `(H, W)` or `(..., H, W, 1)` is repeated to three channels."""
    a = np.asarray(image.detach().cpu().numpy() if hasattr(image, "detach") else image, dtype=np.float64)
    if a.ndim == 2:
        a = a[..., None]
    if a.ndim < 3 or a.shape[-1] not in (1, 3):
        raise ImageError(f"image has shape {a.shape}; give (H, W, 3), (H, W) or a batch (B, H, W, 3) in [0, 1]")
    if a.shape[-1] == 1:
        a = np.repeat(a, 3, axis=-1)
    return np.floor(np.clip(a, 0.0, 1.0) * 255.0 + 0.5).astype(np.uint8)
