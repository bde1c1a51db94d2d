"""Reproduce the bad-input examples of issue 13 as subprocesses (timeout + 3 GB address-space cap).

    PYTHONPATH=$PWD python tools/repro_issue13.py [--only SUBSTRING]

Prints one row per case: the outcome class (ok / one-line error / traceback / multi-line error /
timeout / invalid JSON) and the first line of stderr. The table-driven test
(tests/test_bad_input.py) holds the same cases as assertions; this script is for looking at them.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def fixtures(d: Path) -> dict:
    """Small files the cases use (a trained network, damaged networks, odd images)."""
    import numpy as np
    import torch
    from PIL import Image
    from safetensors.torch import save_file

    from volratio.nets import CoordMLP

    net = CoordMLP("2;gaussian:4", head="grey", seed=0)
    net.save(d / "net.safetensors")
    bad = CoordMLP("2;gaussian:4", head="grey", seed=0)
    with torch.no_grad():
        bad.weights[0][0, 0, 0] = float("nan")
    bad.save(d / "nan.safetensors")
    t = {"weight0": torch.zeros(1, 4, 4), "mask0": torch.ones(1, 4, 4, dtype=torch.uint8)}
    save_file(t, str(d / "noarch.safetensors"), metadata={"volratio": json.dumps({"format": "volratio.CoordMLP/1"})})
    save_file(t, str(d / "listmeta.safetensors"), metadata={"volratio": json.dumps([1, 2])})
    ti = {k: v.to(torch.int32) if k.startswith("weight") else v for k, v in bad.state_dict().items()}
    ti = {f"weight{i}": torch.zeros(1, *w.shape[1:], dtype=torch.int32) for i, w in enumerate(net.weights)}
    ti.update({f"mask{i}": m.to(torch.uint8) for i, m in enumerate(net.masks)})
    meta = {"format": "volratio.CoordMLP/1", "arch": "2;gaussian:4", "head": "grey", "population": 1, "n_inputs": 4}
    save_file(ti, str(d / "int32.safetensors"), metadata={"volratio": json.dumps(meta)})
    # a sparse file whose header declares a 1.6 GB kernel (shapes consistent with its arch)
    n = 20000
    header, off = {"__metadata__": {"volratio": json.dumps(dict(meta, arch=f"2;gaussian:{n}"))}}, 0
    for i, (fi, fo) in enumerate([(4, n), (n, n), (n, 1)]):
        for name, dt, item in ((f"weight{i}", "F32", 4), (f"mask{i}", "U8", 1)):
            header[name] = {"dtype": dt, "shape": [1, fi, fo], "data_offsets": [off, off + fi * fo * item]}
            off += fi * fo * item
    hb = json.dumps(header).encode()
    with open(d / "huge.safetensors", "wb") as f:
        f.write(struct.pack("<Q", len(hb)) + hb)
        f.truncate(8 + len(hb) + off)
    (d / "notimage.png").write_text("this is not a PNG\n")
    Image.new("1", (20000, 20000)).save(d / "bomb.png")
    Image.fromarray(np.zeros((1, 100000), np.uint8)).save(d / "wide.png")
    (d / "spec.toml").write_text('name = "x"\n')
    os.makedirs(d / "ro", exist_ok=True)
    os.chmod(d / "ro", 0o555)
    (d / "emptydir").mkdir(exist_ok=True)
    return {"d": str(d)}


def cases(d: str) -> list[tuple[str, list[str]]]:
    n = f"{d}/net.safetensors"
    o = f"{d}/out"
    return [
        ("render huge planted depth", ["render", "planted:1:depth=100000", "--out", f"{o}1.png"]),
        ("render 12000^2 bomb file", ["render", f"file:{d}/bomb.png", "--out", f"{o}2.png"]),
        ("welch frame m=100000", ["welch", "frame", "--m", "100000", "--n", "3"]),
        ("train width 1e8", ["train", "planted:1", "--width", "100000000", "--steps", "1", "--out", f"{o}3.safetensors"]),
        ("render res 1e6", ["render", n, "--res", "1000000", "--out", f"{o}4.png"]),
        ("info huge sparse safetensors", ["info", f"{d}/huge.safetensors"]),
        ("render out unwritable", ["render", "planted:1", "--res", "8", "--out", f"{d}/ro/x.png"]),
        ("render out is dir", ["render", "planted:1", "--res", "8", "--out", f"{d}/emptydir"]),
        ("train device banana", ["train", "planted:1", "--steps", "1", "--device", "banana", "--out", f"{o}5.safetensors"]),
        ("train device cuda", ["train", "planted:1", "--steps", "1", "--device", "cuda", "--out", f"{o}6.safetensors"]),
        ("train steps -5", ["train", "planted:1", "--steps", "-5", "--out", f"{o}7.safetensors"]),
        ("train lr nan", ["train", "planted:1", "--lr", "nan", "--steps", "1", "--out", f"{o}8.safetensors"]),
        ("train lr -1", ["train", "planted:1", "--lr", "-1", "--steps", "1", "--out", f"{o}9.safetensors"]),
        ("train seed 1e20", ["train", "planted:1", "--seed", "100000000000000000000", "--steps", "1", "--out", f"{o}10.safetensors"]),
        ("rho confidence 1.5", ["rho", "boolean", "--target", "chain:2", "--W", "2", "--L", "2", "--samples", "100", "--confidence", "1.5"]),
        ("render planted:-1", ["render", "planted:-1", "--out", f"{o}11.png"]),
        ("render file not image", ["render", f"file:{d}/notimage.png", "--out", f"{o}12.png"]),
        ("info metadata lacks arch", ["info", f"{d}/noarch.safetensors"]),
        ("info list metadata", ["info", f"{d}/listmeta.safetensors"]),
        ("info int32 weights", ["info", f"{d}/int32.safetensors"]),
        ("depth predict calibration image", ["depth", "predict", "planted:1", "--calibration", "image:camera", "image:coins"]),
        ("sweep scheduler not a url", ["sweep", str(ROOT / "examples/sweeps/quick.toml"), "--scheduler", "not a url", "--out", f"{o}13"]),
        ("emc2 deltas nan json", ["emc2", n, "--target", "planted:1", "--deltas", "nan,1", "--res", "8", "--json"]),
        ("emc2 max-params -4", ["emc2", n, "--target", "planted:1", "--max-params", "-4", "--res", "8", "--json"]),
        ("emc2 max-params 0", ["emc2", n, "--target", "planted:1", "--max-params", "0", "--res", "8"]),
        ("sweep-weights n -3", ["sweep-weights", n, "--n", "-3", "--res", "8", "--out", f"{o}14.png"]),
        ("rho samples -10", ["rho", "boolean", "--target", "chain:2", "--W", "2", "--L", "2", "--samples", "-10"]),
        ("rho basin threshold nan", ["rho", "basin", "--target", "planted:1", "--W", "2", "--L", "1", "--samples", "2", "--steps", "2", "--res", "8", "--threshold", "nan"]),
        ("info nan weights", ["info", f"{d}/nan.safetensors"]),
        ("emc2 nan weights", ["emc2", f"{d}/nan.safetensors", "--target", "planted:1", "--res", "8", "--json"]),
        ("render wide png", ["render", f"file:{d}/wide.png", "--res", "8", "--out", f"{o}15.png"]),
        ("prune tau 2", ["prune", n, "--target", "planted:1", "--method", "sp", "--tau", "2", "--steps", "1", "--res", "8", "--out", f"{o}16.safetensors"]),
        ("prune rounds -1", ["prune", n, "--target", "planted:1", "--method", "sp", "--rounds", "-1", "--res", "8", "--out", f"{o}17.safetensors"]),
        ("prune steps -3", ["prune", n, "--target", "planted:1", "--method", "sp", "--steps", "-3", "--res", "8", "--out", f"{o}18.safetensors"]),
        ("render planted:abc", ["render", "planted:abc", "--out", f"{o}19.png"]),
        ("render planted depth=0", ["render", "planted:1:depth=0", "--out", f"{o}20.png"]),
        ("render image:nosuch", ["render", "image:nosuch", "--out", f"{o}21.png"]),
        ("render scene:skull+nosuch", ["render", "scene:skull+nosuch", "--out", f"{o}22.png"]),
        ("render out existing toml", ["render", "planted:1", "--res", "8", "--out", f"{d}/spec.toml"]),
        ("prune out = input", ["prune", n, "--target", "planted:1", "--method", "random", "--sparsity", "0.5", "--steps", "0", "--res", "8", "--out", n]),
        ("render out missing parents", ["render", "planted:1", "--res", "8", "--out", f"{d}/a/b/c/x.png"]),
        ("results non-store folder", ["results", f"{d}/emptydir"]),
        ("targets | head -1", ["targets"]),
    ]


def run_case(argv, timeout=60, pipe_head=False) -> dict:
    env = dict(os.environ, PYTHONPATH=str(ROOT))

    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))

    cmd = [sys.executable, "-m", "volratio", *argv]
    try:
        if pipe_head:
            r = subprocess.run(f"{' '.join(cmd)} | head -1", shell=True, capture_output=True, text=True,
                               timeout=timeout, env=env, preexec_fn=limit, check=False)
        else:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env, preexec_fn=limit, check=False)
    except subprocess.TimeoutExpired:
        return {"class": "TIMEOUT", "rc": None, "err": ""}
    err = r.stderr.strip()
    if "Traceback" in err or "MemoryError" in err:
        cls = "TRACEBACK"
    elif r.returncode == 0:
        cls = "ok"
        if "--json" in argv:
            try:
                json.loads(r.stdout, parse_constant=lambda c: (_ for _ in ()).throw(ValueError(c)))
            except ValueError:
                cls = "INVALID-JSON"
    elif r.returncode == 2 and len(err.splitlines()) == 1:
        cls = "error-1-line"
    else:
        cls = f"rc={r.returncode} lines={len(err.splitlines())}"
    return {"class": cls, "rc": r.returncode, "err": err.splitlines()[-1] if err else ""}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default="")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        fixtures(d)
        for name, argv in cases(str(d)):
            if a.only not in name:
                continue
            r = run_case(argv, pipe_head=name.startswith("targets |"))
            print(f"{name:<34} {r['class']:<14} {r['err'][:150]}", flush=True)
        os.chmod(d / "ro", 0o755)


if __name__ == "__main__":
    main()
