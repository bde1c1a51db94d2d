"""The fused perturbation kernel of the EMC2 engine: one C++ call renders a batch of single-weight
perturbations of one network, pixel tile by pixel tile.

`PerturbationEngine(engine="fused")` (`volratio.emc2.engine`) hands each batch of perturbations of
one kernel to `FusedPerturber.run`. The torch path computes the same images through a chain of
batched tensor operations, each a pass over `(B, units, pixels)` buffers that do not fit in cache;
the kernel (`volratio/emc2/csrc/perturb.cpp`) instead runs one perturbation through every layer
above it 64 pixels at a time, its activations in L1, multiplying only the non-zero weights of the
perturbed unit's forward cone (dead units, masked weights and unchanged units cost nothing). It
follows the fused training kernel (`volratio.train.fused`): plain C++ with a C ABI through
`ctypes`, compiled on first use with `$CXX` (default g++) and the same fixed flags, cached under the
user cache (`volratio.train.fused_kernel`: a hash of source, flags and compiler names the file).

Agreement with the torch path and with re-rendering (`naive_render`): the base pass is the torch
engine's; the recomputed units use the training kernel's ~1-ulp `exp` and a ~1-ulp vector sine and
cosine (Cephes) and sum in another order, so images agree to float32 rounding propagated through
the layers (`tests/test_emc2_fused.py` states the tolerance). Results are bit-identical across
runs, processes, thread counts and instruction sets. float32 on the CPU only; elsewhere
`FusedEngineError` names `engine="torch"`. No compiler raises `FusedKernelError` with the fix;
`engine="auto"` uses the kernel where it builds and is the faster engine on this machine for the
network's density (`volratio.util.autopick`: timed once per machine and cached; the fused kernel under
`$VOLRATIO_AUTO=rule`), and `engine_note` says which it chose and why.

Chapter: "EMC2-Bench" (book/emc2.md); benchmark: benchmarks/emc2_engine.py.
"""

from __future__ import annotations

import ctypes
import os
import time
from pathlib import Path

import numpy as np
import torch

from ..errors import VolratioError
from ..train import fused as train_fused
from ..train import fused_kernel as fk
from ..util import autopick

SOURCE = Path(__file__).with_name("csrc") / "perturb.cpp"
ABI_VERSION = 1
ENGINES = ("torch", "fused", "auto")
FIX = "install a C++ compiler (g++; or set CXX), or score with engine='torch'"
ACT_CODES = train_fused.ACT_CODES  # activation name -> ACT_* (the same codes in both kernels)
TILE = 64  # pixels per tile of the kernel (T in perturb.cpp)

_loaded: dict[str, ctypes.CDLL] = {}
_refusals: dict[tuple[str, str], str] = {}
build_info: dict[str, dict] = {}  # variant -> {"path", "compiled": bool, "seconds"}


class FusedEngineError(VolratioError, ValueError):
    """A network or setting the fused perturbation kernel cannot render (not float32, not on the CPU)."""


def load(variant: str | None = None) -> ctypes.CDLL:
    """The perturbation kernel's library (built on first use, then cached on disk and in this
    process); `FusedKernelError` with the fix when it cannot be built or loaded."""
    variant = variant or fk.default_variant()
    if variant in _loaded:
        return _loaded[variant]
    if not SOURCE.is_file():
        raise fk.FusedKernelError(
            f"the perturbation kernel's source {SOURCE} is missing (a broken install); reinstall volratio"
        )
    t0 = time.perf_counter()
    cxx = fk._compiler(FIX, "the fused perturbation kernel")
    path = fk.library_path(variant, cxx, SOURCE)
    compiled = not path.is_file()
    if compiled:
        fk._build(variant, cxx, path, SOURCE, FIX)
    try:
        lib = ctypes.CDLL(str(path))
    except OSError as e:
        raise fk.FusedKernelError(
            f"loading the perturbation kernel {path} failed ({e}); delete it to rebuild, or {FIX}"
        ) from None
    if lib.vr_perturb_abi_version() != ABI_VERSION:
        raise fk.FusedKernelError(f"the perturbation kernel {path} has another ABI version; delete it to rebuild")
    i, p = ctypes.c_int, ctypes.c_void_p
    # P, Pp, L, widths, wt, acts, H, Z, i, N, rows, cols, deltas, head, img, threads, madds
    lib.vr_perturb.argtypes = [i, i, i, p, p, p, p, p, i, i, p, p, p, i, p, i, p]
    lib.vr_perturb.restype = ctypes.c_int
    _loaded[variant] = lib
    build_info[variant] = {"path": str(path), "compiled": compiled, "seconds": time.perf_counter() - t0}
    return lib


