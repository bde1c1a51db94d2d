"""Cross-fitting the gated judge: folds by network, a network of the verdict set is judged by a rule
fitted without its rows, any other network by the rule fitted on all rows; held-out agreement by
network and by label."""

import numpy as np
import pandas as pd
import pytest
import torch

from volratio import emc2, judges
from volratio.calibration import crossfit as C
from volratio.calibration import fit_anchored as fa
from volratio.calibration import hard_negatives as H
from volratio.data.specs import load_network
from volratio.errors import VolratioError
from volratio.judges import anchored_rule as ar

XF = ar.read_crossfit()


def test_folds_deal_every_groups_networks_evenly():
    nets = [f"a:{i}" for i in range(7)] + [f"b:{i}" for i in range(4)]
    groups = ["a"] * 7 + ["b"] * 4
    f = C.folds(nets, groups, k=5, seed=0)
    assert set(f) == set(nets) and set(f.values()) <= set(range(5))
    counts = np.bincount(list(f.values()), minlength=5)
    assert counts.max() - counts.min() <= 1  # balanced over the groups together
    assert len({f[n] for n in nets[:7]}) == 5  # a group of k networks or more reaches every fold
    assert C.folds(nets, groups, 5, 0) == f and C.folds(nets, groups, 5, 1) != f


def test_a_verdict_set_network_gets_the_rule_without_its_fold_and_others_the_all_rows_rule():
    rule, fold = XF.rule_for("picbreeder:skull")
    assert fold == XF.folds["picbreeder:skull"] and rule is XF.rules[fold]
    assert rule.fitted_on["fold"] == fold and rule.gate
    assert XF.rule_for("fer-layered:ghost") == (XF.all, "all") and XF.rule_for(None) == (XF.all, "all")
    assert {"picbreeder:skull", "fer-sgd:skull", "picbreeder:apple", "fer-sgd:butterfly"} <= set(XF.folds)
    j = judges.make_judge("anchored-xfit", torch.zeros(16, 16, 3), "image:camera", network="fer-sgd:apple")
    assert j.settings()["fold"] == XF.folds["fer-sgd:apple"] and j.settings()["network"] == "fer-sgd:apple"
    assert judges.make_judge("anchored-xfit", torch.zeros(16, 16, 3), "image:camera").settings()["fold"] == "all"


def test_the_fold_is_stored_with_an_emc2_score(picbreeder_dir):
    cfg = emc2.EMC2Config(deltas=(-1.0, 1.0), res=32, max_params=6, seed=0, device="cpu")
    net = load_network("picbreeder:skull")
    js = emc2.judges_for(net, ["anchored-xfit"], "picbreeder:skull", cfg, network="picbreeder:skull")
    r = emc2.score(net, js, "skull", cfg)[0]
    assert r.judge == "anchored-xfit" and r.judge_settings["fold"] == XF.folds["picbreeder:skull"]
    other = emc2.score(net, emc2.judges_for(net, ["anchored-xfit"], "picbreeder:skull", cfg), "skull", cfg)[0]
    assert other.judge_settings["fold"] == "all"


def test_stored_crossfit_is_refused_when_malformed(tmp_path):
    p = tmp_path / "x.json"
    p.write_text('{"k": 2, "folds": {"a": 3}, "rules": [], "all": {}}')
    with pytest.raises(VolratioError, match="not an anchored judge rule|rules for k = 2"):
        ar.read_crossfit(p)


@pytest.fixture(scope="module")
def tables(picbreeder_dir, extra_installed):
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("VOLRATIO_DATA", str(extra_installed))
        return fa.verdict_table(), H.feature_table()


