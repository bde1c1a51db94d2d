"""Write the coursework notebooks `notebooks/*.ipynb` (run: `python tools/make_notebooks.py`).

Each notebook is a list of cells below: markdown, plain code, *task* cells (a `# YOUR CODE HERE`
placeholder the student replaces; metadata `volratio.task`) and *check* cells that call a
`volratio.coursework.check_…` function (metadata `volratio.check`). `SOLUTIONS[notebook][task]`
holds the reference solution of every task cell: `tests/test_coursework.py` substitutes them,
executes every notebook and asserts that every check passes. Notebooks are written without outputs
and with fixed cell ids, so rerunning this script reproduces them byte for byte
(`--check` verifies that the committed files are up to date).

The sizes are small on purpose (each notebook runs in well under a minute on two CPU cores); the
markdown says how to scale up.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "notebooks"

KERNEL = {"display_name": "Python 3", "language": "python", "name": "python3"}


def md(text: str) -> tuple:
    return ("md", text.strip("\n"))


def code(text: str) -> tuple:
    return ("code", text.strip("\n"))


def task(key: str, text: str) -> tuple:
    return ("task", key, text.strip("\n"))


def check(text: str) -> tuple:
    return ("check", text.strip("\n"))


HOW_TO = """
**How to use this notebook.** Run the cells from the top. In every cell marked `# YOUR CODE HERE`
replace the placeholders (`...` or `raise NotImplementedError`) with your code, then run the
*check* cell below it: it recomputes the answer with the `volratio` library and prints
`[PASS] …` or `[FAIL] …` with what is wrong. The checks never raise on a wrong answer; try again
as often as you like.
"""

NOTEBOOKS: dict[str, dict] = {}
SOLUTIONS: dict[str, dict[str, str]] = {}

# ---------------------------------------------------------------------------------------------
# 01 — Picbreeder genomes, layerization and SGD twins

NOTEBOOKS["01_picbreeder_twins"] = dict(title="Picbreeder genomes, layerization and SGD twins", cells=[
    md("""
# 1 · Picbreeder genomes, layerization and SGD twins

Picbreeder images were *evolved*: each is drawn by a small CPPN whose graph grew by mutation
(Kumar, Clune, Lehman and Stanley 2025). To compare such a network with one trained by gradient
descent we first turn the genome's graph into a layered MLP — each node at the layer of its longest
path from the inputs, values needed more than one layer later carried up by `cache` (identity)
units — and then train a dense network of exactly that shape on the same image: its *SGD twin*.
Book chapters: "Picbreeder networks and their SGD twins" and "Compositional sparsity".

This notebook needs the Picbreeder data (`volratio data fetch`, or see `volratio.picbreeder.where()`).
"""),
    md(HOW_TO),
    code("""
import torch
from volratio import coursework, picbreeder
from volratio.nets import CoordMLP
from volratio.targets import get_target
from volratio.train import TrainConfig, train

torch.set_num_threads(1)  # the networks here are tiny: one thread is fastest

print(picbreeder.where())
g = picbreeder.genome("skull")  # a volratio.graph.Graph
print(len(g.nodes), "nodes,", len(g.links), "links; longest path", g.depth(), "links")
"""),
    md("""
## Task 1 — the size of the layered skull

`picbreeder.layerize("skull")` returns a `Layered` object whose `.net` is a `CoordMLP`. How many
hidden layers does it have, how many units per layer, and how many non-zero weights?
(Hint: `net.arch`, `net.depth`, `net.width`, `net.nonzero()`.) Why is the depth not the longest
path of the genome, and why are there more non-zero weights than links?
"""),
    task("layer-sizes", """
lay = picbreeder.layerize("skull")
# YOUR CODE HERE
depth = ...
width = ...
nonzero = ...
"""),
    check('coursework.check_layerized_size("skull", depth, width, nonzero)'),
    md("""
## Task 2 — layerize a graph yourself

