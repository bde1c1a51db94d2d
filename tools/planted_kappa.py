"""Build the stored table of the image judges' EMC2 verdicts against the family judge's on
single-weight perturbations of the stored planted networks (`data/planted_kappa/`), which
`volratio.calibration.planted_kappa.load` reads back: the book never recomputes it.

The settings are `PlantedKappaConfig()` (two stored network files per chunk and planted target, ten
weights each, δ ∈ {±0.5, ±1}, 32×32). Each network's rows depend only on the config and the network,
so the run resumes network by network and a rebuild gives the same table bit for bit on the same CPU
and torch:

    OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 PYTHONPATH=. python tools/planted_kappa.py [--out DIR] [--resume]
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

import pandas as pd
import torch

from volratio.calibration.planted_kappa import (
    CONFIG_FILE,
    DEFAULT_DIR,
    FAMILY,
    KAPPA_FLOOR,
    TABLE_FILE,
    PlantedKappaConfig,
    config_json,
    judge_network,
    kappa,
    sample,
)
from volratio.judges import DEFAULT_JUDGE
from volratio.util.fileio import write_text_atomic

CONFIG = PlantedKappaConfig()
COMMAND = "OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 PYTHONPATH=. python tools/planted_kappa.py"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_DIR, help="folder of the table (default %(default)s)")
    parser.add_argument("--resume", action="store_true", help="keep the networks already in the table")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    table, config = args.out / TABLE_FILE, args.out / CONFIG_FILE
    done, seconds = pd.DataFrame(), 0.0
    if args.resume and table.is_file():
        meta = json.loads(config.read_text())
        if meta["config"] != config_json(CONFIG):
            print(f"{config}: stored for another config; run without --resume", file=sys.stderr)
            return 2
        done, seconds = pd.read_csv(table), meta["cpu_seconds"]
    args.out.mkdir(parents=True, exist_ok=True)
    entries = sample(CONFIG)
    have = set(zip(done.key, done.network)) if len(done) else set()
    for e in entries:
        if (e["key"], e["network"]) in have:
            continue
        t0 = time.process_time()
        rows = judge_network(e, CONFIG)
        seconds += time.process_time() - t0
        done = pd.concat([done, rows], ignore_index=True) if len(done) else rows
        have.add((e["key"], e["network"]))
        write_text_atomic(table, done.to_csv(index=False))
        complete = all((x["key"], x["network"]) in have for x in entries)
        meta = {"config": config_json(CONFIG), "command": COMMAND, "cpu_seconds": round(seconds, 1),
                "cpu": platform.processor() or platform.machine(), "torch": torch.__version__,
                "complete": complete, "networks_done": len(have), "networks": len(entries)}  # fmt: skip
        if complete:
            k = kappa(done, CONFIG.judges).loc["all"]
            kd, kb = k[f"kappa_{DEFAULT_JUDGE}"], k[f"kappa_{DEFAULT_JUDGE}_base_kept"]
            where = "below" if kd < KAPPA_FLOOR else "at least"
            meta["readme"] = (
                f"The default judge ({DEFAULT_JUDGE})'s κ against the family judge on these planted perturbations is "
                f"{kd:.3f}, {where} {KAPPA_FLOOR}"
                + (": on planted targets the family judge decides. " if kd < KAPPA_FLOOR else ". ")
                + f"The family judge kept the base image of {k[f'base_{FAMILY}']:.0%} of the images' networks "
                f"(it keeps no perturbation of a base it does not keep); on those images alone κ is {kb:.3f}."
            )
        write_text_atomic(config, json.dumps(meta, indent=1) + "\n")
        if complete:
            write_text_atomic(args.out / "README.md", f"# Planted κ\n\n{meta['readme']} Built by `{COMMAND}`.\n")
        print(f"{e['chunk']} {e['target']} {e['network']}: {len(rows)} images, {seconds:.0f} CPU-s so far", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
