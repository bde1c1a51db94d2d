"""Bad input: every case ends in exit status 2 and one line naming the problem and the
fix, or in a correct result — never a traceback, a hang, a silent wrong number or memory beyond
the budget; `--json` is strict JSON.

- `test_bad_input_cases`: one row per class of bad input (sizes, tracebacks, silently wrong,
  misleading errors, files, stores), run through the CLI in-process;
- `test_every_option_is_validated` + `test_parsers_refuse_generated_bad_values` (hypothesis): every
  subcommand's parser, every option, generated bad values;
- unit tests of the pieces: budget, threads, strict JSON, output checks, network headers, store.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import struct
import zlib
from pathlib import Path

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from volratio.cli import build_parser, main
from volratio.commands import _args as A
from volratio.commands.rho import int_list
from volratio.errors import BudgetError, OutputError, UsageError, VolratioError
from volratio.nets import CoordMLP
from volratio.util import budget, threads


def run(capsys, *argv):
    rc = main([str(a) for a in argv])
    out = capsys.readouterr()
    return rc, out.out, out.err


def strict_json(text: str):
    def refuse(c):
        raise ValueError(f"non-standard JSON token {c}")

    return json.loads(text, parse_constant=refuse)


def assert_one_line_error(rc, err, *fragments):
    lines = err.strip().splitlines()
    assert rc == 2, err
    assert len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith("volratio") and ": error: " in lines[0], err
    for f in fragments:
        assert f.lower() in lines[0].lower(), (f, lines[0])


# ---------------------------------------------------------------------------------------------
# Fixtures: small damaged or hostile files


def _png_header_only(path: Path, w: int, h: int, mode: int = 0) -> None:
    """A PNG whose header declares w×h (colour type `mode`) and whose data is one empty IDAT: what
    a decompression bomb looks like before decoding."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    ihdr = struct.pack(">IIBBBBB", w, h, 8, mode, 0, 0, 0)
    path.write_bytes(
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"")) + chunk(b"IEND", b"")
    )


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    import numpy as np
    from PIL import Image
    from safetensors.torch import save_file

    d = tmp_path_factory.mktemp("bad")
    net = CoordMLP("2;gaussian:4", head="grey", seed=0)
    net.save(d / "net.safetensors")
    bad = CoordMLP("2;gaussian:4", head="grey", seed=0)
    with torch.no_grad():
        bad.weights[1][0, 1, 2] = float("nan")
    bad.save(d / "nan.safetensors")
    meta = {"format": "volratio.CoordMLP/1", "arch": "2;gaussian:4", "head": "grey", "population": 1, "n_inputs": 4}
    good = {f"weight{i}": w.detach() for i, w in enumerate(net.weights)}
    good.update({f"mask{i}": m.to(torch.uint8) for i, m in enumerate(net.masks)})
    save_file(
        good,
        str(d / "noarch.safetensors"),
        metadata={"volratio": json.dumps({"format": meta["format"], "head": "grey"})},
    )
    save_file(
        good,
        str(d / "nohead.safetensors"),
        metadata={"volratio": json.dumps({"format": meta["format"], "arch": "2;gaussian:4"})},
    )
    save_file(good, str(d / "listmeta.safetensors"), metadata={"volratio": json.dumps([1, 2])})
    save_file(good, str(d / "nometa.safetensors"))
    ints = dict(good, **{f"weight{i}": torch.zeros_like(w, dtype=torch.int32) for i, w in enumerate(net.weights)})
    save_file(ints, str(d / "int32.safetensors"), metadata={"volratio": json.dumps(meta)})
    wrong = dict(good, weight1=torch.zeros(1, 4, 5))
    save_file(wrong, str(d / "shape.safetensors"), metadata={"volratio": json.dumps(meta)})
    # a sparse file whose header declares a 1.6 GB kernel (shapes consistent with its arch)
    n = 20000
    hm = dict(meta, arch=f"2;gaussian:{n}")
    header, off = {"__metadata__": {"volratio": json.dumps(hm)}}, 0
    for i, (fi, fo) in enumerate([(4, n), (n, n), (n, 1)]):
        for name, dt, item in ((f"weight{i}", "F32", 4), (f"mask{i}", "U8", 1)):
            header[name] = {"dtype": dt, "shape": [1, fi, fo], "data_offsets": [off, off + fi * fo * item]}
            off += fi * fo * item
    hb = json.dumps(header).encode()
    with open(d / "huge.safetensors", "wb") as f:
        f.write(struct.pack("<Q", len(hb)) + hb)
        f.truncate(8 + len(hb) + off)
    (d / "notimage.png").write_text("this is not a PNG\n")
    _png_header_only(d / "bomb.png", 20000, 20000)  # beyond Pillow's decompression-bomb limit
    _png_header_only(d / "big.png", 12000, 12000, mode=2)  # below it, but 10 GB as floats
    _png_header_only(d / "truncated.png", 64, 64, mode=2)  # header fine, data missing
    Image.fromarray(np.zeros((1, 100000), np.uint8)).save(d / "wide.png")
    Image.fromarray(np.zeros((20, 200), np.uint8)).save(d / "panorama.png")
    Image.fromarray(np.zeros((4, 4, 3), np.uint8)).save(d / "tiny.png")
    Image.fromarray(np.zeros((16, 16, 3), np.uint8)).save(d / "small.png")
    (d / "spec.toml").write_text('name = "x"\n')
    (d / "folder").mkdir()
    (d / "notastore").mkdir()
    (d / "notastore" / "notes.txt").write_text("hello")
    return d