def unavailable(variant: str | None = None) -> str | None:
    """None when the kernel builds and loads here (it is then loaded), else the message `load`
    raises; a refusal is remembered per variant and `$CXX` for the rest of the process."""
    variant = variant or fk.default_variant()
    if variant in _loaded:
        return None
    key = (variant, os.environ.get("CXX", "g++"))
    if key not in _refusals:
        try:
            load(variant)
        except fk.FusedKernelError as e:
            _refusals[key] = str(e)
    return _refusals.get(key)


def resolve_engine(engine: str, device: torch.device, dtype: torch.dtype, share: float = 1.0, workload=None) -> str:
    """What `engine` means here: "torch" and "fused" are themselves ("fused" where it cannot run
    raises, naming the fix); "auto" is "torch" off the CPU, for float64, or where the kernel does
    not build (`unavailable()` is not None), else the faster engine on this machine for a network
    whose masks keep `share` of its weights (timed once on `workload(sparse)`, the engines' steps —
    `volratio.emc2.engine.timing_steps` — and cached; under `$VOLRATIO_AUTO=rule`, "fused") — as
    `volratio.train.resolve_path` chooses training's path."""
    return choose_engine(engine, device, dtype, share, workload)[0]


def choose_engine(
    engine: str, device: torch.device, dtype: torch.dtype, share: float = 1.0, workload=None
) -> "tuple[str, autopick.Choice | None]":
    """`(resolve_engine(...), the calibration's choice behind it, or None)`."""
    if engine not in ENGINES:
        raise VolratioError(f"engine must be one of {', '.join(ENGINES)}, got {engine!r}")
    if engine == "auto":
        if device.type != "cpu" or dtype != torch.float32 or unavailable() is not None:
            return "torch", None
        if workload is None:
            raise VolratioError("engine='auto' on the CPU needs the engines' timing steps (emc2.engine.timing_steps)")
        choice = _timed_engine(share, workload)
        return choice.path, choice
    if engine == "fused":
        if device.type != "cpu":
            raise FusedEngineError(
                f"the fused perturbation kernel runs on the CPU only, and the engine is on {device}; use engine='torch'"
            )
        if dtype != torch.float32:
            raise FusedEngineError(
                f"the fused perturbation kernel computes in float32, and the engine is {dtype}; "
                "use dtype='float32' or engine='torch'"
            )
    return engine, None


def _timed_engine(share: float, workload) -> autopick.Choice:
    """`auto`'s EMC2 engine for a float32 CPU network whose masks keep `share` of its weights,
    where the perturbation kernel builds (`choose_engine` checks that), timed on `workload`."""
    variant = fk.default_variant()
    load(variant)
    library = Path(build_info[variant]["path"]).name
    task = "emc2-dense" if share >= autopick.DENSE_FROM else "emc2-sparse"
    return autopick.choose(task, autopick.key(variant, library), lambda: workload(task == "emc2-sparse"))


def engine_note(
    engine: str,
    used: str,
    device: torch.device | None = None,
    dtype: torch.dtype | None = None,
    choice: "autopick.Choice | None" = None,
) -> str:
    """The empty string unless `engine` is "auto" on the CPU: then which engine it chose and why, in
    one sentence for the command line's output (a float64 engine, no kernel build here, or the
    calibration's `choice`: its rates, or the fixed rule)."""
    if engine != "auto" or (device is not None and device.type != "cpu"):
        return ""
    if used == "torch" and dtype is not None and dtype != torch.float32:
        return f"engine 'auto' chose the torch path: the fused kernel computes in float32 and this engine in {dtype}"
    why = _refusals.get((fk.default_variant(), os.environ.get("CXX", "g++")))
    if used == "torch" and why is not None:
        why = why.splitlines()[0].split("; " + FIX)[0]
        return (
            f"engine 'auto' chose the torch path: {why}; with a C++ compiler the fused kernel renders several "
            "times faster"
        )
    return choice.note() if choice is not None and choice.path == used else ""


