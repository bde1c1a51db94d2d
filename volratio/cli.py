"""The `volratio` command line.

Each group of subcommands lives in `volratio/commands/<name>.py` and exposes
`register(subparsers)`, which adds its parsers and sets `func` on each. This file only assembles
them, so adding a command never means editing another command's code.

Every command prints a human-readable summary; most accept `--json` for machine-readable output.

Error and resource rules (CONTRIBUTING.md): a bad argument (argparse, through `Parser.error`) and
every error raised on purpose by the library (`VolratioError`) print one line
`volratio CMD: error: …` naming the problem and the fix, exit status 2 — never a traceback.
Ctrl-C prints one line and exits 130; a closed output pipe (`volratio targets | head -1`) exits
quietly. Before a command runs, torch's intra-op threads are set so that they fit the free cores
(`volratio.util.threads`), and `--memory-budget` sets the memory budget (`volratio.util.budget`).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

from .errors import UsageError, VolratioError
from .util.budget import ENV as BUDGET_ENV
from .util.budget import parse_size
from .util.threads import set_threads

# One module per command group; order = order in `volratio --help`.
COMMAND_MODULES = (
    "volratio.commands.core",  # targets, render, info, train, data
    "volratio.commands.run",  # run (one experiment of the registry)
    "volratio.commands.sweep",  # sweep, results
    "volratio.commands.reference",  # reference run, reference list (the reference-scale store)
    "volratio.commands.rho",  # rho boolean, rho basin
    "volratio.commands.welch",  # welch bound, welch frame, welch net
    "volratio.commands.prune",  # prune (SP and the baselines)
    "volratio.commands.emc2",  # emc2, sweep-weights
    "volratio.commands.judge",  # judge, judge-check
    "volratio.commands.depth",  # depth ratio, depth sweep, depth predict
    "volratio.commands.external",  # emc2 export, judge import (external judges)
)

# two-word commands whose first word is a command with positional arguments of its own: read as one parser
TWO_WORD = {("emc2", "export"): "emc2-export", ("judge", "import"): "judge-import"}


class Parser(argparse.ArgumentParser):
    """argparse with one-line errors: a bad value raises `UsageError` (the CLI prints one line,
    exit 2) instead of printing the usage block and calling `sys.exit`. Subparsers inherit it."""

    def error(self, message: str):
        e = UsageError(f"{message} (see `{self.prog} --help`)")
        e.prog = self.prog
        raise e

    def _get_values(self, action, arg_strings):
        # Python < 3.12 drops a literal "--" value (`--res=--`), leaving [] as the option's value
        if action.option_strings and action.nargs is None and arg_strings == ["--"]:
            value = self._get_value(action, "--")
            self._check_value(action, value)
            return value
        return super()._get_values(action, arg_strings)


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="volratio",
        description="Compositional structure in coordinate networks (the library behind the volratio book).",
    )
    parser.add_argument(
        "--memory-budget",
        metavar="SIZE",
        default=None,
        help="refuse requests estimated to need more memory than this (e.g. 16G, 512M, none; "
        "default: $VOLRATIO_MEMORY_BUDGET, else 4 GiB or half the RAM)",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def _command_name(args, argv) -> str:
    """`volratio rho boolean` for the error line: the command and its subcommand, if parsed."""
    spoken = {v: " ".join(k) for k, v in TWO_WORD.items()}  # `emc2-export` is written `emc2 export`
    names = [spoken.get(getattr(args, "command", None), getattr(args, "command", None))]
    names += [v for k, v in vars(args).items() if k.endswith("_command")] if args is not None else []
    return " ".join(["volratio"] + [n for n in names if n])


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = None
    budget_before = os.environ.get(BUDGET_ENV)
    argv = list(sys.argv[1:] if argv is None else argv)
    for i, a in enumerate(argv[:-1]):  # the first word that is not a global option (--memory-budget SIZE)
        if not a.startswith("-") and (i == 0 or argv[i - 1] != "--memory-budget"):
            if (a, argv[i + 1]) in TWO_WORD:
                argv[i : i + 2] = [TWO_WORD[(a, argv[i + 1])]]
            break
    try:
        args = parser.parse_args(argv)
        if args.memory_budget is not None:
            parse_size(args.memory_budget)  # validate before exporting to this process and its workers
            os.environ[BUDGET_ENV] = args.memory_budget

        set_threads()
        rc = args.func(args)
    except VolratioError as e:
        prog = getattr(e, "prog", None) or (_command_name(args, argv) if args is not None else "volratio")
        print(f"{prog}: error: {_one_line(e)}", file=sys.stderr)
        return 2
    except MemoryError:
        print(
            f"{_command_name(args, argv) if args is not None else 'volratio'}: error: ran out of memory; "
            "make the request smaller (--res, --width, --samples) or lower --memory-budget so that it is "
            "refused before allocating",
            file=sys.stderr,
        )
        return 2
    except KeyboardInterrupt:
        print(
            f"{_command_name(args, argv) if args is not None else 'volratio'}: interrupted (Ctrl-C); "
            "outputs are written atomically, so none is half-written",
            file=sys.stderr,
        )
        return 130
    except BrokenPipeError:
        # the reader (e.g. `head`) closed the pipe: stop quietly, and keep Python from complaining
        # again when it flushes stdout at exit
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError):  # stdout is not a real file (tests capture it)
            pass
        return 141
    finally:  # `--memory-budget` holds for this command (and the workers it starts), not after it
        if budget_before is None:
            os.environ.pop(BUDGET_ENV, None)
        else:
            os.environ[BUDGET_ENV] = budget_before
    return int(rc or 0)


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
