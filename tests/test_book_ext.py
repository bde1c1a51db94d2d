"""The book's Sphinx extension: the student-edition switch and the script de-duplication."""

import importlib.util
from pathlib import Path
from types import SimpleNamespace

spec = importlib.util.spec_from_file_location(
    "volratio_book", Path(__file__).resolve().parent.parent / "book" / "_ext" / "volratio_book.py"
)
ext = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ext)


def test_student_switch_hides_solutions(monkeypatch):
    cfg = SimpleNamespace(hide_solutions=False)
    monkeypatch.delenv("VOLRATIO_STUDENT", raising=False)
    ext._config(None, cfg)
    assert cfg.hide_solutions is False
    monkeypatch.setenv("VOLRATIO_STUDENT", "1")
    ext._config(None, cfg)
    assert cfg.hide_solutions is True


def test_inline_scripts_are_written_once():
    js = lambda fn, **a: SimpleNamespace(filename=fn, attributes=a)  # noqa: E731
    builder = SimpleNamespace(_js_files=[js("_static/a.js"), js(None, body="const X = 1"), js("", body="let y")])
    registry = SimpleNamespace(js_files=[("a.js", {"priority": 500}), (None, {"body": "const X = 1", "priority": 500}),
                                         (None, {"body": "new", "priority": 500})])
    app = SimpleNamespace(builder=builder, registry=registry)
    ext._dedupe_scripts(app, None)
    assert registry.js_files == [("a.js", {"priority": 500}), (None, {"body": "new", "priority": 500})]
