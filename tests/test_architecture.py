"""The package's import graph (CONTRIBUTING "Where things go"): layers read from the tree, no upward
import, no cycle; and one meaning per stored run (no versioning machinery left in the package).

The graph is built from the source with `ast`, function-body imports included (an import inside a
function is as much a dependency as one at the top; it only runs later). An edge `a -> b` means
module `a` imports module `b` (`from .b import x`, `from . import b`, `import volratio.b`).

Layers, bottom to top; a module may import only from its own layer and the layers below it:

    base         volratio/__init__.py, errors.py
    util         volratio/util/ (device, threads, budget, files, images, statistics, verdicts, limits,
                 presets and configs from overrides, the software versions recorded with results)
    nets         volratio/nets.py (the masked coordinate MLP)
    data         volratio/data/ (genomes, graphs, Picbreeder and FER, targets, network specs)
    train        volratio/train/ (the training loop and its paths: the eager step, the fast step, the
                 fused C++ kernel; the sharpness of a minimum)
    welch        volratio/welch/ (bounds, frames, the interference of a network's features, the
                 superposition toy model)
    prune        volratio/prune/ (masks, criteria, schedules, SP and the baseline pruners)
    judges       volratio/judges/ (the judges proper: the interface, SSIM, the anchored and calibrated
                 judges with the rules they read, CLIP and VLM, the factory)
    emc2         volratio/emc2/ (the perturbation engine, the score, weight sweeps, the structure of a
                 change)
    rho          volratio/rho/ (the volume ratio: Boolean targets, samplers, engines, intervals, the
                 decay fit, the theorem, the basin model that trains networks and scores them)
    depth        volratio/depth/ (complexity, depth curves and their sweet spot, the depth predictor, one
                 run of a depth sweep, the controls of the instruments on planted targets)
    runs         volratio/runs/ (sweeps and their executors, the results store and the readers of stored
                 results, the reference plans, rescoring, the depth sweep, the registry of experiments
                 and run functions): the
                 registry names the experiment modules by module path and imports each with
                 `importlib` on first use, the one place this layer refers to the experiments (by
                 name, never by an import statement)
    experiments  volratio/experiments/ (the chapters' experiments and the run functions of their
                 points): an experiment runs its grid as a sweep and reads stored runs; no experiment
                 imports another (what two share sits in a lower layer), `_base` is shared by all
    calibration  volratio/calibration/ (the verdict sets and the judges' rules fitted and checked on
                 them: they train and render networks with the experiments and the EMC2 engine)
    report       volratio/report/ (claims and their verdicts, forest plots, figures, the gallery, the
                 weight explorer: what the book shows, above every experiment)
    front        volratio/cli.py, __main__.py, commands/, coursework/

Imports sit at the top of every file, so that a file's header says what it depends on: a
function-body import of the library is a hidden dependency, and one of a third-party or standard
module is checked too. A function-body import stays only for a package in `LAZY_IMPORTS` (an
optional extra, or a costly import that only a rare path needs), with a comment saying why.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[1] / "volratio"

LAYERS = [
    "base",
    "util",
    "nets",
    "data",
    "train",
    "welch",
    "prune",
    "judges",
    "emc2",
    "rho",
    "depth",
    "runs",
    "experiments",
    "calibration",
    "report",
    "front",
]

# top-level module or subpackage under volratio -> its layer (a layer is named after its subpackage)
SUBPACKAGE_LAYER = {
    "errors": "base",
    "cli": "front",
    "__main__": "front",
    "commands": "front",
    "coursework": "front",
    **{name: name for name in LAYERS[1:-1]},
}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PKG.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def layer_of(mod: str) -> str:
    rest = mod.split(".")[1:]
    if not rest:
        return "base"
    if rest[0] not in SUBPACKAGE_LAYER:
        raise AssertionError(
            f"{mod}: in no layer; put it in a layer subpackage (CONTRIBUTING.md, 'Where things go') and name that layer in tests/test_architecture.py"
        )
    return SUBPACKAGE_LAYER[rest[0]]


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
    # a few edges known from the code
    assert "volratio.errors" in GRAPH["volratio.util.device"]
    assert "volratio.data.picbreeder" in GRAPH["volratio.data.specs"]
    assert "volratio.nets" in GRAPH["volratio.data.graph"]
    assert "volratio.judges.base" in GRAPH["volratio.judges.similarity"]  # inside a subpackage
    assert "volratio.rho.sampler" in GRAPH["volratio.rho.montecarlo"]
    assert "volratio.welch.frames" in GRAPH["volratio.welch"]  # a package's __init__ re-exporting
    assert "volratio.emc2.engine" in GRAPH["volratio.emc2.scoring"]
    assert "volratio.judges" in GRAPH["volratio.emc2.scoring"]  # the judges sit below the score
    assert len(GRAPH) > 60


def test_every_layer_is_in_the_tree():
    # a layer is a subpackage (or, for nets, one module) of that name: the tree shows the layers
    for head, layer in SUBPACKAGE_LAYER.items():
        assert (PKG / head).is_dir() or (PKG / f"{head}.py").is_file(), f"layer {layer}: volratio/{head} is missing"


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


def test_no_experiment_imports_another():
    """Each chapter's experiment reads alone: what two experiments share (one run of a depth sweep,
    the readers of stored results) sits in a lower layer, never in a sibling experiment. An
    experiment that is a package (`sparse_regime`: its protocol, and the score stage of its stored
    populations in `sparse_regime.scores`) is one experiment: its modules may import each other."""
    shared = {"volratio.experiments", "volratio.experiments._base"}

    def experiment(mod: str) -> str:
        return ".".join(mod.split(".")[:3])  # volratio.experiments.<experiment>

    across = [
        f"{a} imports {b}"
        for a, deps in sorted(GRAPH.items())
        if a.startswith("volratio.experiments.") and a not in shared
        for b in sorted(deps)
        if b.startswith("volratio.experiments.") and b not in shared and experiment(b) != experiment(a)
    ]
    assert not across, "experiments importing experiments (move what they share to a lower layer):\n" + "\n".join(
        across
    )


def test_the_experiment_ban_sees_a_sibling_import(tmp_path):
    # the graph records `from . import sibling` inside volratio/experiments as an edge to the sibling
    pkg = tmp_path / "volratio"
    (pkg / "experiments").mkdir(parents=True)
    for name in ("__init__", "a", "b"):
        (pkg / "experiments" / f"{name}.py").write_text("from . import b\n" if name == "a" else "")
    (pkg / "__init__.py").write_text("")
    modules = {"volratio", "volratio.experiments", "volratio.experiments.a", "volratio.experiments.b"}
    global PKG
    saved, PKG = PKG, pkg
    try:
        assert imports_of(pkg / "experiments" / "a.py", modules) == {"volratio.experiments.b"}
    finally:
        PKG = saved


def test_no_cycle():
    found = cycles(GRAPH)
    assert not found, "import cycles:\n" + "\n".join(" <-> ".join(sorted(c)) for c in found)


def test_every_module_imports_the_library_at_the_top():
    # a file's header says what it depends on; a function-body import of the library is hidden
    hidden = []
    for path in sorted(PKG.rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        top = {id(n) for n in tree.body}
        hidden += [
            f"{path.relative_to(PKG.parent)}:{n.lineno}: {ast.unparse(n)}"
            for n in ast.walk(tree)
            if id(n) not in top
            and (
                (isinstance(n, ast.ImportFrom) and (n.level or (n.module or "").startswith("volratio")))
                or (isinstance(n, ast.Import) and any(a.name.split(".")[0] == "volratio" for a in n.names))
            )
        ]
    assert not hidden, "imports of the library inside functions (move them to the top):\n" + "\n".join(hidden)


# The packages a function body may import (a module or any of its submodules), and why each one is
# imported late. Everything else is imported at the top of the file.
LAZY_IMPORTS = {
    "transformers": "optional: the [judges] extra (the CLIP and VLM judges)",
    "open_clip": "optional: a CLIP implementation no extra provides",
    "clip": "optional: a CLIP implementation no extra provides",
    "dask": "optional: the [dask] extra",
    "distributed": "optional: the [dask] extra (Dask executors)",
    "torch.utils.cpp_extension": "a compiler toolchain, only to build a C++ kernel",
    "IPython": "book-only: the [book] extra, only in a notebook kernel",
    "myst_nb": "book-only: the [book] extra, only in a notebook kernel",
    "jupyter": "book-only: the [book] extra",
    "requests": "rare path: only a download of the Picbreeder data needs it",
    "pooch": "rare path: only a download of the Picbreeder data needs it (and it imports tqdm.auto)",
}


def _imported(node: ast.Import | ast.ImportFrom) -> list[str]:
    """The absolute module names an import statement names (relative ones as `.name`)."""
    if isinstance(node, ast.ImportFrom):
        return ["." * node.level + (node.module or "")]
    return [a.name for a in node.names]


def _lazy_ok(module: str) -> bool:
    return any(module == m or module.startswith(m + ".") for m in LAZY_IMPORTS)


def late_imports(source: str, filename: str = "<string>") -> list[str]:
    """The imports inside a function or class body of `source` that break the rule, as
    "file:line: statement (why)": a module not in `LAZY_IMPORTS`, or one in it without a comment
    on its line or the line above (a comment above a group of such imports covers the group).
    Module-level imports, in `try`/`if` blocks too, are at the top."""
    tree = ast.parse(source, filename)
    # lines with a comment, and the last lines of commented lazy imports (the next import of a group)
    said = {t.start[0] for t in tokenize.generate_tokens(io.StringIO(source).readline) if t.type == tokenize.COMMENT}
    found = []

    def visit(node, nested: bool):
        for child in ast.iter_child_nodes(node):
            if nested and isinstance(child, (ast.Import, ast.ImportFrom)):
                where = f"{filename}:{child.lineno}: {ast.unparse(child)}"
                if not all(_lazy_ok(m) for m in _imported(child)):
                    found.append(f"{where} (move it to the top of the file)")
                elif said & {child.lineno - 1, *range(child.lineno, child.end_lineno + 1)}:
                    said.add(child.end_lineno)
                else:
                    found.append(f"{where} (say why it is imported here, in a comment on its line or the line above)")
            visit(child, nested or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)))

    visit(tree, False)
    return found


def test_every_import_is_at_the_top_or_a_commented_lazy_one():
    late = []
    for path in sorted(PKG.rglob("*.py")):
        late += late_imports(path.read_text(), str(path.relative_to(PKG.parent)))
    assert not late, "imports inside function bodies:\n" + "\n".join(late)


def _line_of(source: str, text: str) -> int:
    return next(i for i, line in enumerate(source.splitlines(), 1) if text in line)


def test_the_lazy_imports_are_found():
    # the scan reaches the function-body imports the package keeps (each allowed, with its comment)
    models = (PKG / "judges" / "models.py").read_text()
    assert "import transformers  #" in models and not late_imports(models)
    uncommented = re.sub(r"(import transformers)\s*#.*", r"\1", models)
    assert late_imports(uncommented) == [
        f"<string>:{_line_of(models, 'import transformers')}: import transformers "
        "(say why it is imported here, in a comment on its line or the line above)"
    ]


@pytest.mark.parametrize(
    "source, flagged",
    [
        ("def f():\n    import json\n", True),  # a standard module: at the top
        ("def f():\n    import json  # fast enough\n", True),  # a comment does not allow it
        ("def f():\n    from . import nets  # late\n", True),  # the library: at the top
        ("class A:\n    def m(self):\n        import numpy as np\n", True),  # in a method
        ("class A:\n    from scipy import stats\n", True),  # in a class body
        ("def f():\n    if True:\n        import torch  # later\n", True),  # torch is no lazy import
        ("def f():\n    import transformers\n", True),  # allowed, but without a comment
        ("def f():\n    import transformers  # optional: the [judges] extra\n", False),
        ("def f():\n    # optional: the [dask] extra\n    from distributed import Client\n", False),
        ("def f():\n    from torch.utils.cpp_extension import load  # a compiler\n", False),
        ("def f():\n    from IPython.display import HTML  # book-only\n", False),
        ("def f():\n    import transformers, json  # optional\n", True),  # one of them is not lazy
        ("def f():\n    # book-only\n    import IPython\n    import myst_nb\n", False),  # a commented group
        ("def f():\n    # book-only\n    import IPython\n\n    import myst_nb\n", True),  # not one group
        ("def f():\n    import json\n    import myst_nb\n", True),  # after an import that is no lazy one
        ("import json\ntry:\n    import tomllib\nexcept ImportError:\n    import tomli as tomllib\n", False),
        ("def f():\n    return 1\n", False),
    ],
)
def test_late_import_check(source, flagged):
    assert bool(late_imports(source)) is flagged, late_imports(source)


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


def test_every_preset_comes_from_the_one_mechanism():
    """No config writes its own quick()/reference()/full(): each is `volratio.util.presets.Presets`
    reading the class's QUICK / REFERENCE / FULL."""
    own = []
    for path in sorted(PKG.rglob("*.py")):
        if module_name(path) == "volratio.util.presets":
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ClassDef):
                own += [
                    f"{path.relative_to(PKG.parent)}:{f.lineno}: {node.name}.{f.name}"
                    for f in node.body
                    if isinstance(f, ast.FunctionDef) and f.name in ("quick", "reference", "full")
                ]
    assert not own, "presets written by hand (set QUICK / REFERENCE / FULL and mix in Presets):\n" + "\n".join(own)


