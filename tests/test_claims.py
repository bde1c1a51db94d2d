from pathlib import Path

import pytest

from volratio.errors import VolratioError
from volratio.report import claims

BOOK = Path(__file__).resolve().parent.parent / "book"


def test_compare_estimates():
    E = claims.Estimate
    assert claims.compare_estimates(E(0.8, 0.7, 0.9), E(0.1, 0.0, 0.2)) == "reproduced"
    assert claims.compare_estimates(E(0.5, 0.1, 0.9), E(0.4, 0.2, 0.6)) == "partly"
    assert claims.compare_estimates(E(0.1, 0.0, 0.2), E(0.8, 0.7, 0.9)) == "not reproduced"


def test_estimate_from_samples_interval_contains_mean():
    e = claims.Estimate.from_samples([1.0, 2.0, 3.0])
    assert e.mean == 2.0 and e.lo < 2.0 < e.hi
    assert claims.Estimate.from_samples([5.0]) == claims.Estimate(5.0, 5.0, 5.0)


def test_record_checks_and_returns_the_verdict():
    v = claims.record("muon-above-adam", "inconclusive", "loss 0.01 vs 0.02", {"adam": 0.02})
    assert (
        v.verdict == "inconclusive"
        and v.scale == "quick"
        and "<b>inconclusive</b>" in v.html()
        and "<details>" in v.html()
    )
    with pytest.raises(VolratioError, match="unknown claim"):
        claims.record("nope", "reproduced", "")
    with pytest.raises(VolratioError, match="verdict must be"):
        claims.record("muon-above-adam", "yes", "")
    assert list(claims.table().index) == list(claims.CLAIMS)


def test_claims_page_pastes_every_verdict_from_its_chapter():
    """The page (book/claims.md) pastes, from each claim's chapter, the reference verdict's badge,
    sentence and forest plot, whether it is robust to the judge, and the quick-scale badge; it links
    to the label `claim-<key>` that the chapter puts on the cell deciding it; and that chapter records
    the verdict: the page cannot drift from the list of claims, whatever the build order."""
    page = (BOOK / "claims.md").read_text()
    for key, c in claims.CLAIMS.items():
        for piece in ("reference-badge", "reference-line", "reference-forest", "badge"):
            assert f"{{glue}}`{c.doc}.md::claim-{key}-{piece}`" in page, (key, piece)
        judged = key not in ("rho-concentrated", "welch-r-le-d")
        # one robustness line under the badge: a word for the judges and one for δ on each weight's scale
        assert (f"{{glue}}`{c.doc}.md::claim-{key}-robust-word`" in page) is judged, key
        assert (f"judge: {{glue}}`{c.doc}.md::claim-{key}-reference-judge`" in page) is judged, key
        assert (f"{{glue}}`{c.doc}.md::claim-{key}-delta-word`" in page) is judged, key
        assert f"<claim-{key}>`" in page and c.statement in page, key
        chapter = (BOOK / f"{c.doc}.md").read_text()
        assert f"(claim-{key})=" in chapter, (key, c.doc)
        assert f'"{key}"' in chapter or f"claims.{key.replace('-', '_')}(" in chapter, (key, c.doc)
        assert (f'claims.delta_reading("{key}"' in chapter) is judged, (key, c.doc)


def test_front_page_shows_every_reference_verdict():
    """The front page's table pastes each claim's badge, and its opening answer, a fixed text,
    each claim's verdict word (glued `claim-<key>-reference-word`), before anything else on the page."""
    page = (BOOK / "intro.md").read_text()
    brief = page[page.index("**In brief.**") :]
    assert page.index("**In brief.**") < page.index("{code-cell} ipython3\n:tags: [hide-input, main-figure]")
    for key, c in claims.CLAIMS.items():
        assert f"{{glue}}`{c.doc}.md::claim-{key}-reference-badge`" in page and c.statement in page, key
        assert f"{{glue}}`{c.doc}.md::claim-{key}-reference-word`" in brief[: brief.index("\n\n")], key
        # where the row says the verdict depends on the judge, the summary says so too
        caveat = f"{{glue}}`{c.doc}.md::claim-{key}-judge-caveat`"
        assert (caveat in brief[: brief.index("\n\n")]) is (key not in ("rho-concentrated", "welch-r-le-d")), key
    assert [claims.judge_caveat(w) for w in ("depends", "robust", "one judge")] == [
        "depends on the judge", "robust to the judge", "one judge"]  # fmt: skip


