"""Moved to `volratio.experiments.training` and `.toy` (run = "train" / "toy" in sweep specs)."""

from .experiments.toy import toy  # noqa: F401
from .experiments.training import train  # noqa: F401