Write `layers_of(graph)` returning a dict `{node: layer}`: inputs (nodes with `graph.nodes[k].kind
== "in"`) at layer 0, every other node at 1 + the largest layer among its predecessors
(`graph.predecessors()[k]` is a list of `(source, weight)`). Visit nodes in
`graph.topological_order()`. The check runs your function on planted DAGs and on the skull genome.
"""),
    task("layers", """
def layers_of(graph):
    # YOUR CODE HERE
    raise NotImplementedError
"""),
    check("coursework.check_layers(layers_of)"),
    md("""
## Task 3 — an SGD twin

Build a *dense* `CoordMLP` with the layered skull's architecture (`lay.net.arch`) and head
(`"hsv"`), seed 0, and train it with `train(net, image, TrainConfig(...))` on the skull rendered at
`RES`×`RES` (`get_target("picbreeder:skull").image(RES)`), with Adam, `lr=3e-3` and
`grad_norm=True` (the FER recipe). `STEPS` is small so that this runs in seconds; FER trained
100,000 steps at 256×256 — try more steps and compare the feature maps (`net.features(RES)`) with
those of `lay.net`.
"""),
    code("""
RES, STEPS = 16, 60
image = get_target("picbreeder:skull").image(RES)  # (RES, RES, 3) in [0, 1]
"""),
    task("twin", """
# YOUR CODE HERE
twin = ...
"""),
    check('coursework.check_twin(twin, "skull", res=RES)'),
])
SOLUTIONS["01_picbreeder_twins"] = {
    "layer-sizes": """
lay = picbreeder.layerize("skull")
depth = lay.net.depth
width = lay.net.width
nonzero = lay.net.nonzero()[0]
""",
    "layers": """
def layers_of(graph):
    preds = graph.predecessors()
    layer = {}
    for k in graph.topological_order():
        if graph.nodes[k].kind == "in":
            layer[k] = 0
        else:
            layer[k] = 1 + max((layer[s] for s, _ in preds[k]), default=0)
    return layer
""",
    "twin": """
twin = CoordMLP(lay.net.arch, head="hsv", seed=0)
train(twin, image, TrainConfig(steps=STEPS, lr=3e-3, grad_norm=True, device="cpu"))
""",
}

# ---------------------------------------------------------------------------------------------
# 02 — EMC2-Bench

NOTEBOOKS["02_emc2"] = dict(title="EMC2-Bench: the perturbation score", cells=[
    md("""
# 2 · EMC2-Bench: the perturbation score

For a network θ with non-zero weights nz(θ), a perturbation δ and a judge J,

$$S(\\theta;\\delta) = \\frac{1}{|nz(\\theta)|}\\sum_{w\\in nz(\\theta)} \\mathbf 1\\big[J(\\text{render}(\\theta \\text{ with } w \\leftarrow w+\\delta)) \\text{ keeps the identity}\\big].$$

`volratio.emc2` computes it with an exact, batched engine. Here you compute it the plain way —
copy, perturb, re-render, judge — for a small masked network, and the check compares with the
engine. The judge is structural similarity: the identity is kept when SSIM against the
unperturbed image is at least `THRESHOLD`. Book chapter: "EMC2-Bench".
"""),
    md(HOW_TO),
    code("""
import torch
from volratio import coursework, emc2, judges
from volratio.device import generator
from volratio.nets import CoordMLP

torch.set_num_threads(1)  # the networks here are tiny: one thread is fastest
RES, DELTA, THRESHOLD = 24, 0.5, 0.9
net = CoordMLP("2;gaussian:4", head="grey", seed=1)
g = generator(0)
for i, m in enumerate(net.masks):  # keep ~70% of the weights of every kernel
    net.set_mask(i, (torch.rand(m.shape[1:], generator=g) < 0.7).to(m.dtype))
params = emc2.nonzero_params(net)  # (N, 3): (kernel, row, col) of every non-zero weight
print(net.arch, "—", len(params), "non-zero of", net.n_params(), "weights")
"""),
    md("""
## Task 1 — one perturbed image

