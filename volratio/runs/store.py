"""The results store of a sweep: one Parquet table plus a folder of artifacts.

A store is a directory:

    DIR/results.parquet                 one row per run, keyed by `key` (see `config_key`)
    DIR/artifacts/<key>/<name>.npy      arrays a run returned (images, loss curves)
    DIR/artifacts/<key>/<name>.safetensors  networks a run returned (`CoordMLP.save` format)
    DIR/artifacts/<key>/_row.json       the run's row (JSON): the table can be rebuilt from these

A run's key is a content hash of what determines its result: the run function's name and its complete
config (`config_key`). Rerunning a sweep therefore skips every run whose key is in the table. A row
also records the library version and git commit that made it, as provenance: they say where a run
came from, never what it means, and are not part of its key.

Reliability:

- every file appears atomically (`volratio.util.fileio.atomic_path`): a crash leaves the old table or the
  new one, never half of one; leftover temporary files are removed on the next open;
- the table is written with Parquet page checksums, and a SHA-256 of its rows is stored in the
  file's metadata, so a damaged table is detected (not silently read) — as is another store's table
  copied over it (its runs have no folder here) —: it is set aside as
  `results.parquet.corrupt-N` and rebuilt from the per-run records, so only runs whose record or
  artifacts are damaged too are recomputed;
- each artifact's SHA-256 is recorded in its row; a missing or damaged artifact makes the run
  "not done", so the next sweep recomputes it;
- a writer holds an OS lock on `DIR/.lock` (released by the OS if the process dies), so two sweeps
  never write one store at once.

Nothing here unpickles: rows are JSON strings in Parquet, arrays are `.npy` read with
`allow_pickle=False`, networks are safetensors. Used by `volratio.runs.sweep` and the chapter
"Rerunning at scale on a cluster" (book/practice_cluster.md).
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import math
import os
import tempfile
import warnings
from pathlib import Path
from typing import Any, Iterable

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from ..errors import VolratioError
from ..nets import CoordMLP
from ..util.fileio import atomic_path

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows has no fcntl (no advisory locks)
    fcntl = None

TABLE = "results.parquet"
ARTIFACTS = "artifacts"
LOCK = ".lock"
RECORD = "_row.json"  # per-run copy of its table row, next to its artifacts (never an artifact name)
FORMAT = "volratio.store/2"
OLD_FORMAT = "volratio.store/1"  # a table whose keys hashed a version tag: refused, never read
_UMASK = os.umask(0o022)
os.umask(_UMASK)
_FILE_MODE = 0o666 & ~_UMASK  # temporaries are created 0600; results are shared like ordinary files
KEY_CHARS = 16  # hex digits of SHA-256 kept in a key (64 bits: collisions negligible below 10⁸ runs)

# Column order of the Parquet table. Config, metrics and artifacts are canonical JSON strings, so
# that a table never needs a schema per sweep and reads back exactly (floats round-trip via repr).
COLUMNS = (
    "key",  # content hash of (run, config): `config_key`
    "run",  # the registry name of the run function that produced the row
    "version",  # volratio.__version__ that ran it (provenance)
    "commit",  # git commit of the library that ran it, "+dirty" when it had local changes (provenance; null: unknown)
    "status",  # "done" | "failed"
    "config",  # JSON object
    "metrics",  # JSON object ({} when failed)
    "artifacts",  # JSON object: name -> {"file": relative path, "sha256": hex}
    "error",  # "Type: message" when failed, else null
    "traceback",  # the run's traceback when failed, else null
    "attempts",  # how many times this key was executed (failures included)
    "seconds",  # wall time of the last attempt
    "host",  # machine (worker) that ran the last attempt
    "finished_at",  # UTC ISO time of the last attempt
)


class StoreError(VolratioError):
    """A results store that cannot be used (bad config value, held by another sweep, …)."""


class CorruptResultWarning(UserWarning):
    """A damaged results table or artifact was found; the runs it held will be recomputed."""


# ---------------------------------------------------------------------------------------------
# Keys


def canonical_json(obj: Any) -> str:
    """JSON with sorted keys, no whitespace and ASCII only: the same text in every process.

    Accepts what a config may hold — None, bool, int, float (finite), str, lists/tuples and dicts
    with string keys; numpy scalars are converted. Anything else raises `StoreError`.
    """
    return json.dumps(_plain(obj, "config"), sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False)


def _plain(obj: Any, where: str) -> Any:
    if obj is None or isinstance(obj, (bool, str)):
        return obj
    if isinstance(obj, int):
        return int(obj)
    if isinstance(obj, float):
        if not math.isfinite(obj):
            raise StoreError(f"{where}: {obj!r} is not a finite number; configs hold finite numbers only")
        return float(obj)
    if isinstance(obj, (list, tuple)):
        return [_plain(v, f"{where}[{i}]") for i, v in enumerate(obj)]
    if isinstance(obj, dict):
        out = {}
        for k, v in obj.items():
            if not isinstance(k, str):
                raise StoreError(f"{where}: key {k!r} is not a string; use string keys in configs")
            out[k] = _plain(v, f"{where}.{k}")
        return out
    item = getattr(obj, "item", None)  # numpy / torch scalars
    if callable(item) and getattr(obj, "shape", None) == ():
        return _plain(item(), where)
    raise StoreError(
        f"{where}: {type(obj).__name__} {obj!r} cannot go in a config; use numbers, strings, booleans, lists or tables"
    )


def config_key(run: str, config: dict) -> str:
    """The content hash naming a run: SHA-256 of the canonical JSON of its run function's name and its
    complete config (`volratio.runs.registry.RunFunction.keyed`).

    Stable across processes, machines, Python sessions and library versions (no `hash()`, no pickle,
    no dict order): the same config of the same run function always has the same key.
    """
    text = canonical_json({"config": config, "run": run})
    return hashlib.sha256(text.encode("ascii")).hexdigest()[:KEY_CHARS]


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _rows_digest(rows: Iterable[dict]) -> str:
    h = hashlib.sha256()
    for row in rows:
        h.update(json.dumps([row.get(c) for c in COLUMNS], separators=(",", ":")).encode())
    return h.hexdigest()


# ---------------------------------------------------------------------------------------------
# The store


class Store:
    """A results directory. Reading needs nothing; writing happens inside `with store.writing():`.

    `rows` maps key -> row (a dict with the `COLUMNS`). Loading verifies the table; `status(key)`
    additionally verifies that key's artifacts.
    """

    def __init__(self, root: "str | Path"):
        self.root = Path(root)
        self.table_path = self.root / TABLE
        self.artifact_root = self.root / ARTIFACTS
        self.rows: dict[str, dict] = {}
        self._lock_file = None
        self.load()

    # -- reading -----------------------------------------------------------------------------

    def load(self) -> None:
        """Read the table. A damaged (or missing) table is rebuilt from the run records kept next
        to the artifacts (`artifacts/<key>/_row.json`), so intact runs are not recomputed; it warns
        (`CorruptResultWarning`), and a writer sets the damaged table aside and writes the rebuilt
        one. `self.damage` says what was wrong (None when the table was intact)."""
        self.rows = {}
        self.damage: str | None = None
        self.rebuilt = 0
        if not self.table_path.exists():
            if self._records_exist():  # a writer killed before its first table write: not damage
                self._rebuild(quiet=True)
            return
        try:
            rows = _read_table(self.table_path)
            self._check_own(rows)
        except _Corrupt as e:
            self.damage = f"damaged results table ({e})"
            if self._lock_file is not None:
                self._set_aside(self.table_path)
            self._rebuild()
            return
        for row in rows:
            if config_key(row["run"], json.loads(row["config"])) != row["key"]:
                warnings.warn(
                    f"{self.table_path}: row {row['key']} does not match its config; it will be recomputed",
                    CorruptResultWarning,
                    stacklevel=2,
                )
                continue
            self.rows[row["key"]] = row

    def _check_own(self, rows: list[dict]) -> None:
        """A table that is intact but not this store's (another store's, copied over it) holds runs
        without a folder here: every run this format writes has one (its record, `RECORD`)."""
        if rows and self._records_exist():
            strangers = [r["key"] for r in rows if not (self.artifact_root / str(r["key"])).is_dir()]
            if strangers:
                raise _Corrupt(
                    f"it holds {len(strangers)} run(s) without a folder in {ARTIFACTS}/, e.g. {strangers[0]}: "
                    "another store's table?"
                )

    def is_store(self) -> bool:
        """Whether the folder holds a results table or run records (an empty new store holds a table)."""
        return self.table_path.exists() or self._records_exist()

    def _records_exist(self) -> bool:
        return self.artifact_root.is_dir() and any(self.artifact_root.glob(f"*/{RECORD}"))

    def _rebuild(self, quiet: bool = False, only_missing: bool = False) -> None:
        """Rows from the per-run records; a record whose key does not match its content is skipped
        (its run is recomputed). Artifacts are verified later, by `status`. `only_missing` adds
        the records of runs the table lacks (a writer killed between a record and the table)."""
        before = len(self.rows)
        for path in sorted(self.artifact_root.glob(f"*/{RECORD}")) if self.artifact_root.is_dir() else ():
            if only_missing and path.parent.name in self.rows:
                continue
            try:
                row = json.loads(path.read_text())
                ok = (
                    isinstance(row, dict)
                    and set(COLUMNS) <= set(row)
                    and row["key"] == path.parent.name
                    and config_key(row["run"], json.loads(row["config"])) == row["key"]
                )
            except (OSError, ValueError, TypeError, KeyError, StoreError):
                ok = False
            if ok:
                self.rows[row["key"]] = {c: row[c] for c in COLUMNS}
        self.rebuilt = len(self.rows) - before
        if not quiet and (self.rebuilt or self._lock_file is not None):  # a reader with nothing rebuilt: see .damage
            warnings.warn(
                f"{self.table_path}: {self.damage}; rebuilt {self.rebuilt} run(s) from their records in {ARTIFACTS}/ "
                "(runs without an intact record will be recomputed)",
                CorruptResultWarning,
                stacklevel=3,
            )
        if self._lock_file is not None and self.rebuilt:
            self._write_table()

    def status(self, key: str) -> str | None:
        """ "done" (with every artifact present and intact), "failed", or None (not run / damaged)."""
        row = self.rows.get(key)
        if row is None:
            return None
        if row["status"] == "done":
            for name, art in json.loads(row["artifacts"]).items():
                path = self._artifact_file(key, art)
                if path is None or not path.is_file() or sha256_file(path) != art["sha256"]:
                    warnings.warn(
                        f"{path}: artifact {name!r} of run {key} is missing or damaged; the run will be recomputed",
                        CorruptResultWarning,
                        stacklevel=2,
                    )
                    return None
        return row["status"]

    def check(self) -> list[str]:
        """What is wrong with the store's files, one line each (none: intact): a run's record
        (`RECORD`) missing, unreadable or not its row of the table; a finished run's artifact missing
        or not the SHA-256 its row recorded. Reads every file: `volratio results verify` runs it."""
        problems = []
        for key, row in self.rows.items():
            path = self.artifact_root / key / RECORD
            try:
                rec = json.loads(path.read_text())
                if not isinstance(rec, dict) or {c: rec.get(c) for c in COLUMNS} != row:
                    problems.append(f"{path}: the record of run {key} is not its row in {TABLE}")
            except (OSError, UnicodeDecodeError, ValueError):
                problems.append(f"{path}: the record of run {key} is missing or unreadable")
            if row["status"] != "done":
                continue
            for name, art in json.loads(row["artifacts"]).items():
                file = self._artifact_file(key, art)
                if file is None or not file.is_file() or sha256_file(file) != art["sha256"]:
                    problems.append(f"{file}: artifact {name!r} of run {key} is missing or damaged")
        return problems

    def records(self, keys: Iterable[str] | None = None) -> list[dict]:
        """Rows as plain dicts: key, status, config, metrics, artifacts (names -> paths) and
        artifact_sha256 (names -> the SHA-256 recorded when they were stored), error,
        plus attempts/seconds/host/finished_at. `keys` selects and orders them (missing keys are
        left out); by default all rows in table order."""
        keys = list(self.rows) if keys is None else [k for k in keys if k in self.rows]
        out = []
        for k in keys:
            row = self.rows[k]
            arts = json.loads(row["artifacts"])
            out.append(
                {
                    "key": k,
                    "status": row["status"],
                    "run": row["run"],
                    "version": row["version"],
                    "commit": row["commit"],
                    "config": json.loads(row["config"]),
                    "metrics": json.loads(row["metrics"]),
                    "artifacts": {n: str(self.root / a["file"]) for n, a in arts.items()},
                    "artifact_sha256": {n: a["sha256"] for n, a in arts.items()},  # as recorded when stored
                    "error": row["error"],
                    "traceback": row["traceback"],
                    "attempts": row["attempts"],
                    "seconds": row["seconds"],
                    "host": row["host"],
                    "finished_at": row["finished_at"],
                }
            )
        return out

    def frame(self, keys: Iterable[str] | None = None):
        """A pandas DataFrame, one row per run: key, status, then config entries and metrics as
        columns (nested entries as `a.b`), then error/attempts/seconds."""
        recs = self.records(keys)
        flat = []
        for r in recs:
            row = {"key": r["key"], "status": r["status"]}
            row.update(flatten(r["config"]))
            for name, value in flatten(r["metrics"]).items():
                if name not in row:
                    row[name] = value
                elif row[name] != value:  # a metric that repeats its config entry is shown once
                    row[f"metrics.{name}"] = value
            row.update(error=r["error"], attempts=r["attempts"], seconds=r["seconds"])
            flat.append(row)
        return pd.DataFrame(flat)

    def artifact_path(self, key: str, name: str) -> Path:
        """The verified path of artifact `name` of run `key` (`StoreError` if missing or damaged)."""
        row = self.rows.get(key)
        arts = json.loads(row["artifacts"]) if row else {}
        if name not in arts:
            have = ", ".join(arts) or "none"
            raise StoreError(f"{self.root}: run {key} has no artifact {name!r} (it has: {have})")
        path = self._artifact_file(key, arts[name])
        if path is None or not path.is_file() or sha256_file(path) != arts[name]["sha256"]:
            raise StoreError(
                f"{self.root}: artifact {name!r} of run {key} is missing or damaged; rerun the sweep to recompute it"
            )
        return path

    def artifact(self, key: str, name: str):
        """Load a verified artifact: a numpy array (`.npy`) or a `CoordMLP` (`.safetensors`)."""
        path = self.artifact_path(key, name)
        if path.suffix == ".npy":
            return np.load(path, allow_pickle=False)

        return CoordMLP.load(path)

    def _artifact_file(self, key: str, art: dict) -> Path | None:
        # a row may only name files in its own artifact folder (never ../ anything)
        parts = Path(art.get("file", "")).parts
        if len(parts) != 3 or parts[:2] != (ARTIFACTS, key) or parts[2].startswith("."):
            return None
        return self.root.joinpath(*parts)

    # -- writing -----------------------------------------------------------------------------

    @contextlib.contextmanager
    def writing(self):
        """Hold the store's lock, reload it, set a damaged table aside and remove temporary files
        left by a killed writer. Raises `StoreError` if another process holds the lock."""
        self.root.mkdir(parents=True, exist_ok=True)
        f = open(self.root / LOCK, "a+")
        try:
            _try_lock(f, self.root)
            f.seek(0)
            f.truncate()
            f.write(f"{os.getpid()}\n")
            f.flush()
            self._lock_file = f
            self._remove_temporaries()
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                self.load()
                if not self.damage and self.table_path.exists():
                    self._rebuild(quiet=True, only_missing=True)
            for w in caught:  # re-emit here so the caller's filters apply
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
            yield self
        finally:
            self._lock_file = None
            f.close()  # releases the lock

    def record(self, outcome: dict) -> dict:
        """Write one run's outcome (as returned by `volratio.runs.sweep.execute`): its artifacts first,
        then the table with the new row. Returns the row."""
        if self._lock_file is None:
            raise StoreError("Store.record called outside `with store.writing():`")
        key = outcome["key"]
        arts = {}
        for name, (suffix, data) in sorted(outcome.get("artifacts", {}).items()):
            rel = Path(ARTIFACTS) / key / f"{name}{suffix}"
            with atomic_path(self.root / rel) as tmp:
                tmp.write_bytes(data)
                os.chmod(tmp, _FILE_MODE)
            arts[name] = {"file": rel.as_posix(), "sha256": sha256_bytes(data)}
        previous = self.rows.get(key)
        row = {
            "key": key,
            "run": outcome["run"],
            "version": outcome["version"],
            "commit": outcome.get("commit"),
            "status": outcome["status"],
            "config": canonical_json(outcome["config"]),
            "metrics": json.dumps(outcome.get("metrics", {}), sort_keys=True, separators=(",", ":")),
            "artifacts": json.dumps(arts, sort_keys=True, separators=(",", ":")),
            "error": outcome.get("error"),
            "traceback": outcome.get("traceback"),
            "attempts": (previous["attempts"] if previous else 0) + 1,
            "seconds": float(outcome.get("seconds", 0.0)),
            "host": outcome.get("host"),
            "finished_at": outcome.get("finished_at"),
        }
        # the run's own record, next to its artifacts: the table can be rebuilt from these
        with atomic_path(self.root / ARTIFACTS / key / RECORD) as tmp:
            tmp.write_text(json.dumps(row, sort_keys=True, separators=(",", ":")))
        self.rows[key] = row
        self._write_table()
        return row

    def _write_table(self) -> None:
        rows = list(self.rows.values())
        schema = pa.schema(
            [(c, pa.int64() if c == "attempts" else pa.float64() if c == "seconds" else pa.string()) for c in COLUMNS],
            metadata={"volratio.format": FORMAT, "volratio.rows_sha256": _rows_digest(rows)},
        )
        table = pa.Table.from_pylist(rows, schema=schema)
        with atomic_path(self.table_path) as tmp:
            pq.write_table(table, tmp, compression="zstd", write_page_checksum=True, write_statistics=False)
            os.chmod(tmp, _FILE_MODE)

    def _set_aside(self, path: Path) -> None:
        n = 0
        while (aside := path.with_name(f"{path.name}.corrupt-{n}")).exists():
            n += 1
        os.replace(path, aside)

    def _remove_temporaries(self) -> None:
        # atomic_path names its temporaries ".<name>.<random>.tmp"; a SIGKILL can leave them behind.
        for tmp in self.root.glob(f".{TABLE}.*.tmp"):
            tmp.unlink(missing_ok=True)
        if self.artifact_root.is_dir():
            for tmp in self.artifact_root.glob("*/.*.tmp"):
                tmp.unlink(missing_ok=True)


# ---------------------------------------------------------------------------------------------
# Helpers


class _Corrupt(Exception):
    pass


def _read_table(path: Path) -> list[dict]:
    try:
        # one read of the whole file, then parse from memory: pyarrow opening the path itself may open
        # it more than once (footer, then pages), and a writer's atomic replace in between would give
        # a reader one file's footer and the other's pages (a torn read, seen as damage)
        with open(path, "rb") as f:
            data = f.read()
        table = pq.read_table(pa.BufferReader(data), page_checksum_verification=True)
        meta = table.schema.metadata or {}
        if meta.get(b"volratio.format") == OLD_FORMAT.encode():
            raise StoreError(
                f"{path}: a results table of format {OLD_FORMAT}, whose keys hashed a version tag, not the complete "
                "config; today's keys do not find its runs: write the sweep to a new folder (--out)"
            )
        if meta.get(b"volratio.format") != FORMAT.encode():
            raise _Corrupt(f"not a {FORMAT} table")
        if table.column_names != list(COLUMNS):
            raise _Corrupt(f"unexpected columns {table.column_names}")
        rows = table.to_pylist()
    except (_Corrupt, StoreError):
        raise
    except Exception as e:  # whatever a damaged file makes pyarrow raise (ArrowInvalid, OSError, …)
        detail = " ".join(str(e).split())  # one line: pyarrow's messages can hold newlines
        raise _Corrupt(f"unreadable Parquet: {type(e).__name__}: {detail}") from e
    if _rows_digest(rows).encode() != meta.get(b"volratio.rows_sha256"):
        raise _Corrupt("row checksum mismatch")
    return rows


def _try_lock(f, root: Path) -> None:
    if fcntl is None:  # pragma: no cover - Windows: no advisory locks, rely on the user
        return
    try:
        fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        f.seek(0)
        pid = f.read().strip() or "?"
        raise StoreError(
            f"{root}: the store is being written by another sweep (pid {pid}); wait for it to finish or use another --out"
        ) from None


def flatten(d: dict, prefix: str = "") -> dict:
    """Nested dicts as one level with dotted names: {'a': {'b': 1}} -> {'a.b': 1}."""
    out = {}
    for k, v in d.items():
        if isinstance(v, dict) and v:
            out.update(flatten(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


def encode_array(array) -> tuple[str, bytes]:
    """An array (numpy or torch) as `.npy` bytes — how arrays travel from workers to the store."""
    if hasattr(array, "detach"):
        array = array.detach().cpu().numpy()
    buf = io.BytesIO()
    np.save(buf, np.ascontiguousarray(array), allow_pickle=False)
    return ".npy", buf.getvalue()


def encode_net(net) -> tuple[str, bytes]:
    """A `CoordMLP` as the bytes of its `.safetensors` file (`CoordMLP.save` format)."""
    with tempfile.TemporaryDirectory() as d:
        path = net.save(Path(d) / "net.safetensors")
        return ".safetensors", path.read_bytes()