def test_sp_vs_pruners_verdict_from_a_table():
    import pandas as pd

    rows = [
        {"method": m, "emc2_auc": v}
        for m, vals in {
            "sp": [0.5, 0.6, 0.55],
            "imp": [0.0, 0.01, 0.0],
            "wanda": [0.0, 0.0, 0.02],
            "llm-pruner": [0.01, 0.0, 0.0],
        }.items()
        for v in vals
    ]
    v, t = claims.sp_vs_pruners(pd.DataFrame(rows))
    assert v.verdict == "reproduced" and list(t.index) == ["sp", "imp", "wanda", "llm-pruner"]
    # Wanda at 0.4: no longer at 0 (a sub-check, shown), but SP's interval [0.43, 0.67] still lies above it
    rows = [{**r, "emc2_auc": 0.4 if r["method"] == "wanda" else r["emc2_auc"]} for r in rows]
    v, t = claims.sp_vs_pruners(pd.DataFrame(rows))
    assert v.verdict == "reproduced" and v.evidence["strongest baseline"] == "wanda" and not t.iloc[2, -1]
    assert v.evidence["statistic"]["mean"] == pytest.approx(0.15)


def test_combine_and_lower_is_better():
    assert claims.combine(["reproduced", "reproduced"]) == "reproduced"
    assert claims.combine(["reproduced", "not reproduced"]) == "partly"
    assert claims.combine(["not reproduced", "not reproduced"]) == "not reproduced"
    assert claims.combine(["not measured"]) == "not measured"
    E = claims.Estimate
    # a loss of 0.1 ± 0.01 is lower than 0.5 ± 0.01
    assert (
        claims.compare_estimates(claims.lower_is_better(E(0.1, 0.09, 0.11)), claims.lower_is_better(E(0.5, 0.49, 0.51)))
        == "reproduced"
    )


def test_verdict_says_which_judge_it_used():
    v = claims.record("picbreeder-vs-sgd", "inconclusive", "AUC 0.8 vs 0.9", judge="calibrated ssim@4")
    assert v.judge == "calibrated ssim@4" and "calibrated ssim@4" in v.html()
    assert "judge not recorded" in claims.record("muon-above-adam", "inconclusive", "loss").html()
    assert "no judge" in claims.record("welch-r-le-d", "reproduced", "coherence").html()


def test_stored_picbreeder_vs_sgd_verdict_per_target_with_subsample_intervals():
    import pandas as pd

    rows = [
        {"network": n, "target": t, "auc": a, "auc_se": se, "n_params": p, "n_nonzero": N}
        for t in ("skull", "butterfly")
        for n, a, se, p, N in (("Picbreeder", 0.9, 0.0, 147, 147), ("FER SGD", 0.5, 0.01, 5000, 46474))
    ]
    v, t = claims.picbreeder_vs_sgd_stored(pd.DataFrame(rows))
    assert v.verdict == "reproduced" and v.scale == "reference" and list(t.index) == ["skull", "butterfly"]
    assert "FER SGD skull 5,000 of 46,474" in v.measured
    # the statistic pools Picbreeder − FER over the targets: FER above on one target (a sub-check that
    # fails), far below on the other: pooled +0.175 [+0.155, +0.195]
    rows[1]["auc"] = 0.95
    v, t = claims.picbreeder_vs_sgd_stored(pd.DataFrame(rows))
    # two comparisons are two units: a t-interval on one degree of freedom, which decides nothing
    assert v.verdict == "inconclusive" and t.loc["skull", "Picbreeder above FER SGD"] == "not reproduced"
    half = 12.7062 * 0.225  # t(0.975, 1) × the standard error of the mean of −0.05 and +0.40
    assert v.evidence["statistic"]["mean"] == pytest.approx(0.175)
    assert v.evidence["statistic"]["hi"] - 0.175 == pytest.approx(half, rel=1e-3)


