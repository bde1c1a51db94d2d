import json
import subprocess
import sys

from volratio.cli import main
from volratio.train import fused_kernel
from volratio.util.device import resolve_device


def run(capsys, *argv):
    rc = main(list(argv))
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_info_json_on_picbreeder(picbreeder_dir, capsys):
    rc, out, _ = run(capsys, "info", "picbreeder:skull", "--json")
    info = json.loads(out)
    assert rc == 0
    assert (info["depth"], info["width"], info["nonzero"]) == (12, 22, 147)
    assert info["arch"] == "12;cache:15,gaussian:4,identity:2,sin:1"
    assert len(info["live_units"]) == 12 and info["n_params"] == 5478


def test_train_without_a_compiler_uses_the_fast_path_and_says_so(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(fused_kernel, "_loaded", {})
    monkeypatch.setattr(fused_kernel, "_refusals", {})
    monkeypatch.setenv(fused_kernel.ENV_CACHE, str(tmp_path / "kernels"))
    monkeypatch.setenv("CXX", "/nonexistent")
    args = ["train", "planted:3", "--depth", "3", "--width", "4", "--steps", "10", "--res", "8", "--device", "cpu"]
    rc, out, _ = run(capsys, *args, "--out", str(tmp_path / "n.safetensors"))
    assert rc == 0 and "fast path" in out and "'/nonexistent' was not found" in out
    rc, out, _ = run(capsys, *args, "--out", str(tmp_path / "m.safetensors"), "--json")
    res = json.loads(out)
    assert rc == 0 and res["path"] == "fast" and "C++ compiler" in res["path_note"]
    rc, _, err = run(capsys, *args, "--out", str(tmp_path / "f.safetensors"), "--path", "fused")
    assert rc == 2 and "needs a C++ compiler" in err  # --path fused keeps the kernel's error


def test_train_then_info_and_render(tmp_path, capsys):
    out_net = tmp_path / "n.safetensors"
    rc, out, _ = run(
        capsys,
        "train",
        "planted:2",
        "--depth",
        "3",
        "--width",
        "6",
        "--steps",
        "30",
        "--res",
        "12",
        "--seed",
        "1",
        "--out",
        str(out_net),
        "--json",
    )
    res = json.loads(out)
    assert rc == 0 and res["final_loss"] < 1 and out_net.exists()
    # "auto": the fused kernel on a CPU where it builds, else (CUDA, no compiler) the fast path
    on_cpu = resolve_device("auto").type == "cpu"
    assert res["path"] == ("fused" if on_cpu and fused_kernel.unavailable() is None else "fast")
    eager = tmp_path / "e.safetensors"
    args = ["train", "planted:2", "--depth", "3", "--width", "6", "--steps", "30", "--res", "12", "--seed", "1"]
    rc, out2, _ = run(capsys, *args, "--path", "eager", "--out", str(eager), "--json")
    assert rc == 0 and json.loads(out2)["path"] == "eager"
    assert (
        abs(json.loads(out2)["final_loss"] - res["final_loss"]) <= 1e-5 * res["final_loss"]
    )  # same numbers to rounding
    rc, out, _ = run(capsys, "info", str(out_net), "--json")
    assert json.loads(out)["arch"] == "3;gaussian:6"
    png = tmp_path / "n.png"
    assert run(capsys, "render", str(out_net), "--res", "20", "--out", str(png))[0] == 0
    from PIL import Image

    assert Image.open(png).size == (20, 20)


def test_targets_lists_kinds(capsys):
    rc, out, _ = run(capsys, "targets", "--json")
    kinds = {r["kind"] for r in json.loads(out)}
    assert rc == 0 and {"picbreeder", "image", "planted", "scene", "file"} <= kinds


def test_errors_are_one_line_exit_2(capsys):
    rc, _, err = run(capsys, "info", "no-such-network")
    assert rc == 2 and "error:" in err and "Traceback" not in err


def test_entry_points_run():
    for cmd in ([sys.executable, "-m", "volratio", "--help"],):
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        assert r.returncode == 0 and "train" in r.stdout
