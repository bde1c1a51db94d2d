"""The verdict rules: each claim's decider, from what its experiment measured to a `Verdict`.

One function per claim of `volratio.report.catalogue.CLAIMS` (`sp_vs_pruners`, `depth_optimum`,
`png_ratio_linear`, `muon_above_adam`, `muon_above_adam_by_target`, `scenes_weaker`, `welch_r_le_d`,
`picbreeder_vs_sgd_stored` with `sixteen_verdict`, `rho_concentrated`). Each computes its claim's
deciding statistic (`volratio.report.catalogue.Statistic`, pooled over the claim's settings) and
decides the verdict from it alone (`Statistic.decide`); the other comparisons it makes are
sub-checks, shown in what was measured and never counted. It returns the verdict `record`ed by
`volratio.report.render` (glued in a notebook) with the sentence and forest plot that show it.

A decider computes its numbers first and words them after, from those numbers alone: e.g. the
Picbreeder claim's comparisons are data (`three_target_comparison`, `sixteen_target_comparison`),
the decider picks the one that decides and records one verdict, and its sentences, evidence and
forest plot are rendered from the two comparisons.

Chapter: "The paper's claims, tested" (book/claims.md), and each claim's chapter.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import scipy.stats

from ..errors import VolratioError
from ..util.verdicts import Estimate, combine, compare_estimates, difference, lower_is_better, pool, weaker
from .catalogue import CLAIMS
from .evidence import decide_pooled, drawn, pooled_rows, score_or_zero
from .forest import Forest
from .render import Verdict, forest_of, interval, judge_short, record


def decided(key: str, e: Estimate | None, fmt: str = "+.3f") -> tuple[str, str, dict]:
    """Claim `key` decided on its statistic `e` (None: not measured): the verdict, the sentence that
    states the statistic, and the evidence entry that records it."""
    st = CLAIMS[key].statistic
    numbers = None if e is None else {"mean": float(e.mean), "lo": float(e.lo), "hi": float(e.hi)}
    return st.decide(e), st.sentence(e, fmt), {"statistic": numbers}


def judge_of(table, judge: str | None = None) -> str | None:
    """`judge` when given, else the one judge named in `table`'s `judge` column (the judge the runs
    recorded); None when the table names none. Several judges in one table: an error."""
    if judge is not None or "judge" not in getattr(table, "columns", ()):
        return judge
    names = sorted(set(table["judge"].dropna()))
    if len(names) > 1:
        raise VolratioError(f"the table mixes EMC2 judges {names}; compare runs scored under one judge")
    return names[0] if names else None


def _bracketed(e: Estimate, fmt: str = ".3f") -> str:
    """`e` as "mean [lo, hi]", every number in `fmt` (NaN ends written as such)."""
    return f"{e.mean:{fmt}} [{e.lo:{fmt}}, {e.hi:{fmt}}]"


def sp_vs_pruners(
    table, zero: float = 0.05, scale: str = "quick", judge: str | None = None, stored: bool = False, at: str = ""
) -> tuple[Verdict, "object"]:
    """Claim "sp-vs-pruners" from one row per network (`method`, `emc2_auc`; where the table has
    them `target`, `checkpoint`, `member` or `seed`, and the drawing flags `base_kept` and
    `collapsed`). Every network that does not draw its label scores 0 (`evidence.score_or_zero`).
    Deciding statistic: SP's AUC minus that of the strongest of Lottery Ticket, Wanda and LLM-Pruner
    (the highest pooled mean), pooled over the settings (target × checkpoint) by
    `volratio.util.pooling.contrast`; a network's methods and checkpoints share its dense start
    (its `seed`, else its `member`) and are resampled together within its target. Sub-checks: SP's interval
    above each baseline's, each baseline's upper end below `zero`; and the verdict with the networks
    that do not draw left out. `judge`: default the table's `judge` column. `at`: where the networks
    were compared, said in what was measured and in the headline. Returns the recorded `Verdict` and
    a per-method table."""
    judge = judge_of(table, judge)
    named = {"imp": "Lottery Ticket (IMP)", "wanda": "Wanda", "llm-pruner": "LLM-Pruner"}
    scores, zeroed = score_or_zero(table, "emc2_auc")
    unit = ("seed",) if "seed" in table else ("member",)  # a network's own seed names its dense start

    def pooled_on(t, v):
        rows = pooled_rows(t, "method", v, ("target", "checkpoint"), ("target",), unit, target=("target",))
        return decide_pooled("sp-vs-pruners", rows, "sp", list(named))

    verdict, stated, decision, pooled = pooled_on(table, scores)
    kept = drawn(table)
    left_out = pooled_on(table[kept], scores[kept]) if zeroed else None
    est = {m: Estimate.from_samples(scores[table.method == m]) for m in dict.fromkeys(table.method)}
    rows = [
        {
            "method": "sp",
            "claim predicts": "> 0",
            "measured AUC": _bracketed(est["sp"]),
            "SP above it (intervals separated)": "—",
            f"at 0 (upper end < {zero})": "—",
        }
    ]
    separated = at_zero = 0
    for m in named:
        v = compare_estimates(est["sp"], est[m])
        separated += v == "reproduced"
        at_zero += est[m].hi < zero
        rows.append(
            {
                "method": m,
                "claim predicts": "0",
                "measured AUC": _bracketed(est[m]),
                "SP above it (intervals separated)": {
                    "reproduced": "yes",
                    "partly": "means only",
                    "not reproduced": "no",
                }[v],
                f"at 0 (upper end < {zero})": est[m].hi < zero,
            }
        )
    strongest = max(named, key=lambda m: est[m].mean)
    drawing = (
        f"; {zeroed} networks that do not draw their label scored 0 (left out instead: {left_out[0]})" if zeroed else ""
    )
    measured = (
        f"EMC2 AUC ({judge_short(judge)}) SP {est['sp'].mean:.2f}; "
        + ", ".join(f"{named[m]} {est[m].mean:.2f}" for m in named)
        + f"; baselines at 0: {at_zero} of 3; SP's interval above theirs: {separated} of 3"
        + drawing
        + (f"; {decision['power']['text']}" if pooled else "")
        + (f"; {at}" if at else "")
    )
    forest = forest_of(
        [("SP", est["sp"], 0)]
        + [(named[m], est[m], 1) for m in named]
        + ([("SP − strongest, pooled (deciding)", pooled.estimate, 2)] if pooled else []),
        f"EMC2 AUC, mean and 95% interval ({judge_short(judge)})",
        zero,
        f"baselines at 0 end below {zero}",
    )
    headline = (
        f"{stated}. SP's EMC2 AUC is {interval(est['sp'])} against {interval(est[strongest])} for "
        f"{named[strongest]}, the strongest baseline; {at_zero} of 3 baselines end below {zero}"
        + (f" ({at})." if at else ".")
    )
    evidence = {**decision, "strongest baseline": strongest, **{m: vars(e) for m, e in est.items()}}
    if zeroed:
        evidence["not drawing, scored 0"] = zeroed
        evidence["left out instead"] = {"verdict": left_out[0], **(left_out[2]["statistic"] or {})}
    v = record("sp-vs-pruners", verdict, measured, evidence, scale, judge, stored, forest, headline)
    return v, pd.DataFrame(rows).set_index("method")


def depth_optimum(
    curves: dict,
    true_depths: dict,
    scale: str = "quick",
    judge: str | None = None,
    stored: bool = False,
    detail: str = "",
) -> tuple[Verdict, dict]:
    """Claim "depth-optimum" from depth curves (`volratio.experiments.depth_regime.DepthCurve`).
    Deciding statistic, as the paper's words require ("peaks at a target-specific depth; shallower
    and deeper networks fail"): over the planted targets of `true_depths`, the mean score at the true
    depth L* minus the higher of the mean scores of its shallower and of its deeper depths (the peak
    must lie above both sides; a side the grid lacks is not compared), averaged over the targets and
    pooled by `volratio.util.pooling.contrast` (each depth's networks resampled within it; a target
    whose curve lacks L* is left out; scores that are not finite — a network that was not scored —
    are left out and counted). Sub-checks: the same contrast against the mean of every other depth
    (a weaker reading, shown, never counted), a peak (largest best-minus-rest) taller than the mean
    width of a depth's 95% interval, and the sweet spot at L* of every planted target. Returns the
    verdict and the numbers (width, contrast, hits, inside, agree, the statistic). `stored`: see
    `record`; `detail` is appended to what was measured."""
    width = float(np.mean([np.mean([r["score_hi"] - r["score_lo"] for r in c.summary()]) for c in curves.values()]))
    contrast = float(max(c.spot.peak_contrast for c in curves.values()))
    hits = sum(curves[t].spot.depth == d for t, d in true_depths.items())
    inside = sum(
        curves[t].spot.interval[0] <= d <= curves[t].spot.interval[1]
        for t, d in true_depths.items()
        if curves[t].spot.depth is not None
    )
    agree = sum(len(set(c.spot.per_seed)) == 1 for c in curves.values())
    checks = {
        "a peak stands above the interval width": contrast > width,
        "planted sweet spot = L* for every planted target": hits == len(true_depths),
    }
    rows, unscored = depth_rows(curves, true_depths)
    verdict, stated, decision, pooled = decide_pooled(
        "depth-optimum", rows, "L*", ["shallower", "deeper"], "per setting"
    )
    zeroed = int((~rows.drawn).sum())
    left_out = (
        decide_pooled("depth-optimum", rows[rows.drawn], "L*", ["shallower", "deeper"], "per setting")
        if zeroed
        else None
    )
    others = rows.assign(arm=rows.arm.where(rows.arm == "L*", "other"))
    weaker = decide_pooled("depth-optimum", others, "L*", "other")[3]
    power = f"; {decision['power']['text']}" if pooled else ""
    against_rest = (
        f"; against the mean of every other depth instead: {interval(weaker.estimate, '+.3f')}" if weaker else ""
    )
    decision["against every other depth"] = vars(weaker.estimate) if weaker else None
    decision["networks not scored"] = unscored
    undrawn = ""
    if zeroed:
        decision["not drawing, scored 0"] = zeroed
        decision["left out instead"] = {"verdict": left_out[0], **(left_out[2]["statistic"] or {})}
        undrawn = f"; {zeroed} networks that do not draw their label scored 0 (left out instead: {left_out[0]})"
    v = record(
        "depth-optimum",
        verdict,
        f"largest peak − rest {contrast:.3f} vs mean 95% interval width {width:.3f}; sweet spot = L* for "
        f"{hits} of {len(true_depths)} planted targets; seeds agree on the argmax for {agree} of {len(curves)} targets"
        + against_rest
        + power
        + undrawn
        + (f" — {detail}" if detail else ""),
        {**decision, **{k: bool(x) for k, x in checks.items()}},
        scale,
        judge,
        stored,
        forest_of(
            [
                (t.split(":", 1)[-1], Estimate(*[c.spot.peak_contrast] * 3), int(t in true_depths))
                for t, c in curves.items()
            ],  # fmt: skip
            "peak − rest of each target's curve (planted targets in orange)",
            width,
            "mean width of a depth's 95% interval",
        ),
        f"{stated}. The tallest peak rises {contrast:.3f} above the rest of its curve, against a mean 95% "
        f"interval width of {width:.3f}; the sweet spot is the true depth L* for {hits} of {len(true_depths)} "
        f"planted targets{against_rest}.",
    )
    numbers = {"width": width, "contrast": contrast, "hits": hits, "inside": inside, "agree": agree}
    return v, {**numbers, **decision}


def depth_rows(curves: dict, true_depths: dict, zero_undrawn: bool = True) -> tuple[pd.DataFrame, int]:
    """The rows of the depth claim's pooled contrast (`volratio.util.pooling.contrast`): per planted
    target of `true_depths` whose curve has L* and another depth, one row per depth and seed, its
    arm "L*", "shallower" or "deeper", its stratum the target's depth (networks at different depths
    are different networks), `drawn` (the curve's `kept`: False where the network does not draw its
    label, else True — a network without a verdict, or a curve without `kept`, is no evidence
    against it); and how many scores
    were not finite and left out. `zero_undrawn`: a network that does not draw its label scores 0
    (`volratio.report.evidence`); False for a judge-free score, which no judge's verdict may change."""
    rows, unscored = [], 0
    for t, d in true_depths.items():
        c = curves[t]
        depths = [int(x) for x in c.depths]
        if d not in depths or len(depths) < 2:
            continue
        score = np.asarray(c.score, dtype=float)  # (n_depths, n_seeds)
        verdicts = getattr(c, "kept", None)  # None on a curve without verdicts (a judge-free one)
        kept = np.full_like(score, np.nan) if verdicts is None else np.asarray(verdicts, dtype=float)
        for i, depth in enumerate(depths):
            arm = "L*" if depth == d else ("shallower" if depth < d else "deeper")
            for k, x in enumerate(score[i]):
                if not np.isfinite(x):
                    unscored += 1
                    continue
                draws = bool(kept[i, k] != 0)  # NaN: no verdict recorded
                value = float(x) if draws or not zero_undrawn else 0.0
                rows.append({"target": t, "setting": t, "arm": arm, "stratum": f"{t} | {depth}", "unit": k,
                             "value": value, "drawn": draws})  # fmt: skip
    return pd.DataFrame(rows, columns=["target", "setting", "arm", "stratum", "unit", "value", "drawn"]), unscored


