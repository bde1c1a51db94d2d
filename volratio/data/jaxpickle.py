"""A restricted unpickler for the FER repository's JAX pickles — numpy arrays and strings, nothing else.

The FER repository (`akarshkumar0101/fer`) stores its networks as pickles written by JAX: a flat
`float32` array pickled through `jax._src.array._reconstruct_array(fun, args, state, aval_state)`,
which rebuilds a numpy array with `fun(*args)` (numpy's `_reconstruct`) and `__setstate__(state)`,
and the architecture as a pickled `str`. Unpickling can run any callable the file names, so this
module reads them the way `torch.load(weights_only=True)` reads checkpoints: `find_class` admits
numpy's array reconstruction (`numpy.ndarray`, `numpy.dtype`, `_reconstruct`) and maps JAX's one
function onto it; every other global — `os.system`, `builtins.eval`, anything — is refused before
it is called. The arrays must come out numeric (no object dtype), so no further code can hide
inside them.

This is the library's only unpickling, and it is used only on files whose pinned SHA-256 has
already matched (`volratio.data.fer_data`): the checksum fixes every byte, the allow-list is a second
wall. Chapter: "Picbreeder networks and their SGD twins" (where the FER networks come from).
"""

from __future__ import annotations

import io
import pickle

import numpy as np

from ..errors import VolratioError

try:  # numpy >= 2
    from numpy._core.multiarray import _reconstruct as _np_reconstruct
except ImportError:  # numpy 1.x
    from numpy.core.multiarray import _reconstruct as _np_reconstruct


class UnsafePickleError(VolratioError, ValueError):
    """A pickle that names a callable outside the allow-list, or does not hold what was expected."""


def _reconstruct_array(fun, args, state, aval_state=None):
    """What `jax._src.array._reconstruct_array` does, for numpy: `fun(*args)`, then `__setstate__`."""
    if fun is not _np_reconstruct:  # only the allow-listed reconstructor
        raise UnsafePickleError("a JAX array pickle names a reconstructor other than numpy's _reconstruct")
    arr = fun(*args)
    arr.__setstate__(state)
    return arr


_ALLOWED = {
    ("numpy", "ndarray"): np.ndarray,
    ("numpy", "dtype"): np.dtype,
    ("numpy.core.multiarray", "_reconstruct"): _np_reconstruct,
    ("numpy._core.multiarray", "_reconstruct"): _np_reconstruct,
    ("jax._src.array", "_reconstruct_array"): _reconstruct_array,
}


class _Restricted(pickle.Unpickler):
    def __init__(self, data: bytes, what: str):
        super().__init__(io.BytesIO(data))
        self.what = what

    def find_class(self, module: str, name: str):
        try:
            return _ALLOWED[(module, name)]
        except KeyError:
            raise UnsafePickleError(
                f"{self.what}: refused to unpickle: it names {module}.{name}, which is not numpy array "
                "reconstruction; this is not a FER network file (re-download it with `volratio data fetch`)"
            ) from None


def _load(data: bytes, what: str):
    try:
        return _Restricted(data, what).load()
    except UnsafePickleError:
        raise
    except Exception as e:  # truncated or malformed pickle streams raise many types
        raise UnsafePickleError(f"{what}: not a readable pickle ({type(e).__name__}: {e})") from None


def load_array(data: bytes, what: str = "pickle") -> np.ndarray:
    """The numeric numpy array pickled in `data` (a JAX or numpy array pickle).

    Raises `UnsafePickleError` if the pickle names any other callable, or holds anything but a
    numeric array (strings, objects, object arrays)."""
    obj = _load(data, what)
    if not isinstance(obj, np.ndarray):
        raise UnsafePickleError(f"{what}: holds a {type(obj).__name__}, expected a numeric array")
    if obj.dtype.kind not in "biuf":
        raise UnsafePickleError(f"{what}: holds an array of dtype {obj.dtype}, expected a numeric dtype")
    return obj


def load_str(data: bytes, what: str = "pickle") -> str:
    """The string pickled in `data` (FER's `arch.pkl`); anything else raises `UnsafePickleError`."""
    obj = _load(data, what)
    if not isinstance(obj, str):
        raise UnsafePickleError(f"{what}: holds a {type(obj).__name__}, expected a string")
    return obj
