"""Sixteen Picbreeder targets: targets, networks, `volratio targets`/`info`, the weight explorer, and
the gallery with its "complexity predicts depth" fit (volratio.report.gallery). The thirteen extra come
from the fork's mirror on 127.0.0.1 (the `extra_data` fixture); the original three must behave
exactly as before."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from explorer_js import check_js_matches, reference, run_js
from scipy import stats

from volratio.cli import main
from volratio.data import fer_fork, picbreeder, specs
from volratio.data.targets import TargetError, get_target, list_targets
from volratio.depth import DepthError, complexity, r2_interval
from volratio.errors import DataNotFoundError
from volratio.report import explorer, gallery

FORK_ARCH_DEPTH = {"ghost": 7, "moon": 33, "letter-g": 10, "plane": 17}  # from the fork's arch.pkl (mirror README)


# --------------------------------------------------------------------------------------------
# Targets and networks


def test_every_name_is_a_target_and_unknown_names_list_all_sixteen():
    assert len(picbreeder.ALL_NAMES) == len(set(picbreeder.ALL_NAMES)) == 16
    for name in picbreeder.ALL_NAMES:
        t = get_target(f"picbreeder:{name}")
        assert t.spec == f"picbreeder:{name}" and t.head == "hsv" and t.kind == "picbreeder"
    with pytest.raises(TargetError, match="known: skull, butterfly, apple, butterfly-grey.*plane"):
        get_target("picbreeder:unicorn")


def test_original_three_are_unchanged(picbreeder_dir):
    """The three with genomes: the target is the genome's render, the network the layerized genome."""
    for name in picbreeder.NAMES:
        assert picbreeder.has_genome(name)
        img = get_target(f"picbreeder:{name}").image(24)
        assert torch.equal(img, picbreeder.genome(name).render(24).float())
        net = specs.load_network(f"picbreeder:{name}")
        assert net.provenance == {
            "made_by": "picbreeder.layerized",
            "target": name,
            "source": f"{picbreeder.REPO}@{picbreeder.COMMIT}",
        }
        assert torch.equal(net.render(16), picbreeder.layerized(name).render(16))
    assert "genome" not in picbreeder.fer_network("skull", "layered").provenance


def test_extra_network_is_the_forks_layered_network(extra_data):
    net = specs.load_network("picbreeder:ghost")
    same = specs.load_network("fer-layered:ghost")
    assert not picbreeder.has_genome("ghost")
    assert net.provenance["made_by"] == "fer_layered" and net.provenance["source"] == f"jagilley/fer@{fer_fork.COMMIT}"
    assert "none published" in net.provenance["genome"]
    assert all(torch.equal(a, b) for a, b in zip(net.effective_weights(), same.effective_weights()))
    assert (net.depth, net.width, net.nonzero()[0]) == (7, 12, 52)
    img = get_target("picbreeder:ghost").image(32)
    assert (img - net.render(32)[0]).abs().max().item() < 1e-5  # the target is its network's render


def test_extras_have_no_genome_and_no_sgd_twin(extra_data):
    with pytest.raises(DataNotFoundError, match="'ghost' has no genome.*picbreeder:ghost"):
        picbreeder.genome("ghost")
    with pytest.raises(DataNotFoundError, match="no genome"):
        picbreeder.layerized("moon")
    with pytest.raises(DataNotFoundError, match="no SGD twin"):
        specs.load_network("fer-sgd:ghost")


def test_list_targets_says_what_draws_each(extra_data):
    rows = [r for r in list_targets() if r["kind"] == "picbreeder"]
    assert [r["spec"] for r in rows] == [f"picbreeder:{n}" for n in picbreeder.ALL_NAMES]
    assert all(r["available"] for r in rows)
    assert [r["source"].startswith("genome") for r in rows] == [True] * 3 + [False] * 13
    assert all("no genome" in r["source"] and "jagilley/fer" in r["source"] for r in rows[3:])