@pytest.mark.slow
def test_refitting_gives_the_stored_cross_fitted_rules(tables):
    table, gen = tables
    cf = C.crossfit(table, gen)
    assert cf["folds"] == XF.folds
    fv = table["network"].map(cf["folds"]).to_numpy()
    fg = gen["network"].map(cf["folds"]).to_numpy()
    for i, (new, old) in enumerate(zip([*cf["rules"], cf["all"]], [*XF.rules, XF.all])):
        assert new.thresholds == pytest.approx(old.thresholds) and set(new.gate) == set(old.gate)
        # The gate's minimums are exact on the CPU kind that fitted them. On another, features equal
        # to 1e-16 there may differ here (or the reverse), which moves fit_gate's rank-spaced
        # candidate grid and so where in the gap between two training values a minimum falls; the
        # rule is the same in effect: it keeps exactly the same training rows (verdicts and
        # generated negatives outside the fold).
        both = pd.concat([table[fv != i], gen[fg != i]], ignore_index=True)
        f, lab = {c: both[c].to_numpy() for c in old.needs}, both["label"].to_numpy()
        assert (new.predict(f, lab) == old.predict(f, lab)).all(), f"rule {i}"
    # each fold's rule is fitted without the fold: refitting on other rows changes it, the fold's own do not
    f = XF.folds["picbreeder:skull"]
    same = fa.fit_gated(table, gen, fv != f, fg != f, XF.all.features)
    assert same.thresholds == pytest.approx(cf["rules"][f].thresholds)


@pytest.mark.slow
def test_held_out_agreement_by_network_and_by_label(tables):
    table, gen = tables
    a = C.agreement(table, gen, n_boot=200)
    assert set(a.index.get_level_values(0)) == {"network", "label"}
    for scheme in ("network", "label"):
        row = a.loc[(scheme, "all")]
        assert row["n"] == len(table) and row["kappa_lo"] <= row["kappa"] <= row["kappa_hi"]
        assert 0.5 < row["kappa"] < 1
    assert a.loc[("network", "flat"), "accuracy"] == 1.0  # flat images: never the label
    # out of fold is not in sample: a rule fitted on every row agrees at least as well in sample
    all_rule = C.crossfit(table, gen)["all"]
    ins = all_rule.predict({c: table[c].to_numpy() for c in all_rule.needs}, table["label"].to_numpy())
    oof = C.out_of_fold(table, gen)
    y = table["pass1"].to_numpy().astype(bool)
    assert (ins == y).mean() >= (oof == y).mean() and isinstance(a, pd.DataFrame)


def test_the_fork_target_verdicts_regenerate_and_cover_the_thirteen_labels(extra_data, picbreeder_dir):
    from volratio.calibration import anchored_set as A
    from volratio.data import fer_fork

    rows = A.load_verdicts(A.FORK_CSV)
    assert set(rows["label"]) == set(fer_fork.NAMES) and (rows.groupby("label").size() >= 20).all()
    assert set(rows["group"]) == set(A.FORK_GROUPS) and rows["pass2"].notna().sum() >= 0.2 * len(rows) - 1
    a = fa.fork_target_agreement()  # raises when an image does not regenerate (hash mismatch)
    assert a.loc[("anchored-gated", "all"), "n"] == len(rows)


def test_the_sparse_regime_verdicts_regenerate_from_the_stored_networks_and_are_never_fitted_on(picbreeder_dir):
    """`sparse_regime.csv`: one network per run of `depth_sparse_picbreeder` (every target and depth),
    each with its unperturbed image, judged twice on a fifth; the images regenerate from the stored
    networks (the agreement raises on a hash mismatch), and no rule's training table holds them."""
    from volratio.calibration import anchored_set as A
    from volratio.runs import stored

    rows = A.load_verdicts(A.SPARSE_CSV)
    runs = [r for r in stored.records(A.SPARSE_CHUNK)]
    assert rows[rows.kernel == -1].network.nunique() == len(runs) == rows.network.nunique()
    assert set(rows["group"]) == set(A.SPARSE_GROUPS) and rows["pass2"].notna().sum() >= 0.2 * len(rows) - 1
    a = fa.sparse_regime_agreement()
    assert a.loc[("anchored", "all"), "n"] == len(rows)
    # the cross-fitted judge scores these networks (in no fold) with its all-rows rule, reported beside the others
    assert not set(rows.network) & set(XF.folds) and a.loc[("anchored-xfit", "all"), "n"] == len(rows)
    assert not set(A.load_verdicts().network) & set(rows.network)  # held out: not in the rows the rules fit on


