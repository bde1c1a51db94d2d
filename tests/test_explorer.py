"""The weight explorer: export round trip, the ranking, the JavaScript renderer (under node)
against `CoordMLP.render` — so the page draws what the library draws even where no browser runs —
and the book's `{weight-explorer}` directive in a real Sphinx build."""

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest
import torch
from explorer_js import check_js_matches, run_js

from volratio import emc2
from volratio.data import specs
from volratio.nets import CoordMLP
from volratio.report import explorer


def small_net(head="hsv", seed=3):
    """Every activation, a sparse random mask, weights large enough to make the image busy."""
    net = CoordMLP(
        "3;gaussian:2,sin:2,sigmoid:1,tanh:1,cos:1,relu:1,identity:1,cache:1",
        head=head,
        seed=seed,
        init_scale=2.0,
        dtype=torch.float32,
    )
    g = torch.Generator().manual_seed(seed)
    for i, m in enumerate(net.masks):
        net.set_mask(i, (torch.rand(m.shape[1:], generator=g) < 0.7).float())
    return net


@pytest.mark.parametrize("head", ["hsv", "grey", "rgb"])
def test_export_round_trip_is_exact(head):
    net = small_net(head)
    doc = json.loads(explorer.dumps(explorer.export(net, spec="test")))
    back = explorer.load(doc)
    assert str(back.arch) == str(net.arch) and back.head == net.head
    for a, b in zip(net.weights, back.weights):
        assert a.dtype == b.dtype and torch.equal(a.detach(), b.detach())
    for a, b in zip(net.masks, back.masks):
        assert torch.equal(a, b)
    assert torch.equal(net.render(24), back.render(24))


def test_export_keeps_float64_and_picks_member():
    net = CoordMLP("2;sin:3", population=3, seed=1, dtype=torch.float64)
    back = explorer.load(explorer.dumps(explorer.export(net, member=2)))
    assert back.weights[0].dtype == torch.float64 and back.population == 1
    assert torch.equal(back.weights[1].detach()[0], net.weights[1].detach()[2])
    with pytest.raises(explorer.ExportError, match="outside the population"):
        explorer.export(net, member=3)


def test_damaged_export_is_a_clear_error():
    doc = explorer.export(small_net())
    with pytest.raises(explorer.ExportError, match="format"):
        explorer.load({**doc, "format": "volratio.report.explorer/0"})
    bad = json.loads(json.dumps(doc))
    bad["kernels"][1]["values"] = bad["kernels"][1]["values"][:8]
    with pytest.raises(explorer.ExportError, match="kernel 1"):
        explorer.load(bad)
    with pytest.raises(explorer.ExportError, match="JSON"):
        explorer.load("{not json")


def test_ranking_uses_the_engines_images():
    net = small_net()
    rank = explorer.rank_weights(net, res=16)
    assert len(rank.params) == net.nonzero()[0]
    assert np.all(np.diff(rank.effect) <= 0)
    for p, e in zip(rank.params[:3], rank.effect[:3]):  # against re-rendering from scratch
        base = net.render(16)[0]
        rms = [float(((emc2.naive_render(net, p, d, 16) - base) ** 2).mean().sqrt()) for d in (-1.0, 1.0)]
        assert abs(np.mean(rms) - e) < 1e-5


def test_random_direction_is_unit_norm_seeded_and_masked():
    net = small_net()
    d1, d2, d3 = (explorer.random_direction(net, s) for s in (1, 1, 2))
    assert abs(sum(float((d * d).sum()) for d in d1) - 1) < 1e-12
    assert all(np.array_equal(a, b) for a, b in zip(d1, d2))
    assert not all(np.array_equal(a, b) for a, b in zip(d1, d3))
    for d, m in zip(d1, net.masks):
        assert np.all(d[m[0].numpy() == 0] == 0)
    # the first outputs of the JavaScript original (run under node) for seeds 0 and 123456789
    u, v = explorer._mulberry32(0), explorer._mulberry32(123456789)
    assert [next(u), next(u)] == [0.26642920868471265, 0.0003297457005828619]
    assert [next(v), next(v)] == [0.2577907438389957, 0.9707721115555614]


def test_js_renderer_matches_coordmlp_render(tmp_path):
    for head in ("hsv", "grey", "rgb"):
        check_js_matches(tmp_path, small_net(head), res=20)


def test_js_renderer_matches_picbreeder_and_sgd_skull(tmp_path, picbreeder_dir):
    for spec in ("picbreeder:skull", "fer-sgd:skull"):
        check_js_matches(tmp_path, specs.load_network(spec), res=48, n_weights=2)


def test_js_renderer_rejects_a_masked_weight(tmp_path):
    net = small_net()
    r, c = map(int, torch.nonzero(net.masks[1][0] == 0)[0])
    with pytest.raises(subprocess.CalledProcessError) as e:
        run_js(
            tmp_path,
            explorer.export(net),
            [{"res": 8, "pert": {"param": [1, r, c], "delta": 1.0}}],
        )
    assert b"not an unmasked weight" in e.value.stderr


def test_local_effects_split_the_image_change_by_region():
    net = small_net()
    regions = {
        "top": (0.0, 0.5, 0.0, 1.0),
        "bottom": (0.5, 1.0, 0.0, 1.0),
        "all": (0.0, 1.0, 0.0, 1.0),
    }
    t = explorer.local_effects(net, regions, deltas=(1.0,), res=16)
    rank = explorer.rank_weights(net, res=16, deltas=(1.0,))
    assert len(t) == net.nonzero()[0]
    k, r, c = rank.params[0]
    row = t[(t.kernel == k) & (t.row == r) & (t.col == c)].iloc[0]
    assert abs(row["all"] - rank.effect[0]) < 1e-6  # the whole image: the ranking's own measure
    assert abs(row["all"] ** 2 - (row["top"] ** 2 + row["bottom"] ** 2) / 2) < 1e-6  # halves of equal size
    with pytest.raises(explorer.VolratioError, match="region 'bad'"):
        explorer.local_effects(net, {"bad": (0.5, 0.2, 0, 1)})


def test_weight_explorer_directive_builds_a_page(tmp_path):
    """A real Sphinx build of a page with `{weight-explorer}` on saved networks: the page holds the
    exported networks and their ranking, and the reference renders equal `CoordMLP.render`."""
    pytest.importorskip("sphinx", reason="Sphinx is installed with the book extra ([book])")
    import base64
    import re

    from sphinx.cmd.build import build_main

    nets = [CoordMLP("3;gaussian:3,sin:2", seed=s) for s in (1, 2)]
    for i, n in enumerate(nets):
        n.save(tmp_path / f"net{i}.safetensors")
    src, out = tmp_path / "src", tmp_path / "out"
    src.mkdir()
    ext_dir = Path(__file__).resolve().parent.parent / "book" / "_ext"
    (src / "conf.py").write_text(f"import sys\nsys.path.insert(0, {str(ext_dir)!r})\nextensions = ['volratio_book']\n")
    (src / "index.rst").write_text(
        f"Test\n====\n\n.. weight-explorer:: {tmp_path / 'net0.safetensors'}\n"
        f"   :compare: {tmp_path / 'net1.safetensors'}\n   :top: 5\n   :res: 24\n"
    )
    assert build_main(["-b", "html", "-W", "-q", str(src), str(out)]) == 0
    page = (out / "index.html").read_text()
    data = json.loads(
        re.search(
            r'<script type="application/json" class="vx-data">(.*?)</script>',
            page,
            re.DOTALL,
        ).group(1)
    )
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
