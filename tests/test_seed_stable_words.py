"""No verdict depends on the bootstrap's seed: each claim decided from stored networks gets the same
word under five seeds, or "borderline" under all five, and its interval's ends move by less than
`volratio.util.pooling.TOLERANCE` from one seed to another. The sixteen Picbreeder targets and the
scenes are decided on t-intervals over their targets, which draw nothing."""

import pytest

from volratio.judges import DEFAULT_JUDGE
from volratio.report import decisions
from volratio.report.evidence import bootstrap_seed
from volratio.report.render import unglued
from volratio.util.pooling import TOLERANCE

SEEDS = range(5)


@pytest.mark.parametrize("key", ["sp-vs-pruners", "depth-optimum", "muon-above-adam"])
def test_a_claims_word_does_not_depend_on_the_bootstrap_seed(key):
    verdicts = []
    for seed in SEEDS:
        with unglued(), bootstrap_seed(seed):
            verdicts.append(decisions.READERS[key](DEFAULT_JUDGE))
    words = {v.verdict for v in verdicts}
    assert len(words) == 1, words  # one word, "borderline" included
    for stat in ("statistic", "loss statistic"):  # Muon's loss half is a pooled statistic too
        for end in ("lo", "hi") if stat in verdicts[0].evidence else ():
            ends = [v.evidence[stat][end] for v in verdicts]
            assert max(ends) - min(ends) < TOLERANCE, (stat, end, ends)
    assert "about targets like these" in verdicts[0].evidence["interval"]


@pytest.mark.parametrize("key", ["picbreeder-vs-sgd", "scenes-weaker"])
def test_claims_decided_over_targets_by_a_t_interval_draw_nothing(key):
    verdicts = []
    for seed in (0, 1):
        with unglued(), bootstrap_seed(seed):
            verdicts.append(decisions.READERS[key](DEFAULT_JUDGE))
    assert verdicts[0].verdict == verdicts[1].verdict
    assert verdicts[0].evidence["statistic"] == verdicts[1].evidence["statistic"]
