"""The clear-drawings verdict set: perturbations of networks that fit, on all sixteen Picbreeder labels.

The anchored verdict sets (`volratio.calibration.anchored_set`) hold few clear drawings of the
thirteen fork labels, and the default judge reads those labels with its pooled threshold. This set
(`data/judge_reference/clear16/`) holds, for every label of the sixteen Picbreeder targets
(`volratio.data.picbreeder.ALL_NAMES`), single-weight perturbations at the claims' δ
(`emc2.DEFAULT_DELTAS`, ±0.25 … ±2) of networks that fit the label's target, and the generated
negatives a judge must reject, each judged by inspection against the target image
(`data/judge_reference/clear16/README.md` says how, and the written criteria).

Network kinds (`KINDS`), all read from the Picbreeder data or the reference store, nothing trained:

- `picbreeder` — the label's Picbreeder network (`picbreeder.network`);
- `twin` — the three dense twins the chunk `twins16` stores per label;
- `optimizer` — Adam and Muon networks of `optimizers` (depth-tuned, lightly SP-pruned), skull,
  butterfly and apple (`_stored` says which);
- `sp` — SP networks at their fit point of `optimizers_sparse` and `optimizers_sparse_butterfly`,
  chosen the same way;
- `generated` — per label one flat page, its 4×4 pixelated and Gaussian-blurred targets, another
  label's target and a noise image (`hard_negatives.negatives_for`), drawn by the seed.

Sampling (`sample`): every network's unperturbed image, and perturbed images drawn per label from
`n_candidates` seeded candidates per network in two strata by how far the judges' scores lie from
their thresholds (`margins`: "near" when some judge of `SAMPLING_JUDGES` scores within `near` of
its threshold or the judges disagree, else "far"), half of each label's draws from each stratum.
Each row records its stratum and sampling weight (candidates in its stratum / drawn from it; 1 for
unperturbed and generated rows). The judges' scores are kept apart (`sampling.csv`) and never shown
while inspecting.

Batches (`BATCHES`): the set grows by batches, each inspected as drawn. Batch 1 holds the
unperturbed images, the negatives and the first perturbed draws; a later batch draws only perturbed
images from fresh candidates (its own seed), none whose image the set already shows (`build` with
`previous`). `union_weights` combines the batches' sampling weights into the set's `weight`.

Chapter: "EMC2-Bench" (book/emc2.md), section "The judge, validated".
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from ..data import picbreeder
from ..data.targets import get_target
from ..emc2 import DEFAULT_DELTAS, nonzero_params, subsample
from ..errors import DataNotFoundError, VolratioError
from ..judges.registry import make_judge
from ..runs.reference import DEFAULT_ROOT
from ..runs.store import Store
from . import anchored_set as A
from . import hard_negatives as H
from . import reference_verdicts as rv

SET_DIR = rv.DATA_DIR / "clear16"
VERDICTS_CSV = SET_DIR / "verdicts.csv"  # one row per image, pass1 / pass2 by inspection
SAMPLING_CSV = SET_DIR / "sampling.csv"  # every candidate's judge margins and stratum (sampling only)
LABELS = picbreeder.ALL_NAMES  # the sixteen Picbreeder labels
KINDS = ("picbreeder", "twin", "optimizer", "sp", "generated")
SAMPLING_JUDGES = ("anchored-v2", "anchored", "anchored-ssim")  # whose margins define the strata
NEGATIVE_KINDS = ("flat", "pixelated", "blurred", "other-target", "noise")  # one of each per label
CHUNKS = {  # kind -> (reference chunks, run name)
    "twin": (("twins16",), "twin_point"),
    "optimizer": (("optimizers",), "optimizer_point"),
    "sp": (("optimizers_sparse", "optimizers_sparse_butterfly"), "sparse_optimizer_point"),
}


@dataclass
class Clear16Config:
    res: int = 64  # the claims' scoring resolution
    deltas: tuple = DEFAULT_DELTAS  # δ drawn uniformly from the claims' grid
    n_candidates: int = 24  # perturbed candidates per network, before sampling
    n_per_optimizer: int = 2  # runs chosen per target and optimizer (Adam, Muon) among optimizer and SP networks
    n_perturbed: int = 16  # perturbed images drawn per label (fork labels)
    n_perturbed_main: int = 24  # per label with optimizer and SP networks (skull, butterfly, apple)
    near: float = 0.1  # a judge's |score − threshold| below this puts a candidate in the "near" stratum
    seed: int = 7201  # candidates, strata draws and the generated negatives' choice
    batch: int = 1  # 1 draws the unperturbed images and negatives too; a later batch only new perturbed images

    def to_json(self) -> dict:
        return {**asdict(self), "deltas": [float(d) for d in self.deltas]}


BATCHES = {  # batch id -> its config: the set is their union, each batch inspected as drawn
    1: Clear16Config(),
    2: Clear16Config(n_perturbed=23, n_perturbed_main=23, seed=7221, batch=2),  # ≥ 45 images a label, ≥ 800 in all
}


# ---------------------------------------------------------------------------------------------
# Networks


def _stored(kind: str, root, n_per_optimizer: int) -> dict[str, rv.RefNet]:
    """The networks of `kind` in its reference chunks. Twins: all. Optimizer and SP networks: per
    target and optimizer, the first `n_per_optimizer` runs not collapsed (by seed, then run key),
    named by optimizer, depth and seed; two chosen runs that share those (they differ in other
    settings) share the name, and the later by key is the one kept, so each name is one network
    (the set was drawn so: 6 optimizer and 8 SP networks; the run keys are in `source`)."""
    chunks, run = CHUNKS[kind]
    out, taken = {}, {}
    for chunk in chunks:
        store = Store(Path(root) / chunk)
        recs = [r for r in store.records() if r["run"] == run and r["status"] == "done"]
        for r in sorted(recs, key=lambda r: (r["config"]["target"], r["config"].get("optimizer", ""),
                                            r["config"]["seed"], r["key"])):  # fmt: skip
            c = r["config"]
            label = c["target"].removeprefix("picbreeder:")
            if kind == "twin":
                tag = c["seed"]
            else:
                n = taken.get((label, c["optimizer"]), 0)
                if np.any(r["metrics"].get("collapsed", False)) or n >= n_per_optimizer:
                    continue
                taken[(label, c["optimizer"])] = n + 1
                tag = f"{c['optimizer']}-d{c['depth']}-s{c['seed']}"
            out[f"{kind}:{label}/{tag}"] = rv.RefNet(store.artifact(r["key"], "net"), 0, f"picbreeder:{label}",
                                                     label, f"{chunk} {r['key']}")  # fmt: skip
    if not out:
        raise DataNotFoundError(f"no {run} runs stored under {root} ({', '.join(chunks)}): run those reference chunks")
    return out


def networks(root=None, cfg: Clear16Config | None = None) -> dict[str, rv.RefNet]:
    """Every network of the set, keyed `KIND:LABEL[/TAG]`: the sixteen Picbreeder networks, the
    twins, and the optimizer and SP networks read from the reference store at `root`."""
    cfg = cfg or Clear16Config()
    root = Path(root or DEFAULT_ROOT)
    out = {f"picbreeder:{t}": rv.RefNet(picbreeder.network(t), 0, f"picbreeder:{t}", t, f"picbreeder:{t}")
           for t in LABELS}  # fmt: skip
    for kind in CHUNKS:
        out |= _stored(kind, root, cfg.n_per_optimizer)
    return out


def kind_of(network: str) -> str:
    kind = network.split(":", 1)[0]
    if kind not in KINDS:
        raise VolratioError(f"network {network!r}: its kind is not one of {', '.join(KINDS)}")
    return kind


# ---------------------------------------------------------------------------------------------
# Candidates, generated negatives, strata


def _row(network: str, label: str, kernel=-1, row=-1, col=-1, delta=0.0, res=64) -> dict:
    return {"network": network, "kind": kind_of(network), "target": f"picbreeder:{label}", "label": label,
            "kernel": kernel, "row": row, "col": col, "delta": float(delta), "res": res}  # fmt: skip


def candidates(nets: dict, cfg: Clear16Config | None = None) -> pd.DataFrame:
    """Per network its unperturbed image and `cfg.n_candidates` seeded (weight, δ) perturbations of
    its non-zero weights, in the order of `sorted(nets)`."""
    cfg = cfg or Clear16Config()
    rng = np.random.default_rng(cfg.seed)
    rows = []
    for i, name in enumerate(sorted(nets)):
        rn = nets[name]
        rows.append(_row(name, rn.label, res=cfg.res))
        P = subsample(nonzero_params(rn.net, rn.member), cfg.n_candidates, seed=cfg.seed + i)
        D = rng.choice(np.asarray(cfg.deltas, float), size=len(P))
        rows += [_row(name, rn.label, k, r, c, d, cfg.res) for (k, r, c), d in zip(P.tolist(), D.tolist())]
    return pd.DataFrame(rows)


def _targets(res: int) -> dict[str, torch.Tensor]:
    return {lab: get_target(f"picbreeder:{lab}").image(res).double() for lab in LABELS}


def negatives(cfg: Clear16Config | None = None) -> pd.DataFrame:
    """Per label one generated negative of each of `NEGATIVE_KINDS`, the variant of each kind drawn
    by the seed among `hard_negatives.negatives_for`'s (network `generated:LABEL/NAME`)."""
    cfg = cfg or Clear16Config()
    rng = np.random.default_rng(cfg.seed + 1)
    targets = _targets(cfg.res)
    rows = []
    for lab in LABELS:
        names = list(H.negatives_for(lab, cfg.res, targets))
        for kind in NEGATIVE_KINDS:
            options = [n for n in names if n.startswith(kind)]
            rows.append(_row(f"generated:{lab}/{options[rng.integers(len(options))]}", lab, res=cfg.res))
    return pd.DataFrame(rows)