def test_stored_verdict_with_our_dense_networks_over_seeds():
    import pandas as pd

    table = pd.DataFrame(
        [
            {"network": n, "target": "skull", "auc": a, "auc_se": 0.0, "n_params": 10, "n_nonzero": 10}
            for n, a in (("Picbreeder", 0.9), ("FER SGD", 0.5))
        ]
    )
    dense = pd.DataFrame([{"network": "dense (ours)", "target": "skull", "auc": a} for a in (0.95, 0.96, 0.97)])
    v, t = claims.picbreeder_vs_sgd_stored(table, dense=dense)
    # one target: its two comparisons' intervals averaged, (+0.40 − 0.06) / 2 = +0.17, lower end (0.40 − 0.085) / 2 > 0
    assert v.verdict == "reproduced" and v.evidence["statistic"]["mean"] == pytest.approx(0.17)
    assert t.loc["skull", "Picbreeder above dense (ours)"] == "not reproduced"
    assert "dense (ours), 3 seeds 0.960" in v.measured


def test_png_ratio_linear_with_held_out_targets():
    """The reference form of the predictor claim: fitted on measured sweet spots, with a held-out
    check that fails the verdict when a held-out spot lies outside its prediction interval."""
    import numpy as np

    from volratio.depth import fit_predictor
    from volratio.experiments.depth_regime import PredictorCheck

    ratios = np.array([2.0, 3.0, 4.0, 5.0, 6.0, 7.0])
    pred = fit_predictor(ratios, 10.0 - 1.0 * ratios + np.array([0.1, -0.1, 0.05, -0.05, 0.1, -0.1]))
    row = {"target": "held", "measured sweet spot": 5, "predicted": 5.1, "prediction interval": (4.5, 5.7)}
    good = claims.png_ratio_linear(pred, "reference", PredictorCheck(pred, [{**row, "inside": True}]), "measured")
    assert good.verdict == "reproduced" and "held out: held measured 5, predicted 5.1 [4.5, 5.7]" in good.measured
    assert good.evidence["sub-checks held"] == "3 of 3" and good.line().startswith("slope of the sweet-spot depth")
    # a held-out spot outside its interval is a sub-check that fails: shown, not counted
    bad = claims.png_ratio_linear(pred, "reference", PredictorCheck(pred, [{**row, "inside": False}]), "measured")
    assert bad.verdict == "reproduced" and bad.evidence["held_out_inside"] == 0 and bad.scale == "reference"
    assert bad.evidence["sub-checks held"] == "2 of 3"


def test_optimizers_at_best_lr_and_verdict_over_targets():
    """Each optimizer is taken at the learning rate with the lowest mean loss (never chosen on the
    score); the reference verdict combines every target's loss and score comparisons."""
    import pandas as pd

    from volratio.experiments.optimizers import at_best_lr

    rows = []
    for target, muon_better in (("a", True), ("b", False)):
        for opt, lrs in (("adam", (0.001, 0.01)), ("muon", (0.02, 0.05))):
            for lr in lrs:
                for seed in range(5):
                    good = lr in (0.01, 0.02)  # the best lr of each optimizer
                    loss = (0.01 if good else 0.05) * (0.5 if opt == "muon" and muon_better else 1.0) + seed * 1e-4
                    score = (0.9 if opt == "muon" and muon_better else 0.5) - (0.0 if good else 0.3) + seed * 1e-3
                    rows.append(dict(target=target, depth=3, optimizer=opt, lr=lr, setting=f"lr {lr:g}", seed=seed,
                                     loss=loss, score=score, sharpness=1.0 + seed))  # fmt: skip
    best = at_best_lr(pd.DataFrame(rows))
    a = best["a"].set_index("optimizer")
    assert a.loc["adam", "lr"] == 0.01 and a.loc["muon", "lr"] == 0.02 and a.loc["muon", "n"] == 5
    assert (
        a.loc["muon", "settings"] == ["lr 0.02", "lr 0.05"]
        and a.loc["muon", "setting"] == "lr 0.02"
        and a.loc["muon", "loss"] < a.loc["adam", "loss"]
    )
    v = claims.muon_above_adam_by_target({"a": best["a"]}, stored=True)
    assert v.verdict == "reproduced" and v.scale == "reference" and "a: MSE Muon" in v.measured
    # pooled over a (Muon +0.4) and b (a tie): +0.2, its interval above 0; b's parts are sub-checks
    both = claims.muon_above_adam_by_target(best)
    assert both.verdict == "reproduced" and both.evidence["statistic"]["mean"] == pytest.approx(0.2)
    assert both.evidence["b"] == {"loss": "not reproduced", "score": "not reproduced"}
    assert "the parts combined: partly" in both.measured
    assert not a.bracketed.any()  # two rates per optimizer: the best is always at an edge
    # a partly run chunk: a target only Adam has run yet is left out of the verdict and named as pending
    partial = claims.muon_above_adam_by_target({**best, "c": best["b"][best["b"].optimizer == "adam"]})
    assert partial.evidence["statistic"] == both.evidence["statistic"] and "c" not in partial.evidence
    assert "not yet run by both optimizers: c" in partial.measured
    none = claims.muon_above_adam_by_target({"c": best["b"][best["b"].optimizer == "adam"]})
    assert none.verdict == "not measured" and none.evidence["statistic"] is None


