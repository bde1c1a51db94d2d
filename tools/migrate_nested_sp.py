"""One-off migration: the depth runs' SP settings become one nested `sp` config (run once; kept as a record).

What it did (`python tools/migrate_nested_sp.py results/reference`, at the commit that made
`volratio.depth.point.Settings` nest `sp: SPConfig`):

- `depth_point` and `optimizer_point` runs stored seven flat SP entries, from which the run built an
  `SPConfig` (every other entry at SPConfig's default, seeded by the run's `seed`, retraining with the
  run's own training settings). Today the run's config nests that `SPConfig` (`sp.tau`, `sp.rounds`, …,
  every entry of it but `seed` and `train`, which the run still sets). For each such row the entries
  are renamed (`RENAMED`), today's `RunFunction.keyed` completes the config (SPConfig's other entries
  at their defaults), and the script checks, row by row, that every other entry keeps its value and
  that the `SPConfig` the run builds now equals the one it built before: each run means what it meant.
- A run's key is the hash of its run name and complete config, so every such row gets a new key. Its
  artifacts folder is renamed to the new key (the store's layout stays "artifacts/KEY/"), with the
  row's artifact paths and its `_row.json`; metrics, artifacts and their SHA-256 are untouched.
- The rescore runs of these chunks name their source by key: `source.key` becomes the source's new
  key, which re-keys the rescore run too (nothing else in it changes).
- Each chunk's `manifest.json`: its runs re-keyed with their new configs, and its spec's entries renamed
  as in `examples/sweeps/reference.toml`.

Old → new keys are written to `migrate_nested_sp.json` beside this script. The library never imports
this file.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from volratio.prune import SPConfig
from volratio.runs.registry import get_run
from volratio.runs.store import ARTIFACTS, COLUMNS, RECORD, Store, config_key
from volratio.train import TrainConfig

RUNS = ("depth_point", "optimizer_point")
RENAMED = {  # flat entry -> its place in the nested SP config
    "tau": "sp.tau",
    "sp_rounds": "sp.rounds",
    "retrain_steps": "sp.retrain_steps",
    "retrain_lr_factor": "sp.retrain_lr_factor",
    "sp_per_round": "sp.per_round",
    "sp_compensate": "sp.compensate",
    "sp_loss_factor": "sp.loss_factor",
}


def sp_before(c: dict) -> SPConfig:
    """The SPConfig a depth run built from its flat entries (the code this migration replaces)."""
    tc = TrainConfig(steps=c["steps"], optimizer=c["optimizer"], lr=c["lr"], muon_lr=c["muon_lr"],
                     adamw_lr=c["adamw_lr"], device=c["device"], path=c["train_path"])  # fmt: skip
    return SPConfig(tau=c["tau"], rounds=c["sp_rounds"], retrain_steps=c["retrain_steps"],
                    retrain_lr_factor=c["retrain_lr_factor"], compensate=c["sp_compensate"],
                    per_round=c["sp_per_round"], seed=c["seed"], train=tc, loss_factor=c["sp_loss_factor"])  # fmt: skip


def nested(run: str, old: dict) -> dict:
    """The complete config of a stored depth run with flat SP entries, checked to mean the same run."""
    missing = sorted(set(RENAMED) - set(old))
    assert not missing, f"{run}: stored config lacks {missing}"
    given = {RENAMED.get(k, k): v for k, v in old.items()}
    entry = get_run(run)
    full = entry.keyed(given)
    changed = sorted(k for k in given if full.get(k) != given[k])
    assert not changed, f"{run}: stored entries would change: {changed}"
    cfg = entry.parse(dict(full))
    tc = sp_before(old).train
    assert cfg.sp_config(cfg.seed, tc) == sp_before(old), f"{run}: SP would differ"
    assert full == entry.keyed(full)
    return full


def migrate(root: Path) -> dict:
    keymap: dict = {}  # (chunk, old key) -> new key
    for chunk in sorted(p.parent for p in root.glob("*/results.parquet")):
        store = Store(chunk)
        if not any(r["run"] in RUNS for r in store.rows.values()):
            continue
        moved = {}  # old key -> the row under its new key
        for phase in ("runs", "rescores"):  # the runs first: a rescore names its source's new key
            for key, row in store.rows.items():
                config = _json(row["config"])
                if phase == "runs" and row["run"] in RUNS:
                    full = nested(row["run"], config)
                elif phase == "rescores" and row["run"] == "rescore" and config["source"]["run"] in RUNS:
                    src = config["source"]
                    config["source"] = {**src, "key": keymap[(src["chunk"], src["key"])]}
                    full = get_run("rescore").keyed(config)
                else:
                    continue
                new = config_key(row["run"], full)
                keymap[(chunk.name, key)] = new
                arts = {n: {**a, "file": f"{ARTIFACTS}/{new}/{Path(a['file']).name}"}
                        for n, a in _json(row["artifacts"]).items()}  # fmt: skip
                moved[key] = {**row, "key": new, "config": _dump(full), "artifacts": _dump(arts)}
                if (chunk / ARTIFACTS / key).exists():
                    os.rename(chunk / ARTIFACTS / key, chunk / ARTIFACTS / new)
                    (chunk / ARTIFACTS / new / RECORD).write_text(
                        json.dumps({c: moved[key][c] for c in COLUMNS}, sort_keys=True, separators=(",", ":"))
                    )
        rows = {moved[k]["key"] if k in moved else k: moved.get(k, r) for k, r in store.rows.items()}  # same order
        assert len(rows) == len(store.rows), chunk
        man = json.loads((chunk / "manifest.json").read_text())
        runs = {}
        for old, v in man["runs"].items():
            new = keymap.get((chunk.name, old), old)
            runs[new] = {**v, "config": _json(rows[new]["config"])}
        man["runs"] = runs
        spec = man["spec"]
        spec["config"] = {RENAMED.get(k, k): v for k, v in spec.get("config", {}).items()}
        spec["grid"] = {RENAMED.get(k, k): v for k, v in spec.get("grid", {}).items()}
        spec["cases"] = [{RENAMED.get(k, k): v for k, v in c.items()} for c in spec.get("cases", [])]
        (chunk / "manifest.json").write_text(json.dumps(man, indent=1, sort_keys=False) + "\n")
        with store.writing():
            store.rows = rows
            store._write_table()
        print(f"{chunk.name}: {sum(1 for (c, _) in keymap if c == chunk.name)} of {len(rows)} rows re-keyed")
    return {f"{c}/{old}": new for (c, old), new in keymap.items()}


def _json(x):
    return json.loads(x) if isinstance(x, str) else dict(x)


def _dump(x) -> str:
    return json.dumps(x, sort_keys=True, separators=(",", ":"), ensure_ascii=True)


if __name__ == "__main__":
    root = Path(sys.argv[1] if len(sys.argv) > 1 else "results/reference")
    keymap = migrate(root)
    out = Path(__file__).with_suffix(".json")
    out.write_text(json.dumps({"old chunk/key": "new key", "keys": keymap}, indent=1, sort_keys=True) + "\n")
    print(f"{len(keymap)} runs re-keyed; old → new keys in {out}")
