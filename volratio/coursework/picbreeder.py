"""Checks for the exercises of "Picbreeder networks and their SGD twins" (book/picbreeder.md):
the size of a layerized genome and a dense SGD twin trained on its image (`volratio.data.picbreeder`,
`volratio.train`)."""

from __future__ import annotations

import torch

from ..data import picbreeder
from ..data.targets import get_target
from .check import (
    Check,
    checker,
    network,
    number,
)

__all__ = ["check_layerized_size", "check_twin"]


@checker
def check_layerized_size(name: str, depth, width, nonzero) -> Check:
    """Depth (hidden layers), width (units per hidden layer) and non-zero weights of the layerized
    Picbreeder network `name` (`volratio.data.picbreeder.layerize`)."""
    lay = picbreeder.layerize(name)
    net = lay.net
    g = picbreeder.genome(name)
    ref = {"depth": net.depth, "width": net.width, "nonzero": net.nonzero()[0]}
    got = {
        "depth": int(number(depth, "depth")),
        "width": int(number(width, "width")),
        "nonzero": int(number(nonzero, "nonzero")),
    }
    problems = []
    if got["depth"] != ref["depth"]:
        if got["depth"] == g.depth():
            problems.append(
                f"depth {got['depth']} is the genome's longest path; the layered network has {ref['depth']} hidden "
                "layers — a greyscale genome gets constant hue and saturation units in a layer of their own above 'ink'"
                if ref["depth"] == g.depth() + 1
                else f"depth {got['depth']} is the longest path, but the layered network has {ref['depth']}"
            )
        elif got["depth"] == ref["depth"] + 1:
            problems.append(f"depth {got['depth']} counts the output layer; count hidden layers only ({ref['depth']})")
        else:
            problems.append(f"depth {got['depth']} ≠ {ref['depth']} hidden layers (net.depth)")
    if got["width"] != ref["width"]:
        hidden = sum(1 for n in g.nodes.values() if n.kind == "hidden")
        hint = (
            " — that is the number of hidden genome nodes; the width is the size of one layer, cache units included"
            if got["width"] == hidden
            else " — the width counts every unit of a layer, the cache units included (net.arch)"
        )
        problems.append(f"width {got['width']} ≠ {ref['width']}{hint}")
    if got["nonzero"] != ref["nonzero"]:
        if got["nonzero"] == lay.n_genome_weights:
            problems.append(
                f"{got['nonzero']} non-zero weights are the genome's links only; the layered network also has "
                f"{lay.n_cache_weights} weights of value 1 that carry values up (cache units) and select the outputs"
            )
        elif got["nonzero"] == net.n_params():
            problems.append(
                f"{got['nonzero']} counts every weight, masked ones included; count the non-zero effective weights"
            )
        else:
            problems.append(f"non-zero weights {got['nonzero']} ≠ {ref['nonzero']} (net.nonzero())")
    if problems:
        return Check("check_layerized_size", False, "; ".join(problems), ref, got)
    return Check(
        "check_layerized_size",
        True,
        f"{name}: {ref['depth']} hidden layers × {ref['width']} units, {ref['nonzero']} non-zero weights "
        f"({lay.n_genome_weights} genome links + {lay.n_cache_weights} carrying weights)",
        ref,
        got,
    )


@checker
def check_twin(net, name: str, res: int = 16) -> Check:
    """A dense SGD twin of Picbreeder `name`: the layerized network's architecture and head, every
    weight unmasked, and an MSE at `res` (against `get_target('picbreeder:NAME').image(res)`) below
    that of the best constant image (the target's mean colour)."""
    net = network(net)
    pb = picbreeder.layerized(name)
    if str(net.arch) != str(pb.arch):
        return Check(
            "check_twin",
            False,
            f"architecture {net.arch} differs from the layerized {name} ({pb.arch}); build CoordMLP(pb.arch, head='hsv', …)",
            str(pb.arch),
            str(net.arch),
        )
    if net.head != pb.head:
        return Check(
            "check_twin",
            False,
            f"head {net.head!r} ≠ {pb.head!r}: the twin draws through the same head",
            pb.head,
            net.head,
        )
    total = net.n_params() // net.population
    masked = int(sum(int((m[0] == 0).sum()) for m in net.masks))
    if masked:
        return Check(
            "check_twin",
            False,
            f"{masked} of {total} weights are masked: an SGD twin is dense (did you copy the Picbreeder masks?)",
        )
    target = get_target(f"picbreeder:{name}").image(res)  # (res, res, 3)
    with torch.no_grad():
        img = net.render(res)[0].to(target.dtype)
    mse = float(((img - target) ** 2).mean())
    base = float(((target - target.mean(dim=(0, 1))) ** 2).mean())
    if not mse < base:
        return Check(
            "check_twin",
            False,
            f"MSE {mse:.4f} at {res}×{res} is not below {base:.4f}, the error of a flat image of the mean colour — "
            "train longer, or check the target is at the same resolution and in [0, 1]",
            base,
            mse,
        )
    return Check(
        "check_twin",
        True,
        f"dense twin of {name}: {net.nonzero()[0]} non-zero weights vs Picbreeder's {pb.nonzero()[0]}; "
        f"MSE {mse:.4f} (flat mean-colour image: {base:.4f})",
        base,
        mse,
    )
