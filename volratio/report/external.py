"""External judges: export the images a claim was scored on, import verdicts made elsewhere.

The paper judged EMC2 with a vision-language model (Qwen3-VL-4B-Thinking) that cannot run here. A
reader who has one can still decide the claims under it:

    volratio emc2 export emc2 --out DIR                       # DIR/images/ID.png + DIR/manifest.csv
    (judge every DIR/images/ID.png elsewhere → VERDICTS.csv with columns id, kept)
    volratio judge import VERDICTS.csv --chunk emc2 --name qwen3-vl

`export(chunk, out)` writes, for every *source* of a chunk — the network and EMC2 settings of its
runs, whatever their judge (runs that differ only in their judge scored the same images) — the
unperturbed image and every perturbed image that source was scored on, rendered exactly as the
stored runs rendered them (the same parameters, the same subsample, the same engine and dtype), as
PNG (`volratio.util.images.to_uint8`), with `manifest.csv`: `id`, `source`, `network`, `target`,
`label`, `layer`, `row`, `col` (−1 for the unperturbed image), `weight`, `delta`, `res`, `file`.
Ids are deterministic (`SOURCE-base`, `SOURCE-LAYER.ROW.COL@DELTA`), so the chunk alone says which
ids a complete set of verdicts must hold (`plan`, cheap: no image rendered).

`import_verdicts(csv, chunk, name)` reads one row per image (`id`, `kept` ∈ {0, 1}; an optional
`label` column must agree with the manifest's) and refuses — with one line naming the problem, the
store left unchanged — missing ids, duplicate ids, ids the chunk does not have, unknown labels and
values other than 0/1. It then scores every source as EMC2 scores: a weight preserves the identity
at δ when the unperturbed image *and* the perturbed one are kept, S per δ is the share of weights,
the AUC the normalised trapezoid (`volratio.emc2.normalised_auc`); and stores the verdicts and scores
in the chunk's store under `CHUNK/external/NAME/` (`verdicts.csv`, a copy of what was read, and
`scores.json`), a judge of its own name that no run of the library re-computes. `table(chunk,
name)` reads them back, one row per source with the metrics of the chunk's own runs (`scores`,
`auc`, `auc_se`, `base_kept`, `verdicts`), for the claims to be decided under them.

**A sample a VLM can afford** (`per_network`, `volratio emc2 export CHUNK --per-network N`): every
image of every network is more than a reader with one GPU will have a thinking VLM judge, so the
export can hold, per network (source), its unperturbed image and a seeded sample of its scored
weights at *every* δ — the largest number of weights for which that is at most N images. The weights
are drawn stratified by layer (each layer's share of the sample is its share of the scored weights,
largest remainders first; `sample`), with a generator seeded by `seed` and the source's id, so the
same N and seed give the same sample on any machine and `judge import` rebuilds it from the chunk
alone (give it the export's `--per-network` and `--seed`). Each weight keeps all its δ, so S(δ), the
per-weight AUC and its standard error are computed as for the chunk's own sampled runs, on fewer
weights (`n_params`; `n_images` per network is stored with the scores). Before writing, `estimate`
renders a few images of each network (a pilot) and projects the export's size and time from them.

The verdicts file is read as UTF-8, with or without a byte-order mark (spreadsheet programs save
"CSV UTF-8" with one); anything else (a PNG, random bytes) is refused in one line.

Chunks whose runs are `emc2_point` (`EXPORTABLE`: the Picbreeder and FER networks of claim 1,
rebuilt from the Picbreeder data) can be exported; any other chunk is refused, naming it.

Chapter: "EMC2-Bench" (book/emc2.md), section "The paper's judge".
"""

from __future__ import annotations

import csv
import io
import json
import re
import time
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd
from PIL import Image
from tqdm import tqdm  # plain text bar: tqdm.auto warns in kernels without ipywidgets

from ..emc2 import normalised_auc, params_of, perturbed_images, subsample, torch_dtype
from ..errors import VolratioError
from ..experiments import emc2_bench
from ..judges import JUDGES
from ..runs import reference as R
from ..runs.store import config_key
from ..util.fileio import atomic_path
from ..util.images import to_uint8

