"""The Picbreeder networks and targets, checked against the reference data in ../shared/data."""

import re

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from volratio.data import genome, picbreeder
from volratio.errors import DataNotFoundError, GenomeError, VolratioError

EXPECTED = {  # depth, width, non-zero weights of the FER repository's layered networks
    "skull": (12, 22, 147),
    "butterfly": (16, 23, 281),
    "apple": (33, 38, 918),
}


@pytest.mark.parametrize("name", picbreeder.NAMES)
def test_layerized_matches_fer_structure(picbreeder_dir, name):
    ours = picbreeder.layerize(name)
    fer = picbreeder.fer_network(name, "layered")
    depth, width, nnz = EXPECTED[name]
    assert (ours.net.depth, ours.net.width, ours.net.nonzero()[0]) == (depth, width, nnz)
    assert (fer.depth, fer.width, fer.nonzero()[0]) == (depth, width, nnz)
    assert str(ours.net.arch) == str(fer.arch)
    # every non-zero weight is either a genome link or a cache copy of weight exactly 1
    n_links = len(picbreeder.genome(name).links)
    assert ours.n_genome_weights == n_links
    assert ours.n_genome_weights + ours.n_cache_weights >= nnz


@pytest.mark.parametrize("name", picbreeder.NAMES)
def test_units_per_layer_counts_each_placed_node_and_cache_unit_once_within_the_width(picbreeder_dir, name):
    lay = picbreeder.layerize(name)
    nodes, caches = lay.units_per_layer()
    assert len(nodes) == len(caches) == lay.net.depth
    assert nodes.sum() == sum(l > 0 for l, _ in lay.placement.values()) and caches.sum() == len(lay.caches)
    assert (nodes + caches <= lay.net.width).all() and (nodes > 0).all()  # every layer holds a node of the graph


@pytest.mark.parametrize("name", picbreeder.NAMES)
def test_layerized_renders_target_png(picbreeder_dir, name):
    img = picbreeder.layerized(name, dtype=torch.float64).render(256)[0]
    target = picbreeder.target_image(name).double()
    assert (img - target).abs().mean().item() <= 0.01


@pytest.mark.parametrize("name", picbreeder.NAMES)
def test_layerized_equals_direct_graph_evaluation(picbreeder_dir, name):
    # float64 on both sides: the comparison is of the two semantics, not of rounding
    layered = picbreeder.layerized(name, dtype=torch.float64).render(128)[0]
    direct = picbreeder.genome(name).render(128)
    assert (layered - direct).abs().max().item() <= 1e-5


@pytest.mark.parametrize("name", picbreeder.NAMES)
def test_fer_sgd_network_loads_and_renders(picbreeder_dir, name):
    net = picbreeder.fer_network(name, "sgd")
    assert net.nonzero()[0] == net.n_params()  # dense
    img = net.render(128)[0]
    target = torch.nn.functional.interpolate(
        picbreeder.target_image(name).permute(2, 0, 1)[None], size=128, mode="bilinear", antialias=True
    )[0].permute(1, 2, 0)
    assert (img - target).abs().mean().item() < 0.05


def test_npz_is_read_without_pickle(picbreeder_dir, tmp_path, monkeypatch):
    obj = np.array([{"evil": 1}], dtype=object)
    bad = tmp_path / "skull"
    bad.mkdir()
    np.savez(bad / "fer_sgd.npz", arch=np.array("1;gaussian:2"), n_layers=np.array(2), W0=obj, W1=obj)
    for n in picbreeder.NAMES:  # a complete copy, except for skull's tampered SGD network
        (tmp_path / n).mkdir(exist_ok=True)
        for f in ("genome.xml", "target.png", "fer_layered.npz", "fer_sgd.npz"):
            if not (tmp_path / n / f).exists():
                (tmp_path / n / f).write_bytes((picbreeder_dir / n / f).read_bytes())
    monkeypatch.setenv("VOLRATIO_DATA", str(tmp_path))
    with pytest.raises(DataNotFoundError, match="not a readable FER network"):
        picbreeder.fer_network("skull", "sgd")


