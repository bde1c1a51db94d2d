"""The clear-drawings verdict set (volratio.calibration.clear16) and the inspection's repeatability
(volratio.calibration.repeatability)."""

import json

import numpy as np
import pandas as pd
import pytest

from volratio.calibration import anchored_set as A
from volratio.calibration import clear16 as C
from volratio.calibration import repeatability as R
from volratio.errors import VolratioError
from volratio.util.stats import cohen_kappa


def _rows(label, group, n, p1, p2):
    return pd.DataFrame({"label": label, "group": group, "pass1": p1[:n], "pass2": p2[:n]})


def test_weighted_kappa_is_cohens_with_equal_weights_and_counts_a_weight_as_copies():
    rng = np.random.default_rng(0)
    a, b = rng.random(40) < 0.6, rng.random(40) < 0.5
    assert R.weighted_kappa(a, b) == pytest.approx(cohen_kappa(a, b))
    w = rng.integers(1, 4, size=40)
    assert R.weighted_kappa(a, b, w) == pytest.approx(cohen_kappa(np.repeat(a, w), np.repeat(b, w)))
    assert np.isnan(R.weighted_kappa(np.ones(5, bool), np.ones(5, bool)))


def test_groups_of_thirty_get_an_interval_smaller_ones_are_pooled_and_one_class_has_no_kappa():
    agree = np.r_[np.ones(20), np.zeros(20)]
    noisy2 = agree.copy()
    noisy2[[0, 1, 2, 21, 22, 23]] = 1 - noisy2[[0, 1, 2, 21, 22, 23]]  # 6 of 40 disagree: κ 0.7
    df = pd.concat([
        _rows("skull", "twin", 40, agree, agree),  # its own row, κ 1 with an interval
        _rows("apple", "twin", 40, agree, noisy2),  # its own row, ambiguous
        _rows("moon", "twin", 10, np.ones(10), np.ones(10)),  # twin: 10 left after skull and apple (< 30)
        _rows("moon", "sp", 10, np.ones(10), np.ones(10)),
        _rows("ghost", "sp", 5, np.ones(5), np.r_[np.ones(4), 0]),
    ], ignore_index=True)  # fmt: skip
    df.loc[len(df)] = {"label": "face", "group": "twin", "pass1": 1, "pass2": np.nan}  # not repeated: ignored
    t = R.repeat_kappa(df, n_boot=200).set_index("group")
    assert t.loc["overall", "n"] == 105 and t["n"].drop("overall").sum() == 105  # the groups partition the rows
    assert t.loc["skull × twin", "kappa"] == 1 and t.loc["skull × twin", "lo"] == 1
    assert t.loc["apple × twin", "kappa"] == pytest.approx(0.7) and t.loc["apple × twin", "ambiguous"]
    assert t.loc["apple × twin", "lo"] < 0.7 < t.loc["apple × twin", "hi"]
    assert "moon × twin" not in t.index and "rest (pooled)" in t.index  # 10 + 10 + 5 pooled to the end
    assert t.loc["rest (pooled)", "n"] == 25 and np.isnan(t.loc["rest (pooled)", "lo"])  # under 30: no interval
    one = R.repeat_kappa(df[df["label"] == "moon"], n_boot=50).set_index("group")
    assert one.loc["all", "one_class"] and np.isnan(one.loc["all", "kappa"]) and not one.loc["all", "ambiguous"]
    g = R.group_of(df[df["pass2"].notna()], t.reset_index())
    assert g.value_counts().to_dict() == t["n"].drop("overall").to_dict()


def test_repeat_kappa_names_missing_columns():
    with pytest.raises(VolratioError, match="pass2"):
        R.repeat_kappa(pd.DataFrame({"label": ["a"], "group": ["b"], "pass1": [1]}))


def test_every_stored_verdict_set_reports_its_repeat_kappa():
    t = R.all_sets(n_boot=100)
    assert set(t["set"]) == set(R.VERDICT_SETS)
    overall = t[t["group"] == "overall"].set_index("set")
    assert (overall["n"] > 0).all()
    assert overall.loc["anchored", "kappa"] == pytest.approx(0.94, abs=0.005)  # the set's README: κ 0.94
    assert overall.loc["clear16", "weighted"]  # rows with sampling weights are weighted
    assert overall.loc["clear16", "n"] == 252 and overall.loc["clear16", "kappa"] == pytest.approx(0.856, abs=0.0005)


@pytest.fixture(scope="module")
def verdicts():
    return C.load_verdicts()


def test_the_set_covers_all_sixteen_labels_with_negatives_and_a_thirty_percent_blind_repeat(verdicts):
    assert len(verdicts) >= 800 and set(verdicts["label"]) == set(C.LABELS)
    assert verdicts["id"].is_unique and set(verdicts["batch"]) == set(C.BATCHES)
    for lab, part in verdicts.groupby("label"):
        gen = part[part["kind"] == "generated"]
        assert len(gen) == len(C.NEGATIVE_KINDS) and (gen["pass1"] == 0).all(), lab
        assert len(part) >= 45 and (part["kind"] != "generated").sum() >= 40, lab
        for b, batch in part.groupby("batch"):  # each batch repeated on a seeded 30% of each label's rows
            assert batch["pass2"].notna().sum() == int(np.ceil(0.3 * len(batch))), (lab, b)
    assert verdicts["pass2"].notna().mean() >= 0.3
    assert verdicts["pass1"].isin([0, 1]).all() and (verdicts["batch_weight"] >= 1).all()
    assert set(verdicts.loc[verdicts["kernel"] >= 0, "delta"].abs()) <= {0.25, 0.5, 1.0, 2.0}


