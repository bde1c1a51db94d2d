"""CPPN graphs (NEAT-style DAGs) and their layerization into masked coordinate MLPs.

A `Graph` holds nodes (inputs labelled `y, x, d, bias`; hidden nodes; outputs labelled `hue`,
`saturation`, `brightness` or `ink`) and weighted links. It can be evaluated directly on the pixel
grid (the reference the layered form is tested against) and *layerized*: each node is placed at the
layer of its longest path from the inputs, and a value needed more than one layer later is carried
up by `cache` (identity) units. The result is a `CoordMLP` with the same image, the minimal depth,
and only the graph's links (plus the cache copies of weight 1) non-zero.

Picbreeder genomes (`volratio.data.picbreeder`) and planted compositional targets (`volratio.data.targets`)
are both graphs of this kind. Chapters: "Picbreeder networks and their SGD twins", "Compositional sparsity".
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np
import torch

from ..errors import GenomeError
from ..nets import ACTIVATIONS, CoordMLP, coords, head_to_rgb
from ..util import budget

# Column of the coordinate vector (volratio.nets.coords) that feeds each genome input. The FER
# README names that vector (y, x, d, bias) after its meshgrid variables; its first entry varies
# along image columns, i.e. it is the horizontal position, which genomes call `x`.
INPUT_INDEX = {"x": 0, "y": 1, "d": 2, "bias": 3}
INPUT_LABELS = tuple(INPUT_INDEX)
HSV_LABELS = ("hue", "saturation", "brightness")


@dataclass(frozen=True)
class Node:
    key: str
    kind: str  # "in" | "hidden" | "out"
    activation: str  # a key of volratio.nets.ACTIVATIONS
    label: str | None = None


@dataclass
class Graph:
    """A DAG of activation nodes with weighted links `(source, target, weight)`."""

    nodes: dict[str, Node]
    links: list[tuple[str, str, float]]
    name: str = "graph"
    meta: dict = field(default_factory=dict)

    # -- structure -----------------------------------------------------------------------------

    def __post_init__(self):
        self.validate()

    def inputs(self) -> dict[str, str]:
        return {n.label: k for k, n in self.nodes.items() if n.kind == "in"}

    def outputs(self) -> dict[str, str]:
        return {n.label: k for k, n in self.nodes.items() if n.kind == "out"}

    @property
    def head(self) -> str:
        """`hsv` for colour outputs, `grey` for a single `ink`/`brightness`/`value` output."""
        return "hsv" if "hue" in self.outputs() else "grey"

    def validate(self) -> None:
        """Raise `GenomeError` for dangling links, unknown activations, missing outputs or cycles."""
        for k, n in self.nodes.items():
            if n.activation not in ACTIVATIONS:
                raise GenomeError(
                    f"{self.name}: node {k} has unknown activation {n.activation!r}; "
                    f"known: {', '.join(sorted(ACTIVATIONS))}"
                )
            if n.kind == "in" and n.label not in INPUT_LABELS:
                raise GenomeError(f"{self.name}: input node {k} has label {n.label!r}; expected one of {INPUT_LABELS}")
        for i, (s, t, w) in enumerate(self.links):
            for end, key in (("source", s), ("target", t)):
                if key not in self.nodes:
                    raise GenomeError(f"{self.name}: link {i} ({s} → {t}) has {end} {key}, which is not a node")
            if self.nodes[t].kind == "in":
                raise GenomeError(f"{self.name}: link {i} ({s} → {t}) points into input node {t}")
            if not (w == w) or w in (float("inf"), float("-inf")):
                raise GenomeError(f"{self.name}: link {i} ({s} → {t}) has non-finite weight {w}")
        outs = self.outputs()
        if not outs:
            raise GenomeError(f"{self.name}: no output node (expected 'ink' or 'hue'/'saturation'/'brightness')")
        if "hue" in outs or "saturation" in outs:
            missing = [l for l in HSV_LABELS if l not in outs]
            if missing:
                raise GenomeError(f"{self.name}: colour genome lacks output node(s) {missing}")
        self.topological_order()  # raises on cycles

    def predecessors(self) -> dict[str, list[tuple[str, float]]]:
        preds: dict[str, list[tuple[str, float]]] = defaultdict(list)
        for s, t, w in self.links:
            preds[t].append((s, w))
        return preds

    def topological_order(self) -> list[str]:
        """Kahn's algorithm, ties broken by node order (deterministic). Raises on a cycle."""
        indeg = {k: 0 for k in self.nodes}
        succ = defaultdict(list)
        for s, t, _ in self.links:
            indeg[t] += 1
            succ[s].append(t)
        ready = [k for k in self.nodes if indeg[k] == 0]
        order = []
        while ready:
            k = ready.pop(0)
            order.append(k)
            for t in succ[k]:
                indeg[t] -= 1
                if indeg[t] == 0:
                    ready.append(t)
        if len(order) != len(self.nodes):
            stuck = sorted(k for k, d in indeg.items() if d > 0)
            raise GenomeError(f"{self.name}: the links form a cycle through node(s) {', '.join(stuck[:5])}")
        return order

    def layers(self, mode: str = "asap") -> dict[str, int]:
        """Layer of each node. `asap` (the default, and the FER convention): 0 for inputs, else
        1 + the longest path from the inputs. `alap`: as late as the depth allows — the depth minus
        the longest path to an output node (outputs stay at their `asap` layer)."""
        preds = self.predecessors()
        layer: dict[str, int] = {}
        for k in self.topological_order():
            if self.nodes[k].kind == "in":
                layer[k] = 0
            else:
                layer[k] = 1 + max((layer[s] for s, _ in preds[k]), default=0)
        if mode == "asap":
            return layer
        if mode != "alap":
            raise GenomeError(f"unknown layering mode {mode!r}; use 'asap' or 'alap'")
        succ = defaultdict(list)
        for s, t, _ in self.links:
            succ[s].append(t)
        late = dict(layer)
        for k in reversed(self.topological_order()):
            n = self.nodes[k]
            if n.kind == "hidden" and succ[k]:
                late[k] = min(late[t] for t in succ[k]) - 1
        return late

    def depth(self) -> int:
        """Longest path from the inputs to an output (in links): the minimal number of hidden layers."""
        lay = self.layers()
        return max(lay[k] for k in self.outputs().values())

    # -- direct evaluation ---------------------------------------------------------------------

    def evaluate(self, grid: torch.Tensor) -> dict[str, torch.Tensor]:
        """Value of every node on inputs `grid` `(P, 4)` = `(y, x, d, bias)`; the reference semantics."""
        preds = self.predecessors()
        val: dict[str, torch.Tensor] = {}
        for k in self.topological_order():
            n = self.nodes[k]
            if n.kind == "in":
                z = grid[:, INPUT_INDEX[n.label]]
            else:
                z = torch.zeros(grid.shape[0], dtype=grid.dtype, device=grid.device)
                for s, w in preds[k]:
                    z = z + w * val[s]
            val[k] = ACTIVATIONS[n.activation](z)
        return val

    def raw_outputs(self, grid: torch.Tensor) -> torch.Tensor:
        """The head's raw outputs `(P, n_out)`: `(h, s, v)` for colour, `(ink,)` for grey."""
        val = self.evaluate(grid)
        outs = self.outputs()
        if self.head == "hsv":
            return torch.stack([val[outs[l]] for l in HSV_LABELS], -1)
        key = outs.get("ink") or outs.get("brightness") or next(iter(outs.values()))
        return val[key][:, None]

    def render(self, res: int = 256, dtype=torch.float64) -> torch.Tensor:
        """RGB image `(res, res, 3)` in [0, 1], evaluated node by node (no layering)."""
        budget.check(
            budget.graph_render_bytes(int(res) ** 2, len(self.nodes)),
            f"drawing {self.name or 'a graph'} ({len(self.nodes)} nodes) at {res}×{res}",
            "lower the resolution",
        )
        grid = coords(res, dtype=dtype)
        return head_to_rgb(self.raw_outputs(grid), self.head).reshape(res, res, 3)

    # -- layerization --------------------------------------------------------------------------

    def layerize(self, ink_as_hsv: bool = True, dtype=torch.float32, mode: str = "asap") -> "Layered":
        """The layered network: see the module docstring and `Layered`.

        `ink_as_hsv`: a greyscale genome (one `ink` output) is given hue and saturation outputs that
        are constant 0 (identity units without inputs) in a layer of their own above `ink`, with an
        HSV head — the convention of the FER repository's converted networks, which is why the
        layered skull has 12 layers while its longest path has 11 links. With `False` the grey head
        is used and the depth is the longest path. `mode` chooses the layering (see `layers`); both
        give the minimal depth, their widths can differ.
        """
        g = self
        if ink_as_hsv and self.head == "grey":
            g = self._with_constant_hue_saturation()
        return _layerize(g, dtype, mode)

    def _with_constant_hue_saturation(self) -> "Graph":
        outs = self.outputs()
        ink = outs.get("ink") or outs.get("brightness") or next(iter(outs.values()))
        nodes = dict(self.nodes)
        nodes[ink] = Node(ink, "out", self.nodes[ink].activation, "brightness")
        top = self.depth() + 1
        nodes["_hue"] = Node("_hue", "out", "identity", "hue")
        nodes["_saturation"] = Node("_saturation", "out", "identity", "saturation")
        return Graph(
            nodes, list(self.links), name=self.name, meta=dict(self.meta, pinned={"_hue": top, "_saturation": top})
        )


