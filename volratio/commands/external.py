"""External judges: `emc2 export` (the images a chunk was scored on, with a manifest) and
`judge import` (verdicts made elsewhere, stored as a judge of their own) — `volratio.report.external`.

Both are written as two words (`volratio emc2 export CHUNK`, `volratio judge import CSV`); the
command line reads them as the parsers `emc2-export` and `judge-import` (`volratio.cli.TWO_WORD`)."""

from __future__ import annotations

import sys

from ..report import external as X
from ..runs.reference import DEFAULT_ROOT
from . import _args as A
from ._common import add_json_flag, emit


def register(sub) -> None:
    p = sub.add_parser("emc2-export", help="write the images a chunk's EMC2 scores were computed on, with a manifest")
    p.add_argument("chunk", help="a chunk of the reference store, e.g. emc2")
    p.add_argument("--out", required=True, metavar="DIR", help="a new or empty folder: images/ID.png, manifest.csv")
    add_sample_flags(p, "export")
    p.add_argument(
        "--root",
        dest="dir",
        default=str(DEFAULT_ROOT),
        metavar="DIR",
        help="the reference store (default results/reference)",
    )
    add_json_flag(p)
    p.set_defaults(func=cmd_export)

    p = sub.add_parser("judge-import", help="store verdicts made elsewhere (id, kept) as a judge of their own")
    p.add_argument("verdicts", help="CSV with one row per exported image: id, kept (0 or 1), optionally label")
    p.add_argument("--chunk", required=True, help="the chunk the images were exported from")
    p.add_argument("--name", required=True, help="the external judge's name, e.g. qwen3-vl-4b-thinking")
    p.add_argument("--note", default="", help="how the verdicts were made (model, prompt, decoding)")
    add_sample_flags(p, "import")
    p.add_argument(
        "--root",
        dest="dir",
        default=str(DEFAULT_ROOT),
        metavar="DIR",
        help="the reference store (default results/reference)",
    )
    add_json_flag(p)
    p.set_defaults(func=cmd_import)


def add_sample_flags(p, what: str) -> None:
    same = "" if what == "export" else " (the export's)"
    p.add_argument(
        "--per-network",
        type=A.Int(2, hint=" (images per network: its base image and weights × δ)"),
        metavar="N",
        help="at most N images per network: its base image and a seeded sample of its weights, stratified by "
        f"layer, at every δ{same} (default: every image)",
    )
    p.add_argument("--seed", type=A.seed, default=0, help=f"the sample's seed{same} (default 0)")


def announce(args):
    def say(e: dict) -> None:
        print(
            f"export of chunk {args.chunk}: {e['images']:,} images of {e['networks']} networks (at most "
            f"{e['per_network']:,} per network), about {e['bytes'] / 1e6:.1f} MB and {e['seconds']:.0f} s "
            f"(projected from a pilot of {e['pilot']} images); writing to {args.out}",
            file=sys.stderr,
            flush=True,
        )

    return say


def cmd_export(args) -> int:
    m = X.export(args.chunk, args.out, args.dir, args.per_network, args.seed, progress=True, announce=announce(args))
    n = m["source"].nunique()
    emit(args, {"chunk": args.chunk, "out": args.out, "images": len(m), "sources": n},
         f"wrote {len(m)} images of {n} networks of chunk {args.chunk} to {args.out} (manifest.csv)")  # fmt: skip
    return 0


def cmd_import(args) -> int:
    res = X.import_verdicts(args.verdicts, args.chunk, args.name, args.dir, args.note, args.per_network, args.seed)
    lines = [f"judge {args.name}: {len(res)} networks of chunk {args.chunk} scored"]
    lines += [f"  {r['network']:24s} base kept {str(r['base_kept']):5s}  AUC {r['auc']:.3f}  "
              f"({r['n_images']:,} images)" for r in res]  # fmt: skip
    emit(args, {"judge": args.name, "chunk": args.chunk, "sources": [{k: v for k, v in r.items() if k != "verdicts"}
                                                                        for r in res]}, "\n".join(lines))  # fmt: skip
    return 0
