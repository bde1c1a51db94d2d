"""Build and load the fused C++ kernel (`volratio/train/csrc/fused_mlp.cpp`) of `volratio.train.fused`.

The kernel is plain C++ with a C ABI, called through `ctypes` on tensors' data pointers; it
includes no torch headers, so it compiles in 3–6 seconds (an extension built with
`torch.utils.cpp_extension` spends tens of seconds on torch's headers and needs ninja). It is
compiled on first use with the C++ compiler `$CXX` (default `g++`) and these fixed flags:

    -std=c++17 -shared -fPIC -pthread -ffp-contract=off -Wno-psabi
    + -O3 -march=x86-64-v4 (variant avx512) | -O3 -march=x86-64-v3 (avx2) | -O2 (baseline)

- `-ffp-contract=off` (and no `-ffast-math`): no reassociation, and fused multiply-adds only where
  the source writes them (exactly defined operations); every sum in the kernel has an order fixed
  by its source, so results are bit-identical across runs, processes and thread counts, and
  across instruction sets too;
- `-march=x86-64-v4` (AVX-512, variant `avx512`) or `-march=x86-64-v3` (AVX2, variant `avx2`)
  is added on x86-64 CPUs that have it (`torch.backends.cpu.get_cpu_capability()`): the
  kernels' vectors are the machine's (16 floats with AVX-512, 8 with AVX2, 4 otherwise), each
  with register blocking that fits its register file, while every partial sum keeps one order
  (16 lanes, whatever the width), so the builds differ in speed, not in results —
  `tests/test_fused_train.py` checks that the builds give the same bits. No `-march=native`. The baseline build (no AVX2: its fused multiply-adds are C library
  calls) is correct and slow, a fallback; -O2 halves its compile time (16 s at -O3).
- `$VOLRATIO_KERNEL_VARIANT` (`avx512`, `avx2` or `baseline`) forces a variant at or below the best
  this CPU runs (`default_variant`): how the AVX2 build is measured on an AVX-512 machine
  (`benchmarks/training.py`, `benchmarks/emc2_engine.py`); a variant above it, or an unknown name,
  raises `VolratioError`.

The library is cached in `$VOLRATIO_KERNEL_CACHE`, else `<user cache>/volratio/kernels`
(`platformdirs.user_cache_dir("volratio")`, e.g. `~/.cache/volratio/kernels` on Linux), under a
name holding a hash of the source, the flags and the compiler's version: a changed source or
compiler builds anew, every other process and run loads the cached file (milliseconds). Builds
write to a temporary file and rename it, so concurrent first uses do not see a half-written file.

No compiler, or a failed build, raises `FusedKernelError` with the compiler's message and the fix.
`unavailable()` asks the same question without raising: it is what `TrainConfig(path="auto")` reads
to choose the fused kernel only where it builds (`volratio.train.resolve_path`).
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import platform
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import platformdirs
import torch

from ..errors import VolratioError

SOURCE = Path(__file__).with_name("csrc") / "fused_mlp.cpp"
ENV_CACHE = "VOLRATIO_KERNEL_CACHE"
ENV_VARIANT = "VOLRATIO_KERNEL_VARIANT"  # force a variant at or below the CPU's best (module docstring)
BASE_FLAGS = ("-std=c++17", "-shared", "-fPIC", "-pthread", "-ffp-contract=off", "-Wno-psabi")
VARIANT_FLAGS = {"avx512": ("-O3", "-march=x86-64-v4"), "avx2": ("-O3", "-march=x86-64-v3"), "baseline": ("-O2",)}
ABI_VERSION = 2
FIX = "install a C++ compiler (g++; or set CXX), or train with TrainConfig(path='fast')"

# per variant ("avx512" | "avx2" | "baseline"): the loaded library, and how it was obtained
_loaded: dict[str, ctypes.CDLL] = {}
_refusals: dict[tuple[str, str], str] = {}  # (variant, $CXX) -> why it did not build or load here
build_info: dict[str, dict] = {}  # variant -> {"path", "compiled": bool, "seconds"}


class FusedKernelError(VolratioError, RuntimeError):
    """The fused kernel cannot be built or loaded here (no C++ compiler, or a failed build)."""


def cache_dir() -> Path:
    """Where compiled kernels are kept (see the module docstring)."""
    env = os.environ.get(ENV_CACHE)
    if env:
        return Path(env)

    return Path(platformdirs.user_cache_dir("volratio")) / "kernels"


def cpu_variant() -> str:
    """The best variant this CPU runs: `"avx512"` or `"avx2"` on an x86-64 CPU that has it (as torch
    reports it: `torch.backends.cpu.get_cpu_capability()`), else `"baseline"` (the compiler's default)."""
    if platform.machine().lower() in ("x86_64", "amd64"):
        cap = torch.backends.cpu.get_cpu_capability()
        if cap.startswith("AVX512"):
            return "avx512"
        if cap.startswith("AVX2"):
            return "avx2"
    return "baseline"


def default_variant() -> str:
    """The variant used unless one is named: `$VOLRATIO_KERNEL_VARIANT` when set (checked: a known
    variant this CPU runs), else `cpu_variant()`."""
    best = cpu_variant()
    forced = os.environ.get(ENV_VARIANT, "").strip().lower()
    if not forced:
        return best
    order = list(VARIANT_FLAGS)  # best first: avx512, avx2, baseline
    if forced not in VARIANT_FLAGS:
        raise VolratioError(f"{ENV_VARIANT}={forced!r} is not a kernel variant; use one of {', '.join(order)}")
    if order.index(forced) < order.index(best):
        raise VolratioError(
            f"{ENV_VARIANT}={forced!r}, but this CPU runs at most the {best!r} variant; "
            f"use one of {', '.join(order[order.index(best) :])} or unset {ENV_VARIANT}"
        )
    return forced


def flags(variant: str) -> tuple[str, ...]:
    if variant not in VARIANT_FLAGS:
        raise VolratioError(f"unknown kernel variant {variant!r}; use one of {', '.join(VARIANT_FLAGS)}")
    return BASE_FLAGS + VARIANT_FLAGS[variant]


def _compiler(fix: str = FIX, what: str = "the fused training kernel") -> str:
    cxx = os.environ.get("CXX", "g++")
    path = shutil.which(cxx)
    if path is None:
        raise FusedKernelError(f"{what} needs a C++ compiler: {cxx!r} was not found; {fix}")
    return path


def _compiler_version(cxx: str, fix: str = FIX) -> str:
    try:
        return subprocess.run([cxx, "--version"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError) as e:
        raise FusedKernelError(f"the C++ compiler {cxx!r} does not run ({e}); {fix}") from None


def library_path(variant: str, cxx: str, source: Path | None = None) -> Path:
    """The cached library's path for this source (default `SOURCE`; also the EMC2 perturbation
    kernel's, `volratio.emc2.fused`), these flags and this compiler."""
    source = SOURCE if source is None else source
    h = hashlib.sha256()
    for part in (source.read_bytes(), " ".join(flags(variant)).encode(), _compiler_version(cxx).encode()):
        h.update(part)
        h.update(b"\0")
    return cache_dir() / f"{source.stem}-{variant}-{h.hexdigest()[:16]}.so"


def _build(variant: str, cxx: str, target: Path, source: Path | None = None, fix: str = FIX) -> None:
    source = SOURCE if source is None else source
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=target.stem, suffix=".so.tmp", dir=target.parent)
    os.close(fd)
    cmd = [cxx, *flags(variant), str(source), "-o", tmp]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        if proc.returncode != 0:
            raise FusedKernelError(
                f"building the fused kernel {source.name} failed ({' '.join(cmd)}):\n{proc.stderr.strip()}\n{fix}"
            )
        os.replace(tmp, target)
    except (OSError, subprocess.SubprocessError) as e:
        raise FusedKernelError(f"building the fused kernel {source.name} failed ({e}); {fix}") from None
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def compile_seconds(variant: str | None = None) -> float:
    """Seconds (wall) to compile the kernel from scratch, into a temporary folder (for benchmarks)."""
    variant = variant or default_variant()
    cxx = _compiler()
    with tempfile.TemporaryDirectory() as d:
        t0 = time.perf_counter()
        _build(variant, cxx, Path(d) / "fused_mlp.so")
        return time.perf_counter() - t0


def load(variant: str | None = None) -> ctypes.CDLL:
    """The kernel library (built on first use, then cached on disk and in this process)."""
    variant = variant or default_variant()
    if variant in _loaded:
        return _loaded[variant]
    if not SOURCE.is_file():
        raise FusedKernelError(f"the fused kernel's source {SOURCE} is missing (a broken install); reinstall volratio")
    t0 = time.perf_counter()
    cxx = _compiler()
    path = library_path(variant, cxx)
    compiled = not path.is_file()
    if compiled:
        _build(variant, cxx, path)
    try:
        lib = ctypes.CDLL(str(path))
    except OSError as e:
        raise FusedKernelError(
            f"loading the fused kernel {path} failed ({e}); delete it to rebuild, or {FIX}"
        ) from None
    if lib.vr_fused_abi_version() != ABI_VERSION:
        raise FusedKernelError(f"the fused kernel {path} has another ABI version; delete it to rebuild")
    i, p, f = ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p
    common = [p, i, i, i, i, i, i, p, p]  # grid, P, n_in, K, L, W, n_out, kernels, acts
    lib.vr_fused_forward.argtypes = [*common, f, i]  # raw, threads
    lib.vr_fused_step.argtypes = [*common, i, f, i, f, p, i]  # head, target, per-network, losses, grads, threads
    lib.vr_fused_forward.restype = lib.vr_fused_step.restype = ctypes.c_int
    _loaded[variant] = lib
    build_info[variant] = {"path": str(path), "compiled": compiled, "seconds": time.perf_counter() - t0}
    return lib


def unavailable(variant: str | None = None) -> str | None:
    """None when the kernel builds and loads here (it is then loaded), else why not: the message
    `load` raises. A refusal is remembered for this variant and `$CXX` for the rest of the process,
    so asking again costs nothing."""
    variant = variant or default_variant()
    key = (variant, os.environ.get("CXX", "g++"))
    if variant in _loaded:
        return None
    if key not in _refusals:
        try:
            load(variant)
        except FusedKernelError as e:
            _refusals[key] = str(e)
            return str(e)
        return None
    return _refusals[key]
