"""Image complexity: the PNG compression ratio of a target .

Quantise the target to uint8 RGB at a fixed size (`volratio.util.images.to_uint8`), save it with Pillow
to memory with `optimize=True` (zlib level 9); ratio = raw bytes / PNG bytes (higher = simpler
image). The sizes depend on the zlib build (Pillow ≥ 11.1 wheels use zlib-ng), so every ratio
carries the Pillow version, and ratios are only compared at one resolution (the ~60-byte header
biases tiny images).

Chapters: "Depth: a narrow, target-dependent regime", "Unknown targets", "Your own target";
command: `volratio depth ratio`.
"""

from __future__ import annotations

import io
from dataclasses import asdict, dataclass

import numpy as np
import PIL
from PIL import Image

from ..data.targets import get_target
from ..util.images import to_uint8


def pillow_version() -> str:
    return PIL.__version__


def png_bytes(image) -> tuple[int, int]:
    """`(png_bytes, raw_bytes)` of an image saved as 8-bit RGB PNG with Pillow, `optimize=True`."""
    u8 = to_uint8(image)  # (res, res, 3) uint8
    buf = io.BytesIO()
    Image.fromarray(u8, mode="RGB").save(buf, format="PNG", optimize=True, compress_level=9)
    return len(buf.getvalue()), int(u8.nbytes)


@dataclass
class Complexity:
    target: str
    ratio: float  # raw bytes / PNG bytes (higher = simpler image)
    png_bytes: int
    raw_bytes: int
    res: int
    pillow: str  # Pillow version: PNG sizes depend on its zlib build

    def to_json(self) -> dict:
        return asdict(self)


def png_ratio(target, res: int = 64) -> Complexity:
    """The PNG compression ratio of a target spec (or target object, or image array) at `res`."""
    if isinstance(target, str):
        name, img = target, get_target(target).image(res)
    elif hasattr(target, "image"):
        name, img = getattr(target, "spec", str(target)), target.image(res)
    else:
        name, img = "image", target
        res = int(np.asarray(img.shape)[0])
    png, raw = png_bytes(img)
    return Complexity(name, raw / png, png, raw, int(res), pillow_version())
