"""Experiment `unknown_targets`: natural images and a two-object scene (the claim "scenes-weaker").

Each target's depth is predicted from its PNG compression ratio with the predictor calibrated on
planted targets of known depth (`volratio.depth.planted_predictor`); then the depth sweep of
`volratio.experiments.depth_regime` runs on the images and the scene. The scene is compared with
its parts on two effect sizes of the score-vs-depth curve (`volratio.depth.peak_effect`): the best
mean score and the peak contrast (best mean − mean of the other depths), with a bootstrap over
networks (`scene_vs_parts`).

Chapter: "Unknown targets" (book/unknown_targets.md).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from ..data.picbreeder import NONZEROS
from ..data.targets import get_target
from ..depth import peak_effect, planted_predictor, sweet_spot
from ..depth.complexity import png_ratio
from ..depth.curves import DepthCurve, among_fitting, curves_from_table
from ..depth.point import Config as DepthConfig
from ..depth.point import Settings
from ..emc2.reading import Reading
from ..runs import stored
from ..runs.depth_sweep import depth_sweep, make_sweep, rescored
from ..runs.plan import STORED_JUDGE, Chunk, as_stored, changes
from ..util.limits import at_least, between, parsed_by
from ._base import PAPER, Result, Trained, check_reading, unscored

EFFECTS = ("best mean score", "peak − rest")


@dataclass(frozen=True)
class Config(DepthConfig):
    targets: tuple = ("image:camera", "image:coffee", "image:astronaut", "scene:image:camera+image:coffee")  # swept
    scene: str = "scene:image:camera+image:coffee"  # the scene compared with its parts
    parts: tuple = ("image:camera", "image:coffee")  # the scene's parts
    res: int = 24  # at 16 px each half of a two-object scene would be 8×8 pixels; at 24 it is 12×12
    n_boot: int = 1000  # bootstrap resamples of the networks
    level: float = 0.90  # bootstrap interval of scene − parts

    LIMITS = {**Settings.LIMITS, "n_boot": at_least(1), "level": between(0, 1, open_lo=True),
              "scene": parsed_by(get_target), "parts": parsed_by(get_target)}  # fmt: skip

    # reference: the depth-regime reference's training and scoring (what chunk depth_scenes of
    # examples/sweeps/reference.toml runs; its `reference_chunks()` builds them from this preset): four two-object
    # scenes — three of Picbreeder pairs, whose parts chunk depth_picbreeder stores, and the natural-image
    # scene with its parts — at depths 2, 4, …, 16. full: the depth-regime full preset on these targets
    REFERENCE = staticmethod(
        lambda: {
            **_shared(DepthConfig.reference()),
            "targets": REFERENCE_TARGETS,
            "depths": tuple(range(2, 17, 2)),
        }
    )
    FULL = staticmethod(lambda: _shared(DepthConfig.full()))


def _shared(base: DepthConfig) -> dict:
    return {
        k: getattr(base, k)
        for k in (
            "depths",
            "seeds",
            "members",
            "width",
            "res",
            "steps",
            "lr",
            "sp",
            "deltas",
            "max_params",
            "train_path",
        )
    }


REFERENCE_TARGETS = (
    "scene:picbreeder:skull+picbreeder:apple",
    "scene:picbreeder:skull+picbreeder:butterfly",
    "scene:picbreeder:butterfly+picbreeder:apple",
    "scene:image:camera+image:coffee",
    "image:camera",
    "image:coffee",
)


def scene_vs_parts(
    curves: dict, scene: str, parts, n_boot: int = 1000, level: float = 0.90, seed: int = 0
) -> list[dict]:
    """Per effect (`EFFECTS`): scene, mean of the parts, their difference and its bootstrap interval
    (networks resampled within each target), and the verdict on "weaker for the scene"."""
    rng = np.random.default_rng(seed)

    def pick(c):
        return c.score[:, rng.integers(0, c.score.shape[1], c.score.shape[1])]

    boot = np.array(
        [
            np.subtract(
                peak_effect(pick(curves[scene])), np.mean([peak_effect(pick(curves[p])) for p in parts], axis=0)
            )
            for _ in range(n_boot)
        ]
    )  # (n_boot, 2)
    sc = peak_effect(curves[scene].score)
    pa = np.mean([peak_effect(curves[p].score) for p in parts], axis=0)
    rows = []
    for k, name in enumerate(EFFECTS):
        lo, hi = np.nanpercentile(boot[:, k], [50 - 50 * level, 50 + 50 * level])  # NaN: a resample with no score
        d = sc[k] - pa[k]
        rows.append(
            {
                "effect": name,
                "scene": float(sc[k]),
                "parts": float(pa[k]),
                "difference": float(d),
                "lo": float(lo),
                "hi": float(hi),
                "below its parts": bool(hi < 0),  # a sub-check: the interval lies below 0
            }
        )
    return rows


def train(cfg: Config | None = None, *, out=None, executor=None) -> Trained:
    """The depth sweep of the targets (each run trains, prunes and scores its networks under the
    config's judge), one row per target: PNG ratio, predicted depth (band, prediction interval),
    measured sweet spot and its peak; extras: `curves`, `report`, `predictor`, `scene_vs_parts`."""
    cfg = cfg or Config.quick()
    t0 = time.perf_counter()
    curves, report = depth_sweep(cfg.targets, replace(cfg), out=out, executor=executor)
    table, extras = _tabulated(cfg, curves)
    seeds = sorted({int(s) for s in report.table["seed"]})
    return Trained("unknown_targets", cfg, table, seeds, time.perf_counter() - t0, judge=cfg.judge,
                   extras={**extras, "report": report})  # fmt: skip


def score(trained: Trained, reading: Reading = PAPER) -> Result:
    """The sweep as its runs scored it (the default reading), or its stored networks scored under a
    reading's judge without training again (`volratio.runs.depth_sweep.rescored`), and every target's
    row and the scene against its parts read from those scores."""
    check_reading(reading)
    if reading.judge is None:
        return unscored(trained, reading)
    t0, cfg = time.perf_counter(), trained.config
    table, extras = _tabulated(cfg, curves_from_table(rescored(trained.extras["report"], reading), cfg.tol))
    return trained.result(table, reading.judge, time.perf_counter() - t0, extras)


def _tabulated(cfg: Config, curves: dict) -> tuple:
    """`(table, extras)` of the sweep's `curves`: one row per target (PNG ratio, predicted depth with
    its band and prediction interval, measured sweet spot and its peak); the curves, the planted
    predictor and the scene against its parts."""
    pred, _ = planted_predictor(res=cfg.ratio_res)
    rows = []
    for t in cfg.targets:
        c, p = curves[t], pred.predict(png_ratio(t, cfg.ratio_res).ratio)
        s = pd.DataFrame(c.summary())
        rows.append(
            {
                "target": t,
                "ratio": png_ratio(t, cfg.ratio_res).ratio,
                "predicted depth": p["depth"],
                "band": (p["band_lo"], p["band_hi"]),
                "prediction interval": (p["pi_lo"], p["pi_hi"]),
                "sweet spot": c.spot.depth,
                "bootstrap 90%": c.spot.interval,
                "per seed": c.spot.per_seed,
                "best score": max(c.spot.means),
                "peak − rest": c.spot.peak_contrast,
                "mean CI width": float((s.score_hi - s.score_lo).mean()),
                "MSE at spot": float(np.nanmean(c.loss[c.depths.index(c.spot.depth)])) if c.spot.depth else np.nan,
            }
        )
    svp = scene_vs_parts(curves, cfg.scene, cfg.parts, cfg.n_boot, cfg.level) if cfg.scene in curves else []
    return pd.DataFrame(rows), {"curves": curves, "predictor": pred, "scene_vs_parts": svp}


def run(cfg: Config | None = None, *, out=None, executor=None) -> Result:
    """`Result.table`: one row per target (see `train`); extras: `curves`, `report`, `predictor`,
    `scene_vs_parts`."""
    return score(train(cfg, out=out, executor=executor), PAPER)


def net_at_spot(curves: dict, nets: dict, target: str) -> tuple:
    """`(network, depth)`: the first network of `target` at its sweet spot in `curves`, or at the
    middle swept depth where the curve has no spot (a flat curve), from `nets` (`(target, depth) ->
    population`, `volratio.runs.depth_sweep.load_nets`). The chapter draws its feature maps and
    weight sweeps."""
    c = curves[target]
    depth = c.spot.depth or c.depths[len(c.depths) // 2]
    return nets[(target, depth)].select(0), depth


# ---------------------------------------------------------------------------------------------
# The reference scale (stored results)

REFERENCE_CHUNKS = ("depth_scenes", "depth_picbreeder")  # scenes (and natural parts); Picbreeder parts
# the sparse regime (run function sparse_depth_point, `volratio.depth.sparse_point`): the Picbreeder-pair
# scenes and their parts, wide networks pruned by unguarded SP, each scored at its fit point
SPARSE_CHUNKS = ("depth_sparse_scenes", "depth_sparse_picbreeder")


def scene_parts(scene: str) -> tuple:
    """The parts of a scene spec: `scene:A+B` → `(A, B)`."""
    return tuple(scene.removeprefix("scene:").split("+"))


def restrict(curve: DepthCurve, depths) -> DepthCurve:
    """`curve` on the depths it shares with `depths` (its sweet spot recomputed there), so that
    curves swept over different depth grids are compared on the same one."""
    keep = [i for i, d in enumerate(curve.depths) if d in set(depths)]
    ds = [curve.depths[i] for i in keep]
    score = curve.score[keep]
    return DepthCurve(
        curve.target,
        ds,
        score,
        curve.loss[keep],
        curve.dense_loss[keep],
        curve.nonzero[keep],
        sweet_spot(ds, score),
        curve.kept[keep],
    )


def stored_scenes(
    root=None,
    n_boot: int = 1000,
    level: float = 0.90,
    fitting: float | None = None,
    names=REFERENCE_CHUNKS,
    reading: Reading = stored.OWN,
) -> tuple[dict, list]:
    """`(curves, rows)` from the stored reference chunks: every scene of `depth_scenes` and its parts
    on the scene's depths (`restrict`), and per scene × effect the row of `scene_vs_parts` (its
    `effect` prefixed with the scene, `spec` the scene). Scenes whose parts are not all stored are left out.
    `fitting`: compare only the networks that fit, MSE ≤ `fitting` × each target's median MSE on
    the scene's depths (`volratio.depth.curves.among_fitting`; None: every network, the protocol). `names`:
    the chunks read (`REFERENCE_CHUNKS`). `reading` (`volratio.emc2.reading.Reading`): every
    network scored under it (`volratio.runs.stored.depth_curves`, which never mixes chunks judged
    differently; the score runs where the runs' own differ), e.g. judge "anchored-pooled" for one
    threshold for every image; by default the runs' own scores."""
    curves = stored.depth_curves(names, root, reading=reading)
    rows, out = [], {}
    for scene in [t for t in curves if t.startswith("scene:")]:
        parts = scene_parts(scene)
        if not all(p in curves for p in parts):
            continue
        grid = curves[scene].depths
        sub = {t: restrict(curves[t], grid) for t in (scene, *parts)}
        if any(sub[p].depths != grid for p in parts):
            continue  # a part lacks one of the scene's depths
        if fitting is not None:
            sub = among_fitting(sub, fitting)[0]
        out.update(sub)
        for r in scene_vs_parts(sub, scene, parts, n_boot, level):
            rows.append({**r, "spec": scene, "effect": f"{scene.removeprefix('scene:')}: {r['effect']}"})
    return out, rows


# ---------------------------------------------------------------------------------------------
# The reference plan's chunks (volratio.runs.plan writes them to examples/sweeps/reference.toml)


def _parts_count(scene: str) -> "int | None":
    """The sum of a Picbreeder-pair scene's parts' non-zero counts (None for any other target)."""
    parts = scene.removeprefix("scene:").split("+")
    if not scene.startswith("scene:") or not all(p.startswith("picbreeder:") for p in parts):
        return None
    return sum(NONZEROS[p.partition(":")[2]] for p in parts)


def reference_chunks() -> dict:
    """The chunks of the reference plan that this experiment owns (`volratio.runs.plan.Chunk`: a
    sweep spec and why it runs what it runs): the reference preset's depth sweep (`make_sweep`) under
    the judge it was stored under, and the Picbreeder-pair scenes in the sparse regime, SP stopping at
    the sum of their parts' Picbreeder counts."""
    ref = Config.reference()
    near = make_sweep(ref.targets, ref)
    return {
        "depth_scenes": Chunk(
            run="depth_point",
            why=(
                'Scenes against their parts (claim "scenes-weaker"), the unknown_targets experiment\'s reference '
                "preset: four two-object scenes swept over depths 2, 4, …, 16 with the depth chunks' settings, so"
                " that three Picbreeder-pair scenes compare with their parts stored by depth_picbreeder "
                "(restricted to the same depths); the natural-image scene's parts (camera, coffee) are swept "
                "here. 48 runs, ~50 CPU-minutes (from the depth pilots)."
            ),
            seeds=near.seeds,
            config=changes("depth_point", as_stored(near.config)),
            grid=near.grid,
        ),
        "depth_sparse_scenes": Chunk(
            run="sparse_depth_point",
            why=(
                'Scenes against their parts in the sparse regime (claim "scenes-weaker"; run function '
                "sparse_depth_point, as depth_sparse_picbreeder): the three Picbreeder-pair scenes from width 48 "
                "at depths 2, 4, …, 12, SP stopping at the sum of the two parts' Picbreeder counts at the latest "
                "(skull + apple 147 + 918, skull + butterfly 147 + 281, butterfly + apple 281 + 918), each "
                "network scored at its fit point, so that each scene compares with its parts stored by "
                "depth_sparse_picbreeder on the same depths. The natural-image scene is not run here (its parts "
                "are photographs, which no Picbreeder count sizes). 18 runs, ~60 CPU-minutes (as "
                "depth_sparse_picbreeder)."
            ),
            seeds=(0,),
            cases=[{"target": s, "sp.target_nonzeros": _parts_count(s)} for s in REFERENCE_TARGETS if _parts_count(s)],
            config={
                "members": 3,
                "width": 48,
                "device": "cpu",
                "judge": STORED_JUDGE,
                "deltas": near.config["deltas"],
                "keep_net": True,
            },  # fmt: skip
            grid={"depth": [2, 4, 6, 8, 10, 12]},
        ),
    }
