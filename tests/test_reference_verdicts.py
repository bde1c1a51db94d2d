"""The reference verdict set: stored rows regenerate the same images; the protocol's counts."""

import pytest
import torch

from volratio import reference_verdicts as rv


@pytest.fixture(scope="module")
def table():
    return rv.load_verdicts()


def test_stored_set_has_the_protocols_shape(table):
    pert = table[table.kernel >= 0]
    assert len(table) == 678 and len(pert) == 646 and (table.kernel < 0).sum() == 32
    assert set(pert["delta"]) == {-2.0, -1.0, -0.5, -0.25, 0.25, 0.5, 1.0, 2.0}
    assert set(table["group"]) == set(rv.GROUPS) and set(table["res"]) == {64}
    assert table["pass1"].isin([0, 1]).all() and table["id"].is_unique
    twice = table.dropna(subset=["pass2"])
    assert len(twice) == 136  # a fifth, judged again
    # the README's consistency numbers, recomputed
    assert (twice.pass1 == twice.pass2).sum() == 129
    assert rv.cohen_kappa(twice.pass1, twice.pass2.astype(int)) == pytest.approx(0.877, abs=5e-4)


def test_kappa_and_wilson_known_values():
    assert rv.cohen_kappa([1, 1, 0, 0], [1, 1, 0, 0]) == 1.0
    assert rv.cohen_kappa([1, 0, 1, 0], [0, 1, 0, 1]) == -1.0
    # po = 0.75, pe = 0.5 → κ = 0.5
    assert rv.cohen_kappa([1, 1, 0, 0], [1, 0, 0, 0]) == pytest.approx(0.5)


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
    m = rv.mosaic(imgs, list(range(7)), cols=3, scale=2, header=imgs[0], header_caption="ref")
    assert m.size == (3 * (16 + 6) + 6, (16 + 14 + 6) * 4 + 6)


@pytest.mark.slow
def test_trained_networks_and_rows_regenerate_exactly(table, picbreeder_dir):
    """The whole set's rows are drawn again identically, and a sample of images of the trained
    networks (dense, SP, baselines, scene) hashes to the stored values (a minute of training)."""
    cfg = rv.ReferenceSetConfig()
    nets = rv.networks(cfg)
    rows = rv.sample_rows(cfg, nets)
    cols = ["id", "network", "member", "target", "label", "kernel", "row", "col", "delta", "res"]
    assert rows[cols].equals(table[cols])
    trained = table[~table.group.isin(["picbreeder", "fer-sgd"])]
    sample = trained.groupby("group").head(3).reset_index(drop=True)
    assert rv.image_sha(rv.render_rows(sample, nets)) == sample["sha256"].tolist()
