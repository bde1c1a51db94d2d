"""Probe: a small CNN over (image, anchor, image − anchor) as a candidate EMC2 judge.

Not a judge of the library: a comparison with "anchored-xfit", cross-fitted like it
(`volratio.calibration.crossfit`).

The rows are the anchored verdicts (`fit_anchored.verdict_table`) and the generated negatives
(`hard_negatives`), both drawn at 32×32 (area averaging, as the judges resample) beside their
label's target at 32×32. Held out the two ways `crossfit.agreement` holds the gated rule out:

- **by network** — the same folds (`crossfit.folds`, K = 5, seed 0): one CNN per fold, trained on
  every row outside it (verdicts and generated negatives), predicting the fold's rows;
- **by label** — one CNN per verdict label, trained on every other label's rows (its anchor is also
  left out of the training pairs below), predicting the label's rows.

The CNN (61,681 parameters): four 3×3 conv–batch-norm–ReLU blocks (16, 32, 64, 64 channels, max-pool
between) over the 9 channels (image, anchor, image − anchor), mean and max pooled, dropout 0.2, a
linear logit. Trained 40 epochs, batch 64, AdamW (3e-3, weight decay 1e-4, one-cycle schedule),
binary cross-entropy with the generated negatives at weight 0.5. Each epoch adds two kinds of pairs
to the training rows: every allowed anchor paired with itself (positive: "the target shows its
label"), and a quarter of the training Picbreeder images paired with another Picbreeder label's
anchor (negative, weight 0.5; labels that draw the same thing, `hard_negatives.SAME_LABEL`, are
never paired). Augmentation, joint on image and anchor so the verdict is kept: one of the eight
dihedral transforms, a permutation of the colour channels, a contrast factor in 1 ± 0.15 and an
offset in ±0.08 (uniform, clamped to [0, 1]). Seeds: fold f of seed s trains with `100 s + f`, the i-th label (sorted) with `100 s + 50 + i`.

κ and its 95% network-bootstrap interval come from `crossfit.agreement` itself, so the CNN and the
gated rule are scored by one code path. `agreement` computes its own predictions (it calls
`crossfit.out_of_fold` and `crossfit.leave_label_out`) and takes none; `crossfit_scores` below
swaps those two module functions for the CNN's held-out predictions inside a `with` block and
restores them in `finally` (nothing else of the library is touched). A kept image is P(kept) ≥ 0.5;
several seeds are pooled by averaging their probabilities.

    python tools/judge_cnn_probe.py data  --out /tmp/judge_cnn_probe   # verdict table, negatives, 32×32 arrays
    python tools/judge_cnn_probe.py xfit  --out /tmp/judge_cnn_probe   # anchored-xfit through agreement
    python tools/judge_cnn_probe.py train --out /tmp/judge_cnn_probe --seed 0
    python tools/judge_cnn_probe.py train --out /tmp/judge_cnn_probe --seed 1
    python tools/judge_cnn_probe.py report --out /tmp/judge_cnn_probe \\
        --model "cnn s0=/tmp/judge_cnn_probe/preds_cnn_s0.npz" --model "cnn s1=/tmp/judge_cnn_probe/preds_cnn_s1.npz" \\
        --model "cnn 2-seed=/tmp/judge_cnn_probe/preds_cnn_s0.npz+/tmp/judge_cnn_probe/preds_cnn_s1.npz"

`data --all-sets` takes the rows from the four verdict sets (`fit_anchored.VERDICT_SETS`, 20 labels,
their set in column `set`); `xfit --by set` and `report --by set` then give κ per set.
`train --folds 0 --schemes network --compare FILE` trains one fold only and compares its held-out
predictions with a stored prediction file. Files in `--out`: `verdicts.parquet`,
`generated.parquet`, `images.npz` (data); `xfit_agreement.parquet`, `xfit.npz` (xfit);
`preds_<tag>.npz` (`p_net`, `p_lab`: P(kept) per verdict row then generated row, NaN where not
held out) and `cpu_<tag>.json` (train); `agreement_<name>.parquet`, `kappa_table.md` (report).
No pickle: tables as parquet, arrays as `np.savez`. One thread, seeded: the same arguments give
the same predictions on one CPU kind and torch version. Results: tools/judge_cnn_probe.md.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import torch
import torch.nn as nn

from volratio.calibration import anchored_set as A
from volratio.calibration import crossfit as C
from volratio.calibration import fit_anchored as fa
from volratio.calibration import hard_negatives as H
from volratio.calibration.hard_negatives import SAME_LABEL
from volratio.judges.anchored import target_anchor
from volratio.judges.anchored_rule import GATE_FEATURES, read_rule
from volratio.judges.base import resample
from volratio.util.stats import roc_auc

RES = 32  # the CNN's input size (images and anchors)
ANCHOR_RES = 64  # anchors are drawn at 64×64, then area-averaged to RES like the images
THRESHOLD = 0.5  # kept when P(kept) ≥ THRESHOLD
DEFAULT_OUT = "/tmp/judge_cnn_probe"


# ---------------------------------------------------------------------------------------------
# data


@dataclass
class Data:
    verdicts: pd.DataFrame  # the verdict table, features of anchored-xfit included
    generated: pd.DataFrame  # the generated negatives' feature table (`hard_negatives.feature_table`)
    x: np.ndarray  # (n_verdicts, RES, RES, 3) float32
    x_anchor: np.ndarray  # (n_verdicts, RES, RES, 3) float32: each row's label's target
    g: np.ndarray  # (n_generated, RES, RES, 3) float32
    g_anchor: np.ndarray  # (n_generated, RES, RES, 3) float32
    anchors: dict  # {target spec: (RES, RES, 3) float32} for every target of either table


def small(image: torch.Tensor) -> np.ndarray:
    """`(H, W, 3)` → `(RES, RES, 3)` float32, by the judges' resampling (area averaging)."""
    return resample(image[None], RES)[0].float().numpy()


