"""`volratio run`: run one experiment of the registry at a scale, with overrides.

    volratio run depth_regime --scale quick --set seeds=6 --set "targets=[\\"planted:1:depth=2,width=3\\"]"
    volratio run twins --scale reference --out twins.parquet
    volratio run --list

See `volratio.runs.registry` (the registry) and `volratio.experiments` (the run contract).
"""

from __future__ import annotations

from dataclasses import asdict

import pandas as pd

from ..errors import VolratioError
from ..runs import registry
from ..util.fileio import atomic_path, check_out
from ..util.presets import ConfigError, parse_sets
from . import _args as A
from ._common import add_json_flag, add_out, emit


def register(sub) -> None:
    p = sub.add_parser(
        "run",
        help="run one experiment of the book at a scale (quick | reference | full), with --set overrides",
        description="Run a registered experiment: its Config preset for --scale, changed by --set KEY=VALUE.",
    )
    p.add_argument("name", nargs="?", help="experiment name (see --list)")
    p.add_argument(
        "--scale", default="quick", choices=["quick", "reference", "full"], help="the Config preset (default quick)"
    )
    p.add_argument(
        "--set",
        action="append",
        type=A.key_value,
        default=[],
        metavar="KEY=VALUE",
        help="override a config entry (JSON values: 5, 0.1, true, [1,2]; dotted names reach nested configs: sp.tau=0.8)",
    )
    add_out(p, "write the tidy result table (.parquet or .csv)", required=False)
    p.add_argument("--list", action="store_true", help="list the experiments and exit")
    p.add_argument("--dry-run", action="store_true", help="print the config that would run, and exit")
    add_json_flag(p)
    p.set_defaults(func=cmd_run)


def cmd_run(args) -> int:
    if args.list or not args.name:
        if not args.list:
            raise ConfigError("name an experiment: volratio run NAME (volratio run --list shows them)")
        names = list(registry.EXPERIMENTS)
        emit(args, names, "\n".join(f"{n:16s} {registry.module(n).__doc__.splitlines()[0]}" for n in names))
        return 0
    cfg = registry.make_config(args.name, args.scale, parse_sets(args.set))
    if args.out:  # refuse a bad --out before the run, not after it
        if not args.out.endswith((".parquet", ".csv")):
            raise VolratioError(f"--out {args.out}: write a .parquet or a .csv file")
        check_out(args.out, force=args.force)
    if args.dry_run:
        emit(args, asdict(cfg), f"{args.name} ({args.scale}): {cfg}")
        return 0
    res = registry.module(args.name).run(cfg)
    frame = res.to_frame()
    if args.out:
        _write(frame, args.out)
    payload = {
        "experiment": args.name,
        "scale": res.scale,
        "seconds": res.seconds,
        "versions": res.versions,
        "seeds": res.seeds,
        "judge": res.judge,
        "rows": frame.to_dict("records"),
        "out": args.out,
    }

    with pd.option_context("display.max_columns", None, "display.width", 160, "display.max_colwidth", 40):
        text = f"{args.name} ({res.scale} scale, {res.seconds:.1f} s)\n{frame.to_string(index=False)}"
    emit(args, payload, text + (f"\n→ {args.out}" if args.out else ""))
    return 0


def _write(frame, out: str) -> None:
    with atomic_path(out) as tmp:
        if out.endswith(".parquet"):
            frame.astype({c: str for c in frame.columns if frame[c].dtype == object}).to_parquet(tmp)
        else:
            frame.to_csv(tmp, index=False)