def png_ratio_linear(
    pred, scale: str = "quick", check=None, what: str = "true depth L*", stored: bool = False, judge: str | None = None
) -> Verdict:
    """Claim "png-ratio-linear" from a predictor fitted on planted targets (`volratio.depth.
    DepthPredictor`; `what` it was fitted to: their true depths, or their measured sweet spots).
    Deciding statistic: the fitted slope of depth on the PNG ratio with its t-interval at the
    predictor's level (`slope`), claimed below 0 (a less compressible target deeper). Sub-checks:
    R² ≥ 0.8, a leave-one-out error below one layer and below always guessing the mean depth, and
    with `check` (`volratio.experiments.depth_regime.PredictorCheck`) every held-out target's measured sweet
    spot inside its 95% prediction interval."""
    guess = float(np.std(pred.y))
    held = check.held_out if check is not None else []
    linear = [pred.r2 >= 0.8, pred.loo_rmse < 1.0 and pred.loo_rmse < guess]
    if held:
        linear.append(check.inside == len(held))
    verdict, stated, decision = decided("png-ratio-linear", slope(pred))
    evidence = {**decision, "r2": pred.r2, "loo_rmse": pred.loo_rmse, "power": _slope_power(pred)}
    if held:
        evidence["held_out_inside"] = check.inside
    evidence["sub-checks held"] = f"{sum(linear)} of {len(linear)}"
    measured = (
        f"{pred.n} planted targets, {what} vs ratio: R² = {pred.r2:.3f}, LOO RMSE {pred.loo_rmse:.2f} layers "
        f"(guessing the mean: {guess:.2f})"
    )
    if held:
        measured += "; held out: " + ", ".join(
            f"{r['target']} measured {r['measured sweet spot']}, predicted {r['predicted']:.1f} "
            f"[{r['prediction interval'][0]:.1f}, {r['prediction interval'][1]:.1f}]"
            for r in held
        )
    headline = (
        f"{stated}. On {pred.n} planted targets R² = {pred.r2:.2f} and the leave-one-out error is "
        f"{pred.loo_rmse:.2f} layers (always guessing the mean: {guess:.2f})"
    )
    if held:
        headline += f"; {check.inside} of {len(held)} held-out sweet spots lie inside their 95% prediction intervals"
    headline += "."
    return record(
        "png-ratio-linear", verdict, measured, evidence, scale, judge, stored, _held_out_forest(held), headline
    )


