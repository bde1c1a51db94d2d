"""The reference verdict set: stored rows regenerate the same images; the protocol's counts."""

import pytest
import torch

from volratio.calibration import reference_verdicts as rv
from volratio.emc2 import DEFAULT_DELTAS
from volratio.util.stats import cohen_kappa

COLS = ["id", "network", "member", "target", "label", "kernel", "row", "col", "delta", "res"]


def test_the_stored_networks_are_the_sets_and_checked():
    """The trained networks come from data/judge_reference/networks/, each checked by SHA-256; a
    changed file is refused with the fix."""
    index = rv.json.loads(rv.NETWORKS_JSON.read_text())
    nets = rv.stored_networks()
    assert list(nets) == list(index["networks"]) and len(nets) == 26 and index["built_at_commit"] == "feaae45"
    assert all(rn.net.population >= 1 and 0 <= rn.member < rn.net.population for rn in nets.values())


def test_a_changed_network_file_is_refused(tmp_path, monkeypatch):
    import shutil

    folder = tmp_path / "networks"
    shutil.copytree(rv.NETWORKS_DIR, folder)
    first = next(iter(rv.json.loads(rv.NETWORKS_JSON.read_text())["networks"].values()))["file"]
    (folder / first).write_bytes((folder / first).read_bytes()[:-1] + b"\x00")
    monkeypatch.setattr(rv, "NETWORKS_DIR", folder)
    with pytest.raises(rv.DataNotFoundError, match="SHA-256 mismatch.*restore it from git"):
        rv.stored_networks()


@pytest.fixture(scope="module")
def table():
    return rv.load_verdicts()


def test_stored_set_has_the_protocols_shape(table):
    pert = table[table.kernel >= 0]
    assert len(table) == 678 and len(pert) == 646 and (table.kernel < 0).sum() == 32
    assert set(pert["delta"]) == set(DEFAULT_DELTAS)
    assert set(table["group"]) == set(rv.GROUPS) and set(table["res"]) == {64}
    assert table["pass1"].isin([0, 1]).all() and table["id"].is_unique
    twice = table.dropna(subset=["pass2"])
    assert len(twice) == 136  # a fifth, judged again
    # the README's consistency numbers, recomputed
    assert (twice.pass1 == twice.pass2).sum() == 129
    assert cohen_kappa(twice.pass1, twice.pass2.astype(int)) == pytest.approx(0.877, abs=5e-4)


def test_kappa_and_wilson_known_values():
    assert cohen_kappa([1, 1, 0, 0], [1, 1, 0, 0]) == 1.0
    assert cohen_kappa([1, 0, 1, 0], [0, 1, 0, 1]) == -1.0
    # po = 0.75, pe = 0.5 → κ = 0.5
    assert cohen_kappa([1, 1, 0, 0], [1, 0, 0, 0]) == pytest.approx(0.5)


def test_picbreeder_and_fer_rows_regenerate_bit_for_bit(table, picbreeder_dir):
    rows = table[table.group.isin(["picbreeder", "fer-sgd"])]
    sample = rows.sample(24, random_state=0).reset_index(drop=True)
    nets = rv.networks(groups=["picbreeder", "fer-sgd"])
    imgs = rv.render_rows(sample, nets)
    assert rv.image_sha(imgs) == sample["sha256"].tolist()
    # a different perturbation gives a different image (the hash is not vacuous)
    other = sample.copy()
    other["delta"] = -other["delta"]
    assert rv.image_sha(rv.render_rows(other.iloc[:4], nets)) != sample["sha256"].tolist()[:4]


def test_unknown_group_is_a_clear_error():
    with pytest.raises(rv.VolratioError, match="unknown reference-set groups"):
        rv.networks(groups=["nope"])


def test_mosaic_layout():
    imgs = torch.rand(7, 8, 8, 3, generator=torch.Generator().manual_seed(0))
    m = rv.captioned_mosaic(imgs, list(range(7)), cols=3, scale=2, header=imgs[0], header_caption="ref")
    assert m.size == (3 * (16 + 6) + 6, (16 + 14 + 6) * 4 + 6)


@pytest.mark.slow
def test_trained_networks_and_rows_regenerate_exactly(table, picbreeder_dir):
    """The whole set's rows are drawn again identically, and every image of the trained networks
    (dense, SP, baselines, scene; stored in data/judge_reference/networks/) hashes to the stored
    values."""
    cfg = rv.ReferenceSetConfig()
    nets = rv.networks(cfg)
    rows = rv.sample_rows(cfg, nets)
    # on any machine: the networks, members, targets, labels, δ and resolution of every row, and the
    # perturbed weights themselves where no training decides which weights exist (no mask)
    fixed = ["id", "network", "member", "target", "label", "delta", "res"]
    assert rows[fixed].equals(table[fixed])
    unmasked = table.group.isin(["picbreeder", "fer-sgd", "dense", "scene-dense"])
    assert unmasked.sum() == 2 * 3 * (45 + 1) + 3 * (14 + 1) + (20 + 1)  # per network: perturbations + itself
    assert rows[unmasked][COLS].equals(table[unmasked][COLS])
    # the architectures: every stored perturbed weight lies inside its network as built here
    for name, part in table[table.kernel >= 0].groupby("network"):
        shapes = [tuple(m.shape[1:]) for m in nets[name].net.masks]  # (fan_in, fan_out) per kernel
        for k, r, c in part[["kernel", "row", "col"]].itertuples(index=False):
            assert k < len(shapes) and r < shapes[k][0] and c < shapes[k][1], (name, k, r, c, shapes)
    # matched sparsity: the weight pruners keep SP's number of weights, the unit pruners (matched on
    # units) fewer weights than the dense network of their target, as SP does
    nnz = {n: sum(int(m[rn.member].sum()) for m in rn.net.masks) for n, rn in nets.items()}
    for t in rv.TARGETS:
        for method in ("imp", "wanda", "magnitude", "random"):
            assert nnz[f"{method}:{t}"] == nnz[f"sp:{t}"], (method, t)
        for method in ("sp", "llm-pruner", "random-units"):
            assert nnz[f"{method}:{t}"] < nnz[f"dense:{t}"], (method, t)
    assert nnz["scene-sp:scene"] < nnz["scene-dense:scene"]
    # the stored networks (trained at the commit that judged the set) give every stored row and image,
    # on any machine: rendering is exact float64 arithmetic on fixed weights
    assert rows[COLS].equals(table[COLS])
    trained = table[~table.group.isin(["picbreeder", "fer-sgd"])].reset_index(drop=True)
    assert rv.image_sha(rv.render_rows(trained, nets)) == trained["sha256"].tolist()
