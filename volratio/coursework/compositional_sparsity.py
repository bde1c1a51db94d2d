"""Checks for the exercises of "Compositional sparsity" (book/compositional_sparsity.md): the ASAP
layering of a graph, and the depth L* and width W_min that the proposition "Depth and width of a
layerized DAG" (thm-layerized-dag) predicts for a planted target (`volratio.data.graph`,
`volratio.data.targets`)."""

from __future__ import annotations

from ..data import picbreeder
from ..data.targets import PlantedTarget, get_target
from .check import BadAnswer, Check, CourseworkError, answered, checker, number

__all__ = ["check_dag_shape", "check_layers"]


def _layer_cases(seed: int):
    """Graphs to test a layering function on: planted DAGs (always) and the skull genome (if present)."""
    cases = [
        (f"planted:{seed + i}:depth={d}", get_target(f"planted:{seed + i}:depth={d}").graph)
        for i, d in enumerate((2, 3, 5))
    ]
    if picbreeder.available():
        cases.append(("picbreeder:skull", picbreeder.genome("skull")))
    return cases


def _shortest_layers(g) -> dict:
    preds = g.predecessors()
    layer = {}
    for k in g.topological_order():
        layer[k] = 0 if g.nodes[k].kind == "in" else 1 + min((layer[s] for s, _ in preds[k]), default=0)
    return layer


@checker
def check_layers(fn, seed: int = 0) -> Check:
    """`fn(graph) -> {node: layer}`: inputs at layer 0, every other node at 1 + the longest path from
    the inputs (the ASAP layering of `Graph.layers`). Tried on planted DAGs and, when the data is
    there, the skull genome."""
    answered(fn, "your layering function")
    if not callable(fn):
        raise BadAnswer(f"give a function graph -> dict, got {type(fn).__name__}")
    for label, g in _layer_cases(seed):
        ref = g.layers("asap")
        try:
            got = fn(g)
        except NotImplementedError:
            return Check("check_layers", False, "your function is not implemented yet (it raised NotImplementedError)")
        except Exception as e:  # noqa: BLE001 — the student's code failed: say where
            return Check("check_layers", False, f"your function raised {type(e).__name__}: {e} (on {label})")
        if not isinstance(got, dict):
            return Check(
                "check_layers", False, f"your function returned {type(got).__name__}; return a dict node → layer"
            )
        missing = [k for k in ref if k not in got]
        if missing:
            return Check(
                "check_layers",
                False,
                f"on {label}: no layer for node(s) {missing[:5]} — every node needs one, inputs too",
            )
        try:
            got = {k: int(got[k]) for k in ref}
        except (TypeError, ValueError):
            return Check(
                "check_layers", False, f"on {label}: layers should be integers, got e.g. {next(iter(got.values()))!r}"
            )
        wrong = [k for k in g.topological_order() if got[k] != ref[k]]
        if wrong:
            k = wrong[0]
            if all(got[j] == ref[j] + 1 for j in ref):
                why = "every layer is one too high: inputs are at layer 0"
            elif all(got[j] == v for j, v in _shortest_layers(g).items()):
                why = "you took the shortest path from the inputs (min over predecessors); a node must come after *all* its inputs: take the max"
            else:
                preds = [s for s, _ in g.predecessors()[k]]
                why = f"its predecessors {preds[:4]} sit at layers {[ref[s] for s in preds[:4]]}"
            return Check(
                "check_layers",
                False,
                f"on {label}: node {k} got layer {got[k]}, expected {ref[k]} — {why}",
                ref[k],
                got[k],
            )
    return Check("check_layers", True, "your layering matches Graph.layers() on every test graph")


def _planted(target):
    t = get_target(target) if isinstance(target, str) else target
    if not isinstance(t, PlantedTarget):
        raise CourseworkError(f"give a planted target (PlantedTarget or 'planted:SEED:…'), got {type(t).__name__}")
    return t


@checker
def check_dag_shape(target, depth, width) -> Check:
    """L* (links on the longest input → output path) and W_min (the largest level |V_j|) of a planted
    target's DAG — what proposition thm-layerized-dag says the minimal layerization has — checked
    against the library's layerization."""
    t = _planted(target)
    g = t.graph
    lay = g.layers("asap")
    levels = [sum(1 for k, n in g.nodes.items() if n.kind != "in" and lay[k] == j) for j in range(1, t.depth + 1)]
    ref = {"depth": g.depth(), "width": max(levels)}
    got = {"depth": int(number(depth, "L*")), "width": int(number(width, "W_min"))}
    problems = []
    if got["depth"] != ref["depth"]:
        if got["depth"] == ref["depth"] + 1:
            problems.append(
                f"L* = {got['depth']} counts the inputs as a level; L* counts *links* on the longest "
                f"path, i.e. the hidden layers ({ref['depth']})"
            )
        elif got["depth"] == ref["depth"] - 1:
            problems.append(
                f"L* = {got['depth']} leaves out the output node's level; it is a layer too ({ref['depth']})"
            )
        else:
            problems.append(
                f"L* = {got['depth']} ≠ {ref['depth']} — the longest path from an input to the output, in links"
            )
    if got["width"] != ref["width"]:
        n_hidden = sum(levels)
        if got["width"] == n_hidden:
            problems.append(
                f"W_min = {got['width']} is the number of primitives; the width is the largest level "
                f"(levels {levels}), since the levels sit in different layers"
            )
        elif got["width"] == t.width and t.width != ref["width"]:
            problems.append(
                f"W_min = {got['width']} is the `width` cap of PlantedTarget; levels near the output are "
                f"limited by the arity (each node reads {t.arity}), so the levels are {levels}"
            )
        elif got["width"] == 4:
            problems.append(
                f"W_min = 4 is the number of inputs (x, y, d, bias); inputs need no units — levels are {levels}"
            )
        else:
            problems.append(
                f"W_min = {got['width']} ≠ {ref['width']} — count the nodes at each distance from the inputs "
                "(longest path), and take the largest count"
            )
    if problems:
        return Check("check_dag_shape", False, "; ".join(problems), ref, got)
    net = g.layerize(ink_as_hsv=False).net
    return Check(
        "check_dag_shape",
        True,
        f"{t.spec}: L* = {ref['depth']}, levels {levels}, W_min = {ref['width']} — the library's layerization "
        f"has depth {net.depth} and width {net.width}",
        ref,
        got,
    )