def test_at_best_lr_chooses_on_the_named_loss_reads_each_depth_and_says_whether_the_grid_brackets():
    """The sparse regime chooses on the dense MSE (`loss="dense_loss"`); a target run at several
    depths gives one summary per depth ("target @ L"); `bracketed` is true exactly where the chosen
    rate is interior to the grid."""
    import pandas as pd

    from volratio.experiments.optimizers import at_best_lr

    rows = []
    for depth in (6, 8):
        for lr in (0.001, 0.003, 0.01):
            for seed in range(3):
                dense = {0.001: 3e-4, 0.003: 1e-4, 0.01: 5e-4}[lr] + seed * 1e-6  # interior best: 0.003
                fit = {0.001: 1e-3, 0.003: 2e-3, 0.01: 5e-4}[lr]  # the fit point's MSE would pick 0.01
                rows.append(dict(target="t", depth=depth, optimizer="adam", lr=lr, setting=f"lr {lr:g}", seed=seed,
                                 loss=fit, dense_loss=dense, score=0.5, sharpness=1.0))  # fmt: skip
    best = at_best_lr(pd.DataFrame(rows), loss="dense_loss")
    assert list(best) == ["t @ 6", "t @ 8"]
    row = best["t @ 8"].iloc[0]
    assert row.lr == 0.003 and row.bracketed and row.depth == 8 and row.loss == pytest.approx(1e-4 + 1e-6)
    by_fit = at_best_lr(pd.DataFrame(rows))["t @ 6"].iloc[0]
    assert by_fit.lr == 0.01 and not by_fit.bracketed


def test_welch_verdict_from_frames_and_the_toy_model():
    import pandas as pd

    from volratio import welch

    frames = pd.DataFrame(
        [
            {"m": m, "n": n, "max_sq_inner": 1.1 * welch.welch_bound(m, n), "bound": welch.welch_bound(m, n)}
            for m, n in [(3, 2), (4, 2), (6, 3)]
        ]  # fmt: skip
    ).assign(ratio=1.1)
    toy = pd.DataFrame([{"r": 3, "d": 2, "mean_sq_inner": 0.3}, {"r": 2, "d": 2, "mean_sq_inner": 0.0}])
    v = claims.welch_r_le_d(frames, toy, "test", scale="reference", stored=True)
    assert v.verdict == "reproduced" and v.scale == "reference" and "1 of 2 instances" in v.measured
    assert v.evidence["n_superposed"] == 1 and v.evidence["min_ratio"] == pytest.approx(1.1)
    # a frame below the bound contradicts it (the deciding statistic, exact: no interval)
    assert claims.welch_r_le_d(frames.assign(ratio=[1.1, 0.9, 1.0]), toy).verdict == "contradicted"
    # no instance in superposition, and a frame with r > d at zero coherence: sub-checks, not counted
    flat = frames.assign(max_sq_inner=[0.0, 0.1, 0.1])
    v = claims.welch_r_le_d(flat, toy[toy.r <= toy.d])
    assert v.verdict == "reproduced" and v.evidence["sub-checks held"] == "1 of 3"


def test_every_claim_has_a_reference_verdict_recorded_by_its_chapter():
    """The claims page's top line per claim is the reference verdict; each chapter it names records it
    from stored results (`stored=True`, or a stored verdict of `volratio.report.readings`), so the glue
    it pastes exists."""
    import re

    page = (BOOK / "claims.md").read_text()
    for key, c in claims.CLAIMS.items():
        assert f"{{glue}}`{c.doc}.md::claim-{key}-reference-badge`" in page, key
        chapter = (BOOK / f"{c.doc}.md").read_text()
        # a claim function called with stored=True, one that reads stored runs only (`…_stored(`), or
        # the library's reading of the stored runs (`volratio.report.readings`)
        assert (
            "stored=True" in chapter
            or re.search(r"claims\.\w+_stored\(", chapter)
            or re.search(r"from volratio\.report\.readings import \w+ as reading", chapter)
        ), (key, c.doc)


