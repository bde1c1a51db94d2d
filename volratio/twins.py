"""Moved to `volratio.experiments.twins` (this name keeps old imports working for one version)."""

from .experiments.twins import *  # noqa: F401,F403
from .experiments.twins import Config as TwinsConfig  # noqa: F401
