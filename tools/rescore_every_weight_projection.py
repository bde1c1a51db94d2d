"""Project the CPU time of rescoring the reference chunks' stored networks on every non-zero weight.

The rescoreable chunks (`volratio.runs.rescore.SOURCES`: depth_point and optimizer_point runs, whose
populations are stored as the artifact `net`) scored a seeded sample of `max_params` weights per
network. This measures, single-threaded, the CPU seconds of scoring every non-zero weight of every
member of ONE stored run (`--chunk`, `--run-index`) under the source's own EMC2 settings
(`depth_regime.emc2_of`: float64, the torch engine, the run's judge) with `max_params = None`, and
— for comparison — the same with float32 and the fused kernel; then counts, from the stored
networks alone (no scoring), the perturbed images every chunk would render, and projects each
chunk's CPU time at the measured seconds per image. The projection is linear in images: networks
deeper or wider than the measured one cost more per image, shallower ones less.

    python tools/rescore_every_weight_projection.py --chunk depth_picbreeder --run-index 0
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from pathlib import Path

import torch

from volratio import emc2
from volratio.depth.point import emc2_config
from volratio.nets import CoordMLP
from volratio.runs import reference as R
from volratio.runs.registry import get_run
from volratio.runs.rescore import NET, SOURCES
from volratio.runs.store import Store

CHUNKS = ("depth_picbreeder", "depth_planted", "depth_scenes", "optimizers")


def stored(chunk: str, root):
    """(record, population) of every run of `chunk` that stored its network."""
    st = Store(root / chunk)
    for r in R.records(chunk, root):
        if r["run"] in SOURCES and NET in (r.get("artifacts") or {}):
            yield r, CoordMLP.load(st.artifact_path(r["key"], NET))


def images_of(net: CoordMLP, n_deltas: int) -> int:
    return sum(len(emc2.nonzero_params(net, k)) for k in range(net.population)) * n_deltas


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--chunk", default="depth_picbreeder")
    ap.add_argument("--run-index", type=int, default=0)
    ap.add_argument("--root", default=str(R.DEFAULT_ROOT))
    a = ap.parse_args(argv)
    torch.set_num_threads(1)
    root = Path(a.root)
    rec, net = list(stored(a.chunk, root))[a.run_index]
    point = get_run(rec["run"]).parse(rec["config"])
    every = dataclasses.replace(point, max_params=None)
    n_img = images_of(net, len(point.deltas))
    rates = {}
    for label, engine, dtype in (("stored settings: float64, torch", "torch", "float64"),
                                 ("float32, fused kernel", "fused", "float32")):  # fmt: skip
        t0 = time.process_time()
        for k in range(net.population):
            ec = dataclasses.replace(emc2_config(every, k), dtype=dtype, engine=engine)
            js = emc2.judges_for(net, [every.judge], every.target, ec, calibration_seed=0)
            emc2.score(net, js, emc2.target_label(every.target), ec)
        rates[label] = (time.process_time() - t0) / n_img
        print(
            f"{a.chunk} run {a.run_index} ({every.target}, depth {getattr(every, 'depth', '?')}, "
            f"{net.population} members): {n_img} images at every weight, {rates[label] * n_img:.0f} CPU s "
            f"({1 / rates[label]:.0f} images per CPU s), {label}"
        )
    print(f"the same run as stored ({point.max_params} weights per network): {rec['cpu_s']:.0f} CPU s in all")
    for chunk in CHUNKS:
        runs = list(stored(chunk, root))
        if not runs:
            continue
        n_d = len(get_run(runs[0][0]["run"]).parse(runs[0][0]["config"]).deltas)
        total = sum(images_of(n, n_d) for _, n in runs)
        cols = "  ".join(f"{rates[k] * total / 3600:.2f} CPU-h ({k})" for k in rates)
        print(f"  {chunk:<18} {len(runs):>3} runs, {total:>9} images at every weight: {cols}")


if __name__ == "__main__":
    main()