def bad_input_cases(d: Path):
    """(name, argv, fragments the one-line error must contain). `OUT` is a fresh output path."""
    n = d / "net.safetensors"
    t = ["--target", "planted:1"]
    return [
        # unbounded sizes: refused before allocating, with the estimate
        ("render deep planted", ["render", "planted:1:depth=100000", "--out", "OUT.png"], ["depth", "[1, 64]"]),
        ("render res 1e6", ["render", n, "--res", "1000000", "--out", "OUT.png"], ["memory", "budget", "--res"]),
        (
            "render target res 1e6",
            ["render", "image:camera", "--res", "1000000", "--out", "OUT.png"],
            ["memory", "budget"],
        ),
        (
            "train width 1e8",
            ["train", "planted:1", "--width", "100000000", "--steps", "1", "--out", "OUT.st"],
            ["memory", "width"],
        ),
        (
            "train res 1e5",
            ["train", "planted:1", "--res", "100000", "--steps", "1", "--out", "OUT.st"],
            ["memory", "budget"],
        ),
        ("welch frame m=1e5", ["welch", "frame", "--m", "100000", "--n", "3"], ["memory", "fewer vectors"]),
        ("welch bound huge k", ["welch", "bound", "--m", "5", "--n", "1000000", "--k", "1000000"], ["binomial"]),
        ("file bomb", ["render", f"file:{d}/bomb.png", "--out", "OUT.png"], ["pixels", "smaller image"]),
        ("file 12000^2", ["render", f"file:{d}/big.png", "--out", "OUT.png"], ["12000×12000", "memory", "downscale"]),
        ("judge bomb", ["judge", f"{d}/bomb.png", *t], ["pixels", "smaller image"]),
        ("judge 12000^2", ["judge", f"{d}/big.png", *t], ["12000×12000", "memory", "downscale"]),
        (
            "judge reference bomb",
            ["judge", f"{d}/small.png", "--reference", f"{d}/bomb.png", "--label", "x"],
            ["pixels", "smaller image"],
        ),  # fmt: skip
        ("judge 4 px", ["judge", f"{d}/tiny.png", *t], ["4×4", "at least 8×8", "larger image"]),
        ("emc2 res 1", ["emc2", n, *t, "--res", "1"], ["1×1", "'anchored'", "--res 8"]),
        ("emc2 res 4 ssim", ["emc2", n, *t, "--res", "4", "--judge", "ssim"], ["4×4", "'ssim'", "--res 8"]),
        ("sparse huge safetensors", ["info", d / "huge.safetensors"], ["memory", "budget"]),
        ("emc2 res 1e5", ["emc2", n, *t, "--res", "100000"], ["memory", "--res"]),
        ("sweep-weights res 1e5", ["sweep-weights", n, "--res", "100000", "--out", "OUT.png"], ["memory", "--res"]),
        (
            "sweep-weights controls 1e9",
            ["sweep-weights", n, "--controls", "1e9", "--res", "8", "--out", "OUT.png"],
            ["memory", "--controls"],
        ),
        ("welch net maps res 1e5", ["welch", "net", n, "--vectors", "maps", "--res", "100000"], ["memory", "--res"]),
        ("depth ratio res 1e6", ["depth", "ratio", "image:camera", "--res", "1000000"], ["memory"]),
        (
            "rho basin samples 1e9",
            ["rho", "basin", "--target", "planted:1", "--W", "2", "--L", "1", "--samples", "1e9"],
            ["memory", "--samples"],
        ),
        (
            "train depth 1e5",
            ["train", "planted:1", "--depth", "100000", "--width", "1000", "--out", "OUT.st"],
            ["memory", "depth"],
        ),
        (
            "depth sweep depths 1..1e5",
            ["depth", "sweep", "planted:1", "--depths", "1..100000", "--out", "OUTDIR"],
            ["depths", "256"],
        ),
        (
            "rho boolean huge W",
            ["rho", "boolean", "--target", "chain:2", "--W", "5000", "--L", "3", "--samples", "10"],
            ["memory"],
        ),
        (
            "rho W range too long",
            ["rho", "boolean", "--target", "chain:2", "--W", "1-100000000", "--L", "2"],
            ["--W", "more than"],
        ),
        # tracebacks before
        (
            "out unwritable",
            ["render", "planted:1", "--res", "8", "--out", "/proc/volratio-test.png"],
            ["cannot write", "/proc"],
        ),
        ("out is a folder", ["render", "planted:1", "--res", "8", "--out", d / "folder"], ["folder", "file path"]),
        (
            "device banana",
            ["train", "planted:1", "--device", "banana", "--out", "OUT.st"],
            ["--device", "banana", "cpu"],
        ),
        ("steps -5", ["train", "planted:1", "--steps", "-5", "--out", "OUT.st"], ["--steps", "positive integer"]),
        ("lr nan", ["train", "planted:1", "--lr", "nan", "--out", "OUT.st"], ["--lr", "finite"]),
        ("lr -1", ["train", "planted:1", "--lr", "-1", "--out", "OUT.st"], ["--lr", "> 0"]),
        ("seed 1e20", ["train", "planted:1", "--seed", "1e20", "--out", "OUT.st"], ["--seed", "out of range"]),
        ("seed -1", ["emc2", n, *t, "--seed", "-1"], ["--seed"]),
        (
            "confidence 1.5",
            ["rho", "boolean", "--target", "chain:2", "--W", "2", "--L", "2", "--confidence", "1.5"],
            ["--confidence", "(0, 1)"],
        ),
        ("planted:-1", ["render", "planted:-1", "--out", "OUT.png"], ["seed", "planted:3"]),
        ("file not an image", ["render", f"file:{d}/notimage.png", "--out", "OUT.png"], ["not an image", "png"]),
        ("file truncated", ["render", f"file:{d}/truncated.png", "--res", "8", "--out", "OUT.png"], ["damaged"]),
        ("metadata lacks arch", ["info", d / "noarch.safetensors"], ["'arch'", "re-create"]),
        ("metadata lacks head", ["info", d / "nohead.safetensors"], ["'head'", "re-create"]),
        ("metadata is a list", ["info", d / "listmeta.safetensors"], ["metadata", "re-create"]),
        ("no volratio metadata", ["info", d / "nometa.safetensors"], ["metadata", "CoordMLP.save"]),
        ("int32 weights", ["info", d / "int32.safetensors"], ["I32", "F32"]),
        ("kernel of the wrong shape", ["info", d / "shape.safetensors"], ["weight1", "shape"]),
        (
            "calibration not planted",
            ["depth", "predict", "planted:1", "--calibration", "image:camera"],
            ["planted", "calibration"],
        ),
        (
            "scheduler not a url",
            ["sweep", "x.toml", "--scheduler", "not a url", "--out", "OUTDIR"],
            ["--scheduler", "tcp://"],
        ),
        # silently wrong before
        ("deltas nan", ["emc2", n, *t, "--deltas", "nan,1", "--json"], ["--deltas", "nan", "finite"]),
        ("deltas inf", ["emc2", n, *t, "--deltas", "1,inf", "--json"], ["--deltas", "finite"]),
        ("max-params -4", ["emc2", n, *t, "--max-params", "-4"], ["--max-params", "positive"]),
        ("max-params 0", ["emc2", n, *t, "--max-params", "0"], ["--max-params", "positive"]),
        ("sweep-weights n -3", ["sweep-weights", n, "--n", "-3", "--out", "OUT.png"], ["--n", "positive"]),
        (
            "sweep-weights params out of range",
            ["sweep-weights", n, "--params", "0:-1:2", "--res", "8", "--out", "OUT.png"],
            ["0:-1:2", "volratio info"],
        ),
        (
            "rho samples -10",
            ["rho", "boolean", "--target", "chain:2", "--W", "2", "--L", "2", "--samples", "-10"],
            ["--samples"],
        ),
        (
            "threshold nan",
            ["rho", "basin", "--target", "planted:1", "--W", "2", "--L", "1", "--threshold", "nan"],
            ["--threshold"],
        ),
        ("nan weights render", ["render", d / "nan.safetensors", "--out", "OUT.png"], ["NaN", "retrain"]),
        ("nan weights emc2", ["emc2", d / "nan.safetensors", *t, "--json"], ["NaN", "retrain"]),
        ("100000x1 png", ["render", f"file:{d}/wide.png", "--out", "OUT.png"], ["100000×1", "at least"]),
        ("panorama png", ["render", f"file:{d}/panorama.png", "--res", "8", "--out", "OUT.png"], ["crop", "drop"]),
        ("prune tau 2", ["prune", n, *t, "--method", "sp", "--tau", "2", "--out", "OUT.st"], ["--tau", "[0, 1]"]),
        ("prune rounds -1", ["prune", n, *t, "--method", "sp", "--rounds", "-1", "--out", "OUT.st"], ["--rounds"]),
        ("prune steps -3", ["prune", n, *t, "--method", "sp", "--steps", "-3", "--out", "OUT.st"], ["--steps"]),
        (
            "prune sparsity 1",
            ["prune", n, *t, "--method", "random", "--sparsity", "1", "--out", "OUT.st"],
            ["--sparsity"],
        ),
        # misleading errors before
        ("planted:abc", ["render", "planted:abc", "--out", "OUT.png"], ["planted", "seed must be an integer"]),
        ("planted depth=0", ["render", "planted:1:depth=0", "--out", "OUT.png"], ["depth", "[1, 64]"]),
        ("image:nosuch", ["render", "image:nosuch", "--out", "OUT.png"], ["unknown image", "camera"]),
        ("scene part without kind", ["render", "scene:skull+nosuch", "--out", "OUT.png"], ["'skull'", "KIND:NAME"]),
        (
            "neither network nor target",
            ["render", "banana:1", "--out", "OUT.png"],
            ["neither a network", "volratio targets"],
        ),
        # files
        ("out exists", ["render", "planted:1", "--res", "8", "--out", d / "spec.toml"], ["already exists", "--force"]),
        (
            "out is the input",
            ["prune", n, *t, "--method", "random", "--sparsity", "0.5", "--out", n],
            ["is the input", "--force"],
        ),
        (
            "out parent missing",
            ["render", "planted:1", "--res", "8", "--out", d / "a" / "b" / "x.png"],
            ["does not exist", "mkdir"],
        ),
        (
            "data fetch --dest missing parent",
            ["data", "fetch", "--dest", d / "no" / "where"],
            ["--dest", "does not exist"],
        ),
        ("store --out is a file", ["sweep", "x.toml", "--out", d / "spec.toml"], ["is a file"]),
        # stores
        ("results of a non-store folder", ["results", d / "notastore"], ["not a results store"]),
        ("results of a missing folder", ["results", d / "nosuch"], ["no such results store"]),
        # the CLI's own options
        ("bad memory budget", ["--memory-budget", "lots", "targets"], ["memory budget", "16G"]),
        ("unknown command", ["frobnicate"], ["invalid choice"]),
        ("missing required", ["train", "planted:1"], ["--out"]),
    ]


