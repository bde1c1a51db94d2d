"""A reading (volratio.emc2.reading.Reading): how stored networks are scored, one validated value."""

from __future__ import annotations

import pytest

from volratio.emc2.reading import ENGINES, Reading, ReadingError


def test_the_default_reads_each_run_as_it_scored_itself():
    r = Reading()
    assert (r.judge, r.anchor, r.delta_scale, r.weights, r.engine, r.device) == (
        None, "image", "absolute", "own", "torch", None
    )  # fmt: skip
    assert r.own and not r.every
    assert not Reading("anchored").own and not Reading(delta_scale="layer_std").own


@pytest.mark.parametrize(
    "kw, message",
    [
        ({"judge": "nosuch"}, "judge 'nosuch'; choose one of"),
        ({"anchor": "pixels"}, "anchor 'pixels'; choose one of"),
        ({"delta_scale": "relative"}, "delta_scale 'relative'; choose one of"),
        ({"weights": "some"}, "weights 'some'; choose one of own, every, or a positive integer"),
        ({"weights": 0}, "weights 0; choose one of own, every, or a positive integer"),
        ({"weights": True}, "weights True; choose one of"),
        ({"weights": 10.5}, "weights 10.5; choose one of"),
        ({"weights": "every", "engine": "cuda"}, "engine 'cuda'; choose one of torch, fused"),
        ({"engine": "fused"}, "--every-weight"),
        ({"device": "tpu"}, "device 'tpu'"),
    ],
)
def test_a_bad_reading_is_refused_up_front_naming_the_entry(kw, message):
    with pytest.raises(ReadingError, match=message):
        Reading(**kw)


def test_it_hashes_compares_and_round_trips_as_one_value():
    a = Reading("anchored-v2", weights="every", engine="fused", delta_scale="layer_std")
    b = Reading.from_dict(a.as_dict())
    assert a == b and hash(a) == hash(b) and a.key() == b.key() and len(a.key()) == 16
    assert {a: 1}[b] == 1  # usable as a cache key
    assert a.key() != a.but(engine="torch").key() != Reading().key()
    assert a.but(judge="stability") == Reading("stability", weights="every", engine="fused", delta_scale="layer_std")
    with pytest.raises(ReadingError, match="unknown entries"):
        Reading.from_dict({**a.as_dict(), "every_weight": True})
    with pytest.raises(ReadingError, match="a table"):
        Reading.from_dict(["anchored"])


def test_it_applies_itself_to_a_source_run_s_emc2_settings():
    own = {"max_params": 300, "engine": "torch", "dtype": "float64", "delta_scale": "absolute", "device": "cpu"}
    assert Reading("anchored").emc2(own) == own  # the runs' own settings, unchanged
    scaled = Reading("anchored", delta_scale="layer_std").emc2(own)
    assert scaled == {**own, "delta_scale": "layer_std"}
    for engine, dtype in ENGINES.items():
        every = Reading("anchored", weights="every", engine=engine).emc2(own)
        assert (every["max_params"], every["engine"], every["dtype"]) == (None, engine, dtype)
    assert Reading("anchored", device="cuda").emc2(own)["device"] == "cuda"
    capped = Reading("anchored", weights=1000, engine="fused").emc2(own)  # at most 1,000 weights a network
    assert (capped["max_params"], capped["engine"], capped["dtype"]) == (1000, "fused", "float32")
    assert Reading("anchored", weights=1000).max_params == 1000 and Reading(weights="every").max_params is None
    with pytest.raises(ReadingError, match="keeps each run's own max_params"):
        _ = Reading().max_params
    assert not Reading(weights=1000).own and not Reading(weights=1000).every


def test_it_says_itself_in_words_and_as_the_command_s_flags():
    r = Reading("anchored", anchor="png", delta_scale="layer_std", weights="every", engine="fused")
    assert r.describe() == "anchored, anchor png, δ layer_std, every weight (fused engine)"
    assert r.flags() == "--judge anchored --anchor png --delta-scale layer_std --every-weight --engine fused"
    assert Reading().describe() == "each run's own judge, the runs' own settings" and Reading().flags() == ""
    capped = Reading("anchored-v2", weights=1000, engine="fused")
    assert capped.describe() == "anchored-v2, up to 1,000 weights (fused engine)"
    assert capped.flags() == "--judge anchored-v2 --max-weights 1000 --engine fused"
