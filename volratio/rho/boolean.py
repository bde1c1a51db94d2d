"""Compositional Boolean targets: DAGs of threshold gates on n ≤ 10 input bits.

A target is a directed acyclic graph whose leaves are the n input bits and whose internal nodes
("primitives") are threshold gates of local arity ≤ k; the last gate is the root and computes the
target. Bits are encoded as ±1 and a gate with integer weights `w` and bias `b` outputs
`+1 if w·x + b > 0 else −1` — the same rule as the units of the random networks in
`volratio.rho.sampler`, so a network can hold each primitive in one unit.

Named targets (`get_boolean_target(spec)`):
- `tree:D:K` — a balanced tree of depth D and arity K on K^D inputs, gates alternating AND (at the
  root) and OR going down. Alternation is what makes the depth real: an AND of ANDs is itself one
  threshold gate, an AND of ORs is not (it is not linearly separable).
- `chain:D` — D gates, gate i combining gate i−1 with a fresh input (gate 1 combines x0 and x1),
  alternating AND (gate 1) and OR; n = D + 1 inputs.
- `dag:SEED[:depth=3,arity=2,inputs=6,primitives=5]` — a random DAG of threshold gates, redrawn
  deterministically from SEED until every gate depends strongly on all its arguments
  (`strongly_depends`), reaches the root, and computes a function distinct (also up to negation)
  from every other node.

Each target knows its depth L* (gates on the longest input→root path) and the minimal width
`min_width(L)` of a layered network of L threshold layers (L−1 hidden layers and one output unit,
inputs feeding layer 1 only) that embeds the DAG: each gate sits in one layer between its earliest
and latest possible ones, and every value needed more than one layer later is carried by copy
units (the `cache` units of Picbreeder layerization, `volratio.data.graph`). `W_min = min_width(L*)`.

The Boolean model is described in `volratio.rho`; the threshold-gate depth hierarchy follows the classical
AND/OR alternation argument. Used by the chapter "The volume-ratio argument" (book/volume_ratio.md).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from ..errors import VolratioError

MAX_INPUTS = 10  # 2^10 = 1024 rows per truth table (16 uint64 words in volratio.rho.bitslice)


class BooleanTargetError(VolratioError, ValueError):
    """A Boolean target spec that cannot be built."""


@dataclass(frozen=True)
class Gate:
    """A threshold gate: output +1 iff `sum(weights[i] * node[args[i]]) + bias > 0`."""

    name: str
    args: tuple[int, ...]  # node indices (inputs are 0..n-1, gates n..)
    weights: tuple[int, ...]
    bias: int


def input_table(n: int) -> np.ndarray:
    """All 2^n inputs as ±1, shape (2^n, n); row r has x_i = +1 iff bit i of r is set."""
    r = np.arange(2**n)[:, None]
    return np.where((r >> np.arange(n)[None, :]) & 1, 1, -1).astype(np.int8)


@dataclass(frozen=True)
class BooleanTarget:
    """A compositional Boolean function given as a DAG of threshold gates (root = last gate)."""

    spec: str
    n: int
    gates: tuple[Gate, ...]
    meta: dict = field(default_factory=dict, compare=False, hash=False)

    # -- structure -----------------------------------------------------------------------------

    @property
    def n_nodes(self) -> int:
        return self.n + len(self.gates)

    @property
    def root(self) -> int:
        return self.n_nodes - 1

    def node_name(self, v: int) -> str:
        return f"x{v}" if v < self.n else self.gates[v - self.n].name

    def children(self, v: int) -> tuple[int, ...]:
        return () if v < self.n else self.gates[v - self.n].args

    @cached_property
    def node_depth(self) -> tuple[int, ...]:
        d = [0] * self.n_nodes
        for v in range(self.n, self.n_nodes):
            d[v] = 1 + max(d[c] for c in self.children(v))
        return tuple(d)

    @property
    def depth(self) -> int:
        """L*: threshold layers on the longest input→root path."""
        return self.node_depth[self.root]

    @cached_property
    def height(self) -> tuple[int, ...]:
        """Layers between a node and the root (root 0)."""
        h = [0] * self.n_nodes
        for v in range(self.root - 1, -1, -1):
            users = [u for u in range(self.n, self.n_nodes) if v in self.children(u)]
            h[v] = 1 + max(h[u] for u in users)
        return tuple(h)

    @cached_property
    def consumers(self) -> tuple[tuple[int, ...], ...]:
        return tuple(
            tuple(u for u in range(self.n, self.n_nodes) if v in self.children(u)) for v in range(self.n_nodes)
        )

    @property
    def width(self) -> int:
        """W_min: the minimal hidden width at depth L*."""
        return self.min_width(self.depth)

    # -- truth tables --------------------------------------------------------------------------

    @cached_property
    def node_tables(self) -> np.ndarray:
        """Truth tables of all nodes, ±1, shape (2^n, n_nodes)."""
        x = input_table(self.n).astype(np.int64)
        cols = [x[:, i] for i in range(self.n)]
        for g in self.gates:
            z = sum(w * cols[a] for w, a in zip(g.weights, g.args)) + g.bias
            cols.append(np.where(z > 0, 1, -1))
        return np.stack(cols, axis=1).astype(np.int8)

    @property
    def table(self) -> np.ndarray:
        """The target's truth table, ±1, shape (2^n,)."""
        return self.node_tables[:, self.root]

    def allowed(self) -> np.ndarray:
        """(n_nodes, n_nodes) bool: `allowed[v, u]` iff a unit labelled v may read a unit labelled
        u in a compositional network — u is a child of v, or v itself (a copy)."""
        a = np.zeros((self.n_nodes, self.n_nodes), dtype=bool)
        for v in range(self.n_nodes):
            a[v, v] = True
            for c in self.children(v):
                a[v, c] = True
        return a

    # -- layered embeddings --------------------------------------------------------------------

    def placements(self, L: int, limit: int = 200_000):
        """Yield every layer assignment of the gates in a network of L threshold layers: a dict
        node → layer (inputs at 0, the root at ≤ L) respecting `layer(child) < layer(gate)`.
        The root may sit below L (its value is then copied up to the output unit)."""
        if L < self.depth:
            return
        gates = list(range(self.n, self.n_nodes))
        windows = [range(self.node_depth[v], L - self.height[v] + 1) for v in gates]
        n_total = math.prod(len(w) for w in windows)
        if n_total > limit:
            raise BooleanTargetError(
                f"{self.spec}: {n_total} gate placements at L={L} exceed the enumeration limit "
                f"{limit}; use a smaller L or raise `limit`"
            )
        for combo in itertools.product(*windows):
            layer = {i: 0 for i in range(self.n)}
            layer.update(zip(gates, combo))
            if all(layer[c] < layer[v] for v in gates for c in self.children(v)):
                yield layer

    def occupancy(self, layer: dict, L: int) -> list[int]:
        """Units needed in hidden layers 1..L−1 for a placement: each node occupies the layers
        from its own up to (excluding) the layer of its last consumer; the root's consumer is the
        output unit at layer L."""
        occ = [0] * (L + 1)
        for v in range(self.n_nodes):
            last = L if v == self.root else max(layer[u] for u in self.consumers[v])
            for j in range(max(layer[v], 1), last):
                occ[j] += 1
        return occ[1:L]

    def min_width(self, L: int) -> int | None:
        """Minimal hidden width of a compositional embedding in L threshold layers (None if
        L < L*). For L = 1 (no hidden layer) it is 0."""
        best = None
        for layer in self.placements(L):
            w = max(self.occupancy(layer, L), default=0)
            best = w if best is None else min(best, w)
        return best

    def describe(self) -> str:
        lines = [f"{self.spec}: n={self.n} inputs, {len(self.gates)} primitives, L*={self.depth}, W_min={self.width}"]
        for v, g in enumerate(self.gates, start=self.n):
            terms = " + ".join(f"{w}·{self.node_name(a)}" for w, a in zip(g.weights, g.args))
            lines.append(f"  {g.name} = [{terms} {g.bias:+d} > 0]   (depth {self.node_depth[v]})")
        return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# Builders


