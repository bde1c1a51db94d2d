"""The `volratio` command line.

Each group of subcommands lives in `volratio/commands/<name>.py` and exposes
`register(subparsers)`, which adds its parsers and sets `func` on each. This file only assembles
them, so adding a command never means editing another command's code.

Every command prints a human-readable summary; most accept `--json` for machine-readable output.
Errors raised on purpose by the library (`VolratioError`) are printed as one line, exit status 2.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from .errors import VolratioError

# One module per command group; order = order in `volratio --help`.
COMMAND_MODULES = (
    "volratio.commands.core",  # targets, render, info, train, data
    "volratio.commands.run",  # run (one experiment of the registry)
    "volratio.commands.sweep",  # sweep, results
    "volratio.commands.rho",  # rho boolean, rho basin
    "volratio.commands.welch",  # welch bound, welch frame, welch net
    "volratio.commands.prune",  # prune (SP and the baselines)
    "volratio.commands.emc2",  # emc2, sweep-weights
    "volratio.commands.depth",  # depth ratio, depth sweep, depth predict
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="volratio",
        description="Compositional structure in coordinate networks (the library behind the volratio book).",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        rc = args.func(args)
    except VolratioError as e:
        print(f"volratio {args.command}: error: {e}", file=sys.stderr)
        return 2
    return int(rc or 0)


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
