"""The project's error type.

Every problem the library detects in user input (a genome, an arch string, an image, a results
file, a missing model) is raised as a `VolratioError` subclass whose message names the problem and
the fix. Code that calls the library can catch this one type; anything else is a bug.
"""


class VolratioError(Exception):
    """Base class of all errors raised on purpose by volratio."""


class ArchError(VolratioError, ValueError):
    """A malformed `arch` string or network shape."""


class GenomeError(VolratioError, ValueError):
    """A Picbreeder genome that cannot be parsed, evaluated or layerized."""


class DataNotFoundError(VolratioError, FileNotFoundError):
    """Reference data (Picbreeder files, model weights) that is not where it was looked for."""


class ImageError(VolratioError, ValueError):
    """An image of the wrong shape, mode or range."""


class TrainingDiverged(VolratioError, FloatingPointError):
    """A loss or gradient became NaN/Inf. `.step` is the step, `.state` the last good weights."""

    def __init__(self, message: str, step: int, state: dict | None = None):
        super().__init__(message)
        self.step = step
        self.state = state


class UsageError(VolratioError, ValueError):
    """A command-line argument or option value that is out of its domain (the CLI's one-line
    argparse replacement: names the option, the value, and what to give instead)."""


class BudgetError(VolratioError, MemoryError):
    """A request whose estimated memory exceeds the budget (`volratio.util.budget`); the message holds
    the estimate, the budget, and how to shrink the request or raise the budget."""


class OutputError(VolratioError, OSError):
    """An output path that cannot or must not be written: it exists (without --force), is the
    input, is a folder, or sits in a folder that is missing or not writable."""