_CASES = [c[0] for c in bad_input_cases(Path("/x"))]


@pytest.mark.parametrize("name", _CASES)
def test_bad_input_cases(name, files, tmp_path, capsys):
    case = {c[0]: c for c in bad_input_cases(files)}[name]
    argv = [str(a).replace("OUTDIR", str(tmp_path / "store")).replace("OUT", str(tmp_path / "out")) for a in case[1]]
    before = {p: p.stat().st_mtime_ns for p in files.iterdir()}
    rc, out, err = run(capsys, *argv)
    assert_one_line_error(rc, err, *case[2])
    assert out == ""
    assert not list(tmp_path.iterdir()), "an error must not leave an output behind"
    assert {p: p.stat().st_mtime_ns for p in files.iterdir()} == before, "an input was modified"
    assert not (files / "a").exists(), "a missing parent folder was created"


# ---------------------------------------------------------------------------------------------
# Correct results where the input is fine


def test_force_overwrites_and_saved_files_have_ordinary_modes(files, tmp_path, capsys):
    out = tmp_path / "x.png"
    out.write_text("old")
    assert run(capsys, "render", "planted:1", "--res", "8", "--out", out, "--force")[0] == 0
    assert out.read_bytes()[:4] == b"\x89PNG"
    net_out = tmp_path / "n.safetensors"
    rc, stdout, _ = run(
        capsys,
        "train",
        "planted:1",
        "--depth",
        "1",
        "--width",
        "3",
        "--steps",
        "2",
        "--res",
        "8",
        "--out",
        net_out,
        "--json",
    )
    assert rc == 0 and strict_json(stdout)["out"] == str(net_out)
    umask = os.umask(0)
    os.umask(umask)
    for p in (out, net_out):
        assert p.stat().st_mode & 0o777 == 0o666 & ~umask, oct(p.stat().st_mode)