def _and(args, name):  # +1 iff all args are +1
    return Gate(name, tuple(args), (1,) * len(args), -(len(args) - 1))


def _or(args, name):  # +1 iff any arg is +1
    return Gate(name, tuple(args), (1,) * len(args), len(args) - 1)


def tree(D: int, K: int) -> BooleanTarget:
    """Balanced tree of depth D, arity K; AND at the root, alternating with OR downwards."""
    if D < 1 or K < 2 or K**D > MAX_INPUTS:
        raise BooleanTargetError(
            f"tree:{D}:{K} needs K^D = {K**D if K >= 1 else '?'} inputs; choose D ≥ 1, K ≥ 2 with K^D ≤ {MAX_INPUTS}"
        )
    n = K**D
    gates: list[Gate] = []
    level = list(range(n))
    for d in range(1, D + 1):
        make = _and if (D - d) % 2 == 0 else _or
        nxt = []
        for j in range(0, len(level), K):
            nxt.append(n + len(gates))
            gates.append(make(level[j : j + K], f"{'and' if make is _and else 'or'}{d}_{j // K}"))
        level = nxt
    return BooleanTarget(f"tree:{D}:{K}", n, tuple(gates))


def chain(D: int) -> BooleanTarget:
    """D gates; gate i combines gate i−1 (or x0) with the fresh input x_i; AND, OR, AND, …"""
    if D < 1 or D + 1 > MAX_INPUTS:
        raise BooleanTargetError(f"chain:{D} needs D+1 inputs; choose 1 ≤ D ≤ {MAX_INPUTS - 1}")
    n = D + 1
    gates: list[Gate] = []
    prev = 0
    for i in range(1, D + 1):
        make = _and if i % 2 == 1 else _or
        gates.append(make((prev, i), f"{'and' if make is _and else 'or'}{i}"))
        prev = n + i - 1
    return BooleanTarget(f"chain:{D}", n, tuple(gates))


