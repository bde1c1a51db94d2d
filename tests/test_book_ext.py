"""The book's Sphinx extension: the student-edition switch, the script de-duplication and the
weight-explorer directive."""

import importlib.util
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

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


def test_weight_explorer_directive_builds_a_page(tmp_path):
    """A real Sphinx build of a page with `{weight-explorer}` on saved networks: the page holds the
    exported networks and their ranking, and the reference renders equal `CoordMLP.render`."""
    pytest.importorskip("sphinx")
    import base64
    import json
    import re

    import numpy as np
    from sphinx.cmd.build import build_main

    from volratio import explorer
    from volratio.nets import CoordMLP

    nets = [CoordMLP("3;gaussian:3,sin:2", seed=s) for s in (1, 2)]
    for i, n in enumerate(nets):
        n.save(tmp_path / f"net{i}.safetensors")
    src, out = tmp_path / "src", tmp_path / "out"
    src.mkdir()
    ext_dir = Path(__file__).resolve().parent.parent / "book" / "_ext"
    (src / "conf.py").write_text(f"import sys\nsys.path.insert(0, {str(ext_dir)!r})\nextensions = ['volratio_book']\n")
    (src / "index.rst").write_text(f"Test\n====\n\n.. weight-explorer:: {tmp_path / 'net0.safetensors'}\n"
                                   f"   :compare: {tmp_path / 'net1.safetensors'}\n   :top: 5\n   :res: 24\n")
    assert build_main(["-b", "html", "-W", "-q", str(src), str(out)]) == 0
    page = (out / "index.html").read_text()
    data = json.loads(re.search(r'<script type="application/json" class="vx-data">(.*?)</script>', page, re.DOTALL).group(1))
    assert [len(n["ranking"]["top"]) for n in data["networks"]] == [5, 5]
    assert (out / "_static" / "weight_explorer.js").exists() and "weight_explorer.js" in page
    check_uri = re.search(r'data-check="([^"]+)"', page).group(1)
    check = json.loads((out / check_uri).read_text())
    for net, d, ref in zip(nets, data["networks"], check["networks"]):
        back = explorer.load(d["net"])
        assert all(torch.equal(a.detach(), b.detach()) for a, b in zip(net.weights, back.weights))
        base = np.frombuffer(base64.b64decode(ref["base"]), "<f4").reshape(24, 24, 3)
        assert np.array_equal(base, net.render(24)[0].numpy())
        assert {c["kind"] for c in ref["cases"]} == {"weight", "random"}
    for i in range(2):
        png = out / Path(check_uri).parent / f"{check['key']}-{i}.png"
        assert png.read_bytes()[:4] == b"\x89PNG"
    # a network that cannot be loaded fails the build with the library's message
    (src / "index.rst").write_text("Test\n====\n\n.. weight-explorer:: nosuch:skull\n")
    assert build_main(["-b", "html", "-W", "-q", "-E", str(src), str(tmp_path / "out2")]) != 0