@dataclass
class Layered:
    """A layerized graph: the network and where each graph node lives in it."""

    net: CoordMLP
    placement: dict[str, tuple[int, int]]  # node -> (hidden layer 1..L, column); inputs -> (0, index)
    caches: dict[tuple[str, int], int]  # (node, layer) -> column of the cache unit carrying it
    n_genome_weights: int  # non-zero weights that are graph links
    n_cache_weights: int  # non-zero weights of 1 that carry values (cache chains + output selection)

    def node_units(self) -> dict[int, list[tuple[str, int]]]:
        """Hidden layer (1..L) → `(node, column)` of the graph's own nodes there (caches excluded),
        ordered by column."""
        out: dict[int, list[tuple[str, int]]] = defaultdict(list)
        for k, (l, c) in self.placement.items():
            if l > 0 and not k.startswith("_"):  # "_hue"/"_saturation": constant padding units
                out[l].append((k, c))
        return {l: sorted(v, key=lambda t: t[1]) for l, v in sorted(out.items())}

    def units_per_layer(self) -> tuple[np.ndarray, np.ndarray]:
        """`(nodes, caches)`: how many graph nodes and how many cache units sit in each hidden layer
        1..L (the constant padding units count as nodes: they take a column like one)."""
        depth = self.net.depth
        nodes = np.bincount([l for l, _ in self.placement.values() if l > 0], minlength=depth + 1)[1:]
        caches = np.bincount([l for _, l in self.caches], minlength=depth + 1)[1:]
        return nodes, caches


