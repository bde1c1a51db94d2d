"""How a run scored the networks it stores: what the score stage reads them with again.

A run function whose stored runs can be scored again under a reading (`volratio.runs.score`) parses
to a config with a method `scoring() -> Scoring`: the depth sweep's points and their sparse and
optimizer variants (`volratio.depth.point.Point`), the sixteen-target comparison's
`volratio.experiments.twins.Point`, and the sparse regime's `Config` (every population it stores). The config says so itself; no table of run names does.
"""

from __future__ import annotations

from dataclasses import dataclass

from .scoring import EMC2Config


@dataclass(frozen=True)
class Scoring:
    """How one stored run scored its population."""

    target: str  # the target spec its judges were anchored on
    members: int  # networks in the stored population
    emc2: EMC2Config  # member 0's EMC2 settings (the others differ in `member` only)
    networks: tuple  # each member's name in the anchored verdict set (volratio.calibration), None: none
    metrics: tuple = ()  # the metrics holding its own scores, one entry per member, which `results verify`
    # re-computes from its stored networks on another CPU kind; (): its scores are checked by re-running it
    artifacts: tuple = ("net",)  # the artifacts holding its populations, each of `members` networks (a
    # `volratio.nets.CoordMLP` file): "net", a run's final population; a sparse_regime run stores several


def scoring_of(config) -> Scoring | None:
    """The `Scoring` of a parsed run config, or None for a run whose networks cannot be scored again."""
    method = getattr(config, "scoring", None)
    return method() if callable(method) else None