def _held_out_forest(held) -> Forest | None:
    """Each held-out target's predicted sweet-spot depth (its 95% prediction interval) and its
    measured one; None without held-out targets."""
    rows = []
    for r in held:
        name = r["target"].split(":", 1)[-1]
        rows.append((f"{name}: predicted", Estimate(r["predicted"], *r["prediction interval"]), 0))
        rows.append((f"{name}: measured", Estimate(*[float(r["measured sweet spot"])] * 3), 1))
    return forest_of(rows, "sweet-spot depth: predicted (95% prediction interval) and measured")


def _slope_power(pred) -> dict:
    """The slope's half-width beside m, and the planted targets that would bring it under m."""
    return targets_power("png-ratio-linear", slope(pred), int(pred.n), "planted targets")


def targets_power(key: str, e: Estimate, n: int, units: str = "targets") -> dict:
    """Claim `key`'s statistic `e`, a t-interval over `n` independent targets (n − 1 degrees of
    freedom; a slope's n − 2 are read as n − 1 here), against its smallest effect of interest m: the
    full width, and the targets that would bring it under m at the same spread between targets (the
    width at n′ targets is 2 · t(n′ − 1) · s/√n′). More networks per target narrow only each
    target's own mean: where the targets are the units, only more targets decide."""
    m = CLAIMS[key].statistic.smallest
    hw = float((e.hi - e.lo) / 2)
    text = f"full width {2 * hw:.3g} against m = {m:g}, with {n} {units}"
    needed = None
    if np.isfinite(hw) and 2 * hw >= m and n > 1:
        sd = hw * np.sqrt(n) / scipy.stats.t.ppf(0.975, n - 1)
        ks = np.arange(max(n, 2), 100_000)
        under = np.flatnonzero(2 * scipy.stats.t.ppf(0.975, ks - 1) * sd / np.sqrt(ks) < m)
        needed = int(ks[under[0]]) if len(under) else None
        text += f"; about {needed} {units} would bring it under m" if needed else "; no count under 100,000 would"
    elif np.isfinite(hw) and 2 * hw < m:
        text += " (narrow enough to decide)"
    return {"half_width": hw, "width": 2 * hw, "smallest_effect": m, "targets": int(n), "needed_targets": needed,
            "text": text}  # fmt: skip


def slope(pred) -> Estimate:
    """The slope of a `volratio.depth.DepthPredictor` (fitted on 3 points or more) with its
    t-interval at the predictor's level (n − 2 degrees of freedom)."""
    half = float(scipy.stats.t.ppf(0.5 + pred.level / 2, pred.n - 2)) * pred.se_b
    return Estimate(float(pred.b), float(pred.b - half), float(pred.b + half))


def _muon_parts(summary) -> tuple[dict, object, object]:
    """Per part ("loss", "score"): Muon against Adam in one optimizer summary; and the two rows."""
    s = summary.set_index("optimizer") if "optimizer" in summary.columns else summary
    a, m = s.loc["adam"], s.loc["muon"]

    parts = {
        "loss": compare_estimates(lower_is_better(_est(m, "loss")), lower_is_better(_est(a, "loss"))),
        "score": compare_estimates(_est(m, "score"), _est(a, "score")),
    }
    return parts, a, m


def _est(row, col: str) -> Estimate:
    """Column `col` of a summary row (`col`, `col_lo`, `col_hi`) as an `Estimate`."""
    return Estimate(row[col], row[f"{col}_lo"], row[f"{col}_hi"])


def muon_part(summary, col: str, better: str) -> str:
    """One part of the Muon claim in a line, for a live run's summary (one row per optimizer with
    `col`, `col_lo`, `col_hi`): whether Muon's mean `col` is `better` ("lower" or "higher") than
    Adam's, both means, and whether their intervals separate in that direction. A sub-check shown
    beside the verdict, never a verdict. Chapter: "Optimization" (book/optimization.md)."""
    if better not in ("lower", "higher"):
        raise VolratioError(f"muon_part: better must be 'lower' or 'higher', got {better!r}")
    s = summary.set_index("optimizer") if "optimizer" in summary.columns else summary
    a, m = s.loc["adam"], s.loc["muon"]
    lower = better == "lower"
    holds = m[col] < a[col] if lower else m[col] > a[col]
    apart = m[f"{col}_hi"] < a[f"{col}_lo"] if lower else m[f"{col}_lo"] > a[f"{col}_hi"]
    return (
        f"Muon {better} than Adam: {bool(holds)} (Muon {m[col]:.4g} vs Adam {a[col]:.4g}; "
        f"intervals separate: {bool(apart)})"
    )


def muon_above_adam(summary, detail: str = "", scale: str = "quick", judge: str | None = None) -> Verdict:
    """Claim "muon-above-adam" from the optimizer study's summary (one row per optimizer with
    `loss`, `score` and their `_lo`/`_hi`). The claim joins two statements, each decided on its own
    statistic (`volratio.util.verdicts.difference` of the two optimizers' intervals): Muon's score
    minus Adam's (the catalogue's statistic) and the log of Muon's loss over Adam's (its `also`); the
    claim's word is the weaker of the two. Sub-checks: each part judged by `compare_estimates`."""
    parts, a, m = _muon_parts(summary)
    score, loss = difference(_est(m, "score"), _est(a, "score")), _log_ratio(m, a)
    verdict, stated, decision = decided("muon-above-adam", score)
    verdict, loss_stated = _with_loss(verdict, loss, decision)
    return record(
        "muon-above-adam",
        verdict,
        f"final MSE Muon {m['loss']:.3g} vs Adam {a['loss']:.3g}; EMC2 AUC Muon {m['score']:.3f} vs Adam "
        f"{a['score']:.3f} ({detail}); per part: {parts}",
        {**decision, "muon": m.to_dict(), "adam": a.to_dict()},
        scale,
        judge,
        forest=forest_of(
            [("Adam", _est(a, "score"), 0), ("Muon", _est(m, "score"), 1)], "EMC2 AUC (mean, 95% interval)"
        ),
        headline=f"{stated}: EMC2 AUC Muon {interval(_est(m, 'score'))} against Adam {interval(_est(a, 'score'))}. "
        f"{loss_stated}.",
    )


