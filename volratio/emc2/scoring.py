"""The EMC2 score: S(θ; δ) under a judge, its curve, area and per-parameter table.

For a network θ with non-zero parameters nz(θ), a perturbation size δ and a judge J (following
Do, Shah, Le, Liu 2026):

    S(θ; δ) = (1 / |nz(θ)|) · Σ_{w ∈ nz(θ)} 1[ J(render(θ with w ← w + δ)) keeps the identity ]

`score()` reports S as a curve over δ of both signs (default ±0.25 … ±2, since FER's weight sweeps
show Picbreeder parts moving at |Δw| ≈ 1), its normalised area under the curve, and a per-parameter
table. Only non-zero parameters count, so a pruned network is scored on what it keeps. It runs in
three steps: `render` the perturbed images, `judge_images` under every judge at once, `tabulate`
one result per judge. `score_members` scores every member of a population so, each on its own
perturbed images.

Chapter: "EMC2-Bench" (book/emc2.md).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace

import numpy as np
import pandas as pd
import torch
from tqdm import tqdm  # plain text bar: tqdm.auto warns in kernels without ipywidgets

from ..data.anchors import anchor_image
from ..errors import VolratioError
from ..judges import anchor_of, make_judge
from ..nets import CoordMLP
from ..util.device import device_name
from ..util.limits import at_least, nonzero, one_of, parsed_by
from ..util.presets import Presets
from .delta_scale import DELTA_SCALES, step_sizes
from .engine import DEFAULT_DELTAS, nonzero_params, params_of, perturbed_images, subsample, torch_dtype


@dataclass
class EMC2Config(Presets):
    deltas: tuple = DEFAULT_DELTAS  # perturbation sizes δ, both signs
    res: int = 64  # images are res×res (the paper's size is unknown; FER renders 256×256)
    which: str = "all"  # "all" non-zero weights, or "genome" (layerized Picbreeder networks only)
    max_params: int | None = None  # score a seeded uniform subsample of this many parameters (None = all)
    seed: int = 0  # seeds the subsample
    member: int = 0  # which network of a population
    device: str = "auto"  # CUDA when available, else CPU
    dtype: str = "float64"  # engine arithmetic; float64 = the exact reference, float32 = faster
    memory_bytes: int | None = None  # working-memory cap of one batch (None: 16 MiB CPU, 1 GiB CUDA)
    engine: str = "torch"  # "torch" (batched tensor operations), "fused" (C++ kernel, float32 CPU) or "auto"
    delta_scale: str = "absolute"  # w ← w + δ ("absolute", the paper's) or w + δ·std of its layer ("layer_std")

    # allowed values, checked when a config is parsed (`volratio.util.limits`)
    LIMITS = {"deltas": nonzero(), "res": at_least(2), "which": one_of("all", "genome"), "max_params": at_least(1),
              "seed": at_least(0), "member": at_least(0), "dtype": one_of("float32", "float64"),
              "memory_bytes": at_least(1), "device": parsed_by(device_name),
              "engine": one_of("torch", "fused", "auto"), "delta_scale": one_of(*DELTA_SCALES)}  # fmt: skip

    QUICK = {"res": 48, "max_params": 300}  # the book's scale: 48×48 images, at most 300 parameters per network
    FULL = {"res": 256, "max_params": None}  # every non-zero parameter at FER's 256×256


@dataclass
class EMC2Result:
    deltas: np.ndarray  # (n_δ,) sorted
    scores: np.ndarray  # (n_δ,) S(θ; δ)
    auc: float  # normalised area under the δ-curve (trapezoid over the δ grid / its span), in [0, 1]
    n_params: int  # parameters scored (after any subsample)
    n_nonzero: int  # non-zero parameters of the network (|nz(θ)|, or genome weights for which="genome")
    judge: str
    judge_settings: dict
    table: "object"  # pandas DataFrame: layer, row, col, weight, delta, shown, verdict, score, distance, step
    config: dict = field(default_factory=dict)
    base_kept: bool = True  # the judge says the unperturbed image shows the label (else every S is 0)
    base_score: float = float("nan")  # the judge's score of the unperturbed image
    anchor: str = "target"  # what the verdicts are anchored on: "target", "label" or "own image"
    measure: str = "compositional"  # "compositional" (anchored on the label) or "stability" (own image)

    def verdict_matrix(self) -> np.ndarray:
        """`(n_params, n_δ)` uint8: each scored weight's verdict at each δ (rows sorted by layer, row,
        col; columns in the order of `deltas`)."""
        v = self.table.pivot_table(index=["layer", "row", "col"], columns="delta", values="verdict", sort=True)
        return v.reindex(columns=self.deltas).to_numpy().astype(np.uint8)

    def auc_se(self) -> float:
        """The standard error of `auc` from the parameter subsample: the spread of each scored
        weight's own normalised AUC over √n, finite-population corrected (0 when every non-zero
        weight was scored, or when one was)."""
        per = np.array([normalised_auc(self.deltas, row) for row in self.verdict_matrix()])
        n, N = len(per), int(self.n_nonzero)
        return float(per.std(ddof=1) / np.sqrt(n) * np.sqrt(max(N - n, 0) / max(N - 1, 1))) if n > 1 else 0.0

    def to_json(self) -> dict:
        return {
            "judge": self.judge,
            "anchor": self.anchor,
            "measure": self.measure,
            "base_kept": bool(self.base_kept),
            "base_score": float(self.base_score),
            "judge_settings": self.judge_settings,
            "deltas": [float(x) for x in self.deltas],
            "scores": [float(x) for x in self.scores],
            "auc": float(self.auc),
            "n_params": int(self.n_params),
            "n_nonzero": int(self.n_nonzero),
            "config": self.config,
        }


def normalised_auc(deltas, scores) -> float:
    """∫ S dδ over the δ grid (trapezoid on the sorted δ), divided by the grid's span."""
    d, s = np.asarray(deltas, float), np.asarray(scores, float)
    o = np.argsort(d)
    d, s = d[o], s[o]
    if len(d) == 1:
        return float(s[0])
    return float(np.trapezoid(s, d) / (d[-1] - d[0]))


