"""Moved to `volratio.experiments.depth_regime` and `.optimizers` (this name keeps old imports working)."""

from .experiments.depth_regime import point as depth_point  # noqa: F401
from .experiments.optimizers import point as optimizer_point  # noqa: F401
