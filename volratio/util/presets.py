"""The scales of a config: one preset mechanism for every config dataclass of the library.

A config that mixes in `Presets` has three class methods, `quick()`, `reference()` and `full()`.
Each returns the dataclass's defaults changed by the class's `QUICK`, `REFERENCE` or `FULL` (a dict,
or a function of no arguments returning one, for presets that build objects), then by keyword
overrides; a config with a `scale` field records the preset's name there. The experiments' configs
(`volratio.experiments`) keep their defaults as the quick scale (`QUICK` empty); the building
blocks' configs (training, SP, EMC2, the Welch sweeps) set `QUICK` to what the book runs.
"""

from __future__ import annotations

import dataclasses
from typing import Any

SCALES = ("quick", "reference", "full")  # the presets every config has, smallest first


class Presets:
    QUICK: Any = {}  # changes to the defaults for the quick scale (what the book executes)
    REFERENCE: Any = {}  # … for the reference scale (what decides the claims, results/reference/)
    FULL: Any = {}  # … for the full scale (paper-sized)

    @classmethod
    def _preset(cls, changes, scale: str, kw: dict):
        changes = changes() if callable(changes) else changes
        named = {"scale": scale} if any(f.name == "scale" for f in dataclasses.fields(cls)) else {}
        return cls(**{**changes, **named, **kw})

    @classmethod
    def quick(cls, **kw):
        return cls._preset(cls.QUICK, "quick", kw)

    @classmethod
    def reference(cls, **kw):
        return cls._preset(cls.REFERENCE, "reference", kw)

    @classmethod
    def full(cls, **kw):
        return cls._preset(cls.FULL, "full", kw)