Take `param = tuple(params[5])`. Make a copy of the network (`net.select(0)`), add `DELTA` to that
weight (`copy.weights[kernel][0, row, col]`, inside `torch.no_grad()`), and render it:
`image = copy.render(RES)[0]`, shape `(RES, RES, 3)`.
"""),
    task("image", """
param = tuple(int(v) for v in params[5])
# YOUR CODE HERE
image = ...
"""),
    check("coursework.check_perturbed_image(image, net, param, DELTA, RES)"),
    md("""
## Task 2 — the score at one δ

Loop over all non-zero weights, render each perturbed network, and count the images whose SSIM
against `reference = net.render(RES)[0]` is at least `THRESHOLD` (`judges.ssim(images, reference)`
takes a batch `(B, RES, RES, 3)`). `score` is that count divided by the number of non-zero weights.
Then compare with `emc2.score(net, judges.SSIMJudge(reference, THRESHOLD), "target",
emc2.EMC2Config(deltas=(-DELTA, DELTA), res=RES))` — and with the δ-curve over several δ.
"""),
    task("score", """
reference = net.render(RES)[0]
# YOUR CODE HERE
score = ...
"""),
    check("coursework.check_perturbation_score(score, net, DELTA, RES, THRESHOLD)"),
])
SOLUTIONS["02_emc2"] = {
    "image": """
param = tuple(int(v) for v in params[5])
copy = net.select(0)
with torch.no_grad():
    copy.weights[param[0]][0, param[1], param[2]] += DELTA
    image = copy.render(RES)[0]
""",
    "score": """
reference = net.render(RES)[0]
kept = 0
for i, r, c in params.tolist():
    copy = net.select(0)
    with torch.no_grad():
        copy.weights[i][0, r, c] += DELTA
        img = copy.render(RES)
    kept += int(judges.ssim(img, reference)[0] >= THRESHOLD)
score = kept / len(params)
""",
}

# ---------------------------------------------------------------------------------------------
# 03 — Connectivity: similarity-based pruning

NOTEBOOKS["03_pruning"] = dict(title="Connectivity: similarity-based pruning", cells=[
    md("""
# 3 · Connectivity: similarity-based pruning (SP)

SP removes *redundant* units: in every hidden layer it compares the feature maps of the units (their
activations over the pixel grid) by cosine similarity, and for each pair above a threshold τ it
removes one of the two — incoming and outgoing weights masked — then retrains. The claim under test
is that *which* connections remain matters, not how many. Book chapter: "Connectivity: which
connections remain"; library: `volratio.prune`.
"""),
    md(HOW_TO),
    code("""
import numpy as np
import torch
from volratio import coursework
from volratio.nets import CoordMLP
from volratio.prune import SPConfig, prune
from volratio.targets import get_target
from volratio.train import TrainConfig, train

torch.set_num_threads(1)  # the networks here are tiny: one thread is fastest
RES, LAYER, TAU = 24, 0, 0.85
target = get_target("planted:3:depth=3")
image = target.image(RES)
net = CoordMLP("3;gaussian:8", head=target.head, seed=0)
train(net, image, TrainConfig(steps=60, lr=1e-2, device="cpu"))
with torch.no_grad():
    maps = net.features(RES)[LAYER][0].reshape(RES * RES, -1)  # (pixels, units) of hidden layer LAYER
print(net.arch, "— feature maps of layer", LAYER, tuple(maps.shape))
"""),
    md("""
## Task 1 — cosine similarity of units

Compute the `(8, 8)` matrix `S[i, j]` = cosine similarity of the maps of units i and j (columns of
`maps`): divide each column by its norm, then take inner products. Do not subtract means.
"""),
    task("similarity", """
# YOUR CODE HERE
S = ...
"""),
    check("coursework.check_similarity(S, net, LAYER, res=RES)"),
    md("""
## Task 2 — redundant pairs

List the pairs `(i, j)`, `i < j`, with `S[i, j] > TAU`.
"""),
    task("pairs", """
# YOUR CODE HERE
pairs = ...
"""),
    check("coursework.check_redundant_pairs(pairs, net, LAYER, TAU, res=RES)"),
    md("""