def test_the_sparse_agreement_reads_each_judge_as_it_judges(monkeypatch, picbreeder_dir):
    """The default aligns each image to its target before its features: its row of
    `sparse_regime_agreement` is read from aligned features (the table once fed it unaligned ones:
    12 of the 90 rows' features differ, though on this set no verdict changes) and equals the
    judge's own verdicts on the regenerated images."""
    from volratio.calibration import anchored_set as A

    asked, table = [], fa.held_out_table
    monkeypatch.setattr(
        fa, "held_out_table", lambda *a, shift=0, **k: asked.append(shift) or table(*a, shift=shift, **k)
    )
    fa.sparse_regime_agreement({"v2": judges.AnchoredJudge(torch.zeros(1, 1, 3), variant=judges.DEFAULT_JUDGE).rule})
    assert asked == [ar.ALIGN]
    monkeypatch.setattr(fa, "held_out_table", table)

    rows = A.load_verdicts(A.SPARSE_CSV).reset_index(drop=True)
    nets = A.sparse_networks()
    images = A.render(rows, nets)
    kept = np.zeros(len(rows), bool)
    for (nw, r), part in rows.groupby(["network", "res"], sort=False):
        rn = nets[nw]
        base = emc2.perturbed_images(rn.net, int(r), [], [], rn.member, "cpu")[0].cpu()
        j = judges.make_judge(judges.DEFAULT_JUDGE, base, rn.target, device="cpu")
        kept[part.index] = j(torch.stack([images[i] for i in part.index]), rn.label).verdicts
    a = fa.sparse_regime_agreement().loc[(judges.DEFAULT_JUDGE, "all")]
    y = rows["pass1"].to_numpy().astype(bool)
    assert a["kept_kept"] == int((kept & y).sum()) and a["kept_notkept"] == int((kept & ~y).sum())
    assert a["notkept_kept"] == int((~kept & y).sum())


def test_a_feature_table_served_twice_is_the_table_made_once(picbreeder_dir):
    """Tables of the stored verdict sets are made once per process and served as column subsets:
    the same columns, in the same order, and the same numbers as a table made afresh; changing a
    served table leaves the next one whole."""
    from volratio.calibration import anchored_set as A

    fa.clear_tables()
    first = fa.held_out_table(A.SPARSE_CSV, ("edges", "-rmse"), shift=ar.ALIGN)
    first["edges"] = 0.0
    again = fa.held_out_table(A.SPARSE_CSV, ("-rmse", "detail"), shift=ar.ALIGN)  # from the cache
    fresh = fa._verdict_table(A.load_verdicts(A.SPARSE_CSV), A.sparse_networks(), ("-rmse", "detail"), ar.ALIGN)
    pd.testing.assert_frame_equal(again, fresh)
    assert fa.held_out_table(A.SPARSE_CSV, ("edges",), shift=ar.ALIGN)["edges"].abs().sum() > 0
    fa.clear_tables()


def test_a_held_out_table_is_one_of_the_three_held_out_sets(tmp_path):
    with pytest.raises(VolratioError, match="not a held-out verdict set"):
        fa.held_out_table(tmp_path / "mine.csv")


@pytest.mark.slow
def test_every_verdict_set_together_is_held_out_by_network_and_by_label(extra_data, picbreeder_dir):
    """`all_verdict_sets`: every judged row of the four sets, each marked with its set; the agreement
    reports by any column (here the set), every row judged once per scheme, and names a missing one."""
    from volratio.calibration import anchored_set as A

    table, gen = fa.all_verdict_sets(names=ar.read_rule(ar.GATED_RULE_JSON).needs), H.feature_table()
    judged = {k: int(A.load_verdicts(p)["pass1"].notna().sum()) for k, p in fa.VERDICT_SETS.items()}
    assert table.groupby("set").size().to_dict() == judged and table["pass1"].notna().all()
    assert table.label.nunique() >= 16 + 1  # the sixteen claim-1 labels, and the natural images' and scenes'
    a = C.agreement(table, gen, n_boot=50, by="set")
    assert set(a.index.get_level_values("set")) == {*fa.VERDICT_SETS, "all"}
    for scheme in ("network", "label"):
        assert a.loc[(scheme, "all"), "n"] == len(table) == sum(a.loc[scheme].drop("all")["n"])
        assert (
            a.loc[(scheme, "all"), "kappa_lo"] <= a.loc[(scheme, "all"), "kappa"] <= a.loc[(scheme, "all"), "kappa_hi"]
        )
    with pytest.raises(VolratioError, match="no column 'nope'"):
        C.agreement(table, gen, by="nope")