def test_prune_force_may_replace_its_input(files, tmp_path, capsys):
    src = tmp_path / "n.safetensors"
    src.write_bytes((files / "net.safetensors").read_bytes())
    rc, _, err = run(
        capsys,
        "prune",
        src,
        "--target",
        "planted:1",
        "--method",
        "magnitude",
        "--sparsity",
        "0.2",
        "--exclude-output",
        "--steps",
        "0",
        "--res",
        "8",
        "--out",
        src,
        "--force",
        "--json",
    )
    assert rc == 0, err
    assert CoordMLP.load(src).provenance["pruned"]["method"] == "magnitude"


def test_json_is_strict():
    from volratio.commands._common import emit

    class Args:
        json = True

    import io
    import sys

    buf, old = io.StringIO(), sys.stdout
    sys.stdout = buf
    try:
        emit(
            Args,
            {
                "a": float("nan"),
                "b": [float("inf"), -float("inf"), 1.5],
                "c": torch.tensor(2.0),
                "d": __import__("numpy").array([float("nan"), 1.0]),
                "e": (1, 2),
                "p": Path("x"),
            },
        )
    finally:
        sys.stdout = old
    assert strict_json(buf.getvalue()) == {
        "a": None,
        "b": [None, None, 1.5],
        "c": 2.0,
        "d": [None, 1.0],
        "e": [1, 2],
        "p": "x",
    }


