"""A claim's verdict as the book shows it: the badge, its sentence, its forest plot, and the glue.

`Verdict` is what a decider (`volratio.report.deciders`) returns; its `html`, `badge`, `line` and
`forest_html` are the pieces the claims page pastes. When a chapter runs, `record(key, …)` *glues*
the verdict into that chapter's notebook
(myst-nb `glue`); the front page (book/intro.md) and the page "The paper's claims, tested"
(book/claims.md) paste the pieces with `{glue}` from the chapter. Sphinx resolves such cross-page
references after every page has been executed, so no page depends on the order in which pages are
built, and no file outside the build carries the verdicts.

What one verdict glues (`<name>` is `claim-<key>` for the live quick-scale run, and
`claim-<key>-<scale>` for a verdict read from stored results, e.g. `claim-depth-optimum-reference`)::

    <name>          the whole verdict: badge, scale and judge, forest plot, what was measured (folded)
    <name>-badge    the coloured badge alone (reproduced / not reproduced / inconclusive / contradicted / not measured)
    <name>-word     the verdict word alone (the front page's fixed sentences paste it with {glue})
    <name>-line     one sentence: the deciding number and its interval
    <name>-forest   the forest plot of the deciding effect and the claim's threshold (SVG)
    <name>-power    the interval's full width beside the smallest effect of interest m, and the
                    targets and networks per cell that would bring it under m (`power_line`)

and `by_judge` / `single_judge` glue `claim-<key>-judges` (each judge's verdict, one line),
`claim-<key>-robust` (robust to the judge or not, a few words), `claim-<key>-robust-word` and
`claim-<key>-judge-caveat` (the front page's words after a verdict: `judge_caveat`);
`delta_reading` glues `claim-<key>-delta`, the verdict with δ on each weight's scale beside the
paper's δ, and `claim-<key>-delta-word` ("same", "differs", "not scored"). The claims page's
robustness line pastes the two words (and, for the depth claim, the judge-free verdict's).
"""

from __future__ import annotations

import contextlib
import contextvars
import html
import math
from dataclasses import dataclass

from ..errors import VolratioError
from ..judges import JUDGES, SELF_ANCHORED, judge_text
from ..util.verdicts import VERDICTS, Estimate
from .catalogue import CLAIMS, NO_JUDGE
from .forest import Forest, Row


@dataclass(frozen=True)
class Verdict:
    key: str  # the claim
    verdict: str  # one of VERDICTS
    measured: str  # what was measured, in words and numbers
    evidence: dict  # the numbers behind it
    scale: str  # the scale of the run that measured it
    judge: str | None = None  # the EMC2 judge the measurement used (None: the claim involves no judge)
    forest: Forest | None = None  # the deciding effect and the claim's threshold, drawn under the badge
    headline: str = ""  # one sentence with the deciding number and its interval ("": `measured` stands in)

    def badge(self) -> str:
        """The verdict as a coloured badge (class `verdict-badge`, which the browser check counts)."""
        colour = BADGE_COLOURS[self.verdict]
        return (
            f'<span class="verdict-badge" style="background:{colour};color:#fff;padding:1px 7px;border-radius:4px;'
            f'white-space:nowrap"><b>{html.escape(self.verdict)}</b></span>'
        )

    def line(self) -> str:
        """The one sentence the claims page shows beside the badge."""
        return self.headline or self.measured

    def forest_html(self) -> str:
        """The forest plot as inline SVG, or a short note when the verdict has none."""
        return self.forest.svg() if self.forest is not None else "<small>no single effect to draw</small>"

    def html(self) -> str:
        """The verdict as the claims page shows it: a coloured badge, the scale and judge, the forest
        plot of what decided it (when there is one), and what was measured folded under it (a
        `<details>` a reader opens)."""
        if self.judge is None and self.key in NO_JUDGE:
            judge = "no judge"
        else:
            judge = judge_long(self.judge)
        return (
            f"{self.badge()} <small>{html.escape(self.scale)} scale; {html.escape(judge)}</small>"
            + (f"<div>{self.forest.svg()}</div>" if self.forest is not None else "")
            + f"<details><summary>what was measured</summary>{html.escape(self.measured)}</details>"
        )


