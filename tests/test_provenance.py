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
    assert set(t["the rule came"]) <= {"before its data were stored", "after its data were stored"}
    # every chunk of the reference store was stored before this rule: the page says so
    assert (t["the rule came"] == "after its data were stored").all()


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


def test_a_missing_manifest_is_named(tmp_path):
    with pytest.raises(VolratioError, match="no manifest for chunk 'rho'"):
        provenance.stored_between("rho", tmp_path)