## Task 3 — remove a unit

Remove unit `UNIT` of hidden layer `LAYER` the SP way: mask its incoming weights (column `UNIT` of
`net.masks[LAYER]`, shape `(K, fan_in, fan_out)`) and its outgoing weights (row `UNIT` of
`net.masks[LAYER + 1]`), using `net.set_mask(i, new_mask)` (which also zeroes the weights).
"""),
    code("""
UNIT = 4  # the unit to remove (SP would pick one unit of each redundant pair at random)
"""),
    task("remove", """
# YOUR CODE HERE
"""),
    check("coursework.check_unit_removed(net, LAYER, UNIT)"),
    md("""
## Task 4 — SP itself, and its sparsity

Run SP on a fresh copy of the trained network with
`prune(sp_net, image, "sp", SPConfig.quick(tau=TAU, rounds=2, retrain_steps=20))` and compute the
weight sparsity of the result: the fraction of *all* weights that are masked (`sp_net.masks`).
Compare it with `result.summary()` and with the sparsity that magnitude pruning needs to reach the
same loss.
"""),
    task("sparsity", """
sp_net = net.select(0)
# YOUR CODE HERE
sparsity = ...
"""),
    check("coursework.check_sparsity(sparsity, sp_net)"),
])
SOLUTIONS["03_pruning"] = {
    "similarity": """
U = maps.double() / maps.double().norm(dim=0, keepdim=True)
S = (U.T @ U).numpy()
""",
    "pairs": """
n = S.shape[0]
pairs = [(i, j) for i in range(n) for j in range(i + 1, n) if S[i, j] > TAU]
""",
    "remove": """
m_in = net.masks[LAYER].clone()
m_in[:, :, UNIT] = 0
net.set_mask(LAYER, m_in)
m_out = net.masks[LAYER + 1].clone()
m_out[:, UNIT, :] = 0
net.set_mask(LAYER + 1, m_out)
""",
    "sparsity": """
sp_net = net.select(0)
result = prune(sp_net, image, "sp", SPConfig.quick(tau=TAU, rounds=2, retrain_steps=20))
masked = sum(int((m == 0).sum()) for m in sp_net.masks)
total = sum(m.numel() for m in sp_net.masks)
sparsity = masked / total
""",
}

# ---------------------------------------------------------------------------------------------
# 04 — Depth and the PNG-ratio predictor

NOTEBOOKS["04_depth_png"] = dict(title="Depth and the PNG-ratio predictor", cells=[
    md("""
# 4 · Depth and the PNG-ratio predictor

The paper reports that the depth at which compositional solutions appear (the *sweet spot*) grows
linearly with the target's complexity, measured as its PNG compression ratio. Here you compute the
ratio with Pillow yourself, fit the predictor on planted targets whose true depth is known, and
read a sweet spot off a score table. Book chapter: "Depth: a narrow, target-dependent regime";
library: `volratio.depth`.
"""),
    md(HOW_TO),
    code("""
import io

import numpy as np
from PIL import Image
from volratio import coursework, depth
from volratio.targets import get_target
"""),
    md("""
## Task 1 — the PNG ratio

For `get_target("image:camera").image(64)` (float RGB in [0, 1]): quantise to `uint8` with
`floor(clip(x, 0, 1) · 255 + 0.5)`, save as PNG into a `BytesIO` with
`optimize=True, compress_level=9`, and return raw bytes / PNG bytes. (PNG sizes depend on Pillow's
zlib build, so always report the Pillow version with a ratio.)
"""),
    task("png", """
img = get_target("image:camera").image(64).numpy().astype(np.float64)
# YOUR CODE HERE
ratio = ...
"""),
    check('coursework.check_png_ratio(ratio, "image:camera", 64)'),
    md("""
## Task 2 — the predictor on planted targets

Planted targets have a known depth L*. Fit `depth ≈ a + b · ratio` by least squares over the
targets below and report `a`, `b` and R² (e.g. with `scipy.stats.linregress` or `np.polyfit`).
Is the ratio a good predictor of depth here?
"""),
    code("""