BADGE_COLOURS = {  # verdict -> badge colour (Okabe–Ito, colour-blind-safe; dark enough for white text)
    "reproduced": "#0072b2",  # blue
    "negligible": "#00705a",  # a darkened bluish green
    "inconclusive": "#d55e00",  # vermilion
    "borderline": "#8a6d00",  # a darkened yellow
    "not reproduced": "#cc79a7",  # reddish purple
    "contradicted": "#000000",
    "not measured": "#777777",
}


# claims that can be measured without an EMC2 judge (the predictor: on true depths; on measured sweet
# spots it names the judge that found them)


def judge_long(judge: str | None) -> str:
    """How the claims page names `judge` beside a verdict's scale (`volratio.judges.JudgeText.long`)."""
    t = judge_text(judge)
    return t.long if t is not None else (judge or "judge not recorded")


def judge_short(judge: str | None) -> str:
    """How what was measured names `judge` (`volratio.judges.JudgeText.short`)."""
    t = judge_text(judge)
    return (t.short if t is not None else "") or judge or "judge not recorded"


def judge_brief(judge: str) -> str:
    """How the verdict cell that compares judges names `judge` (`volratio.judges.JudgeText.brief`)."""
    t = judge_text(judge)
    return (t.brief if t is not None else "") or judge


def judge_word(judge: str) -> str:
    """The deciding judge in a word or two, for the claims page's line under a badge ("judge: gated
    default"): `judge_brief` without its trailing " judge"."""
    return judge_brief(judge).removesuffix(" judge")


def forest_of(rows, xlabel: str, threshold: float | None = None, threshold_label: str = "") -> Forest | None:
    """A `Forest` from `(label, Estimate, group)` rows; an interval that is not finite (one seed)
    is drawn as its point, a row without a finite estimate is left out; None when none is left."""
    drawn = []
    for label, e, group in rows:
        if not math.isfinite(e.mean):
            continue
        ok = math.isfinite(e.lo) and math.isfinite(e.hi) and e.lo <= e.mean <= e.hi
        drawn.append(Row(label, float(e.mean), float(e.lo if ok else e.mean), float(e.hi if ok else e.mean), group))
    return Forest(tuple(drawn), xlabel, threshold, threshold_label) if drawn else None


def record(
    key: str,
    verdict: str,
    measured: str,
    evidence: dict | None = None,
    scale: str = "quick",
    judge: str | None = None,
    stored: bool = False,
    forest: Forest | None = None,
    headline: str = "",
) -> Verdict:
    """The verdict on claim `key`, checked, and — when called in a notebook that myst-nb executes —
    glued as `claim-<key>` (HTML) for the claims page to paste. `judge`: which EMC2 judge the
    measurement used (None for claims that involve no judge). `stored=True`: a verdict read from the
    committed results of a scale (`results/<scale>/`), glued as `claim-<key>-<scale>` beside the
    live one. `forest`: the numbers it was decided on, drawn (`volratio.report.forest`); `headline`: one
    sentence with the deciding number and its interval. Besides the whole verdict, its badge, its
    sentence and its forest plot are glued on their own (see the module docstring). Returns the `Verdict`."""
    if key not in CLAIMS:
        raise VolratioError(f"unknown claim {key!r}; known: {', '.join(CLAIMS)}")
    if verdict not in VERDICTS:
        raise VolratioError(f"verdict must be one of {VERDICTS}, got {verdict!r}")
    v = Verdict(key, verdict, measured, dict(evidence or {}), scale, judge, forest, headline)
    if _in_kernel() and not _UNGLUED.get():
        # book-only: IPython and myst-nb come with the [book] extra, and only a notebook kernel gets here
        from IPython.display import HTML
        from myst_nb import glue

        name = f"claim-{key}-{scale}" if stored else f"claim-{key}"
        glue(name, HTML(v.html()), display=False)
        glue(f"{name}-badge", HTML(v.badge()), display=False)
        glue(f"{name}-word", HTML(html.escape(v.verdict)), display=False)  # the word alone, for a fixed sentence
        glue(f"{name}-line", HTML(html.escape(v.line())), display=False)
        glue(f"{name}-forest", HTML(v.forest_html()), display=False)
        glue(f"{name}-power", HTML(html.escape(power_line(v))), display=False)
        if judge is not None:  # the judge that decided it, in a word or two
            glue(f"{name}-judge", HTML(html.escape(judge_word(judge))), display=False)
    return v