def _log_ratio(m, a) -> Estimate:
    """log10(Muon's loss / Adam's) from two summary rows, its ends from the ends of their intervals
    (NaN where a loss or an end is not positive)."""

    def log(x) -> float:
        return float(np.log10(x)) if x > 0 else float("nan")

    return Estimate(log(m["loss"]) - log(a["loss"]), log(m["loss_lo"]) - log(a["loss_hi"]),
                    log(m["loss_hi"]) - log(a["loss_lo"]))  # fmt: skip


def _with_loss(score_word: str, loss: Estimate | None, decision: dict) -> tuple[str, str]:
    """The Muon claim's word from its score's and its loss's (`weaker`), the loss recorded in
    `decision` (`"loss statistic"`, with its word, and the score's word); and the loss's sentence."""
    st = CLAIMS["muon-above-adam"].also[0]
    loss_word = st.decide(loss)
    decision["score verdict"] = score_word
    decision["loss statistic"] = {**_numbers(loss), "verdict": loss_word}
    return weaker(score_word, loss_word), f"{st.sentence(loss)}: {loss_word}"


def muon_above_adam_by_target(
    summaries: dict,
    detail: str = "",
    scale: str = "reference",
    judge: str | None = None,
    stored: bool = True,
    runs=None,
    matched: bool = False,
    loss: str = "loss",
) -> Verdict:
    """Claim "muon-above-adam" over several targets (`{target: summary}` as for `muon_above_adam`,
    each optimizer at its best learning rate, e.g. `optimizers.at_best_lr`). Deciding statistic:
    Muon's score minus Adam's, pooled over the targets by `volratio.util.pooling.contrast` from the
    networks of each optimizer's best setting in `runs` (one row per network: `target`, `depth`,
    `optimizer`, `setting`, `seed`, `score`, and `drawn` where stored: a network that does not draw
    its label scores 0); each optimizer's networks are its own (resampled apart). Without `runs`
    the statistic is the average of the targets' `difference`s, an interval that never narrows
    (`volratio.util.verdicts.pool`): kept for summaries alone. Sub-checks: every target's loss and
    score parts. A target that only one optimizer has run so far (a partly run chunk) is left out
    of the verdict and named in its text as pending. `matched`: the networks of a cell were pruned to
    one non-zero count (chunk optimizers_matched); the text and evidence then give how far apart the
    counts compared in each cell are (`MATCHED_WITHIN`, a share of the smaller), and the size-adjusted
    regression, a stand-in for matching, is left out."""
    parts, texts, evidence, rows, gaps, diffs, pending, picked, losses = [], [], {}, [], [], [], [], [], []
    for target, summary in summaries.items():
        ran = set(summary["optimizer"] if "optimizer" in summary.columns else summary.index)
        if not {"adam", "muon"} <= ran:
            pending.append(target)
            continue
        p, a, m = _muon_parts(summary)
        parts += p.values()
        diffs.append(difference(_est(m, "score"), _est(a, "score")))
        losses.append(_log_ratio(m, a))
        gaps.append((abs(m["score"] - a["score"]), target.split(":", 1)[-1], _est(m, "score"), _est(a, "score")))
        texts.append(
            f"{target}: MSE Muon {m['loss']:.3g} vs Adam {a['loss']:.3g} ({p['loss']}), AUC Muon {m['score']:.3f} "
            f"vs Adam {a['score']:.3f} ({p['score']})"
        )
        evidence[target] = p
        name = target.split(":", 1)[-1]
        rows += [(f"{name}: Adam", _est(a, "score"), 0), (f"{name}: Muon", _est(m, "score"), 1)]
        if runs is not None:
            picked += [_best_networks(runs, target, r) for r in (a, m)]
    if runs is None:
        verdict, stated, decision = decided("muon-above-adam", pool(diffs) if diffs else None)
        verdict, loss_stated = _with_loss(verdict, pool(losses) if losses else None, decision)
        power = ""
    else:
        nets = pd.concat(picked) if picked else pd.DataFrame(columns=["cell", "optimizer", "seed", "score"])
        scores, zeroed = score_or_zero(nets, "score", kept="drawn")
        verdict, stated, decision, pooled = decide_pooled(
            "muon-above-adam", pooled_rows(nets, "optimizer", scores, ("cell",), ("cell",), ("seed",), paired=False,
                                           target=("target",)),
            "muon", "adam",
        )  # fmt: skip
        loss_rows = pooled_rows(
            nets,
            "optimizer",
            np.log10(nets[loss].astype(float)),
            ("cell",),
            ("cell",),
            ("seed",),
            paired=False,
            target=("target",),
        )  # a network's loss is its own, drawn or not
        also = CLAIMS["muon-above-adam"].also[0]
        _, _, loss_decision, loss_pooled = decide_pooled("muon-above-adam", loss_rows, "muon", "adam", statistic=also)
        verdict, loss_stated = _with_loss(verdict, loss_pooled and loss_pooled.estimate, decision)
        decision["loss statistic"]["power"] = loss_decision.get("power")
        power = f"; {zeroed} networks that do not draw their label scored 0" if zeroed else ""
        power += f"; score: {decision['power']['text']}" if pooled else ""
        power += f"; loss: {loss_decision['power']['text']}" if loss_pooled else ""
        adjusted = None if matched else size_adjusted(nets, scores)
        if matched and len(nets):
            spread = count_spread(nets)
            decision["count-spread"] = {cell: float(v) for cell, v in spread.items()}
            power += (f"; at one non-zero count per cell: the counts compared lie within {spread.max():.1%} of each "
                      f"other (at most {MATCHED_WITHIN:.0%} allowed)")  # fmt: skip
        if adjusted is not None:
            decision["size-adjusted"] = vars(adjusted)
            power += (f"; adjusted for size (log non-zero weights, within each cell; a regression, not matched "
                      f"networks): Muon − Adam {interval(adjusted, '+.3f')}")  # fmt: skip
        if pooled:
            rows.append((f"Muon − Adam, pooled over {pooled.settings} cells (deciding)", pooled.estimate, 2))
    return record(
        "muon-above-adam",
        verdict,
        "; ".join(texts)
        + f"; the parts combined: {combine(parts)}"
        + power
        + (f"; not yet run by both optimizers: {', '.join(pending)}" if pending else "")
        + (f" — {detail}" if detail else ""),
        {**decision, **evidence},
        scale,
        judge,
        stored,
        forest_of(rows, "EMC2 AUC at each optimizer's best setting (mean, 95% interval)"),
        (f"{stated}. {loss_stated}. " + _muon_headline(evidence, max(gaps))) if gaps else f"{stated}. {loss_stated}.",
    )


MATCHED_WITHIN = 0.05  # networks compared "at one count" differ by at most this share of the smaller count


def count_spread(nets) -> pd.Series:
    """Per cell of `nets` (`cell`, `nonzero`), how far apart the non-zero counts compared are:
    (largest − smallest) / smallest. Refuses a cell beyond `MATCHED_WITHIN`: its networks were not
    pruned to one count, and a matched comparison cannot be read off them."""
    g = nets.groupby("cell").nonzero
    spread = (g.max() - g.min()) / g.min()
    wide = spread[spread > MATCHED_WITHIN]
    if len(wide):
        raise VolratioError(
            f"muon-above-adam, matched: non-zero counts differ by more than {MATCHED_WITHIN:.0%} in "
            + ", ".join(f"{c} ({v:.1%})" for c, v in wide.items())
            + '; prune both optimizers\' networks to one count (read_at = "end" with sp.target_nonzeros)'
        )
    return spread


