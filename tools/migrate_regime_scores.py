"""One migration of the store: the sparse regime's `regime_point` score chunks become score-stage runs.

The sparse regime's populations were scored by a run function of their own, `regime_point`, in
chunks of their own (sparse_regime_emc2, …): one run per population, several judges at once, keyed
by the source run's config. The score stage (`volratio.runs.score`) scores any stored population
under a reading (`volratio.emc2.reading.Reading`) into its source chunk, keyed by the source run's
key and the reading. This script scores again, with the score stage, every population each
`regime_point` chunk scored, under each of its judges and at its EMC2 settings (a reading whose
`weights` is the chunk's `max_params`, fused engine, its δ scale), and checks that each network's
AUC and `base_kept` equal the `regime_point` run's, bit for bit. It refuses before running anything
when a score run's settings would differ from the `regime_point` run's.

    python tools/migrate_regime_scores.py --root results/reference --processes 2
    python tools/migrate_regime_scores.py --root results/reference --check   # compare only

Resumable: score runs already stored are skipped. Run once; recorded in results/reference/README.md,
then deleted with the `regime_point` chunks.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from volratio.emc2.reading import Reading
from volratio.experiments.sparse_regime import REFERENCE_CHUNK
from volratio.runs import stored
from volratio.runs.reference import rescore_config
from volratio.runs.score import plan, score_chunk
from volratio.runs.sweep import make_executor

CHUNKS = (
    "sparse_regime_emc2",
    "sparse_regime_emc2_v2",
    "sparse_regime_more_emc2",
    "sparse_regime_more_emc2_v2",
    "sparse_regime_emc2_scaled",
    "sparse_regime_near_dense_emc2",
)


def migration(chunk: str, root: Path) -> list:
    """`[(source chunk, reading, artifacts, records)]`: what the score stage runs for chunk `chunk`,
    one entry per judge, with the chunk's `regime_point` records."""
    recs = stored.records(chunk, root)
    if not recs or {r["run"] for r in recs} != {"regime_point"}:
        raise SystemExit(f"{root / chunk}: not a chunk of regime_point runs")
    first = recs[0]["config"]
    emc = {k.removeprefix("emc2."): v for k, v in first.items() if k.startswith("emc2.")}
    source = first.get("chunk", REFERENCE_CHUNK)
    for r in recs:
        c = r["config"]
        same = {k.removeprefix("emc2."): v for k, v in c.items() if k.startswith("emc2.")}
        if same != emc or c["judges"] != first["judges"] or c.get("chunk", REFERENCE_CHUNK) != source:
            raise SystemExit(f"{chunk}: its runs differ in settings other than the population and the source")
        if c["calibration_seed"] != 0:
            raise SystemExit(f"{chunk}: calibration_seed {c['calibration_seed']}; the score stage's is 0")
    artifacts = sorted({f"net_{r['config']['population']}" for r in recs})
    out = []
    for judge in first["judges"]:
        reading = Reading(judge, delta_scale=emc["delta_scale"], weights=emc["max_params"], engine=emc["engine"])
        out.append((source, reading, artifacts, recs))
        check_settings(chunk, source, reading, emc, root)
    return out


def check_settings(chunk: str, source: str, reading: Reading, emc: dict, root: Path) -> None:
    """Refuse when the score stage would score at other EMC2 settings than `regime_point` did."""
    src = stored.records(source, root)[0]
    mine = rescore_config(source, src, reading, next(a for a in src["artifacts"] if a.startswith("net_")))["emc2"]
    theirs = {k: v for k, v in emc.items() if k != "member"}
    if {**mine, "deltas": list(mine["deltas"])} != {**theirs, "deltas": list(theirs["deltas"])}:
        raise SystemExit(
            f"{chunk} under {reading.describe()}: settings differ\n  score stage {mine}\n  regime_point {theirs}"
        )


def compare(chunk: str, source: str, reading: Reading, recs: list, root: Path) -> tuple:
    """`(networks equal, networks differing, populations missing)` of `regime_point`'s scores against
    the score runs' under `reading`."""
    runs = {(r["config"]["source"]["key"], r["config"]["source"].get("artifact")): r
            for r in stored.rescores(source, reading, root)}  # fmt: skip
    equal, differ, missing = 0, [], []
    j = reading.judge
    for r in recs:
        m = r["metrics"]
        if m.get("failed"):
            continue
        got = runs.get((m["source_key"], f"net_{r['config']['population']}"))
        if got is None:
            missing.append(r["config"]["population"])
            continue
        g = got["metrics"]
        if got["config"]["source"]["net_sha256"] != m["net_sha256"]:
            differ.append((r["key"], "network"))
            continue
        for k in range(len(m[f"auc_{j}"])):
            if g["score"][k] == m[f"auc_{j}"][k] and g["base_kept"][k] == m[f"base_kept_{j}"][k]:
                equal += 1
            else:
                differ.append((r["key"], k, m[f"auc_{j}"][k], g["score"][k]))
    return equal, differ, missing


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", type=Path, default=stored.DEFAULT_ROOT)
    ap.add_argument("--processes", type=int, default=1)
    ap.add_argument("--chunk", action="append", choices=CHUNKS, help="only these chunks (default: all)")
    ap.add_argument("--check", action="store_true", help="compare only; run nothing")
    args = ap.parse_args(argv)
    todo = [(c, *m) for c in (args.chunk or CHUNKS) for m in migration(c, args.root)]
    ok = True
    for chunk, source, reading, artifacts, recs in todo:
        if not args.check:
            n = len(plan(source, reading, args.root, artifacts))
            print(f"{chunk} → {source} under {reading.describe()}: {n} score runs", flush=True)
            report = score_chunk(source, reading, args.root, progress=False, artifacts=artifacts,
                                 executor=make_executor(processes=args.processes))  # fmt: skip
            print("  " + report.summary(), flush=True)
            ok &= not report.failed
        equal, differ, missing = compare(chunk, source, reading, recs, args.root)
        print(f"  {chunk} [{reading.judge}]: {equal} networks equal, {len(differ)} differ, "
              f"{len(missing)} populations not scored yet", flush=True)  # fmt: skip
        for d in differ[:5]:
            print("   ", d)
        ok &= not differ and not missing
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
