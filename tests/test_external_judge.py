"""External judges: export the images a chunk was scored on, import verdicts made elsewhere; an
import that copies the default judge reproduces its stored scores exactly, and bad verdicts are
refused with the store unchanged."""

import csv
import json
import re

import numpy as np
import pytest

from volratio import cli, emc2
from volratio.experiments import emc2_bench
from volratio.report import external as X
from volratio.runs.manifest import write as write_manifest
from volratio.runs.registry import get_run
from volratio.runs.store import Store, config_key
from volratio.runs.sweep import execute

# the stored claim-1 run of the Picbreeder skull, on a few weights (seconds)
POINT = {"target": "skull", "network": "picbreeder", "res": 32, "deltas": [-1.0, -0.25, 0.5, 2.0],
         "max_params": 12, "dtype": "float32", "seed": 0, "device": "cpu"}  # fmt: skip


@pytest.fixture(scope="module")
def chunk(tmp_path_factory, picbreeder_dir):
    """A chunk `tiny` of two `emc2_point` runs (the same network under two judges), stored as the
    reference runner stores them."""
    root = tmp_path_factory.mktemp("ref")
    store, runs = Store(root / "tiny"), {}
    entry = get_run("emc2_point")
    with store.writing():
        for judge in ("anchored", "stability"):
            cfg = {**POINT, "judge": judge}
            key = config_key("emc2_point", cfg)
            out = execute(entry.fn, "emc2_point", cfg, key, threads=1, commit=None)
            assert out["status"] == "done", out.get("error")
            store.record(out)
            runs[key] = {"config": cfg, "seed": 0, "wall_s": 1.0, "cpu_s": 1.0}
    write_manifest(root / "tiny" / "manifest.json", {"sessions": [], "runs": runs})
    return root


def copy_default_judge(manifest) -> dict[str, int]:
    """Verdicts that copy the default judge: it judges each exported image as EMC2 scored it."""
    cfg = emc2_bench.parse_point({**POINT, "judge": "anchored"})
    net, ec = emc2_bench.network_of(cfg), emc2_bench.emc2_config(cfg)
    r = emc2.score(net, emc2.judges_for(net, ["anchored"], "picbreeder:skull", ec), "skull", ec)[0]
    shown = {(k, a, b, d): s for k, a, b, d, s in r.table[["layer", "row", "col", "delta", "shown"]].itertuples(False)}
    out = {}
    for m in manifest.itertuples():
        out[m.id] = int(r.base_kept) if m.layer < 0 else int(shown[(m.layer, m.row, m.col, m.delta)])
    return out


def write(path, rows, label=None):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["id", "kept"] + (["label"] if label else []))
        for i, k in rows:
            w.writerow([i, k] + ([label] if label else []))
    return path


def test_export_then_import_of_the_default_judges_verdicts_reproduces_its_stored_scores(chunk, tmp_path):
    assert cli.main(["emc2", "export", "tiny", "--out", str(tmp_path / "x"), "--root", str(chunk)]) == 0
    m = X.pd.read_csv(tmp_path / "x" / "manifest.csv")
    assert len(m) == 1 + 12 * 4 and m["source"].nunique() == 1  # two runs, one set of images
    assert all((tmp_path / "x" / f).is_file() for f in m["file"])
    assert {"id", "network", "layer", "row", "col", "weight", "delta", "label"} <= set(m.columns)
    kept = copy_default_judge(m)
    v = write(tmp_path / "v.csv", kept.items(), label="skull")
    assert cli.main(["judge", "import", str(v), "--chunk", "tiny", "--name", "copy", "--root", str(chunk)]) == 0
    got = X.table("tiny", "copy", chunk).iloc[0]
    stored = next(r for r in X.R.records("tiny", chunk) if r["config"]["judge"] == "anchored")
    assert got["scores"] == stored["metrics"]["scores"] and got["auc"] == stored["metrics"]["auc"]
    assert got["auc_se"] == stored["metrics"]["auc_se"] and got["n_nonzero"] == stored["metrics"]["n_nonzero"]
    verdicts = Store(chunk / "tiny").artifact(stored["key"], "verdicts")
    assert np.array_equal(np.asarray(got["verdicts"], np.uint8), verdicts)
    assert X.imported("tiny", chunk) == ["copy"]
    assert X.import_verdicts(v, "tiny", "copy", chunk)[0]["auc"] == got["auc"]  # the same verdicts again: a no-op
    with pytest.raises(X.ExternalJudgeError, match="already imported .* with other verdicts"):
        X.import_verdicts(write(tmp_path / "w.csv", [(i, 1 - k) for i, k in kept.items()]), "tiny", "copy", chunk)
    # the base image judged not the label: every weight scores 0, whatever the perturbed verdicts
    base = next(i for i in kept if i.endswith("-base"))
    write(tmp_path / "n.csv", [(i, 0 if i == base else 1) for i in kept])
    r = X.import_verdicts(tmp_path / "n.csv", "tiny", "none", chunk)[0]
    assert not r["base_kept"] and r["auc"] == 0 and r["scores"] == [0.0] * 4


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda rows: rows[1:], "1 images of the chunk have no verdict"),
        (lambda rows: rows + rows[:1], "1 duplicate ids"),
        (lambda rows: rows + [("nope-1.2.3@1", "1")], "not images of this chunk"),
        (lambda rows: [(i, "yes" if j == 0 else k) for j, (i, k) in enumerate(rows)], "kept must be 0 or 1"),
        (lambda rows: [(i, "2") for i, k in rows], "kept must be 0 or 1"),
    ],
)
def test_bad_verdicts_are_refused_and_the_store_is_unchanged(chunk, tmp_path, change, message):
    ids = [s.ids() for s in X.plan("tiny", chunk)][0]
    v = write(tmp_path / "v.csv", change([(i, "1") for i in ids]))
    before = sorted(p.relative_to(chunk).as_posix() for p in chunk.rglob("*"))
    with pytest.raises(X.ExternalJudgeError, match=message):
        X.import_verdicts(v, "tiny", "bad", chunk)
    assert cli.main(["judge", "import", str(v), "--chunk", "tiny", "--name", "bad", "--root", str(chunk)]) == 2
    assert sorted(p.relative_to(chunk).as_posix() for p in chunk.rglob("*")) == before