def test_a_later_batch_repeats_no_image_and_holds_perturbed_draws_only(verdicts):
    first, later = verdicts[verdicts["batch"] == 1], verdicts[verdicts["batch"] > 1]
    assert len(later) and not later["sha256"].duplicated().any()
    assert not later["sha256"].isin(set(first["sha256"])).any()
    assert (later["kernel"] >= 0).all() and set(later["stratum"]) <= {"near", "far"}
    assert later["id"].min() > first["id"].max()


def test_union_weights_halve_each_batchs_weight_and_credit_left_out_copies_to_the_row_showing_them():
    rows = pd.DataFrame({"id": [0, 1, 2, 3], "kernel": [-1, 4, -1, 7], "batch": [1, 1, 2, 2],
                         "batch_weight": [1.0, 6.0, 1.0, 3.0]})  # fmt: skip
    none = pd.DataFrame({"same_as": [-1, -1]})
    assert C.union_weights(rows, none).tolist() == [1.0, 3.0, 1.0, 1.5]
    one = rows[rows["batch"] == 1]
    assert C.union_weights(one, none).tolist() == [1.0, 6.0]  # one batch: its own weights
    copies = pd.DataFrame({"same_as": [0, 1, 1, -1]})  # three copies left out of batch 2, one without a row
    assert C.union_weights(rows, copies).tolist() == [1.5, 4.0, 1.0, 1.5]
    with pytest.raises(VolratioError, match="same_as"):
        C.union_weights(rows, pd.DataFrame({"same_as": [9]}))


def test_the_stored_weights_are_the_union_weights_of_the_stored_batches(verdicts):
    sampling = pd.read_csv(C.SAMPLING_CSV)
    assert verdicts["weight"].to_numpy() == pytest.approx(C.union_weights(verdicts, sampling))
    for b, part in sampling.groupby("batch"):
        drawn = verdicts[(verdicts["batch"] == b) & (verdicts["kind"] != "generated")]
        assert part["picked"].sum() == len(drawn), b
        left_out = part[part["stratum"] == "duplicate"]
        assert (b > 1) or left_out.empty
        assert left_out["same_as"].isin(set(verdicts["id"]) | {-1}).all()


def test_the_sets_rows_regenerate_bit_for_bit(verdicts, extra_data, picbreeder_dir):
    rows = verdicts.iloc[np.sort(np.random.default_rng(0).choice(len(verdicts), 160, replace=False))]  # seeded, fast
    assert set(rows["batch"]) == set(C.BATCHES) and set(rows["kind"]) == set(C.KINDS)
    images = C.render(rows, C.networks())
    assert A.image_sha(images) == rows["sha256"].tolist()


@pytest.mark.slow  # two builds, each scoring every candidate with three judges (~20 s each)
def test_the_builder_draws_the_stored_rows_of_every_batch_from_its_seed(verdicts, extra_data, picbreeder_dir):
    cols = ["id", "network", "kernel", "row", "col", "delta", "stratum", "batch", "batch_weight", "sha256"]
    for b, cfg in C.BATCHES.items():
        stored = verdicts[verdicts["batch"] == b].reset_index(drop=True)
        rows, _, sampling = C.build(cfg=cfg, previous=verdicts[verdicts["batch"] < b] if b > 1 else None)
        pd.testing.assert_frame_equal(rows[cols], stored[cols], check_dtype=False)
        assert sampling["picked"].sum() == (stored["kind"] != "generated").sum()
    with pytest.raises(VolratioError, match="previous"):
        C.build(cfg=C.BATCHES[2])


def test_judge_check_holds_the_default_judge_to_the_inspections_repeat(extra_data, picbreeder_dir, capsys):
    from volratio.cli import main

    assert main(["judge-check", "--judge", "anchored-v2", "--sets", "clear16", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    rows = pd.DataFrame(out["rows"]).set_index("group")
    rep = R.repeat_kappa(C.load_verdicts(), n_boot=1000).set_index("group")
    assert set(rows.index) == set(rep.index) and (rows["set"] == "clear16").all() and rows["held_out"].all()
    assert rows.loc["overall", "n"] == len(C.load_verdicts())
    assert rows["repeat_kappa"].to_dict() == pytest.approx(rep["kappa"].to_dict(), nan_ok=True)
    assert (rows["false_rejections"] <= rows["both_keep"]).all()
    ok = rows["meets"] == ((rows["kappa"] >= rows["repeat_kappa"] - 0.05) & ~rows["ambiguous"])
    assert ok.all()


def test_judge_check_refuses_what_the_inspection_comparison_cannot_do(capsys):
    from volratio.cli import main

    assert main(["judge-check", "--judge", "anchored-v2", "--sets", "nope"]) == 2
    assert "nope" in capsys.readouterr().err
    assert main(["judge-check", "--judge", "anchored", "--set", "anchored", "--sets", "clear16"]) == 2
    assert main(["judge-check", "--judge", "stability", "--sets", "clear16"]) == 2
    assert "label-anchored" in capsys.readouterr().err