# words that belong to a second meaning of a stored run: run-function versions and their frozen
# readings, aliases of old import paths, defaults kept for runs of an earlier code
BANNED = ("v1_readings", "run_versions", "legacy", "ALIASES", "stored before")


def test_no_versioning_of_stored_runs_is_left():
    """A run's key is the hash of its run name and complete config: nothing in the package reads a
    stored run by another rule, or keeps a default for runs of an earlier code."""
    hits = []
    for path in sorted(PKG.rglob("*")):
        if path.is_file() and path.suffix in (".py", ".json", ".cpp", ".md", ".toml", ".sha256"):
            text = path.read_text()
            hits += [
                f"{path.relative_to(PKG.parent)}:{text[: text.lower().index(w.lower())].count(chr(10)) + 1}: {w}"
                for w in BANNED
                if w.lower() in text.lower()
            ]
    assert not hits, "versioning of stored runs left in the package:\n" + "\n".join(hits)


# what a docstring or comment in the package may not say: a section of a design file that is not in the
# repository (name the module, docstring or CONTRIBUTING.md section instead), or the history of the code
OUTSIDE_OR_HISTORY = re.compile(r"DESIGN(\.md)? ?§|\bissue #?\d+|\bas before\b|\bthe earlier default\b|\bin a pilot\b")


