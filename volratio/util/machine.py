"""The numerics kind of a machine: the parts of it that decide a run's float results bit for bit.

A seeded run on CPU repeats bit for bit — on machines of one kind. Training amplifies
the last-bit differences between the SIMD kernels that MKL, oneDNN and ATen pick for a CPU (AVX2 on
one, AVX-512 or AMX on another), so a stored loss comes out different on another CPU kind even with
the same code, seed and versions. Integer and bitwise work (the Boolean sampler of ρ) does not
depend on the kind. `volratio.runs.reference` records the kind with every stored session and run, and
`volratio results verify` compares bit for bit only runs stored on this machine's kind.

- `identity()` — this machine: `device`, `cpu_vendor`, `cpu_model`, `cpu_isa` (the instruction-set
  extensions the math kernels dispatch on), `cpu_capability` (`torch.backends.cpu.get_cpu_capability()`),
  `torch` (version), `blas` (BLAS and oneDNN from `torch.__config__.show()`), and `kind`: a short
  hash of those parts (`kind_of`).
- `of_session(session)` — the parts of a manifest session. A session written before the kind was
  recorded has only `cpu_model`, `torch` and `device`: its vendor is read from the model name and
  its ISA, capability and BLAS are *not recorded* (None). Such a session is taken to be of the kind
  whose CPU model, torch version and device equal its own — that is, it assumes the CPU capability
  and BLAS that this torch build picks on that CPU model by default.
- `same_kind(a, b)` — parts recorded on both sides are equal (device, CPU model and torch must be
  recorded on both).
- `read(path)` — the kind recorded in a small JSON file (data/judge_reference/machine.json: the
  machine the reference verdicts' networks were trained on).
- `describe(parts)` — one line for people: "AMD EPYC, torch 2.13.0+cpu (ISA, capability, BLAS not recorded)".

Used by `volratio.runs.reference` (manifests, `verify`) and `volratio results verify`.
"""

from __future__ import annotations

import functools
import hashlib
import json
import platform
import re
from pathlib import Path

import torch

from ..errors import VolratioError

# the parts that decide float results, in the order they are hashed
PARTS = ("device", "cpu_vendor", "cpu_model", "cpu_isa", "cpu_capability", "torch", "blas")
# parts an old session (one without `kind`) always records: a comparison needs them on both sides
REQUIRED = ("device", "cpu_model", "torch")
# instruction-set extensions MKL, oneDNN and ATen dispatch their float kernels on (x86 and Arm)
ISA_FLAGS = (
    "sse4_2",
    "avx",
    "avx2",
    "fma",
    "f16c",
    "avx512f",
    "avx512dq",
    "avx512bw",
    "avx512vl",
    "avx512_vnni",
    "avx512_bf16",
    "avx512_fp16",
    "avx_vnni",
    "amx_tile",
    "amx_bf16",
    "amx_int8",
    "asimd",
    "sve",
    "sve2",
    "bf16",
    "i8mm",
)
_VENDORS = (("AMD", "AuthenticAMD"), ("Intel", "GenuineIntel"), ("Apple", "Apple"))


def kind_of(parts: dict) -> str:
    """A short stable name of a numerics kind: "<vendor>-<12 hex digits of SHA-256 of the parts>"."""
    text = json.dumps({p: parts.get(p) for p in PARTS}, sort_keys=True, separators=(",", ":"))
    vendor = (parts.get("cpu_vendor") or "cpu").replace("Authentic", "").replace("Genuine", "").lower()
    return f"{vendor}-{hashlib.sha256(text.encode()).hexdigest()[:12]}"


@functools.lru_cache(maxsize=1)
def identity() -> dict:
    """This machine's numerics parts (`PARTS`) and its `kind`."""
    vendor, model, isa = _cpuinfo()
    parts = {
        "device": _device(),
        "cpu_vendor": vendor,
        "cpu_model": model,
        "cpu_isa": isa,
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "torch": torch.__version__,
        "blas": _blas(torch.__config__.show()),
    }
    return {**parts, "kind": kind_of(parts)}


