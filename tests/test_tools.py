"""tools/: every script left there runs (its `--help`), and the probes the book cites keep the
shapes their notes state. A probe is a script beside the library, not part of it: the book cites
`tools/judge_cnn_probe.py`, `tools/xfit_all_sets_probe.py` and `tools/anchored_verdicts.py`."""

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
TOOLS = ROOT / "tools"
EXEMPT = {"cuda_check.py"}  # needs a GPU; covered by the CUDA checks, not here
SCRIPTS = sorted(p.name for p in TOOLS.glob("*.py") if p.name not in EXEMPT)


def load(name: str):
    spec = importlib.util.spec_from_file_location(name, TOOLS / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod  # dataclasses look their module up there
    spec.loader.exec_module(mod)
    return mod


def test_tools_holds_scripts_and_their_notes_only():
    """No migration maps or other data: a note (`.md`) stands beside the script it describes."""
    others = [p.name for p in TOOLS.iterdir() if p.suffix != ".py" and not p.name.startswith((".", "__"))]
    assert all(p.endswith(".md") and (TOOLS / p.replace(".md", ".py")).is_file() for p in others), others
    assert not list(TOOLS.glob("migrate_*")), "a migration is recorded in results/reference/README.md, then deleted"


@pytest.mark.parametrize("script", SCRIPTS)
def test_every_tool_runs(script):
    r = subprocess.run([sys.executable, str(TOOLS / script), "--help"], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.startswith("usage:"), r.stdout[:200]


def test_judge_cnn_probe_network_is_the_one_its_note_describes():
    """61,681 parameters; (B, 3, 32, 32) image and anchor → (B,) logits; augmentation transforms an
    image and its anchor jointly, so a pair of equal images stays equal and in [0, 1]."""
    probe = load("judge_cnn_probe")
    net = probe.Net()
    assert sum(p.numel() for p in net.parameters()) == 61_681
    x = torch.rand(5, 3, probe.RES, probe.RES, generator=torch.Generator().manual_seed(0))
    assert net.eval()(x, x).shape == (5,)
    xo, ao = probe.augment(x, x.clone(), torch.Generator().manual_seed(1))
    assert torch.equal(xo, ao) and not torch.equal(xo, x)
    assert xo.min() >= 0 and xo.max() <= 1
    assert probe.same("picbreeder:skull", "picbreeder:skull") and not probe.same("picbreeder:skull", "picbreeder:apple")


def test_xfit_probe_reference_rmse_falls_with_a_finer_mosaic(picbreeder_dir):
    """The probe's label-relative references: the target's mean colour, then its 4×4 and 8×8 area
    mosaics, each the least-squares fit on a finer nested partition, so their RMSEs fall in turn."""
    probe = load("xfit_all_sets_probe")
    ref = probe.reference_rmse("picbreeder:skull")
    assert ref["rel-flat"] > ref["rel-pix4"] > ref["rel-pix8"] > 0
