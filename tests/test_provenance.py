"""When each claim's rule was fixed (`volratio.report.provenance`): the named commit exists and
fixed the rule, and the table sets it against the stored chunks' manifests."""

import shutil
import subprocess
from pathlib import Path

import pytest

from volratio.errors import VolratioError
from volratio.report import provenance
from volratio.report.catalogue import CLAIMS

ROOT = Path(__file__).resolve().parents[1]


def test_every_claim_names_its_chunks_and_the_table_reads_their_manifests():
    t = provenance.rule_table()
    assert list(t.index) == list(CLAIMS)
    assert all(CLAIMS[k].chunks for k in CLAIMS)
    assert set(t["the rule came"]) <= {
        "before its data were stored",
        "after its data were stored",
        "after some of its data were stored (more were added after it)",
    }
    # the connectivity claim's extra seeds (sparse_regime_more) were bought after the rule was fixed
    assert t.loc["sp-vs-pruners", "the rule came"].startswith("after some")
    # every chunk of the reference store was stored before the common rule: the page says so; a claim
    # with a later rule commit names it, and that commit came before its deciding runs
    later = t.index.isin(list(provenance.CLAIM_RULE_COMMITS))
    assert (t.loc[~later, "the rule came"] != "before its data were stored").all()
    assert (t.loc[later, "the rule came"] == "before its data were stored").all()
    assert (t.loc[later, "rule commit"] != provenance.RULE_COMMIT).all()


@pytest.mark.skipif(not (ROOT / ".git").exists() or shutil.which("git") is None, reason="needs the git history")
def test_the_rule_commit_is_in_the_history_and_fixed_the_rule():
    out = subprocess.run(["git", "-C", str(ROOT), "show", "-s", "--format=%cI", provenance.RULE_COMMIT],
                         capture_output=True, text=True)  # fmt: skip
    if out.returncode != 0:
        pytest.skip(f"commit {provenance.RULE_COMMIT} not in this clone's history (a shallow clone)")
    assert out.stdout.strip() == provenance.RULE_COMMITTED_AT
    files = subprocess.run(["git", "-C", str(ROOT), "show", "--name-only", "--format=", provenance.RULE_COMMIT],
                           capture_output=True, text=True).stdout.split()  # fmt: skip
    assert {"volratio/util/verdicts.py", "volratio/report/catalogue.py", "volratio/util/pooling.py"} <= set(files)


@pytest.mark.skipif(not (ROOT / ".git").exists() or shutil.which("git") is None, reason="needs the git history")
@pytest.mark.parametrize("claim", list(provenance.CLAIM_RULE_COMMITS))
def test_a_later_rule_commit_is_in_the_history_and_fixed_its_comparison(claim):
    commit, at, _ = provenance.CLAIM_RULE_COMMITS[claim]
    out = subprocess.run(["git", "-C", str(ROOT), "show", "-s", "--format=%cI", commit], capture_output=True, text=True)
    if out.returncode != 0:
        pytest.skip(f"commit {commit} not in this clone's history (a shallow clone)")
    assert out.stdout.strip() == at
    files = subprocess.run(["git", "-C", str(ROOT), "show", "--name-only", "--format=", commit],
                           capture_output=True, text=True).stdout.split()  # fmt: skip
    # it fixed the comparison (the decider or the claim's statistic) and the runs that decide it
    assert "examples/sweeps/reference.toml" in files
    assert {"volratio/report/deciders.py", "volratio/report/catalogue.py"} & set(files)


def test_a_missing_manifest_is_named(tmp_path):
    with pytest.raises(VolratioError, match=r"rho/manifest\.json: no manifest; run the chunk"):
        provenance.stored_between("rho", tmp_path)
