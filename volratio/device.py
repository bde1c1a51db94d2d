"""Devices, dtypes and seeding — the few torch conventions every module shares.

`device="auto"` means CUDA when it is available, else CPU. Seeding goes through explicit
`torch.Generator`s, so that the same seed gives the same numbers on CPU bit for bit, independent of
whatever else the process has drawn from the global generator.
"""

from __future__ import annotations

import torch


def resolve_device(device: str | torch.device | None = "auto") -> torch.device:
    """`"auto"`/None → CUDA if available else CPU; anything else is passed to `torch.device`."""
    if device is None or device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(device)


def generator(seed: int, device: str | torch.device = "cpu") -> torch.Generator:
    """A fresh generator seeded with `seed` (random draws are made on CPU and moved, so results do
    not depend on the device)."""
    g = torch.Generator(device="cpu")
    g.manual_seed(int(seed))
    return g