def size_adjusted(nets, scores) -> Estimate | None:
    """Muon's score minus Adam's adjusted for network size: the optimizer's coefficient in the
    least-squares fit of `scores` on the cell (fixed effects), the log of the non-zero weights and
    the optimizer, over the networks `nets` (`cell`, `optimizer`, `nonzero`), with its 95% t-interval.
    A sub-check of the Muon claim, whose networks differ in sparsity (each optimizer at its own fit
    point); None without a `nonzero` column or with too few networks."""
    if "nonzero" not in nets or len(nets) < 4:
        return None
    cells = pd.get_dummies(nets["cell"].astype(str), dtype=float).to_numpy()
    x = np.column_stack([cells, np.log(nets["nonzero"].astype(float)), (nets["optimizer"] == "muon").astype(float)])
    y = np.asarray(scores, dtype=float)
    dof = len(y) - np.linalg.matrix_rank(x)
    if dof < 1:
        return None
    beta, *_ = np.linalg.lstsq(x, y, rcond=None)
    resid = y - x @ beta
    cov = float(resid @ resid) / dof * np.linalg.pinv(x.T @ x)
    se = float(np.sqrt(cov[-1, -1]))
    half = float(scipy.stats.t.ppf(0.975, dof)) * se
    return Estimate(float(beta[-1]), float(beta[-1] - half), float(beta[-1] + half))


def _best_networks(runs, cell: str, best) -> pd.DataFrame:
    """The networks of `runs` behind one optimizer's row of an `at_best_lr` summary (`best`, indexed
    by optimizer; `cell`: the summary's key, "target" or "target @ depth"), with their `cell`."""
    target = cell.split(" @ ")[0]
    sel = (runs.target == target) & (runs.depth == best["depth"]) & (runs.optimizer == best.name)
    return runs[sel & (runs.setting == best["setting"])].assign(cell=cell)


def _muon_headline(parts: dict, gap) -> str:
    """One sentence: in how many targets Muon wins each part, and the largest score gap."""
    n = len(parts)
    lower = sum(p["loss"] == "reproduced" for p in parts.values())
    higher = sum(p["score"] == "reproduced" for p in parts.values())
    _, name, m, a = gap
    return (
        f"Muon's loss is lower in {lower} of {n} targets and its EMC2 AUC higher in {higher} of {n} (intervals "
        f"separated); the largest AUC gap, {name}: Muon {interval(m)} against Adam {interval(a)}."
    )


SCENE_MEASURES = ("best mean score", "peak − rest")  # `unknown_targets.EFFECTS`; the first decides


def scenes_weaker(
    rows, detail: str = "", scale: str = "quick", judge: str | None = None, stored: bool = False
) -> Verdict:
    """Claim "scenes-weaker" from `volratio.experiments.unknown_targets.scene_vs_parts` rows (one per
    scene and measure, `effect` ending in the measure's name, each with its bootstrap interval of
    scene − parts over the networks). Deciding statistic, from the paper's words: "the effect" is the
    compositional structure that emerges, which the EMC2 score measures, so it is the scene's best
    mean score over depths (at its sweet spot) minus the mean of its parts', claimed below 0 — per
    scene, then over the scenes with the t-interval on K − 1 degrees of freedom (the scenes are the
    units: an interval about scenes like these); with one scene, its row's own interval, about that
    scene's networks. Sub-check, with its own word: the same for peak − rest, how sharply the score
    peaks at one depth (the narrowness of the regime, of which the sentence does not speak)."""
    rows = list(rows)
    by = {m: [r for r in rows if _measure(r) == m] for m in SCENE_MEASURES}
    deciding, sub = _over_scenes(by[SCENE_MEASURES[0]]), _over_scenes(by[SCENE_MEASURES[1]])
    verdict, stated, decision = decided("scenes-weaker", deciding)
    sub_word = CLAIMS["scenes-weaker"].statistic.decide(sub)
    scenes = len(by[SCENE_MEASURES[0]])
    decision["scenes"] = scenes
    decision["peak − rest (sub-check)"] = {**_numbers(sub), "verdict": sub_word}
    power = ""
    if scenes > 1:
        decision["power"] = targets_power("scenes-weaker", deciding, scenes, "scenes")
        decision["interval"] = (
            f"about scenes like these: a t-interval over {scenes} scenes, {scenes - 1} degrees of freedom"
        )
        power = f"; {decision['power']['text']}"
    texts = [f"{r['effect']}: scene − parts {r['difference']:+.3f} ({r['lo']:+.3f}..{r['hi']:+.3f})" for r in rows]
    sub_text = f"; sub-check, peak − rest over the scenes: {interval(sub, '+.3f')} ({sub_word})" if sub else ""
    over = f"over {scenes} scenes" if scenes > 1 else "one scene"
    return record(
        "scenes-weaker",
        verdict,
        "; ".join(texts) + sub_text + power + (f" — {detail}" if detail else ""),
        {**decision, **{r["effect"]: {"scene": r["scene"], "parts": r["parts"]} for r in rows}},
        scale,
        judge,
        stored,
        forest_of(
            [
                (str(r["effect"]), Estimate(r["difference"], r["lo"], r["hi"]), int(_measure(r) != SCENE_MEASURES[0]))
                for r in rows
            ]
            + ([(f"best mean score, {over} (deciding)", deciding, 2)] if deciding is not None else []),
            "scene − parts, mean score difference (bootstrap interval per scene)",
            0.0,
            "no difference (the claim: below it)",
        ),  # fmt: skip
        f"{stated}" + (f". Sub-check, peak − rest: {interval(sub, '+.3f')} ({sub_word})." if sub else "."),
    )


def _measure(row) -> str:
    """The measure a scene row compares (its `effect` ends with one of `SCENE_MEASURES`)."""
    name = str(row["effect"]).split(": ")[-1]
    if name not in SCENE_MEASURES:
        raise VolratioError(
            f"scene row {row['effect']!r} names no measure of {SCENE_MEASURES}; see unknown_targets.EFFECTS"
        )
    return name


def _over_scenes(rows) -> Estimate | None:
    """One measure over the scenes: the t-interval of the scenes' differences (K − 1 degrees of
    freedom); one scene, its row's own interval; None without a row."""
    if not rows:
        return None
    if len(rows) == 1:
        return Estimate(rows[0]["difference"], rows[0]["lo"], rows[0]["hi"])
    return Estimate.from_samples([r["difference"] for r in rows])