def verdict_set(path, names) -> tuple[pd.DataFrame, list[torch.Tensor]]:
    """One verdict set's judged rows (`fit_anchored.verdict_table`) and their images, re-rendered
    from their networks and checked against the stored hashes; `path` None is the first set."""
    rows = A.load_verdicts(path)
    if path is None:
        nets = A.networks(groups=sorted(set(rows["group"])))
    else:
        nets = {A.NEW_CSV: A.new_target_networks, A.FORK_CSV: A.fork_networks, A.SPARSE_CSV: A.sparse_networks}[path]()
    vt = fa.verdict_table(rows if path is not None else None, nets=nets, names=names)
    keep = vt["pass1"].notna().to_numpy()
    images = A.render(vt, nets)
    if A.image_sha(images) != vt["sha256"].tolist():
        raise SystemExit(f"{path or 'verdicts.csv'}: re-rendered images differ from the stored sha256")
    return vt[keep].reset_index(drop=True), [im for im, k in zip(images, keep) if k]


def build_data(all_sets: bool = False) -> Data:
    """The verdict table with the features anchored-xfit reads, the generated negatives, and both
    sets of images at RES beside their anchors (the verdict images re-rendered and checked against
    the stored hashes). `all_sets`: the four verdict sets of `fit_anchored.VERDICT_SETS` (20 labels,
    column `set`), as `fit_anchored.all_verdict_sets` gives them; else the first set only."""
    names = tuple(dict.fromkeys((*read_rule().features, *GATE_FEATURES)))
    sets = fa.VERDICT_SETS if all_sets else {"set": None}
    parts = [verdict_set(path, names) for path in sets.values()]
    vt = pd.concat([t.assign(set=name) for name, (t, _) in zip(sets, parts)], ignore_index=True)
    images = [im for _, ims in parts for im in ims]
    gen = H.feature_table()
    rows, gen_images = H.hard_negatives()
    assert (rows["id"].to_numpy() == gen["id"].to_numpy()).all()  # one generator, one row order
    anchors = {t: small(target_anchor(t, ANCHOR_RES)) for t in sorted(set(vt["target"]) | set(gen["target"]))}
    return Data(
        verdicts=vt,
        generated=gen,
        x=np.stack([small(im) for im in images]),
        x_anchor=np.stack([anchors[t] for t in vt["target"]]),
        g=np.stack([small(im) for im in gen_images]),
        g_anchor=np.stack([anchors[t] for t in gen["target"]]),
        anchors=anchors,
    )


