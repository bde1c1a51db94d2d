import numpy as np
import pytest
import torch
from PIL import Image

from volratio.data.targets import PlantedTarget, TargetError, get_target
from volratio.errors import ImageError


@pytest.mark.parametrize(
    "spec", ["image:camera", "image:coffee", "image:astronaut", "planted:3", "scene:planted:1+image:rocket"]
)
def test_targets_render_at_any_resolution(spec):
    t = get_target(spec)
    for res in (8, 33):
        img = t.image(res)
        assert img.shape == (res, res, 3) and img.dtype == torch.float32
        assert 0 <= img.min() and img.max() <= 1


def test_picbreeder_target(picbreeder_dir):
    img = get_target("picbreeder:skull").image(32)
    assert img.shape == (32, 32, 3) and img.std() > 0.1


@pytest.mark.parametrize("depth,width,arity", [(2, 3, 2), (4, 4, 2), (5, 3, 3), (6, 5, 2)])
def test_planted_dag_layerizes_to_its_known_depth_and_width(depth, width, arity):
    t = PlantedTarget(seed=depth * 10 + width, depth=depth, width=width, arity=arity)
    lay = t.graph.layerize(ink_as_hsv=False, dtype=torch.float64)
    assert lay.net.depth == depth == t.graph.depth()
    assert lay.net.width == t.w_min == max(t.layer_sizes()) <= width
    assert not lay.caches  # adjacent-layer links only
    # every node has at most `arity` inputs and every hidden node feeds the layer above
    preds = t.graph.predecessors()
    assert all(len(preds[k]) <= max(arity, 1) for k in t.graph.nodes if t.graph.nodes[k].kind != "in")
    srcs = {s for s, _, _ in t.graph.links}
    assert all(k in srcs for k, n in t.graph.nodes.items() if n.kind == "hidden")
    assert torch.allclose(lay.net.render(24)[0], t.graph.render(24), atol=1e-10)


def test_planted_primitives_option_and_ground_truth():
    t = get_target("planted:5:depth=4,width=4,primitives=7")
    assert sum(t.layer_sizes()) == 7
    maps = t.primitive_maps(16)
    assert len(maps) == 7 and all(m.shape == (16, 16) for m in maps.values())
    assert torch.allclose(maps["out"].abs().clamp(0, 1), t.image(16)[..., 0], atol=1e-6)
    with pytest.raises(TargetError, match="does not fit"):
        _ = get_target("planted:5:depth=3,width=2,arity=1,primitives=6").graph


def test_planted_is_deterministic():
    a, b = get_target("planted:9"), get_target("planted:9")
    assert torch.equal(a.image(16), b.image(16))
    assert not torch.equal(a.image(16), get_target("planted:10").image(16))


@pytest.mark.parametrize(
    "spec, fragment",
    [
        ("skull", "KIND:NAME"),
        ("picbreeder:cat", "unknown Picbreeder"),
        ("image:lena", "unknown image"),
        ("planted:x", "seed must be an integer"),
        ("planted:1:depth=a", "option"),
        ("scene:image:camera", "at least two"),
        ("weird:1", "unknown target kind"),
    ],
)
def test_bad_specs(spec, fragment):
    with pytest.raises(TargetError, match=fragment):
        get_target(spec)


def test_file_targets_check_mode(tmp_path):
    rgb = tmp_path / "ok.png"
    Image.fromarray((np.random.default_rng(0).random((20, 30, 3)) * 255).astype(np.uint8)).save(rgb)
    assert get_target(f"file:{rgb}").image(8).shape == (8, 8, 3)
    cmyk = tmp_path / "cmyk.jpg"
    Image.new("CMYK", (8, 8)).save(cmyk)
    with pytest.raises(ImageError, match="mode 'CMYK'"):
        get_target(f"file:{cmyk}").image(8)
    rgba = tmp_path / "a.png"
    Image.new("RGBA", (8, 8), (1, 2, 3, 10)).save(rgba)
    with pytest.raises(ImageError, match="transparent"):
        get_target(f"file:{rgba}").image(8)
    with pytest.raises(ImageError, match="no such image"):
        get_target(f"file:{tmp_path / 'none.png'}").image(8)