def test_unknown_labels_and_bad_names_are_refused(chunk, tmp_path):
    ids = [s.ids() for s in X.plan("tiny", chunk)][0]
    v = write(tmp_path / "v.csv", [(i, "1") for i in ids], label="butterfly")
    with pytest.raises(X.ExternalJudgeError, match="label 'butterfly', expected 'skull'"):
        X.import_verdicts(v, "tiny", "bad", chunk)
    with pytest.raises(X.ExternalJudgeError, match="one of the library's judges"):
        X.import_verdicts(v, "tiny", "anchored", chunk)
    (tmp_path / "h.csv").write_text("image,verdict\na,1\n")
    with pytest.raises(X.ExternalJudgeError, match="needs the columns id and kept"):
        X.import_verdicts(tmp_path / "h.csv", "tiny", "x", chunk)
    with pytest.raises(X.ExternalJudgeError, match="not empty"):
        (tmp_path / "full").mkdir()
        (tmp_path / "full" / "f").write_text("")
        X.export("tiny", tmp_path / "full", chunk)


def test_chunks_of_other_runs_are_refused():
    with pytest.raises(X.ExternalJudgeError, match="runs of rescore|runs of depth_point cannot be exported"):
        X.plan("depth_picbreeder")


def test_the_two_word_commands_parse_after_global_options(chunk, tmp_path, capsys):
    rc = cli.main(
        ["--memory-budget", "8G", "emc2", "export", "nope", "--out", str(tmp_path / "o"), "--root", str(chunk)]
    )
    assert rc == 2 and "volratio emc2 export: error:" in capsys.readouterr().err


# ---------------------------------------------------------------------------------------------
# A sample a VLM can afford (--per-network), its estimate and progress, and bad input


def snapshot(folder):
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_a_sample_per_network_is_seeded_stratified_by_layer_and_keeps_the_base_image(chunk, tmp_path, capsys):
    (full,) = X.plan("tiny", chunk)
    (s,) = X.plan("tiny", chunk, per_network=13)  # 1 + 3 weights × 4 δ
    assert s.n_images() == 13 and s.ids()[0] == full.ids()[0] and set(s.ids()) < set(full.ids())
    layers, counts = np.unique(full.params[:, 0], return_counts=True)
    quota = dict(zip(layers.tolist(), (counts * 3 / len(full.params)).tolist()))
    got = dict(zip(*np.unique(s.params[:, 0], return_counts=True)))
    assert all(abs(got.get(k, 0) - q) < 1 for k, q in quota.items())  # each layer within 1 of its share
    assert np.array_equal(X.plan("tiny", chunk, per_network=13)[0].params, s.params)  # seeded
    assert len({X.sample(full, 13, seed).params.tobytes() for seed in range(5)}) > 1  # the seed draws
    assert X.sample(full, 12, 0).n_images() == 9 and X.sample(full, 10_000).n_images() == full.n_images()
    with pytest.raises(X.ExternalJudgeError, match="at least 5 images"):
        X.sample(full, 4)
    # exported through the command: the estimate comes before anything is written, then a bar
    out = tmp_path / "x"
    seen = []
    m = X.export("tiny", out, chunk, per_network=13, announce=lambda e: seen.append((e, out.exists())))
    ((e, existed),) = seen
    assert not existed and e["networks"] == 1 and e["images"] == e["per_network"] == len(m) == 13
    assert e["bytes"] > 0 and e["seconds"] > 0 and e["pilot"] == 1 + min(X.PILOT, 12)  # base + perturbed
    assert cli.main(["emc2", "export", "tiny", "--out", str(tmp_path / "y"), "--root", str(chunk),
                     "--per-network", "13"]) == 0  # fmt: skip
    err = capsys.readouterr().err
    assert "export of chunk tiny: 13 images of 1 networks (at most 13 per network), about" in err
    assert snapshot(tmp_path / "y") == snapshot(out)
    # the sampled images are the full export's images of the same ids, byte for byte
    X.export("tiny", tmp_path / "all", chunk)
    for f in m["file"]:
        assert (tmp_path / "all" / f).read_bytes() == (out / f).read_bytes(), f