specs = depth.planted_specs(depths=(2, 3, 4, 5), per_depth=2)
ratios = [depth.png_ratio(s, 64).ratio for s in specs]
depths = [get_target(s).depth for s in specs]
for s, r, d in zip(specs, ratios, depths):
    print(f"{s:28s} ratio {r:6.3f}  L* = {d}")
"""),
    task("fit", """
# YOUR CODE HERE
a, b, r2 = ..., ..., ...
"""),
    check("coursework.check_depth_fit(a, b, r2, ratios, depths)"),
    md("""
## Task 3 — the sweet spot

The table below holds *illustrative* compositional scores (made-up numbers, seeded; rows = depths,
columns = seeds) of the kind `volratio.depth.depth_sweep` produces. The sweet spot is the depth
with the highest *mean* score over seeds; when several depths tie, the shallowest one.
"""),
    code("""
DEPTHS = [2, 3, 4, 5, 6, 7]
rng = np.random.default_rng(0)
scores = np.clip(0.6 - 0.08 * (np.array(DEPTHS)[:, None] - 4.4) ** 2 + 0.05 * rng.standard_normal((6, 4)), 0, 1)
print(np.round(scores, 3))
"""),
    task("sweet", """
# YOUR CODE HERE
sweet = ...
"""),
    check("coursework.check_sweet_spot(sweet, DEPTHS, scores)"),
])
SOLUTIONS["04_depth_png"] = {
    "png": """
img = get_target("image:camera").image(64).numpy().astype(np.float64)
u8 = np.floor(np.clip(img, 0, 1) * 255 + 0.5).astype(np.uint8)
buf = io.BytesIO()
Image.fromarray(u8, mode="RGB").save(buf, format="PNG", optimize=True, compress_level=9)
ratio = u8.nbytes / len(buf.getvalue())
""",
    "fit": """
from scipy import stats
fit = stats.linregress(ratios, depths)
a, b, r2 = fit.intercept, fit.slope, fit.rvalue ** 2
""",
    "sweet": """
means = scores.mean(axis=1)
sweet = min(d for d, m in zip(DEPTHS, means) if m >= means.max() - 1e-9)
""",
}

# ---------------------------------------------------------------------------------------------
# 05 — The volume ratio on Boolean targets

NOTEBOOKS["05_volume_ratio"] = dict(title="The volume ratio ρ(W, L) on Boolean targets", cells=[
    md("""
# 5 · The volume ratio ρ(W, L) on Boolean targets

A compositional Boolean target is a DAG of threshold gates on n input bits (±1). A random masked
threshold network of width W and depth L is a *solution* if its truth table equals the target's,
and *compositional* if every unit that matters computes a node of the DAG (or its negation).
ρ(W, L) = P(compositional | solution). Here you compute a truth table, the target's depth and
minimal width, a Monte Carlo estimate of P(solution), and its confidence interval; the checks
compare with exact enumeration. Book chapter: "The volume-ratio argument"; library:
`volratio.boolean`, `volratio.rho`, `volratio.theory`.
"""),
    md(HOW_TO),
    code("""
import numpy as np
import torch
from volratio import coursework
from volratio.boolean import get_boolean_target, input_table

torch.set_num_threads(1)  # the batches here are small: one thread is fastest
t = get_boolean_target("chain:2")
print(t.describe())
X = input_table(t.n)  # (2^n, n) in ±1; row r has x_i = +1 iff bit i of r is set
"""),
    md("""
## Task 1 — a truth table

Evaluate the gates of `t` on all rows of `X` (do not use `t.table`): node `v < n` is input `x_v`;
gate `g = t.gates[j]` is node `n + j` and outputs `+1` if `Σ g.weights[i] · node[g.args[i]] + g.bias
> 0`, else `−1`. The last gate is the root: its column is the truth table.
"""),
    task("table", """
# YOUR CODE HERE
table = ...
"""),
    check('coursework.check_truth_table(table, "chain:2")'),
    md("""