def test_budget_can_be_raised_and_lowered(files, tmp_path, capsys, monkeypatch):
    monkeypatch.delenv(budget.ENV, raising=False)
    rc, _, err = run(
        capsys, "--memory-budget", "1M", "render", "planted:1", "--res", "256", "--out", tmp_path / "a.png"
    )
    assert_one_line_error(rc, err, "1.05 MB", "--memory-budget")
    assert budget.ENV not in os.environ  # the flag holds for that command only
    monkeypatch.setenv(budget.ENV, "none")
    assert budget.budget_bytes() is None
    budget.check(1e30, "anything", "nothing")  # unlimited
    monkeypatch.setenv(budget.ENV, "2G")
    assert budget.budget_bytes() == 2 << 30
    with pytest.raises(BudgetError, match=r"needs about 3 GB.*budget of 2.15 GB.*shrink it"):
        budget.check(3e9, "this", "shrink it")
    assert [budget.parse_size(s) for s in ("512M", "1.5k", "2e9", "10GiB")] == [512 << 20, 1536, 2 * 10**9, 10 << 30]
    for bad in ("-1G", "lots", "0", ""):
        with pytest.raises(VolratioError):
            budget.parse_size(bad)


def test_cli_interrupt_and_broken_pipe_are_one_line(monkeypatch, capsys):
    from volratio.commands import core

    def interrupted(args):
        raise KeyboardInterrupt

    monkeypatch.setattr(core, "cmd_targets", interrupted)
    rc, _, err = run(capsys, "targets")
    assert rc == 130 and len(err.strip().splitlines()) == 1 and "interrupted" in err and "Traceback" not in err

    def closed(args):
        raise BrokenPipeError

    monkeypatch.setattr(core, "cmd_targets", closed)
    rc, _, err = run(capsys, "targets")
    assert rc == 141 and err == ""