def test_by_judge_compares_label_anchored_verdicts_and_reports_stability_beside():
    from volratio.report import claims as C

    def decide(judge):
        verdict = {"anchored": "inconclusive", "anchored-ssim": "inconclusive", "stability": "reproduced"}[judge]
        return C.record(
            "depth-optimum", verdict, f"measured under {judge}", scale="reference", judge=judge, stored=True
        )

    out = C.by_judge("depth-optimum", decide, ["anchored", "anchored-ssim", "stability"])
    assert [v.verdict for v in out.values()] == ["inconclusive", "inconclusive", "reproduced"]
    assert C.robust_to_judge(out)  # stability answers another question: not counted
    line = C.judge_comparison(out)
    assert "robust to the judge" in line and "stability judge: reproduced" in line
    out["anchored-ssim"] = C.Verdict("depth-optimum", "not reproduced", "", {}, "reference", "anchored-ssim")
    assert not C.robust_to_judge(out) and "depends on the judge" in C.judge_comparison(out)


def test_judge_comparison_names_missing_judges_and_needs_two_label_anchored():
    from volratio.report import claims as C

    one = {"anchored": C.Verdict("depth-optimum", "inconclusive", "", {}, "reference", "anchored")}
    line = C.judge_comparison(one, missing=["anchored-ssim"])
    assert "label-anchored SSIM judge: not scored yet" in line and "not measured" in line


def test_judge_comparison_says_what_the_judges_were_compared_on():
    v = claims.record("welch-r-le-d", "inconclusive", "x")
    line = claims.judge_comparison({"anchored": v, "anchored-ssim": v}, on="every non-zero weight")
    assert line.endswith("robust to the judge (on every non-zero weight)")
    assert "(on" not in claims.judge_comparison({"anchored": v, "anchored-ssim": v})


def test_every_verdict_has_a_badge_colour():
    assert set(claims.BADGE_COLOURS) == set(claims.VERDICTS)
    html = claims.record("welch-r-le-d", "not reproduced", "a < b").html()
    assert claims.BADGE_COLOURS["not reproduced"] in html and "a &lt; b" in html


def test_robustness_says_in_a_few_words_whether_label_anchored_judges_agree():
    V = claims.Verdict
    same = {
        "anchored": V("depth-optimum", "inconclusive", "", {}, "reference", "anchored"),
        "anchored-ssim": V("depth-optimum", "inconclusive", "", {}, "reference", "anchored-ssim"),
        "stability": V("depth-optimum", "reproduced", "", {}, "reference", "stability"),  # not counted
    }
    assert claims.robustness(same) == (
        "robust to the judge (2 judges agree; not stored for this claim: gated default judge, gated judge, "
        "cross-fitted judge)"
    )
    differ = {**same, "anchored-ssim": V("depth-optimum", "not reproduced", "", {}, "reference", "anchored-ssim")}
    assert claims.robustness(differ) == "depends on the judge (RMSE judge: inconclusive; SSIM judge: not reproduced)"
    assert claims.robustness({"anchored": same["anchored"]}).startswith(
        "robustness to the judge not measured (one judge"
    )
    # the claims page's robustness line: one word each
    assert [claims.robust_word(v) for v in (same, differ, {"anchored": same["anchored"]})] == [
        "robust", "depends", "one judge"
    ]  # fmt: skip


def test_claims_page_pieces_badge_line_and_forest():
    """The claims page pastes a verdict's badge, its one sentence and its forest plot separately."""
    v = claims.record("muon-above-adam", "inconclusive", "a long list of numbers", headline="Muon 0.3 [0.2, 0.4].")
    assert v.badge().count("verdict-badge") == 1 and "<b>inconclusive</b>" in v.badge() and "<details>" not in v.badge()
    assert v.line() == "Muon 0.3 [0.2, 0.4]."
    assert claims.record("muon-above-adam", "inconclusive", "only this").line() == "only this"  # no headline given
    assert "<svg" not in v.forest_html()
    assert claims.interval(claims.Estimate(0.1234, 0.1, 0.15)) == "0.123 [0.100, 0.150]"
    assert claims.interval(claims.Estimate(0.5, float("nan"), float("nan")), ".1f") == "0.5"