EXPORTABLE = ("emc2_point",)  # run functions whose images can be exported
EXTERNAL = "external"  # CHUNK/external/NAME/: imported verdicts and their scores
NAME = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")
PILOT = 32  # perturbed images rendered per network by `estimate`


class ExternalJudgeError(VolratioError, ValueError):
    """A chunk that cannot be exported, or verdicts that cannot be imported as given."""


@dataclass
class Source:
    """The images one group of a chunk's runs was scored on (the runs differ only in their judge)."""

    id: str  # config_key of the runs' config without the judge
    keys: list  # the runs' store keys
    config: dict  # the runs' config without the judge
    network: str  # e.g. "picbreeder:skull"
    target: str  # the target spec the judges were anchored on
    label: str
    params: np.ndarray  # (N, 3) scored parameters, sorted by (layer, row, col)
    deltas: np.ndarray  # (n_δ,) sorted

    def n_images(self) -> int:
        return 1 + len(self.params) * len(self.deltas)

    def ids(self) -> list[str]:
        """`[base id, then one per (parameter, δ), δ fastest]`."""
        return [f"{self.id}-base"] + [
            f"{self.id}-{k}.{r}.{c}@{d:g}" for k, r, c in self.params.tolist() for d in self.deltas.tolist()
        ]


def _net(cfg):
    """The network an `emc2_point` run scored (as `volratio.experiments.emc2_bench.point`)."""
    return emc2_bench.network_of(cfg)


def sample(source: Source, per_network: int, seed: int = 0) -> Source:
    """`source` on at most `per_network` images: its base image and `k = (per_network − 1) // n_δ`
    of its scored weights at every δ, drawn without replacement stratified by layer (proportional
    allocation, largest remainders first, ties to the earlier layer) from a generator seeded by
    `seed` and the source's id. A source with no more than `k` weights is returned whole."""
    n_d = len(source.deltas)
    k = (int(per_network) - 1) // n_d
    if k < 1:
        raise ExternalJudgeError(
            f"--per-network {per_network}: a network needs at least {1 + n_d} images "
            f"(its unperturbed image and one weight at each of its {n_d} δ)"
        )
    P = source.params
    if k >= len(P):
        return source
    layers, counts = np.unique(P[:, 0], return_counts=True)
    quota = counts * k / len(P)
    take = np.floor(quota).astype(int)
    take[np.argsort(-(quota - take), kind="stable")[: k - take.sum()]] += 1
    rng = np.random.default_rng([int(seed), int(source.id[:12], 16)])
    idx = np.concatenate(
        [rng.choice(np.flatnonzero(P[:, 0] == layer), t, replace=False) for layer, t in zip(layers, take)]
    )
    return replace(source, params=P[np.sort(idx)])


def plan(chunk: str, root=None, per_network: int | None = None, seed: int = 0) -> list[Source]:
    """The chunk's sources, their scored parameters and ids (no image rendered); with `per_network`,
    each source's `sample`."""
    root = Path(R.DEFAULT_ROOT if root is None else root)
    recs = R.records(chunk, root)
    if not recs:
        raise ExternalJudgeError(f"chunk {chunk!r} in {root} has no finished runs")
    if bad := sorted({r["run"] for r in recs} - set(EXPORTABLE)):
        raise ExternalJudgeError(
            f"chunk {chunk!r}: runs of {', '.join(bad)} cannot be exported; chunks of {', '.join(EXPORTABLE)} can"
        )
    groups: dict[str, Source] = {}
    for r in sorted(recs, key=lambda r: r["key"]):
        cfg = {k: v for k, v in r["config"].items() if k != "judge"}
        sid = config_key(r["run"], cfg)
        if sid in groups:
            groups[sid].keys.append(r["key"])
            continue
        p = emc2_bench.parse_point(r["config"])
        net = _net(p)
        ec = emc2_bench.emc2_config(p)
        params = subsample(params_of(net, ec.which, None, ec.member), ec.max_params, ec.seed)
        params = params[np.lexsort(params.T[::-1])]
        groups[sid] = Source(sid, [r["key"]], cfg, f"{p.network}:{p.target}", f"picbreeder:{p.target}", p.target,
                             params, np.sort(np.asarray(ec.deltas, float)))  # fmt: skip
    sources = list(groups.values())
    return sources if per_network is None else [sample(s, per_network, seed) for s in sources]