def test_targets_into_a_closed_pipe_exits_quietly():
    """`volratio targets | head -1`: the reader is gone before the writer writes."""
    import subprocess
    import sys

    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    r, w = os.pipe()
    os.close(r)
    try:
        p = subprocess.run(
            [sys.executable, "-m", "volratio", "targets"],
            stdout=w,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            timeout=120,
            check=False,
        )
    finally:
        os.close(w)
    assert p.returncode == 141 and p.stderr == "", p.stderr


def test_damaged_store_without_records_is_an_error(tmp_path, capsys):
    d = tmp_path / "store"
    d.mkdir()
    (d / "results.parquet").write_bytes(b"not parquet")
    rc, _, err = run(capsys, "results", d)
    assert_one_line_error(rc, err, "damaged", "--resume")


# ---------------------------------------------------------------------------------------------
# Library pieces


def test_thread_rule(monkeypatch):
    assert 1 <= threads.usable_cores() <= (os.cpu_count() or 1) and threads.free_cores() >= 1
    monkeypatch.delenv(threads.ENV, raising=False)
    monkeypatch.setattr(threads, "usable_cores", lambda: 2)
    monkeypatch.setattr(threads, "busy_cores", lambda: 1)  # a 2-core machine with one core busy
    assert threads.threads_per_worker() == 1
    monkeypatch.setattr(threads, "usable_cores", lambda: 16)
    monkeypatch.setattr(threads, "busy_cores", lambda: 0)
    assert threads.threads_per_worker(1) == 16 and threads.threads_per_worker(4) == 4
    assert threads.threads_per_worker(32) == 1  # never zero
    monkeypatch.setattr(threads, "busy_cores", lambda: 20)
    assert threads.threads_per_worker() == 1
    monkeypatch.setenv(threads.ENV, "3")
    assert threads.threads_per_worker(8) == 3
    monkeypatch.setenv(threads.ENV, "many")
    with pytest.raises(VolratioError, match="VOLRATIO_THREADS"):
        threads.threads_per_worker()


