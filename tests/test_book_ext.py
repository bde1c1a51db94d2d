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
    """The book reads offline: Jupyter Book resolves `mathjax_path` to the copy in
    `book/_static/mathjax` (an `html_static_path` folder), never to a CDN; that copy holds MathJax 3,
    its CHTML fonts and its licence, and no page loads its files as extra scripts."""
    from jupyter_book.config import get_final_config

    root = Path(__file__).resolve().parent.parent
    cfg, _ = get_final_config(
        user_yaml=root / "_config.yml", cli_config={"latex_individualpages": False}, sourcedir=root
    )
    path = cfg["mathjax_path"]
    assert "//" not in path, f"mathjax_path {path!r} loads MathJax from off the reader's machine"
    scripts = [root / d / path for d in cfg["html_static_path"] if (root / d / path).is_file()]
    assert scripts, f"{path} is in none of html_static_path {cfg['html_static_path']} (book/_static/mathjax/README.md)"
    assert b'VERSION="3.' in scripts[0].read_bytes(), f"{scripts[0]} is not MathJax 3"
    mathjax = scripts[0].parent
    assert (mathjax / "LICENSE").is_file() and (mathjax / "README.md").is_file()
    assert (mathjax / "output/chtml/fonts/woff-v2/MathJax_Main-Regular.woff").is_file()
    # a top-level _static/ would make Jupyter Book add every .js file in it to every page
    assert not [f for f in cfg.get("html_js_files", []) if "mathjax" in str(f)]