## Task 2 — depth and minimal width

For `tree:2:2` (print its `describe()`): L* is the number of gates on the longest input → root
path; W_min is the width of the narrowest layered threshold network of depth L* (L* − 1 hidden
layers and one output unit, inputs feeding layer 1 only) that holds every gate in a unit, values
needed more than one layer later carried by copy units.
"""),
    task("shape", """
# YOUR CODE HERE
L_star, W_min = ..., ...
"""),
    check('coursework.check_target_shape("tree:2:2", L_star, W_min)'),
    md("""
## Task 3 — Monte Carlo P(solution)

Sample `SAMPLES` random networks for the single AND gate `chain:1` (n = 2) with W = 2, L = 2: each
weight uniform on {−1, 0, +1} and kept with probability `P` (else 0), each bias uniform on
{−1, 0, +1}; a unit outputs +1 when w·x + b > 0, else −1. Batch it: weights `(SAMPLES, fan_in,
fan_out)`, use `torch.baddbmm` or `einsum`, seed a `torch.Generator`. `p_hat` is the fraction whose
output table equals the target's. (The library's `volratio.rho.count` does this at scale.)
"""),
    code("""
SPEC, W, L, SAMPLES, P = "chain:1", 2, 2, 20_000, 0.8
target = get_boolean_target(SPEC)
"""),
    task("mc", """
gen = torch.Generator().manual_seed(0)
# YOUR CODE HERE
p_hat = ...
"""),
    check("coursework.check_p_solution(p_hat, SPEC, W, L, SAMPLES, p=P)"),
    md("""
## Task 4 — ρ with a confidence interval

`volratio.rho.count` samples networks for `chain:2` at (W, L) = (2, 2) and counts the solutions
and, among them, the compositional ones. ρ̂ = k / n with k compositional out of n solutions. Give
the 95% Wilson score interval for it (e.g. `scipy.stats.binomtest(k, n).proportion_ci(0.95,
method="wilson")`). Why is the normal (Wald) interval p̂ ± 1.96·√(p̂(1 − p̂)/n) a bad idea when n
is small or p̂ is near 0 or 1?
"""),
    code("""
from volratio import rho

c = rho.count(get_boolean_target("chain:2"), 2, 2, samples=50_000, seed=0)
k, n = c.compositional, c.solutions
print(f"{c.samples} networks: {n} solutions, {k} compositional; rho_hat = {k / n:.3f}")
"""),
    task("interval", """
# YOUR CODE HERE
lo, hi = ..., ...
"""),
    check("coursework.check_interval(lo, hi, k, n)"),
])
SOLUTIONS["05_volume_ratio"] = {
    "table": """
nodes = [X[:, i].astype(np.int64) for i in range(t.n)]
for g in t.gates:
    z = sum(w * nodes[a] for w, a in zip(g.weights, g.args)) + g.bias
    nodes.append(np.where(z > 0, 1, -1))
table = nodes[-1]
""",
    "shape": """
L_star, W_min = 2, 2
""",
    "mc": """
gen = torch.Generator().manual_seed(0)
x = torch.as_tensor(input_table(target.n), dtype=torch.float32)  # (4, 2)
h = x.expand(SAMPLES, *x.shape)
for fi, fo in [(target.n, W)] + [(W, W)] * (L - 2) + [(W, 1)]:
    w = torch.randint(-1, 2, (SAMPLES, fi, fo), generator=gen).float()
    w = w * (torch.rand(SAMPLES, fi, fo, generator=gen) < P).float()
    b = torch.randint(-1, 2, (SAMPLES, 1, fo), generator=gen).float()
    h = torch.where(torch.baddbmm(b, h, w) > 0, 1.0, -1.0)
solved = (h[..., 0] == torch.as_tensor(target.table, dtype=torch.float32)).all(dim=1)
p_hat = solved.float().mean().item()
""",
    "interval": """