def test_missing_data_says_how_to_get_it(tmp_path, monkeypatch):
    monkeypatch.setenv("VOLRATIO_OFFLINE", "1")
    monkeypatch.setenv("VOLRATIO_DATA", str(tmp_path))
    monkeypatch.setattr(picbreeder, "candidate_dirs", lambda: [("$VOLRATIO_DATA", tmp_path)])
    with pytest.raises(DataNotFoundError, match="volratio data fetch"):
        picbreeder.data_dir()


# --------------------------------------------------------------------------------------------
# Malformed genomes: each problem has its own message.

GOOD = """<data><genome><nodes>
<node label="x" type="in"><marking branch="1" id="1"/><activation>identity(x)</activation></node>
<node label="y" type="in"><marking branch="1" id="2"/><activation>identity(x)</activation></node>
<node type="hidden"><marking branch="1" id="3"/><activation>gaussian(x)</activation></node>
<node label="ink" type="out"><marking branch="1" id="4"/><activation>sin(x)</activation></node>
</nodes><links>
<link><marking branch="1" id="10"/><source branch="1" id="1"/><target branch="1" id="3"/><weight>0.5</weight></link>
<link><marking branch="1" id="11"/><source branch="1" id="3"/><target branch="1" id="4"/><weight>-1.5</weight></link>
<link><marking branch="1" id="12"/><source branch="1" id="2"/><target branch="1" id="4"/><weight>2.0</weight></link>
</links></genome></data>"""


def test_good_tiny_genome_layerizes():
    g = genome.parse_genome(GOOD, name="tiny")
    lay = g.layerize(ink_as_hsv=False, dtype=torch.float64)
    assert lay.net.depth == 2 and g.depth() == 2
    assert torch.allclose(lay.net.render(16)[0], g.render(16), atol=1e-12)


@pytest.mark.parametrize(
    "mutate, fragment",
    [
        (lambda s: s.replace("<data>", "<data"), "not a readable genome XML"),
        (
            lambda s: s.replace('<source branch="1" id="2"/>', '<source branch="1" id="99"/>'),
            "source 1_99, which is not a node",
        ),
        (
            lambda s: s.replace('<target branch="1" id="3"/><weight>0.5', '<target branch="1" id="77"/><weight>0.5'),
            "target 1_77, which is not a node",
        ),
        (
            lambda s: s.replace(
                "</links>",
                '<link><source branch="1" id="4"/><target branch="1" id="3"/><weight>1</weight></link></links>',
            ),
            "cycle",
        ),
        (lambda s: s.replace("gaussian(x)", "softplus(x)"), "unknown activation 'softplus"),
        (lambda s: s.replace('label="ink" type="out"', 'type="hidden"'), "no output node"),
        (lambda s: s.replace("<weight>2.0</weight>", "<weight>two</weight>"), "no numeric <weight>"),
        (lambda s: s.replace('<marking branch="1" id="3"/>', ""), "has no <marking"),
    ],
)
def test_malformed_genomes_give_specific_errors(mutate, fragment):
    with pytest.raises(GenomeError, match=re.escape(fragment)):
        genome.parse_genome(mutate(GOOD), name="tiny")


def test_entity_expansion_is_refused():
    bomb = '<?xml version="1.0"?><!DOCTYPE d [<!ENTITY a "aaaa">]><data>&a;</data>'
    with pytest.raises(GenomeError, match="not a readable genome XML"):
        genome.parse_genome(bomb)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_random_corruption_only_raises_genome_errors(picbreeder_dir, data):
    name = data.draw(st.sampled_from(picbreeder.NAMES))
    raw = bytearray((picbreeder_dir / name / "genome.xml").read_bytes())
    for _ in range(data.draw(st.integers(1, 4))):
        op = data.draw(st.sampled_from(["flip", "delete", "insert"]))
        i = data.draw(st.integers(0, len(raw) - 1))
        if op == "flip":
            raw[i] = data.draw(st.integers(0, 255))
        elif op == "delete":
            del raw[i : i + data.draw(st.integers(1, 200))]
        else:
            raw[i:i] = data.draw(st.binary(min_size=1, max_size=20))
    try:
        g = genome.parse_genome(bytes(raw), name=name)
        g.layerize()
    except VolratioError as e:
        assert isinstance(e, GenomeError)
