"""Moved to `volratio.experiments.optimizers` (this name keeps old imports working for one version)."""

from .experiments.optimizers import *  # noqa: F401,F403
