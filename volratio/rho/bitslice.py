"""Bit-sliced evaluation of random threshold networks: truth tables as uint64 words.

With n input bits a unit's whole truth table has 2ⁿ rows: one 64-bit word for n ≤ 6, ⌈2ⁿ/64⌉
words for n = 7..10. Row r of a table is bit r % 64 of word r // 64 (the row order of
`volratio.rho.boolean.input_table`); a set bit means +1. For n < 6 only the low 2ⁿ bits are
meaningful (`valid_mask`).

**Ternary weights** (effective weights in {−1, 0, +1}, the Boolean model's default): a unit's
pre-activation on a row is z = Σ w_i x_i + b, a sum of ±1 and 0 terms. Each input's *literal* is
the word `(x_i AND [w_i ≠ 0]) XOR flip_i` — `x_i XOR [w_i < 0]` for an active input, a constant for
an inactive one — and the bias is one more constant literal; the constants are chosen so that the
unit fires iff at least ⌊N/2⌋ + 1 of its N = fan_in + 1 literals are 1 (a fixed majority, proved
in `ternary_layer`). The count is a carry-save adder tree on the literal words (bit-sliced
popcount), compared with the constant; all networks of a block at once along the last array
axis. Layer 1 reads the fixed input words, so each of its units is one of 3ⁿ⁺¹ functions of its
codes: it is looked up in a table built once by the same evaluator (n ≤ 8).

**Gaussian weights** are not a popcount: their pre-activations are computed in floating point by
the same batched matmul as the float path (`torch.baddbmm`, float32, same operands), and only the
outputs are packed into words. So both paths agree bit for bit on every unit.

**Sampler and random-stream contract** (`sample_block`). Networks are drawn in *chunks* of
`chunk` networks (a fixed part of the contract, default 4096); chunk c of cell (seed, W, L) draws
from `numpy.random.Generator(SFC64(SeedSequence([seed, W, L], spawn_key=(c,))))` — the c-th child
of `SeedSequence([seed, W, L]).spawn` — so a count depends only on (seed, W, L, chunk size,
number of networks), never on the number of worker processes or the order of the grid. Inside a
chunk, layer by layer, the draws are (uniform 32-bit integers are the low then high halves of the
SFC64 raw outputs, `Generator.bit_generator.random_raw`; SFC64 rather than PCG64 because the draws
are a third of the run time and it is ~1.4× faster here):

- ternary weights, Bernoulli masks: one uint32 u per weight (shape (fan_in, fan_out, B)):
  −1 if u < t, +1 if u ≥ 2³² − t, else 0, with t = round(p/3 · 2³²);
- otherwise first the mask — Bernoulli: u < round(p · 2³²); fan-in: the `fan_in` inputs with the
  smallest keys u (ties to the lower index) — then the weights: ternary ⌊3u / 2³²⌋ − 1, Gaussian
  `standard_normal(float32) / sqrt(fan_in)`;
- then the biases (shape (fan_out, B)): ternary ⌊3u / 2³²⌋ − 1, Gaussian as the weights.

The distribution is that of `volratio.rho.sampler.sample_networks` (the float path, whose torch stream
differs): every probability is exact to 2⁻³² (the float path's float32 uniforms: 2⁻²⁴).

Reference: the bit-slicing technique of Biham (1997, "A fast new DES implementation in
software"), applied to threshold gates. Used by `volratio.rho.montecarlo.count` (the
default engine), the chapter "The volume-ratio argument" and `benchmarks/rho_sampling.py`.
"""

from __future__ import annotations

import atexit
import concurrent.futures as cf
import itertools
import multiprocessing as mp
import os
from dataclasses import dataclass
from functools import cache, lru_cache

import numpy as np
import torch

ONES = np.uint64(0xFFFF_FFFF_FFFF_FFFF)
MAX_BITS_INPUTS = 10  # 2^10 rows = 16 words per table
LUT_MAX_ENTRIES = 1 << 20  # layer-1 lookup table size cap (3^(n+1) · words)


