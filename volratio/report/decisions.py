"""Where each claim stands: the deciding word beside the word under the earliest rule committed
before its data, and how many targets and networks decide it.

`table()` reads each claim decided from stored networks under the deciding reading (the default
judge, absolute δ: `volratio.report.readings`) and lists its word, the rule committed before its
data (`volratio.report.provenance`: a claim whose rule came after its data reads "none committed
before its data") with that rule's word, and the targets and networks per cell behind it. The word
under an earlier rule is computed, never typed: the same stored networks read with that rule's
algebra (`volratio.util.verdicts.bound_verdict_on`, reproduced as soon as the interval clears t, which
was the rule of commit 49ba7d0c), its estimator (targets held fixed: `evidence.targets_held_fixed`),
its statistic (the score alone for Muon against Adam) and the default judge of its day ("anchored").
The rule for networks that do not draw their label is today's in both readings.

`deciding(key)` and `under_judge(key, judge)` are the verdicts `volratio.report.provenance.directions`
compares with the readings its choices replaced. The claims of the volume ratio and of the Welch bound
are decided in their chapters from computations, not from stored networks of targets, and are not
read here.

Chapter: "The paper's claims, tested" (book/claims.md).
"""

from __future__ import annotations

from functools import cache

import pandas as pd

from ..errors import VolratioError
from ..judges import DEFAULT_JUDGE
from ..util.verdicts import VERDICTS, Estimate, bound_verdict_on
from .catalogue import CLAIMS
from .evidence import targets_held_fixed
from .provenance import CHOICES, CLAIM_RULE_COMMITS
from .readings import connectivity, depth, emc2, optimizers, scenes
from .render import Verdict, unglued

FIRST_JUDGE = "anchored"  # the default judge until commit b34c7426
READERS = {  # claim -> its deciding reading under a judge
    "picbreeder-vs-sgd": lambda judge: emc2.verdict(judge)[0],
    "sp-vs-pruners": lambda judge: connectivity.verdict(judge)[0],
    "depth-optimum": lambda judge: depth.optimum(judge)[0],
    "png-ratio-linear": lambda judge: depth.predictor(judge)[0],
    "muon-above-adam": lambda judge: optimizers.matched(judge),
    "scenes-weaker": lambda judge: scenes.verdict(judge),
}


@cache
def under_judge(key: str, judge: str) -> Verdict:
    """Claim `key` under `judge` on its deciding reading (computed once per process, never glued)."""
    if key not in READERS:
        raise VolratioError(f"claim {key!r} is not read from stored networks here; read: {', '.join(READERS)}")
    with unglued():
        return READERS[key](judge)


def deciding(key: str) -> Verdict:
    """Claim `key`'s deciding verdict (the default judge)."""
    return under_judge(key, DEFAULT_JUDGE)


@cache
def earliest(key: str) -> tuple[str, str]:
    """`(commit, word)`: the earliest rule committed before claim `key`'s data and the word it gives,
    or `("none committed before its data", "")`."""
    if key not in CLAIM_RULE_COMMITS:
        return "none committed before its data", ""
    with unglued(), targets_held_fixed():
        v = READERS[key](FIRST_JUDGE)
    st = CLAIMS[key].statistic
    e = Estimate(*(v.evidence["statistic"][k] for k in ("mean", "lo", "hi")))
    return CLAIM_RULE_COMMITS[key][0], bound_verdict_on(e, st.threshold, st.claimed, st.smallest)


def _counts(key: str, v: Verdict) -> tuple[int | None, float | None]:
    """The targets and networks per cell behind a verdict: from its power entry where its interval
    is pooled; the sixteen Picbreeder targets' twins per target and the scenes' seeds per depth from
    the stored networks, whose t-intervals over the targets need no count of networks."""
    power = v.evidence.get("power") or {}
    targets, networks = power.get("targets", v.evidence.get("scenes")), power.get("networks_per_cell")
    if key == "picbreeder-vs-sgd":
        nets = emc2.sixteen(DEFAULT_JUDGE)
        networks = float(nets[nets.network == "twin"].groupby("target").size().mean())
    elif key == "scenes-weaker":
        curves, _ = scenes.sparse_scenes()
        networks = float(sum(c.score.shape[1] for c in curves.values()) / len(curves))
    return targets, networks


