"""One-off migration: interference runs nest their training and SP settings (run once; kept as a record).

What it did (`python tools/migrate_nested_train.py results/reference`, at the commit that made
`volratio.experiments.interference.Config` nest `train: TrainConfig` and `sp: SPConfig`):

- `interference` runs stored flat training entries (`steps`, `device`, `train_path`), from which the
  run built a `TrainConfig` (every other entry at TrainConfig's default), and flat SP entries
  (`sp_rounds`, `sp_retrain`, `sp_loss_factor`, `sp_retrain_lr_factor`, `sp_compensate`), from which
  it built one `SPConfig` per threshold of `taus` (every other entry at SPConfig's default, seeded by
  the run's `seed`, retraining with a `TrainConfig` of the run's device and path). Today the run's
  config nests that `TrainConfig` (`train.steps`, …, every entry) and the `SPConfig` (`sp.rounds`, …,
  every entry of it but `tau`, `seed` and `train`, which the run sets from `taus`, `seed` and `train`).
  For each such row the entries are renamed (`RENAMED`), today's `RunFunction.keyed` completes the
  config (the nested configs' other entries at their defaults), and the script checks, row by row,
  that every other entry keeps its value, that the dense training's `TrainConfig` equals the one the
  run built before, and that each threshold's `SPConfig` equals the one it built before up to its
  `train.steps`, which SP ignores (it retrains `sp.retrain_steps` per round: `TrainConfig.finetune`):
  each run means what it meant.
- A run's key is the hash of its run name and complete config, so every such row gets a new key. Its
  artifacts folder is renamed to the new key (the store's layout stays "artifacts/KEY/"), with the
  row's artifact paths and its `_row.json`; metrics, artifacts and their SHA-256 are untouched.
- Each chunk's `manifest.json`: its runs re-keyed with their new configs, and its spec's entries renamed.

Old → new keys are written to `migrate_nested_train.json` beside this script. The library never
imports this file.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import replace
from pathlib import Path

from volratio.prune import SPConfig
from volratio.runs.registry import get_run
from volratio.runs.store import ARTIFACTS, COLUMNS, RECORD, Store, config_key
from volratio.train import TrainConfig

RENAMED = {  # run -> {flat entry -> its place in the nested config}
    "interference": {
        "steps": "train.steps",
        "device": "train.device",
        "train_path": "train.path",
        "sp_rounds": "sp.rounds",
        "sp_retrain": "sp.retrain_steps",
        "sp_loss_factor": "sp.loss_factor",
        "sp_retrain_lr_factor": "sp.retrain_lr_factor",
        "sp_compensate": "sp.compensate",
    },
    "emc2_dense": {"dense_steps": "train.steps", "train_path": "train.path"},
}
# run -> entries dropped: nested entries the run ignored (it set them from its own), now its `RUN_SET`
DROPPED = {"interference": (), "emc2_dense": ("sp.seed", "sp.train")}


def interference_before(c: dict) -> tuple[TrainConfig, list[SPConfig]]:
    """The dense training and the SP configs an interference run built from its flat entries (the
    code this migration replaces)."""
    tc = TrainConfig(steps=c["steps"], device=c["device"], path=c["train_path"])
    sps = [SPConfig(tau=tau, rounds=c["sp_rounds"], retrain_steps=c["sp_retrain"],
                    retrain_lr_factor=c["sp_retrain_lr_factor"], compensate=c["sp_compensate"], seed=c["seed"],
                    train=TrainConfig(device=c["device"], path=c["train_path"]), loss_factor=c["sp_loss_factor"])
           for tau in c["taus"]]  # fmt: skip
    return tc, sps


def interference_now(cfg) -> tuple[TrainConfig, list[SPConfig]]:
    return cfg.train, [cfg.sp_config(tau) for tau in cfg.taus]


def emc2_dense_before(c: dict) -> tuple[TrainConfig, list[SPConfig]]:
    """The dense training and the SP config an emc2_dense run built from its entries (the code this
    migration replaces: `SPConfig(**{**asdict(cfg.sp), "train": tc, "seed": cfg.seed})`)."""
    tc = TrainConfig(steps=c["dense_steps"], device=c["device"], path=c["train_path"])
    sp = {k[3:]: v for k, v in c.items() if k.startswith("sp.") and not k.startswith("sp.train.")}
    sp["tau_schedule"] = tuple(sp["tau_schedule"])
    return tc, [SPConfig(**{**sp, "train": tc, "seed": c["seed"]})]


def emc2_dense_now(cfg) -> tuple[TrainConfig, list[SPConfig]]:
    return cfg.train_config(), [cfg.sp_config()]


BUILT = {"interference": (interference_before, interference_now), "emc2_dense": (emc2_dense_before, emc2_dense_now)}


def _steps_ignored(s: SPConfig) -> SPConfig:
    return replace(s, train=replace(s.train, steps=0))


def nested(run: str, old: dict) -> dict:
    """The complete config of a stored run with flat entries, checked to mean the same run."""
    renamed = RENAMED[run]
    missing = sorted(set(renamed) - set(old))
    assert not missing, f"{run}: stored config lacks {missing}"
    dropped = [k for k in old if any(k == d or k.startswith(f"{d}.") for d in DROPPED[run])]
    given = {renamed.get(k, k): v for k, v in old.items() if k not in dropped}
    entry = get_run(run)
    full = entry.keyed(given)
    changed = sorted(k for k in given if full.get(k) != given[k])
    assert not changed, f"{run}: stored entries would change: {changed}"
    cfg = entry.parse(dict(full))
    before, now = BUILT[run]
    tc_old, sps_old = before(old)
    tc_new, sps_new = now(cfg)
    assert tc_new == tc_old, f"{run}: training would differ"
    assert [_steps_ignored(s) for s in sps_new] == [_steps_ignored(s) for s in sps_old], f"{run}: SP would differ"
    assert full == entry.keyed(full)
    return full


def migrate(root: Path) -> dict:
    keymap: dict = {}  # (chunk, old key) -> new key
    for chunk in sorted(p.parent for p in root.glob("*/results.parquet")):
        store = Store(chunk)
        if not any(r["run"] in RENAMED for r in store.rows.values()):
            continue
        if not any(
            set(RENAMED[r["run"]]) & set(_json(r["config"])) for r in store.rows.values() if r["run"] in RENAMED
        ):
            continue  # migrated already
        moved = {}  # old key -> the row under its new key
        for key, row in store.rows.items():
            if row["run"] not in RENAMED or not set(RENAMED[row["run"]]) & set(_json(row["config"])):
                continue  # another run function, or a row migrated already (the script ran twice)
            full = nested(row["run"], _json(row["config"]))
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
        renamed = RENAMED.get(spec["run"], {})
        spec["config"] = {renamed.get(k, k): v for k, v in spec.get("config", {}).items()}
        spec["grid"] = {renamed.get(k, k): v for k, v in spec.get("grid", {}).items()}
        spec["cases"] = [{renamed.get(k, k): v for k, v in c.items()} for c in spec.get("cases", [])]
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
    done = json.loads(out.read_text())["keys"] if out.exists() else {}  # what an earlier pass re-keyed
    out.write_text(
        json.dumps({"old chunk/key": "new key", "keys": {**done, **keymap}}, indent=1, sort_keys=True) + "\n"
    )
    print(f"{len(keymap)} runs re-keyed; old → new keys in {out}")
