"""Network specs: the names the command line and the chapters use for networks.

| spec | network |
| --- | --- |
| `picbreeder:NAME` | the network of a Picbreeder target (`volratio.data.picbreeder.network`): the layerized genome for skull, butterfly, apple; the fork `jagilley/fer`'s layered network for the thirteen others, which have no genome |
| `fer-sgd:NAME` | the FER paper's dense SGD network for NAME (skull, butterfly, apple only) |
| `fer-layered:NAME` | the FER repository's own layerization of NAME (or the fork's layered network) |
| a path to a `.safetensors` file | a network saved with `CoordMLP.save` |
"""

from __future__ import annotations

from pathlib import Path

from ..errors import VolratioError
from ..nets import CoordMLP
from . import picbreeder
from .targets import KINDS

NETWORK_KINDS = ("picbreeder", "fer-sgd", "fer-layered")  # spec prefixes that name networks


def load_network(spec: str, device: str = "cpu") -> CoordMLP:
    """Resolve a network spec (see the module docstring)."""
    kind, sep, name = str(spec).partition(":")
    if sep and kind == "picbreeder":
        return picbreeder.network(name).to(device)
    if sep and kind in ("fer-sgd", "fer-layered"):
        return picbreeder.fer_network(name, kind.split("-")[1]).to(device)
    p = Path(spec)
    if p.suffix == ".safetensors" or p.exists():
        return CoordMLP.load(p, device=device)
    if sep and kind in KINDS:
        raise VolratioError(
            f"{spec!r} is a target, not a network; train a network on it first "
            f"(volratio train {spec} --out net.safetensors) and give the .safetensors file"
        )
    raise VolratioError(
        f"network {spec!r} is neither picbreeder:NAME, fer-sgd:NAME, fer-layered:NAME nor an existing .safetensors file"
    )
