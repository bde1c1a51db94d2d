"""Devices, dtypes and seeding — the few torch conventions every module shares.

`device="auto"` means CUDA when it is available, else CPU. Seeding goes through explicit
`torch.Generator`s, so that the same seed gives the same numbers on CPU bit for bit, independent of
whatever else the process has drawn from the global generator.
"""

from __future__ import annotations

import torch

from ..errors import VolratioError

DEVICE_NAMES = ("auto", "cpu", "cuda", "cuda:N", "mps")


def device_name(device: str) -> str:
    """`device` when it names a device ("auto", "cpu", "cuda", "cuda:N", "mps"), whether or not this
    machine has it (a sweep's runs may execute on another machine); `VolratioError` otherwise."""
    if device == "auto":
        return device
    try:
        dev = torch.device(str(device))
    except (RuntimeError, ValueError, TypeError):
        raise VolratioError(f"device {device!r} is not a device name; use one of {', '.join(DEVICE_NAMES)}") from None
    if dev.type not in ("cpu", "cuda", "mps"):
        raise VolratioError(f"device {device!r} is not supported; use one of {', '.join(DEVICE_NAMES)}")
    return device


def resolve_device(device: str | torch.device | None = "auto") -> torch.device:
    """`"auto"`/None → CUDA if available else CPU; `cpu`, `cuda`, `cuda:N`, `mps` when this machine
    has them. Anything else raises `VolratioError` naming the devices that exist here."""
    if device is None or device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if isinstance(device, torch.device):
        return device
    try:
        dev = torch.device(str(device))
    except (RuntimeError, ValueError, TypeError):
        raise VolratioError(f"device {device!r} is not a device name; use one of {', '.join(DEVICE_NAMES)}") from None
    if dev.type == "cuda":
        n = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if n == 0:
            raise VolratioError(f"device {device!r}: CUDA is not available on this machine; use --device cpu (or auto)")
        if dev.index is not None and dev.index >= n:
            raise VolratioError(f"device {device!r}: this machine has {n} CUDA device(s), cuda:0…cuda:{n - 1}")
    elif dev.type == "mps":
        if not (getattr(torch.backends, "mps", None) and torch.backends.mps.is_available()):
            raise VolratioError(f"device {device!r}: MPS is not available on this machine; use --device cpu (or auto)")
    elif dev.type != "cpu":
        raise VolratioError(f"device {device!r} is not supported; use one of {', '.join(DEVICE_NAMES)}")
    return dev


def generator(seed: int, device: str | torch.device = "cpu") -> torch.Generator:
    """A fresh generator seeded with `seed` (random draws are made on CPU and moved, so results do
    not depend on the device)."""
    seed = int(seed)
    if not 0 <= seed < 2**63:
        raise VolratioError(f"seed {seed} is out of range; use an integer in [0, 2^63)")
    g = torch.Generator(device="cpu")
    g.manual_seed(seed)
    return g
