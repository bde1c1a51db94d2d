"""Sphinx extension with the book's build tweaks.

1. The student edition: set `VOLRATIO_STUDENT=1` when building and every solution — `{solution}`
   blocks and gated `solution-start` … `solution-end` blocks with their code cells — is left out,
   so that exercises appear without answers (the solutions still run: the check cells below them
   must pass in the student edition too):

       VOLRATIO_STUDENT=1 jupyter-book build . --path-output _build/student

   sphinx-exercise's own `hide_solutions` cannot do this for gated solutions: it drops the
   `solution-start` node only, which shows the solution's content and then fails on the orphaned
   `solution-end` node. So the switch removes the merged solution nodes after sphinx-exercise has
   built them (`HideSolutions`).

2. Inline scripts that extensions register late (sphinx-thebe's `THEBE_JS_URL`, sphinx-togglebutton's
   settings) were written twice into every page — a JavaScript error in the reader's console.
   The duplicates are dropped before pages are written (see `_dedupe_scripts`).

3. The `{weight-explorer}` directive (`explorer_directive.py`): move a weight, watch the image.
"""

import importlib.util
import os
import sys
from pathlib import Path

from sphinx.transforms import SphinxTransform


def _config(app, config):
    config.volratio_student = os.environ.get("VOLRATIO_STUDENT", "").strip() not in ("", "0")


class HideSolutions(SphinxTransform):
    """In the student edition, remove every solution node (plain and merged gated ones)."""

    default_priority = 11  # after sphinx-exercise's MergeGatedSolutions (10) built the gated ones

    def apply(self, **kwargs):
        if not self.config.volratio_student:
            return
        from sphinx_exercise.nodes import solution_node

        for node in list(self.document.findall(solution_node)):
            node.parent.remove(node)


def _dedupe_scripts(app, env):
    """Sphinx's HTML builder re-adds every script registered after its start when it prepares to
    write (`prepare_writing`), turning an inline script's filename `None` into `''`, so its own
    de-duplication misses inline scripts. Drop the registry's copies of inline scripts the builder
    already has, so that each is written once, in its original place."""
    builder = getattr(app, "builder", None)
    files = getattr(builder, "_js_files", None)
    if files is None:
        return
    have = {js.attributes.get("body") for js in files if not js.filename}
    app.registry.js_files[:] = [
        (fn, attrs) for fn, attrs in app.registry.js_files if fn or attrs.get("body") not in have
    ]


def _load_explorer_directive():
    """explorer_directive.py, next to this file (imported here, not at the top, so that the tests of
    this module need no Sphinx)."""
    if "explorer_directive" in sys.modules:
        return sys.modules["explorer_directive"]
    path = Path(__file__).resolve().parent / "explorer_directive.py"
    spec = importlib.util.spec_from_file_location("explorer_directive", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["explorer_directive"] = mod  # its node class must unpickle from the saved doctrees
    spec.loader.exec_module(mod)
    return mod


def setup(app):
    app.add_config_value("volratio_student", False, "env")  # "env": switching editions re-reads the pages
    app.connect("config-inited", _config, priority=900)
    app.add_transform(HideSolutions)
    app.connect("env-updated", _dedupe_scripts, priority=900)
    _load_explorer_directive().setup(app)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
