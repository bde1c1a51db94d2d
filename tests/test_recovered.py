"""The judge-free score of stored networks (`volratio.runs.recovered`): one row per stored network,
computed once and kept beside the chunk, recomputed when the networks or the config change, and
verified by recomputing a sample."""

import dataclasses
import json

import pandas as pd
import pytest

from volratio.rho import recovery
from volratio.runs import recovered
from volratio.runs.store import sha256_file

CFG = recovery.RecoveryConfig(res=16, controls=1)


@pytest.fixture(scope="module")
def root(run_plan, depth_plan, tmp_path_factory):
    _, root, report = run_plan(depth_plan(seeds=(0, 1)), "tiny", tmp_path_factory.mktemp("rec"))
    assert len(report.ran) == 2
    return root


def test_every_stored_network_is_a_row_with_its_scores_and_chance_levels(root):
    t = recovered.table("tiny", CFG, root)
    assert len(t) == 4 and set(t.seed) == {0, 1} and set(t.member) == {0, 1} and set(t.population) == {""}
    for f in recovered.FIELDS:
        assert t[f].between(0, 1).all(), f
    assert t.net_sha256.nunique() == 2  # one file per run, two members each


def test_the_table_is_kept_beside_the_chunk_and_read_back_unless_the_config_changes(root, monkeypatch):
    first = recovered.table("tiny", CFG, root)
    meta = json.loads((root / "tiny" / recovered.META).read_text())
    assert meta["config"] == dataclasses.asdict(CFG) and len(meta["networks"]) == 2

    def refuse(*a, **k):
        raise AssertionError("recomputed although the kept table is current")

    monkeypatch.setattr(recovered, "score", refuse)
    pd.testing.assert_frame_equal(recovered.table("tiny", CFG, root), first)
    with pytest.raises(AssertionError, match="recomputed"):  # another config is computed anew
        recovered.table("tiny", dataclasses.replace(CFG, margin=0.2), root)


def test_verify_recomputes_a_sample_exactly_and_names_a_changed_value(root):
    recovered.table("tiny", CFG, root)
    assert recovered.verify("tiny", sample=1, root=root) == 2
    kept = pd.read_parquet(root / "tiny" / recovered.FILE)
    kept["recovery"] += 0.01
    kept.to_parquet(root / "tiny" / recovered.FILE, index=False)
    with pytest.raises(recovered.RecoveryStoreError, match="does not match the SHA-256 in recovery.json"):
        recovered.verify("tiny", sample=2, root=root)
    # a table whose metadata vouches for it (its SHA-256 recorded) but whose values are wrong
    meta = json.loads((root / "tiny" / recovered.META).read_text())
    meta["table_sha256"] = sha256_file(root / "tiny" / recovered.FILE)
    (root / "tiny" / recovered.META).write_text(json.dumps(meta))
    with pytest.raises(recovered.RecoveryStoreError, match="recomputes differently"):
        recovered.verify("tiny", sample=2, root=root)
    for f in (recovered.FILE, recovered.META):  # the next tests compute it anew
        (root / "tiny" / f).unlink()


def test_a_chunk_without_planted_networks_is_refused(run_plan, depth_plan, tmp_path):
    _, root, _ = run_plan(depth_plan(target="image:camera"), "tiny", tmp_path)
    with pytest.raises(recovered.RecoveryStoreError, match="no stored network on a planted target"):
        recovered.table("tiny", CFG, root)


def test_a_table_not_to_be_kept_leaves_the_chunk_as_it_was(root):
    other = dataclasses.replace(CFG, margin=0.3)
    before = sorted(p.name for p in (root / "tiny").iterdir())
    meta = (root / "tiny" / recovered.META).read_text() if (root / "tiny" / recovered.META).exists() else None
    t = recovered.table("tiny", other, root, keep=False)
    assert len(t) == 4 and sorted(p.name for p in (root / "tiny").iterdir()) == before
    assert meta is None or (root / "tiny" / recovered.META).read_text() == meta