def _pointers(arrays) -> ctypes.Array:
    return (ctypes.c_void_p * len(arrays))(*[0 if a is None else a.data_ptr() for a in arrays])


class FusedPerturber:
    """The kernel's view of one compacted network and its base pass (built by `PerturbationEngine`).

    wts: per kernel l the compacted kernel transposed, `(n_{l+1}, n_l)`; acts: per hidden layer
    l = 1 … L the kernel's activation codes `(n_l,)`; H, Z: the base pass, `(n_l, P)` and
    `(n_{l+1}, P)` per kernel; head: the network's head (`volratio.nets.head_to_rgb`); threads:
    threads splitting a batch (default `torch.get_num_threads()`).
    The base pass is copied once, padded to whole tiles (`bytes` says how much memory that holds)."""

    def __init__(self, wts, acts, H, Z, P: int, head: str, threads: int | None = None):
        self.lib = load()
        self.head = train_fused.HEAD_CODES[head]
        self.P, self.Pp = int(P), -(-int(P) // TILE) * TILE
        self.L = len(wts) - 1
        self.threads = max(1, int(threads if threads is not None else torch.get_num_threads()))

        def pad(t: torch.Tensor) -> torch.Tensor:  # (n, P) -> (n, Pp) float32, zeros past P
            out = torch.zeros(t.shape[0], self.Pp, dtype=torch.float32)
            out[:, : self.P] = t.to(device="cpu", dtype=torch.float32)
            return out

        self.wts = [w.to(device="cpu", dtype=torch.float32).contiguous() for w in wts]
        self.widths = torch.tensor([w.shape[1] for w in self.wts] + [self.wts[-1].shape[0]], dtype=torch.int32)
        self.acts = [None] + [torch.as_tensor(np.asarray(a), dtype=torch.int32).contiguous() for a in acts]
        self.H, self.Z = [pad(h) for h in H], [pad(z) for z in Z]
        self.bytes = sum(t.numel() * 4 for t in self.H + self.Z)
        self._ptrs = (_pointers(self.wts), _pointers(self.acts), _pointers(self.H), _pointers(self.Z))
        self.flops = 0.0  # floating-point operations of the last `run` (2 per multiply-add executed)

    def bytes_per_image(self) -> int:
        """Working memory of one perturbation in a batch: its float32 image."""
        return 4 * 3 * self.P

    def run(self, i: int, rows: torch.Tensor, cols: torch.Tensor, d: torch.Tensor) -> torch.Tensor:
        """`(B, P, 3)` float32 images of the perturbations of kernel i that move the compacted
        weight `(rows[b], cols[b])` by `d[b]`."""
        rows = rows.to(device="cpu", dtype=torch.int32).contiguous()
        cols = cols.to(device="cpu", dtype=torch.int32).contiguous()
        d = d.to(device="cpu", dtype=torch.float32).contiguous()
        B = len(rows)
        img = torch.empty(B, self.P, 3, dtype=torch.float32)  # (B, P, 3)
        madds = ctypes.c_int64(0)
        rc = self.lib.vr_perturb(
            self.P, self.Pp, self.L, self.widths.data_ptr(), *self._ptrs, int(i), B, rows.data_ptr(),
            cols.data_ptr(), d.data_ptr(), self.head, img.data_ptr(), self.threads, ctypes.byref(madds),
        )  # fmt: skip
        if rc != 0:  # pragma: no cover - the engine checks kernel indices, pads the pixels and checks the head
            raise VolratioError(f"the fused perturbation kernel refused its arguments (code {rc})")
        self.flops = 2.0 * madds.value
        return img
