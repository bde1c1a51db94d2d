"""The package's import graph (DESIGN §2): layers read from the tree, no upward import, no cycle.

The graph is built from the source with `ast`, function-body imports included (an import inside a
function is as much a dependency as one at the top; it only runs later). An edge `a -> b` means
module `a` imports module `b` (`from .b import x`, `from . import b`, `import volratio.b`).

Layers, bottom to top; a module may import only from its own layer and the layers below it:

    base        volratio/__init__.py, errors.py
    util        volratio/util/
    nets        volratio/nets.py
    data        volratio/data/
    train       volratio/train/ (the training loop and its paths: the eager step, the fast step, the
                fused C++ kernel; the sharpness of a minimum)
    welch       volratio/welch/ (bounds, frames, the interference of a network's features, the
                superposition toy model: only errors, util and nets below it)
    middle      the modules not yet moved into a layer subpackage (`MIDDLE`, below)
    report      volratio/report/ (claims and their verdicts, forest plots, figures, the weight
                explorer: what the book shows, above every experiment)
    front       volratio/cli.py, __main__.py, commands/, coursework/

`MIDDLE` is the part of the package that is not yet a layer: the flat modules that still wait for
their subpackages (emc2/, depth/, runs/) and the subpackages already made that do
not form a layer of their own yet (prune/, judges/, rho/, experiments/; judges/ lies on a cycle with
emc2 through its calibration and verdict-set modules; rho/ is on no cycle, but its basin model
trains networks (train) and scores them with EMC2 (emc2, still in the middle)). Its import cycles are recorded in
`MIDDLE_CYCLES` so that the record stays true: a new cycle fails, and so does a cycle that is gone
but still recorded (delete it from the record). No cycle may touch a module outside `MIDDLE`.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[1] / "volratio"

LAYERS = ["base", "util", "nets", "data", "train", "welch", "middle", "report", "front"]

# modules and subpackages (dotted, under volratio) that are not yet a layer of their own
MIDDLE_PREFIXES = (
    "change_structure",
    "complexity",
    "depth",
    "emc2",
    "experiments",
    "gallery",
    "judges",
    "prune",
    "reference",
    "rescore",
    "rho",
    "store",
    "sweep",
)

# every module that lies on an import cycle today (all of them in MIDDLE): the work left to do
MIDDLE_CYCLES = {
    "volratio.emc2",
    "volratio.experiments.connectivity",
    "volratio.experiments.depth_regime",
    "volratio.judges",
    "volratio.judges.anchored",
    "volratio.judges.anchored_rule",
    "volratio.judges.anchored_set",
    "volratio.judges.calibration",
    "volratio.judges.reference_verdicts",
    "volratio.judges.registry",
    "volratio.judges.stability",
    "volratio.rescore",
}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PKG.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def layer_of(mod: str) -> str:
    rest = mod.split(".")[1:]
    head = rest[0] if rest else ""
    if mod == "volratio" or head == "errors":
        return "base"
    if head in ("util", "nets", "data", "train", "welch", "report"):
        return head
    if head in ("cli", "__main__", "commands", "coursework"):
        return "front"
    if head in MIDDLE_PREFIXES:
        return "middle"
    raise AssertionError(
        f"{mod}: in no layer; put it in a layer subpackage (DESIGN §2) and name that layer in tests/test_architecture.py"
    )


def imports_of(path: Path, modules: set[str]) -> set[str]:
    """The volratio modules that the file at `path` imports, anywhere in the file."""
    me = module_name(path)
    package = me.split(".") if path.name == "__init__.py" else me.split(".")[:-1]
    out = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name in modules}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = ".".join(package[: len(package) - node.level + 1] + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            if not base.startswith("volratio"):
                continue
            for a in node.names:
                sub = f"{base}.{a.name}"
                out.add(sub if sub in modules else base)
    return {m for m in out if m in modules and m != me}


def import_graph() -> dict[str, set[str]]:
    files = {module_name(p): p for p in PKG.rglob("*.py")}
    modules = set(files)
    return {m: imports_of(p, modules) for m, p in files.items()}


def cycles(graph: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = set()
            while True:
                w = stack.pop()
                on.discard(w)
                comp.add(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(comp)

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


GRAPH = import_graph()


def test_the_graph_is_read_from_the_source():
    # a few edges known from the code, one of them a function-body import (data.specs -> data.picbreeder)
    assert "volratio.errors" in GRAPH["volratio.util.device"]
    assert "volratio.data.picbreeder" in GRAPH["volratio.data.specs"]
    assert "volratio.nets" in GRAPH["volratio.data.graph"]
    assert "volratio.judges.base" in GRAPH["volratio.judges.similarity"]  # inside a subpackage
    assert "volratio.rho.sampler" in GRAPH["volratio.rho.montecarlo"]
    assert "volratio.welch.frames" in GRAPH["volratio.welch"]  # a package's __init__ re-exporting
    assert len(GRAPH) > 60


def test_every_module_is_in_a_layer():
    for m in GRAPH:
        assert layer_of(m) in LAYERS


def test_no_upward_import():
    up = [
        f"{a} ({layer_of(a)}) imports {b} ({layer_of(b)})"
        for a, deps in sorted(GRAPH.items())
        for b in sorted(deps)
        if LAYERS.index(layer_of(b)) > LAYERS.index(layer_of(a))
    ]
    assert not up, "upward imports:\n" + "\n".join(up)


def test_no_cycle_outside_the_middle_and_the_middle_record_is_true():
    found = cycles(GRAPH)
    on_cycle = set().union(*found) if found else set()
    outside = sorted(m for m in on_cycle if layer_of(m) != "middle")
    assert not outside, f"import cycles through layered modules: {outside}"
    assert on_cycle <= MIDDLE_CYCLES, f"new import cycles through {sorted(on_cycle - MIDDLE_CYCLES)}"
    assert MIDDLE_CYCLES <= on_cycle, (
        f"{sorted(MIDDLE_CYCLES - on_cycle)} no longer lie on a cycle: remove them from MIDDLE_CYCLES"
    )


def test_the_layered_modules_import_the_library_at_the_top():
    # a file's header says what it depends on; a function-body import of the library is hidden
    hidden = []
    for path in sorted(PKG.rglob("*.py")):
        if layer_of(module_name(path)) not in ("base", "util", "nets", "data", "train", "welch"):
            continue
        tree = ast.parse(path.read_text(), str(path))
        top = {id(n) for n in tree.body}
        hidden += [
            f"{path.relative_to(PKG.parent)}:{n.lineno}: {ast.unparse(n)}"
            for n in ast.walk(tree)
            if isinstance(n, ast.ImportFrom)
            and (n.level or (n.module or "").startswith("volratio"))
            and id(n) not in top
        ]
    assert not hidden, "imports of the library inside functions (move them to the top):\n" + "\n".join(hidden)


@pytest.mark.parametrize(
    "graph, expected",
    [
        ({"a": {"b"}, "b": {"a"}, "c": {"a"}}, [{"a", "b"}]),
        ({"a": {"b"}, "b": {"c"}, "c": set()}, []),
        ({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"d"}}, [{"a", "b", "c"}]),
    ],
)
def test_cycle_finder(graph, expected):
    assert cycles(graph) == expected