def power_line(v: Verdict) -> str:
    """How far the verdict's interval is from deciding: the statistic's full width beside the claim's
    smallest effect of interest m and the targets and networks per cell that would bring it under m
    (`evidence["power"]`, from `volratio.report.evidence`), else the full width alone."""
    power = v.evidence.get("power") or {}
    if power.get("text"):
        return power["text"]
    st = v.evidence.get("statistic") or {}
    m = CLAIMS[v.key].statistic.smallest
    if st.get("mean") is None:
        return f"not measured; m = {m:g}"
    width = st["hi"] - st["lo"]
    if not math.isfinite(width):
        return f"no interval; m = {m:g}"
    return f"full width {width:.3g} against m = {m:g}" + (" (an exact quantity)" if width == 0 else "")


_UNGLUED: contextvars.ContextVar = contextvars.ContextVar("volratio_claims_unglued", default=False)


@contextlib.contextmanager
def unglued():
    """Within this block verdicts are computed but nothing is glued — neither verdicts nor the judge
    and δ rows (`by_judge`, `glue_judges`, `delta_reading`): the same claim under another judge, or
    read on networks that do not decide it, must not replace the claims page's verdict. `by_judge`
    uses it for the verdicts it compares."""
    token = _UNGLUED.set(True)
    try:
        yield
    finally:
        _UNGLUED.reset(token)


def by_judge(key: str, decide, judges, scale: str = "reference", missing=(), on: str = "") -> dict:
    """The verdict on claim `key` under each of `judges`: `decide(judge) -> Verdict` (computed from
    the same stored networks, scored under that judge; not glued), and — in a notebook — the
    comparison glued as `claim-<key>-judges` (`judge_comparison`; `missing`: judges asked for whose
    scores are not stored yet, named as such; `on`: what the judges were compared on, e.g. "every
    non-zero weight", said after the line). Returns `{judge: Verdict}`."""
    with unglued():
        out = {j: decide(j) for j in judges}
    glue_judges(key, judge_comparison(out, missing, on), robustness(out), robust_word(out))
    return out


def glue_judges(key: str, line: str, short: str, word: str = "one judge") -> str:
    """Glue `line` as `claim-<key>-judges` (each judge's verdict), `short` as `claim-<key>-robust`
    (a few words on the judge) and `word` as `claim-<key>-robust-word` (one, for the claims page's
    robustness line: `robust_word`) in a notebook. Returns `line`."""
    if key not in CLAIMS:
        raise VolratioError(f"unknown claim {key!r}; known: {', '.join(CLAIMS)}")
    if _in_kernel() and not _UNGLUED.get():
        # book-only: IPython and myst-nb come with the [book] extra, and only a notebook kernel gets here
        from IPython.display import HTML
        from myst_nb import glue

        glue(f"claim-{key}-judges", HTML(html.escape(line)), display=False)
        glue(f"claim-{key}-robust", HTML(html.escape(short)), display=False)
        glue(f"claim-{key}-robust-word", HTML(html.escape(word)), display=False)
        glue(f"claim-{key}-judge-caveat", HTML(html.escape(judge_caveat(word))), display=False)
    return line


def judge_caveat(word: str) -> str:
    """The front page's few words after a verdict, from its robustness word (`robust_word`):
    "depends on the judge", "robust to the judge", or "one judge"."""
    return {"depends": "depends on the judge", "robust": "robust to the judge"}.get(word, "one judge")


