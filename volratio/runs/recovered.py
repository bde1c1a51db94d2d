"""The judge-free score of stored networks: every network a chunk's runs stored on a planted target,
scored by how well its hidden units recover the target's primitives (`volratio.rho.recovery`),
without retraining and without a judge.

`table(chunk)` gives one row per stored network: the run's `key`, `target`, `depth`, `seed` and, for
a run that stored several populations (the sparse regime's `net_<method>_<checkpoint>`), the
`population`; the member `member`; `recovery` and `monosemanticity`; their chance levels against
other targets' primitives (`chance_other`, `mono_other`) and at initialisation (`chance_init`,
`mono_init`); and `net_sha256`, the file it was read from. Whether a network collapsed is the run's
own record, which its reader applies (every claim scores a collapsed network 0).

Scoring every network of a chunk takes about 0.3 CPU-seconds a network, so the table is computed
once and kept beside the chunk (`recovery.parquet` in its folder), with its metadata
(`recovery.json`: the `RecoveryConfig` and the volratio version it was computed under, the SHA-256
of every network file it read, and `table_sha256`, the SHA-256 of the table file). It is recomputed
when a network file's hash, the config or the version differs.

Integrity (the rules of the store, `volratio.runs.store`, for a table derived from it):

- the table and then its metadata are each written to a temporary name and renamed into place, the
  metadata last, so a writer killed in between leaves a table its metadata does not vouch for;
- a reader that finds the kept table or its metadata damaged, missing or disagreeing (the table's
  SHA-256 is not the metadata's) recomputes it, with a warning line saying so
  (`volratio.runs.store.CorruptResultWarning`), and keeps the new one;
- every network is checked against the SHA-256 its run recorded before it is read (as the score
  stage does): a damaged network is a `RecoveryStoreError` naming the file, never a different score;
- `verify(chunk)` checks the kept table against its metadata and recomputes a seeded sample exactly
  (`volratio results verify` runs it for every chunk that keeps one).

The tables kept beside the stored chunks were given their SHA-256 by `tools/seal_recovery_tables.py`,
after every row was recomputed exactly.
"""

from __future__ import annotations

import dataclasses
import io
import json
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from .. import __version__
from ..errors import VolratioError
from ..nets import CoordMLP
from ..rho import recovery
from ..util.fileio import atomic_path
from . import stored
from .store import CorruptResultWarning, sha256_bytes, sha256_file

FILE = "recovery.parquet"
META = "recovery.json"
FIELDS = ("recovery", "monosemanticity", "chance_other", "chance_init", "mono_other", "mono_init")


class RecoveryStoreError(VolratioError, ValueError):
    """A chunk whose networks cannot be scored by recovery as asked."""


class StaleTable(RecoveryStoreError):
    """A kept table, intact, computed for other networks, config or version than the chunk's now:
    not damage; `table` recomputes it when it is next read."""


@dataclasses.dataclass(frozen=True)
class Network:
    """One stored network file of a chunk: its run (a `volratio.runs.stored.records` entry), the
    population it holds ("" for the artifact `net`), its path and the SHA-256 its run recorded."""

    run: dict
    population: str
    path: str
    sha256: str


def _networks(chunk: str, root) -> list[Network]:
    """Every network file a chunk's runs on planted targets stored."""
    out = []
    for r in stored.runs_of(chunk, root, error=RecoveryStoreError):
        if not r["config"]["target"].startswith("planted:"):
            continue
        for name, path in sorted(r.get("artifacts", {}).items()):
            if name == "net" or name.startswith("net_"):
                out.append(Network(r, name[4:], path, r["artifact_sha256"][name]))
    if not out:
        raise RecoveryStoreError(
            f"chunk {chunk}: no stored network on a planted target (recovery needs a planted target's primitives, "
            "and runs with keep_net = true)"
        )
    return out


def _checked(chunk: str, net: Network) -> str:
    """The network file's SHA-256, after checking it is the one its run recorded."""
    path = Path(net.path)
    if not path.is_file() or sha256_file(path) != net.sha256:
        raise RecoveryStoreError(
            f"{path}: network of run {net.run['key']} in chunk {chunk} is missing or damaged (not the SHA-256 its "
            "run recorded); restore the chunk (`git checkout` for a committed one) or re-run it"
        )
    return net.sha256


