"""Recognisable but degraded drawings: the verdicts a structure gate must pass.

A structure gate (`volratio.judges.anchored_rule.LogisticRule.gate`) rejects images whose edges
do not line up with the target's, or that have much less detail than it: flat pages, coarse
mosaics, heavy blurs (`volratio.calibration.hard_negatives`). Fitted on those negatives and on the
first verdict set alone, it also rejected drawings that plainly show the label but are blurrier,
shifted or recoloured — the depth chapter's depth-2 skulls above all. This set holds such drawings,
judged by inspection with the anchored set's protocol (`volratio.calibration.anchored_set`:
numbered, shuffled mosaics per label with the target on top, a seeded 20% judged again), so that a
gate can be fitted to pass them and checked to pass them held out (`DEGRADED_CSV`). Two kinds of
rows (`GROUPS`):

- **edits** (`edited_images`): each of the sixteen Picbreeder labels' target images under the mild
  edits of `EDITS` — a blur of 1 or 2 pixels, a shift by 2 or 4 pixels, grey, its colour channels
  rotated, dimmed, faded towards its mean. Whether an edit still shows the label is the inspection's
  verdict, not the edit's (the anchored criteria hold: a grey apple is not an apple);
- **networks** (`stored_networks`): the unperturbed images of stored reference networks that draw
  coarsely — every member of `depth_picbreeder`'s depth-2, 3 and 4 runs (dense, the blurriest
  drawings the store holds) and members 1 and 2 of every `depth_sparse_picbreeder` run (pruned by SP
  to their fit point: the sparsest networks that still fit; member 0 of each is in the held-out
  sparse-regime set already).

Every image is its own network for cross-fitting (`volratio.calibration.crossfit`), except that a
stored network's name is its run and member. `rows()` gives the rows with their images;
`load()` reads the stored verdicts and checks each image regenerates: to its hash (`sha256` of the
uint8 image), or, rendered on another CPU kind, where float rounding may move a few pixels to the
neighbouring uint8 level, to its mean uint8 level (`mean`) within `MEAN_TOLERANCE`; `feature_table()`
adds the features every anchored rule reads.

Chapter: "EMC2-Bench" (book/emc2.md), section "The judge, validated".
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import torch

from ..data.picbreeder import ALL_NAMES
from ..data.targets import get_target
from ..errors import DataNotFoundError, VolratioError
from ..judges.anchored_rule import FIT_RES, features
from ..runs.reference import DEFAULT_ROOT
from ..runs.store import Store
from ..util.images import to_uint8
from . import anchored_set as A
from . import hard_negatives as H

DEGRADED_CSV = A.SET_DIR / "degraded.csv"  # the verdicts (data/judge_reference/anchored/degraded.csv)
GROUPS = ("degraded-edit", "degraded-network")
# the edits of a target image: name -> (kind, amount)
EDITS = {
    "blur-1": ("blur", 1.0),  # Gaussian blur, σ in pixels (the generated negative's is 8 at 64×64)
    "blur-2": ("blur", 2.0),
    "shift-2": ("shift", 2),  # moved right and down by this many pixels, the border repeated
    "shift-4": ("shift", 4),
    "grey": ("grey", 0.0),  # luminance in every channel
    "rotated": ("rotate", 0.0),  # colour channels rotated (R, G, B) -> (G, B, R)
    "dimmed": ("dim", 0.7),  # every value × 0.7
    "faded": ("fade", 0.5),  # halfway towards the image's mean colour
}
NETWORK_CHUNKS = {  # chunk -> (depths, members) whose unperturbed images join the set
    "depth_picbreeder": ((2, 3, 4), None),  # every member
    "depth_sparse_picbreeder": (None, (1, 2)),  # every depth
}
MAIN_LABELS = ("skull", "butterfly", "apple")


def edit(image: torch.Tensor, name: str) -> torch.Tensor:
    """`image` `(H, W, 3)` in [0, 1] under the edit `name` of `EDITS`."""
    if name not in EDITS:
        raise VolratioError(f"edit {name!r}: choose one of {', '.join(EDITS)}")
    kind, a = EDITS[name]
    x = image.double()
    if kind == "blur":
        return H.blurred(x, a)
    if kind == "shift":
        k = int(a)
        return torch.nn.functional.pad(x.permute(2, 0, 1)[None], (k, 0, k, 0), mode="replicate")[
            0, :, :-k, :-k
        ].permute(1, 2, 0)
    if kind == "grey":
        return (x @ x.new_tensor([0.299, 0.587, 0.114]))[..., None].expand(-1, -1, 3).clone()
    if kind == "rotate":
        return x[..., [1, 2, 0]].clone()
    if kind == "dim":
        return x * a
    return x + a * (x.reshape(-1, 3).mean(0) - x)  # fade


def _row(network: str, group: str, target: str, kind: str, member: int = 0) -> dict:
    return {"network": network, "group": group, "member": member, "target": target, "label": target.split(":")[-1],
            "kind": kind, "kernel": -1, "row": -1, "col": -1, "delta": 0.0, "res": FIT_RES}  # fmt: skip


def edited_images(labels=ALL_NAMES, res: int = FIT_RES) -> tuple[list[dict], list[torch.Tensor]]:
    """Rows and images of every edit (`EDITS`) of every label's target image (needs the Picbreeder data)."""
    rows, images = [], []
    for lab in labels:
        t = get_target(f"picbreeder:{lab}").image(res).double()
        for name in EDITS:
            rows.append(_row(f"edit:{lab}/{name}", GROUPS[0], f"picbreeder:{lab}", name))
            images.append(edit(t, name).clamp(0, 1))
    return rows, images