from scipy.stats import binomtest
ci = binomtest(k, n).proportion_ci(0.95, method="wilson")
lo, hi = ci.low, ci.high
""",
}

# ---------------------------------------------------------------------------------------------
# 06 — The Welch bound and frames

NOTEBOOKS["06_welch"] = dict(title="The Welch bound and frames", cells=[
    md("""
# 6 · The Welch bound and frames

For m unit vectors in ℝⁿ, $\\max_{i\\ne j}\\langle v_i, v_j\\rangle^2 \\ge \\frac{m-n}{n(m-1)}$
(Welch 1974): zero — orthogonality possible — iff m ≤ n, met by equiangular tight frames. Features
packed into fewer dimensions than there are features *must* interfere at least this much. Book
chapter: "Feature interference and the Welch bound"; library: `volratio.welch`,
`volratio.superposition`.
"""),
    md(HOW_TO),
    code("""
import numpy as np
import torch
from volratio import coursework, welch
from volratio.superposition import ToyConfig, train_toy

torch.set_num_threads(1)  # the toy model is tiny: one thread is fastest

M, N = 6, 3
"""),
    md("""
## Task 1 — the bound

Compute the k = 1 Welch bound on max ⟨vᵢ, vⱼ⟩² for `M` unit vectors in ℝ^`N`.
"""),
    task("bound", """
# YOUR CODE HERE
bound = ...
"""),
    check("coursework.check_welch_bound(bound, M, N)"),
    md("""
## Task 2 — coherence of a random frame

`V` holds `M` random vectors (rows) in ℝ^`N`. Compute its coherence μ = max over i ≠ j of
|⟨v̂ᵢ, v̂ⱼ⟩| for the *normalised* rows. How far above √bound is it?
"""),
    code("""
V = np.random.default_rng(0).standard_normal((M, N))
"""),
    task("coherence", """
# YOUR CODE HERE
mu = ...
"""),
    check("coursework.check_coherence(mu, V)"),
    md("""
## Task 3 — a frame that meets the bound

Build `M` unit vectors in ℝ^`N` whose largest squared inner product is (within 2%) the least
possible. Six vectors in ℝ³ have a classical answer (think of a regular solid); alternating
projection on the Gram matrix (`welch.alternating_projection`) finds it numerically too.
"""),
    task("frame", """
# YOUR CODE HERE
F = ...
"""),
    check("coursework.check_frame(F, M, N)"),
    md("""
## Task 4 — superposition

Train the toy model of Elhage et al. (2022) — 8 sparse features through a 3-dimensional
bottleneck — and look at instance 0: `res.W[0]` has shape `(m, n) = (3, 8)`, column i is feature
i's direction. Count the features it represents (column norm > 0.5) and the largest squared cosine
between two represented features. Compare with the Welch bound for (r, 3).
"""),
    code("""
res = train_toy(ToyConfig(n_features=8, n_hidden=3, sparsities=(0.9,), steps=400, batch=256, device="cpu"))
W = res.W[0]
"""),
    task("toy", """
# YOUR CODE HERE
r, max_sq = ..., ...
"""),
    check("coursework.check_represented(r, max_sq, W)"),
])
SOLUTIONS["06_welch"] = {
    "bound": """
bound = max(0.0, (M - N) / (N * (M - 1)))
""",
    "coherence": """
U = V / np.linalg.norm(V, axis=1, keepdims=True)
G = np.abs(U @ U.T)
np.fill_diagonal(G, 0)
mu = G.max()
""",
    "frame": """
F = welch.icosahedron_frame()
""",
    "toy": """
norms = np.linalg.norm(W, axis=0)
rep = W[:, norms > 0.5]
U = rep / np.linalg.norm(rep, axis=0)
G = (U.T @ U) ** 2
np.fill_diagonal(G, 0)
r, max_sq = rep.shape[1], G.max()
""",
}

# ---------------------------------------------------------------------------------------------
# 07 — Sweeps

NOTEBOOKS["07_sweeps"] = dict(title="Sweeps: grids of runs that resume", cells=[
    md("""
# 7 · Sweeps: grids of runs that resume