def n_words(n: int) -> int:
    """Words per truth table on n inputs."""
    return max(1, (1 << n) // 64)


@cache
def input_words(n: int) -> np.ndarray:
    """Truth tables of the n inputs, (n, n_words) uint64: bit r set iff x_i = +1 on row r."""
    r = np.arange(1 << n)
    bits = ((r[None, :] >> np.arange(n)[:, None]) & 1).astype(np.uint64)  # (n, 2^n)
    return pack_bits(bits)


def pack_bits(bits: np.ndarray) -> np.ndarray:
    """(..., P) array of 0/1 (or bool) rows → (..., n_words) uint64 words."""
    P = bits.shape[-1]
    nw = max(1, P // 64)
    b = np.zeros(bits.shape[:-1] + (nw * 64,), dtype=np.uint64)
    b[..., :P] = bits
    b = b.reshape(bits.shape[:-1] + (nw, 64))
    return (b << np.arange(64, dtype=np.uint64)).sum(axis=-1, dtype=np.uint64)


def unpack_bits(words: np.ndarray, n: int) -> np.ndarray:
    """(..., n_words) uint64 → (..., 2^n) bool rows."""
    bits = (words[..., None] >> np.arange(64, dtype=np.uint64)) & np.uint64(1)  # (..., nw, 64)
    return bits.reshape(words.shape[:-1] + (-1,))[..., : 1 << n].astype(bool)


def valid_mask(n: int) -> np.ndarray:
    """(n_words,) uint64: the meaningful bits of a table (all of them for n ≥ 6)."""
    if n >= 6:
        return np.full(n_words(n), ONES)
    return np.array([(1 << (1 << n)) - 1], dtype=np.uint64)


# ---------------------------------------------------------------------------------------------
# A block of networks


@dataclass
class Block:
    """B networks, networks along the last axis: `weights[l]` (fan_in, fan_out, B) effective
    weights — int8 in {−1, 0, 1} when `ternary`, else float32 — and `biases[l]` (fan_out, B)."""

    weights: list[np.ndarray]
    biases: list[np.ndarray]
    ternary: bool

    @property
    def batch(self) -> int:
        return self.biases[0].shape[-1]

    def take(self, idx) -> Block:
        return Block([w[..., idx] for w in self.weights], [b[..., idx] for b in self.biases], self.ternary)


def _uniform32(rng: np.random.Generator, shape) -> np.ndarray:
    size = int(np.prod(shape))
    raw = rng.bit_generator.random_raw((size + 1) // 2)  # uint64, low half first (little-endian)
    return raw.view("<u4")[:size].reshape(shape)


def _thirds(u: np.ndarray) -> np.ndarray:
    """⌊3u / 2³²⌋ − 1 ∈ {−1, 0, 1}, int8."""
    return ((u.astype(np.uint64) * np.uint64(3)) >> np.uint64(32)).astype(np.int8) - np.int8(1)


def _fanin_mask(u: np.ndarray, k: int) -> np.ndarray:
    """Keep the k inputs with the smallest keys along axis 0 (stable: ties to the lower index)."""
    order = np.argsort(u, axis=0, kind="stable")[:k]
    m = np.zeros(u.shape, dtype=bool)
    np.put_along_axis(m, order, True, axis=0)
    return m


def chunk_rng(seed: int, W: int, L: int, chunk: int) -> np.random.Generator:
    """The stream of chunk `chunk` of cell (seed, W, L) (see the module docstring)."""
    ss = np.random.SeedSequence([int(seed), int(W), int(L)], spawn_key=(int(chunk),))
    return np.random.Generator(np.random.SFC64(ss))


@dataclass(frozen=True)
class DrawSpec:
    """What `sample_block` draws (the fields of `volratio.rho.sampler.SamplerConfig` it needs; kept here
    so that worker processes need not import torch)."""

    weights: str = "ternary"  # "ternary" or "gaussian"
    masks: str = "bernoulli"  # "bernoulli" or "fanin"
    p: float = 0.8  # Bernoulli mask density
    fan_in: int = 2  # inputs kept per unit for "fanin"


def sample_block(dims, B: int, cfg: DrawSpec, rng: np.random.Generator) -> Block:
    """Draw B networks with layer shapes `dims` [(fan_in, fan_out), …] from `rng` (the order of
    draws is the stream contract of the module docstring)."""
    ternary = cfg.weights == "ternary"
    ws, bs = [], []
    for fi, fo in dims:
        shape = (fi, fo, B)
        if ternary and cfg.masks == "bernoulli":
            t = np.uint32(round(cfg.p / 3.0 * 2**32))  # p ≤ 1: t ≤ 2^32 / 3
            u = _uniform32(rng, shape)
            w = (u >= np.uint32(2**32 - int(t))).view(np.int8) - (u < t).view(np.int8)
        else:
            if cfg.masks == "bernoulli":
                thr = round(cfg.p * 2**32)
                m = _uniform32(rng, shape) < thr if thr < 2**32 else np.ones(shape, dtype=bool)
            else:
                m = _fanin_mask(_uniform32(rng, shape), min(cfg.fan_in, fi))
            if ternary:
                w = _thirds(_uniform32(rng, shape)) * m.view(np.int8)
            else:
                w = rng.standard_normal(shape, dtype=np.float32) / np.float32(np.sqrt(fi))
                w = w * m
        if ternary:
            b = _thirds(_uniform32(rng, (fo, B)))
        else:
            b = rng.standard_normal((fo, B), dtype=np.float32) / np.float32(np.sqrt(fi))
        ws.append(w)
        bs.append(b)
    return Block(ws, bs, ternary)


# ---------------------------------------------------------------------------------------------
# Ternary layers: bit-sliced popcount and threshold


def _slot_masks(w: np.ndarray, b: np.ndarray):
    """The majority form of a ternary layer (see `ternary_layer`): w (F, U, B), b (U, B) int8 →
    `act` (F, U, B) bool (non-zero weight) and `flip` (F + 1, U, B) bool (the literal of slot i is
    `(x_i AND act_i) XOR flip_i`; slot F is the bias, whose literal is the constant `flip_F`)."""
    F, U, B = w.shape
    zero = np.empty((F + 1, U, B), dtype=bool)  # slots contributing 0
    np.equal(w, 0, out=zero[:F])
    np.equal(b, 0, out=zero[F])
    flip = np.empty_like(zero)  # literal inverted / bias literal set
    np.less(w, 0, out=flip[:F])
    np.greater(b, 0, out=flip[F])
    # zero slots are filled alternately with 1 and 0 by their rank; the first gets 1 iff N is even
    z8, f8 = zero.view(np.uint8), flip.view(np.uint8)
    parity = np.full((U, B), (F + 1) % 2 == 0, dtype=np.uint8)  # the next zero slot gets 1
    fill = np.empty((U, B), dtype=np.uint8)
    for i in range(F + 1):  # (a cumulative sum along axis 0 is slow in numpy: short inner loops)
        np.bitwise_and(z8[i], parity, out=fill)
        np.bitwise_or(f8[i], fill, out=f8[i])
        np.bitwise_xor(parity, z8[i], out=parity)
    return ~zero[:F], flip


def ternary_layer(h: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
    """One threshold layer on packed tables. h (F, nw, B) uint64 input tables, w (F, U, B) int8
    codes, b (U, B) int8 biases → (U, nw, B) uint64 output tables.

    Majority form: a unit fires iff z = Σ w_i x_i + b > 0. Give each of the N = F + 1 slots
    (inputs and bias) a literal bit whose ±1 value is its term: an active input's literal is
    `x_i XOR [w_i < 0]`, a bias ±1 is the constant 1 / 0. Slots whose term is 0 (zero weights, a
    zero bias) are filled alternately with 1 and 0, so their ±1 values cancel in pairs; when their
    number is odd, the odd one is 1 if N is even and 0 if N is odd. Then z > 0 iff the count C of
    literals that are 1 satisfies C ≥ ⌊N/2⌋ + 1 — a fixed threshold: when the odd filler adds
    ±1 to 2C − N = z ± 1, the parity of z makes the strict comparison come out the same. (The
    equivalence test against the float path checks every unit.) C is computed by a carry-save
    adder tree on the literal words, then compared with the constant."""
    F, nw, B = h.shape
    U = w.shape[1]
    act, flip = _slot_masks(w, b)
    mask = _get((U, 1, B))
    lits = []
    act8, flip8 = act.view(np.int8), flip.view(np.int8)  # bool as 0/1 bytes
    for i in range(F):
        lit = _get((U, nw, B))
        _word_mask(act8[i], mask)
        np.bitwise_and(h[i][None], mask, out=lit)  # x_i where w_i ≠ 0
        _word_mask(flip8[i], mask)
        np.bitwise_xor(lit, mask, out=lit)
        lits.append(lit)
    lit = _get((U, nw, B))  # the bias slot: a constant word
    _word_mask(flip8[F], lit)
    lits.append(lit)
    _put(mask)
    planes = _popcount(lits)
    out = _ge_const(planes, (F + 1) // 2 + 1)
    _put(*[p for p in planes if p is not None and p is not out])
    return out


def _word_mask(b8: np.ndarray, out: np.ndarray) -> None:
    """0/1 bytes (U, B) → words of all zeros / all ones in `out` (U, nw, B): −1 as int8 cast to
    uint64 is all ones (a widening cast, cheaper than a multiply by the all-ones word)."""
    np.negative(b8[:, None, :], out=out, casting="unsafe")


# Scratch words: the evaluator's temporaries are reused instead of allocated per operation (fresh
# arrays of a few hundred kB cost page faults and cache misses that outweigh the operation).
_FREE: dict[tuple, list[np.ndarray]] = {}


def _get(shape) -> np.ndarray:
    free = _FREE.get(shape)
    return free.pop() if free else np.empty(shape, dtype=np.uint64)


def _put(*arrays) -> None:
    for a in arrays:
        if a.base is None and a.flags.c_contiguous and a.dtype == np.uint64:
            free = _FREE.setdefault(a.shape, [])
            if len(free) < 64:
                free.append(a)


def _popcount(lits: list[np.ndarray]) -> list[np.ndarray | None]:
    """Bit-sliced population count of the words in `lits` (consumed): planes, least significant
    first (None: an always-zero plane). Full adders (5 operations, 3 words → 2) and half adders
    (2 operations) compress each column of equal weight (a Wallace tree)."""
    cols = [list(lits)]
    planes = []
    j = 0
    while j < len(cols):
        col = cols[j]
        while len(col) > 1:
            carry = _get(col[0].shape)
            if len(col) >= 3:
                a, b, c = col.pop(0), col.pop(0), col.pop(0)
                np.bitwise_and(a, b, out=carry)
                np.bitwise_xor(a, b, out=a)
                np.bitwise_and(a, c, out=b)
                np.bitwise_or(carry, b, out=carry)
                np.bitwise_xor(a, c, out=a)
                _put(b, c)
            else:
                a, b = col.pop(0), col.pop(0)
                np.bitwise_and(a, b, out=carry)
                np.bitwise_xor(a, b, out=a)
                _put(b)
            col.append(a)
            if j + 1 == len(cols):
                cols.append([])
            cols[j + 1].append(carry)
        planes.append(col[0] if col else None)
        j += 1
    return planes


def _ge_const(planes: list, t: int) -> np.ndarray:
    """Words with a bit set where the bit-sliced count (`planes`) is ≥ the constant t: from the
    least significant plane up, ge = plane AND ge (threshold bit 1) or plane OR ge (bit 0).
    Works in place on one of the planes (returned)."""
    shape = next(p.shape for p in planes if p is not None)
    r = None  # None: all ones (the empty low part of t is 0)
    for j in range(max(len(planes), t.bit_length())):
        p = planes[j] if j < len(planes) else None
        if (t >> j) & 1:
            if p is None:
                r = _get(shape)
                r.fill(0)
            else:
                r = p if r is None else np.bitwise_and(p, r, out=r)
        elif p is not None and r is not None:
            np.bitwise_or(p, r, out=r)
    if r is None:
        r = _get(shape)
        r.fill(ONES)
    return r


@lru_cache(maxsize=8)
def first_layer_table(n: int) -> np.ndarray | None:
    """(3^(n+1), nw) uint64: the table of a layer-1 unit for every code vector, indexed by
    Σ_i (w_i + 1)·3^i + (b + 1)·3^n — computed by `ternary_layer` itself. None when too large."""
    size = 3 ** (n + 1)
    if size * n_words(n) > LUT_MAX_ENTRIES:
        return None
    idx = np.arange(size)
    codes = ((idx[None, :] // 3 ** np.arange(n + 1)[:, None]) % 3 - 1).astype(np.int8)  # (n+1, size)
    h = np.broadcast_to(input_words(n)[:, :, None], (n, n_words(n), size))
    out = ternary_layer(h, codes[:n, None, :], codes[n][None, :])  # (1, nw, size)
    return np.ascontiguousarray(out[0].T)


def _first_layer(n: int, w: np.ndarray, b: np.ndarray, lut: np.ndarray) -> np.ndarray:
    """Layer 1 by table lookup: w (n, U, B) int8, b (U, B) → (U, nw, B)."""
    idx = (b.astype(np.int32) + 1) * 3**n
    for i in range(n):
        idx += (w[i].astype(np.int32) + 1) * 3**i
    return np.moveaxis(lut[idx], -1, 1)  # (U, B, nw) → (U, nw, B)


# ---------------------------------------------------------------------------------------------
# Forward pass


def _float_layer(h: np.ndarray, w: np.ndarray, b: np.ndarray, n: int) -> np.ndarray:
    """Gaussian weights: pre-activations by the float path's own batched matmul, outputs packed."""
    x = np.where(unpack_bits(np.moveaxis(h, -1, 0), n), 1.0, -1.0).astype(np.float32)  # (B, F, P)
    x = torch.from_numpy(np.ascontiguousarray(np.swapaxes(x, 1, 2)))  # (B, P, F)
    wt = torch.from_numpy(np.ascontiguousarray(np.moveaxis(w, -1, 0)))  # (B, F, U)
    bt = torch.from_numpy(np.ascontiguousarray(b.T))  # (B, U)
    z = torch.baddbmm(bt[:, None, :], x, wt)  # (B, P, U)
    fire = (z > 0).numpy().transpose(2, 0, 1)  # (U, B, P)
    return np.moveaxis(pack_bits(fire), 1, 2)  # (U, nw, B)


def forward(n: int, block: Block, keep: bool = False):
    """Output tables (nw, B) uint64 of every network of the block; with `keep`, the list of all
    layers' tables [(n, nw, B) inputs, (W, nw, B) …, (1, nw, B)]."""
    B = block.batch
    h = np.ascontiguousarray(np.broadcast_to(input_words(n)[:, :, None], (n, n_words(n), B)))
    hs = [h]
    for li, (w, b) in enumerate(zip(block.weights, block.biases)):
        if not block.ternary:
            h = _float_layer(h, w, b, n)
        elif li == 0 and (lut := first_layer_table(n)) is not None:
            h = _first_layer(n, w, b, lut)
        else:
            h_next = ternary_layer(h, w, b)
            if not keep:
                _put(h)
            h = h_next
        hs.append(h)
    return hs if keep else h[0]


def solutions(n: int, block: Block, table_words: np.ndarray) -> np.ndarray:
    """bool (B,): does the network's output table equal the target's (`table_words` (nw,))?"""
    out = forward(n, block)  # (nw, B)
    diff = (out ^ table_words[:, None]) & valid_mask(n)[:, None]
    if out.base is not None:
        _put(out.base)
    return ~diff.any(axis=0)


def _popcount_ops(N: int) -> tuple[int, list[bool]]:
    """Word operations of `_popcount` on N words, and which planes it leaves non-zero."""
    cols, ops, present, j = [N], 0, [], 0
    while j < len(cols):
        while cols[j] > 1:
            k = 3 if cols[j] >= 3 else 2
            ops += 5 if k == 3 else 2
            cols[j] -= k - 1
            if j + 1 == len(cols):
                cols.append(0)
            cols[j + 1] += 1
        present.append(cols[j] == 1)
        j += 1
    return ops, present


def _ge_ops(present: list[bool], t: int) -> int:
    """Word operations of `_ge_const` (as it runs: None planes cost nothing)."""
    ops, r = 0, False  # r: the running result is a real array (not "all ones")
    for j in range(max(len(present), t.bit_length())):
        p = j < len(present) and present[j]
        if (t >> j) & 1:
            ops += 1 if (p and r) else 0
            r = True
        elif p and r:
            ops += 1
    return ops


def op_count(n: int, W: int, L: int) -> dict:
    """uint64 word operations the ternary evaluator performs per network and table word, by the
    loops above: per weight 2 mask words (act, flip) and 2 for the literal (AND, XOR), per unit
    1 bias word, the carry-save popcount (5 per full adder, 2 per half adder) and the constant
    compare, and 2 per network for the solution test. Layer 1 is a table lookup (one gather per
    unit, not counted as word operations). Not counted: the byte-wide work on the int8 codes
    (`_slot_masks`) and the random draws."""
    dims = [n] + [W] * (L - 1) + [1]
    masks = lit = popc = compare = gathers = 0
    for li, (F, U) in enumerate(itertools.pairwise(dims)):
        if li == 0 and 3 ** (n + 1) * n_words(n) <= LUT_MAX_ENTRIES:
            gathers += U
            continue
        masks += U * (2 * F + 1)
        lit += 2 * F * U
        ops, present = _popcount_ops(F + 1)
        popc += U * ops
        compare += U * _ge_ops(present, (F + 1) // 2 + 1)
    total = masks + lit + popc + compare + 2
    return {
        "masks": masks,
        "literals": lit,
        "popcount": popc,
        "compare": compare,
        "solution_test": 2,
        "total": total,
        "layer1_gathers": gathers,
    }


# ---------------------------------------------------------------------------------------------
# Chunks and worker processes


def run_chunks(
    n: int, dims, table_words: np.ndarray, spec: DrawSpec, seed: int, W: int, L: int, jobs
) -> list[tuple[int, int, int, Block]]:
    """Sample and evaluate the chunks `jobs` [(chunk index, networks)] of cell (seed, W, L):
    per chunk (index, networks, solutions, the solution networks as a Block). Runs in a worker
    process or in-process; the answer depends only on the arguments."""
    out = []
    for c, B in jobs:
        block = sample_block(dims, B, spec, chunk_rng(seed, W, L, c))
        sol = solutions(n, block, table_words)
        out.append((c, B, int(sol.sum()), block.take(np.nonzero(sol)[0])))
    return out


def _init_worker() -> None:
    # one thread per worker process: workers × threads never exceed the cores asked for
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ[var] = "1"
    torch.set_num_threads(1)  # before any torch call: no parallel region of a forked parent may start here


_POOLS: dict = {}


def pool(workers: int):
    """A process pool of `workers` single-threaded workers, kept for reuse. Started by `fork`
    where the platform has it (fast, and works from notebooks, scripts without a main guard and
    stdin; the workers set one torch thread before any torch call, so no OpenMP pool inherited
    from the parent is used), else by `spawn`."""
    ex = _POOLS.get(workers)
    if ex is None:
        method = "fork" if "fork" in mp.get_all_start_methods() else "spawn"
        ex = cf.ProcessPoolExecutor(max_workers=workers, mp_context=mp.get_context(method), initializer=_init_worker)
        _POOLS[workers] = ex
        if len(_POOLS) == 1:
            atexit.register(shutdown_pools)
    return ex


def shutdown_pools() -> None:
    """End the worker processes started by `pool`."""
    while _POOLS:
        _, ex = _POOLS.popitem()
        ex.shutdown(wait=True, cancel_futures=True)
