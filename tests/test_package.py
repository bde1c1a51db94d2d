"""The installed package is complete: what the library reads at run time lies inside it and is
listed as package data (so the wheel ships it; CI installs the wheel in a fresh venv and runs the
commands, .ci/run), and an installed copy never reports another repository's commit."""

import subprocess
import sys
from pathlib import Path

import volratio
from volratio.data import fer_data
from volratio.train import fused_kernel
from volratio.util import provenance

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

PACKAGE = Path(volratio.__file__).resolve().parent
PYPROJECT = PACKAGE.parent / "pyproject.toml"


def test_files_read_at_run_time_are_package_data():
    globs = tomllib.loads(PYPROJECT.read_text())["tool"]["setuptools"]["package-data"]["volratio"]
    shipped = {p.resolve() for g in globs for p in PACKAGE.glob(g)}
    read = [fused_kernel.SOURCE, fer_data.CHECKSUMS]
    for path in read:
        assert path.resolve().is_relative_to(PACKAGE), f"{path} lies outside the package"
        assert path.is_file() and path.resolve() in shipped, f"{path} is not listed in [tool.setuptools.package-data]"


def test_an_installed_copy_inside_another_repository_reports_no_commit(tmp_path, monkeypatch):
    """A wheel installed in a venv inside some project's git checkout: the commit is not that project's."""
    repo = tmp_path / "project"
    site = repo / "venv" / "lib"
    (site / "volratio" / "util").mkdir(parents=True)
    for args in (
        ["init", "-q"],
        ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "x"],
    ):
        subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)
    monkeypatch.setattr(provenance, "__file__", str(site / "volratio" / "util" / "provenance.py"))
    assert provenance.git_commit() is None
    monkeypatch.undo()
    assert provenance.git_commit() is None or len(provenance.git_commit().split("+")[0]) == 40
