import matplotlib.colors as mcolors
import pytest
import torch

from volratio.errors import ArchError, VolratioError
from volratio.nets import Arch, CoordMLP, coords, hsv_to_rgb


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("gaussian:4", "not of the form"),
        ("0;gaussian:4", "depth must be at least 1"),
        ("3;gaussian", "must be 'activation:count'"),
        ("3;gaussian:x", "must be 'activation:count'"),
        ("3;gaussian:0", "counts must be ≥ 1"),
        ("3;swish:4", "unknown activation 'swish'"),
    ],
)
def test_bad_arch_strings_name_the_problem(text, fragment):
    with pytest.raises(ArchError, match=fragment):
        Arch.parse(text)


def test_arch_roundtrip_and_groups():
    a = Arch.parse("12;cache:15,gaussian:4,identity:2,sin:1")
    assert (a.depth, a.width) == (12, 22)
    assert str(a) == "12;cache:15,gaussian:4,identity:2,sin:1"
    acts = a.unit_activations()
    assert acts[:15] == ["cache"] * 15 and acts[15:19] == ["gaussian"] * 4 and acts[-1] == "sin"


def test_mixed_activation_groups_apply_per_unit():
    net = CoordMLP("1;sin:1,gaussian:1,sigmoid:1", head="rgb")
    z = torch.tensor([[0.5, 0.5, 0.5]])
    out = net.activate(z)[0]
    assert out[0] == pytest.approx(torch.sin(torch.tensor(0.5)).item())
    assert out[1] == pytest.approx(2 * torch.exp(torch.tensor(-0.25)).item() - 1)
    assert out[2] == pytest.approx(2 * torch.sigmoid(torch.tensor(0.5)).item() - 1)


def test_hsv_matches_matplotlib():
    g = torch.Generator().manual_seed(0)
    h, s, v = torch.rand(3, 500, generator=g, dtype=torch.float64)
    ours = hsv_to_rgb(h, s, v).numpy()
    ref = mcolors.hsv_to_rgb(torch.stack([h, s, v], -1).numpy())
    assert abs(ours - ref).max() < 1e-12


def test_coords_follow_the_fer_convention():
    c = coords(3, dtype=torch.float64).reshape(3, 3, 4)
    # x, y = meshgrid(lin, lin, indexing="ij"); vector = (y, x, d, bias)
    assert c[0, 2, 0] == 1.0 and c[0, 2, 1] == -1.0
    assert c[..., 3].eq(1).all()
    assert c[1, 1, 2] == 0.0 and c[0, 0, 2] == pytest.approx(1.4 * 2**0.5)


def test_population_members_are_independent_networks():
    pop = CoordMLP("3;gaussian:5,sin:3", population=4, seed=3)
    imgs = pop.render(8)
    for k in range(4):
        single = pop.select(k)
        assert torch.equal(single.render(8)[0], imgs[k])
    assert not torch.equal(imgs[0], imgs[1])


def test_masked_weights_are_zero_and_count():
    net = CoordMLP("2;gaussian:4", population=2, seed=0)
    m = torch.ones(4, 4)
    m[0, :] = 0
    net.set_mask(1, m)
    assert net.weights[1][:, 0, :].eq(0).all()
    assert net.nonzero() == [net.n_params() - 4] * 2
    with pytest.raises(ArchError, match="shape"):
        net.set_mask(1, torch.ones(3, 3))


def test_live_units_need_inputs_and_outputs():
    net = CoordMLP("2;gaussian:3", head="grey")
    m = torch.ones(4, 3)
    m[:, 0] = 0  # unit 0 of layer 1 has no inputs
    net.set_mask(0, m)
    assert net.live_units()[0] == [2, 3]


def test_save_load_roundtrip(tmp_path):
    net = CoordMLP("3;gaussian:4,sin:2", head="grey", population=2, seed=5)
    m = (torch.rand(6, 6, generator=torch.Generator().manual_seed(1)) > 0.5).float()
    net.set_mask(2, m)
    net.provenance["note"] = "test"
    path = net.save(tmp_path / "n.safetensors")
    back = CoordMLP.load(path)
    assert str(back.arch) == str(net.arch) and back.head == "grey" and back.population == 2
    assert back.provenance["note"] == "test"
    assert torch.equal(back.render(8), net.render(8))
    assert all(torch.equal(a, b) for a, b in zip(back.masks, net.masks))


def test_load_rejects_garbage(tmp_path):
    bad = tmp_path / "bad.safetensors"
    bad.write_bytes(b"not a safetensors file")
    with pytest.raises(VolratioError, match="not a readable safetensors"):
        CoordMLP.load(bad)
    with pytest.raises(VolratioError, match="no such network"):
        CoordMLP.load(tmp_path / "missing.safetensors")
    # a saved network cut short: safetensors' own header check refuses it before any tensor is read
    data = CoordMLP("2;gaussian:4", head="grey", seed=0).save(tmp_path / "n.safetensors").read_bytes()
    cut = tmp_path / "cut.safetensors"
    cut.write_bytes(data[:-7])
    with pytest.raises(VolratioError, match="not a readable safetensors"):
        CoordMLP.load(cut)


def test_render_any_resolution_and_chunking():
    net = CoordMLP("2;tanh:4", head="rgb", seed=1)
    full = net.render(17)
    assert full.shape == (1, 17, 17, 3)
    assert torch.allclose(net.render(17, chunk=50), full)
    assert 0 <= full.min() and full.max() <= 1


def test_gaussian_values_and_gradient():
    from volratio.nets import ACTIVATIONS

    z = torch.randn(6, 5, dtype=torch.float64, requires_grad=True)
    g = ACTIVATIONS["gaussian"]
    assert torch.allclose(g(z), 2 * torch.exp(-z * z) - 1, atol=1e-15)
    assert torch.autograd.gradcheck(g, (z,))
