"""Sphinx extension: the student edition of the book.

Set `VOLRATIO_STUDENT=1` when building and every `{solution}` block is left out
(sphinx-exercise's `hide_solutions`), so that exercises appear without their answers:

    VOLRATIO_STUDENT=1 jupyter-book build . --path-output _build/student
"""

import os


def _apply(app, config):
    if os.environ.get("VOLRATIO_STUDENT", "").strip() not in ("", "0"):
        config.hide_solutions = True


def setup(app):
    app.connect("config-inited", _apply, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
