"""The pre-registered sixteen-target plan (`volratio.runs.sixteen`): its counts, chunks and entry rule."""

import numpy as np
import pandas as pd
import pytest

from volratio.commands.core import load_network, network_info
from volratio.data.targets import get_target
from volratio.runs import plan, sixteen


def test_the_fork_counts_are_the_fork_networks(picbreeder_dir):
    for name, count in sixteen.FORK_NONZEROS.items():
        assert network_info(load_network(f"picbreeder:{name}"))["nonzero"] == count, name


def test_every_fork_target_is_in_one_chunk_of_each_claim():
    in_sp = [n for names in sixteen.SP_CHUNKS.values() for n in names]
    in_muon = [n for names in sixteen.MUON_FIT_CHUNKS.values() for n in names]
    assert sorted(in_sp) == sorted(in_muon) == sorted(sixteen.FORK_NONZEROS)
    assert len(sixteen.FORK_NONZEROS) == 13


def test_the_plan_declares_the_chunks_with_the_claims_pruners():
    chunks = plan.chunks()
    for name, names in sixteen.SP_CHUNKS.items():
        owner, chunk = chunks[name]
        assert owner == "sparse_regime" and chunk.config["methods"] == list(sixteen.SP_METHODS)
        assert [c["target_nonzeros"] for c in chunk.cases] == [sixteen.FORK_NONZEROS[n] for n in names]
    for name in sixteen.MUON_FIT_CHUNKS:
        owner, chunk = chunks[name]
        assert owner == "optimizers" and {c["depth"] for c in chunk.cases} == {sixteen.MUON_DEPTH}


def test_flat_mse_is_the_variance_about_the_mean_colour():
    t = "planted:3"
    mse = sixteen.flat_mse(t, 16)
    image = np.asarray(get_target(t).image(16), dtype=np.float64)
    assert mse == pytest.approx(float(image.var()) if image.ndim == 2 else float(image.reshape(256, -1).var(0).mean()))
    assert mse > 0


def test_the_entry_rule_counts_fitting_dense_networks():
    t = "planted:3"
    flat = sixteen.flat_mse(t, 16)
    share = sixteen.FIT_SHARE
    fits_two = pd.DataFrame(
        {"target": t, "member": [0, 1, 2], "dense_mse": [0.5 * share * flat, share * flat, 2 * flat]}
    )
    fits_one = fits_two.assign(dense_mse=[0.5 * share * flat, 1.01 * share * flat, 2 * flat])
    got = sixteen.entry(pd.concat([fits_two, fits_one.assign(target="planted:4")]), 16)
    assert got.set_index("target").enters.to_dict() == {"planted:3": True, "planted:4": False}
    assert got.fitting.tolist() == [2, 1] and got.networks.tolist() == [3, 3]


def test_the_first_three_targets_enter_by_their_stored_fit(picbreeder_dir):
    from volratio.report.readings import sixteen as reading

    entered = reading.entry_table().set_index("target")
    for t in ("picbreeder:skull", "picbreeder:butterfly", "picbreeder:apple"):
        assert entered.enters[t] and entered.worst_share[t] < sixteen.FIT_SHARE, t
    table, _ = reading.rows()
    assert set(table.target) >= {"picbreeder:skull", "picbreeder:butterfly", "picbreeder:apple"}
    assert set(table.method) == {"sp", *sixteen.SP_METHODS}


def test_the_plan_commit_is_the_one_that_added_the_plan():
    import shutil
    import subprocess
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    if shutil.which("git") is None or not (root / ".git").exists():
        pytest.skip("needs git and the repository's history (a clone, not an unpacked archive)")
    out = subprocess.run(["git", "log", "--diff-filter=A", "--format=%H", "--", sixteen.PLAN],
                         cwd=root, capture_output=True, text=True, check=True).stdout.split()  # fmt: skip
    if not out:
        pytest.skip("the clone's history does not reach the plan's commit (a shallow clone)")
    assert out[-1].startswith(sixteen.PLAN_COMMIT)


def test_the_plan_status_counts_what_is_stored(picbreeder_dir):
    from volratio.report.readings import sixteen as reading

    status = reading.plan_status()
    assert list(status.index) == ["sp-vs-pruners", "muon-above-adam"]
    assert (status["targets planned"] == 16).all() and (status.run >= 3).all()
    assert (status.entered <= status.scored).all() and (status.scored <= status.run).all()
    assert sixteen.PLAN_COMMIT in reading.announcement()