def render(rows: pd.DataFrame, nets: dict) -> list[torch.Tensor]:
    """The images of `rows`, `(res, res, 3)` float64 each, in row order: network rows by the exact
    engine (`anchored_set.render`), generated rows regenerated from the targets."""
    rows = rows.reset_index(drop=True)
    out: list = [None] * len(rows)
    gen = rows["kind"] == "generated"
    if (~gen).any():
        part = rows[~gen].reset_index(drop=True)
        for i, img in zip(rows.index[~gen], A.render(part, nets)):
            out[i] = img
    for res in sorted(set(rows.loc[gen, "res"])):
        targets = _targets(int(res))
        cache = {}
        for i in rows.index[gen & (rows["res"] == res)]:
            lab, name = rows.at[i, "network"].removeprefix("generated:").split("/", 1)
            cache.setdefault(lab, H.negatives_for(lab, int(res), targets))
            if name not in cache[lab]:
                raise VolratioError(f"row {i}: generated negative {name!r} of {lab} is not one hard_negatives makes")
            out[i] = cache[lab][name].double().clamp(0, 1)
    return out


def margins(rows: pd.DataFrame, images, judges=SAMPLING_JUDGES) -> pd.DataFrame:
    """`(len(rows), len(judges))` each judge's score minus its threshold for the row's label (the
    cross-fitted judges with their all-rows rule). For drawing strata only: never shown while
    inspecting."""
    rows = rows.reset_index(drop=True)
    out = pd.DataFrame(index=rows.index, columns=list(judges), dtype=float)
    x = torch.stack(list(images))
    for lab, part in rows.groupby("label", sort=True):
        for name in judges:
            j = make_judge(name, x[0], target_spec=f"picbreeder:{lab}")
            scores = j(x[part.index.to_numpy()], lab).scores
            out.loc[part.index, name] = scores - j.rule.threshold(lab)[0]
    return out


