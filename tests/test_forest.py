"""The claims' forest plots: the numbers a verdict was decided on, drawn as inline SVG."""

import re
import xml.etree.ElementTree as ET

import pandas as pd
import pytest

from volratio.errors import VolratioError
from volratio.report import claims
from volratio.report.forest import Forest, Row, ticks
from volratio.util.verdicts import Estimate


def _circles(svg: str) -> list[float]:
    return [float(x) for x in re.findall(r'<circle cx="([0-9.]+)"', svg)]


def test_forest_svg_is_well_formed_and_places_rows_by_value():
    f = Forest((Row("a <b>", 0.2, 0.1, 0.3), Row("c", 0.8, 0.7, 0.9, group=1)), "AUC", 0.5, "claim")
    svg = f.svg()
    root = ET.fromstring(svg)  # parses: the label's "<b>" is escaped
    assert root.tag.endswith("svg") and "a &lt;b&gt;" in svg
    xa, xc = _circles(svg)
    assert xa < xc  # the larger value is further right
    dashed = re.search(r'<line x1="([0-9.]+)"[^>]*stroke-dasharray', svg)
    assert dashed and xa < float(dashed.group(1)) < xc  # the threshold between them


def test_forest_refuses_rows_it_cannot_draw():
    with pytest.raises(VolratioError, match="lo ≤ mean ≤ hi"):
        Forest((Row("x", 0.5, 0.6, 0.7),), "AUC")
    with pytest.raises(VolratioError, match="at least one row"):
        Forest((), "AUC")


def test_forest_of_draws_a_one_seed_interval_as_its_point_and_drops_missing_rows():
    f = claims.forest_of([("one seed", Estimate(0.4, float("nan"), float("nan")), 0),
                          ("none", Estimate(float("nan"), 0, 1), 0)], "AUC")  # fmt: skip
    assert [r.label for r in f.rows] == ["one seed"] and f.rows[0].lo == f.rows[0].hi == 0.4
    assert claims.forest_of([("none", Estimate(float("nan"), 0, 1), 0)], "AUC") is None


def test_ticks_are_round_and_inside_the_range():
    t = ticks(-0.03, 1.03)
    assert t == [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]
    assert all(-0.03 <= x <= 1.03 for x in ticks(-0.03, 1.03, n=3))


def test_claim_verdicts_carry_their_forest_into_the_claims_page_html():
    rows = [{"method": m, "emc2_auc": v} for m, vals in {"sp": [0.5, 0.6], "imp": [0.0, 0.01], "wanda": [0.0, 0.02],
                                                          "llm-pruner": [0.01, 0.0]}.items() for v in vals]  # fmt: skip
    v, _ = claims.sp_vs_pruners(pd.DataFrame(rows))
    assert [r.label for r in v.forest.rows] == [
        "SP", "Lottery Ticket (IMP)", "Wanda", "LLM-Pruner", "SP − strongest, pooled (deciding)"]  # fmt: skip
    assert v.forest.threshold == 0.05 and "<svg" in v.html()
    scenes = claims.scenes_weaker([{"effect": "best mean score", "difference": -0.2, "lo": -0.3, "hi": -0.1,
                                    "verdict": "reproduced", "scene": 0.3, "parts": 0.5}])  # fmt: skip
    assert scenes.forest.threshold == 0.0 and scenes.forest.rows[0].hi < 0
    assert "<svg" not in claims.record("welch-r-le-d", "reproduced", "coherence").html()  # no forest given


def test_the_label_column_grows_with_the_longest_label():
    short = Forest((Row("SP", 0.5, 0.4, 0.6),), "AUC").svg()
    label = "image:camera+image:coffee: best mean score"
    long = Forest((Row(label, 0.5, 0.4, 0.6),), "AUC").svg()
    width = lambda svg: int(re.search(r'width="(\d+)"', svg).group(1))  # noqa: E731
    assert width(long) > width(short) and label in long
    x = float(re.search(r'<text x="([\d.]+)"[^>]*text-anchor="end"', long).group(1))
    assert x >= 5.0 * len(label)  # the right-aligned label ends where all of it fits left of the plot