def test_check_out_rules(tmp_path):
    from volratio.util.fileio import check_out

    (tmp_path / "f").write_text("x")
    assert check_out(tmp_path / "new.png") == tmp_path / "new.png"
    assert check_out(tmp_path / "f", force=True) == tmp_path / "f"
    with pytest.raises(OutputError, match="already exists"):
        check_out(tmp_path / "f")
    with pytest.raises(OutputError, match="is the input"):
        check_out(tmp_path / "f", inputs=[str(tmp_path / "f")])
    assert check_out(tmp_path / "store", folder=True)  # a new store folder is fine
    with pytest.raises(OutputError, match="is a file"):
        check_out(tmp_path / "f", folder=True)
    with pytest.raises(OutputError, match="does not exist"):
        check_out(tmp_path / "no" / "store", folder=True)


def test_library_refuses_bad_values_too():
    from volratio.data.targets import get_target
    from volratio.emc2 import subsample
    from volratio.train import TrainConfig, train
    from volratio.util.device import generator, resolve_device

    with pytest.raises(VolratioError, match="seed"):
        generator(2**70)
    with pytest.raises(VolratioError, match="not a device"):
        resolve_device("banana:7")
    if not torch.cuda.is_available():
        with pytest.raises(VolratioError, match="CUDA is not available"):
            resolve_device("cuda")
    with pytest.raises(VolratioError, match="max_params"):
        subsample(__import__("numpy").zeros((5, 3), int), -4)
    net = CoordMLP("1;gaussian:3", head="grey")
    img = get_target("planted:1").image(8)
    for bad in (dict(steps=-3), dict(lr=float("nan")), dict(lr=-1.0), dict(log_every=0)):
        with pytest.raises(VolratioError, match="TrainConfig"):
            train(net, img, TrainConfig(**bad))


# ---------------------------------------------------------------------------------------------
# Every parser, every option (hypothesis)

# options whose value is free text checked by the command itself (specs, paths, labels)
FREE_TEXT = {
    "spec",
    "target",
    "net",
    "dir",
    "out",
    "dest",
    "label",
    "judge_model",
    "activation",
    "params",
    "chunk",
    "store",
    "calibration",
    "depths",
    "match",
    "memory_budget",
    "url",
    "reference",
    "model",
    "groups",
    "sets",
    "name",
    "note",
}  # checked by their commands (base_url, image loading, model loading, group names)
VALIDATORS = (A.Int, A.Float, A.FloatList)


def _subparsers(parser, path=()):
    """(argv prefix, parser) for every leaf subcommand."""
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        yield path, parser
        return
    for name, p in subs[0].choices.items():
        yield from _subparsers(p, path + (name,))


def _valid(action) -> str:
    """A value inside the domain of `action` (to fill required arguments)."""
    if action.choices:
        return str(next(iter(action.choices)))
    t = action.type
    if isinstance(t, A.Int):
        return str(max(t.lo or 1, 2))
    if isinstance(t, A.Float):
        return "0.5" if t.hi <= 1 else "1"
    if t is int_list:
        return "2"
    return {"target": "planted:1", "spec": "planted:1", "net": "planted:1"}.get(action.dest, "x")