def test_sp_vs_pruners_headline_names_the_strongest_baseline():
    import pandas as pd

    rows = [{"method": m, "emc2_auc": x} for m, xs in
            {"sp": [0.5, 0.6, 0.55], "imp": [0.0, 0.01, 0.0], "wanda": [0.2, 0.3, 0.25],
             "llm-pruner": [0.0, 0.0, 0.02]}.items() for x in xs]  # fmt: skip
    v, _ = claims.sp_vs_pruners(pd.DataFrame(rows))
    assert "SP's EMC2 AUC is 0.550 [" in v.line() and "for Wanda, the strongest baseline" in v.line()
    assert (
        "2 of 3 baselines end below 0.05" in v.line() and v.verdict == "reproduced"
    )  # [0.43, 0.67] above [0.13, 0.37]


def test_rho_concentrated_counts_checks_and_draws_the_decay_rates():
    checks = [("chain:2", "support", True), ("chain:2", "peak", True), ("chain:2", "decay W", False)]
    fits = {"chain:2": {"W": {"lambda_W": {"rate": 0.1, "lo": -0.2, "hi": 0.4}},
                        "L": {"lambda_L": {"rate": 1.5, "lo": 1.2, "hi": 1.8}}}}  # fmt: skip
    v = claims.rho_concentrated(checks, fits, scale="reference", stored=True)
    # the slowest decay, along W, has its mean above 0 and its interval across: partly
    assert v.verdict == "inconclusive" and "2 of 3 checks" in v.line()
    assert (
        v.line().startswith("the slowest decay rate λ of ρ")
        and "= 0.10 [-0.20, 0.40] (the claim: above 0), chain:2 along W" in v.line()
    )
    assert [r.label for r in v.forest.rows] == ["chain:2: λ_W", "chain:2: λ_L"] and v.forest.threshold == 0.0


def test_welch_verdict_draws_each_dimension_against_the_bound():
    import pandas as pd

    frames = pd.DataFrame({"m": [3, 4, 5, 6], "n": [2, 2, 3, 3], "ratio": [1.0, 1.5, 1.2, 1.1],
                           "max_sq_inner": [0.25, 0.4, 0.2, 0.2], "bound": [0.25, 0.3, 0.1, 0.15]})  # fmt: skip
    toy = pd.DataFrame({"r": [4, 2], "d": [2, 2], "mean_sq_inner": [0.1, 0.0]})
    v = claims.welch_r_le_d(frames, toy)
    assert v.verdict == "reproduced"
    assert [(r.label, r.mean) for r in v.forest.rows] == [("d = 2, r = 3…4", 1.0), ("d = 3, r = 5…6", 1.1)]
    assert "smallest ratio of a frame's coherence to the Welch bound is 1.000000" in v.line()


def test_each_evidence_page_is_linked_from_its_chapters_answer():
    """The audit of a chapter's stored runs is an appendix page, `book/evidence_<chapter>.md`, listed
    in the table of contents' Evidence part, linked from the chapter's answer box and from the claims
    page's row of each claim the chapter decides."""
    import yaml

    toc = yaml.safe_load((BOOK.parent / "_toc.yml").read_text())
    pages = [c["file"] for p in toc["parts"] if p["caption"] == "Evidence" for c in p["chapters"]]
    assert pages, "no Evidence part in _toc.yml"
    for page in pages:
        name = page.removeprefix("book/evidence_")
        chapter = (BOOK / f"{name}.md").read_text()
        answer = chapter[chapter.index("The answer at the reference scale") :]
        answer = answer[: answer.index("\n:::")]
        assert f"{{doc}}`evidence_{name}`" in answer, name
        assert (BOOK / f"evidence_{name}.md").read_text().count("# Evidence: ") == 1, name
    rows = (BOOK / "claims.md").read_text()
    for key, c in claims.CLAIMS.items():  # the claims page links a claim's evidence page beside its chapter
        if f"book/evidence_{c.doc}" in pages:
            assert f"<claim-{key}>` <br> <small>{{doc}}`evidence <evidence_{c.doc}>`</small>" in rows, key