def test_docstrings_name_what_is_in_the_repository_and_no_history():
    hits = []
    for path in sorted(PKG.rglob("*.py")):
        for i, line in enumerate(path.read_text().splitlines(), 1):
            if OUTSIDE_OR_HISTORY.search(line):
                hits.append(f"{path.relative_to(PKG.parent)}:{i}: {line.strip()}")
    assert not hits, "references outside the repository, or history, in the package:\n" + "\n".join(hits)


@pytest.mark.parametrize(
    "line, flagged",
    [
        ("SP (DESIGN §3.3) prunes units", True),
        ("the judge (as before, SSIM)", True),
        ("fixed in issue 39", True),
        ("SP (`volratio.prune.similarity_pruning`) prunes units", False),
        ("an issue with the store", False),
    ],
)
def test_the_history_scan(line, flagged):
    assert bool(OUTSIDE_OR_HISTORY.search(line)) is flagged


def test_a_reading_is_one_value():
    """How stored networks are scored travels as one `volratio.emc2.reading.Reading`: no module names
    the old loose flag `every_weight` outside the reading, and no run function reads the store root
    from a context variable (it is given the root: `RunFunction.reading_store`)."""
    hits = []
    for path in sorted(PKG.rglob("*.py")):
        text = path.read_text()
        if path.name != "reading.py" and "every_weight" in text:
            hits.append(f"{path.relative_to(PKG.parent)}: every_weight")
        if path.parent.name == "runs" and "ContextVar" in text:
            hits.append(f"{path.relative_to(PKG.parent)}: ContextVar")
    assert not hits, "\n".join(hits)
    assert not (PKG / "runs" / "rescore.py").exists()


def test_the_registry_names_only_modules_it_may_import():
    """The registry (runs layer) imports the modules of the experiments and of the run functions by
    name with `importlib`, which the import graph above cannot see. Each name must be a module of the
    package, in the experiments layer or below it, holding the function and its `parse_<function>`."""
    from volratio.runs import registry

    files = {module_name(p) for p in PKG.rglob("*.py")}
    package = registry.EXPERIMENTS_PACKAGE
    named = {f"{package}.{m}": () for m in registry.EXPERIMENTS.values()}
    for mod, fn, *_ in registry._BUILTIN_RUNS.values():
        named[mod if mod.startswith("volratio.") else f"{package}.{mod}"] = (fn, f"parse_{fn}")
    for mod, functions in named.items():
        assert mod in files, f"the registry names {mod}, which is not a module of the package"
        assert LAYERS.index(layer_of(mod)) <= LAYERS.index("experiments"), f"{mod} sits above the experiments"
        path = PKG.parent / mod.replace(".", "/")
        text = (path / "__init__.py" if path.is_dir() else path.with_suffix(".py")).read_text()
        for f in functions:
            assert re.search(rf"^def {re.escape(f)}\(", text, re.M), f"{mod} has no function {f}"
