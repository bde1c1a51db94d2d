"""One-off migration: the stored runs gain the entries that say which anchor and which reading of δ
they were scored under (kept as a record; run twice, see below).

Two entries were added to the configs runs are keyed by (`volratio.runs.store.config_key`):

- `twin_point` gained `anchor` ("png": the label-anchored judges compare with the twin's training
  image, `target.png` at the scoring resolution; "image": with the target's own image). The stored
  runs of `twins16` and `twins16_picbreeder` were judged against the target's own image, the
  Picbreeder network's render, so they get `anchor = "image"` — not the new default.
- `rescore` gained `anchor` (default "image", what every stored rescore run used) and its `emc2`
  settings gained `delta_scale` (default "absolute", the paper's w ← w + δ, what every stored run used).
  A rescore run's `emc2` settings are now completed to every `EMC2Config` entry, so the rescore runs
  stored before `EMC2Config.engine` existed, or stored on `main` with the engine left out of a
  sampled rescore's config, also get `engine = "torch"` (what each of them ran on, and the default).

For every row under the root, the new entries are added at those values, the script checks that
the result is the run's complete config (`RunFunction.keyed` changes nothing) and that no stored
entry changed value, and the row, its artifacts folder, its `_row.json`, its manifest entry and the
rescore runs that name it move to the new key. The old → new keys go to
`migrate_anchor_delta_scale.json`.

    python tools/migrate_anchor_delta_scale.py results/reference

Run twice (see `migrate_anchor_delta_scale.md`): first on branch `claim1` (679 rows: the twin
chunks and every rescore run then stored), then again after `main` was merged into `claim1`, on
the four networks' chunks taken from `main` (`depth_picbreeder`, `depth_planted`, `depth_scenes`,
`optimizers`), which `main` had meanwhile re-keyed to their nested SP configs
(`tools/migrate_nested_sp.py`): their 615 rescore runs gained `anchor`, `emc2.delta_scale` and
`emc2.engine` again. Rows already complete keep their key and a chunk none of whose rows changed
is not rewritten, so a second run changes nothing. The key map keeps the entries of earlier runs
whose new key is still stored (the twin chunks') and adds this run's (old: the nested keys of
`migrate_nested_sp.json`).
"""

from __future__ import annotations

import copy
import json
import os
import sys
from pathlib import Path

from volratio.runs.registry import get_run
from volratio.runs.store import ARTIFACTS, COLUMNS, RECORD, Store, config_key

# run -> entries added at the value the stored runs were computed with
ADDED = {"twin_point": {"anchor": "image"}, "rescore": {"anchor": "image"}}
ADDED_EMC2 = {"rescore": {"delta_scale": "absolute", "engine": "torch"}}


def completed(row: dict, keymap: dict) -> dict:
    """The complete config of a stored row with the new entries; a rescore names its source's new key."""
    config = _json(row["config"])
    new = copy.deepcopy(config)
    for k, v in ADDED.get(row["run"], {}).items():
        new.setdefault(k, v)
    for k, v in ADDED_EMC2.get(row["run"], {}).items():
        new["emc2"].setdefault(k, v)
    if row["run"] == "rescore":
        src = new["source"]
        src["key"] = keymap.get((src["chunk"], src["key"]), src["key"])
    full = get_run(row["run"]).keyed(new)
    assert full == new, f"{row['key']}: not a complete config after the migration: {sorted(set(full) ^ set(new))}"
    for k, v in config.items():  # every stored entry keeps its value (the source key aside)
        if k == "emc2":
            assert all(new["emc2"][e] == x for e, x in v.items()), f"{row['key']}: emc2 changed"
        elif k != "source":
            assert new[k] == v, f"{row['key']}: {k} changed"
    return new


def migrate(root: Path) -> dict:
    chunks = sorted(p.parent for p in root.glob("*/results.parquet"))
    keymap: dict = {}
    for phase in ("runs", "rescores"):  # runs first, then the rescore runs that name them
        for chunk in chunks:
            store = Store(chunk)
            rows, moved = {}, 0
            for key, row in store.rows.items():
                if (row["run"] == "rescore") != (phase == "rescores") or row["run"] not in ADDED:
                    rows[key] = row
                    continue
                full = completed(row, keymap)
                new = config_key(row["run"], full)
                if new == key and full == _json(row["config"]):
                    rows[key] = row  # already complete: nothing to move
                    continue
                keymap[(chunk.name, key)] = new
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
                moved += 1
            if not moved:
                continue
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
            print(f"{chunk.name} ({phase}): {moved} rows re-keyed")
    return {f"{c}/{old}": new for (c, old), new in keymap.items() if old != new}


def _json(x):
    return json.loads(x) if isinstance(x, str) else dict(x)


def _dump(x) -> str:
    return json.dumps(x, sort_keys=True, separators=(",", ":"), ensure_ascii=True)


if __name__ == "__main__":
    root = Path(sys.argv[1] if len(sys.argv) > 1 else "results/reference")
    keymap = migrate(root)
    out = Path(__file__).with_suffix(".json")
    before = json.loads(out.read_text())["keys"] if out.is_file() else {}
    # an earlier entry whose new key is no longer stored (superseded: a store taken from another
    # branch replaced it, its rows re-keyed from there) is dropped; this run's entries are added
    stored = {f"{c.name}/{k}" for c in root.glob("*/") if (c / "results.parquet").is_file() for k in Store(c).rows}
    merged = {old: new for old, new in before.items() if f"{old.split('/')[0]}/{new}" in stored}
    merged.update(keymap)
    out.write_text(json.dumps({"old chunk/key": "new key", "keys": merged}, indent=1, sort_keys=True) + "\n")
    print(f"{len(keymap)} runs re-keyed now ({len(merged)} in all); old → new keys in {out}")
