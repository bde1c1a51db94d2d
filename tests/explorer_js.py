"""The weight explorer's JavaScript renderer run under node, and the image the library renders for
the same case: shared by tests/test_explorer.py and tests/test_picbreeder_gallery.py. A test that
needs node skips where it is not on PATH."""

import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from volratio.report import explorer

JS = Path(__file__).resolve().parents[1] / "book" / "_ext" / "static" / "weight_explorer.js"

# Runs the renderer on an export: argv = JS file, export JSON, cases JSON, output file.
NODE_DRIVER = """
const fs = require("fs");
const [js, netFile, casesFile, outFile] = process.argv.slice(2);
const { Network } = require(js);
const net = new Network(JSON.parse(fs.readFileSync(netFile, "utf8")));
const out = JSON.parse(fs.readFileSync(casesFile, "utf8")).map((c) => Array.from(net.render(c.res, c.pert).rgb));
fs.writeFileSync(outFile, JSON.stringify(out));
"""


def run_js(tmp_path, doc, cases):
    if shutil.which("node") is None:
        pytest.skip("node is not on PATH (the browser check covers the renderer there)")
    (tmp_path / "drv.js").write_text(NODE_DRIVER)
    (tmp_path / "net.json").write_text(explorer.dumps(doc))
    (tmp_path / "cases.json").write_text(json.dumps(cases))
    subprocess.run(
        [
            "node",
            str(tmp_path / "drv.js"),
            str(JS),
            str(tmp_path / "net.json"),
            str(tmp_path / "cases.json"),
            str(tmp_path / "out.json"),
        ],
        check=True,
        capture_output=True,
        timeout=120,
    )
    return [
        np.asarray(a).reshape(c["res"], c["res"], 3)
        for a, c in zip(json.loads((tmp_path / "out.json").read_text()), cases)
    ]


def reference(net, case):
    p = case["pert"]
    if p is None:
        return net.select(0).render(case["res"])[0].double().numpy()
    if "param" in p:
        return explorer.perturbed(net, p["delta"], param=p["param"]).render(case["res"])[0].double().numpy()
    return explorer.perturbed(net, p["delta"], seed=p["seed"]).render(case["res"])[0].double().numpy()


def check_js_matches(tmp_path, net, res=32, n_weights=4):
    rank = explorer.rank_weights(net, res=16)
    cases = [{"res": res, "pert": None}]
    for k, r, c in rank.params[:n_weights].tolist():
        for d in (-2.0, 0.7):
            cases.append({"res": res, "pert": {"param": [k, r, c], "delta": d}})
    cases += [
        {"res": res, "pert": {"seed": 5, "delta": 1.5}},
        {"res": 17, "pert": {"seed": 6, "delta": -2.0}},
    ]
    got = run_js(tmp_path, explorer.export(net), cases)
    for case, img in zip(cases, got):
        ref = reference(net, case)
        mae = np.abs(img - ref).mean(axis=(0, 1))  # per channel
        assert mae.max() < 1e-4, (case, mae)
        assert np.abs(img - ref).max() < 1e-2, case
    # the cases differ from each other: the comparison could have failed
    assert np.abs(got[1] - got[0]).mean() > 1e-3
