"""`volratio reference run`: run one chunk of a reference plan into its store, with a manifest.

    volratio reference run examples/sweeps/reference.toml --chunk rho --out results/reference
    volratio reference list examples/sweeps/reference.toml
    volratio reference plan --scale reference --out examples/sweeps/reference.toml   # regenerate the plan
    volratio reference rescore depth_picbreeder --judge stability   # stored networks, another judge
    volratio reference rescore depth_picbreeder --judge anchored --every-weight --engine fused
    volratio results verify results/reference --sample 3     # re-run 3 stored runs and compare

See `volratio.runs.reference` and the reference scale's README (results/reference/README.md).
"""

from __future__ import annotations

import warnings
from pathlib import Path

from ..data.anchors import ANCHORS
from ..emc2 import DELTA_SCALES
from ..emc2.reading import ENGINES, Reading
from ..judges import JUDGES
from ..runs.manifest import MANIFEST
from ..runs.manifest import read as read_manifest
from ..runs.plan import SCALES, plan_text
from ..runs.reference import device_name_here, load_plan, run_chunk
from ..runs.score import score_chunk
from ..runs.store import Store
from ..runs.sweep import make_executor
from ..util.fileio import check_out
from . import _args as A
from ._common import add_json_flag, emit, warn_line


def register(sub) -> None:
    p = sub.add_parser(
        "reference",
        help="run a chunk of the reference-scale plan into results/reference/CHUNK",
        description="The reference-scale runs: chunks of a plan file, each a sweep into "
        "its own store with a manifest (versions, commit, CPU model, wall and CPU time per run).",
    )
    s = p.add_subparsers(dest="sub", required=True, metavar="{run,list,plan,rescore}")
    r = s.add_parser(
        "run",
        help="run (or resume) one chunk",
        description="Run every run of a chunk that its store "
        "does not hold yet; the manifest is updated after each run.",
    )
    r.add_argument("spec", help="plan file (examples/sweeps/reference.toml)")
    r.add_argument("--chunk", required=True, metavar="NAME", help="the chunk to run (`volratio reference list PLAN`)")
    r.add_argument(
        "--out", default="results/reference", metavar="DIR", help="reference root (default results/reference)"
    )
    r.add_argument(
        "--processes", type=A.positive_int, metavar="N", help="run on N local processes (default: in-process)"
    )
    r.add_argument("--retry-failed", action="store_true", help="rerun the runs whose last attempt failed")
    r.add_argument(
        "--device",
        type=A.device,
        metavar="DEV",
        help="every run's device: cpu, cuda, cuda:N or auto (CUDA when present), recorded as resolved in each "
        "stored config (default: as the plan says)",
    )
    r.add_argument("--no-progress", action="store_true", help="no progress bar")
    add_json_flag(r)
    r.set_defaults(func=_run)
    ls = s.add_parser(
        "list",
        help="the chunks of a plan and how many runs each has stored",
        description="List the chunks of a plan, their runs and how many are in the store.",
    )
    ls.add_argument("spec", help="plan file (examples/sweeps/reference.toml)")
    ls.add_argument(
        "--out", default="results/reference", metavar="DIR", help="reference root (default results/reference)"
    )
    add_json_flag(ls)
    ls.set_defaults(func=_list)
    pl = s.add_parser(
        "plan",
        help="write the plan file, generated from the experiments' chunks",
        description="Generate a plan from the chunks the experiments declare (`reference_chunks()` of each "
        "module under volratio/experiments; volratio.runs.plan) and write it to --out, or print it.",
    )
    pl.add_argument("--scale", default="reference", choices=SCALES, help="the plan's scale (default reference)")
    pl.add_argument("--out", metavar="FILE", help="the file to write (default: print to stdout)")
    pl.set_defaults(func=_plan)
    rs = s.add_parser(
        "rescore",
        help="score a chunk's stored networks under another judge, without retraining",
        description="Score the networks a chunk's runs stored (depth_point / optimizer_point runs with "
        "keep_net = true: the final SP population, artifact `net`; twin_point runs: the network; sparse_regime "
        "runs: every population, artifacts net_<method>_<checkpoint>, or those --artifacts names) under JUDGE, "
        "into the chunk's own store: one `rescore` run per (source run, population, judge), its key hashing the "
        "reading, the source run's key and the artifact, "
        "with the EMC2 settings of the source run's config (float64 on CPU). Resumable: runs already "
        "stored are skipped. Each run is recorded in the chunk's manifest, and `volratio results verify` "
        "re-runs it like any other. Rescoring under the source runs' own judge reproduces their stored "
        "scores exactly. A chunk whose runs stored no networks is an error: re-run it with keep_net = true.",
    )
    rs.add_argument("chunk", metavar="CHUNK", help="the chunk folder under --root (e.g. depth_picbreeder)")
    rs.add_argument(
        "--judge", required=True, choices=JUDGES, metavar="NAME", help=f"the judge to score under: {', '.join(JUDGES)}"
    )
    rs.add_argument(
        "--root",
        dest="dir",
        default="results/reference",
        metavar="DIR",
        help="reference root (default results/reference)",
    )
    rs.add_argument(
        "--anchor",
        default="image",
        choices=ANCHORS,
        help="what a label-anchored judge compares with: image (the target's own image, the default) or png "
        "(a Picbreeder target's target.png at the scoring resolution: the dense twins' training image)",
    )
    rs.add_argument(
        "--delta-scale",
        default="absolute",
        choices=DELTA_SCALES,
        help="absolute: w ← w + δ (the paper's, the default); layer_std: δ × the std of the perturbed weight's layer",
    )
    weights = rs.add_mutually_exclusive_group()
    weights.add_argument(
        "--every-weight",
        dest="weights",
        action="store_const",
        const="every",
        default="own",
        help="score every non-zero weight of each stored network (the source runs scored a seeded sample): "
        "another rescore run per source (max_params None, the engine named), stored beside the sampled one",
    )
    weights.add_argument(
        "--max-weights",
        dest="weights",
        type=A.positive_int,
        metavar="N",
        help="score every non-zero weight of a network that has at most N, else a seeded sample of N "
        "(max_params N, the engine named): another rescore run per source",
    )
    rs.add_argument(
        "--engine",
        default="torch",
        choices=list(ENGINES),
        help="with --every-weight or --max-weights: torch (float64, the exact reference; default) or fused "
        "(the C++ kernel, float32)",
    )
    rs.add_argument(
        "--artifacts",
        type=A.artifact_names,
        metavar="A,B,…",
        help="score only the populations stored as these artifacts (e.g. net_sp_end,net_imp_end of a "
        "sparse_regime run; default: every population the chunk's runs store)",
    )
    rs.add_argument(
        "--device",
        default=None,
        type=A.device,
        metavar="DEV",
        help="where to compute the scores (auto, cpu, cuda, cuda:N; default: where the source runs scored); "
        "scores computed elsewhere are stored under other keys",
    )
    rs.add_argument("--no-progress", action="store_true", help="no progress bar")
    add_json_flag(rs)
    rs.set_defaults(func=_rescore)