def _base_argv(path, parser) -> list[str]:
    argv = list(path)
    for a in parser._actions:
        if a.required and a.option_strings:
            argv += [a.option_strings[0], _valid(a)]
        elif not a.option_strings and a.nargs not in (argparse.PARSER,) and a.dest != "help":
            argv.append(_valid(a))
    return argv


LEAVES = list(_subparsers(build_parser()))
VALUED = [
    (path, p, a) for path, p in LEAVES for a in p._actions if a.option_strings and a.nargs != 0 and a.dest != "help"
]


def test_every_option_is_validated():
    """Every option that takes a value has choices, a validator from volratio.commands._args, or
    is free text that its command checks (a spec, a path, a label)."""
    loose = [
        (" ".join(path), a.option_strings[0])
        for path, p, a in VALUED
        if not a.choices
        and not isinstance(a.type, VALIDATORS)
        and a.type not in (A.device, A.scheduler_address, A.key_value, A.artifact_names, int_list)
        and a.dest not in FREE_TEXT
    ]
    assert loose == [], f"options without a validator: {loose}"
    assert len(LEAVES) >= 15 and len(VALUED) >= 60


BAD_TEXT = st.one_of(
    st.sampled_from(
        [
            "nan",
            "-nan",
            "inf",
            "-inf",
            "Infinity",
            "",
            " ",
            "-1",
            "-5",
            "0",
            "-0.0",
            "1e20",
            "-1e20",
            "100000000000000000000",
            "1.5",
            "2",
            "1e-400",
            "0x10",
            "1,2",
            "nan,1",
            "banana",
            "cuda:99",
            "--",
            "-",
            "∞",
            "١٢",
            "1_000",
            "tcp://",
            "1e308",
            "9" * 400,
        ]
    ),
    st.integers(min_value=-(10**30), max_value=10**30).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.text(max_size=12),
)


def _in_domain(action, value) -> bool:
    t = action.type
    if action.choices:
        return value in action.choices
    if isinstance(t, A.Int):
        return isinstance(value, int) and (t.lo is None or value >= t.lo) and (t.hi is None or value <= t.hi)
    if isinstance(t, A.Float):
        return isinstance(value, float) and t.ok(value)
    if isinstance(t, A.FloatList):
        return bool(value) and all(t.item.ok(v) for v in value)
    if t is int_list:
        return bool(value) and min(value) >= 1
    if isinstance(action, argparse._AppendAction):
        return isinstance(value, list) and all(isinstance(v, str) for v in value)
    if t is A.artifact_names:
        return bool(value) and all(isinstance(v, str) and v for v in value)
    return isinstance(value, str)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=st.sampled_from(VALUED), text=BAD_TEXT)
def test_parsers_refuse_generated_bad_values(case, text):
    """Any text for any option: either a one-line `UsageError` naming the option, or a value
    inside the option's domain (never NaN, never a negative count, never an exception)."""
    path, parser, action = case
    argv = _base_argv(path, parser) + [f"{action.option_strings[0]}={text}"]
    try:
        args = build_parser().parse_args(argv)
    except UsageError as e:
        msg = str(e)
        assert "\n" not in msg.strip()
        assert action.option_strings[0] in msg or "unrecognized" in msg or "argument" in msg, msg
        return
    value = getattr(args, action.dest)
    if action.nargs in ("*", "+"):
        return  # free-text lists (specs)
    assert _in_domain(action, value), (argv, value)
    if isinstance(value, float):
        assert math.isfinite(value)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(m=BAD_TEXT, n=BAD_TEXT, k=BAD_TEXT)
def test_welch_bound_runs_or_refuses(m, n, k, capsys):
    """The cheapest command run end to end on generated values: a correct, strict-JSON answer or
    one line and exit status 2."""
    rc, out, err = run(capsys, "welch", "bound", f"--m={m}", f"--n={n}", f"--k={k}", "--json")
    if rc == 0:
        r = strict_json(out)
        assert 0 <= r["bound"] <= 1 and err == ""
    else:
        assert_one_line_error(rc, err)
