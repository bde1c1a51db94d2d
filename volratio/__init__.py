"""volratio — compositional structure in coordinate networks.

The library behind the book "volratio": it builds coordinate networks and their targets, trains and
prunes them, scores them with EMC2-Bench, estimates the compositional volume ratio rho(W, L), checks
Welch interference bounds and fits the depth predictor. Each concept lives in its own module; the
book's chapters import them.
"""

__version__ = "0.1.0"

from .errors import VolratioError  # noqa: F401  (the one error type users catch)