def _run(args) -> int:
    check_out(args.out, folder=True)
    plan = load_plan(args.spec)
    report = run_chunk(
        plan,
        args.chunk,
        args.out,
        make_executor(processes=args.processes),
        progress=False if (args.no_progress or args.json) else None,
        retry_failed=args.retry_failed,
        device=args.device,
    )
    return _emit_report(args, report, chunk=args.chunk)


def _list(args) -> int:
    plan = load_plan(args.spec)
    rows = []
    for name, sweep in plan.items():
        path = Path(args.out) / name
        if (path / MANIFEST).exists():
            read_manifest(path / MANIFEST, name)  # a damaged manifest is refused here too, in one line
        with warnings.catch_warnings():
            warnings.simplefilter("always")
            warnings.showwarning = warn_line  # a damaged run is not stored: say why it is not counted
            done = sum(Store(path).status(k) == "done" for k in set(sweep.keys())) if path.is_dir() else 0
        rows.append({"chunk": name, "run": sweep.run, "runs": len(set(sweep.keys())), "done": done})
    w = max((len(r["chunk"]) for r in rows), default=0)
    emit(args, rows, "\n".join(f"{r['chunk']:{w}s}  {r['run']:16s} {r['done']}/{r['runs']} runs stored" for r in rows))
    return 0


def _plan(args) -> int:
    text = plan_text(args.scale)
    if args.out is None:
        print(text, end="")
    else:
        Path(args.out).write_text(text)
    return 0


def _rescore(args) -> int:
    device = None if args.device is None else device_name_here(args.device)  # "auto" resolved: a key names the device
    reading = Reading(args.judge, args.anchor, args.delta_scale, args.weights, args.engine, device)
    report = score_chunk(
        args.chunk, reading, args.dir, progress=False if (args.no_progress or args.json) else None,
        artifacts=args.artifacts,
    )  # fmt: skip
    return _emit_report(args, report, chunk=report.chunk, **reading.as_dict(), cpu_s=report.cpu_s)


def _emit_report(args, report, **head) -> int:
    """Print a chunk's run or rescore report (`head` first, then its counts); exit 1 if a run failed."""
    counts = {"total": report.total, "ran": len(report.ran), "skipped": report.skipped, "failed": report.failed}
    emit(args, {**head, **counts, "seconds": round(report.seconds, 3)}, report.summary())
    return 1 if report.failed else 0