def test_import_of_a_sample_scores_the_same_networks_on_the_sampled_weights(chunk, tmp_path):
    m = X.export("tiny", tmp_path / "x", chunk, per_network=13, seed=3)
    kept = copy_default_judge(m)
    v = write(tmp_path / "v.csv", kept.items())
    before = snapshot(chunk)
    with pytest.raises(X.ExternalJudgeError, match="same --per-network and --seed"):
        X.import_verdicts(v, "tiny", "sample", chunk)  # not told it is a sample
    with pytest.raises(X.ExternalJudgeError, match="not images of this chunk"):
        X.import_verdicts(v, "tiny", "sample", chunk, per_network=13, seed=4)  # another sample
    assert snapshot(chunk) == before
    argv = ["judge", "import", str(v), "--chunk", "tiny", "--name", "sample", "--root", str(chunk)]
    assert cli.main(argv + ["--per-network", "13", "--seed", "3"]) == 0
    got = X.table("tiny", "sample", chunk).iloc[0]
    assert got["n_images"] == 13 and got["n_params"] == 3
    stored = next(r for r in X.R.records("tiny", chunk) if r["config"]["judge"] == "anchored")
    (full,), (s,) = X.plan("tiny", chunk), X.plan("tiny", chunk, per_network=13, seed=3)
    rows = [full.params.tolist().index(p) for p in s.params.tolist()]
    verdicts = Store(chunk / "tiny").artifact(stored["key"], "verdicts")
    assert np.array_equal(np.asarray(got["verdicts"], np.uint8), verdicts[rows])  # the same networks' verdicts
    assert got["scores"] == pytest.approx(verdicts[rows].mean(axis=0).tolist())
    meta = json.loads((chunk / "tiny" / X.EXTERNAL / "sample" / "scores.json").read_text())
    assert meta["per_network"] == 13 and meta["seed"] == 3 and meta["n_images"] == 13
    assert [r["n_images"] for r in meta["sources"]] == [13]


def test_a_csv_with_a_byte_order_mark_is_read(chunk, tmp_path):
    ids = X.plan("tiny", chunk)[0].ids()
    plain = write(tmp_path / "plain.csv", [(i, "1") for i in ids])
    bom = tmp_path / "bom.csv"
    bom.write_bytes(b"\xef\xbb\xbf" + plain.read_bytes())  # what spreadsheets save as "CSV UTF-8"
    assert X.import_verdicts(bom, "tiny", "bom", chunk) == X.import_verdicts(plain, "tiny", "plain", chunk)


def _png_bytes() -> bytes:
    import io

    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (4, 4)).save(buf, format="png")
    return buf.getvalue()


NOT_UTF8_CSV = {  # what a new user might pass as verdicts, and the words of the error
    "png": (_png_bytes(), "not UTF-8 text (byte 0 is 0x89)"),
    "random-bytes": (bytes(np.random.default_rng(0).integers(0, 256, 300, np.uint8)), "not UTF-8 text"),
    "latin-1": ("id,kept\nü,1\n".encode("latin-1"), "not UTF-8 text"),
    "one-long-line": (b"id,kept\n" + b"x" * 200_000 + b",1\n", "not a CSV file (field larger than field limit"),
}


@pytest.mark.parametrize("kind", NOT_UTF8_CSV)
def test_judge_import_of_a_file_that_is_not_utf8_csv_is_one_line(chunk, tmp_path, capsys, kind):
    data, message = NOT_UTF8_CSV[kind]
    path = tmp_path / f"{kind}.csv"
    path.write_bytes(data)
    before = snapshot(chunk)
    with pytest.raises(X.ExternalJudgeError, match=re.escape(message)):
        X.import_verdicts(path, "tiny", "bad", chunk)
    assert cli.main(["judge", "import", str(path), "--chunk", "tiny", "--name", "bad", "--root", str(chunk)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err and message in err
    assert snapshot(chunk) == before


@pytest.mark.parametrize("where", ["file", "below-a-file"])
def test_export_into_a_file_is_one_line_and_writes_nothing(chunk, tmp_path, capsys, where):
    f = tmp_path / "taken"
    f.write_text("keep me")
    out = f if where == "file" else f / "sub"
    rc = cli.main(["emc2", "export", "tiny", "--out", str(out), "--root", str(chunk), "--per-network", "9"])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and f"{f} is a file; --out names a folder" in err, err
    assert f.read_text() == "keep me" and sorted(p.name for p in tmp_path.iterdir()) == ["taken"]
