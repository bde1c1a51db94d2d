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
once and kept beside the chunk (`recovery.parquet` in its folder, with the `RecoveryConfig` and the
volratio version it was computed under); it is recomputed when a network file's hash, the config or
the version differs, and `verify(chunk)` recomputes a sample and compares.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pandas as pd

from .. import __version__
from ..errors import VolratioError
from ..nets import CoordMLP
from ..rho import recovery
from . import stored
from .store import sha256_file

FILE = "recovery.parquet"
META = "recovery.json"
FIELDS = ("recovery", "monosemanticity", "chance_other", "chance_init", "mono_other", "mono_init")


class RecoveryStoreError(VolratioError, ValueError):
    """A chunk whose networks cannot be scored by recovery as asked."""


def _networks(chunk: str, root) -> list[tuple[dict, str, str]]:
    """`(run, population, file)` of every network file a chunk's runs on planted targets stored."""
    out = []
    for r in stored.runs_of(chunk, root, error=RecoveryStoreError):
        if not r["config"]["target"].startswith("planted:"):
            continue
        for name, path in sorted(r.get("artifacts", {}).items()):
            if name == "net" or name.startswith("net_"):
                out.append((r, name[4:], path))
    if not out:
        raise RecoveryStoreError(
            f"chunk {chunk}: no stored network on a planted target (recovery needs a planted target's primitives, "
            "and runs with keep_net = true)"
        )
    return out


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


def score(run: dict, population: str, path: str, cfg: recovery.RecoveryConfig) -> list[dict]:
    """The rows of one stored network file: one per member."""
    target = run["config"]["target"]
    net = CoordMLP.load(path)
    values = members(net, target, cfg)
    cfg_r = run["config"]
    return [{"key": run["key"], "target": target, "depth": cfg_r.get("depth"), "seed": cfg_r.get("seed"),
             "population": population, "member": k, **{f: values[f][k] for f in FIELDS},
             "net_sha256": sha256_file(Path(path))} for k in range(net.population)]  # fmt: skip


def table(chunk: str, cfg: recovery.RecoveryConfig | None = None, root=None, keep: bool = True) -> pd.DataFrame:
    """Every stored network of `chunk` scored by recovery under `cfg` (default `RecoveryConfig()`),
    read from the chunk's `recovery.parquet` when it was computed for these networks under this
    config and version, else computed and, with `keep`, written there (`keep=False`: a reading the
    store should not keep, e.g. another config tried out)."""
    cfg = cfg or recovery.RecoveryConfig()
    root = Path(stored.DEFAULT_ROOT if root is None else root)
    nets = _networks(chunk, root)
    hashes = sorted({sha256_file(Path(p)) for _, _, p in nets})
    meta = {"config": dataclasses.asdict(cfg), "volratio": __version__, "networks": hashes}
    folder = root / chunk
    if (folder / FILE).exists() and (folder / META).exists() and json.loads((folder / META).read_text()) == meta:
        return pd.read_parquet(folder / FILE)
    out = pd.DataFrame([row for r, pop, path in nets for row in score(r, pop, path, cfg)])
    if keep:
        out.to_parquet(folder / FILE, index=False)
        (folder / META).write_text(json.dumps(meta, indent=1) + "\n")
    return out


def verify(chunk: str, sample: int = 2, root=None, seed: int = 0) -> int:
    """Recompute `sample` seeded network files of the chunk's stored table and compare every value
    exactly; returns how many rows were compared. A difference is a `RecoveryStoreError`."""
    root = Path(stored.DEFAULT_ROOT if root is None else root)
    meta = json.loads((root / chunk / META).read_text())
    cfg = recovery.RecoveryConfig(**meta["config"])
    kept = pd.read_parquet(root / chunk / FILE)
    nets = _networks(chunk, root)
    pick = np.random.default_rng(seed).choice(len(nets), size=min(sample, len(nets)), replace=False)
    n = 0
    for i in pick:
        r, pop, path = nets[i]
        for row in score(r, pop, path, cfg):
            old = kept[(kept.key == row["key"]) & (kept.population == pop) & (kept.member == row["member"])]
            if len(old) != 1 or any(float(old[f].iloc[0]) != row[f] for f in FIELDS):
                raise RecoveryStoreError(f"{chunk}: run {row['key']} {pop or 'net'} member {row['member']} recomputes "
                                         "differently from its stored recovery")  # fmt: skip
            n += 1
    return n
