"""`volratio sweep` and `volratio results`: run a sweep spec into a results store, and summarise one.

    volratio sweep examples/sweeps/quick.toml --out results/quick               # in-process
    volratio sweep examples/sweeps/quick.toml --workers 4 --out results/quick   # Dask LocalCluster
    volratio sweep SPEC.toml --scheduler tcp://HOST:8786 --resume --out DIR      # existing cluster
    volratio results results/quick [--json]

See `volratio.runs.sweep` (the library) and the chapter "Rerunning at scale on a cluster".
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import pandas as pd

from ..runs.reference import ReferenceError, verify
from ..runs.store import Store, StoreError, flatten
from ..runs.sweep import Sweep, make_executor, run_sweep
from ..util.fileio import check_out
from . import _args as A
from ._common import add_json_flag, emit, warn_line


def register(sub) -> None:
    p = sub.add_parser(
        "sweep",
        help="run a sweep spec (grid × seeds) into a resumable results store",
        description="Run every config of a sweep spec (.toml or .yaml) that the store does not hold yet. The spec's "
        "`run` names a registered run function (train, toy, depth_point, optimizer_point, or an experiment of "
        "`volratio run --list`); every run's config is checked before the first one starts.",
    )
    p.add_argument("spec", help="sweep spec file (.toml, .yaml or .yml); see examples/sweeps/quick.toml")
    where = p.add_mutually_exclusive_group()
    where.add_argument(
        "--scheduler",
        type=A.scheduler_address,
        metavar="ADDR",
        help="address of a running Dask scheduler, e.g. tcp://10.0.0.1:8786",
    )
    where.add_argument(
        "--workers", type=A.positive_int, metavar="N", help="start a Dask LocalCluster of N single-threaded workers"
    )
    where.add_argument("--processes", type=A.positive_int, metavar="N", help="run on N local processes (no Dask)")
    p.add_argument("--out", required=True, metavar="DIR", help="results store (created if absent)")
    p.add_argument(
        "--resume", action="store_true", help="continue in a store that already holds runs (done runs are skipped)"
    )
    p.add_argument("--retry-failed", action="store_true", help="rerun runs whose last attempt failed")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    add_json_flag(p)
    p.set_defaults(func=_sweep)

    r = sub.add_parser(
        "results",
        help="summary table of a results store; `results verify DIR` re-runs stored runs and checks them",
        description="Print the runs of a results store (`volratio results DIR`), or re-run a seeded sample of the "
        "runs of a reference store and check that they reproduce its metrics bit for bit "
        "(`volratio results verify results/reference --sample K`). Float results reproduce bit for bit only on "
        "the CPU kind that stored them (CPU vendor, model, ISA, torch's CPU capability, torch and BLAS versions), so "
        "verify draws among the runs comparable here: those stored on this machine's kind and those of "
        "machine-independent run functions (the Boolean ρ sampler), and the runs of other kinds whose scores can be "
        "re-computed: their stored networks (or the networks they scored) are re-scored under the same judge and "
        "engine, without training, and compared within a tolerance (volratio.runs.reference.SCORE_TOLERANCE). It "
        "says per chunk how many runs could be checked either way and how many were. A checked run that does not "
        "reproduce is a failure.",
    )
    r.add_argument("dir", metavar="DIR", help="results store written by `volratio sweep` (or the word `verify`)")
    r.add_argument(
        "store", nargs="?", metavar="ROOT", help="after `verify`: the reference root (folders of chunk stores)"
    )
    r.add_argument("--tracebacks", action="store_true", help="print the traceback of every failed run")
    r.add_argument("--sample", type=A.positive_int, metavar="K", help="verify: how many runs to re-run (default 1)")
    r.add_argument("--seed", type=A.seed, metavar="S", help="verify: seed of the sample (default 0)")
    r.add_argument(
        "--max-cpu-seconds",
        type=A.positive_float,
        metavar="S",
        help="verify: draw only among runs whose recorded CPU time is at most S seconds (a cheap check)",
    )
    r.add_argument("--chunk", metavar="NAME", help="verify: only runs of this chunk")
    r.add_argument(
        "--any-machine",
        action="store_true",
        help="verify: draw among all runs, also those stored on another CPU kind; a difference there is reported "
        "as 'differs (other CPU kind)', not as a failure",
    )
    add_json_flag(r)
    r.set_defaults(func=_results)


def _sweep(args) -> int:
    check_out(args.out, folder=True)
    sweep = Sweep.from_file(args.spec)
    executor = make_executor(args.scheduler, args.workers, args.processes)
    if not args.resume:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # run_sweep reports damage; here we only count rows
            n = len(Store(args.out).rows)
        if n:
            raise StoreError(
                f"{args.out} already holds {n} runs; pass --resume to continue (finished runs are skipped) or choose another --out"
            )
    progress = False if (args.no_progress or args.json) else None
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.showwarning = warn_line
        report = run_sweep(sweep, args.out, executor, retry_failed=args.retry_failed, progress=progress)
    payload = {
        "name": report.name,
        "store": str(report.store),
        "executor": report.executor,
        "total": report.total,
        "ran": len(report.ran),
        "skipped": report.skipped,
        "failed": report.failed,
        "seconds": round(report.seconds, 3),
    }
    text = report.summary()
    if report.failed:
        text += f"\n{len(report.failed)} failed; see `volratio results {args.out} --tracebacks`, rerun with --resume --retry-failed"
    emit(args, payload, text)
    return 1 if report.failed else 0


def _results(args) -> int:
    verify_opts = [
        o
        for o, v in (
            ("--sample", args.sample),
            ("--seed", args.seed),
            ("--max-cpu-seconds", args.max_cpu_seconds),
            ("--chunk", args.chunk),
            ("--any-machine", args.any_machine or None),
        )
        if v is not None
    ]
    if args.dir == "verify":
        return _verify(args)
    if args.store is not None:
        raise StoreError(
            f"volratio results takes one store, got {args.dir!r} and {args.store!r}; "
            "to check stored runs write `volratio results verify ROOT`"
        )
    if verify_opts:
        raise StoreError(f"{verify_opts[0]} applies to `volratio results verify ROOT`; drop it to list {args.dir}")
    if not Path(args.dir).is_dir():
        raise StoreError(f"{args.dir}: no such results store (write one with `volratio sweep SPEC --out {args.dir}`)")
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.showwarning = warn_line
        store = Store(args.dir)
        if not store.is_store():
            raise StoreError(
                f"{args.dir} is not a results store (it has no {store.table_path.name}); "
                f"give the --out folder of a `volratio sweep`, or write one there with `volratio sweep SPEC --out {args.dir}`"
            )
        if store.damage and not store.rows:
            raise StoreError(
                f"{args.dir}: {store.damage} and no intact run records to rebuild it from; "
                f"rerun the sweep with `volratio sweep SPEC --out {args.dir} --resume` to recompute the runs"
            )
        records = store.records()
        for r in records:  # verify artifacts, so damage is reported here too
            if r["status"] == "done" and store.status(r["key"]) is None:
                r["status"] = "damaged"
    payload = [
        {
            k: r[k]
            for k in ("key", "status", "config", "metrics", "artifacts", "error", "traceback", "attempts", "seconds")
        }
        for r in records
    ]
    emit(args, payload, _table_text(store, records, args.tracebacks))
    return 0


def _verify(args) -> int:
    if args.store is None:
        raise ReferenceError(
            "volratio results verify: name the reference root, e.g. volratio results verify results/reference"
        )
    if not Path(args.store).is_dir():
        raise ReferenceError(
            f"{args.store}: no such folder; give the root of a reference store (e.g. results/reference)"
        )
    report = verify(
        args.store,
        sample=args.sample or 1,
        seed=args.seed or 0,
        max_cpu_seconds=args.max_cpu_seconds,
        chunk=args.chunk,
        any_machine=args.any_machine,
    )
    bad = report.failures
    emit(args, report.to_json(), report.summary())
    if bad and not args.json:
        for r in bad:
            print(f"volratio results verify: error: {r['problem']}", file=sys.stderr)
    return 1 if bad else 0


def _table_text(store, records, tracebacks: bool) -> str:
    if not records:
        return f"{store.root}: empty store"
    frame = store.frame()
    frame["status"] = [r["status"] for r in records]
    config_cols = sorted({k for r in records for k in flatten(r["config"])})
    fixed = {
        c: frame[c].iloc[0]
        for c in config_cols
        if c in frame and frame[c].astype(str).nunique() == 1 and len(frame) > 1
    }
    shown = frame.drop(columns=[c for c in fixed if c != "seed"] + ["attempts"], errors="ignore")
    if shown["error"].isna().all():
        shown = shown.drop(columns=["error"])
    counts = frame["status"].value_counts().to_dict()
    lines = [f"{store.root}: {len(frame)} runs — " + ", ".join(f"{v} {k}" for k, v in sorted(counts.items()))]
    if fixed:
        lines.append("every run: " + ", ".join(f"{k}={v}" for k, v in fixed.items()))
    with pd.option_context("display.max_columns", None, "display.width", 160, "display.max_colwidth", 60):
        lines.append(shown.to_string(index=False, float_format=lambda x: f"{x:.6g}"))
    if tracebacks:
        for r in records:
            if r["traceback"]:
                lines += [f"--- {r['key']} ---", r["traceback"].rstrip()]
    return "\n".join(lines)
