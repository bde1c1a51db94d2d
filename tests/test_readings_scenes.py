"""The claim "scenes-weaker" read from the committed store (`volratio.report.readings.scenes`): the
verdict a chapter glues is the decider applied to the stored scenes and parts, on the scenes the
store holds with their parts at every depth, and a reading the store has no scores for is an error
that names the rescore. Also how the chapter picks a network to draw (`unknown_targets.net_at_spot`)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from volratio.depth import DepthError
from volratio.experiments import unknown_targets
from volratio.judges import DEFAULT_JUDGE, JUDGES
from volratio.report import claims
from volratio.report.readings import scenes as reading
from volratio.runs import stored


@pytest.fixture(scope="module")
def deciding():
    return reading.verdict()


def test_the_deciding_verdict_is_the_decider_on_the_sparse_scenes(deciding):
    curves, rows = unknown_targets.stored_scenes(names=reading.SPARSE, reading=reading.EVERY.but(judge=DEFAULT_JUDGE))
    with claims.unglued():
        direct = claims.scenes_weaker(rows, scale="reference", judge=DEFAULT_JUDGE, stored=True)
    assert deciding.verdict == direct.verdict
    assert deciding.evidence["statistic"] == direct.evidence["statistic"]
    assert (deciding.key, deciding.judge, deciding.scale) == ("scenes-weaker", DEFAULT_JUDGE, "reference")


def test_every_scene_is_compared_with_both_parts_on_both_effects_at_its_depths():
    curves, rows = reading.sparse_scenes()
    specs = reading.specs(rows)
    assert specs and all(s.startswith("scene:picbreeder:") for s in specs)
    assert len(rows) == len(specs) * len(unknown_targets.EFFECTS)
    for s in specs:
        assert all(curves[p].depths == curves[s].depths for p in unknown_targets.scene_parts(s))


def test_the_sparsity_the_verdict_cites_is_read_on_the_scenes_depths(deciding):
    curves, rows = reading.sparse_scenes()
    table = reading.sparsity()
    assert set(table.index.get_level_values("depth")) == set(curves[reading.specs(rows)[0]].depths)
    scene = reading.is_scene(table)
    assert scene.any() and (~scene).any()
    assert f"{table[scene].sparsity.median():.2f} (scenes)" in deciding.measured
    assert f"{table[~scene].sparsity.median():.2f} (parts)" in deciding.measured


def test_a_reading_without_stored_scores_is_an_error_that_names_the_rescore():
    scored, _ = reading.judges()
    unscored = [j for j in JUDGES if j not in scored]
    if not unscored:
        pytest.skip("every judge has rescored the sparse scenes on every weight")
    with pytest.raises(DepthError, match="rescore depth_sparse_"):
        reading.verdict(unscored[0])


def test_the_judges_asked_for_are_either_scored_or_named_missing():
    scored, missing = reading.judges()
    assert set(scored) == set(stored.judges_covering(reading.SPARSE, reading=reading.EVERY))
    assert set(missing) == set(reading.ASKED) - set(scored)


def test_net_at_spot_takes_the_sweet_spot_or_the_middle_depth_of_a_flat_curve():
    class Population:
        def __init__(self, depth):
            self.depth = depth

        def select(self, i):
            return (self.depth, i)

    nets = {("a", d): Population(d) for d in (2, 4, 6)}
    peaked = {"a": SimpleNamespace(spot=SimpleNamespace(depth=6), depths=[2, 4, 6])}
    flat = {"a": SimpleNamespace(spot=SimpleNamespace(depth=None), depths=[2, 4, 6])}
    assert unknown_targets.net_at_spot(peaked, nets, "a") == ((6, 0), 6)
    assert unknown_targets.net_at_spot(flat, nets, "a") == ((4, 0), 4)
