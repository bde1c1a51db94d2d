"""The run contract every experiment follows, and the helpers it shares.

An experiment module `volratio.experiments.<name>` has

- `Config`: a dataclass with a comment on every default, a `scale` field, and three presets —
  `quick()` (what the book executes live on a 2-core laptop), `reference()` (the stored,
  claim-deciding scale: all claims together ≤ 8 CPU-hours on 2 cores) and `full()` (paper-sized,
  for a GPU or a cluster); each preset takes keyword overrides;
- `train(cfg) -> Trained`: everything the experiment computes before a network is scored under a
  judge (the networks it trained, and what it measured of them: losses, sparsity, ρ, …);
- `score(trained, reading=PAPER) -> Result`: those networks scored under a reading
  (`volratio.emc2.reading.Reading`: the judge, the anchor, δ's scale, the weights, the engine);
- `run(cfg) -> Result`, which is `score(train(cfg), PAPER)`. `Result.to_frame()` is a tidy pandas
  table (one row per measured unit: network × method × δ, …) and the result records the config, the
  seeds its runs used, the scale, the EMC2 judge its scores used (None: the experiment has no EMC2
  judge) and the versions.

The default reading, `PAPER = Reading()`, scores each network as the experiment's config says (its
`judge`, its EMC2 settings). A reading that names a judge scores the same trained networks under
that judge, without training again: `emc2_bench` and `sparse_regime` score the
networks they hold; the sweeps (`depth_regime`, `optimizers`, `unknown_targets`), whose points score
as they train, score the networks their runs stored (`volratio.runs.depth_sweep.rescored`, the score
stage's scorer; `volratio reference rescore` stores such scores beside a reference chunk). An
experiment that scores no network under a judge (frames, the toy model, ρ, the interference of
learned features, the twins' fit) has only the default reading (`unscored`).

A config is built from a preset and `key=value` overrides by `volratio.util.presets` (`preset`,
`configure`), which rejects unknown keys and values of the wrong type before anything runs.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import Any

from ..emc2.reading import Reading
from ..nets import Arch
from ..util.presets import ConfigError
from ..util.provenance import versions

PAPER = Reading()  # the default reading: every network scored as its experiment's config says
OWN_JUDGE = "<the training's own judge>"  # `Trained.result`'s default judge: the training's own


def arch_spec(text: str) -> str:
    """`text` when it names a dense architecture: an architecture string (`volratio.nets.Arch.parse`,
    normalised), or "picbreeder" (the target's own Picbreeder architecture). A config's `arch` limit."""
    return text if text == "picbreeder" else str(Arch.parse(text))


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


@dataclass
class Trained:
    """What `train(cfg)` returns: the trained networks and what was measured before any score."""

    experiment: str  # registry name
    config: Any  # the experiment's Config (the dataclass)
    table: Any  # pandas DataFrame: what was measured without a judge (one row per measured unit)
    seeds: list  # every seed the training drew from
    seconds: float  # wall time of the training
    networks: dict = field(default_factory=dict)  # what `score` scores: name -> CoordMLP (a population)
    judge: str | None = None  # a judge the training itself scored with (ρ's basin model); None: none
    extras: dict = field(default_factory=dict)  # objects the chapter draws (images, curves, notes)

    def result(
        self, table=None, judge: "str | None" = OWN_JUDGE, seconds: float = 0.0, extras: dict | None = None
    ) -> Result:
        """The `Result` of this training scored into `table` (default: the training's own) under
        `judge` (default: the training's own, `self.judge`; None: no judge, e.g. the judge-free
        reading), `seconds` of scoring added to the training's, with `extras` beside its own."""
        return Result(
            self.experiment,
            asdict(self.config),
            self.table if table is None else table,
            self.seeds,
            self.seconds + seconds,
            judge=self.judge if judge is OWN_JUDGE else judge,
            extras={**self.extras, **(extras or {})},
        )


def unscored(trained: Trained, reading: Reading = PAPER) -> Result:
    """The score stage of an experiment that leaves nothing to score under a reading: its training's
    table, as it is. Only the default reading applies (`ExperimentError` otherwise): the experiment
    scores no network under a judge, or its model fixes its judge (`trained.judge`: ρ's basin model)."""
    check_reading(reading, recovery=True)  # any reading but the default is refused below, with why
    if reading == PAPER:
        return trained.result()
    scored = "scores no network under a judge" if trained.judge is None else f"is scored by its model ({trained.judge})"
    raise ExperimentError(
        f"{trained.experiment} {scored}, so a reading ({reading.describe()}) does not apply to it; "
        "score it under the default reading (volratio.experiments._base.PAPER)"
    )


def check_reading(reading, recovery: bool = False) -> None:
    """`ExperimentError` unless `reading` is a `volratio.emc2.reading.Reading`, and, unless
    `recovery` (the experiment can read its networks so), one read by EMC2: the judge-free reading
    (`volratio.emc2.reading.RECOVERY`) needs networks trained on planted targets."""
    if not isinstance(reading, Reading):
        raise ExperimentError(f"reading {reading!r}: give a volratio.emc2.reading.Reading (default: PAPER)")
    if reading.recovery and not recovery:
        raise ExperimentError(
            "the judge-free reading (primitive recovery) needs networks trained on planted targets, whose "
            "primitives are known; this experiment reads its networks by EMC2 under a judge only. Read "
            "recovery with sparse_regime or depth_regime on planted targets"
        )


def judge_of(reading: Reading, own: str) -> str:
    """The judge a trained network is scored under: the reading's, or its config's `own`."""
    return own if reading.judge is None else reading.judge


class Timer:
    """`with Timer() as t: …` then `t.seconds`."""

    def __enter__(self):
        self.t0 = time.perf_counter()
        return self

    def __exit__(self, *exc):
        self.seconds = time.perf_counter() - self.t0
