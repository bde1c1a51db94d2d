"""The scene's effect against its parts' (the claim "scenes-weaker"), read from the stored runs.

Two depth sweeps of scenes and their parts are stored (`volratio.experiments.unknown_targets`):

- `verdict` — the deciding comparison, in the sparse regime (chunks depth_sparse_scenes and
  depth_sparse_picbreeder): the Picbreeder-pair scenes and their parts, wide networks pruned by
  unguarded SP, each scored at its fit point;
- `near_dense` — a check (chunks depth_scenes and depth_picbreeder): four scenes, the natural-image
  scene among them, on width-12 networks that SP's loss guard keeps almost whole.

Each scene is compared with the mean of its two parts on two measures, and the verdict is decided
by the first, the best mean score, over the scenes (`claims.scenes_weaker`: a t-interval over the
scenes); the second, peak − rest, is its sub-check. A reading is the judge the networks are scored under and how δ
is read (`delta_scale`), on every non-zero weight (`read=EVERY`) or on the runs' own seeded sample
(`read=SAMPLE`; both `volratio.emc2.reading.Reading`s of `volratio.report.readings`). The curves are read once per process (the store does not change under a book build);
the verdicts are computed at each call, so that a verdict asked for outside `claims.unglued()` is
always glued.

Chapters: "Unknown targets" (book/unknown_targets.md) glues `verdict` under the default judge;
"Evidence: unknown targets" (book/evidence_unknown_targets.md) reads the other judges, δ and the check.
"""

from __future__ import annotations

from functools import cache

import pandas as pd

from ...emc2.reading import Reading
from ...experiments import depth_regime, unknown_targets
from ...judges import DEFAULT_JUDGE
from ...runs import stored
from ..deciders import scenes_weaker
from ..render import Verdict
from . import EVERY
from . import SAMPLE as SAMPLE  # re-exported: the runs' own seeded sample, as a chapter passes `read=`

SPARSE = unknown_targets.SPARSE_CHUNKS
NEAR_DENSE = unknown_targets.REFERENCE_CHUNKS
OWN_JUDGE = "anchored"  # the near-dense runs' own judge, which their check is read under
ASKED = ("anchored-ssim", "anchored-pooled", "stability")  # judges asked for beyond those the runs are scored by
_WORDS = ("no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine")


@cache
def _scenes(chunks: tuple, read: Reading) -> tuple[dict, list]:
    return unknown_targets.stored_scenes(names=chunks, reading=read)


def scenes(chunks, judge: str, delta_scale: str = "absolute", read: Reading = EVERY) -> tuple[dict, list]:
    """`(curves, rows)` of `unknown_targets.stored_scenes` for the chunks `chunks` under a reading,
    read once per process (copies of the containers, which the caller may change). A network without
    scores under that reading is a `DepthError` naming the rescore that scores it."""
    curves, rows = _scenes(tuple(chunks), read.but(judge=judge, delta_scale=delta_scale))
    return dict(curves), [dict(r) for r in rows]


def specs(rows) -> list[str]:
    """The scenes compared in `rows` (of `scenes`), in their order."""
    return list(dict.fromkeys(r["spec"] for r in rows))


def _count(n: int) -> str:
    return _WORDS[n] if n < len(_WORDS) else str(n)


# --- the deciding comparison: the sparse regime ----------------------------------------------


def sparse_scenes(judge: str = DEFAULT_JUDGE, delta_scale: str = "absolute") -> tuple[dict, list]:
    """`(curves, rows)` of the sparse regime's scenes and parts, every weight scored under a reading."""
    return scenes(SPARSE, judge, delta_scale, EVERY)


@cache
def _sparsity() -> pd.DataFrame:
    curves, rows = sparse_scenes()
    table = depth_regime.sparsity_table(SPARSE)
    return table[table.index.get_level_values("depth").isin(curves[specs(rows)[0]].depths)]


def sparsity() -> pd.DataFrame:
    """What the sparse regime scored, per target and depth on the scenes' depths (medians over the
    networks, `depth_regime.sparsity_table`): a copy."""
    return _sparsity().copy()


def is_scene(table: pd.DataFrame):
    """Which rows of a table indexed by target (e.g. `sparsity()`) are scenes, not parts."""
    return table.index.get_level_values("target").str.startswith("scene:")


@cache
def _where() -> str:
    curves, rows = sparse_scenes()
    s, table = specs(rows), _sparsity()
    scene = is_scene(table)
    return (
        f"{_count(len(s))} Picbreeder-pair scenes vs their parts in the sparse regime, depths "
        f"{', '.join(map(str, curves[s[0]].depths))}; each network at its fit point, median weight "
        f"sparsity {table[scene].sparsity.median():.2f} (scenes) and {table[~scene].sparsity.median():.2f} (parts)"
    )


def verdict(judge: str = DEFAULT_JUDGE, delta_scale: str = "absolute") -> Verdict:
    """The claim's verdict from the sparse regime's scenes and parts scored under `judge` on every
    weight, δ read as `delta_scale`: scene − parts pooled over the scenes and effects."""
    _, rows = sparse_scenes(judge, delta_scale)
    return scenes_weaker(rows, _where(), scale="reference", judge=judge, stored=True)


def judges() -> tuple[list, list]:
    """`(scored, missing)`: the judges whose every-weight scores cover every network of the sparse
    regime, and those of `ASKED` that have none yet."""
    scored = stored.judges_covering(SPARSE, reading=EVERY)
    return scored, [j for j in ASKED if j not in scored]


def layer_std() -> Verdict | None:
    """The deciding comparison with each weight moved by δ × the std of its layer, under the default
    judge where its rescores cover every network (else the label-anchored judge's); None where no
    judge has scored that reading on every weight."""
    judge = stored.scaled_judge(SPARSE, DEFAULT_JUDGE, reading=EVERY)
    return verdict(judge, "layer_std") if judge else None


# --- a check: the near-dense networks --------------------------------------------------------


def near_dense_scenes(
    judge: str = OWN_JUDGE, delta_scale: str = "absolute", read: Reading = EVERY
) -> tuple[dict, list]:
    """`(curves, rows)` of the near-dense sweep's scenes and parts under a reading."""
    return scenes(NEAR_DENSE, judge, delta_scale, read)


def near_dense(judge: str = OWN_JUDGE, delta_scale: str = "absolute", read: Reading = EVERY) -> Verdict:
    """The comparison on the near-dense networks (a check), under a reading."""
    curves, rows = near_dense_scenes(judge, delta_scale, read)
    depths = curves[specs(rows)[0]].depths
    where = f"{_count(len(specs(rows)))} scenes vs their parts, depths {depths[0]}, {depths[1]}, …, {depths[-1]}"
    return scenes_weaker(rows, where, scale="reference", judge=judge, stored=True)
