"""The sixteen Picbreeder targets side by side, and the judge-free test "complexity predicts depth".

- `gallery(ratio_res)` → one row per Picbreeder target (`picbreeder.ALL_NAMES`: the original
  three first, then the thirteen of the fork `jagilley/fer`): what its network is (the layerized
  genome, or — for the thirteen, which have no genome — the fork's layered network), that
  network's depth, width and non-zero weights, and the target's PNG compression ratio
  (`volratio.depth.complexity.png_ratio` at `ratio_res`, the depth chapter's resolution by default).
- `complexity_vs_depth(table)` → the straight-line fit of the layered depth each evolved network
  needed against the PNG ratio of its image (`volratio.depth.fit_predictor`: slope, R², confidence
  band, leave-one-out error), with the bootstrap interval of R² (`volratio.depth.r2_interval`) and
  the p-value of a zero slope. No training and no judge: the depths are the evolved networks' own,
  the ratios a property of the images. (The depth that *training* prefers — the sweet spot — is
  the depth chapter's question; this is its cheap counterpart over sixteen real images.)

Chapter: "Picbreeder networks and their SGD twins" (book/picbreeder.md), section "Sixteen targets".
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import pandas as pd
import scipy

from ..data import picbreeder
from ..depth import DepthPredictor, fit_predictor, r2_interval
from ..depth.complexity import pillow_version, png_ratio

RATIO_RES = 64  # the resolution the depth chapter computes PNG ratios at (ratios compare only at one size)


def gallery(ratio_res: int = RATIO_RES):
    """A `pandas.DataFrame`, one row per Picbreeder target, with columns `target` (the spec),
    `name`, `network` ("layerized genome" or "fork's layered network (no genome)"), `depth`,
    `width`, `nonzero` (non-zero weights), `weights` (all weights of the layered architecture),
    `png_ratio` (raw / PNG bytes of the target drawn at `ratio_res`, higher = simpler),
    `png_bytes`, `ratio_res` and `pillow` (PNG sizes depend on Pillow's zlib). Fetches the data
    of either dataset on first use."""
    rows = []
    for name in picbreeder.ALL_NAMES:
        net = picbreeder.network(name)
        cx = png_ratio(f"picbreeder:{name}", ratio_res)
        rows.append(
            {
                "target": f"picbreeder:{name}",
                "name": name,
                "network": "layerized genome" if picbreeder.has_genome(name) else "fork's layered network (no genome)",
                "depth": int(net.depth),
                "width": int(net.width),
                "nonzero": int(net.nonzero()[0]),
                "weights": int(net.n_params()),
                "png_ratio": float(cx.ratio),
                "png_bytes": int(cx.png_bytes),
                "ratio_res": int(ratio_res),
                "pillow": cx.pillow,
            }
        )
    return pd.DataFrame(rows)


@dataclass
class ComplexityDepth:
    """Layered depth ≈ a + b · PNG ratio over the Picbreeder targets, with R²'s interval."""

    predictor: DepthPredictor  # the fit: a, b, r2, bands, leave-one-out errors, points and names
    r2_lo: float  # percentile bootstrap interval of R² at `level`
    r2_hi: float
    p_value: float  # two-sided test of a zero slope (scipy.stats.linregress)
    level: float
    n_boot: int
    seed: int
    ratio_res: int
    pillow: str

    @property
    def n(self) -> int:
        return self.predictor.n

    def summary(self) -> dict:
        """The numbers a chapter glues: n, slope, intercept, R² and its interval, p, LOO RMSE."""
        p = self.predictor
        return {
            "n": p.n,
            "slope": p.b,
            "slope_se": p.se_b,
            "intercept": p.a,
            "r2": p.r2,
            "r2_lo": self.r2_lo,
            "r2_hi": self.r2_hi,
            "p_value": self.p_value,
            "loo_rmse": p.loo_rmse,
            "level": self.level,
            "ratio_res": self.ratio_res,
            "pillow": self.pillow,
        }

    def to_json(self) -> dict:
        return asdict(self)


def complexity_vs_depth(
    table=None, ratio_res: int = RATIO_RES, level: float = 0.95, n_boot: int = 10_000, seed: int = 0
) -> ComplexityDepth:
    """Fit the layered depth of each Picbreeder target's evolved network against its PNG ratio.

    `table`: a `gallery()` frame (computed at `ratio_res` when None). Returns the fit, R²'s
    percentile bootstrap interval (`n_boot` resamples of the targets, `seed`) and the p-value of a
    zero slope."""
    if table is None:
        table = gallery(ratio_res)
    x, y = table["png_ratio"].to_numpy(float), table["depth"].to_numpy(float)
    pred = fit_predictor(x, y, names=list(table["name"]), level=level)
    lo, hi = r2_interval(x, y, level=level, n_boot=n_boot, seed=seed)
    res = sorted(set(table["ratio_res"])) if "ratio_res" in table else [ratio_res]
    return ComplexityDepth(
        predictor=pred,
        r2_lo=lo,
        r2_hi=hi,
        p_value=float(scipy.stats.linregress(x, y).pvalue),
        level=level,
        n_boot=int(n_boot),
        seed=int(seed),
        ratio_res=int(res[0]),
        pillow=str(table["pillow"].iloc[0]) if "pillow" in table else pillow_version(),
    )
