"""The reference plan, generated from the experiments that own its chunks.

`examples/sweeps/reference.toml` is not written by hand: each chunk is declared by the experiment whose
chapter reads it, as a `Chunk` returned by the module's `reference_chunks()` (what the TOML chunk
holds — `run`, `config`, `grid`, `cases`, `seeds`, `threads` — plus `why`, the comment the file shows
above it). `chunks()` asks every registered experiment (`volratio.runs.registry.EXPERIMENTS`, through
`registry.module`: this layer never imports an experiment) for its chunks, and `plan_text()` renders
them as the plan file, in the order of `ORDER`:

    volratio reference plan --scale reference --out examples/sweeps/reference.toml

Why this replaces the tests that compared each chunk with its preset: an owning module builds its
chunks from its own `Config.reference()` (its shared settings, targets, depths, seeds) and from named
constants of the module where the plan holds what no preset holds (a depth measured by another chunk,
a count per target, the sixteen twin targets), each with a comment saying where it comes from. So a
chunk equals its preset by construction, and `tests/test_reference_plan.py` only checks that the
committed file is the generated text, that every chunk has a registered owner, and that the store
holds exactly the plan's runs (a preset changed without re-running its chunk fails there).

Only the reference scale is generated; `examples/sweeps/full.toml` (the paper-sized plan, never run
in full) stays written by hand.
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass, field

from ..errors import VolratioError
from ..judges import DEFAULT_JUDGE
from .registry import EXPERIMENTS, get_run, module

WIDTH = 100  # the comment lines' width
SCALES = ("reference",)  # the scales whose plan is generated
# The near-dense chunks were stored under the default judge of their day, "anchored" (ungated); the
# library's default is now DEFAULT_JUDGE, under which the claims rescore their stored networks
# (`volratio reference rescore`). A chunk built from a preset names the judge it was stored under.
STORED_JUDGE = "anchored"


class PlanError(VolratioError, ValueError):
    """A plan that cannot be generated: a scale without one, a chunk declared twice."""


@dataclass(frozen=True)
class Chunk:
    """One chunk of the reference plan: a sweep spec (`volratio.runs.sweep.Sweep`) with the reason
    it runs what it runs."""

    run: str  # a registered run function (volratio.runs.registry.get_run)
    why: str  # what the chunk decides and why these runs: the comment above it (paragraphs split by "\n")
    config: dict = field(default_factory=dict)  # entries shared by every run
    grid: dict = field(default_factory=dict)  # name -> values; every combination runs
    cases: tuple = ()  # partial configs, each crossed with the grid
    seeds: tuple = (0,)
    threads: int = 1
    notes: dict = field(default_factory=dict)  # config entry -> a comment beside it
    heading: str = ""  # opens a group of chunks: a comment set off by a rule, before `why`

    def spec(self) -> dict:
        """The chunk as a sweep spec (`Sweep.from_dict`; without its name)."""
        out = {"run": self.run, "seeds": list(self.seeds), "threads": self.threads}
        if self.cases:
            out["cases"] = [dict(c) for c in self.cases]
        if self.config:
            out["config"] = dict(self.config)
        if self.grid:
            out["grid"] = {k: list(v) for k, v in self.grid.items()}
        return out


def as_stored(config: dict) -> dict:
    """`config` with the default judge read as the one the near-dense chunks were stored under."""
    return {k: STORED_JUDGE if k == "judge" and v == DEFAULT_JUDGE else v for k, v in config.items()}


def changes(run: str, config: dict) -> dict:
    """The entries of `config` (a complete config, e.g. a preset's `shared()`) that differ from the
    run function's defaults, with their order: what a chunk must name for its runs to have `config`
    (the others the run function's parse fills in, so the complete config and the key are the same)."""
    default = get_run(run).keyed({})
    return {k: v for k, v in config.items() if k not in default or default[k] != v}


# The order of the chunks in the file (the order they were added in); a chunk not named here follows
# them, in the registry's book order.
ORDER = (
    "rho", "rho_wmin", "rho_deep", "rho_deep_wmin", "emc2", "emc2_dense", "depth_picbreeder", "depth_budget",
    "depth_planted", "depth_scenes", "optimizers", "depth_sparse_scenes", "optimizers_sparse",
    "optimizers_sparse_butterfly", "optimizers_matched", "welch_frames", "welch_toy", "interference", "rho_basin",
    "twins16_picbreeder", "twins16", "sparse_regime", "sparse_regime_more", "depth_sparse_planted",
    "depth_sparse_picbreeder", "depth_matched_planted", "optimizers_planted", "sparse_regime_planted",
    "sparse_regime_near_dense", "sparse_regime_fork_a", "sparse_regime_fork_b", "sparse_regime_fork_c",
    "sparse_regime_fork_d", "sparse_regime_fork_e", "optimizers_fork_fit_a", "optimizers_fork_fit_b",
)  # fmt: skip

HEADER = """\
The reference scale: the runs that decide the paper's claims on a 2-core machine.
Each [chunks.NAME] is a sweep spec (see quick.toml): `run` names a registered run function \
(`volratio run --list`; never an import path), every run's config = config + one case + one value of \
each grid entry + "seed". Each chunk goes to its own results store results/reference/NAME/ with a \
manifest.json (versions, commit, CPU model, wall and CPU seconds per run), and is committed to git as \
soon as it finishes:
  volratio reference run examples/sweeps/reference.toml --chunk rho --out results/reference
  volratio results verify results/reference --sample 3
A rerun skips every run already in the store, so an interrupted chunk resumes where it stopped.
A run's key is the hash of its run function's name and its complete config: every entry of the run \
function's config, today's default where a chunk gives none. Changing a default therefore makes new \
keys, and the chunk's stored runs are then not found: tests/test_reference_plan.py fails until the \
chunk names the old value or is re-run.
THIS FILE IS GENERATED (volratio.runs.plan): each chunk is declared by the experiment whose chapter \
reads it, `reference_chunks()` in volratio/experiments/<experiment>.py, built from its reference preset \
`Config.reference()` and from named constants where the plan holds what a preset cannot (a depth \
measured by another chunk, a count per target), with the comment shown above it. To change what the \
reference scale runs, change the preset or the chunk in its module, then regenerate and rerun the chunk:
  volratio reference plan --scale reference --out examples/sweeps/reference.toml"""


def chunks(scale: str = "reference") -> dict:
    """`{chunk name: (owner, Chunk)}` of the plan of `scale`, in the file's order: every registered
    experiment's `reference_chunks()` (the owner is the experiment's registry name)."""
    if scale not in SCALES:
        raise PlanError(
            f"scale {scale!r}: only the {', '.join(SCALES)} plan is generated (full.toml is written by hand)"
        )
    found: dict = {}
    for name in EXPERIMENTS:
        declare = getattr(module(name), "reference_chunks", None)
        for chunk, spec in (declare() if declare else {}).items():
            if chunk in found:
                raise PlanError(f"chunk {chunk!r} is declared by both {found[chunk][0]} and {name}; keep one")
            found[chunk] = (name, spec)
    rank = {c: i for i, c in enumerate(ORDER)}
    return {c: found[c] for c in sorted(found, key=lambda c: rank.get(c, len(ORDER)))}


def plan_text(scale: str = "reference") -> str:
    """The plan file of `scale`: the header, `scale`, then each chunk (its `why` as comment lines)."""
    parts = [_comment(HEADER), f"scale = {_value(scale)}"]
    for name, (_owner, chunk) in chunks(scale).items():
        parts.append(_chunk(name, chunk))
    return "\n\n".join(parts) + "\n"


# ---------------------------------------------------------------------------------------------
# TOML text


def _comment(text: str) -> str:
    """`text` as `#` lines of at most WIDTH characters; a line of `text` starting with two spaces is
    kept as it is (a command), the others are re-flowed."""
    out = []
    for line in text.split("\n"):
        if line.startswith("  ") or not line:
            out.append(f"#   {line.strip()}".rstrip() if line else "#")
            continue
        out += textwrap.wrap(line, WIDTH - 2, break_long_words=False, break_on_hyphens=False)
    return "\n".join(x if x.startswith("#") else f"# {x}" for x in out)


def _chunk(name: str, c: Chunk) -> str:
    head = f"# {'-' * (WIDTH - 2)}\n{_comment(c.heading)}\n\n" if c.heading else ""
    lines = [_comment(c.why), f"[chunks.{name}]", f"run = {_value(c.run)}", f"seeds = {_value(list(c.seeds))}"]
    lines.append(f"threads = {_value(c.threads)}")
    if c.cases:
        lines.append("cases = [\n" + "".join(f"    {_value(dict(case))},\n" for case in c.cases) + "]")
    for table, entries in (("config", c.config), ("grid", c.grid)):
        if entries:
            lines += ["", f"[chunks.{name}.{table}]"]
            lines += [_entry(k, v, c.notes.get(k) if table == "config" else None) for k, v in entries.items()]
    return head + "\n".join(lines)


def _entry(key: str, value, note: "str | None") -> str:
    line = f"{_key(key)} = {_value(value)}"
    if len(line) > WIDTH and isinstance(value, (list, tuple)):
        line = f"{_key(key)} = [\n" + "".join(f"    {_value(v)},\n" for v in value) + "]"
    if not note:
        return line
    beside = f"{line}  # {note}"
    return beside if len(beside) <= WIDTH and "\n" not in line else f"{_comment(note)}\n{line}"


def _key(key: str) -> str:
    return key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else _value(key)


def _value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return f"{v:_}" if abs(v) >= 1_000_000 else str(v)
    if isinstance(v, float):
        return repr(v)
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{_key(str(k))} = {_value(x)}" for k, x in v.items()) + " }" if v else "{}"
    raise PlanError(f"{v!r}: a plan holds strings, numbers, booleans, lists and tables only")