def members(net: CoordMLP, target: str, cfg: recovery.RecoveryConfig | None = None) -> dict:
    """The judge-free score of every member of `net`, trained on the planted target `target`, under
    `cfg` (default `RecoveryConfig()`): `{field: [value per member]}` for each of `FIELDS`
    (`volratio.rho.RhoError` for a target that is not planted). The one scorer of a stored network
    (`score`) and of one in memory (the experiments' score stage under `volratio.emc2.reading.RECOVERY`)."""
    cfg = cfg or recovery.RecoveryConfig()
    s, c = recovery.structure(net, target, cfg), recovery.chance(net, target, cfg)
    values = (s.recovery, s.monosemanticity, c.recovery_other, c.recovery_init, c.monosemanticity_other,
              c.monosemanticity_init)  # fmt: skip
    return {f: [float(x) for x in v] for f, v in zip(FIELDS, values)}


def score(net: Network, cfg: recovery.RecoveryConfig) -> list[dict]:
    """The rows of one stored network file (checked by its caller, `_checked`): one per member."""
    run, target = net.run, net.run["config"]["target"]
    model = CoordMLP.load(net.path)
    values = members(model, target, cfg)
    cfg_r = run["config"]
    return [{"key": run["key"], "target": target, "depth": cfg_r.get("depth"), "seed": cfg_r.get("seed"),
             "population": net.population, "member": k, **{f: values[f][k] for f in FIELDS},
             "net_sha256": net.sha256} for k in range(model.population)]  # fmt: skip


def table(chunk: str, cfg: recovery.RecoveryConfig | None = None, root=None, keep: bool = True) -> pd.DataFrame:
    """Every stored network of `chunk` scored by recovery under `cfg` (default `RecoveryConfig()`),
    read from the chunk's `recovery.parquet` when it was computed for these networks under this
    config and version and is intact, else computed and, with `keep`, written there (`keep=False`: a
    reading the store should not keep, e.g. another config tried out). A kept table found damaged is
    recomputed with a warning saying so (see the module's docstring)."""
    cfg = cfg or recovery.RecoveryConfig()
    root = Path(stored.DEFAULT_ROOT if root is None else root)
    nets = _networks(chunk, root)
    meta = _meta(cfg, sorted({_checked(chunk, n) for n in nets}))
    folder = root / chunk
    kept, damage = _kept(folder, meta)
    if kept is not None:
        return kept
    if damage:
        warnings.warn(
            f"{folder / FILE}: {damage}; recomputing it from the chunk's stored networks", CorruptResultWarning, 2
        )
    out = _scored(nets, cfg)
    if keep:
        _write(folder, out, meta)
    return out


def recompute(chunk: str, cfg: recovery.RecoveryConfig, root=None) -> pd.DataFrame:
    """Every stored network of `chunk` scored anew under `cfg` (each file checked against its run's
    SHA-256 first), as `table` computes it; nothing read from or written to the kept table."""
    root = Path(stored.DEFAULT_ROOT if root is None else root)
    nets = _networks(chunk, root)
    for n in nets:
        _checked(chunk, n)
    return _scored(nets, cfg)


def _scored(nets: list[Network], cfg: recovery.RecoveryConfig) -> pd.DataFrame:
    return pd.DataFrame([row for n in nets for row in score(n, cfg)])


def _meta(cfg: recovery.RecoveryConfig, hashes: list) -> dict:
    return {"config": dataclasses.asdict(cfg), "volratio": __version__, "networks": hashes}


def _write(folder: Path, out: pd.DataFrame, meta: dict) -> None:
    """The table, then its metadata holding the table's SHA-256: each renamed into place."""
    with atomic_path(folder / FILE) as tmp:
        out.to_parquet(tmp, index=False)
        digest = sha256_file(tmp)
    with atomic_path(folder / META) as tmp:
        tmp.write_text(json.dumps({**meta, "table_sha256": digest}, indent=1) + "\n")