def save_data(d: Data, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    d.verdicts.to_parquet(out / "verdicts.parquet")
    d.generated.to_parquet(out / "generated.parquet")
    targets = sorted(d.anchors)
    np.savez(
        out / "images.npz",
        x=d.x,
        x_anchor=d.x_anchor,
        g=d.g,
        g_anchor=d.g_anchor,
        anchor_targets=np.array(targets),
        anchors=np.stack([d.anchors[t] for t in targets]),
    )


def load_tables(out: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    if not (out / "verdicts.parquet").exists():
        raise SystemExit(f"{out}/verdicts.parquet not found: run `python tools/judge_cnn_probe.py data --out {out}`")
    return pd.read_parquet(out / "verdicts.parquet"), pd.read_parquet(out / "generated.parquet")


def load_data(out: Path) -> Data:
    vt, gen = load_tables(out)
    with np.load(out / "images.npz", allow_pickle=False) as z:
        anchors = {str(t): a for t, a in zip(z["anchor_targets"], z["anchors"])}
        return Data(vt, gen, z["x"], z["x_anchor"], z["g"], z["g_anchor"], anchors)


def fold_of_rows(vt: pd.DataFrame, gen: pd.DataFrame) -> np.ndarray:
    """`(n_verdicts + n_generated,)` the by-network fold of each row, as `crossfit.crossfit` deals them."""
    both = pd.concat([vt[["network", "group"]], gen[["network", "group"]]])
    fold_of = C.folds(both["network"], both["group"])
    return both["network"].map(fold_of).to_numpy(int)


# ---------------------------------------------------------------------------------------------
# the CNN


@dataclass(frozen=True)
class Settings:
    epochs: int = 40
    batch: int = 64
    lr: float = 3e-3  # AdamW, and the one-cycle schedule's peak
    weight_decay: float = 1e-4
    warmup: float = 0.15  # share of the steps rising to the peak rate
    generated_weight: float = 0.5  # loss weight of a generated negative (a verdict row: 1)
    cross_weight: float = 0.5  # loss weight of a cross-label pair
    cross_share: int = 4  # one cross-label pair per this many training Picbreeder images


class Net(nn.Module):
    def __init__(self, cin=9, ch=(16, 32, 64, 64), p_drop=0.2):
        super().__init__()
        layers, p = [], cin
        for i, c in enumerate(ch):
            layers += [nn.Conv2d(p, c, 3, padding=1, bias=False), nn.BatchNorm2d(c), nn.ReLU()]
            if i < len(ch) - 1:
                layers.append(nn.MaxPool2d(2))
            p = c
        self.body = nn.Sequential(*layers)
        self.head = nn.Sequential(nn.Dropout(p_drop), nn.Linear(2 * p, 1))

    def forward(self, x, a):  # x, a: (B, 3, RES, RES) -> (B,) logits
        h = self.body(torch.cat([x, a, x - a], 1))  # (B, 64, RES / 8, RES / 8)
        return self.head(torch.cat([h.mean((2, 3)), h.amax((2, 3))], 1))[:, 0]


def to_t(a: np.ndarray) -> torch.Tensor:  # (N, H, W, 3) -> (N, 3, H, W)
    return torch.from_numpy(np.ascontiguousarray(a)).permute(0, 3, 1, 2).float()


def augment(x, a, g):
    """Joint, verdict-preserving: dihedral transform, channel permutation, brightness/contrast jitter."""
    n = len(x)
    k = torch.randint(0, 8, (n,), generator=g)
    xo, ao = x.clone(), a.clone()
    for t in range(8):
        s = k == t
        if not s.any():
            continue
        xx, aa = torch.rot90(x[s], t % 4, (2, 3)), torch.rot90(a[s], t % 4, (2, 3))
        if t >= 4:
            xx, aa = xx.flip(3), aa.flip(3)
        xo[s], ao[s] = xx, aa
    perm = torch.argsort(torch.rand(n, 3, generator=g), 1)
    idx = perm[:, :, None, None].expand(-1, -1, x.shape[2], x.shape[3])
    xo, ao = xo.gather(1, idx), ao.gather(1, idx)
    sc = 1 + 0.15 * (2 * torch.rand(n, 1, 1, 1, generator=g) - 1)
    of = 0.08 * (2 * torch.rand(n, 1, 1, 1, generator=g) - 1)
    return (xo * sc + of).clamp(0, 1), (ao * sc + of).clamp(0, 1)


class Rows:
    """Verdict rows then generated rows, as one training set."""

    def __init__(self, d: Data):
        nv, ng = len(d.verdicts), len(d.generated)
        self.n_verdicts = nv
        self.x = np.concatenate([d.x, d.g])  # (N, RES, RES, 3)
        self.x_anchor = np.concatenate([d.x_anchor, d.g_anchor])
        self.y = np.r_[d.verdicts["pass1"].to_numpy().astype(float), np.zeros(ng)]
        self.label = np.r_[d.verdicts["label"].to_numpy(), d.generated["label"].to_numpy()].astype(str)
        self.target = np.r_[d.verdicts["target"].to_numpy(), d.generated["target"].to_numpy()].astype(str)
        self.is_gen = np.r_[np.zeros(nv, bool), np.ones(ng, bool)]
        self.label_of = dict(zip(self.target, self.label))  # target spec -> label
        self.anchors = d.anchors
        self.picbreeder = sorted(t for t in d.anchors if t.startswith("picbreeder:"))
        self.fold = fold_of_rows(d.verdicts, d.generated)


def same(a: str, b: str) -> bool:
    """Whether two Picbreeder target specs draw one label."""
    la, lb = a.split(":", 1)[1], b.split(":", 1)[1]
    return la == lb or any({la, lb} <= s for s in SAME_LABEL)


def train_predict(r: Rows, train, test, exclude_label=None, seed=0, s: Settings = Settings()):
    """Fit on rows `train` (bool over verdict + generated rows); `(P(kept) for rows test, model)`.
    Every draw comes from `seed` (the model's initialisation and dropout through torch's global
    generator, batches and augmentation through `g`, the cross-label pairs through `rng`)."""
    g = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    tr = np.flatnonzero(train)
    Xt, At = to_t(r.x[tr]), to_t(r.x_anchor[tr])
    yt = torch.tensor(r.y[tr], dtype=torch.float32)
    wt = torch.tensor(np.where(r.is_gen[tr], s.generated_weight, 1.0), dtype=torch.float32)
    ex = set() if exclude_label is None else {exclude_label}
    pb_ok = [t for t in r.picbreeder if t.split(":", 1)[1] not in ex]
    # identity positives: every allowed anchor paired with itself ("the target shows its label")
    ids = sorted(t for t in r.anchors if r.label_of[t] not in ex)
    Iid = to_t(np.stack([r.anchors[t] for t in ids]))
    # cross-label negatives: training images of a Picbreeder label paired with another label's anchor
    cross_src = [i for i, j in enumerate(tr) if r.target[j].startswith("picbreeder:")]
    n_cross = len(cross_src) // s.cross_share
    model = Net()
    opt = torch.optim.AdamW(model.parameters(), lr=s.lr, weight_decay=s.weight_decay)
    steps_per = int(np.ceil((len(tr) + len(ids) + n_cross) / s.batch))
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=s.lr, total_steps=s.epochs * steps_per, pct_start=s.warmup)
    for _ in range(s.epochs):
        ci = rng.choice(cross_src, n_cross, replace=False)
        ca = []
        for i in ci:
            opts = [t for t in pb_ok if not same(t, r.target[tr[i]])]
            ca.append(r.anchors[opts[rng.integers(len(opts))]])
        Xe = torch.cat([Xt, Iid, Xt[ci]])
        Ae = torch.cat([At, Iid, to_t(np.stack(ca))])
        ye = torch.cat([yt, torch.ones(len(ids)), torch.zeros(n_cross)])
        we = torch.cat([wt, torch.ones(len(ids)), s.cross_weight * torch.ones(n_cross)])
        order = torch.randperm(len(Xe), generator=g)
        model.train()
        for b in range(0, len(order), s.batch):
            o = order[b : b + s.batch]
            if len(o) < 2:  # batch norm needs two rows
                continue
            xb, ab = augment(Xe[o], Ae[o], g)
            bce = nn.functional.binary_cross_entropy_with_logits(model(xb, ab), ye[o], reduction="none")
            loss = (bce * we[o]).sum() / we[o].sum()
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
    model.eval()
    te = np.flatnonzero(test)
    with torch.no_grad():
        return torch.sigmoid(model(to_t(r.x[te]), to_t(r.x_anchor[te]))).numpy(), model


def train(a) -> None:
    out = Path(a.out)
    d = load_data(out)
    r = Rows(d)
    s = Settings(epochs=a.epochs)
    n = len(r.y)
    p_net, p_lab = np.full(n, np.nan), np.full(n, np.nan)
    cpu: dict = {}
    schemes = a.schemes.split(",")
    t_all = time.process_time()
    n_params = None
    if "network" in schemes:
        for f in range(C.K) if a.folds is None else a.folds:
            t = time.process_time()
            p, m = train_predict(r, r.fold != f, r.fold == f, seed=a.seed * 100 + f, s=s)
            p_net[r.fold == f] = p
            cpu[f"fold{f}"] = time.process_time() - t
            n_params = sum(q.numel() for q in m.parameters())
            print(f"fold {f}: {cpu[f'fold{f}']:.1f} CPU s", flush=True)
    if "label" in schemes:
        for i, lab in enumerate(sorted(set(d.verdicts["label"]))):
            if a.labels is not None and lab not in a.labels:
                continue
            t = time.process_time()
            p, m = train_predict(r, r.label != lab, r.label == lab, exclude_label=lab, seed=a.seed * 100 + 50 + i, s=s)
            p_lab[r.label == lab] = p
            cpu[f"label {lab}"] = time.process_time() - t
            n_params = sum(q.numel() for q in m.parameters())
            print(f"label {lab}: {cpu[f'label {lab}']:.1f} CPU s", flush=True)
    tag = a.tag or f"cnn_s{a.seed}"
    np.savez(out / f"preds_{tag}.npz", p_net=p_net, p_lab=p_lab)
    info = {
        "seed": a.seed,
        "epochs": a.epochs,
        "cpu": cpu,
        "n_params": n_params,
        "cpu_total": time.process_time() - t_all,
    }
    (out / f"cpu_{tag}.json").write_text(json.dumps(info, indent=1) + "\n")
    print(f"wrote {out / f'preds_{tag}.npz'}; total {info['cpu_total']:.1f} CPU s")
    if a.compare:
        with np.load(a.compare, allow_pickle=False) as z:
            for key, mine in (("p_net", p_net), ("p_lab", p_lab)):
                done = ~np.isnan(mine)
                if not done.any():
                    continue
                ref = z[key][done]
                same_bits = np.array_equal(mine[done].view(np.int64), ref.view(np.int64))
                print(
                    f"{key}: {done.sum()} rows against {a.compare}: bit-identical {same_bits}, "
                    f"max |difference| {np.abs(mine[done] - ref).max():.3g}"
                )


# ---------------------------------------------------------------------------------------------
# κ through crossfit.agreement


@contextlib.contextmanager
def crossfit_scores(by_network: np.ndarray, by_label: np.ndarray):
    """Inside the block, `crossfit.agreement` scores the given held-out predictions (`(n_verdicts,)`
    bool each) instead of fitting the gated rule: `crossfit.out_of_fold` and
    `crossfit.leave_label_out` are replaced by functions returning them, and restored on exit."""
    saved = C.out_of_fold, C.leave_label_out
    C.out_of_fold = lambda *args, **kw: by_network
    C.leave_label_out = lambda *args, **kw: by_label
    try:
        yield
    finally:
        C.out_of_fold, C.leave_label_out = saved


def xfit(a) -> None:
    """anchored-xfit held out, through `crossfit.agreement` on these rows, and its held-out
    rejection of the generated negatives (each judged by the rule of its by-network fold)."""
    out = Path(a.out)
    vt, gen = load_tables(out)
    t0 = time.process_time()
    agr = C.agreement(vt, gen, by=a.by)
    agr.to_parquet(out / "xfit_agreement.parquet")
    print(agr.round(3).to_string())
    cf = C.crossfit(vt, gen)
    fg = gen["network"].map(cf["folds"]).to_numpy(int)
    rejected = np.zeros(len(gen), bool)
    for f, rule in enumerate(cf["rules"]):
        sel = fg == f
        part = gen[sel]
        rejected[sel] = ~rule.predict({c: part[c].to_numpy() for c in rule.needs}, part["label"].to_numpy())
    np.savez(out / "xfit.npz", generated_rejected=rejected)
    print(f"generated negatives rejected held out (by-network folds): {rejected.sum()}/{len(rejected)}")
    print(f"{time.process_time() - t0:.1f} CPU s")


def read_model(spec: str, n_verdicts: int) -> tuple[str, np.ndarray, np.ndarray]:
    """`NAME=PATH[+PATH…]` (or `PATH[+PATH…]`, named by the paths): the mean of the files'
    `p_net` and `p_lab`."""
    name, _, paths = spec.rpartition("=")
    paths = paths.split("+")
    name = name or "+".join(Path(p).stem for p in paths)
    zs = []
    for p in paths:
        with np.load(p, allow_pickle=False) as z:
            zs.append((z["p_net"], z["p_lab"]))
    p_net, p_lab = np.mean([z[0] for z in zs], 0), np.mean([z[1] for z in zs], 0)
    for key, v in (("p_net", p_net), ("p_lab", p_lab)):
        if np.isnan(v[:n_verdicts]).any():
            raise SystemExit(
                f"{spec}: {key} has no prediction for {np.isnan(v[:n_verdicts]).sum()} verdict rows "
                "(not every fold or label was trained): run `train` without --folds / --labels"
            )
    return name, p_net, p_lab


def cell(row) -> str:
    if np.isnan(row["kappa"]):
        return "n/a (one class)"
    return f"{row['kappa']:.2f} [{row['kappa_lo']:.2f}, {row['kappa_hi']:.2f}]"


def report(a) -> None:
    """κ tables of each model through `crossfit.agreement`, beside anchored-xfit's when `xfit` ran,
    and the held-out rejection of the generated negatives."""
    out = Path(a.out)
    vt, gen = load_tables(out)
    nv = len(vt)
    y = vt["pass1"].to_numpy().astype(bool)
    tables, rejected = {}, {}
    if (out / "xfit_agreement.parquet").exists():
        tables["xfit"] = pd.read_parquet(out / "xfit_agreement.parquet")
        with np.load(out / "xfit.npz", allow_pickle=False) as z:
            rejected["xfit"] = z["generated_rejected"]
    for spec in a.model:
        name, p_net, p_lab = read_model(spec, nv)
        with crossfit_scores(p_net[:nv] >= a.threshold, p_lab[:nv] >= a.threshold):
            agr = C.agreement(vt, gen, by=a.by)
        tables[name] = agr
        agr.to_parquet(out / f"agreement_{name.replace(' ', '_')}.parquet")
        print(f"\n{name}\n{agr.round(3).to_string()}")
        print(f"AUC by network {roc_auc(p_net[:nv], y):.3f}, by label {roc_auc(p_lab[:nv], y):.3f}")
        g = p_net[nv:]
        if np.isnan(g).any():
            print("generated negatives: not every by-network fold was trained")
        else:
            rejected[name] = g < a.threshold
        held = ~np.isnan(p_lab[nv:])
        print(
            f"generated negatives of the held-out labels rejected (by label, {held.sum()} rows): "
            f"{(p_lab[nv:][held] < a.threshold).sum()}/{held.sum()}"
        )
    print("\ngenerated negatives rejected held out (by-network folds):")
    for name, rej in rejected.items():
        kept = gen["id"][~rej].tolist()
        print(f"  {name}: {rej.sum()}/{len(rej)}" + (f", kept: {', '.join(kept)}" if kept else ""))
    any_table = next(iter(tables.values()))
    md = pd.DataFrame(
        {name: [cell(row) for _, row in t.iterrows()] for name, t in tables.items()}, index=any_table.index
    )
    md.insert(0, "n", any_table["n"])
    md = md.reset_index()
    text = md.to_markdown(index=False)
    (out / "kappa_table.md").write_text(text + "\n")
    print("\n" + text)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="step", required=True)
    steps = {}
    for step, what in (
        ("data", "build the verdict table, the generated negatives and the 32×32 arrays"),
        ("xfit", "anchored-xfit's held-out κ through crossfit.agreement on the same rows"),
        ("train", "train the CNN per fold / per label for one seed and store its held-out predictions"),
        ("report", "κ tables through crossfit.agreement and the rejection of the generated negatives"),
    ):
        steps[step] = sub.add_parser(step, help=what)
        steps[step].add_argument("--out", default=DEFAULT_OUT, help=f"the probe's folder (default {DEFAULT_OUT})")
    steps["data"].add_argument(
        "--all-sets", action="store_true", help="the four verdict sets (20 labels), not the first only"
    )
    t = steps["train"]
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--epochs", type=int, default=Settings.epochs)
    t.add_argument("--schemes", default="network,label", help="network, label or both (comma-separated)")
    t.add_argument("--folds", type=int, nargs="+", help="by network: only these folds (default all)")
    t.add_argument("--labels", nargs="+", help="by label: only these labels (default all)")
    t.add_argument("--tag", help="names the output files preds_TAG.npz, cpu_TAG.json (default cnn_sSEED)")
    t.add_argument("--compare", help="a stored prediction file to compare the trained rows with")
    for step in ("xfit", "report"):
        steps[step].add_argument(
            "--by", default="group", help="the column κ is reported by: group, or set (--all-sets)"
        )
    rp = steps["report"]
    rp.add_argument("--model", action="append", default=[], help="NAME=PATH[+PATH…]: seeds' predictions, averaged")
    rp.add_argument("--threshold", type=float, default=THRESHOLD)
    a = ap.parse_args(argv)
    torch.set_num_threads(1)
    if a.step == "data":
        t0 = time.process_time()
        d = build_data(all_sets=a.all_sets)
        save_data(d, Path(a.out))
        print(f"{len(d.verdicts)} verdict rows, {len(d.generated)} generated negatives, {len(d.anchors)} anchors")
        print(f"wrote {a.out}; {time.process_time() - t0:.1f} CPU s")
    elif a.step == "xfit":
        xfit(a)
    elif a.step == "train":
        train(a)
    else:
        if not a.model and not (Path(a.out) / "xfit_agreement.parquet").exists():
            raise SystemExit("nothing to report: give --model NAME=PATH, or run the xfit step first")
        report(a)


if __name__ == "__main__":
    main()
