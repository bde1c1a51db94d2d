"""The book's Sphinx extension (the student-edition switch, the script de-duplication) and its MathJax."""

import importlib.util
from pathlib import Path
from types import SimpleNamespace

import pytest

spec = importlib.util.spec_from_file_location(
    "volratio_book", Path(__file__).resolve().parent.parent / "book" / "_ext" / "volratio_book.py"
)
ext = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ext)


def test_student_switch(monkeypatch):
    cfg = SimpleNamespace(volratio_student=None)
    monkeypatch.delenv("VOLRATIO_STUDENT", raising=False)
    ext._config(None, cfg)
    assert cfg.volratio_student is False
    monkeypatch.setenv("VOLRATIO_STUDENT", "1")
    ext._config(None, cfg)
    assert cfg.volratio_student is True
    monkeypatch.setenv("VOLRATIO_STUDENT", "0")
    ext._config(None, cfg)
    assert cfg.volratio_student is False


def _doc_with_solutions():
    from docutils import nodes
    from sphinx_exercise.nodes import solution_node

    doc = nodes.section()
    doc += nodes.paragraph(text="exercise")
    gated = solution_node()
    gated += nodes.literal_block(text="x = 1  # a solution's code cell")
    doc += gated
    doc += nodes.literal_block(text="cw.check_x(x)")
    doc += solution_node()
    return doc


@pytest.mark.parametrize("student", [False, True])
def test_student_edition_removes_every_solution(student):
    """Plain and gated solutions (with their code cells) go; the exercise and its check cell stay."""
    from sphinx_exercise.nodes import solution_node

    class Transform(ext.HideSolutions):
        config = SimpleNamespace(volratio_student=student)  # instead of a Sphinx app's config

    doc = _doc_with_solutions()
    t = Transform.__new__(Transform)
    t.document = doc
    t.apply()
    assert len(list(doc.findall(solution_node))) == (0 if student else 2)
    assert ("x = 1" in doc.astext()) is not student
    assert "exercise" in doc.astext() and "cw.check_x(x)" in doc.astext()


def test_inline_scripts_are_written_once():
    js = lambda fn, **a: SimpleNamespace(filename=fn, attributes=a)  # noqa: E731
    builder = SimpleNamespace(_js_files=[js("_static/a.js"), js(None, body="const X = 1"), js("", body="let y")])
    registry = SimpleNamespace(
        js_files=[
            ("a.js", {"priority": 500}),
            (None, {"body": "const X = 1", "priority": 500}),
            (None, {"body": "new", "priority": 500}),
        ]
    )
    app = SimpleNamespace(builder=builder, registry=registry)
    ext._dedupe_scripts(app, None)
    assert registry.js_files == [("a.js", {"priority": 500}), (None, {"body": "new", "priority": 500})]


def test_mathjax_is_served_with_the_book():
    """The book reads offline: `mathjax_path` is a path inside the book (never a CDN), no page loads
    MathJax's files as extra scripts, and the extension copies MathJax 3 from the installed package
    (its script, CHTML fonts, autoloaded TeX extensions and licence) to where `mathjax_path` points."""
    from jupyter_book.config import get_final_config

    root = Path(__file__).resolve().parent.parent
    cfg, _ = get_final_config(
        user_yaml=root / "_config.yml", cli_config={"latex_individualpages": False}, sourcedir=root
    )
    path = cfg["mathjax_path"]
    assert "//" not in path, f"mathjax_path {path!r} loads MathJax from off the reader's machine"
    assert path.startswith("mathjax/"), f"mathjax_path {path!r} is not the copy the extension makes in _static/mathjax/"
    # a top-level _static/ would make Jupyter Book add every .js file in it to every page
    assert not [f for f in cfg.get("html_js_files", []) if "mathjax" in str(f)]


def test_mathjax_is_copied_from_the_package(tmp_path):
    static = tmp_path / "_static"
    copied = ext.copy_mathjax(static / "mathjax")
    script = static / "mathjax" / "tex-chtml.js"
    assert script in copied and b'VERSION="3.' in script.read_bytes(), f"{script} is not MathJax 3"
    assert (static / "mathjax" / "LICENSE").is_file()
    assert (static / "mathjax" / "output/chtml/fonts/woff-v2/MathJax_Main-Regular.woff").is_file()
    assert (static / "mathjax" / "input/tex/extensions/cancel.js").is_file()
    assert not (static / "mathjax" / "es5").exists()  # the paths below es5/, as tex-chtml.js asks for them


def test_missing_mathjax_package_is_a_clear_error(monkeypatch):
    from sphinx.errors import ExtensionError

    monkeypatch.setattr(ext.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(ExtensionError, match="django-static-mathjax.*pip install"):
        ext.mathjax_source()
    app = SimpleNamespace(builder=SimpleNamespace(format="html"))
    with pytest.raises(ExtensionError, match="MathJax is missing"):
        ext._check_mathjax(app)
    ext._check_mathjax(SimpleNamespace(builder=SimpleNamespace(format="latex")))  # only HTML needs it