def stored_networks(root=None, res: int = FIT_RES) -> tuple[list[dict], list[torch.Tensor]]:
    """Rows and unperturbed images of the stored networks of `NETWORK_CHUNKS` (under `root`,
    default the reference store), Picbreeder targets only, in the store's key order."""
    rows, images = [], []
    for chunk, (depths, members) in NETWORK_CHUNKS.items():
        store = Store(Path(root or DEFAULT_ROOT) / chunk)
        recs = [r for r in store.records() if r["status"] == "done" and "net" in r.get("artifacts", {})]
        if not recs:
            raise DataNotFoundError(f"no stored networks in {store.root}: run the reference chunk {chunk}")
        for r in sorted(recs, key=lambda r: r["key"]):
            c = r["config"]
            if not c.get("target", "").startswith("picbreeder:") or (depths and c["depth"] not in depths):
                continue
            imgs = store.artifact(r["key"], "net").render(res).double()
            for m in members or range(len(imgs)):
                rows.append(_row(f"{chunk}:{r['key'][:12]}/m{m}", GROUPS[1], c["target"], f"{chunk} d{c['depth']}", m))
                images.append(imgs[m])
    return rows, images


# how far an image's mean uint8 level may move when it is rendered on another CPU kind: float
# rounding moves a pixel by at most one level, and only a few do (0.05 is 600 of a 64×64 image's
# 12,288 channel values moved by one level; another image differs by whole levels)
MEAN_TOLERANCE = 0.05


def rows(root=None) -> tuple[pd.DataFrame, list[torch.Tensor]]:
    """`(rows, images)`: every image of the set, edits then networks, with `id`, `sha256` and `mean`
    (the image's mean uint8 level, 4 decimals)."""
    r1, i1 = edited_images()
    r2, i2 = stored_networks(root)
    df = pd.DataFrame(r1 + r2)
    df.insert(0, "id", np.arange(len(df)))
    df["sha256"] = A.image_sha(i1 + i2)
    df["mean"] = [round(float(to_uint8(im).mean()), 4) for im in i1 + i2]
    return df, i1 + i2


def regenerated(stored: pd.DataFrame, fresh: pd.DataFrame) -> np.ndarray:
    """Per stored row, whether its regenerated image is the one judged: the same hash, or (rendered
    on another CPU kind) the same mean uint8 level within `MEAN_TOLERANCE`."""
    same = fresh["sha256"].to_numpy() == stored["sha256"].to_numpy()
    close = np.abs(fresh["mean"].to_numpy() - stored["mean"].to_numpy()) <= MEAN_TOLERANCE
    return same | close


def load(path=None, root=None, check: bool = True) -> tuple[pd.DataFrame, list[torch.Tensor]]:
    """The stored verdicts (`DEGRADED_CSV`) and their images, regenerated (the Picbreeder data and
    the reference store) and, with `check`, compared with the stored ones (`regenerated`): a
    mismatch is an error, never a silently different set."""
    p = Path(path or DEGRADED_CSV)
    if not p.exists():
        raise DataNotFoundError(f"degraded verdicts not found at {p}; they ship in data/judge_reference/anchored/")
    stored = pd.read_csv(p)
    fresh, images = rows(root)
    if check and len(fresh) != len(stored):
        raise VolratioError(
            f"{p}: {len(stored)} rows, but {len(fresh)} images regenerate; the store's networks changed"
        )
    if check and not (ok := regenerated(stored, fresh)).all():
        bad = stored.loc[~ok, "network"].tolist()
        raise VolratioError(
            f"{p}: {len(bad)} images do not regenerate from their targets and networks (hash and mean level "
            f"differ): {', '.join(bad[:3])}{' …' if len(bad) > 3 else ''}"
        )
    return stored, images


def feature_table(path=None, root=None, names=H.TABLE_FEATURES, shift: int = 0) -> pd.DataFrame:
    """The stored verdicts with the features `names` of each image against its label's target (as
    `volratio.calibration.fit_anchored.verdict_table`; aligned within `shift` pixels first), judged
    rows only."""
    df, images = load(path, root)
    anchors = {t: get_target(t).image(FIT_RES).double() for t in set(df["target"])}
    f = features(torch.stack(images), torch.stack([anchors[t] for t in df["target"]]), names, shift)
    df = df.assign(**f)
    return df[df["pass1"].notna()].reset_index(drop=True)