def check_out(out) -> Path:
    """`out` as a folder to export into: new, or an empty folder; refused (one line) when it or a
    folder above it is a file, or when it holds anything."""
    out = Path(out)
    for p in (out, *out.parents):
        if p.exists() and not p.is_dir():
            where = f"{out} is a file" if p == out else f"{out}: {p} is a file"
            raise ExternalJudgeError(f"{where}; --out names a folder (new or empty) for images/ and manifest.csv")
        if p.exists():
            break
    if out.is_dir() and any(out.iterdir()):
        raise ExternalJudgeError(f"{out} is not empty; export into a new or empty folder")
    return out


def _render(s: Source, n: int | None = None):
    """`(ids, rows' common entries, base, P, D, iterator of (indices, images), W)` of source `s`, on
    its first `n` (parameter, δ) pairs (all when None)."""
    p = emc2_bench.parse_point({**s.config, "judge": "anchored"})
    ec = emc2_bench.emc2_config(p)
    net = _net(p)
    W = [w.detach()[ec.member].cpu().double().numpy() for w in net.effective_weights()]
    P = np.repeat(s.params, len(s.deltas), axis=0)[:n]  # δ fastest, as `ids`
    D = np.tile(s.deltas, len(s.params))[:n]
    base, images = perturbed_images(net, ec.res, P, D, ec.member, ec.device, torch_dtype(ec.dtype), ec.memory_bytes)
    common = {"source": s.id, "network": s.network, "target": s.target, "label": s.label, "res": ec.res}
    return s.ids(), common, base, P, D, images, W


def estimate(sources: list[Source], pilot: int = PILOT) -> dict:
    """The export's size and time, projected per network from a pilot that renders and encodes (in
    memory) its base image and its first `pilot` perturbed images: `networks`, `images`,
    `per_network` (the largest count), `bytes` (the pilot's mean PNG size × images), `seconds` (wall:
    each network's setup and base image once, plus the pilot's time per perturbed image × its
    perturbed images), `pilot` (images rendered). A pilot batch is smaller than the export's, so the
    time is an upper estimate."""
    total_b = total_s = 0.0
    n_pilot = 0
    for s in sources:
        t0 = time.perf_counter()
        _, _, base, _, _, images, _ = _render(s, pilot)
        sizes = [len(_png_bytes(base))]
        t1 = time.perf_counter()
        sizes += [len(_png_bytes(im)) for _, ims in images for im in ims]
        per_image = (time.perf_counter() - t1) / max(len(sizes) - 1, 1)
        n_pilot += len(sizes)
        total_b += float(np.mean(sizes)) * s.n_images()
        total_s += (t1 - t0) + per_image * (s.n_images() - 1)
    return {"networks": len(sources), "images": sum(s.n_images() for s in sources),
            "per_network": max((s.n_images() for s in sources), default=0), "bytes": int(total_b),
            "seconds": total_s, "pilot": n_pilot}  # fmt: skip


def export(
    chunk: str, out, root=None, per_network: int | None = None, seed: int = 0, progress: bool = False, announce=None
) -> pd.DataFrame:
    """Write every image the chunk's sources were scored on (with `per_network`, each source's
    `sample`) to `out/images/ID.png` and `out/manifest.csv` (see the module docstring); returns the
    manifest. `out` must be a new or empty folder (`check_out`). `announce(estimate)`, when given, is
    called with `estimate(sources)` before anything is written; `progress`: a bar over the images."""
    out = check_out(out)
    sources = plan(chunk, root, per_network, seed)
    if announce is not None:
        announce(estimate(sources))
    (out / "images").mkdir(parents=True, exist_ok=True)
    rows = []
    bar = tqdm(total=sum(s.n_images() for s in sources), desc="export", unit="img", disable=None if progress else True)
    for s in sources:
        ids, common, base, P, D, images, W = _render(s)
        _png(out / "images" / f"{ids[0]}.png", base)
        rows.append({"id": ids[0], **common, "layer": -1, "row": -1, "col": -1, "weight": np.nan, "delta": 0.0})
        bar.update(1)
        for idx, imgs in images:
            for i, img in zip(idx.tolist(), imgs):
                k, r, c = P[i].tolist()
                _png(out / "images" / f"{ids[1 + i]}.png", img)
                rows.append({"id": ids[1 + i], **common, "layer": k, "row": r, "col": c, "weight": W[k][r, c],
                             "delta": float(D[i])})  # fmt: skip
            bar.update(len(idx))
    bar.close()
    m = pd.DataFrame(rows)
    m["file"] = "images/" + m["id"] + ".png"
    m = m[["id", "source", "network", "target", "label", "layer", "row", "col", "weight", "delta", "res", "file"]]
    m.to_csv(out / "manifest.csv", index=False)
    return m


