"""The reference plan is generated from the experiments, and the store holds exactly its runs.

`examples/sweeps/reference.toml` is written by `volratio reference plan --scale reference --out …` from
the chunks each experiment declares (`reference_chunks()`, built from its `Config.reference()`:
`volratio.runs.plan`), so a chunk equals its preset by construction. Here: the committed file is the
generated text, every chunk has a registered owner, and the store under `results/reference` holds
exactly the runs the plan names (a preset changed without re-running its chunk fails here). What the
stored runs hold is checked in tests/test_reference_store.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from volratio.cli import main
from volratio.runs import plan as P
from volratio.runs import reference as R
from volratio.runs import stored as S
from volratio.runs.registry import EXPERIMENTS, get_run
from volratio.runs.store import config_key

ROOT = Path(__file__).resolve().parents[1]
FILE = ROOT / "examples" / "sweeps" / "reference.toml"
PLAN = R.load_plan(FILE)
STORE = ROOT / "results" / "reference"
REGENERATE = "volratio reference plan --scale reference --out examples/sweeps/reference.toml"


def test_the_plan_file_is_the_generated_plan():
    assert FILE.read_text() == P.plan_text("reference"), f"the plan is out of date: run `{REGENERATE}`"


def test_the_command_writes_the_plan_or_prints_it(tmp_path, capsys):
    out = tmp_path / "plan.toml"
    assert main(["reference", "plan", "--scale", "reference", "--out", str(out)]) == 0
    assert out.read_text() == FILE.read_text()
    assert main(["reference", "plan"]) == 0 and capsys.readouterr().out == FILE.read_text()


def test_every_chunk_is_owned_by_a_registered_experiment():
    owners = {chunk: owner for chunk, (owner, _) in P.chunks().items()}
    assert list(owners) == list(PLAN) and set(owners.values()) <= set(EXPERIMENTS)
    assert list(P.ORDER) == list(PLAN), "name every chunk in volratio.runs.plan.ORDER, in the file's order"


def test_a_chunk_spelt_by_its_changes_is_its_complete_config():
    """`changes` leaves out only what the run function's parse fills in with the same value."""
    ref = get_run("depth_point").keyed({"target": "picbreeder:skull", "width": 12})
    spelt = P.changes("depth_point", ref)
    assert spelt == {"target": "picbreeder:skull", "width": 12}
    assert get_run("depth_point").keyed(spelt) == ref


def test_only_the_reference_plan_is_generated():
    with pytest.raises(P.PlanError, match="full.toml is written by hand"):
        P.chunks("full")


# chunks being run (resumable): the store holds some of their runs, never a run the plan does not name
IN_PROGRESS: tuple = (
    "sparse_regime_fork_c", "sparse_regime_fork_d",
    "sparse_regime_fork_e", "optimizers_fork_fit_a", "optimizers_fork_fit_b",
)  # fmt: skip


def test_the_store_holds_exactly_the_runs_of_the_plan():
    for chunk, sweep in PLAN.items():
        if chunk in IN_PROGRESS and chunk not in S.chunks(STORE):
            continue  # not started yet
        stored = {r["key"] for r in S.records(chunk, STORE)}
        if chunk in IN_PROGRESS:
            assert stored <= set(sweep.keys()), f"{chunk}: the store holds runs the plan does not name"
            continue
        assert stored == set(sweep.keys()), f"{chunk}: the store and the plan name different runs"


def test_every_stored_row_of_the_plan_is_its_complete_config_and_its_hash():
    """Every row of a chunk's store (its own runs and the rescores beside them) holds the complete
    config of its run function, and its key is the hash of its run name and that config."""
    for chunk, sweep in PLAN.items():
        if chunk in IN_PROGRESS and chunk not in S.chunks(STORE):
            continue  # not started yet
        for r in S.records(chunk, STORE, rescores=True):
            assert get_run(r["run"]).keyed(r["config"]) == r["config"], (chunk, r["key"])
            assert config_key(r["run"], r["config"]) == r["key"], (chunk, r["key"])
        assert {r["run"] for r in S.records(chunk, STORE)} == {sweep.run}, chunk
