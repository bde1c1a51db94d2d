"""The reference verdict set: stored rows regenerate the same images; the protocol's counts."""

import pytest
import torch

from volratio.emc2 import DEFAULT_DELTAS
from volratio.judges import reference_verdicts as rv
from volratio.util import machine as M

# the CPU kind that trained the set's networks: they regenerate bit for bit only on that kind
RECORDED = M.read(rv.DATA_DIR / "machine.json")
COLS = ["id", "network", "member", "target", "label", "kernel", "row", "col", "delta", "res"]


def other_kind_reason(what: str) -> str | None:
    """None on the recorded CPU kind; elsewhere the reason to skip the bit-for-bit part of a test."""
    here = M.identity()
    if M.same_kind(RECORDED, here):
        return None
    return (
        f"{what} regenerate bit for bit only on the CPU kind that built the set, {RECORDED['kind']} "
        f"({M.describe(RECORDED)}); this machine is {here['kind']} ({M.describe(here)})"
    )


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
    m = rv.captioned_mosaic(imgs, list(range(7)), cols=3, scale=2, header=imgs[0], header_caption="ref")
    assert m.size == (3 * (16 + 6) + 6, (16 + 14 + 6) * 4 + 6)


@pytest.mark.slow
def test_trained_networks_and_rows_regenerate_exactly(table, picbreeder_dir):
    """The whole set's rows are drawn again identically, and a sample of images of the trained
    networks (dense, SP, baselines, scene) hashes to the stored values (a minute of training).
    Training amplifies the last-bit differences of another CPU kind's kernels, so on another kind
    the pruned networks keep other weights: there the test checks what holds on any machine and
    skips the bit-for-bit part, naming both kinds."""
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
    if reason := other_kind_reason("the trained networks, their perturbed weights and images"):
        pytest.skip(reason)
    assert rows[COLS].equals(table[COLS])
    trained = table[~table.group.isin(["picbreeder", "fer-sgd"])]
    sample = trained.groupby("group").head(3).reset_index(drop=True)
    assert rv.image_sha(rv.render_rows(sample, nets)) == sample["sha256"].tolist()