def welch_r_le_d(frames, toy, detail: str = "", scale: str = "quick", stored: bool = False) -> Verdict:
    """Claim "welch-r-le-d" from the constructed frames (`volratio.experiments.frames` rows: `m`, `n`,
    `max_sq_inner`, `bound`, `ratio`) and the toy model of superposition (`superposition` rows: `r`,
    `d`, `mean_sq_inner`). Three sub-claims: no frame beats the Welch bound (ratio ≥ 1, to 1e-9);
    every frame with r > d has positive bound and coherence (interference is forced); every toy
    instance that represents more features than dimensions (r > d) has positive mean interference.
    Deciding statistic: the first, the smallest ratio to the bound (exact: its interval is the point);
    the other two are sub-checks."""
    never_beaten = bool(frames["ratio"].min() >= 1 - 1e-9)
    over = frames[frames["m"] > frames["n"]]
    forced = bool((over["max_sq_inner"] > 0).all() and (over["bound"] > 0).all())
    sup = toy[toy["r"] > toy["d"]]
    sup_positive = bool(len(sup) > 0 and (sup["mean_sq_inner"] > 0).all())
    checks = [never_beaten, forced, sup_positive]
    measured = (
        f"{len(frames)} constructed frames: smallest ratio to the Welch bound {frames['ratio'].min():.6f} (never below "
        f"1: {never_beaten}); every frame with r > d has positive coherence: {forced}; toy model in superposition "
        f"({len(sup)} of {len(toy)} instances) has interference > 0: {sup_positive}"
        + (f" — {detail}" if detail else "")
    )
    smallest = float(frames["ratio"].min())
    verdict, stated, decision = decided("welch-r-le-d", Estimate(smallest, smallest, smallest), ".6f")
    evidence = {**decision, "min_ratio": smallest, "n_frames": int(len(frames)), "n_superposed": int(len(sup))}
    evidence["sub-checks held"] = f"{sum(checks)} of {len(checks)}"
    headline = (
        f"Over {len(frames)} constructed frames, the smallest ratio of a frame's coherence to the Welch bound is "
        f"{frames['ratio'].min():.6f} (the bound: never below 1); interference > 0 in {int((over['max_sq_inner'] > 0).sum())} of {len(over)} "
        f"frames with r > d and in {int((sup['mean_sq_inner'] > 0).sum())} of {len(sup)} toy models in superposition."
    )
    return record(
        "welch-r-le-d",
        verdict,
        measured,
        evidence,
        scale,
        None,
        stored,
        _welch_forest(frames),
        headline,
    )


def _span(xs) -> str:
    """ "3…5", or "4" when every value is 4."""
    lo, hi = int(xs.min()), int(xs.max())
    return f"{lo}" if lo == hi else f"{lo}…{hi}"


def _welch_forest(frames) -> Forest | None:
    """Per dimension d, the smallest ratio of a frame's coherence to the Welch bound over its frames
    with r > d vectors, against 1 (the bound: no frame may fall below it)."""
    over = frames[frames["m"] > frames["n"]]
    rows = [
        (f"d = {d}, r = {_span(g['m'])}", Estimate(*[float(g["ratio"].min())] * 3), 0) for d, g in over.groupby("n")
    ]
    return forest_of(
        rows, "smallest max coherence² ÷ Welch bound over the frames in d dimensions", 1.0, "the Welch bound"
    )


def sixteen_verdict(paired) -> tuple[str, Estimate | None, list]:
    """The verdict across the sixteen targets from `volratio.experiments.twins.paired` (one row per
    target): the mean over the targets used of `diff` (Picbreeder AUC − its twins' mean AUC) with its
    t-interval, the claim's deciding statistic (`Statistic.decide`: above 0). Returns `(verdict,
    Estimate or None, forest rows)`."""
    used = paired[paired["used"]] if len(paired) else paired
    if not len(used):
        return "not measured", None, []
    d = Estimate.from_samples(used["diff"])
    rows = [(str(t), Estimate(x, x, x), 0) for t, x in used["diff"].items()]
    rows.append((f"mean over {len(used)} targets", d, 2))
    return CLAIMS["picbreeder-vs-sgd"].statistic.decide(d), d, rows


def _failed_networks(paired) -> int:
    """Networks of a `twins.paired` table that never draw their label (twins and Picbreeder)."""
    if not len(paired):
        return 0
    twins = int((paired["twins"] - paired["twins drawn"]).sum())
    return twins + int((~paired["Picbreeder drawn"].astype(bool)).sum()) if "Picbreeder drawn" in paired else twins


@dataclass(frozen=True)
class TargetComparison:
    """One target of the three-target comparison: the Picbreeder network's EMC2 AUC and FER's SGD
    network's, each with the interval its parameter subsample implies, and, where the dense runs
    have the target, our dense networks' mean AUC over their `seeds` seeds with its t-interval."""

    target: str
    picbreeder: Estimate
    sgd: Estimate
    dense: Estimate | None = None
    seeds: int = 0

    def others(self) -> list[Estimate]:
        """The SGD-trained networks the Picbreeder network is compared with: FER's, then ours."""
        return [self.sgd] + ([self.dense] if self.dense is not None else [])

    def parts(self) -> list[str]:
        """Each comparison's verdict on "the Picbreeder network lies above" (`compare_estimates`)."""
        return [compare_estimates(self.picbreeder, other) for other in self.others()]

    def differences(self) -> list[Estimate]:
        """Each comparison's difference, Picbreeder − the other network (`difference`)."""
        return [difference(self.picbreeder, other) for other in self.others()]


@dataclass(frozen=True)
class ThreeTargetComparison:
    """The comparison on the targets FER's SGD networks were trained on: one `TargetComparison` per
    target (in the table's order), the networks scored on a seeded subsample of their weights
    (`subsampled`: network, target, weights scored, non-zero weights), and the claim's statistic
    on the targets (`estimate`; None without a target)."""

    targets: tuple[TargetComparison, ...]
    subsampled: tuple[tuple, ...]
    estimate: Estimate | None

    def parts(self) -> list[str]:
        """Every comparison's verdict, target by target (FER's network, then ours)."""
        return [p for t in self.targets for p in t.parts()]


def three_target_comparison(table, dense=None, z: float = 1.96) -> ThreeTargetComparison:
    """The three-target comparison from the stored EMC2 runs (`emc2_point` rows: `network`, `target`,
    `auc`, `auc_se`, `n_params`, `n_nonzero`) and, with `dense`, our dense networks (`emc2_dense`
    rows, one per network × target × seed). A target counts where it has both a Picbreeder and a FER
    SGD network. The statistic is the Picbreeder AUC minus the other networks', averaged per target
    over its comparisons, with the t-interval over the targets (the independent units); on one
    target, its comparisons' intervals averaged (`pool`: they share the Picbreeder network, so they
    do not narrow it)."""
    targets = []
    for target in dict.fromkeys(table.target):
        sel = table[table.target == target].set_index("network")
        if {"Picbreeder", "FER SGD"} <= set(sel.index):
            targets.append(_target_comparison(target, sel, dense, z))
    subsampled = tuple(
        (r.network, r.target, r.n_params, r.n_nonzero) for r in table.itertuples() if r.n_params < r.n_nonzero
    )
    per_target = [np.mean([d.mean for d in t.differences()]) for t in targets]  # the targets are the units
    if len(per_target) > 1:
        estimate = Estimate.from_samples(per_target)
    else:  # one target: its comparisons share the Picbreeder network, so their intervals are averaged
        diffs = [d for t in targets for d in t.differences()]
        estimate = pool(diffs) if diffs else None
    return ThreeTargetComparison(tuple(targets), subsampled, estimate)


def _target_comparison(target: str, sel, dense, z: float) -> TargetComparison:
    """Target `target`'s networks (`sel`: its EMC2 rows indexed by network), each AUC ± z·se, and
    our dense networks of `dense` on it (their mean over seeds), where there are any."""

    def auc(row):
        return Estimate(row.auc, row.auc - z * row.auc_se, row.auc + z * row.auc_se)

    pb, sgd = auc(sel.loc["Picbreeder"]), auc(sel.loc["FER SGD"])
    ours = () if dense is None else dense[(dense.target == target) & (dense.network == "dense (ours)")].auc
    if not len(ours):
        return TargetComparison(target, pb, sgd)
    return TargetComparison(target, pb, sgd, Estimate.from_samples(ours), len(ours))