def summarise(table, params=None, threshold: float | None = None) -> tuple[np.ndarray, np.ndarray, float]:
    """`(deltas, S per δ, normalised AUC)` from a score table (`EMC2Result.table`), over the rows
    of `params` only (e.g. the genome connections of a Picbreeder network) and, when `threshold`
    is given, with verdicts recomputed as `score ≥ threshold` (no re-rendering needed)."""
    t = table
    if params is not None:
        keys = {tuple(p) for p in np.asarray(params, np.int64).reshape(-1, 3).tolist()}
        mask = [k in keys for k in zip(t.layer.tolist(), t.row.tolist(), t.col.tolist())]
        t = t[np.asarray(mask, bool)]
    verdict = t.verdict if threshold is None else t.score >= threshold
    s = verdict.groupby(t.delta).mean()
    return s.index.to_numpy(), s.to_numpy(), normalised_auc(s.index.to_numpy(), s.to_numpy())


def target_label(target_spec: str) -> str:
    """What a judge is asked about: `picbreeder:skull` → `skull`, `image:camera` → `camera`,
    otherwise the spec itself."""
    kind, _, rest = str(target_spec).partition(":")
    return rest if kind in ("picbreeder", "image") and rest else str(target_spec)


def judges_for(
    net: CoordMLP,
    names,
    target_spec: str,
    cfg: EMC2Config | None = None,
    *,
    calibration_seed: int | None = None,
    model: str | None = None,
    anchor=None,
    network: str | None = None,
) -> list:
    """The judges `names` (`volratio.judges.make_judge`) for member `cfg.member` of `net`, built on
    its unperturbed render: the anchored judges compare with the image of `target_spec` (or
    `anchor`, an image of what the label looks like); the self-anchored ones ("stability",
    "calibrated", "calibrated-pooled", "ssim") with the network's own render. "ssim" calibrates its
    threshold with `target_spec` left out, seeded by `calibration_seed` (default `cfg.seed`).
    `network`: the network's name in the anchored verdict set (e.g. "picbreeder:skull"), by which the
    cross-fitted judge "anchored-xfit" uses the rule fitted without that network's verdict rows."""
    cfg = cfg or EMC2Config()
    base, _ = perturbed_images(net, cfg.res, [], [], cfg.member, cfg.device, torch_dtype(cfg.dtype), cfg.memory_bytes)
    seed = cfg.seed if calibration_seed is None else calibration_seed
    return [
        make_judge(n, base.cpu(), target_spec, model, seed, cfg.device, anchor=anchor, network=network) for n in names
    ]


@dataclass
class Perturbations:
    """The render step: the unperturbed image and the perturbed ones, batch by batch."""

    deltas: np.ndarray  # (n_δ,) sorted
    params: np.ndarray  # (N, 3) the scored parameters
    n_nonzero: int  # non-zero parameters of the network (or genome weights, for which="genome")
    P: np.ndarray  # (N·n_δ, 3) the parameter of each perturbed image (δ varies fastest)
    D: np.ndarray  # (N·n_δ,) its δ
    steps: np.ndarray  # (N·n_δ,) the change applied to the weight: δ, or δ × its layer's scale (`delta_scale`)
    base: object  # (res, res, 3) torch tensor: the unperturbed render
    images: object  # iterator of (indices into P, images (b, res, res, 3))


