"""One-off migration of the stored reference results to one meaning per run (run once; kept as a record).

Before it, a stored run's key hashed its run function's old import path, its config *as the sweep gave
it* and a version tag, and an entry the config left out meant what a frozen table of readings said.
This script read every row under `results/reference/` through that reading one last time and
rewrote it so that the row alone says what ran:

- `config` ← the run's complete config (every entry of its run function's config, as
  `volratio.runs.registry.RunFunction.keyed` gives it), with `legacy_rows` dropped (false in every
  row; the field is gone);
- `run` ← the run function's registry name (`depth_point`, not `volratio.depth_runs:depth_point`);
- `key` ← `volratio.runs.store.config_key(run, config)`, the hash of run name and complete config;
- `commit` (a new column) ← the git commit of the session that stored the run (from the chunk's
  manifest); `version` keeps the library version that ran it: provenance, never part of the key;
- `artifacts/OLD/` is renamed `artifacts/NEW/`; a rescore run's `source.key` names its source run's
  new key; each manifest's runs are keyed by the new keys and hold the complete configs, and its spec
  loses `version`.

Before writing, it checks that each complete config is a fixed point of today's parse (parsing it
gives the same config as the old reading did), so every run means exactly what it meant. The map
from old keys to new ones is written to `tools/migrate_store_keys.json`; what the run did is in
`tools/migrate_store_keys.md`. It needs the code it was written against (the commit named there):
the library no longer has the old reading, and this script is imported by nothing.

    python tools/migrate_store_keys.py results/reference
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pyarrow.parquet as pq

from volratio.runs import run_versions
from volratio.runs.registry import get_run, run_name
from volratio.runs.store import ARTIFACTS, COLUMNS, RECORD, Store, config_key

OLD_COLUMNS = tuple(c for c in COLUMNS if c != "commit")
DROPPED = {"legacy_rows": False}  # entries the library no longer has, and the value every row must hold


def old_rows(chunk: Path) -> list[dict]:
    rows = pq.read_table(chunk / "results.parquet").to_pylist()
    assert all(tuple(r) == OLD_COLUMNS for r in rows), chunk
    return rows


def complete(row: dict, keymap: dict) -> tuple[str, dict]:
    """(registry name, complete config) of an old row, read by the version that stored it."""
    name = run_name(row["run"])
    entry = get_run(name, run_versions.version_of(row["version"]))
    config = json.loads(row["config"])
    if name == "rescore":
        src = config["source"]
        src["key"] = keymap[(src["chunk"], src["key"])]
    full = entry.complete_fn(entry.parse(dict(config)))
    for k, v in DROPPED.items():
        if k in full:
            assert full.pop(k) == v, (row["key"], k)
    today = get_run(name, run_versions.LATEST)
    again = today.complete_fn(today.parse(json.loads(json.dumps(full))))
    assert {k: v for k, v in again.items() if k not in DROPPED} == full, f"{row['key']}: not a fixed point"
    return name, full


def migrate(root: Path) -> dict:
    chunks = sorted(p.parent for p in root.glob("*/results.parquet"))
    keymap: dict = {}
    done: dict = {}
    # runs first, then the rescore runs that name them
    for phase in ("runs", "rescores"):
        for chunk in chunks:
            man = json.loads((chunk / "manifest.json").read_text())
            for row in old_rows(chunk):
                if (run_name(row["run"]) == "rescore") != (phase == "rescores"):
                    continue
                name, full = complete(row, keymap)
                new = config_key(name, full)
                keymap[(chunk.name, row["key"])] = new
                session = man["sessions"][man["runs"][row["key"]]["session"] - 1]
                arts = {
                    n: {**a, "file": f"{ARTIFACTS}/{new}/{Path(a['file']).name}"}
                    for n, a in json.loads(row["artifacts"]).items()
                }
                done[(chunk.name, row["key"])] = {
                    **row,
                    "key": new,
                    "run": name,
                    "commit": session.get("commit"),
                    "config": json.dumps(full, sort_keys=True, separators=(",", ":"), ensure_ascii=True),
                    "artifacts": json.dumps(arts, sort_keys=True, separators=(",", ":")),
                }
    for chunk in chunks:
        order = [r["key"] for r in old_rows(chunk)]
        man = json.loads((chunk / "manifest.json").read_text())
        rows = {}
        for old in order:
            row = {c: done[(chunk.name, old)][c] for c in COLUMNS}
            os.rename(chunk / ARTIFACTS / old, chunk / ARTIFACTS / row["key"])
            (chunk / ARTIFACTS / row["key"] / RECORD).write_text(json.dumps(row, sort_keys=True, separators=(",", ":")))
            rows[row["key"]] = row
        man["spec"].pop("version", None)
        man["runs"] = {
            keymap[(chunk.name, old)]: {**man["runs"][old], "config": json.loads(done[(chunk.name, old)]["config"])}
            for old in man["runs"]
        }
        (chunk / "manifest.json").write_text(json.dumps(man, indent=1, sort_keys=False) + "\n")
        (chunk / "results.parquet").unlink()
        store = Store(chunk)
        with store.writing():
            store.rows = rows
            store._write_table()
        assert list(Store(chunk).rows) == list(rows), chunk
        print(f"{chunk.name}: {len(rows)} rows rewritten")
    return {f"{c}/{old}": new for (c, old), new in keymap.items()}


if __name__ == "__main__":
    root = Path(sys.argv[1] if len(sys.argv) > 1 else "results/reference")
    keymap = migrate(root)
    out = Path(__file__).with_suffix(".json")
    out.write_text(json.dumps({"old chunk/key": "new key", "keys": keymap}, indent=1, sort_keys=True) + "\n")
    print(f"{len(keymap)} runs; old → new keys in {out}")