def _png(path: Path, image) -> None:
    Image.fromarray(to_uint8(image)).save(path)


def _png_bytes(image) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(to_uint8(image)).save(buf, format="png")
    return buf.getvalue()


def _read_verdicts(path) -> list[dict]:
    """The rows of a CSV file of UTF-8 text (a leading byte-order mark is dropped); anything else is
    refused in one line."""
    p = Path(path)
    if not p.is_file():
        raise ExternalJudgeError(f"{p}: no such verdicts file")
    try:
        text = p.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise ExternalJudgeError(
            f"{p}: not UTF-8 text (byte {e.start} is {e.object[e.start]:#04x}); give a CSV file saved as UTF-8 "
            "with the columns id and kept"
        ) from None
    try:
        reader = csv.DictReader(io.StringIO(text, newline=""))
        cols = reader.fieldnames or []
        if not {"id", "kept"} <= set(cols):
            raise ExternalJudgeError(f"{p}: needs the columns id and kept (one row per image); it has {cols}")
        return [{k: (v or "").strip() for k, v in row.items() if k is not None} for row in reader]
    except csv.Error as e:
        raise ExternalJudgeError(
            f"{p}: not a CSV file ({e}); give the columns id and kept, one row per image"
        ) from None


def check_verdicts(rows: list[dict], sources: list[Source], where: str = "verdicts") -> dict[str, bool]:
    """`{id: kept}` from the rows read, refusing (one line each) values other than 0/1, duplicate
    ids, ids the chunk does not have, labels that are not the image's, and missing ids."""
    label_of = {i: s.label for s in sources for i in s.ids()}
    bad = [r["id"] for r in rows if r["kept"] not in ("0", "1")]
    if bad:
        v = next(r["kept"] for r in rows if r["id"] == bad[0])
        raise ExternalJudgeError(f"{where}: kept must be 0 or 1; {len(bad)} rows are not (first: id {bad[0]}, {v!r})")
    seen, dup = set(), []
    for r in rows:
        (dup.append(r["id"]) if r["id"] in seen else seen.add(r["id"]))
    if dup:
        raise ExternalJudgeError(f"{where}: {len(dup)} duplicate ids (first: {dup[0]}); give one row per image")
    if unknown := [r["id"] for r in rows if r["id"] not in label_of]:
        raise ExternalJudgeError(
            f"{where}: {len(unknown)} ids are not images of this chunk (first: {unknown[0]}); export it again, "
            "or import a sample with the export's --per-network and --seed"
        )
    if "label" in (rows[0] if rows else {}):
        wrong = [r for r in rows if r["label"] != label_of[r["id"]]]
        if wrong:
            w = wrong[0]
            raise ExternalJudgeError(
                f"{where}: {len(wrong)} rows name a label the image was not scored for (first: id {w['id']}, "
                f"label {w['label']!r}, expected {label_of[w['id']]!r})"
            )
    if missing := [i for i in label_of if i not in seen]:
        raise ExternalJudgeError(
            f"{where}: {len(missing)} images of the chunk have no verdict (first: {missing[0]}); a sample exported "
            "with --per-network is imported with the same --per-network and --seed"
        )
    return {r["id"]: r["kept"] == "1" for r in rows}