@dataclass
class Judged:
    """The judge step: per judge, each perturbed image's verdict and score, and the base's."""

    shown: np.ndarray  # (J, N·n_δ) bool: the judge says the perturbed image shows the label
    scores: np.ndarray  # (J, N·n_δ) the judge's score of each perturbed image
    distance: np.ndarray  # (N·n_δ,) RMS pixel change from the unperturbed image
    base: list  # per judge, its `Verdicts` on the unperturbed image


def render(net: CoordMLP, cfg: EMC2Config, params=None, layered=None) -> Perturbations:
    """Every perturbation `w ← w + δ·s(w)` of the scored parameters: `params` (`(N, 3)`), default
    `params_of(net, cfg.which, layered)` subsampled to `cfg.max_params` (seeded by `cfg.seed`);
    `s(w)` is 1 under `cfg.delta_scale = "absolute"` and the std of the weight's layer under
    "layer_std" (`volratio.emc2.delta_scale`)."""
    deltas = np.sort(np.asarray(cfg.deltas, dtype=np.float64))
    if deltas.size == 0 or not np.isfinite(deltas).all():
        raise VolratioError(f"deltas must be finite numbers, at least one, got {list(cfg.deltas)}")
    if params is None:
        allp = params_of(net, cfg.which, layered, cfg.member)
        params = subsample(allp, cfg.max_params, cfg.seed)
        n_nonzero = len(allp)
    else:
        params = np.asarray(params, dtype=np.int64).reshape(-1, 3)
        n_nonzero = len(nonzero_params(net, cfg.member))
    if len(params) == 0:
        raise VolratioError("the network has no non-zero parameters to perturb")
    P = np.repeat(params, len(deltas), axis=0)  # (N·n_δ, 3), δ varies fastest
    D = np.tile(deltas, len(params))
    steps = D  # the paper's w ← w + δ, untouched
    if cfg.delta_scale != "absolute":
        steps = D * np.repeat(step_sizes(net, params, cfg.member, cfg.delta_scale), len(deltas))
    base, images = perturbed_images(
        net, cfg.res, P, steps, cfg.member, cfg.device, torch_dtype(cfg.dtype), cfg.memory_bytes, cfg.engine
    )
    return Perturbations(deltas, params, n_nonzero, P, D, steps, base, images)


JUDGE_BATCH_BYTES = 1 << 30  # on a GPU, rendered batches are joined up to this many bytes of images per judge call


def judge_batches(images, limit_bytes: int = JUDGE_BATCH_BYTES):
    """The render step's batches `(indices, images)`, joined on a GPU into batches of at most
    `limit_bytes` of images (a judge on the device runs a few large calls rather than many small
    ones; every judge feature is computed image by image, so the joining changes no number); on the
    CPU passed through as rendered."""
    held, size = [], 0
    for idx, imgs in images:
        if not imgs.is_cuda:
            yield idx, imgs
            continue
        nbytes = imgs.numel() * imgs.element_size()
        if held and size + nbytes > limit_bytes:
            yield np.concatenate([i for i, _ in held]), torch.cat([x for _, x in held])
            held, size = [], 0
        held.append((idx, imgs))
        size += nbytes
    if held:
        yield np.concatenate([i for i, _ in held]), torch.cat([x for _, x in held])


def judge_images(pert: Perturbations, judges: list, label: str, progress: bool = False) -> Judged:
    """Every judge on every perturbed image, batch by batch (each batch rendered once for all
    judges; on a GPU, rendered batches joined by `judge_batches`), and on the unperturbed image: a
    weight keeps the identity only when the network draws the label in the first place (a
    self-anchored judge always accepts its own render)."""
    M = len(pert.P)
    shown = np.zeros((len(judges), M), bool)
    scores = np.zeros((len(judges), M))
    dist = np.zeros(M)
    base = [judge(pert.base[None], label) for judge in judges]
    bar = tqdm(total=M, desc="EMC2", unit="img", leave=False, disable=None) if progress else None  # None: a terminal
    for idx, imgs in judge_batches(pert.images):
        if bar is not None:
            bar.update(len(idx))
        for j, judge in enumerate(judges):
            v = judge(imgs, label)
            shown[j, idx] = v.verdicts
            scores[j, idx] = v.scores
        dist[idx] = ((imgs - pert.base) ** 2).mean(dim=(1, 2, 3)).sqrt().cpu().numpy()
    if bar is not None:
        bar.close()
    return Judged(shown, scores, dist, base)


