"""Build the stored controls table of the instruments on planted targets
(`data/controls/planted_controls.csv`, its config and cost in `planted_controls.json`), which
`volratio.depth.stored_controls` reads for the depth evidence page: the book never trains these.

The controls are `volratio.depth.controls.measure` at `ControlsConfig` with the family judge's EMC2
(`emc2:planted-family`) as one more instrument, at settings cut to fit a budget of about 20
CPU-minutes on one core: 20 weights per network, one seed of each negative, 32×32, and the depth
chunks' first TARGETS planted targets (L* = 2 to 5) of twelve. The family judge's EMC2 costs 50 to
120 CPU-s per target at L* ≤ 4 and about 250 at L* = 5; one L* = 7 target had not finished after
470 CPU-s, so the four deepest (L* = 6, 7) are left out. Each target's rows are computed on their
own (every seed depends on the config, not on the other targets), so the run resumes target by target
(`--reverse` runs them last first, for a second process whose table `--merge` adds) and a rebuild
gives the same table bit for bit on the same CPU and torch (checked on the first target):

    OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 PYTHONPATH=. python tools/planted_controls.py [--out DIR] [--resume]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import platform
import sys
import time
from pathlib import Path

import pandas as pd
import torch

from volratio.depth.controls import DEPTH_TARGETS, ControlsConfig, measure
from volratio.depth.stored_controls import CONFIG_FILE, DEFAULT_DIR, TABLE_FILE, config_json
from volratio.judges import DEFAULT_JUDGE
from volratio.util.fileio import write_text_atomic

# the stored run's settings: the depth chunks' 12 targets, the family judge added
TARGETS = 8  # the depth chunks' first eight planted targets (L* = 2..5): the CPU budget above
CONFIG = ControlsConfig(
    targets=DEPTH_TARGETS[:TARGETS],
    res=32,
    seeds=1,
    max_weights=20,
    instruments=(
        "recovery",
        "per-unit",
        "recovery-above-chance",
        "per-unit-above-chance",
        f"emc2:{DEFAULT_JUDGE}",
        "emc2:planted-family",
    ),
)
COMMAND = "OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 PYTHONPATH=. python tools/planted_controls.py"


def read(path: Path) -> pd.DataFrame:
    """A stored table, every float read back exactly as written."""
    return pd.read_csv(path)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_DIR, help="folder of the table (default %(default)s)")
    parser.add_argument("--resume", action="store_true", help="keep the targets already in the table")
    parser.add_argument("--reverse", action="store_true", help="run the targets last first (a second process)")
    parser.add_argument("--merge", type=Path, help="add the targets of this folder's table (same config), then stop")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    table, config = args.out / TABLE_FILE, args.out / CONFIG_FILE
    done, seconds = pd.DataFrame(), 0.0
    if args.resume and table.is_file():
        meta = json.loads(config.read_text())
        if meta["config"] != config_json(CONFIG):
            print(f"{config}: stored for another config; run without --resume", file=sys.stderr)
            return 2
        done, seconds = read(table), meta["cpu_seconds"]
    args.out.mkdir(parents=True, exist_ok=True)
    if args.merge:
        other = json.loads((args.merge / CONFIG_FILE).read_text())
        if other["config"] != config_json(CONFIG) or not args.resume:
            print(f"{args.merge}: give --resume, and a table of the same config", file=sys.stderr)
            return 2
        more = read(args.merge / TABLE_FILE)
        more = more[~more.target.isin(set(done.target))] if len(done) else more
        pending = [(None, more)] if len(more) else []
        seconds += other["cpu_seconds"]
    else:
        pending = [(s, None) for s in (reversed(CONFIG.targets) if args.reverse else CONFIG.targets)]
    for spec, rows in pending:
        if spec is not None and len(done) and spec in set(done.target):
            continue
        if rows is None:
            t0 = time.process_time()
            rows = measure(dataclasses.replace(CONFIG, targets=(spec,))).table
            seconds += time.process_time() - t0
        done = pd.concat([done, rows], ignore_index=True) if len(done) else rows
        order = {t: i for i, t in enumerate(CONFIG.targets)}  # rows in the config's target order, whatever ran first
        done = done.sort_values("target", key=lambda t: t.map(order), kind="stable", ignore_index=True)
        write_text_atomic(table, done.to_csv(index=False))
        finished = [t for t in CONFIG.targets if t in set(done.target)]
        meta = {"config": config_json(CONFIG), "command": COMMAND, "cpu_seconds": round(seconds, 1),
                "cpu": platform.processor() or platform.machine(), "torch": torch.__version__,
                "complete": len(finished) == len(CONFIG.targets), "targets_done": finished}  # fmt: skip
        write_text_atomic(config, json.dumps(meta, indent=1) + "\n")
        print(f"{spec or args.merge}: {len(rows)} rows, {seconds:.0f} CPU-s so far", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