def glue_line(name: str, line: str) -> str:
    """Glue one sentence as `name` (escaped HTML, so other pages can paste it with
    ``{glue}`page.md::name` ``) in a notebook. Returns `line`."""
    if _in_kernel():
        # book-only: IPython and myst-nb come with the [book] extra, and only a notebook kernel gets here
        from IPython.display import HTML
        from myst_nb import glue

        glue(name, HTML(html.escape(line)), display=False)
    return line


def judge_free_reading(key: str, verdict: str, what: str, estimate: Estimate, chance: dict) -> str:
    """Glue claim `key`'s judge-free reading on planted targets for the claims page: its verdict word
    (`claim-<key>-judge-free-word`) and one sentence (`claim-<key>-judge-free`): the statistic `what`
    with its interval against the claim's m, and the same statistic at the score's two chance levels
    (`chance`: "chance_other", against other targets' primitives; "chance_init", at initialisation).
    Glued even inside `unglued()`: it is its own instrument, never the deciding verdict."""
    line = (
        f"{verdict} (judge-free, planted targets: {what} = {interval(estimate, '+.3f')}, m = "
        f"{CLAIMS[key].statistic.smallest:g}; chance level {interval(chance['chance_other'], '+.3f')} against other "
        f"targets' primitives, {interval(chance['chance_init'], '+.3f')} at initialisation)"
    )
    glue_line(f"claim-{key}-judge-free-word", verdict)
    return glue_line(f"claim-{key}-judge-free", line)


def delta_reading(key: str, deciding: "Verdict | None", scaled: "Verdict | None" = None, command: str = "") -> str:
    """The claims page's robustness row for the reading of δ: the verdict on claim `key` with every
    weight moved by δ × the std of its layer (`scaled`, decided by the same rule from the same
    networks rescored under `volratio.emc2.EMC2Config(delta_scale="layer_std")`; not glued) beside
    the deciding verdict under the paper's w ← w + δ (`deciding`). Without `scaled` the line says
    that the networks are not rescored yet and names `command`, the rescore that scores them; when
    `scaled` was judged by another judge than `deciding`, the line names it.
    Glued as `claim-<key>-delta` in a notebook; returns the line."""
    if key not in CLAIMS:
        raise VolratioError(f"unknown claim {key!r}; known: {', '.join(CLAIMS)}")
    if scaled is None:
        line = "δ on each weight's scale: not scored yet" + (f" (`{command}`)" if command else "")
        word = "not scored"
    else:
        same = deciding is not None and scaled.verdict == deciding.verdict
        st = scaled.evidence.get("statistic") or {}
        number = f", {interval(Estimate(st['mean'], st['lo'], st['hi']), '+.3f')}" if st.get("mean") is not None else ""
        other = deciding is not None and scaled.judge != deciding.judge  # rescored under another judge only
        under = f" (under the {judge_short(scaled.judge)}, not the deciding judge)" if other else ""
        line = f"δ × its layer's std{under}: {scaled.verdict}{number} — " + (
            "the same verdict as the paper's δ" if same else "differs from the paper's δ"
        )
        word = "same" if same else "differs"
    if _in_kernel() and not _UNGLUED.get():
        # book-only: IPython and myst-nb come with the [book] extra, and only a notebook kernel gets here
        from IPython.display import HTML
        from myst_nb import glue

        glue(f"claim-{key}-delta", HTML(html.escape(line)), display=False)
        glue(f"claim-{key}-delta-word", HTML(html.escape(word)), display=False)  # the claims page's one word
    return line


def single_judge(key: str, judge: str) -> str:
    """For a claim whose stored runs were scored under one judge only (no stored networks to judge
    again): the line that says so, glued as `claim-<key>-judges`."""
    return glue_judges(
        key,
        f"scored under one judge only ({judge_long(judge)}); robustness to the judge not measured",
        "robustness to the judge not measured (one judge)",
    )


