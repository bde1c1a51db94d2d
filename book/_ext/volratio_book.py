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

4. MathJax served with the book, so that its formulas typeset offline (no CDN). `_config.yml` sets
   `mathjax_path: mathjax/tex-chtml.js`; the files come from the PyPI package
   `django-static-mathjax` (in the `book` extra of pyproject.toml; it installs MathJax 3's
   distribution as the module `mathjax`, under `mathjax/static/mathjax/`, licence Apache 2.0) and are
   copied into the build's `_static/mathjax/` when an HTML build finishes (`_copy_mathjax`). What is
   copied (`MATHJAX_FILES`, from the distribution's `es5/`): `tex-chtml.js` (TeX input, CommonHTML
   output, loader and menu in one file), the CommonHTML fonts, the TeX extensions that
   `tex-chtml.js` autoloads (e.g. `cancel` for `\\cancel`), and the licence. The browser check
   (`.ci/browser_check.mjs`) lists the MathJax files the pages request and fails on any missing
   one. Without the package an HTML build stops at once, saying how to install it.
"""

import importlib.util
import os
import shutil
import sys
from pathlib import Path

from sphinx.errors import ExtensionError
from sphinx.transforms import SphinxTransform

MATHJAX_PACKAGE = "django-static-mathjax"  # the PyPI distribution; it installs the module `mathjax`
MATHJAX_FILES = (  # below the distribution's es5/: what the book's pages load
    "tex-chtml.js",
    "output/chtml/fonts/woff-v2",
    "input/tex/extensions",
)


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


def mathjax_source() -> Path:
    """The MathJax 3 distribution that `django-static-mathjax` installs (the folder that holds
    `es5/` and `LICENSE`); a clear error when the package is missing or is not MathJax 3."""
    spec = importlib.util.find_spec("mathjax")
    fix = f"install it with `pip install -e '.[book]'` (or `pip install {MATHJAX_PACKAGE}`)"
    if spec is None or not spec.submodule_search_locations:
        raise ExtensionError(f"MathJax is missing: the book serves MathJax 3 from the package {MATHJAX_PACKAGE}; {fix}")
    root = Path(next(iter(spec.submodule_search_locations))) / "static" / "mathjax"
    script = root / "es5" / "tex-chtml.js"
    if not script.is_file() or b'VERSION="3.' not in script.read_bytes()[:200_000]:
        raise ExtensionError(
            f"{script} is not MathJax 3's tex-chtml.js: the module `mathjax` found at {root.parent.parent} is not "
            f"the one {MATHJAX_PACKAGE} installs; {fix}"
        )
    return root


def copy_mathjax(dest: Path) -> list[Path]:
    """Copy `MATHJAX_FILES` and the licence from the installed distribution into `dest`
    (the build's `_static/mathjax/`), keeping their paths below `es5/`. Returns what was copied."""
    root = mathjax_source()
    dest.mkdir(parents=True, exist_ok=True)
    copied = [Path(shutil.copy2(root / "LICENSE", dest / "LICENSE"))]
    for rel in MATHJAX_FILES:
        src = root / "es5" / rel
        if src.is_dir():
            shutil.copytree(src, dest / rel, dirs_exist_ok=True)
            copied += sorted((dest / rel).rglob("*"))
        else:
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            copied.append(Path(shutil.copy2(src, dest / rel)))
    return copied


def _check_mathjax(app):
    """Fail an HTML build before it executes any notebook when MathJax cannot be served."""
    if app.builder.format == "html":
        mathjax_source()


def _copy_mathjax(app, exc):
    if exc is None and app.builder.format == "html":
        copy_mathjax(Path(app.outdir) / "_static" / "mathjax")


def setup(app):
    app.add_config_value("volratio_student", False, "env")  # "env": switching editions re-reads the pages
    app.connect("config-inited", _config, priority=900)
    app.add_transform(HideSolutions)
    app.connect("env-updated", _dedupe_scripts, priority=900)
    app.connect("builder-inited", _check_mathjax)
    app.connect("build-finished", _copy_mathjax)
    _load_explorer_directive().setup(app)  # puts book/_ext/static on the static path
    app.add_css_file("claims_table.css")  # the claims table fits a 1280 px window and scrolls on a phone
    return {"parallel_read_safe": True, "parallel_write_safe": True}
