"""Safe file writing: every file the library writes appears atomically (complete or not at all)."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path


@contextlib.contextmanager
def atomic_path(path: "str | Path"):
    """Yield a temporary path next to `path`; on success it is renamed over `path` (atomic on
    POSIX), on error it is removed. A crash never leaves a half-written `path` behind."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600 files; results are meant to be shared
    try:
        yield Path(tmp)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def write_text_atomic(path: "str | Path", text: str) -> Path:
    with atomic_path(path) as tmp:
        Path(tmp).write_text(text)
    return Path(path)