@dataclass(frozen=True)
class SixteenReading:
    """One reading of the sixteen-target comparison (`twins.paired` under one rule for the networks
    that never draw their label): its verdict and statistic (`sixteen_verdict`: the mean paired
    difference Picbreeder − twins over the targets used, with its t-interval; None when no target
    is used), its forest rows, the targets in the table, those left out ("target (why)") and the
    targets used."""

    verdict: str
    estimate: Estimate | None
    drawn: tuple
    targets: int
    left_out: tuple[str, ...]
    used: int

    def compared(self) -> int:
        """The targets compared: those in the table less those left out."""
        return self.targets - len(self.left_out)


def sixteen_reading(paired) -> SixteenReading:
    """The sixteen-target comparison read from one `twins.paired` table (one row per target)."""
    verdict, estimate, drawn = sixteen_verdict(paired)
    left_out = tuple(f"{t} ({w})" for t, w in paired["why"].items() if w) if len(paired) else ()
    used = int(paired["used"].sum()) if len(paired) else 0
    return SixteenReading(verdict, estimate, tuple(drawn), len(paired), left_out, used)


@dataclass(frozen=True)
class SixteenTargetComparison:
    """The sixteen-target comparison that decides the claim: the `deciding` reading and, when the
    networks that never draw their label are scored 0 in it, the reading with them left out beside
    it (`excluded`) and how many networks never draw (`failed`)."""

    deciding: SixteenReading
    excluded: SixteenReading | None = None
    failed: int = 0


def sixteen_target_comparison(sixteen, sixteen_zero=None) -> SixteenTargetComparison:
    """The sixteen-target comparison from `twins.paired` tables: `sixteen` with the networks that
    never draw their label left out (`failed="excluded"`) and `sixteen_zero` with them scored 0
    (`failed="zero"`). The scored-0 reading decides when given (a network that does not draw its
    label scores 0: `volratio.report.evidence`), with the excluded reading beside it; else the
    excluded reading decides alone."""
    if sixteen_zero is None:
        return SixteenTargetComparison(sixteen_reading(sixteen))
    return SixteenTargetComparison(
        sixteen_reading(sixteen_zero), sixteen_reading(sixteen), _failed_networks(sixteen_zero)
    )


def picbreeder_vs_sgd_stored(
    table,
    detail: str = "",
    z: float = 1.96,
    scale: str = "reference",
    judge: str | None = None,
    dense=None,
    sixteen=None,
    sixteen_zero=None,
    anchor: str = "",
    stored: bool = True,
) -> tuple[Verdict, "object"]:
    """Claim "picbreeder-vs-sgd" from the stored EMC2 runs (`emc2_point` rows: `network`, `target`,
    `auc`, `auc_se`): per target, the Picbreeder network's AUC against FER's SGD network's, each with
    the interval its parameter subsample implies (± z·se; a point where every weight was scored),
    judged by `compare_estimates`; with `dense` (`emc2_dense` rows, one per network × target × seed)
    also against our dense networks' mean AUC over seeds (t-interval); the parts combined
    (`three_target_comparison`). Returns the recorded verdict (glued as
    `claim-picbreeder-vs-sgd-<scale>`) and the per-target table. `judge`: default the one the runs
    recorded (the tables' `judge` column). Without `sixteen` the deciding statistic is the
    three-target one: the Picbreeder AUC minus the other networks', averaged per target over its
    comparisons, with the t-interval over the targets; the per-comparison verdicts are sub-checks.

    `sixteen` (`volratio.experiments.twins.paired` under the same judge): the comparison on all
    sixteen Picbreeder targets, each Picbreeder network against dense twins of its own architecture
    trained with FER's recipe (`sixteen_target_comparison`). When given, it decides the verdict
    (`sixteen_verdict`: the paired difference across the targets and its interval; the targets are
    the independent units), and the three-target comparisons are reported beside it: sixteen paired
    targets test the claim, three do not. `sixteen` counts the networks that never draw their label
    as excluded (`twins.paired(…, failed="excluded")`); `sixteen_zero`, the same comparison with them
    scored 0 (`failed="zero"`), decides when given with `sixteen` — a network that does not draw its
    label scores 0 (`volratio.report.evidence`) — and the excluded reading is stated beside it
    (evidence `sixteen_excluded`), with a sentence that says whether the two verdicts differ.
    `anchor` names the image every network of a target was judged against (e.g. "target.png at
    64×64"); the sentence names it when given. `stored=False`: a live run's verdict (glued as
    `claim-picbreeder-vs-sgd`)."""
    judge = judge_of(table, judge)
    if dense is not None and judge_of(dense) not in (None, judge):
        raise VolratioError(f"the EMC2 runs were scored under {judge!r} but the dense runs under {judge_of(dense)!r}")
    if sixteen_zero is not None and sixteen is None:
        raise VolratioError(
            "sixteen_zero is the sixteen-target comparison with the networks that never draw their label scored 0; "
            "give it with sixteen (the same comparison with them left out, twins.paired(…, failed='excluded')), "
            "or leave both out"
        )
    three = three_target_comparison(table, dense, z)
    both = None if sixteen is None else sixteen_target_comparison(sixteen, sixteen_zero)
    verdict, _, decision = decided("picbreeder-vs-sgd", three.estimate if both is None else both.deciding.estimate)
    rows = _three_target_rows(three)
    v = record(
        "picbreeder-vs-sgd",
        verdict,
        _picbreeder_measured(three, both, judge, detail),
        {**decision, **_picbreeder_evidence(rows, both)},
        scale,
        judge,
        stored=stored,
        forest=_picbreeder_forest(three, both),
        headline=_picbreeder_headline(three, both, anchor),
    )
    return v, pd.DataFrame(rows).set_index("target") if rows else pd.DataFrame()


def _three_target_rows(three: ThreeTargetComparison) -> list[dict]:
    """The per-target table of the three-target comparison: each network's AUC and each comparison's
    verdict, one row per target (our dense networks' columns where the target has them)."""
    rows = []
    for t in three.targets:
        parts = t.parts()
        row = {
            "target": t.target,
            "Picbreeder AUC": _bracketed(t.picbreeder),
            "FER SGD AUC": _bracketed(t.sgd),
            "Picbreeder above FER SGD": parts[0],
        }
        if t.dense is not None:
            row[f"dense (ours) AUC, {t.seeds} seeds"] = _bracketed(t.dense)
            row["Picbreeder above dense (ours)"] = parts[1]
        rows.append(row)
    return rows


def _picbreeder_evidence(rows: list[dict], both: SixteenTargetComparison | None) -> dict:
    """The claim's evidence beside its statistic: the rows of the three-target table by target and,
    with the sixteen targets, their deciding reading first, its half-width beside the smallest
    effect of interest (`targets_power`) and the excluded reading beside a scored-0 one."""
    targets = {r["target"]: r for r in rows}
    if both is None:
        return targets
    d = both.deciding
    evidence = {"sixteen": {**_numbers(d.estimate), "left_out": list(d.left_out)}, **targets}
    if d.estimate is not None:  # the targets are the units: more twins per target do not narrow it
        evidence["power"] = targets_power("picbreeder-vs-sgd", d.estimate, d.used)
    if both.excluded is not None:
        x = both.excluded
        evidence["sixteen_excluded"] = {**_numbers(x.estimate), "verdict": x.verdict, "failed": both.failed}
    return evidence


