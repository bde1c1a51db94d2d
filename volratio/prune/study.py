"""Moved to `volratio.experiments.connectivity` (this name keeps old imports working for one version)."""

from ..experiments.connectivity import *  # noqa: F401,F403
