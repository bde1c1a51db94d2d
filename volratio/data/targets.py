"""Targets: the images networks are trained to draw, by name.

| spec | what |
| --- | --- |
| `picbreeder:skull` (`butterfly`, `apple`) | the genome rendered exactly at any resolution (needs the Picbreeder data) |
| `picbreeder:ghost` (and the other 12 of `picbreeder.EXTRA_NAMES`) | the fork `jagilley/fer`'s layered network rendered exactly at any resolution — these have no genome (downloaded on first use) |
| `image:NAME` | an image bundled with scikit-image (astronaut, camera, coffee, chelsea, rocket, …), centre-cropped to a square |
| `file:PATH` | your own PNG/JPEG (greyscale or RGB), centre-cropped to a square |
| `scene:A+B[+C…]` | two or more targets side by side in one frame, on black |
| `planted:SEED[:depth=4,width=4,arity=2,primitives=P]` | a random sparse compositional CPPN DAG made by the library, with known depth L*, minimal width W_min, local arity k and ground-truth primitive feature maps |

Every target has `.image(res) -> (res, res, 3)` float in [0, 1] and `.head`, the output head a
network should use for it. Chapters: all of them; "Compositional sparsity" and "The volume-ratio
argument" use the planted targets' ground truth.
"""

from __future__ import annotations

import functools
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import skimage
import torch
from PIL import Image, UnidentifiedImageError

from ..errors import ImageError, VolratioError
from ..nets import coords
from ..util import budget
from .graph import Graph, Node
from .picbreeder import ALL_NAMES, EXTRA_NAMES, NAMES, available, extra_available, fer_network, genome, has_genome

# scikit-image's bundled colour/grey photographs that make sensible targets
SKIMAGE_NAMES = (
    "astronaut",
    "camera",
    "coffee",
    "chelsea",
    "rocket",
    "moon",
    "coins",
    "text",
    "page",
    "clock",
    "immunohistochemistry",
    "hubble_deep_field",
    "retina",
    "brick",
    "grass",
    "gravel",
)


KINDS = ("picbreeder", "image", "file", "scene", "planted")  # target spec prefixes


class TargetError(VolratioError, ValueError):
    """An unknown or malformed target spec."""


# ---------------------------------------------------------------------------------------------
# Image checks shared by every target and by training


def check_image(img, what: str = "image") -> torch.Tensor:
    """Return `img` as a float `(H, W, 3)` tensor in [0, 1], or raise `ImageError` saying what is
    wrong: not 3-D, not 3 channels, not square, NaN/Inf, values outside [0, 1]."""
    t = torch.as_tensor(img)
    if t.dim() != 3 or t.shape[-1] != 3:
        raise ImageError(
            f"{what} has shape {tuple(t.shape)}; expected (H, W, 3) RGB — convert greyscale with "
            "img[..., None].repeat(3, -1) and drop alpha channels"
        )
    if t.shape[0] != t.shape[1]:
        raise ImageError(f"{what} is {t.shape[0]}×{t.shape[1]}; coordinate networks draw square images — crop it")
    if not torch.is_floating_point(t):
        raise ImageError(f"{what} has dtype {t.dtype}; expected floats in [0, 1] (divide uint8 images by 255)")
    if not torch.isfinite(t).all():
        raise ImageError(f"{what} contains NaN or Inf")
    if t.min() < 0 or t.max() > 1:
        raise ImageError(f"{what} has values in [{t.min():.3g}, {t.max():.3g}]; expected [0, 1]")
    return t