def _numbers(e: Estimate | None) -> dict:
    """`e`'s mean, lo and hi as they are (each None without an estimate)."""
    return {"mean": getattr(e, "mean", None), "lo": getattr(e, "lo", None), "hi": getattr(e, "hi", None)}


def _picbreeder_forest(three: ThreeTargetComparison, both: SixteenTargetComparison | None) -> Forest | None:
    """The forest plot of what decides: the sixteen targets' paired differences against 0 when
    given, else each network's AUC on the three targets."""
    if both is not None:
        return forest_of(both.deciding.drawn, "EMC2 AUC difference, Picbreeder − twins", 0.0, "no difference")
    rows = []
    for t in three.targets:
        name = t.target.split(":", 1)[-1]
        rows += [(f"{name}: Picbreeder", t.picbreeder, 0), (f"{name}: FER SGD", t.sgd, 1)]
        if t.dense is not None:
            rows.append((f"{name}: dense (ours)", t.dense, 2))
    return forest_of(rows, "EMC2 AUC, mean and 95% interval")


def _picbreeder_measured(
    three: ThreeTargetComparison, both: SixteenTargetComparison | None, judge: str | None, detail: str
) -> str:
    """What was measured: the three targets' AUCs (`_three_target_measured`), preceded, when the
    sixteen targets have a statistic, by its numbers, the targets left out and the three-target
    comparisons combined."""
    measured = _three_target_measured(three, judge, detail)
    if both is None:
        return measured
    if both.deciding.estimate is None:  # the sixteen decide, and have no target with a statistic
        return (
            "The sixteen-target comparison, which decides, has no target with both sides measured"
            + (f" (left out: {', '.join(both.deciding.left_out)})" if both.deciding.left_out else "")
            + "; the three targets, beside it: "
            + measured
        )
    d, parts = both.deciding, three.parts()
    return (
        f"{d.compared()} Picbreeder targets, each Picbreeder network against dense twins of its own architecture "
        f"(FER's recipe): mean AUC difference Picbreeder − twins {_bracketed(d.estimate, '+.3f')}"
        + (f"; left out: {', '.join(d.left_out)}" if d.left_out else "")
        + f". FER's own SGD networks (three targets): {combine(parts) if parts else 'not measured'} — "
        + measured
    )


def _three_target_measured(three: ThreeTargetComparison, judge: str | None, detail: str) -> str:
    """Each target's AUCs under `judge` (Picbreeder, FER SGD, ours over seeds), naming the networks
    scored on a seeded subsample of their weights, then `detail`."""
    sub = ", ".join(f"{network} {target} {n:,} of {nonzero:,}" for network, target, n, nonzero in three.subsampled)
    return (
        f"EMC2 AUC ({judge_short(judge)}), every non-zero weight"
        + (f" except {sub} (seeded subsample)" if sub else "")
        + ": "
        + "; ".join(
            f"{t.target}: Picbreeder {_bracketed(t.picbreeder)}, FER SGD {_bracketed(t.sgd)}"
            + (f", dense (ours), {t.seeds} seeds {_bracketed(t.dense)}" if t.dense is not None else "")
            for t in three.targets
        )
        + (f" — {detail}" if detail else "")
    )


def _picbreeder_headline(three: ThreeTargetComparison, both: SixteenTargetComparison | None, anchor: str) -> str:
    """The sentence under the badge: the sixteen targets' statistic when it was measured (naming
    the `anchor` when given), else the three targets' (`_three_target_headline`); then, beside a
    scored-0 reading, the excluded reading and whether the two verdicts differ."""
    d = None if both is None else both.deciding
    if d is not None and d.estimate is not None:
        headline = (
            f"Over {d.compared()} Picbreeder targets, the Picbreeder network's EMC2 AUC minus its dense "
            f"twins' is {interval(d.estimate, '+.3f')} (the claim: above 0)"
            + (f"; every network of a target judged against one anchor, {anchor}." if anchor else ".")
        )
    else:  # also when the sixteen targets measured nothing: the three targets' sentence stands
        headline = _three_target_headline(three)
    if both is None or both.excluded is None:
        return headline
    x = both.excluded
    same = (
        "the same verdict"
        if x.verdict == d.verdict
        else f"the verdicts differ ({d.verdict} scored 0, {x.verdict} left out)"
    )
    return headline + (
        f" The {both.failed} networks that never draw their label score 0; left out instead: "
        + (interval(x.estimate, "+.3f") if x.estimate is not None else "not measured")
        + f" ({x.verdict}): {same}."
    )


def _three_target_headline(three: ThreeTargetComparison) -> str:
    """The three targets' statistic in a sentence, and in how many comparisons the Picbreeder
    network's interval lies above the other network's."""
    parts = three.parts()
    return (
        f"{CLAIMS['picbreeder-vs-sgd'].statistic.sentence(three.estimate)}. The Picbreeder network's EMC2 AUC "
        f"lies above the SGD-trained networks' in {sum(p == 'reproduced' for p in parts)} of {len(parts)} "
        "comparisons."
    )


def rho_concentrated(checks, fits, detail: str = "", scale: str = "quick", stored: bool = False) -> Verdict:
    """Claim "rho-concentrated" from the volume-ratio chapter's checks and decay fits: `checks` is a
    list of `(target, check, holds)` (support, peak at (W_min, L*), decay along W and along L for
    each Boolean target) and `fits` `{target: {"W": fit, "L": fit, …}}` from
    `volratio.rho.decay_fit`. Deciding statistic: the slowest decay, the fitted rate whose interval
    reaches lowest, claimed above 0; the checks are sub-checks. The forest shows each fitted decay
    rate against 0 (no decay)."""
    rows, rates = [], []
    for t, by_axis in fits.items():
        name = t.split(":depth")[0]
        for axis in ("W", "L"):
            lam = by_axis.get(axis, {}).get(f"lambda_{axis}")
            if lam is not None:
                e = Estimate(lam["rate"], lam["lo"], lam["hi"])
                rows.append((f"{name}: λ_{axis}", e, 0 if axis == "W" else 1))
                rates.append((lam["lo"], name, axis, e))
    held = sum(bool(ok) for *_, ok in checks)
    _, name, axis, slowest = min(rates, key=lambda r: r[0]) if rates else (None, "", "", None)
    verdict, stated, decision = decided("rho-concentrated", slowest, ".2f")
    headline = (stated + (f", {name} along {axis}" if rates else "") + f". {held} of {len(checks)} checks "
                f"(support, peak, decay) hold on {len(fits)} Boolean targets")  # fmt: skip
    return record(
        "rho-concentrated",
        verdict,
        "; ".join(f"{t}: {c} {'holds' if ok else 'fails'}" for t, c, ok in checks) + (f" ({detail})" if detail else ""),
        {**decision, **{f"{t} | {c}": bool(ok) for t, c, ok in checks}},
        scale,
        None,
        stored,
        forest_of(rows, "decay rate λ of ρ per unit of width (W) or depth (L), 95% interval", 0.0, "no decay"),
        headline + ".",
    )