def tabulate(net: CoordMLP, pert: Perturbations, judged: Judged, judges: list, cfg: EMC2Config) -> list[EMC2Result]:
    """One `EMC2Result` per judge: its per-parameter table, S per δ and the normalised area."""
    W = [w.detach()[cfg.member].cpu().double().numpy() for w in net.effective_weights()]
    weight = np.zeros(len(pert.P))
    for k in np.unique(pert.P[:, 0]):
        sel = pert.P[:, 0] == k
        weight[sel] = W[k][pert.P[sel, 1], pert.P[sel, 2]]
    out = []
    for j, judge in enumerate(judges):
        base_kept = bool(judged.base[j].verdicts[0])
        table = pd.DataFrame(
            {
                "layer": pert.P[:, 0],
                "row": pert.P[:, 1],
                "col": pert.P[:, 2],
                "weight": weight,
                "delta": pert.D,
                "shown": judged.shown[j],
                "verdict": judged.shown[j] & base_kept,  # shown before and after the perturbation
                "score": judged.scores[j],
                "distance": judged.distance,
                "step": pert.steps,  # the change applied to the weight (δ, or δ × its layer's scale)
            }
        )
        scores = table.groupby("delta")["verdict"].mean().reindex(pert.deltas).to_numpy()
        fitted = {k: v for k, v in judged.base[j].settings.items() if k == "label_fitted"}
        anchor = anchor_of(judge)
        out.append(
            EMC2Result(
                deltas=pert.deltas,
                scores=scores,
                auc=normalised_auc(pert.deltas, scores),
                n_params=len(pert.params),
                n_nonzero=pert.n_nonzero,
                judge=judge.name,
                judge_settings={**judge.settings(), **fitted},
                table=table,
                config={**asdict(cfg), "deltas": [float(x) for x in pert.deltas]},
                base_kept=base_kept,
                base_score=float(judged.base[j].scores[0]),
                anchor=anchor,
                measure="stability" if anchor == "own image" else "compositional",
            )
        )
    return out


def score(
    net: CoordMLP,
    judges,
    label: str,
    cfg: EMC2Config | None = None,
    *,
    params=None,
    layered=None,
    progress: bool = False,
) -> list[EMC2Result]:
    """S(θ; δ) of member `cfg.member` for every δ of `cfg.deltas`, one `EMC2Result` per judge of
    `judges` (`volratio.judges` objects; `judges_for` builds them by name), each asked whether an
    image shows `label` (`target_label` of a target spec). The perturbed images are rendered once
    and every judge sees the same batches, so each result equals the score under that judge alone.

    `params`: explicit `(N, 3)` parameters (default: see `render`). `progress=True` shows a
    progress bar over the perturbed images (on a terminal only)."""
    cfg = cfg or EMC2Config()
    judges = list(judges)
    if not judges:
        raise VolratioError("score needs at least one judge; build them with volratio.emc2.judges_for")
    pert = render(net, cfg, params, layered)
    return tabulate(net, pert, judge_images(pert, judges, label, progress), judges, cfg)


def score_members(
    net: CoordMLP,
    target_spec: str,
    judges,
    cfg: EMC2Config,
    *,
    anchor: str = "image",
    calibration_seed: int | None = None,
    names=None,
) -> list[list[EMC2Result]]:
    """EMC2 of every member of `net` on `target_spec` under each judge named in `judges` (the
    member's perturbed images rendered once and judged by all of them), at the settings `cfg` (its
    `member` ignored): one list of `EMC2Result` per member, in the order of `judges`. `anchor`: what
    the label-anchored judges compare with (`volratio.data.anchors`); `calibration_seed`: as
    `judges_for`; `names`: each member's name in the anchored verdict set (`judges_for`'s `network`),
    or None. The one population scorer of the score stage (`volratio.runs.score`) and of the sparse
    regime's populations (`volratio.experiments.sparse_regime.scores`)."""
    if names is not None and len(names) != net.population:
        raise VolratioError(f"score_members: {len(names)} network names for {net.population} networks")
    label, out = target_label(target_spec), []
    for k in range(net.population):
        ek = replace(cfg, member=k)
        image = None if anchor == "image" else anchor_image(target_spec, ek.res, anchor)
        network = None if names is None else names[k]
        js = judges_for(net, list(judges), target_spec, ek, calibration_seed=calibration_seed, anchor=image,
                        network=network)  # fmt: skip
        out.append(score(net, js, label, ek))
    return out