def table() -> pd.DataFrame:
    """One row per claim read from stored networks: the deciding word, the earliest rule committed
    before its data with its word, and the targets and networks per cell that decide it (for the
    sixteen Picbreeder targets, the dense twins of each; for the scenes, the seeds of each depth)."""
    rows = []
    for key in READERS:
        v = deciding(key)
        commit, word = earliest(key)
        targets, networks = _counts(key, v)
        rows.append({"claim": key, "deciding word": v.verdict, "earliest rule before its data": commit,
                     "its word": word or "—", "targets": targets, "networks per cell": networks})  # fmt: skip
    return pd.DataFrame(rows).set_index("claim")


def _estimate(numbers: dict) -> Estimate:
    return Estimate(*(numbers[k] for k in ("mean", "lo", "hi")))


def _decide(key: str, numbers: dict) -> str:
    return CLAIMS[key].statistic.decide(_estimate(numbers))


def _left_out(key: str) -> str:
    """The deciding reading with the networks that do not draw their label left out, not scored 0."""
    ev = deciding(key).evidence
    entry = ev.get("sixteen_excluded") or ev.get("left out instead")
    return entry["verdict"] if entry else deciding(key).verdict  # none to leave out: the same networks


@cache
def _targets_fixed(key: str) -> str:
    with unglued(), targets_held_fixed():
        return READERS[key](DEFAULT_JUDGE).verdict


def _earlier_rule(key: str) -> str:
    """The deciding statistic (for Muon, the score: its loss half was no statistic then) under the rule
    before m was weighed: reproduced once the interval clears t, no borderline."""
    v, st = deciding(key), CLAIMS[key].statistic
    return bound_verdict_on(_estimate(v.evidence["statistic"]), st.threshold, st.claimed, st.smallest)


ALTERNATIVES = {  # the reading a choice replaced -> claim's verdict under it
    "earlier default judge": lambda key: under_judge(key, FIRST_JUDGE).verdict,
    "left out": _left_out,
    "against every other depth": lambda key: _decide(key, deciding(key).evidence["against every other depth"]),
    "targets held fixed": _targets_fixed,
    "earlier rule": _earlier_rule,
    "score alone": lambda key: deciding(key).evidence["score verdict"],
    "peak − rest": lambda key: deciding(key).evidence["peak − rest (sub-check)"]["verdict"],
}


def direction(chosen: str, instead: str) -> str:
    """Which way a choice moved a verdict, from the word it gave (`chosen`) and the word of the reading
    it replaced (`instead`): toward the paper when its word is the more favourable to the claim
    (`VERDICTS` order), away from it when less, neither when the same."""
    if chosen == instead:
        return "neither"
    return "toward the paper" if VERDICTS.index(chosen) < VERDICTS.index(instead) else "away from the paper"


def directions() -> pd.DataFrame:
    """One row per choice made after the data (`provenance.CHOICES`) and claim it touched: the
    deciding word, the word under the reading it replaced, and the direction the choice moved it;
    a choice with no other reading to compare reads "no other reading computed"."""
    rows = []
    for i, c in enumerate(CHOICES, 1):
        if not c.instead:
            rows.append({"choice": i, "claim": "—", "replaced": "—", "deciding word": "—", "instead": "—",
                         "direction": "no other reading computed"})  # fmt: skip
            continue
        for key in c.claims:
            chosen, instead = deciding(key).verdict, ALTERNATIVES[c.instead](key)
            rows.append({"choice": i, "claim": key, "replaced": c.instead, "deciding word": chosen, "instead": instead,
                         "direction": direction(chosen, instead)})  # fmt: skip
    return pd.DataFrame(rows)