def strata(m: pd.DataFrame, near: float) -> np.ndarray:
    """ "near" where some judge lies within `near` of its threshold or the judges disagree, else "far"."""
    v = m.to_numpy(float)
    close = (np.abs(v) < near).any(1)
    split = (v >= 0).any(1) & (v < 0).any(1)
    return np.where(close | split, "near", "far")


def sample(cands: pd.DataFrame, m: pd.DataFrame, cfg: Clear16Config | None = None) -> pd.DataFrame:
    """The set's network rows: every unperturbed image (weight 1), and per label the perturbed
    draws (`cfg.n_perturbed`, or `n_perturbed_main` for labels with optimizer and SP networks), half
    from each stratum (all of a stratum when it has fewer), seeded; `weight` = candidates in the
    row's label × stratum / drawn from it."""
    cfg = cfg or Clear16Config()
    rng = np.random.default_rng(cfg.seed + 2)
    c = cands.reset_index(drop=True).assign(stratum=strata(m, cfg.near))
    c.loc[c["kernel"] < 0, "stratum"] = "base"
    picked = [c[c["stratum"] == "base"].assign(weight=1.0)]
    for lab in LABELS:
        part = c[(c["label"] == lab) & (c["stratum"] != "base")]
        n = cfg.n_perturbed_main if part["kind"].isin(("optimizer", "sp")).any() else cfg.n_perturbed
        sizes = {s: int((part["stratum"] == s).sum()) for s in ("near", "far")}
        take = {"near": min(sizes["near"], n // 2)}
        take["far"] = min(sizes["far"], n - take["near"])
        take["near"] = min(sizes["near"], n - take["far"])
        for s, k in take.items():
            idx = part.index[part["stratum"] == s].to_numpy()
            chosen = np.sort(rng.choice(idx, size=k, replace=False))
            picked.append(c.loc[chosen].assign(weight=sizes[s] / k))
    return pd.concat(picked).sort_index()


def build(root=None, cfg: Clear16Config | None = None, previous: pd.DataFrame | None = None):
    """`(rows, images, sampling)` of one batch: the batch's rows (network rows from `sample`, then
    the generated negatives, ids 0…), their images, and every candidate's margins and stratum
    (`sampling`). A later batch (`cfg.batch` > 1) draws from fresh candidates (its own seed) only
    perturbed images, none whose image (`sha256`) is already in `previous` (the rows of the earlier
    batches) or drawn twice in the batch: such candidates leave its pool before the strata are drawn
    (`sampling`'s stratum `duplicate`). Its ids continue `previous`'s. `batch_weight` is the row's
    weight within its batch; `union_weights` combines the batches'."""
    cfg = cfg or Clear16Config()
    later = cfg.batch > 1
    if later and previous is None:
        raise VolratioError(f"clear16 batch {cfg.batch}: pass the earlier batches' rows (previous) to exclude them")
    nets = networks(root, cfg)
    cands = candidates(nets, cfg)
    cand_images = render(cands, nets)
    dup = np.zeros(len(cands), bool)
    sha = pd.Series(A.image_sha(cand_images))
    if later:
        dup = ((cands["kernel"] < 0) | sha.isin(set(previous["sha256"])) | sha.duplicated()).to_numpy()
    keep = np.flatnonzero(~dup)  # the pool's rows in `cands`
    pool = cands.iloc[keep].reset_index(drop=True)
    m = margins(pool, [cand_images[i] for i in keep])
    picked = sample(pool, m, cfg)
    parts = [picked]
    if not later:
        parts.append(negatives(cfg).assign(stratum="generated", weight=1.0))
    rows = pd.concat(parts, ignore_index=True).rename(columns={"weight": "batch_weight"})
    start = int(previous["id"].max()) + 1 if later else 0
    rows.insert(0, "id", np.arange(start, start + len(rows)))
    rows.insert(2, "group", rows["kind"])  # the verdict sets' grouping column: the network kind
    rows.insert(rows.columns.get_loc("batch_weight"), "batch", cfg.batch)
    images = render(rows, nets)
    rows["sha256"] = A.image_sha(images)
    sampling = cands.assign(stratum="duplicate", **{f"margin_{k}": np.nan for k in m.columns})
    sampling.loc[keep, "stratum"] = strata(m, cfg.near)
    sampling.loc[(sampling["kernel"] < 0) & ~dup, "stratum"] = "base"
    for k in m.columns:
        sampling.loc[keep, f"margin_{k}"] = m[k].to_numpy()
    sampling["picked"] = sampling.index.isin(keep[picked.index.to_numpy()])
    sampling["same_as"] = -1
    if later:  # each perturbed candidate left out as a copy: the id of the set's row showing its image
        held = pd.concat([previous, rows])
        held = held.assign(_gen=held["kind"] == "generated").sort_values(["_gen", "id"])
        first = held.drop_duplicates(["label", "sha256"]).set_index(["label", "sha256"])["id"]
        out = np.flatnonzero(dup & (cands["kernel"] >= 0).to_numpy())
        found = first.reindex(list(zip(cands["label"].iloc[out], sha.iloc[out])))
        sampling.loc[out, "same_as"] = found.fillna(-1).astype(int).to_numpy()
    return rows, images, sampling.assign(batch=cfg.batch)


def union_weights(rows: pd.DataFrame, sampling: pd.DataFrame) -> np.ndarray:
    """The sampling weights of the union of batches (the `weight` κ is weighted by), from the rows
    and every batch's candidates (`sampling`, `build`'s third value).

    Each batch is a stratified sample of its own pool of candidates, a row drawn at rate
    1 / `batch_weight` in its label × stratum; a row can be drawn only in its batch, so that rate is
    also its rate in the union of the pools. Every batch has as many candidates per network as the
    first, so the union holds `B` times one batch's perturbed candidates (`B` batches): a perturbed
    row weighs `batch_weight / B`, an unperturbed or generated row 1, so that each network's
    unperturbed image stays one in `n_candidates + 1` of its images, as in the first batch alone.
    A later batch's candidate left out of its pool because the set already shows its image (same
    label, `same_as`) adds its own share, 1 / `B`, to the row that shows it: its verdict is that
    row's. Copies of a candidate the batch did not draw have no row and drop out (`same_as` −1)."""
    n = rows["batch"].nunique()
    w = pd.Series(np.where(rows["kernel"] >= 0, rows["batch_weight"] / n, 1.0), index=rows["id"].to_numpy())
    credit = sampling.loc[sampling["same_as"] >= 0, "same_as"].value_counts() / n
    if unknown := set(credit.index) - set(w.index):
        raise VolratioError(f"clear16 sampling: same_as names rows {sorted(unknown)[:5]} the verdicts lack")
    w = w.add(credit, fill_value=0.0)
    return w.loc[rows["id"].to_numpy()].to_numpy()


# ---------------------------------------------------------------------------------------------
# Inspection: the first pass by label (`anchored_set.judging_mosaics`), the blind repeat mixed


def repeat_rows(rows: pd.DataFrame, share: float = 0.3, seed: int = 7202) -> pd.DataFrame:
    """The rows of the blind repeat: a seeded `share` of each label's rows (rounded up)."""
    rng = np.random.default_rng(seed)
    picked = [part.index.to_numpy()[rng.permutation(len(part))[: int(np.ceil(share * len(part)))]]
              for _, part in rows.groupby("label", sort=True)]  # fmt: skip
    return rows.loc[np.sort(np.concatenate(picked))]


def pair_mosaics(rows: pd.DataFrame, images, seed: int = 7203, per_mosaic: int = 30, cols: int = 5):
    """`[(row ids, PIL image)]`: the rows shuffled across labels (seeded), each tile the label's
    target image on the left and the image to judge on the right, numbered from 1 per mosaic, at
    the images' size upscaled ×2; no label, network, δ or score shown. The blind repeat's layout:
    unlike the first pass, labels are mixed and each tile carries its own anchor."""
    rows = rows.reset_index(drop=True)
    order = np.random.default_rng(seed).permutation(len(rows))
    targets = {}
    out = []
    for j in range(0, len(order), per_mosaic):
        chunk = order[j : j + per_mosaic]
        tiles = []
        for i in chunk:
            spec, res = rows.at[i, "target"], int(images[i].shape[0])
            if (spec, res) not in targets:
                targets[spec, res] = torch.as_tensor(np.asarray(get_target(spec).image(res)), dtype=torch.float64)
            gap = torch.ones(res, 4, 3, dtype=torch.float64)
            tiles.append(torch.cat([targets[spec, res], gap, images[i].double()], dim=1))
        m = rv.captioned_mosaic(torch.stack(tiles), list(range(1, len(chunk) + 1)), cols=cols, scale=2)
        out.append((rows.loc[chunk, "id"].tolist(), m))
    return out


def load_verdicts(path: str | Path | None = None) -> pd.DataFrame:
    """The stored verdicts (`VERDICTS_CSV`): `pass1` 1 = shows the label, `pass2` the blind repeat
    (empty where not repeated). Raises `DataNotFoundError` naming the path when it is missing."""
    p = Path(path) if path else VERDICTS_CSV
    if not p.exists():
        raise DataNotFoundError(f"clear16 verdicts not found at {p}; they ship in data/judge_reference/clear16/")
    return A.load_verdicts(p)