def _kept(folder: Path, meta: dict | None) -> tuple:
    """`(table, None)` when the kept table is intact and (with `meta`) was computed for `meta`;
    `(None, what is wrong)` when it is damaged; `(None, None)` when there is none or it is another's."""
    table_path, meta_path = folder / FILE, folder / META
    if not table_path.exists() and not meta_path.exists():
        return None, None
    try:
        have = json.loads(meta_path.read_text())
        if not isinstance(have, dict) or not isinstance(have.get("networks"), list):
            raise ValueError("not a recovery table's metadata")
    except (OSError, UnicodeDecodeError, ValueError) as e:
        return None, f"its metadata {META} is missing or damaged ({' '.join(str(e).split())})"
    if not table_path.is_file():
        return None, f"the table is missing beside its metadata {META}"
    data = table_path.read_bytes()  # read once: hashed, then parsed
    if sha256_bytes(data) != have.get("table_sha256"):
        return None, f"the table does not match the SHA-256 in {META}"
    if meta is not None and {k: have.get(k) for k in meta} != meta:
        return None, None  # an intact table of other networks, config or version: recomputed quietly
    try:
        kept = pd.read_parquet(io.BytesIO(data))
    except Exception as e:  # whatever a damaged file makes pyarrow raise (ArrowInvalid, OSError, …)
        return None, f"the table is unreadable ({type(e).__name__}: {' '.join(str(e).split())})"
    columns = {"key", "population", "member", "net_sha256", *FIELDS}
    if not columns <= set(kept.columns) or set(kept.net_sha256) != set(have["networks"]):
        return None, f"the table does not hold the networks {META} names"
    return kept, None


def check(chunk: str, root=None) -> pd.DataFrame:
    """The kept table of `chunk`, checked against its metadata and the chunk's networks (their files
    against their runs' SHA-256); `RecoveryStoreError`, naming what is wrong and the fix, when it is
    damaged or missing, `StaleTable` when it is intact but out of date."""
    root = Path(stored.DEFAULT_ROOT if root is None else root)
    folder = root / chunk
    try:
        have = json.loads((folder / META).read_text())
        cfg = recovery.RecoveryConfig(**have["config"])
    except (OSError, UnicodeDecodeError, ValueError, TypeError, KeyError):
        cfg = None
    nets = _networks(chunk, root)
    meta = None if cfg is None else _meta(cfg, sorted({_checked(chunk, n) for n in nets}))
    kept, damage = _kept(folder, meta)
    if kept is None and damage is None:
        raise StaleTable(
            f"{folder / FILE}: computed for other networks, config or version than the chunk's now; "
            f"volratio.runs.recovered.table({chunk!r}) recomputes it when it is next read"
        )
    if kept is None:
        raise RecoveryStoreError(
            f"{folder / FILE}: {damage}; recompute it with volratio.runs.recovered.table({chunk!r}) "
            "(or restore it with `git checkout` for a committed chunk)"
        )
    return kept


def verify(chunk: str, sample: int = 2, root=None, seed: int = 0) -> int:
    """Check the kept table of `chunk` (`check`), then recompute `sample` seeded network files of it
    and compare every value exactly; returns how many rows were compared. A damaged table or a
    difference is a `RecoveryStoreError`."""
    root = Path(stored.DEFAULT_ROOT if root is None else root)
    kept = check(chunk, root)
    cfg = recovery.RecoveryConfig(**json.loads((root / chunk / META).read_text())["config"])
    nets = _networks(chunk, root)
    pick = np.random.default_rng(seed).choice(len(nets), size=min(sample, len(nets)), replace=False)
    n = 0
    for i in pick:
        net = nets[i]
        for row in score(net, cfg):
            old = kept[(kept.key == row["key"]) & (kept.population == net.population) & (kept.member == row["member"])]
            if len(old) != 1 or any(float(old[f].iloc[0]) != row[f] for f in FIELDS):
                raise RecoveryStoreError(f"{chunk}: run {row['key']} {net.population or 'net'} member {row['member']} "
                                         "recomputes differently from its stored recovery")  # fmt: skip
            n += 1
    return n
