"""The run contract every experiment follows, and the helpers it shares.

An experiment module `volratio.experiments.<name>` has

- `Config`: a dataclass with a comment on every default, a `scale` field, and three presets —
  `quick()` (what the book executes live on a 2-core laptop), `reference()` (the stored,
  claim-deciding scale: all claims together ≤ 8 CPU-hours on 2 cores) and `full()` (paper-sized,
  for a GPU or a cluster); each preset takes keyword overrides;
- `run(cfg) -> Result`, where `Result.to_frame()` is a tidy pandas table (one row per measured
  unit: network × method × δ, …) and the result records the config, the seeds its runs used, the
  scale, the EMC2 judge its scores used (None: the experiment has no EMC2 judge) and the versions.

A config is built from a preset and `key=value` overrides by `volratio.util.presets` (`preset`,
`configure`), which rejects unknown keys and values of the wrong type before anything runs.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from ..util.presets import ConfigError
from ..util.provenance import versions


class ExperimentError(ConfigError):
    """An experiment's config entry, or a combination of entries, that it cannot run."""


@dataclass
class Result:
    """What `run(cfg)` returns: a tidy table plus what produced it."""

    experiment: str  # registry name
    config: dict  # the config, as plain data (`dataclasses.asdict`)
    table: Any  # pandas DataFrame, one row per measured unit
    seeds: list  # every seed the run drew from
    seconds: float  # wall time of the run
    judge: str | None  # the EMC2 judge the scores used (`volratio.judges.JUDGES`); None: no judge
    # (the experiment has no EMC2 score: frames, the toy model, ρ without the basin model, …)
    versions: dict = field(default_factory=versions)
    extras: dict = field(default_factory=dict)  # objects the chapter draws (networks, images, curves)

    @property
    def scale(self) -> str:
        return str(self.config.get("scale", "custom"))

    def to_frame(self):
        """The tidy table with the experiment, scale and judge as columns (a copy). A table with a
        `judge` column of its own (the judge each row's score names) keeps it."""
        t = self.table.copy()
        if "judge" not in t:
            t.insert(0, "judge", self.judge)
        t.insert(0, "scale", self.scale)
        t.insert(0, "experiment", self.experiment)
        return t

    def __getitem__(self, name: str):
        return self.extras[name]


class Timer:
    """`with Timer() as t: …` then `t.seconds`."""

    def __enter__(self):
        self.t0 = time.perf_counter()
        return self

    def __exit__(self, *exc):
        self.seconds = time.perf_counter() - self.t0