# the label-anchored judges a claim's verdict must not depend on (`volratio.judges`): RMSE, SSIM, the
# gated rule and its cross-fitted fit
LABEL_ANCHORED = tuple(j for j in JUDGES if j.startswith("anchored") and j != "anchored-pooled")


def robust_to_judge(verdicts: dict) -> bool:
    """True when every label-anchored judge among `verdicts` (`{judge: Verdict}`) gives the same
    verdict. The self-anchored stability measures (`volratio.judges.SELF_ANCHORED`) answer another
    question (is the image stable, not is it the label), so they are reported beside, not counted."""
    asked = {v.verdict for j, v in verdicts.items() if j not in SELF_ANCHORED}
    return len(asked) <= 1


def robust_word(verdicts: dict) -> str:
    """One word for the claims page's robustness line: "robust" (every label-anchored judge among
    `verdicts` agrees), "depends" (they differ) or "one judge" (fewer than two were asked)."""
    if sum(j not in SELF_ANCHORED for j in verdicts) < 2:
        return "one judge"
    return "robust" if robust_to_judge(verdicts) else "depends"


def _not_stored(verdicts: dict) -> str:
    """ "; not stored for this claim: …" naming the label-anchored judges without a verdict, or ""."""
    gone = [judge_brief(j) for j in LABEL_ANCHORED if j not in verdicts]
    return f"; not stored for this claim: {', '.join(gone)}" if gone else ""


def robustness(verdicts: dict) -> str:
    """A few words for the claims page: is the verdict the same under every label-anchored judge
    stored for the claim among `verdicts` (`{judge: Verdict}`)? Names the judges' verdicts when they
    differ, and the label-anchored judges (`LABEL_ANCHORED`) not stored for the claim."""
    asked = {j: v for j, v in verdicts.items() if j not in SELF_ANCHORED}
    if len(asked) < 2:
        return "robustness to the judge not measured (one judge" + _not_stored(verdicts) + ")"
    if robust_to_judge(verdicts):
        return f"robust to the judge ({len(asked)} judges agree{_not_stored(verdicts)})"
    return "depends on the judge (" + "; ".join(f"{judge_brief(j)}: {v.verdict}" for j, v in asked.items()) + ")"


def judge_comparison(verdicts: dict, missing=(), on: str = "") -> str:
    """One line: each judge's verdict, then whether the verdict is robust to the judge (among the
    label-anchored judges measured; `missing` judges are named as not scored yet, and so are the
    label-anchored judges of `LABEL_ANCHORED` not stored for the claim); `on`: what every judge
    scored, e.g. "the runs' seeded sample of weights", said at the end ("(on …)")."""
    parts = [f"{judge_short(j)}: {v.verdict}" for j, v in verdicts.items()]
    parts += [f"{judge_short(j)}: not scored yet" for j in missing]
    parts += [f"{judge_short(j)}: not stored" for j in LABEL_ANCHORED if j not in verdicts and j not in missing]
    asked = [j for j in verdicts if j not in SELF_ANCHORED]
    if len(asked) < 2:
        end = "robustness to the judge not measured (one label-anchored judge)"
    else:
        end = "robust to the judge" if robust_to_judge(verdicts) else "depends on the judge"
    return f"{'; '.join(parts)} — {end}" + (f" (on {on})" if on else "")


def _in_kernel() -> bool:
    try:
        from IPython import get_ipython  # book-only: the [book] extra; without it there is no kernel
    except ImportError:
        return False
    return get_ipython() is not None and hasattr(get_ipython(), "kernel")


def interval(e: Estimate, fmt: str = ".3f") -> str:
    """`e` as "mean [lo, hi]" (the mean alone when the interval is not finite)."""
    if not (math.isfinite(e.lo) and math.isfinite(e.hi)):
        return format(e.mean, fmt)
    return f"{e.mean:{fmt}} [{e.lo:{fmt}}, {e.hi:{fmt}}]"