def _random_gate(rng: np.random.Generator, args, name) -> Gate:
    w = tuple(int(s) for s in rng.choice([-1, 1], size=len(args)))
    k = len(args)
    # biases with the parity of k+1 avoid ties (z = 0) on ±1 inputs; |b| < k keeps it non-constant
    b = int(rng.choice([b for b in range(-k + 1, k) if (b + k) % 2 == 1]))
    return Gate(name, tuple(int(a) for a in args), w, b)


def random_dag(
    seed: int, depth: int = 3, arity: int = 2, inputs: int = 6, primitives: int = 5, tries: int = 5000
) -> BooleanTarget:
    """A random DAG of threshold gates (see module docstring); deterministic in `seed`."""
    if (
        not (1 <= depth <= primitives)
        or (depth == 1 and primitives != 1)
        or arity < 2
        or not (arity <= inputs <= MAX_INPUTS)
    ):
        raise BooleanTargetError(
            f"dag:{seed}: need 1 ≤ depth ≤ primitives (one primitive when depth = 1), arity ≥ 2 and arity ≤ inputs ≤ {MAX_INPUTS} "
            f"(got depth={depth}, arity={arity}, inputs={inputs}, primitives={primitives})"
        )
    rng = np.random.default_rng([int(seed), depth, arity, inputs, primitives])
    spec = f"dag:{seed}:depth={depth},arity={arity},inputs={inputs},primitives={primitives}"
    for _ in range(tries):
        # gate depths: one gate per depth 1..depth on the spine, the rest anywhere below the root
        depths = sorted(list(range(1, depth + 1)) + list(rng.integers(1, depth, size=primitives - depth)))
        nodes_at = {0: list(range(inputs))}
        gates: list[Gate] = []
        for j, d in enumerate(depths):
            v = inputs + j
            if j == len(depths) - 1:
                d = depth
            below = [u for dd, us in nodes_at.items() if dd < d for u in us]
            prev = nodes_at.get(d - 1, [])
            if not prev:
                break
            first = int(rng.choice(prev))
            rest = [u for u in below if u != first]
            k = min(arity, 1 + len(rest))
            args = [first] + list(rng.choice(rest, size=k - 1, replace=False)) if k > 1 else [first]
            gates.append(_random_gate(rng, args, f"g{j + 1}"))
            nodes_at.setdefault(d, []).append(v)
        if len(gates) != primitives:
            continue
        t = BooleanTarget(spec, inputs, tuple(gates))
        if _is_proper(t):
            return t
    raise BooleanTargetError(f"{spec}: no proper DAG found in {tries} draws; change the seed or the options")