def scores_of(source: Source, kept: dict[str, bool]) -> dict:
    """A source's EMC2 metrics under the verdicts `kept` (as the chunk's own runs store them)."""
    ids = source.ids()
    base = kept[ids[0]]
    shown = np.array([kept[i] for i in ids[1:]], bool).reshape(len(source.params), len(source.deltas))
    V = shown & base  # (n_params, n_δ): the identity preserved
    s = V.mean(axis=0)
    per = np.array([normalised_auc(source.deltas, row) for row in V.astype(float)])
    n = len(per)
    n_nonzero = len(params_of(_net(emc2_bench.parse_point({**source.config, "judge": "anchored"})), "all"))
    se = float(per.std(ddof=1) / np.sqrt(n) * np.sqrt(max(n_nonzero - n, 0) / max(n_nonzero - 1, 1))) if n > 1 else 0.0
    return {"source": source.id, "keys": list(source.keys), "network": source.network, "target": source.label,
            "deltas": source.deltas.tolist(), "scores": s.tolist(), "auc": normalised_auc(source.deltas, s),
            "auc_se": se, "n_params": n, "n_nonzero": n_nonzero, "n_images": source.n_images(), "base_kept": bool(base),
            "verdicts": V.astype(np.uint8).tolist()}  # fmt: skip


def check_name(name: str) -> str:
    if not isinstance(name, str) or not NAME.match(name):
        raise ExternalJudgeError(f"judge name {name!r}: use lower-case letters, digits, '.', '_' or '-' (≤ 64)")
    if name in JUDGES:
        raise ExternalJudgeError(f"judge name {name!r} is one of the library's judges; name the external judge apart")
    return name


def import_verdicts(
    path, chunk: str, name: str, root=None, note: str = "", per_network: int | None = None, seed: int = 0
) -> list[dict]:
    """Read the verdicts at `path` for every image of `chunk` (with `per_network` and `seed`: of the
    sample exported with them), score the chunk's sources under them and store both as the judge
    `name` (`CHUNK/external/NAME/`, with the images each network was judged on: `n_images`);
    refused before anything is written when the verdicts are not one 0/1 per image, or when `name`
    is already stored with other verdicts (importing the same verdicts again changes nothing).
    Returns the scores."""
    check_name(name)
    root = Path(R.DEFAULT_ROOT if root is None else root)
    sources = plan(chunk, root, per_network, seed)
    kept = check_verdicts(_read_verdicts(path), sources, str(path))
    text = Path(path).read_bytes()
    folder = root / chunk / EXTERNAL / name
    if (folder / "verdicts.csv").is_file() and (folder / "verdicts.csv").read_bytes() != text:
        raise ExternalJudgeError(
            f"judge {name!r} is already imported into chunk {chunk!r} with other verdicts; a stored judge keeps one "
            "meaning: import these under another name"
        )
    results = [scores_of(s, kept) for s in sources]
    folder.mkdir(parents=True, exist_ok=True)
    with atomic_path(folder / "verdicts.csv") as tmp:
        tmp.write_bytes(text)
    meta = {"judge": name, "chunk": chunk, "n_images": len(kept), "per_network": per_network, "seed": seed,
            "note": note, "sources": results}  # fmt: skip
    with atomic_path(folder / "scores.json") as tmp:
        tmp.write_text(json.dumps(meta, indent=1) + "\n")
    return results


def imported(chunk: str, root=None) -> list[str]:
    """The external judges imported into `chunk`."""
    d = Path(R.DEFAULT_ROOT if root is None else root) / chunk / EXTERNAL
    return sorted(p.parent.name for p in d.glob("*/scores.json"))


def table(chunk: str, name: str, root=None) -> pd.DataFrame:
    """The chunk's sources scored under the imported judge `name`: one row per source (`network`,
    `target`, `scores`, `auc`, `auc_se`, `base_kept`, `judge`, …), as `volratio.runs.reference.table`."""
    p = Path(R.DEFAULT_ROOT if root is None else root) / chunk / EXTERNAL / name / "scores.json"
    if not p.is_file():
        raise ExternalJudgeError(
            f"chunk {chunk!r} has no verdicts of judge {name!r} (import them: volratio judge import)"
        )
    d = json.loads(p.read_text())
    return pd.DataFrame([{**s, "judge": name} for s in d["sources"]])