def test_cli_targets_and_info_on_an_extra_target(extra_data, capsys):
    assert main(["targets"]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("picbreeder:moon "))
    assert "available" in line and "layered network of jagilley/fer (no genome)" in line
    assert main(["info", "picbreeder:moon", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert (info["depth"], info["width"], info["nonzero"]) == (33, 37, 691)
    assert info["arch"] == "33;cache:27,gaussian:3,identity:2,sigmoid:2,sin:3"
    assert main(["info", "picbreeder:moon"]) == 0
    text = capsys.readouterr().out
    assert "depth 33, width 37" in text and "non-zero 691" in text and "genome: none published" in text


def test_cli_targets_offline_says_how_to_get_the_extras(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("VOLRATIO_OFFLINE", "1")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(picbreeder, "_repo_root", lambda: tmp_path / "repo")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("VOLRATIO_DATA", raising=False)
    assert main(["targets"]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("picbreeder:ghost "))
    assert "not here: VOLRATIO_OFFLINE=1" in line


# --------------------------------------------------------------------------------------------
# The weight explorer opens any of the sixteen


def test_explorer_exports_every_network_exactly(picbreeder_dir, extra_data):
    for name in picbreeder.ALL_NAMES:
        net = specs.load_network(f"picbreeder:{name}")
        doc = json.loads(explorer.dumps(explorer.export(net, spec=f"picbreeder:{name}")))
        back = explorer.load(doc)
        assert str(back.arch) == str(net.arch) and torch.equal(back.render(12), net.render(12)), name


def test_explorer_page_and_js_renderer_on_extra_networks(extra_data, tmp_path):
    page, refs, fig = explorer.widget_data(
        "picbreeder:ghost", explorer.ExplorerConfig(res=16, rank_res=12, sweep_res=12)
    )
    assert page["spec"] == "picbreeder:ghost" and page["n_nonzero"] == 52 and len(page["ranking"]["top"]) == 24
    assert refs["base"] is not None and fig is not None
    check_js_matches(tmp_path, specs.load_network("picbreeder:ghost"), res=24, n_weights=2)
    # coif is the one target with cos units; its top weight scales |v| by −1 at Δw = −2 (an
    # invisible change), so compare the renderer on its base image and random directions
    net = specs.load_network("picbreeder:coif")
    cases = [
        {"res": 24, "pert": None},
        {"res": 24, "pert": {"seed": 5, "delta": 1.5}},
        {"res": 17, "pert": {"seed": 6, "delta": -2.0}},
    ]
    got = run_js(tmp_path, explorer.export(net), cases)
    for case, img in zip(cases, got):
        assert np.abs(img - reference(net, case)).mean(axis=(0, 1)).max() < 1e-4, case
    assert np.abs(got[1] - got[0]).mean() > 1e-3


# --------------------------------------------------------------------------------------------
# The gallery and "complexity predicts depth"


@pytest.fixture(scope="module")
def table(picbreeder_dir, extra_installed):
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("VOLRATIO_DATA", str(extra_installed))
        return gallery.gallery()


def test_gallery_has_every_target_with_its_structure_and_ratio(table, extra_data):
    assert list(table["name"]) == list(picbreeder.ALL_NAMES)
    assert {n: tuple(table.set_index("name").loc[n, ["depth", "width", "nonzero"]]) for n in picbreeder.NAMES} == {
        "skull": (12, 22, 147),
        "butterfly": (16, 23, 281),
        "apple": (33, 38, 918),
    }
    for name, depth in FORK_ARCH_DEPTH.items():
        assert table.set_index("name").loc[name, "depth"] == depth == int(picbreeder.fer_arch(name).split(";")[0])
    assert list(table["network"] == "layerized genome") == [True] * 3 + [False] * 13
    assert (table["nonzero"] < table["weights"]).all() and (table["png_ratio"] > 1).all()
    assert set(table["ratio_res"]) == {gallery.RATIO_RES} and set(table["pillow"]) == {complexity.pillow_version()}
    row = table.set_index("name").loc["plane"]
    assert row["png_ratio"] == complexity.png_ratio("picbreeder:plane", gallery.RATIO_RES).ratio


def test_complexity_vs_depth_fit(table):
    fit = gallery.complexity_vs_depth(table)
    lr = stats.linregress(table["png_ratio"], table["depth"])
    s = fit.summary()
    assert s["n"] == 16 and np.isclose(s["slope"], lr.slope) and np.isclose(s["r2"], lr.rvalue**2)
    assert np.isclose(s["p_value"], lr.pvalue) and s["ratio_res"] == gallery.RATIO_RES
    assert 0 <= s["r2_lo"] <= s["r2"] <= s["r2_hi"] <= 1
    assert fit.predictor.names == list(picbreeder.ALL_NAMES)
    assert gallery.complexity_vs_depth(table).summary() == s  # seeded


def test_r2_interval():
    x = np.arange(10.0)
    assert r2_interval(x, 2 * x + 1, n_boot=200) == pytest.approx((1.0, 1.0))
    rng = np.random.default_rng(0)
    y = x + rng.normal(0, 3, 10)
    lo, hi = r2_interval(x, y, n_boot=2000)
    assert 0 <= lo < stats.linregress(x, y).rvalue ** 2 < hi <= 1
    lo2, hi2 = r2_interval(x, y, level=0.5, n_boot=2000)
    assert lo <= lo2 <= hi2 <= hi  # a lower level, a narrower interval
    with pytest.raises(DepthError, match="≥ 3 points"):
        r2_interval([1, 2], [1, 2])
    with pytest.raises(DepthError, match="level"):
        r2_interval(x, y, level=1.5)