def _is_proper(t: BooleanTarget) -> bool:
    """Every gate depends strongly on each argument (`strongly_depends`), every node reaches the
    root, and all node functions are distinct up to negation and not constant."""
    tab = t.node_tables.astype(np.int64)
    if any(abs(int(tab[:, v].sum())) == tab.shape[0] for v in range(t.n_nodes)):
        return False
    gram = np.abs(tab.T @ tab)
    np.fill_diagonal(gram, 0)
    if (gram == tab.shape[0]).any():
        return False
    try:
        _ = t.height
    except ValueError:  # a node without consumers (max of empty)
        return False
    return all(strongly_depends(t, v, i) for v in range(t.n, t.n_nodes) for i in range(len(t.children(v))))


def strongly_depends(t: BooleanTarget, v: int, i: int) -> bool:
    """Does gate v depend on its i-th argument *among realisable inputs*: are there inputs x, x'
    on which v's other arguments agree, the i-th differs and v differs? (Then no function of the
    other arguments alone computes v — the hypothesis of the theorem's width bound.)"""
    tab = t.node_tables
    args = t.children(v)
    others = [a for j, a in enumerate(args) if j != i]
    seen: dict[tuple, set] = {}
    for r in range(tab.shape[0]):
        seen.setdefault(tuple(tab[r, others]), set()).add((int(tab[r, args[i]]), int(tab[r, v])))
    return any(len({c for c, _ in s}) == 2 and len({o for _, o in s}) == 2 for s in seen.values())


def get_boolean_target(spec: str) -> BooleanTarget:
    """Build a named target: `tree:D:K`, `chain:D`, or `dag:SEED[:key=value,…]`."""
    parts = spec.strip().split(":")
    kind = parts[0]
    try:
        if kind == "tree" and len(parts) == 3:
            t = tree(int(parts[1]), int(parts[2]))
        elif kind == "chain" and len(parts) == 2:
            t = chain(int(parts[1]))
        elif kind == "dag" and len(parts) in (2, 3):
            opts = {}
            if len(parts) == 3 and parts[2]:
                for kv in parts[2].split(","):
                    k, _, v = kv.partition("=")
                    if k.strip() not in ("depth", "arity", "inputs", "primitives"):
                        raise BooleanTargetError(
                            f"{spec}: unknown option {k.strip()!r}; known: depth, arity, inputs, primitives"
                        )
                    opts[k.strip()] = int(v)
            t = random_dag(int(parts[1]), **opts)
        else:
            raise BooleanTargetError(
                f"unknown Boolean target {spec!r}; use tree:D:K, chain:D or dag:SEED[:depth=…,arity=…,inputs=…,primitives=…]"
            )
    except ValueError as e:
        if isinstance(e, VolratioError):
            raise
        raise BooleanTargetError(f"{spec}: {e}; numbers in the spec must be integers") from None
    if not _is_proper(t):
        raise BooleanTargetError(
            f"{spec}: the DAG is degenerate (a constant or duplicated primitive); pick other parameters"
        )
    return t