Every experiment of the book is a function `run(config) -> dict`; a *sweep* runs it over a grid of
configs × seeds and stores each result under a hash of its config, so a sweep that is interrupted
and started again runs only what is missing — in-process, on local processes, or on a Dask
cluster. Book chapter: "Rerunning at scale on a cluster"; library: `volratio.sweep`.
"""),
    md(HOW_TO),
    code("""
import tempfile
from volratio import coursework
from volratio.sweep import Sweep, run_sweep

GRID = {"lr": [0.05, 0.2], "n": [8, 16]}
SEEDS = [0, 1]
out = tempfile.mkdtemp(prefix="sweep-")
"""),
    md("""
## Task 1 — run a sweep, twice

Make a `Sweep` of the run function `"volratio.runs:toy"` (least squares in numpy; config `n`,
`steps`, `lr`) over `GRID` and `SEEDS` with `config={"steps": 50}`, run it with
`run_sweep(sweep, out)`, then run it *again*: the second report should say every run was
skipped. Return the second report's `table`. Which learning rate gives the lower mean loss?
"""),
    task("sweep", """
# YOUR CODE HERE
table = ...
"""),
    check("coursework.check_sweep_table(table, GRID, SEEDS)"),
])
SOLUTIONS["07_sweeps"] = {
    "sweep": """
sweep = Sweep(run="volratio.runs:toy", config={"steps": 50}, grid=GRID, seeds=SEEDS)
first = run_sweep(sweep, out, progress=False)
again = run_sweep(sweep, out, progress=False)
print(first.summary())
print(again.summary())
assert again.skipped == first.total
table = again.table
""",
}


# ---------------------------------------------------------------------------------------------


def build(name: str, solutions: dict[str, str] | None = None) -> nbformat.NotebookNode:
    """The notebook `name`; with `solutions`, each task cell holds its solution instead of the placeholder."""
    spec = NOTEBOOKS[name]
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = dict(KERNEL)
    nb.metadata["language_info"] = {"name": "python"}
    nb.metadata["volratio"] = {"generated_by": "tools/make_notebooks.py", "title": spec["title"]}
    for i, cell in enumerate(spec["cells"]):
        kind = cell[0]
        if kind == "md":
            c = nbformat.v4.new_markdown_cell(cell[1])
        elif kind == "code":
            c = nbformat.v4.new_code_cell(cell[1])
        elif kind == "task":
            key, text = cell[1], cell[2]
            src = solutions[key].strip("\n") if solutions is not None else text
            c = nbformat.v4.new_code_cell(src)
            c.metadata["volratio"] = {"task": key}
            c.metadata["tags"] = ["task"]
        elif kind == "check":
            c = nbformat.v4.new_code_cell(cell[1])
            c.metadata["volratio"] = {"check": True}
            c.metadata["tags"] = ["check"]
        else:  # pragma: no cover - a typo in the tables above
            raise ValueError(f"unknown cell kind {kind!r}")
        c.id = f"{name.split('_')[0]}-{i:02d}"  # fixed ids: the files are reproducible
        nb.cells.append(c)
    nbformat.validate(nb)
    return nb


def task_keys(name: str) -> list[str]:
    return [c[1] for c in NOTEBOOKS[name]["cells"] if c[0] == "task"]


def render(name: str) -> str:
    return nbformat.writes(build(name)) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="only verify that notebooks/ is up to date")
    args = ap.parse_args(argv)
    stale = []
    OUT.mkdir(exist_ok=True)
    for name in NOTEBOOKS:
        assert set(task_keys(name)) == set(SOLUTIONS[name]), f"{name}: every task needs a solution"
        path = OUT / f"{name}.ipynb"
        text = render(name)
        if args.check:
            if not path.is_file() or path.read_text() != text:
                stale.append(str(path.relative_to(ROOT)))
        else:
            path.write_text(text)
            print("wrote", path.relative_to(ROOT))
    if stale:
        print("out of date (run python tools/make_notebooks.py):", ", ".join(stale))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
