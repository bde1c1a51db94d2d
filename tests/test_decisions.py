"""Where each claim stands (`volratio.report.decisions`): the deciding word beside the earliest rule
committed before its data, and which way each choice made after the data moved each verdict."""

import pytest

from volratio.report import decisions, provenance
from volratio.util.verdicts import VERDICTS


def test_direction_reads_the_order_of_the_words():
    assert decisions.direction("inconclusive", "contradicted") == "toward the paper"
    assert decisions.direction("not reproduced", "inconclusive") == "away from the paper"
    assert decisions.direction("negligible", "reproduced") == "away from the paper"
    assert decisions.direction("reproduced", "reproduced") == "neither"


def test_every_choice_names_a_reading_the_library_computes():
    for c in provenance.CHOICES:
        assert not c.instead or (c.instead in decisions.ALTERNATIVES and c.claims), c.text
        assert set(c.claims) <= set(decisions.READERS)
    assert provenance.CHOICES_AFTER_DATA == tuple(c.text for c in provenance.CHOICES)


@pytest.fixture(scope="module")
def table(picbreeder_dir):
    return decisions.table()  # the claims' readers render Picbreeder targets


def test_the_table_gives_each_claims_word_its_earliest_rule_and_its_targets(table):
    assert list(table.index) == list(decisions.READERS)
    assert set(table["deciding word"]) <= set(VERDICTS)
    for key, row in table.iterrows():
        if key in provenance.CLAIM_RULE_COMMITS:  # a rule committed before the runs: its word, computed
            assert row["earliest rule before its data"] == provenance.CLAIM_RULE_COMMITS[key][0]
            assert row["its word"] in VERDICTS
        else:
            assert row["earliest rule before its data"] == "none committed before its data" and row["its word"] == "—"
    assert table.loc["picbreeder-vs-sgd", "targets"] == 16 and table.loc["sp-vs-pruners", "targets"] == 3
    assert (table.drop(index="png-ratio-linear")["networks per cell"] >= 3).all()  # every pooled cell: 3 or more


def test_each_direction_is_the_comparison_of_two_computed_words(picbreeder_dir):
    d = decisions.directions()
    read = d[d.claim != "—"]
    assert len(read) and set(read.direction) <= {"toward the paper", "away from the paper", "neither"}
    for _, r in read.iterrows():
        assert r["direction"] == decisions.direction(r["deciding word"], r["instead"])
        assert r["deciding word"] == decisions.deciding(r["claim"]).verdict
    # the gated default judge against the earlier one, on the sixteen Picbreeder targets
    judge = read[(read.replaced == "earlier default judge") & (read.claim == "picbreeder-vs-sgd")].iloc[0]
    assert judge["instead"] == decisions.under_judge("picbreeder-vs-sgd", "anchored").verdict
