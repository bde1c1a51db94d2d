"""Safe file writing: every file the library writes appears atomically (complete or not at all),
with ordinary permissions, and an output path is checked before any work is done.

- `atomic_path(path)`: write to a temporary next to `path`, rename over it on success;
- `check_out(path, force, inputs)`: the command line's rule for `--out` — refuse an existing file
  unless `--force`, refuse to replace an input unless `--force`, refuse a folder, a missing folder
  (it is not created: a typo must not make directories anywhere) or one that is not writable.

Used by every command that writes (`volratio.commands.*`), `CoordMLP.save` and the results store.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

from ..errors import OutputError

_UMASK = os.umask(0o022)
os.umask(_UMASK)
FILE_MODE = 0o666 & ~_UMASK  # what open() would give a new file: results are meant to be shared


@contextlib.contextmanager
def atomic_path(path: str | Path, parents: bool = True):
    """Yield a temporary path next to `path`; on success it is renamed over `path` (atomic on
    POSIX) with the mode of an ordinary new file, on error it is removed. A crash never leaves a
    half-written `path` behind. `parents=False` refuses a missing folder instead of creating it."""
    path = Path(path)
    if path.is_dir():
        raise OutputError(f"{path} is a folder; give a file path inside it, e.g. {path / 'out'}")
    if parents:
        path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except FileNotFoundError:
        raise OutputError(f"cannot write {path}: folder {path.parent} does not exist; create it first") from None
    except OSError as e:
        raise OutputError(f"cannot write {path}: {e.strerror}; choose a folder you can write to") from None
    os.close(fd)
    try:
        yield Path(tmp)
        # set the mode last: some writers (safetensors) replace the file, which resets it to 0600
        os.chmod(tmp, FILE_MODE)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def write_text_atomic(path: str | Path, text: str) -> Path:
    with atomic_path(path) as tmp:
        Path(tmp).write_text(text)
    return Path(path)


def _same_file(a: Path, b: str | Path) -> bool:
    try:
        return a.exists() and Path(b).exists() and os.path.samefile(a, b)
    except OSError:
        return False


def check_out(path: str | Path, force: bool = False, inputs=(), folder: bool = False, option: str = "--out") -> Path:
    """Check an output path before any work is done (see the module docstring); returns it.

    `folder=True` is for a results store: an existing folder is fine (it is resumed), an existing
    file is not. `inputs` are paths or specs the command reads (specs that are not files are
    ignored)."""
    p = Path(str(path))
    if not str(path).strip():
        raise OutputError(f"{option} is empty; give a path")
    if folder:
        if p.exists() and not p.is_dir():
            raise OutputError(f"{option} {p} is a file, not a folder; give a folder for the results store")
    else:
        if p.is_dir():
            raise OutputError(f"{option} {p} is a folder; give a file path inside it, e.g. {p / 'out'}")
        for inp in inputs:
            if inp is not None and not force and _same_file(p, inp):
                raise OutputError(
                    f"{option} {p} is the input {inp}; write to another file (or pass --force to replace the input)"
                )
        if p.exists() and not force:
            raise OutputError(f"{option} {p} already exists; choose another path or pass --force to overwrite it")
    parent = p.parent if str(p.parent) else Path(".")
    if not parent.exists():
        raise OutputError(f"{option} {p}: folder {parent} does not exist; create it first (mkdir -p {parent})")
    if not parent.is_dir():
        raise OutputError(f"{option} {p}: {parent} is not a folder")
    try:  # a real probe: permission bits do not tell (root, read-only mounts, /proc)
        fd, probe = tempfile.mkstemp(prefix=".volratio-probe.", dir=parent)
        os.close(fd)
        os.unlink(probe)
    except OSError as e:
        raise OutputError(
            f"{option} {p}: cannot write in folder {parent} ({e.strerror}); choose a folder you can write to"
        ) from None
    return p
