"""Picbreeder targets: genome XML → NEAT graph → layered network; where the data lives.

Sixteen Picbreeder images, in two datasets:

- `NAMES` — skull, butterfly, apple: the three genomes and the FER paper's networks, from the
  public repository `akarshkumar0101/fer` (Kumar, Clune, Lehman, Stanley 2025) at a pinned commit
  (`volratio.data.fer_data`). Their network is the layerized genome (`layerized`).
- `EXTRA_NAMES` — the thirteen more of the public fork `jagilley/fer` (`volratio.data.fer_fork`):
  images and layered networks, **no genome and no SGD twin**, so their network is the fork's
  layered network (`fer_network(name, "layered")`).

`network(name)` is the network of any of the sixteen. Neither dataset is part of this repository:
`data_dir()` and `extra_dir()` find each through `$VOLRATIO_DATA`, then `../shared/data/picbreeder`
relative to the repository root, then the user cache that `volratio data fetch [--extra]` (or the
first use) fills by downloading the original files, checking their pinned SHA-256 and converting
the FER networks.

Genomes are parsed with `defusedxml`, the converted `.npz` networks read with `allow_pickle=False`
(the only unpickling in the library is `volratio.data.jaxpickle`, on checksum-verified downloads).

Chapter: "Picbreeder networks and their SGD twins".
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

import numpy as np
import torch
from PIL import Image

from ..errors import DataNotFoundError
from ..nets import CoordMLP
from . import fer_fork
from .fer_data import (  # the pinned source, defined with its download
    COMMIT,
    INSTALLED_FILES,
    NAMES,
    REPO,
    cache_dir,
    complete,
    ensure,
    missing,
)
from .fer_fork import NAMES as EXTRA_NAMES  # the fork's thirteen (no genomes)
from .genome import parse_genome
from .graph import Graph, Layered

ENV_VAR = "VOLRATIO_DATA"
ALL_NAMES = NAMES + EXTRA_NAMES  # the sixteen Picbreeder targets: the genomes' three first
# the non-zero weights of the genomes' layerized networks (`network(name).nonzero()`; a test checks
# them against the files): the sparse regime prunes to them (the reference plan's sparse chunks)
NONZEROS = {"skull": 147, "butterfly": 281, "apple": 918}

_FIX_DATA = (
    "set VOLRATIO_DATA to a folder holding skull/, butterfly/ and apple/, or run "
    "`volratio data fetch` to download the files from github.com/akarshkumar0101/fer"
)
_FIX_EXTRA = (
    "set VOLRATIO_DATA to a folder holding the thirteen extra targets, or run "
    "`volratio data fetch --extra` to download them from github.com/jagilley/fer"
)


# ---------------------------------------------------------------------------------------------
# Where the data is


def _repo_root() -> Path:
    return Path(__file__).resolve().parents[2]


def candidate_dirs() -> list[tuple[str, Path]]:
    out = []
    if os.environ.get(ENV_VAR):
        out.append((f"${ENV_VAR}", Path(os.environ[ENV_VAR]).expanduser()))
    out.append(("../shared/data/picbreeder", _repo_root().parent / "shared" / "data" / "picbreeder"))
    out.append(("cwd ../shared/data/picbreeder", Path.cwd().parent / "shared" / "data" / "picbreeder"))
    out.append(("download cache", cache_dir()))
    return out


def data_dir(required: bool = True) -> Path | None:
    """The first candidate folder that holds the complete data (genome, image and both FER networks
    of all three targets). When none does: with `required=False` return None; otherwise download
    it into the cache on first use (`volratio.data.fer_data.ensure`: one line on stderr, or the one-line
    fix under `VOLRATIO_OFFLINE=1`). An incomplete folder (e.g. a copy without the FER networks)
    is passed over, so fetching always ends the search."""
    for _, d in candidate_dirs():
        if complete(d):
            return d
    if required:
        return ensure(looked=", ".join(str(d) for _, d in candidate_dirs()))
    return None


def available() -> bool:
    return data_dir(required=False) is not None


def extra_dir(required: bool = True) -> Path | None:
    """The first candidate folder (the same as `data_dir`'s) that holds the complete data of the
    thirteen extra targets (`EXTRA_NAMES`: image and layered network each). When none does: with
    `required=False` return None; otherwise download it from the fork into the cache on first use
    (`volratio.data.fer_fork.ensure`), or raise the one-line fix under `VOLRATIO_OFFLINE=1`."""
    for _, d in candidate_dirs():
        if fer_fork.complete(d):
            return d
    if required:
        return fer_fork.ensure(looked=", ".join(str(d) for _, d in candidate_dirs()))
    return None


def extra_available() -> bool:
    return extra_dir(required=False) is not None


def has_genome(name: str) -> bool:
    """Whether Picbreeder target `name` comes with its genome (the original three) or only with
    the fork's layered network (the thirteen extra)."""
    _check_name(name)
    return name in NAMES


def _check_name(name: str) -> None:
    if name not in ALL_NAMES:
        raise DataNotFoundError(f"unknown Picbreeder target {name!r}; known: {', '.join(ALL_NAMES)}")


def _no_genome(name: str, what: str) -> DataNotFoundError:
    return DataNotFoundError(
        f"Picbreeder target {name!r} has no {what}: the fork jagilley/fer ships only its image and layered "
        f"network; use its layered network (picbreeder.network({name!r}), spec picbreeder:{name} or fer-layered:{name})"
    )


def _file(name: str, fname: str) -> Path:
    _check_name(name)
    if name in NAMES:
        p = data_dir() / name / fname
        fix = _FIX_DATA
    else:
        if fname not in fer_fork.INSTALLED_FILES:
            raise _no_genome(name, {"genome.xml": "genome", "fer_sgd.npz": "SGD twin"}.get(fname, fname))
        p = extra_dir() / name / fname
        fix = _FIX_EXTRA
    if not p.is_file():
        raise DataNotFoundError(f"{p} is missing; {fix}")
    return p


# ---------------------------------------------------------------------------------------------
# Genomes


@functools.cache
def genome(name: str) -> Graph:
    """The parsed genome of a Picbreeder target (`skull`, `butterfly`, `apple`; the thirteen extra
    targets have none and raise `DataNotFoundError` saying to use their layered network)."""
    return parse_genome(_file(name, "genome.xml"), name=name)


def layerize(name: str, dtype=torch.float32) -> Layered:
    """The genome of `name` layerized (see `volratio.data.graph.Graph.layerize`), with its placement."""
    return genome(name).layerize(dtype=dtype)


def layerized(name: str, dtype=torch.float32) -> CoordMLP:
    """The layerized Picbreeder network of `name` as a `CoordMLP` (HSV head, K = 1)."""
    net = layerize(name, dtype).net
    net.provenance = {"made_by": "picbreeder.layerized", "target": name, "source": f"{REPO}@{COMMIT}"}
    return net


def network(name: str, dtype=torch.float32) -> CoordMLP:
    """The network of any of the sixteen Picbreeder targets (spec `picbreeder:NAME`): the
    layerized genome for skull, butterfly and apple (`layerized`), the fork's layered network for
    the thirteen extra targets, which have no genome (`fer_network(name, "layered")`)."""
    if has_genome(name):
        return layerized(name, dtype)
    return fer_network(name, "layered", dtype)


def target_image(name: str) -> torch.Tensor:
    """`target.png` of `name` as `(256, 256, 3)` float in [0, 1] (the FER repository's rendering,
    or the fork's `img.png` for the thirteen extra targets)."""
    with Image.open(_file(name, "target.png")) as im:
        arr = np.asarray(im.convert("RGB"), dtype=np.float32) / 255.0
    return torch.from_numpy(arr)


def target_png(name: str, res: int) -> torch.Tensor:
    """`target.png` of `name` at `res`×`res` (antialiased bilinear), `(res, res, 3)` in [0, 1]: the
    image the Picbreeder networks' dense twins are trained on and, for them and the Picbreeder
    network alike, judged against (`volratio.data.anchors`)."""
    img = target_image(name).permute(2, 0, 1)[None]
    small = torch.nn.functional.interpolate(img, size=res, mode="bilinear", antialias=True)[0]
    return small.permute(1, 2, 0).clamp(0, 1)


# ---------------------------------------------------------------------------------------------
# The FER paper's networks


def fer_arch(name: str) -> str:
    """The architecture string of FER's layered network for `name` (e.g. skull:
    `"12;cache:15,gaussian:4,identity:2,sin:1"`): the Picbreeder network's own depth and units."""
    path = _file(name, "fer_layered.npz")
    try:
        with np.load(path, allow_pickle=False) as z:
            return str(z["arch"])
    except (KeyError, ValueError, OSError) as e:
        raise DataNotFoundError(f"{path}: not a readable FER network ({e}); re-fetch with `volratio data fetch`") from e


def fer_network(name: str, kind: str = "sgd", dtype=torch.float32) -> CoordMLP:
    """The FER repository's network for `name`: `kind="layered"` (its own layerization of the
    genome) or `"sgd"` (the dense network it trained with Adam to reproduce `target.png`). For the
    thirteen extra targets only `"layered"` exists: the fork's layered network (no genome behind it
    here, no SGD twin)."""
    if kind not in ("sgd", "layered"):
        raise DataNotFoundError(f"unknown FER network kind {kind!r}; use 'sgd' or 'layered'")
    _check_name(name)
    source = f"{REPO}@{COMMIT}" if name in NAMES else f"{fer_fork.REPO}@{fer_fork.COMMIT}"
    path = _file(name, f"fer_{kind}.npz")
    try:
        with np.load(path, allow_pickle=False) as z:
            arch = str(z["arch"])
            n = int(z["n_layers"])
            kernels = [np.asarray(z[f"W{i}"], dtype=np.float64) for i in range(n)]
            losses = np.asarray(z["losses"]) if "losses" in z.files else None
    except (KeyError, ValueError, OSError) as e:
        raise DataNotFoundError(f"{path}: not a readable FER network ({e}); re-fetch with `volratio data fetch`") from e
    masks = None if kind == "sgd" else [k != 0 for k in kernels]
    if kind == "sgd":
        masks = [np.ones_like(k) for k in kernels]  # dense: every weight is a parameter
    net = CoordMLP.from_kernels(
        arch,
        kernels,
        head="hsv",
        masks=masks,
        dtype=dtype,
        provenance={"made_by": f"fer_{kind}", "target": name, "source": source},
    )
    if name not in NAMES:
        net.provenance["genome"] = "none published: this is the fork's layered network"
    if losses is not None:
        net.provenance["final_loss"] = float(losses[-1])
    return net


def fer_losses(name: str) -> np.ndarray:
    """The per-step MSE of the FER repository's SGD run on `name` (100,000 steps)."""
    with np.load(_file(name, "fer_sgd.npz"), allow_pickle=False) as z:
        return np.asarray(z["losses"], dtype=np.float64)


# ---------------------------------------------------------------------------------------------
# Where the data is, in words


def _where_lines(missing, n_files: int) -> list[str]:
    lines = []
    for label, d in candidate_dirs():
        lack = missing(d)
        if not lack:
            state = "✓"
        elif len(lack) < n_files:
            state = f"· incomplete (lacks {', '.join(lack[:3])}{', …' if len(lack) > 3 else ''})"
        else:
            state = "·"
        lines.append(f"  {state} {label}: {d}")
    return lines


def where() -> str:
    """A human-readable answer to "where is the data, or how do I get it?", for both datasets:
    the original three (first line: where they are, or how to get them) and the fork's thirteen."""
    found = data_dir(required=False)
    head = f"Picbreeder data: {found}" if found else f"Picbreeder data: not found. {_FIX_DATA}"
    lines = [head] + _where_lines(missing, len(NAMES) * len(INSTALLED_FILES))
    extra = extra_dir(required=False)
    lines.append(
        f"Extra Picbreeder targets ({len(EXTRA_NAMES)}, layered networks of {fer_fork.REPO}): "
        + (str(extra) if extra else f"not found. {_FIX_EXTRA}")
    )
    lines += _where_lines(fer_fork.missing, len(EXTRA_NAMES) * len(fer_fork.INSTALLED_FILES))
    return "\n".join(lines)