def _square_resize(arr: np.ndarray, res: int) -> torch.Tensor:
    """Centre-crop an (H, W) or (H, W, C) array to a square, resize to res×res, return RGB float."""
    budget.check(int(res) ** 2 * 3 * 8 * 3, f"an image target at {res}×{res}", "lower the resolution")
    h, w = arr.shape[:2]
    s = min(h, w)
    arr = arr[(h - s) // 2 : (h - s) // 2 + s, (w - s) // 2 : (w - s) // 2 + s]  # crop first: less to convert
    if arr.ndim == 3:
        arr = arr[..., :3]
    if arr.dtype == np.bool_:
        arr = arr.astype(np.float64)
    elif np.issubdtype(arr.dtype, np.integer):
        arr = arr.astype(np.float64) / float(np.iinfo(arr.dtype).max)
    else:
        arr = arr.astype(np.float64)
    if arr.ndim == 2:
        arr = np.repeat(arr[..., None], 3, axis=-1)
    out = skimage.transform.resize(arr, (res, res), order=1, anti_aliasing=s > res, mode="reflect")
    return torch.from_numpy(np.clip(out, 0.0, 1.0).astype(np.float32))


# ---------------------------------------------------------------------------------------------
# Target kinds


@dataclass(frozen=True)
class PicbreederTarget:
    """One of the sixteen Picbreeder images. Skull, butterfly and apple are drawn by their genome
    (the NEAT graph evaluated directly); the thirteen of the fork `jagilley/fer` have no genome and
    are drawn by the fork's layered network, in float64 (both match `img.png` to 8-bit rounding)."""

    name: str
    head: str = "hsv"
    kind: str = "picbreeder"

    @property
    def spec(self) -> str:
        return f"picbreeder:{self.name}"

    def image(self, res: int = 64) -> torch.Tensor:
        if has_genome(self.name):
            return genome(self.name).render(res).float()
        return fer_network(self.name, "layered", dtype=torch.float64).render(res)[0].float()


@dataclass(frozen=True)
class SkimageTarget:
    name: str
    head: str = "rgb"
    kind: str = "image"

    @property
    def spec(self) -> str:
        return f"image:{self.name}"

    def image(self, res: int = 64) -> torch.Tensor:
        return _square_resize(np.asarray(getattr(skimage.data, self.name)()), res)


@dataclass(frozen=True)
class FileTarget:
    path: str
    head: str = "rgb"
    kind: str = "file"

    @property
    def spec(self) -> str:
        return f"file:{self.path}"

    def image(self, res: int = 64) -> torch.Tensor:
        p = Path(self.path)
        if not p.is_file():
            raise ImageError(f"{p}: no such image file")
        try:
            with warnings.catch_warnings():
                # Pillow warns above 89 M pixels; the memory budget (checked from the header) decides
                warnings.simplefilter("ignore", Image.DecompressionBombWarning)
                with Image.open(p) as im:  # reads the header only: size and mode are known before decoding
                    _check_image_file(p, im.size, len(im.getbands()), res)
                    arr = _decode(p, im)
        except VolratioError:
            raise
        except UnidentifiedImageError as e:
            raise ImageError(f"{p}: not an image Pillow can read; give a PNG or JPEG file") from e
        except Image.DecompressionBombError as e:
            raise ImageError(f"{p}: {e}; give a smaller image (downscale it first)") from e
        except (OSError, SyntaxError, ValueError) as e:  # truncated or corrupt data found while decoding
            raise ImageError(f"{p}: the image data is damaged ({e}); re-save or re-download it") from e
        return _square_resize(arr, res)


def _decode(p: Path, im) -> np.ndarray:
    """Pixels of an open Pillow image as uint8 `(H, W)` or `(H, W, 3)`."""
    mode = im.mode
    if mode in ("L", "RGB"):
        return np.asarray(im)
    if mode == "P":
        return np.asarray(im.convert("RGB"))
    if mode == "RGBA":
        a = np.asarray(im)
        if (a[..., 3] != 255).any():
            raise ImageError(f"{p}: image has transparent pixels (mode RGBA); flatten it onto a background first")
        return a[..., :3]
    raise ImageError(f"{p}: image mode {mode!r} is not supported; save it as 8-bit greyscale or RGB")


MIN_IMAGE_SIDE = 8  # pixels: a file image narrower than this cannot show a target
MAX_ASPECT = 4.0  # a centre crop of a wider image would drop more than 3/4 of it


def _check_image_file(p: Path, size: tuple[int, int], bands: int, res: int) -> None:
    """Refuse, before decoding, an image that is too large for the memory budget (a decompression
    bomb declares a huge size in a small file), too small, or so elongated that the square centre
    crop would silently drop most of it."""
    w, h = size
    budget.check(budget.image_bytes(w, h, bands), f"{p}: decoding a {w}×{h} image", "downscale the image first")
    if min(w, h) < MIN_IMAGE_SIDE:
        raise ImageError(f"{p}: the image is {w}×{h} pixels; give one at least {MIN_IMAGE_SIDE} pixels on each side")
    if max(w, h) > MAX_ASPECT * min(w, h):
        s = min(w, h)
        raise ImageError(
            f"{p}: the image is {w}×{h}; its square centre crop ({s}×{s}) would drop {1 - s / max(w, h):.0%} of it — "
            "crop it to the square part you want first"
        )


@dataclass(frozen=True)
class SceneTarget:
    parts: tuple
    head: str = "rgb"
    kind: str = "scene"

    @property
    def spec(self) -> str:
        return "scene:" + "+".join(p.spec for p in self.parts)

    def image(self, res: int = 64) -> torch.Tensor:
        """Parts side by side, each drawn at `res // n`, vertically centred on a black frame."""
        n = len(self.parts)
        cell = res // n
        if cell < 2:
            raise TargetError(f"scene of {n} parts needs a resolution of at least {2 * n}, got {res}")
        frame = torch.zeros(res, res, 3)
        top = (res - cell) // 2
        for i, p in enumerate(self.parts):
            left = i * cell + (res - n * cell) // 2
            frame[top : top + cell, left : left + cell] = p.image(cell)
        return frame


@dataclass(frozen=True)
class PlantedTarget:
    """A random sparse compositional CPPN DAG with known structure.

    Built top-down: one output node at layer `depth`; each node at layer l+1 reads `arity` distinct
    nodes of layer l (layer 0 = the inputs x, y, d, bias), and every node of layer l is read by at
    least one node above, so every node is a primitive the output depends on. Layer sizes are
    `min(width, arity · size above)` unless `primitives` fixes the total number of nodes. Links only
    join adjacent layers, so the layerized network needs no caches: its depth is exactly `depth`
    (L*) and its width exactly the largest layer (W_min). Unit j of a layer uses activation
    `activations[j % len(activations)]`; weights have magnitude U(0.5, 1.5) and a random sign. Draws
    whose image is flat or noise-like are redrawn (see `_planted_graph`).
    """

    seed: int
    depth: int = 4  # L*: hidden layers, the output node included
    width: int = 4  # cap on nodes per layer (W_min is the largest layer actually made)
    arity: int = 2  # k: inputs per node
    primitives: int | None = None  # total hidden nodes; None = as many as width and arity allow
    activations: tuple = ("gaussian", "sin", "sigmoid")
    head: str = "grey"
    kind: str = "planted"

    def __post_init__(self):
        if not 0 <= int(self.seed) < 2**63:
            raise TargetError(f"planted target: the seed must be an integer in [0, 2^63), got {self.seed}")
        for name in ("depth", "width", "arity"):
            v, hi = int(getattr(self, name)), PLANTED_MAX[name]
            if not 1 <= v <= hi:
                raise TargetError(
                    f"planted target: {name} must be an integer in [1, {hi}], got {getattr(self, name)} "
                    f"(planted DAGs are small by design: deeper or wider ones draw flat images)"
                )
        if self.primitives is not None and int(self.primitives) < 1:
            raise TargetError(f"planted target: primitives must be ≥ 1, got {self.primitives}")

    @property
    def spec(self) -> str:
        s = f"planted:{self.seed}:depth={self.depth},width={self.width},arity={self.arity}"
        return s + (f",primitives={self.primitives}" if self.primitives is not None else "")

    @functools.cached_property
    def graph(self) -> Graph:
        return _planted_graph(self)

    @property
    def w_min(self) -> int:
        return self.graph.meta["w_min"]

    def image(self, res: int = 64) -> torch.Tensor:
        _check_graph_budget(self, res)
        return self.graph.render(res).float()

    def primitive_maps(self, res: int = 64) -> dict[str, torch.Tensor]:
        """Ground-truth feature map `(res, res)` of every primitive (hidden node, output included)."""
        _check_graph_budget(self, res)
        vals = self.graph.evaluate(coords(res, dtype=torch.float64))
        return {k: vals[k].reshape(res, res).float() for k, n in self.graph.nodes.items() if n.kind != "in"}

    def layer_sizes(self) -> list[int]:
        return list(self.graph.meta["layer_sizes"])


PLANTED_MAX = {"depth": 64, "width": 256, "arity": 16}  # bounds of planted:SEED:… options


def _check_graph_budget(t: PlantedTarget, res: int) -> None:
    nodes = t.depth * t.width if t.primitives is None else int(t.primitives)
    budget.check(
        budget.graph_render_bytes(int(res) ** 2, nodes + 4), f"drawing {t.spec} at {res}×{res}", "lower the resolution"
    )


def _planted_layer_sizes(t: PlantedTarget, rng: np.random.Generator) -> list[int]:
    L, W, k = t.depth, t.width, t.arity
    cap = [0] * (L + 1)  # cap[l] for l = 1..L; the output layer has one node
    sizes = [0] * (L + 1)
    sizes[L] = 1
    for l in range(L - 1, 0, -1):
        cap[l] = min(W, k * sizes[l + 1]) if t.primitives is None else W
        sizes[l] = cap[l]
    if t.primitives is None:
        return sizes[1:]
    P = int(t.primitives)
    sizes = [0] + [1] * L
    if P < L:
        raise TargetError(f"planted target: primitives={P} is fewer than depth={L} (one node per layer at least)")
    for _ in range(P - L):
        # a layer can grow while it stays ≤ width and coverable by the layer above (size·arity)
        ok = [l for l in range(1, L) if sizes[l] < W and sizes[l] < k * sizes[l + 1]]
        if not ok:
            raise TargetError(
                f"planted target: primitives={P} does not fit depth={L}, width={W}, arity={k} "
                f"(at most {sum(min(W, k ** (L - l)) for l in range(1, L)) + 1})"
            )
        sizes[int(rng.choice(ok))] += 1
    return sizes[1:]


def _planted_graph(t: PlantedTarget) -> Graph:
    """Draw DAGs from the seed's stream until one draws a picture: not flat (pixel std ≥ 0.1) and
    not noise-like (mean neighbour difference ≤ 0.15 at 48×48). Deterministic in the seed."""
    for attempt in range(100):
        g = _draw_planted_graph(t, np.random.default_rng([int(t.seed), 7919, attempt]))
        img = g.render(48)[..., 0]
        roughness = 0.5 * ((img[1:] - img[:-1]).abs().mean() + (img[:, 1:] - img[:, :-1]).abs().mean())
        if img.std() >= 0.1 and roughness <= 0.15:
            g.meta["attempt"] = attempt
            return g
    raise TargetError(f"{t.spec}: no drawable DAG in 100 draws; try another seed or a smaller depth")


def _draw_planted_graph(t: PlantedTarget, rng: np.random.Generator) -> Graph:
    L, k = t.depth, t.arity
    sizes = _planted_layer_sizes(t, rng)  # sizes[l-1] = nodes in layer l
    nodes: dict[str, Node] = {}
    for label in ("x", "y", "d", "bias"):
        nodes[label] = Node(label, "in", "identity", label)
    layers: list[list[str]] = [["x", "y", "d", "bias"]]
    for l in range(1, L + 1):
        keys = []
        for j in range(sizes[l - 1]):
            key = "out" if l == L else f"p{l}_{j}"
            act = t.activations[j % len(t.activations)]
            nodes[key] = Node(key, "out" if l == L else "hidden", act, "ink" if l == L else None)
            keys.append(key)
        layers.append(keys)
    links = []
    for l in range(1, L + 1):
        below, here = layers[l - 1], layers[l]
        parents: list[set[int]] = [set() for _ in here]
        if l > 1:  # every node below must be read by someone (inputs need not be)
            order = rng.permutation(len(below))
            for i, b in enumerate(order):
                parents[i % len(here)].add(int(b))
        for p in parents:
            want = min(k, len(below))
            while len(p) < want:
                p.add(int(rng.integers(len(below))))
        for j, p in enumerate(parents):
            for b in sorted(p):
                w = float(rng.uniform(0.5, 1.5) * rng.choice([-1.0, 1.0]))
                links.append((below[b], here[j], w))
    meta = {"layer_sizes": sizes, "w_min": max(sizes), "depth": L, "arity": k}
    return Graph(nodes, links, name=t.spec, meta=meta)


# ---------------------------------------------------------------------------------------------
# Registry


def get_target(spec: str):
    """Parse a target spec (see the module docstring) into a target object."""
    if not isinstance(spec, str) or ":" not in spec:
        raise TargetError(
            f"target {spec!r} must look like KIND:NAME — e.g. picbreeder:skull, image:camera, "
            "scene:picbreeder:skull+image:coffee, planted:3, file:my.png (see `volratio targets`)"
        )
    kind, _, rest = spec.partition(":")
    if kind == "picbreeder":
        if rest not in ALL_NAMES:
            raise TargetError(f"unknown Picbreeder target {rest!r}; known: {', '.join(ALL_NAMES)}")
        return PicbreederTarget(rest)
    if kind == "image":
        if rest not in SKIMAGE_NAMES:
            raise TargetError(f"unknown image {rest!r}; scikit-image bundles: {', '.join(SKIMAGE_NAMES)}")
        return SkimageTarget(rest)
    if kind == "file":
        return FileTarget(rest)
    if kind == "scene":
        parts = [p for p in rest.split("+") if p]
        if len(parts) < 2:
            raise TargetError(
                f"scene {spec!r} needs at least two parts joined by '+', e.g. scene:picbreeder:skull+picbreeder:apple"
            )
        resolved = []
        for p in parts:
            if p.startswith("scene:"):
                raise TargetError(f"scene {spec!r}: scenes cannot be nested")
            resolved.append(get_target(p))
        return SceneTarget(tuple(resolved))
    if kind == "planted":
        seed_s, _, opts = rest.partition(":")
        try:
            seed = int(seed_s)
        except ValueError:
            raise TargetError(
                f"planted target {spec!r}: the seed must be an integer (planted:SEED[:depth=…,width=…])"
            ) from None
        if not 0 <= seed < 2**63:
            raise TargetError(f"planted target {spec!r}: the seed must be an integer in [0, 2^63), e.g. planted:3")
        kw = {}
        for item in filter(None, (o.strip() for o in opts.split(","))):
            key, _, val = item.partition("=")
            if key not in ("depth", "width", "arity", "primitives") or not val.strip().lstrip("-").isdigit():
                raise TargetError(
                    f"planted target {spec!r}: option {item!r} is not one of depth=, width=, arity=, primitives= with an integer"
                )
            kw[key] = int(val)
        return PlantedTarget(seed, **kw)
    raise TargetError(f"unknown target kind {kind!r} in {spec!r}; kinds: picbreeder, image, file, scene, planted")


GENOME_SOURCE = "genome (akarshkumar0101/fer)"  # what draws a Picbreeder target, as `list_targets` says it
LAYERED_SOURCE = "layered network of jagilley/fer (no genome)"


def list_targets() -> list[dict]:
    """Every named target with its kind, whether it is available here, and (Picbreeder targets)
    `source`: whether its genome draws it or, for the fork's thirteen, the fork's layered network."""
    have, extra = available(), extra_available()
    rows = [
        {"spec": f"picbreeder:{n}", "kind": "picbreeder", "available": have, "source": GENOME_SOURCE} for n in NAMES
    ]
    rows += [
        {"spec": f"picbreeder:{n}", "kind": "picbreeder", "available": extra, "source": LAYERED_SOURCE}
        for n in EXTRA_NAMES
    ]
    rows += [{"spec": f"image:{n}", "kind": "image", "available": True} for n in SKIMAGE_NAMES]
    rows += [{"spec": "planted:SEED[:depth=…,width=…,arity=…,primitives=…]", "kind": "planted", "available": True}]
    rows += [{"spec": "scene:A+B[+…]", "kind": "scene", "available": True}]
    rows += [{"spec": "file:PATH", "kind": "file", "available": True}]
    return rows
