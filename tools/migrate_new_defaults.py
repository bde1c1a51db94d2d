"""One-off migration: give every stored run the config entries added since it was stored (run once per
added entry; kept as a record).

A stored run's key is the hash of its run name and complete config (`volratio.runs.store.config_key`).
When a config gains an entry, every stored config lacks it, so its key is no longer that of its
complete config. This script re-keys the store once: for every row under `results/reference/`, the
complete config is today's `RunFunction.keyed` of the stored one — the stored entries plus each new
entry at its default — and the row, its artifacts folder, its `_row.json`, its manifest entry and
the rescore runs that name it move to the new key. Only new entries are added: the script checks
that every stored entry keeps its value, so every run means what it meant. A new entry's default
must therefore be what the code did before the entry existed; the note beside this script
(`migrate_new_defaults.md`) lists the entries each run of it added and why their defaults mean that.

    python tools/migrate_new_defaults.py results/reference
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from volratio.runs.registry import get_run
from volratio.runs.store import ARTIFACTS, COLUMNS, RECORD, Store, config_key


def completed(row: dict, keymap: dict) -> tuple[dict, list[str]]:
    """(complete config, the entries added) of a stored row; a rescore names its source's new key."""
    config = json.loads(row["config"]) if isinstance(row["config"], str) else dict(row["config"])
    if row["run"] == "rescore":
        src = config["source"]
        src["key"] = keymap.get((src["chunk"], src["key"]), src["key"])
    full = get_run(row["run"]).keyed(config)
    changed = sorted(k for k in config if k in full and full[k] != config[k] and k != "source")
    assert not changed, f"{row['key']}: stored entries would change: {changed}"
    return full, sorted(set(full) - set(config))


def migrate(root: Path) -> tuple[dict, set]:
    chunks = sorted(p.parent for p in root.glob("*/results.parquet"))
    keymap: dict = {}
    added: set = set()
    for phase in ("runs", "rescores"):  # runs first, then the rescore runs that name them
        for chunk in chunks:
            store = Store(chunk)
            rows = {}
            for key, row in store.rows.items():
                if (row["run"] == "rescore") != (phase == "rescores"):
                    rows[key] = row
                    continue
                full, new_entries = completed(row, keymap)
                added |= set(new_entries)
                new = config_key(row["run"], full)
                keymap[(chunk.name, key)] = new
                if new == key and not new_entries:
                    rows[key] = row
                    continue
                arts = {
                    n: {**a, "file": f"{ARTIFACTS}/{new}/{Path(a['file']).name}"}
                    for n, a in _json(row["artifacts"]).items()
                }
                rows[new] = {**row, "key": new, "config": _dump(full), "artifacts": _dump(arts)}
                if new != key and (chunk / ARTIFACTS / key).exists():
                    os.rename(chunk / ARTIFACTS / key, chunk / ARTIFACTS / new)
                if (chunk / ARTIFACTS / new).exists():
                    (chunk / ARTIFACTS / new / RECORD).write_text(
                        json.dumps({c: rows[new][c] for c in COLUMNS}, sort_keys=True, separators=(",", ":"))
                    )
            if rows != store.rows:
                man = json.loads((chunk / "manifest.json").read_text())
                man["runs"] = {
                    keymap.get((chunk.name, old), old): {
                        **v,
                        "config": _json(rows[keymap.get((chunk.name, old), old)]["config"]),
                    }
                    for old, v in man["runs"].items()
                }
                (chunk / "manifest.json").write_text(json.dumps(man, indent=1, sort_keys=False) + "\n")
                with store.writing():
                    store.rows = rows
                    store._write_table()
                print(
                    f"{chunk.name} ({phase}): {sum(1 for k in rows if k not in Store(chunk).rows or True)} rows, re-keyed"
                )
    return {f"{c}/{old}": new for (c, old), new in keymap.items() if old != new}, added


def _json(x):
    return json.loads(x) if isinstance(x, str) else dict(x)


def _dump(x) -> str:
    return json.dumps(x, sort_keys=True, separators=(",", ":"), ensure_ascii=True)


if __name__ == "__main__":
    root = Path(sys.argv[1] if len(sys.argv) > 1 else "results/reference")
    keymap, added = migrate(root)
    out = Path(__file__).with_suffix(".json")
    out.write_text(
        json.dumps(
            {"added entries": sorted(added), "old chunk/key": "new key", "keys": keymap}, indent=1, sort_keys=True
        )
        + "\n"
    )
    print(f"{len(keymap)} runs re-keyed; entries added: {sorted(added)}; old → new keys in {out}")