def of_session(session: dict) -> dict:
    """The numerics parts and `kind` of a manifest session (old sessions: see the module docstring)."""
    parts = {p: session.get(p) for p in PARTS}
    if parts["cpu_vendor"] is None and "kind" not in session:
        parts["cpu_vendor"] = vendor_of(parts["cpu_model"])
    if isinstance(parts["cpu_isa"], tuple):
        parts["cpu_isa"] = list(parts["cpu_isa"])
    return {**parts, "kind": session.get("kind") or kind_of(parts)}


def read(path: "str | Path") -> dict:
    """The parts and `kind` recorded in a JSON file holding a session's machine fields (`PARTS`,
    as in a manifest session; e.g. data/judge_reference/machine.json), read as `of_session` does."""
    path = Path(path)
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise VolratioError(f"{path}: cannot read a machine record ({e}); restore it from git") from None
    if not isinstance(doc, dict) or any(doc.get(p) is None for p in REQUIRED):
        raise VolratioError(f"{path}: a machine record needs {', '.join(REQUIRED)}; restore it from git")
    return of_session(doc)


def same_kind(a: dict, b: dict) -> bool:
    """Whether two sets of parts are one numerics kind: every part recorded on both sides agrees,
    and device, CPU model and torch version are recorded on both."""
    if any(a.get(p) is None or b.get(p) is None for p in REQUIRED):
        return False
    return all(a.get(p) == b.get(p) for p in PARTS if a.get(p) is not None and b.get(p) is not None)


def describe(parts: dict) -> str:
    """One line naming a kind for people (what a report says about another kind)."""
    bits = [str(parts.get("cpu_model") or "unknown CPU")]
    if parts.get("cpu_capability"):
        bits.append(str(parts["cpu_capability"]))
    bits.append(f"torch {parts.get('torch')}")
    if parts.get("blas"):
        bits.append(str(parts["blas"]))
    if parts.get("device") not in (None, "cpu"):
        bits.append(str(parts["device"]))
    missing = [
        n for p, n in (("cpu_isa", "ISA"), ("cpu_capability", "capability"), ("blas", "BLAS")) if not parts.get(p)
    ]
    return ", ".join(bits) + (f" ({', '.join(missing)} not recorded)" if missing else "")


def vendor_of(model: str | None) -> str | None:
    """The CPUID vendor string read from a CPU model name ("AMD EPYC" → "AuthenticAMD"), or None."""
    for word, vendor in _VENDORS:
        if model and word.lower() in model.lower():
            return vendor
    return None


def _cpuinfo(path: Path = Path("/proc/cpuinfo")) -> tuple:
    """(vendor, model name, sorted ISA flags among `ISA_FLAGS`) from /proc/cpuinfo, else platform."""
    vendor = model = None
    flags: set[str] = set()
    try:
        text = path.read_text()
    except OSError:
        text = ""
    for line in text.splitlines():
        name, _, value = line.partition(":")
        name, value = name.strip(), value.strip()
        if name == "vendor_id" and vendor is None:
            vendor = value
        elif name in ("model name", "Model") and model is None:
            model = value
        elif name in ("flags", "Features") and not flags:
            flags = set(value.split())
    model = model or platform.processor() or platform.machine()
    return vendor or vendor_of(model), model, sorted(f for f in ISA_FLAGS if f in flags) or None


def _blas(config: str) -> str | None:
    """ "mkl 2024.2, onednn 3.12.0" from `torch.__config__.show()` (the BLAS and oneDNN builds)."""
    out = []
    blas = re.search(r"BLAS_INFO=(\w+)", config)
    if blas:
        version = re.search(r"Math Kernel Library Version ([\w.]+)", config) if blas.group(1) == "mkl" else None
        out.append(blas.group(1) + (f" {version.group(1)}" if version else ""))
    dnn = re.search(r"MKL-DNN v([\d.]+)", config)
    if dnn:
        out.append(f"onednn {dnn.group(1)}")
    return ", ".join(out) or None


def _device() -> str:
    # what `device="auto"` picks (volratio.util.device.resolve_device), with the GPU's name on CUDA
    if torch.cuda.is_available():
        return f"cuda ({torch.cuda.get_device_name(0)})"
    return "cpu"
