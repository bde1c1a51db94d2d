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
codes: it is looked up in a table built once by the same evaluator (n ≤ 9).

**Speed, numpy only.** Each numpy call costs about a microsecond, and fresh arrays of a megabyte
go back to the system when freed and page-fault when reused (the faults were a quarter of the run
time). So the sampler and the evaluator work in scratch arrays they reuse (`_get`, `_put`), the
uniform draws come from `random_raw` in small pieces, each turned into int8 codes while in cache
(`_codes`), each literal is made just before the adder tree consumes it (`_popcount`: few words
alive), and consecutive ternary chunks are drawn into one block and evaluated together
(`run_chunks`, `EVAL_WORDS`). None of this changes a draw or a table.

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


RAW_PIECE = 1 << 14  # raw outputs per `random_raw` call (128 kB arrays: the allocator reuses them)


def _uniform32(rng: np.random.Generator, shape) -> np.ndarray:
    """`shape` uniform uint32 in a scratch array (`_put` it back): ⌈size/2⌉ raw outputs, low half
    first (an odd size leaves the high half of the last one unused). Drawn in pieces of
    `RAW_PIECE`, which continue the same stream: fresh arrays of a megabyte a draw went back to
    the system and were faulted in again (page faults were a quarter of the run time)."""
    u = _get(tuple(shape), np.uint32)
    flat = u.reshape(-1)
    for a in range(0, flat.size, 2 * RAW_PIECE):
        n = min(2 * RAW_PIECE, flat.size - a)
        flat[a : a + n] = rng.bit_generator.random_raw((n + 1) // 2).view("<u4")[:n]
    return u


_THIRDS = (-(-(2**32) // 3), -(-(2**33) // 3))  # ⌊3u / 2³²⌋ ≥ k iff u ≥ ⌈k·2³²/3⌉


def _codes(rng: np.random.Generator, out: np.ndarray, lo: int, hi: int) -> np.ndarray:
    """One uniform draw of `out.size` uint32 (as `_uniform32`) turned into the codes
    [u ≥ hi] − [u < lo] ∈ {−1, 0, 1}, written into the int8 array `out` (which may be a chunk's
    strided part of a block). Ternary weights under Bernoulli masks are (lo, hi) = (t, 2³² − t),
    and ⌊3u / 2³²⌋ − 1 is (lo, hi) = `_THIRDS`. Piece by piece, each consumed while in cache:
    byte-wide compares, no uint32 array the size of the draw."""
    codes = out if out.flags.c_contiguous else _get(out.shape, np.int8)
    below = _get((2 * RAW_PIECE,), np.bool_)
    flat = codes.reshape(-1)
    for i in range(0, flat.size, 2 * RAW_PIECE):
        n = min(2 * RAW_PIECE, flat.size - i)
        u, c = rng.bit_generator.random_raw((n + 1) // 2).view("<u4")[:n], flat[i : i + n]
        np.greater_equal(u, np.uint32(hi), out=c.view(bool))
        np.less(u, np.uint32(lo), out=below[:n])
        np.subtract(c, below[:n].view(np.int8), out=c)
    if codes is not out:
        out[...] = codes
        _put(codes)
    _put(below)
    return out


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


def sample_block(dims, B: int, cfg: DrawSpec, rng: np.random.Generator, out: Block | None = None, at: int = 0) -> Block:
    """Draw B networks with layer shapes `dims` [(fan_in, fan_out), …] from `rng` (the order of
    draws is the stream contract of the module docstring); with `out`, into its networks
    at … at + B (no new arrays: `run_chunks` draws several chunks into one block)."""
    ternary = cfg.weights == "ternary"
    if out is None:
        dtype = np.int8 if ternary else np.float32
        out = Block(
            [np.empty((fi, fo, B), dtype) for fi, fo in dims], [np.empty((fo, B), dtype) for _, fo in dims], ternary
        )
    for w_out, b_out, (fi, fo) in zip(out.weights, out.biases, dims):
        w_out, b_out, shape = w_out[..., at : at + B], b_out[..., at : at + B], (fi, fo, B)
        if ternary and cfg.masks == "bernoulli":  # −1 if u < t, +1 if u ≥ 2^32 − t, else 0
            t = round(cfg.p / 3.0 * 2**32)  # p ≤ 1: t ≤ 2^32 / 3
            _codes(rng, w_out, t, 2**32 - t)
        else:
            thr = round(cfg.p * 2**32)
            if cfg.masks == "bernoulli" and thr >= 2**32:
                m = np.ones(shape, dtype=bool)  # p = 1: no draw
            else:
                u = _uniform32(rng, shape)
                m = u < thr if cfg.masks == "bernoulli" else _fanin_mask(u, min(cfg.fan_in, fi))
                _put(u)
            if ternary:
                np.multiply(_codes(rng, w_out, *_THIRDS), m.view(np.int8), out=w_out)
            else:
                w = rng.standard_normal(shape, dtype=np.float32) / np.float32(np.sqrt(fi))
                np.multiply(w, m, out=w_out)
        if ternary:
            _codes(rng, b_out, *_THIRDS)
        else:
            b_out[...] = rng.standard_normal((fo, B), dtype=np.float32) / np.float32(np.sqrt(fi))
    return out


# ---------------------------------------------------------------------------------------------
# Ternary layers: bit-sliced popcount and threshold


def _slot_masks(w: np.ndarray, b: np.ndarray):
    """The majority form of a ternary layer (see `ternary_layer`): w (F, U, B), b (U, B) int8 →
    `act` (F + 1, U, B) (non-zero weight; row F unused) and `flip` (F + 1, U, B) (the literal of
    slot i is `(x_i AND act_i) XOR flip_i`; slot F is the bias, whose literal is the constant
    `flip_F`), both 0/1 bytes (uint8) in scratch arrays (`_put` them back)."""
    F, U, B = w.shape
    zero = _get((F + 1, U, B), np.uint8)  # slots contributing 0 (bool as 0/1 bytes)
    np.equal(w, 0, out=zero[:F].view(bool))
    np.equal(b, 0, out=zero[F].view(bool))
    flip = _get((F + 1, U, B), np.uint8)  # literal inverted / bias literal set
    np.less(w, 0, out=flip[:F].view(bool))
    np.greater(b, 0, out=flip[F].view(bool))
    # zero slots are filled alternately with 1 and 0 by their rank; the first gets 1 iff N is even
    parity = _get((U, B), np.uint8)  # the next zero slot gets 1
    parity.fill((F + 1) % 2 == 0)
    fill = _get((U, B), np.uint8)
    for i in range(F + 1):  # (a cumulative sum or XOR along axis 0 is slow in numpy: short inner loops)
        np.bitwise_and(zero[i], parity, out=fill)
        np.bitwise_or(flip[i], fill, out=flip[i])
        np.bitwise_xor(parity, zero[i], out=parity)
    _put(parity, fill)
    np.bitwise_xor(zero, 1, out=zero)  # now: active
    return zero, flip


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
    act8, flip8 = act.view(np.int8), flip.view(np.int8)  # 0/1 as int8: −1 after negation

    def literals():  # made one at a time, as `_popcount` consumes them
        mask = _get((U, 1, B))
        for i in range(F):
            lit = _get((U, nw, B))
            _word_mask(act8[i], mask)
            np.bitwise_and(h[i][None], mask, out=lit)  # x_i where w_i ≠ 0
            _word_mask(flip8[i], mask)
            np.bitwise_xor(lit, mask, out=lit)
            yield lit
        lit = _get((U, nw, B))  # the bias slot: a constant word
        _word_mask(flip8[F], lit)
        _put(mask, act, flip)
        yield lit

    planes = _popcount(literals())
    out = _ge_const(planes, (F + 1) // 2 + 1)
    _put(*[p for p in planes if p is not out])
    return out


def _word_mask(b8: np.ndarray, out: np.ndarray) -> None:
    """0/1 bytes (U, B) → words of all zeros / all ones in `out` (U, nw, B): −1 as int8 cast to
    uint64 is all ones (a widening cast, cheaper than a multiply by the all-ones word)."""
    np.negative(b8[:, None, :], out=out, casting="unsafe")


# Scratch arrays: the temporaries of the sampler and the evaluator are reused instead of allocated
# per operation (fresh arrays of a few hundred kB cost page faults and cache misses that outweigh
# the operation). At most FREE_MAX_BYTES are kept: past that, the old shapes (another cell's)
# are dropped.
_FREE: dict[tuple, list[np.ndarray]] = {}
_free_bytes = 0
FREE_MAX_BYTES = 128 << 20


def _get(shape, dtype=np.uint64) -> np.ndarray:
    global _free_bytes
    free = _FREE.get((shape, np.dtype(dtype).char))
    if not free:
        return np.empty(shape, dtype=dtype)
    _free_bytes -= free[-1].nbytes
    return free.pop()


def _put(*arrays) -> None:
    global _free_bytes
    for a in arrays:
        if a.base is None and a.flags.c_contiguous:
            if _free_bytes + a.nbytes > FREE_MAX_BYTES:
                _FREE.clear()
                _free_bytes = 0
            free = _FREE.setdefault((a.shape, a.dtype.char), [])
            if len(free) < 64:
                free.append(a)
                _free_bytes += a.nbytes


def _popcount(lits) -> list[np.ndarray]:
    """Bit-sliced population count of the words in `lits` (an iterable, consumed): planes, least
    significant first. Full adders (5 operations, 3 words → 2) and half adders (2 operations)
    compress each column of equal weight (a Wallace tree), eagerly: a full adder runs as soon as
    a column holds 3 words, so a literal is consumed right after it is made and only a few words
    are alive at a time (they stay in cache). The adders are those of a column-by-column tree:
    a column that receives m words takes ⌊(m − 1)/2⌋ full adders, and a half adder when m is even."""
    cols: list[list[np.ndarray]] = []

    def push(j: int, word: np.ndarray) -> None:
        if j == len(cols):
            cols.append([])
        col = cols[j]
        col.append(word)
        if len(col) == 3:
            a, b, c = col
            carry = _get(a.shape)
            np.bitwise_and(a, b, out=carry)
            np.bitwise_xor(a, b, out=a)
            np.bitwise_and(a, c, out=b)
            np.bitwise_or(carry, b, out=carry)
            np.bitwise_xor(a, c, out=a)
            _put(b, c)
            del col[1:]
            push(j + 1, carry)

    for lit in lits:
        push(0, lit)
    j = 0
    while j < len(cols):  # the columns left with 2 words: half adders (their carries may add columns)
        col = cols[j]
        if len(col) == 2:
            a, b = col
            carry = _get(a.shape)
            np.bitwise_and(a, b, out=carry)
            np.bitwise_xor(a, b, out=a)
            _put(b)
            del col[1:]
            push(j + 1, carry)
        j += 1
    return [col[0] for col in cols]


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


@lru_cache(maxsize=8)
def _first_layer_words(n: int) -> np.ndarray:
    """`first_layer_table(n)` transposed, (nw, 3^(n+1)): one contiguous table per word."""
    return np.ascontiguousarray(first_layer_table(n).T)


def _first_layer(n: int, w: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Layer 1 by table lookup: w (n, U, B) int8, b (U, B) → (U, nw, B) (a scratch array). The
    index Σ_i (w_i + 1)·3^i + (b + 1)·3^n is v = b·3^n + Σ_i w_i·3^i by Horner's rule in int16
    (|v| ≤ (3^(n+1) − 1)/2 < 2^15 for n ≤ 9; narrow arrays are cheap passes) plus the constant
    (3^(n+1) − 1)/2, added while widening to the index type of `np.take`."""
    U, B = b.shape
    v = _get((U, B), np.int16)
    np.copyto(v, b, casting="unsafe")
    for i in reversed(range(n)):
        np.multiply(v, 3, out=v)
        np.add(v, w[i], out=v)
    idx = _get((U, B), np.intp)
    np.add(v, np.intp((3 ** (n + 1) - 1) // 2), out=idx)  # an intp constant: the sum in intp
    words = _first_layer_words(n)
    out = _get((U, len(words), B))
    for k, table in enumerate(words):  # mode "clip": no bounds check (every index is in range)
        np.take(table, idx, mode="clip", out=out[:, k, :])
    _put(v, idx)
    return out


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
    h = _get((n, n_words(n), B))
    h[...] = input_words(n)[:, :, None]
    hs = [h]
    for li, (w, b) in enumerate(zip(block.weights, block.biases)):
        if not block.ternary:
            h_next = _float_layer(h, w, b, n)
        elif li == 0 and first_layer_table(n) is not None:
            h_next = _first_layer(n, w, b)
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


EVAL_WORDS = 1 << 17  # ternary chunks are evaluated together up to this many words per layer array


def run_chunks(
    n: int, dims, table_words: np.ndarray, spec: DrawSpec, seed: int, W: int, L: int, jobs
) -> list[tuple[int, int, int, Block]]:
    """Sample and evaluate the chunks `jobs` [(chunk index, networks)] of cell (seed, W, L):
    per chunk (index, networks, solutions, the solution networks as a Block). Runs in a worker
    process or in-process; the answer depends only on the arguments.

    Each chunk is drawn from its own stream, but consecutive ternary chunks are drawn into one
    scratch block and evaluated together while a layer's table array stays within `EVAL_WORDS`
    words (1 MiB; e.g. 4 chunks of 4096 at W = 8, n ≤ 6): a network's tables do not depend on its
    neighbours, and fewer, larger numpy operations spend less time per call (about 20% of the
    evaluation at W = 8). Gaussian chunks go one at a time (their float layers stay the float
    path's batched matmul on one chunk)."""
    words = max(fo for _, fo in dims) * n_words(n)  # per network, in a layer's table array
    groups, size = [], EVAL_WORDS + 1
    for c, B in jobs:
        if spec.weights != "ternary" or size + B * words > EVAL_WORDS:
            groups.append([])
            size = 0
        groups[-1].append((c, B))
        size += B * words
    out, ternary = [], spec.weights == "ternary"
    dtype = np.int8 if ternary else np.float32
    for group in groups:
        total = sum(B for _, B in group)
        block = Block(
            [_get((fi, fo, total), dtype) for fi, fo in dims], [_get((fo, total), dtype) for _, fo in dims], ternary
        )
        at = 0
        for c, B in group:
            sample_block(dims, B, spec, chunk_rng(seed, W, L, c), out=block, at=at)
            at += B
        sol = solutions(n, block, table_words)
        at = 0
        for c, B in group:
            s = sol[at : at + B]
            out.append((c, B, int(s.sum()), block.take(at + np.nonzero(s)[0])))  # copies
            at += B
        _put(*block.weights, *block.biases)
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
