"""The rule for networks that do not draw their label (`volratio.report.evidence`): collapsed, or
base image not kept by the judge, scores 0 on every side of a comparison — never counted as
drawing, never dropped."""

import numpy as np
import pandas as pd
import pytest

from volratio.report import claims
from volratio.report.evidence import drawn, pooled_rows, score_or_zero


def _networks():
    """Two targets × three members; SP and the three pruners pruned from each member's dense start."""
    rows = []
    for t in ("picbreeder:a", "picbreeder:b"):
        for k in range(3):
            for m, auc in (("sp", 0.6 + 0.01 * k), ("imp", 0.3), ("wanda", 0.2 + 0.01 * k), ("llm-pruner", 0.1)):
                rows.append({"target": t, "checkpoint": "end", "member": k, "method": m, "emc2_auc": auc,
                             "base_kept": True, "collapsed": False})  # fmt: skip
    return pd.DataFrame(rows)


def test_flags_read_as_drawing_only_when_kept_and_not_collapsed():
    t = pd.DataFrame({"base_kept": [True, False, True, np.nan, True], "collapsed": [False, False, True, False, "nan"],
                      "emc2_auc": [0.5] * 5})  # fmt: skip
    assert drawn(t).tolist() == [True, False, False, True, True]  # a missing flag is no evidence against
    scores, zeroed = score_or_zero(t, "emc2_auc")
    assert scores.tolist() == [0.5, 0.0, 0.0, 0.5, 0.5] and zeroed == 2


def test_no_network_counted_as_drawing_that_does_not_draw():
    table = _networks()
    base = claims.sp_vs_pruners(table)[0]
    # SP's members of target a collapse and one pruner network's base image is not kept: all score 0
    table.loc[(table.method == "sp") & (table.target == "picbreeder:a"), "collapsed"] = True
    table.loc[(table.method == "imp") & (table.member == 0), "base_kept"] = False
    v = claims.sp_vs_pruners(table)[0]
    sp_mean = (0.0 * 3 + (0.6 + 0.61 + 0.62)) / 6
    assert v.evidence["sp"]["mean"] == pytest.approx(sp_mean)
    assert v.evidence["not drawing, scored 0"] == 5
    assert v.evidence["statistic"]["mean"] < base.evidence["statistic"]["mean"]
    assert v.evidence["left out instead"]["verdict"] in claims.VERDICTS
    assert "5 networks that do not draw their label scored 0" in v.measured


def test_a_networks_methods_are_resampled_together():
    rows = pooled_rows(_networks(), "method", "emc2_auc", ("target", "checkpoint"), ("target",), ("member",))
    assert set(rows.columns) == {"target", "setting", "arm", "stratum", "unit", "value"}
    assert rows.target.eq("all").all()  # no target column named: one target
    by_target = pooled_rows(
        _networks(), "method", "emc2_auc", ("target",), ("target",), ("member",), target=("target",)
    )
    assert by_target.target.tolist() == _networks().target.astype(str).tolist()
    # one unit per target and member, shared by the four methods
    assert rows.groupby(["stratum", "unit"]).arm.nunique().eq(4).all()
    unpaired = pooled_rows(_networks(), "method", "emc2_auc", ("target",), ("target",), ("member",), paired=False)
    assert unpaired.groupby(["stratum", "unit"]).arm.nunique().eq(1).all()
