"""A reading: how stored networks are scored, as one value.

A stored network's EMC2 score depends on more than the network: which judge keeps an image, what a
label-anchored judge compares with, how δ moves a weight, which weights are perturbed and by which
engine. `Reading` holds those choices together, validated once, so that they are passed, hashed and
stored as one thing (`as_dict`, `key`) rather than as loose keyword arguments:

    Reading()                                            # each run's own scores, as stored
    Reading("anchored-v2")                               # under the deciding judge
    Reading("anchored-v2", weights="every", engine="fused", delta_scale="layer_std")

The default reads every stored run as it scored itself: its own judge (`judge=None`), the paper's
reading of δ (w ← w + δ, "absolute"), anchored on the network's own image, at the run's own EMC2
settings (its seeded sample of weights, `weights="own"`), through the torch engine in float64.
Scoring stored networks again (`volratio.runs.score`) needs a judge; reading them back
(`volratio.runs.stored.judged`) takes `judge=None` as "the runs' own".

`weights="every"` scores every non-zero weight through `engine`: "torch" in float64 (the exact
reference) or "fused", the C++ kernel in float32 (`ENGINES`). `weights=N` (a positive integer) scores
every non-zero weight of a network that has at most N, else a seeded uniform sample of N of them
(`max_params` N), through `engine`: the sparse regime's populations are read so (1,000 a network). `device` None scores where the source
runs did; a device ("cpu", "cuda") records where the scores are computed, so that scores computed on
a GPU never share a store key with the CPU's.

**Judge-free.** `Reading(instrument="recovery")` (`RECOVERY`) reads a network without a judge and
without perturbing it: by how well its hidden units recover a planted target's primitives
(`volratio.rho.recovery`, through `volratio.runs.recovered`). It takes no judge, anchor, reading of δ,
weights or device (they belong to EMC2; recovery reads the networks on the CPU); it applies to
networks trained on planted targets only.

Used by `volratio.runs.score` (the score stage), `volratio.runs.stored` (reading scores back), the
experiments' stored readers and `volratio.report.readings`.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, fields

from ..data.anchors import ANCHORS
from ..errors import VolratioError
from ..judges import JUDGES
from ..util.device import device_name
from .delta_scale import DELTA_SCALES

# the engines that can score every weight, each with its arithmetic: the torch engine in float64
# (the exact reference, as the source runs scored) or the fused C++ kernel in float32 (faster)
ENGINES = {"torch": "float64", "fused": "float32"}
WEIGHTS = ("own", "every")  # the runs' own EMC2 settings (a seeded sample), or every non-zero weight
# what reads a network: EMC2 under a judge, or the judge-free primitive recovery (planted targets only)
INSTRUMENTS = ("emc2", "recovery")


class ReadingError(VolratioError, ValueError):
    """A reading that names an unknown judge, anchor, reading of δ, weights, engine or device."""


@dataclass(frozen=True)
class Reading:
    """How stored networks are scored (see the module docstring)."""

    judge: str | None = None  # a judge of volratio.judges.JUDGES; None: each run's own (reading stored scores only)
    anchor: str = "image"  # what a label-anchored judge compares with (volratio.data.anchors.ANCHORS)
    delta_scale: str = "absolute"  # w ← w + δ ("absolute", the paper's) or w + δ·std of its layer ("layer_std")
    weights: "str | int" = "own"  # "own": the runs' own EMC2 settings; "every": every non-zero weight; N: at most N
    engine: str = "torch"  # the perturbation engine of an every-weight reading (ENGINES)
    device: str | None = None  # where the scores are computed (None: where the source runs computed)
    instrument: str = "emc2"  # "emc2": the fields above; "recovery": primitive recovery, judge-free (INSTRUMENTS)

    def __post_init__(self):
        if self.instrument not in INSTRUMENTS:
            raise ReadingError(f"reading: instrument {self.instrument!r}; choose one of {', '.join(INSTRUMENTS)}")
        if self.instrument == "recovery":
            emc2_only = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "instrument"}
            given = {k: v for k, v in emc2_only.items() if v != _DEFAULTS[k]}
            if given:
                raise ReadingError(
                    f"reading: {', '.join(f'{k}={v!r}' for k, v in given.items())} with instrument 'recovery', "
                    "which reads a network without a judge or a perturbation; leave them out "
                    "(Reading(instrument='recovery'))"
                )
        if self.judge is not None and self.judge not in JUDGES:
            raise ReadingError(f"reading: judge {self.judge!r}; choose one of {', '.join(JUDGES)}")
        if self.anchor not in ANCHORS:
            raise ReadingError(f"reading: anchor {self.anchor!r}; choose one of {', '.join(ANCHORS)}")
        if self.delta_scale not in DELTA_SCALES:
            raise ReadingError(f"reading: delta_scale {self.delta_scale!r}; choose one of {', '.join(DELTA_SCALES)}")
        if self.weights not in WEIGHTS and not (
            isinstance(self.weights, int) and not isinstance(self.weights, bool) and self.weights > 0
        ):
            raise ReadingError(
                f"reading: weights {self.weights!r}; choose one of {', '.join(WEIGHTS)}, or a positive integer "
                "(at most that many weights a network)"
            )
        if self.engine not in ENGINES:
            raise ReadingError(f"reading: engine {self.engine!r}; choose one of {', '.join(ENGINES)}")
        if self.weights == "own" and self.engine != "torch":
            raise ReadingError(
                f"reading: engine {self.engine!r} with the runs' own settings, which use theirs; "
                'choose another engine only with weights="every" or a number (`--every-weight`, `--max-weights N`)'
            )
        if self.device is not None:
            try:
                device_name(self.device)
            except (VolratioError, ValueError, TypeError) as e:
                raise ReadingError(f"reading: device {self.device!r} ({e}); give 'cpu', 'cuda' or 'cuda:N'") from None

    @property
    def every(self) -> bool:
        """Whether every non-zero weight is scored (not the runs' own sample)."""
        return self.weights == "every"

    @property
    def max_params(self) -> "int | None":
        """The EMC2 `max_params` of a reading that names its weights (None: every weight); `ReadingError`
        under the runs' own settings, which keep theirs."""
        if self.weights == "own":
            raise ReadingError("reading: weights 'own' keeps each run's own max_params; name the weights")
        return None if self.every else self.weights

    @property
    def own(self) -> bool:
        """Whether this is each run's own scoring, as stored (EMC2, no judge, δ absolute, own settings)."""
        return (
            self.instrument == "emc2"
            and self.judge is None
            and self.delta_scale == "absolute"
            and self.weights == "own"
        )

    @property
    def recovery(self) -> bool:
        """Whether this reading is the judge-free primitive recovery (`RECOVERY`)."""
        return self.instrument == "recovery"

    def emc2(self, settings: dict) -> dict:
        """A source run's EMC2 settings (`volratio.emc2.EMC2Config` entries) under this reading: δ's
        scale; where the reading names its weights, their `max_params` (None: every weight) with the
        engine and its arithmetic; the device where one is given."""
        if self.recovery:
            raise ReadingError("reading: primitive recovery has no EMC2 settings; score with an EMC2 reading")
        out = {**settings, "delta_scale": self.delta_scale}
        if self.weights != "own":
            out.update(max_params=self.max_params, engine=self.engine, dtype=ENGINES[self.engine])
        if self.device is not None:
            out["device"] = self.device
        return out

    def with_judge(self, judge: str | None) -> "Reading":
        """This reading under another judge."""
        return self.but(judge=judge)

    def but(self, **changes) -> "Reading":
        """This reading with `changes` (validated as a new reading)."""
        return Reading(**{**asdict(self), **changes})

    def as_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "Reading":
        """The reading `as_dict` stored (`ReadingError` for an unknown entry)."""
        if not isinstance(d, dict):
            raise ReadingError(f"a reading is a table (dict) of {', '.join(f.name for f in fields(cls))}; got {d!r}")
        unknown = set(d) - {f.name for f in fields(cls)}
        if unknown:
            raise ReadingError(f"reading: unknown entries {sorted(unknown)}; it has {[f.name for f in fields(cls)]}")
        return cls(**d)

    def key(self) -> str:
        """A short stable hash of the reading (16 hex digits of the SHA-256 of its sorted JSON)."""
        return hashlib.sha256(json.dumps(self.as_dict(), sort_keys=True).encode()).hexdigest()[:16]

    def describe(self) -> str:
        """The reading in words, e.g. "anchored-v2, δ layer_std, every weight (fused engine)"."""
        if self.recovery:
            return "primitive recovery (judge-free)"
        parts = ["each run's own judge" if self.judge is None else self.judge]
        if self.anchor != "image":
            parts.append(f"anchor {self.anchor}")
        if self.delta_scale != "absolute":
            parts.append(f"δ {self.delta_scale}")
        if self.weights == "own":
            parts.append("the runs' own settings")
        else:
            parts.append(f"{'every' if self.every else f'up to {self.weights:,}'} weight{'' if self.every else 's'} "
                         f"({self.engine} engine)")  # fmt: skip
        if self.device is not None:
            parts.append(f"on {self.device}")
        return ", ".join(parts)

    def flags(self) -> str:
        """The `volratio reference rescore` flags of this reading (without the chunk); a judge-free
        reading has none (`volratio.runs.recovered.table` reads a chunk by recovery)."""
        if self.recovery:
            raise ReadingError(
                "reading: primitive recovery is not a rescore; read a chunk with volratio.runs.recovered.table"
            )
        out = [] if self.judge is None else [f"--judge {self.judge}"]
        if self.anchor != "image":
            out.append(f"--anchor {self.anchor}")
        if self.delta_scale != "absolute":
            out.append(f"--delta-scale {self.delta_scale}")
        if self.weights != "own":
            out.append(f"{'--every-weight' if self.every else f'--max-weights {self.weights}'} --engine {self.engine}")
        if self.device is not None:
            out.append(f"--device {self.device}")
        return " ".join(out)


_DEFAULTS = {f.name: f.default for f in fields(Reading)}
RECOVERY = Reading(instrument="recovery")  # the judge-free reading: primitive recovery on planted targets
