"""Constructed inputs of the claims' deciders (`volratio.report.claims`), shared by
tests/test_verdict_rules.py (every outcome of each decider) and tests/test_decider_texts.py (the
texts they write)."""

import numpy as np
import pandas as pd

from volratio.depth import sweet_spot
from volratio.experiments.depth_regime import DepthCurve


def sp_table(sp, wanda):
    base = {"sp": sp, "imp": [0.0, 0.0, 0.0], "wanda": wanda, "llm-pruner": [0.01, 0.0, 0.0]}
    return pd.DataFrame([{"method": m, "emc2_auc": x} for m, xs in base.items() for x in xs])


def depth_curve(target, contrasts, true_at=3, depths=(2, 3, 4, 5)):
    """A depth curve whose score at `true_at` exceeds every other depth's (0.5) by `contrasts` (per seed)."""
    score = np.full((len(depths), len(contrasts)), 0.5)
    score[list(depths).index(true_at)] += np.asarray(contrasts)
    loss = np.full_like(score, 0.01)
    return DepthCurve(target, list(depths), score, loss, loss, np.full_like(score, 30.0), sweet_spot(depths, score))


def optimizer_summary(muon, adam, loss=(0.01, 0.02)):
    rows = []
    for opt, (s, lo, hi), l in (("muon", muon, loss[0]), ("adam", adam, loss[1])):
        rows.append({"optimizer": opt, "score": s, "score_lo": lo, "score_hi": hi,
                     "loss": l, "loss_lo": l * 0.9, "loss_hi": l * 1.1})  # fmt: skip
    return pd.DataFrame(rows)


ADAM = (0.5, 0.45, 0.55)


MUON = {
    "reproduced": (0.75, 0.7, 0.8),
    "inconclusive": (0.6, 0.4, 0.8),
    "not reproduced": (0.5, 0.46, 0.54),  # −0.09..+0.09: every effect ≥ 0.1 excluded
    "contradicted": (0.2, 0.1, 0.3),
}


def scene_rows(*estimates, measure="best mean score"):
    """One row per scene (scene − parts on `measure`, with its interval over the networks)."""
    return [{"effect": f"scene {i}: {measure}", "scene": 0.5 + d, "parts": 0.5, "difference": d, "lo": lo, "hi": hi,
             "below its parts": hi < 0} for i, (d, lo, hi) in enumerate(estimates)]  # fmt: skip


def frames(ratios):
    return pd.DataFrame({"m": [3, 4, 5], "n": [2, 2, 3], "ratio": ratios, "max_sq_inner": [0.3, 0.4, 0.2],
                         "bound": [0.25, 0.3, 0.1]})  # fmt: skip


def sixteen(diffs, used=None):
    used = [True] * len(diffs) if used is None else used
    return pd.DataFrame({"diff": diffs, "used": used, "why": ["" if u else "never draws" for u in used]},
                        index=[f"t{i}" for i in range(len(diffs))])  # fmt: skip