def _layerize(g: Graph, dtype, mode: str = "asap") -> Layered:
    layer = g.layers(mode)
    for k, l in g.meta.get("pinned", {}).items():
        layer[k] = l
    outs = g.outputs()
    head = "hsv" if "hue" in outs else "grey"
    out_labels = HSV_LABELS if head == "hsv" else (next(iter(outs)),)
    out_keys = [outs[l] for l in out_labels]
    D = max(layer[k] for k in out_keys)

    # Last layer at which each value is read: a consumer at layer c reads layer c-1; outputs are read
    # by the final kernel from layer D.
    last_read: dict[str, int] = {}
    for s, t, _ in g.links:
        last_read[s] = max(last_read.get(s, -1), layer[t] - 1)
    for k in out_keys:
        last_read[k] = max(last_read.get(k, -1), D)
    # cache units: value k lives in a cache at layers layer[k]+1 .. last_read[k]
    cache_layers: dict[int, list[str]] = defaultdict(list)
    for k in g.nodes:  # node order → deterministic columns
        for l in range(layer[k] + 1, last_read.get(k, -1) + 1):
            cache_layers[l].append(k)

    # activation groups: cache first, then the rest alphabetically; each group as wide as its
    # largest use in any layer (the FER repository's convention, so all layers share one arch)
    hidden_by_layer: dict[int, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for k, n in g.nodes.items():
        if n.kind != "in":
            hidden_by_layer[layer[k]][n.activation].append(k)
    acts = sorted({a for per in hidden_by_layer.values() for a in per})
    sizes = {"cache": max((len(v) for v in cache_layers.values()), default=0)}
    for a in acts:
        sizes[a] = max(len(per.get(a, [])) for per in hidden_by_layer.values())
    groups = [(a, sizes[a]) for a in ["cache"] + acts if sizes.get(a, 0) > 0]
    offsets, start = {}, 0
    for a, n in groups:
        offsets[a] = start
        start += n
    width = start
    arch = f"{D};" + ",".join(f"{a}:{n}" for a, n in groups)

    placement: dict[str, tuple[int, int]] = {}
    for k, n in g.nodes.items():
        if n.kind == "in":
            placement[k] = (0, INPUT_INDEX[n.label])
    for l, per in hidden_by_layer.items():
        for a, keys in per.items():
            for j, k in enumerate(keys):
                placement[k] = (l, offsets[a] + j)
    caches = {(k, l): j for l, keys in cache_layers.items() for j, k in enumerate(keys)}

    def column_at(k: str, l: int) -> int:
        """Column holding value k at layer l (its own unit, or the cache carrying it)."""
        return placement[k][1] if layer[k] == l else caches[(k, l)]

    n_out = 3 if head == "hsv" else 1
    dims = [4] + [width] * D + [n_out]
    kernels = [torch.zeros(fi, fo, dtype=torch.float64) for fi, fo in zip(dims[:-1], dims[1:])]
    n_genome = n_cache = 0
    for s, t, w in g.links:
        lt = layer[t]
        kernels[lt - 1][column_at(s, lt - 1), placement[t][1]] += w
        n_genome += 1
    for (k, l), j in caches.items():
        kernels[l - 1][column_at(k, l - 1), j] = 1.0
        n_cache += 1
    for o, k in enumerate(out_keys):
        kernels[D][column_at(k, D), o] = 1.0
        n_cache += 1
    masks = [torch.zeros_like(k) for k in kernels]
    for s, t, _ in g.links:
        masks[layer[t] - 1][column_at(s, layer[t] - 1), placement[t][1]] = 1.0
    for (k, l), j in caches.items():
        masks[l - 1][column_at(k, l - 1), j] = 1.0
    for o, k in enumerate(out_keys):
        masks[D][column_at(k, D), o] = 1.0
    net = CoordMLP.from_kernels(
        arch, kernels, head=head, masks=masks, dtype=dtype, provenance={"made_by": "layerize", "graph": g.name}
    )
    return Layered(net, placement, caches, n_genome, n_cache)
