"""The target-anchored verdict set: images judged "is this a <label>?", on any machine.

The label-anchored EMC2 judge (`volratio.judges.AnchoredJudge`) must say *no* for an
image that does not show the label — a flat grey square, another target's drawing, a network that
never fitted — and *yes* for the label's drawings and for perturbations that keep them. This set
holds the verdicts it is fitted and checked on (`data/judge_reference/anchored/verdicts.csv`), one
row per image, each judged by inspection with the *target image* as the anchor (the protocol of
`data/judge_reference/README.md`, extended in `data/judge_reference/anchored/README.md`).

Groups of networks (`GROUPS`):

- `picbreeder`, `fer-sgd` — the Picbreeder and FER SGD networks (rows shared with the first verdict
  set, `volratio.calibration.reference_verdicts`, same images, same verdicts), and at 32×32 as well;
- `dense`, `sp`, `imp`, `wanda`, `llm-pruner`, `magnitude`, `random`, `random-units` — the
  connectivity study's networks (one per target and method);
- `sp-deep` — SP networks of depth 14 at the depth chapter's reference settings without SP's loss
  guard (as the stored reference runs were pruned): some collapse or never fit;
- `sp-guarded` — the same networks pruned by SP with its default loss guard, which undid every
  round at these settings: dense, fitted networks of depth 14;
- `other-target` — a network of one target asked about another's label;
- `flat` — constant and near-constant images (a network with its last hidden kernel zeroed, or
  scaled down);
- `natural`, `scene` — networks trained on natural images (asked about their own label, and about
  a Picbreeder label) and on two-object scenes.

Every network is stored (`data/judge_reference/anchored/networks/NAME.safetensors`, checked by
SHA-256), so the images regenerate bit for bit on any machine; each row's `source` says how the
network was built (`build_networks` rebuilds them with the library: bit for bit on the CPU kind
that built them, which `networks.json` records).

Chapter: "EMC2-Bench" (book/emc2.md), section "The judge, validated".
"""

from __future__ import annotations

import hashlib
import json
import platform
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from ..data import fer_fork, picbreeder
from ..data.specs import load_network
from ..data.targets import get_target
from ..depth.point import Point, sp_network
from ..emc2 import DEFAULT_DELTAS, nonzero_params, perturbed_images, subsample, target_label
from ..errors import DataNotFoundError, VolratioError
from ..nets import CoordMLP
from ..runs.reference import DEFAULT_ROOT
from ..runs.store import Store
from ..train import TrainConfig, new_network, train
from ..util.fileio import atomic_path
from ..util.presets import configure
from . import reference_verdicts as rv

SET_DIR = rv.DATA_DIR / "anchored"
VERDICTS_CSV = SET_DIR / "verdicts.csv"
NETWORKS_DIR = SET_DIR / "networks"
NETWORKS_JSON = SET_DIR / "networks.json"
TARGETS = rv.TARGETS
OTHER = {"skull": "butterfly", "butterfly": "apple", "apple": "skull"}  # network target -> label asked
NATURAL = ("image:camera", "image:coffee")
SCENE2 = "scene:picbreeder:skull+picbreeder:butterfly"
GROUPS = (
    *(g for g in rv.GROUPS if not g.startswith("scene-")),  # the first set's groups but its scene networks
    "sp-deep",
    "sp-guarded",
    "other-target",
    "flat",
    "natural",
    "scene",
)
DATA_GROUPS = ("picbreeder", "fer-sgd")  # built from the Picbreeder data, never stored


@dataclass
class AnchoredSetConfig:
    res: int = 64  # main image size (as the first set)
    low_res: int = 32  # second image size: Picbreeder, FER SGD and connectivity networks again
    deltas: tuple = DEFAULT_DELTAS  # δ drawn uniformly from these
    n_trained: int = 7  # perturbations per connectivity network (plus its unperturbed image)
    n_deep: int = 5  # per deep SP network
    n_other: int = 5  # per other-target / flat / natural-as-other network
    n_own: int = 8  # per natural-image and scene network asked about its own label
    n_low: int = 5  # per network at low_res
    deep_depth: int = 14  # the depth chapter's reference peak depth
    deep_point: tuple = (  # the depth_picbreeder chunk's settings (results/reference)
        ("members", 5),
        ("width", 12),
        ("res", 64),
        ("steps", 2000),
        ("lr", 3e-3),
        ("sp.rounds", 5),
        ("sp.retrain_steps", 200),
        ("sp.tau", 0.9),
    )
    scene_steps: int = 3000  # Adam steps of the second batch's scene network (depth 6, width 24, 32×32)
    natural_steps: int = 600  # Adam steps of the natural-image and scene networks (depth 6, width 16, 32×32)
    seed: int = 101  # perturbation sampling (the first set used 0) and every training seed

    def to_json(self) -> dict:
        return {**asdict(self), "deltas": [float(d) for d in self.deltas], "deep_point": dict(self.deep_point)}


# ---------------------------------------------------------------------------------------------
# Networks


def _dense(target: str, cfg: AnchoredSetConfig, width: int = 16, steps: int | None = None) -> CoordMLP:
    t = get_target(target)
    net = new_network(t, depth=6, width=width, activation="gaussian", seed=cfg.seed)
    train(net, t.image(32)[None], TrainConfig(steps=steps or cfg.natural_steps, device="cpu", path="eager"))
    return net


def _flattened(net: CoordMLP, scale: float) -> CoordMLP:
    """`net` with its last hidden kernel multiplied by `scale` (0: the image is one colour)."""
    out = net.select([0])
    with torch.no_grad():
        out.weights[-2].mul_(scale)
        if scale == 0:
            out.set_mask(len(out.weights) - 2, torch.zeros_like(out.masks[-2]))
    out.provenance = {"made_by": "anchored_set._flattened", "scale": scale, "of": net.provenance}
    return out


def build_networks(cfg: AnchoredSetConfig | None = None, groups=None) -> dict[str, rv.RefNet]:
    """Every network of the set, trained and built with the library (a few CPU-minutes; the
    deep SP networks dominate). Keys `GROUP:NAME`. Bit for bit on the CPU kind that built the
    stored copies; elsewhere the trained ones differ — use `networks()` to read the stored ones.
    `groups`: build only these groups (default all)."""
    cfg = cfg or AnchoredSetConfig()
    want = set(GROUPS if groups is None else groups)
    torch.set_num_threads(1)
    out: dict[str, rv.RefNet] = {}
    for kind in DATA_GROUPS:
        for t in TARGETS:
            if kind in want:
                out[f"{kind}:{t}"] = rv.RefNet(load_network(f"{kind}:{t}"), 0, f"picbreeder:{t}", t, f"{kind}:{t}")
    conn_groups = [g for g in rv.GROUPS if g not in ("picbreeder", "fer-sgd", "scene-dense", "scene-sp")]
    conn = rv.build_trained(groups=conn_groups) if want & set(conn_groups) else {}
    for name, rn in conn.items():
        out[name] = rv.RefNet(rn.net.select([rn.member]), 0, rn.target, rn.label, rn.source + " (retrained)")
    for group, guard in (("sp-guarded", 2.0), ("sp-deep", None)):
        for t in TARGETS if group in want else ():
            pt = configure(Point(), {**dict(cfg.deep_point), "target": f"picbreeder:{t}", "depth": cfg.deep_depth,
                                     "seed": cfg.seed, "keep_net": True, "sp.loss_factor": guard,
                                     "train_path": "eager" if guard is None else "fast"}, "deep_point")  # fmt: skip
            net = sp_network(pt)[0]
            for k in range(net.population):
                src = f"depth_regime.sp_network({pt}) member {k}"
                out[f"{group}:{t}/{k}"] = rv.RefNet(net.select([k]), 0, f"picbreeder:{t}", t, src)
    for kind in ("picbreeder", "fer-sgd") if "other-target" in want else ():
        for t, o in OTHER.items():
            out[f"other-target:{kind}-{t}-as-{o}"] = rv.RefNet(
                load_network(f"{kind}:{t}"), 0, f"picbreeder:{o}", o, f"{kind}:{t}"
            )
    flat = _flattened(load_network("fer-sgd:skull"), 0.0)
    for t in TARGETS if "flat" in want else ():
        out[f"flat:grey-as-{t}"] = rv.RefNet(flat, 0, f"picbreeder:{t}", t, "fer-sgd:skull, last hidden kernel zeroed")
    for t in TARGETS if "flat" in want else ():
        out[f"flat:faint-{t}"] = rv.RefNet(
            _flattened(load_network(f"fer-sgd:{t}"), 0.05),
            0,
            f"picbreeder:{t}",
            t,
            f"fer-sgd:{t}, last hidden kernel × 0.05",
        )
    for spec in NATURAL if "natural" in want else ():
        net = _dense(spec, cfg)
        lab = spec.split(":")[1]
        src = f"dense depth 6 width 16 gaussian, Adam {cfg.natural_steps} steps on {spec} at 32px, seed {cfg.seed}"
        out[f"natural:{lab}"] = rv.RefNet(net, 0, spec, lab, src)
        o = "skull" if lab == "camera" else "apple"
        out[f"natural:{lab}-as-{o}"] = rv.RefNet(net, 0, f"picbreeder:{o}", o, src)
    if "scene" not in want:
        return out
    src = f"dense depth 6 width 16 gaussian, Adam {cfg.natural_steps} steps on {SCENE2} at 32px, seed {cfg.seed}"
    out["scene:skull+butterfly"] = rv.RefNet(_dense(SCENE2, cfg), 0, SCENE2, target_label(SCENE2), src)
    for spec in (SCENE2, rv.SCENE):
        name = "scene:" + "+".join(x.split(":")[-1] for x in spec.split(":", 1)[1].split("+")) + "/long"
        src = f"dense depth 6 width 24 gaussian, Adam {cfg.scene_steps} steps on {spec} at 32px, seed {cfg.seed}"
        out[name] = rv.RefNet(_dense(spec, cfg, width=24, steps=cfg.scene_steps), 0, spec, target_label(spec), src)
    return out


BATCH_2 = ("sp-deep:", "scene:skull+butterfly/long", "scene:skull+apple/long")  # added after the first pass


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _file(name: str) -> str:
    return name.replace(":", "__").replace("/", "_") + ".safetensors"


def save_networks(nets: dict[str, rv.RefNet], folder: Path | None = None) -> dict:
    """Write every trained network (not the data groups) and `networks.json` (name → file, SHA-256,
    member, target, label, source; the machine that built them)."""
    folder = Path(folder or NETWORKS_DIR)
    folder.mkdir(parents=True, exist_ok=True)
    index_path = folder.parent / NETWORKS_JSON.name
    index = json.loads(index_path.read_text())["networks"] if index_path.exists() else {}  # added to, not replaced
    for name, rn in nets.items():
        entry = {"member": rn.member, "target": rn.target, "label": rn.label, "source": rn.source,
                 "batch": 2 if name.startswith(BATCH_2) else 1}  # fmt: skip
        if rn.source in {f"{k}:{t}" for k in DATA_GROUPS for t in TARGETS}:
            entry["spec"] = rn.source  # rebuilt from the Picbreeder data
        else:
            p = folder / _file(name)
            if not p.exists():
                rn.net.save(p)
            entry["file"], entry["sha256"] = p.name, _sha(p)
        index[name] = entry
    meta = {"machine": {"cpu": platform.processor() or platform.machine(), "torch": torch.__version__}}
    with atomic_path(index_path) as tmp, open(tmp, "w") as f:
        json.dump({"built_on": meta, "networks": index}, f, indent=1, sort_keys=True)
        f.write("\n")
    return index


def networks(groups=None, folder: Path | None = None) -> dict[str, rv.RefNet]:
    """The set's networks, read from the stored files (each checked against its SHA-256) and from
    the Picbreeder data; only those of `groups` when given."""
    folder = Path(folder or NETWORKS_DIR)
    index_path = folder.parent / NETWORKS_JSON.name
    if not index_path.exists():
        raise DataNotFoundError(
            f"{index_path} not found; the anchored verdict set ships in data/judge_reference/anchored/"
        )
    if groups is not None and (unknown := set(groups) - set(GROUPS)):
        raise VolratioError(f"unknown anchored-set groups {sorted(unknown)}; known: {', '.join(GROUPS)}")
    index = json.loads(index_path.read_text())["networks"]
    out, cache = {}, {}
    for name, e in index.items():
        group = name.split(":")[0]
        if groups is not None and group not in groups:
            continue
        if "spec" in e:
            net = cache.setdefault(e["spec"], None) or load_network(e["spec"])
            cache[e["spec"]] = net
        else:
            p = folder / e["file"]
            if not p.exists() or _sha(p) != e["sha256"]:
                raise DataNotFoundError(
                    f"{p}: missing or not the stored network (SHA-256 mismatch); restore it from git"
                )
            net = CoordMLP.load(p)
        out[name] = rv.RefNet(net, int(e["member"]), e["target"], e["label"], e["source"])
        out[name].batch = int(e.get("batch", 1))
    return out


def network_group(name: str) -> str:
    """`sp-deep:skull/3` → `sp-deep`; the first set's names (`picbreeder:skull`) the same way."""
    return name.split(":")[0]


# ---------------------------------------------------------------------------------------------
# Rows


def _count(cfg: AnchoredSetConfig, name: str, res: int) -> int:
    g = network_group(name)
    if res != cfg.res:
        return cfg.n_low
    if g in ("sp-deep", "sp-guarded"):
        return cfg.n_deep
    if g in ("other-target", "flat") or "-as-" in name:
        return cfg.n_other
    if g in ("natural", "scene"):
        return cfg.n_own
    return cfg.n_trained


LOW_RES_GROUPS = ("picbreeder", "fer-sgd", "dense", "sp")  # drawn again at `low_res`


def sample_rows(cfg: AnchoredSetConfig | None = None, nets: dict | None = None):
    """The new images of the set (everything but the rows shared with the first set): per network
    and resolution, its unperturbed image (δ = 0, kernel = row = col = −1), then a seeded sample of
    its non-zero weights with δ drawn from `cfg.deltas`."""
    cfg = cfg or AnchoredSetConfig()
    nets = nets or networks()
    rng = np.random.default_rng(cfg.seed)
    rows = []
    plan = []  # per batch (networks added later come last, so earlier rows are drawn identically)
    for b in sorted({getattr(rn, "batch", 1) for rn in nets.values()}):
        names = sorted(n for n, rn in nets.items() if getattr(rn, "batch", 1) == b)
        plan += [(n, cfg.res) for n in names if network_group(n) not in DATA_GROUPS]
        plan += [(n, cfg.low_res) for n in names if network_group(n) in LOW_RES_GROUPS]
    for i, (name, res) in enumerate(plan):
        rows += _draw(name, nets[name], res, _count(cfg, name, res), cfg, rng, cfg.seed + i)
    return pd.DataFrame(rows)


def _draw(name: str, rn: rv.RefNet, res: int, n: int, cfg: AnchoredSetConfig, rng, seed: int) -> list[dict]:
    """One network's rows: its unperturbed image, then `n` of its non-zero weights (seeded by
    `seed`) each with a δ drawn from `cfg.deltas` by `rng`."""
    network = {"network": name, "group": network_group(name), "member": rn.member, "target": rn.target,
               "label": rn.label}  # fmt: skip
    rows = [{**network, "kernel": -1, "row": -1, "col": -1, "delta": 0.0, "res": res}]
    P = subsample(nonzero_params(rn.net, rn.member), n, seed=seed)
    D = rng.choice(np.asarray(cfg.deltas, float), size=len(P))
    for (k, r, c), d in zip(P.tolist(), D.tolist()):
        rows.append({**network, "kernel": k, "row": r, "col": c, "delta": d, "res": res})
    return rows


# ---------------------------------------------------------------------------------------------
# Held-out rows on new targets: five of the thirteen Picbreeder targets the rule never saw

NEW_TARGETS = ("ghost", "face", "plane", "dolphin", "letter-g")  # recognisable at 64×64, five shapes
NEW_CSV = SET_DIR / "new_targets.csv"  # their verdicts, judged as the set's; never used to fit a rule
NEW_GROUPS = ("new-picbreeder", "new-other-target", "new-faint")


def new_target_networks() -> dict[str, rv.RefNet]:
    """The held-out rows' networks, built from the Picbreeder data (nothing stored): each new
    target's Picbreeder network asked about its own label (`new-picbreeder`), asked about the next
    target's label (`new-other-target`), and with its last hidden kernel × 0.05, a faint ghost of the
    drawing (`new-faint`). Keys `GROUP:NAME`."""
    out = {}
    for i, t in enumerate(NEW_TARGETS):
        net, o = picbreeder.network(t), NEW_TARGETS[(i + 1) % len(NEW_TARGETS)]
        out[f"new-picbreeder:{t}"] = rv.RefNet(net, 0, f"picbreeder:{t}", t, f"picbreeder:{t}")
        out[f"new-other-target:{t}-as-{o}"] = rv.RefNet(net, 0, f"picbreeder:{o}", o, f"picbreeder:{t}")
        faint = _flattened(net, 0.05)
        out[f"new-faint:{t}"] = rv.RefNet(faint, 0, f"picbreeder:{t}", t, f"picbreeder:{t}, last hidden kernel × 0.05")
    return out


def sample_new_rows(cfg: AnchoredSetConfig | None = None, nets: dict | None = None):
    """The held-out rows (`new_target_networks`), drawn as `sample_rows` draws the set's: per
    network its unperturbed image and `n_trained` (own label) or `n_other` (other label, faint)
    perturbed images at `res`, seeded by `cfg.seed` + 1000 (apart from the set's own draws)."""
    cfg = cfg or AnchoredSetConfig()
    nets = nets or new_target_networks()
    rng = np.random.default_rng(cfg.seed + 1000)
    rows = []
    for i, name in enumerate(sorted(nets)):
        n = cfg.n_trained if network_group(name) == "new-picbreeder" else cfg.n_other
        rows += _draw(name, nets[name], cfg.res, n, cfg, rng, cfg.seed + 1000 + i)
    return pd.DataFrame(rows)


# ---------------------------------------------------------------------------------------------
# Rows on the thirteen fork targets: each target's Picbreeder network and its three dense twins

FORK_CSV = SET_DIR / "fork_targets.csv"  # their verdicts, judged as the set's
FORK_GROUPS = ("fork-picbreeder", "fork-twin")
TWINS_CHUNK = "twins16"  # the reference chunk that stores the twins (volratio.experiments.twins)


def fork_networks(root=None) -> dict[str, rv.RefNet]:
    """For each of the fork's thirteen targets (`volratio.data.fer_fork.NAMES`): its Picbreeder
    network (`fork-picbreeder:T`, from the Picbreeder data) and the three dense twins the reference
    chunk `twins16` stores (`fork-twin:T/SEED`, read from its artifacts, each checked against its
    SHA-256 by the store)."""
    store = Store(Path(root or DEFAULT_ROOT) / TWINS_CHUNK)
    out = {}
    for t in fer_fork.NAMES:
        out[f"fork-picbreeder:{t}"] = rv.RefNet(picbreeder.network(t), 0, f"picbreeder:{t}", t, f"picbreeder:{t}")
    for r in sorted(store.records(), key=lambda r: (r["config"]["target"], r["config"]["seed"])):
        c = r["config"]
        if r["status"] == "done" and c["target"] in fer_fork.NAMES and c.get("network") == "twin":
            name = f"fork-twin:{c['target']}/{c['seed']}"
            out[name] = rv.RefNet(store.artifact(r["key"], "net"), 0, f"picbreeder:{c['target']}", c["target"],
                                  f"{TWINS_CHUNK} {r['key']}")  # fmt: skip
    return out


def sample_fork_rows(cfg: AnchoredSetConfig | None = None, nets: dict | None = None, n_picbreeder: int = 7,
                     n_twin: int = 4):  # fmt: skip
    """The fork targets' rows (`fork_networks`): per network its unperturbed image and
    `n_picbreeder` (Picbreeder network) or `n_twin` (twin) perturbed images at `cfg.res`, seeded by
    `cfg.seed` + 2000 (apart from the set's other draws)."""
    cfg = cfg or AnchoredSetConfig()
    nets = nets or fork_networks()
    rng = np.random.default_rng(cfg.seed + 2000)
    rows = []
    for i, name in enumerate(sorted(nets)):
        n = n_picbreeder if network_group(name) == "fork-picbreeder" else n_twin
        rows += _draw(name, nets[name], cfg.res, n, cfg, rng, cfg.seed + 2000 + i)
    return pd.DataFrame(rows)


# ---------------------------------------------------------------------------------------------
# Held-out rows in the sparse regime: the depth chapter's sparse Picbreeder networks at their fit point

SPARSE_CSV = SET_DIR / "sparse_regime.csv"  # their verdicts, judged as the set's; never used to fit a rule
SPARSE_GROUPS = ("sparse-regime",)
SPARSE_CHUNK = "depth_sparse_picbreeder"  # the reference chunk that stores them (volratio.depth.sparse_point)


def sparse_networks(root=None) -> dict[str, rv.RefNet]:
    """The first network of each run of the reference chunk `depth_sparse_picbreeder` — one per
    Picbreeder target and depth, wide networks pruned by unguarded SP and stored at their fit point,
    the networks the depth claims are decided on — read from its artifacts (each checked against its
    SHA-256 by the store). Keys `sparse-regime:TARGET/dDEPTH`."""
    store = Store(Path(root or DEFAULT_ROOT) / SPARSE_CHUNK)
    out = {}
    for r in sorted(store.records(), key=lambda r: (r["config"].get("target", ""), r["config"].get("depth", 0))):
        c = r["config"]
        if r["status"] == "done" and r["run"] == "sparse_depth_point":
            t = c["target"].removeprefix("picbreeder:")
            out[f"sparse-regime:{t}/d{c['depth']}"] = rv.RefNet(store.artifact(r["key"], "net"), 0, c["target"], t,
                                                                f"{SPARSE_CHUNK} {r['key']} member 0")  # fmt: skip
    if not out:
        raise DataNotFoundError(
            f"no sparse_depth_point runs stored in {store.root}: run the reference chunk {SPARSE_CHUNK}"
        )
    return out


def sample_sparse_rows(cfg: AnchoredSetConfig | None = None, nets: dict | None = None, n: int = 4):
    """The sparse regime's rows (`sparse_networks`): per network its unperturbed image and `n`
    perturbed images at `cfg.res`, seeded by `cfg.seed` + 3000 (apart from the set's other draws)."""
    cfg = cfg or AnchoredSetConfig()
    nets = nets or sparse_networks()
    rng = np.random.default_rng(cfg.seed + 3000)
    rows = []
    for i, name in enumerate(sorted(nets)):
        rows += _draw(name, nets[name], cfg.res, n, cfg, rng, cfg.seed + 3000 + i)
    return pd.DataFrame(rows)


def load_new_verdicts():
    """The held-out verdicts on the new targets (`NEW_CSV`, columns as `load_verdicts`)."""
    return load_verdicts(NEW_CSV)


def render(rows, nets: dict) -> list[torch.Tensor]:
    """The images of `rows` (any resolutions mixed), one `(res, res, 3)` float64 tensor per row, in
    row order: the exact engine on CPU in float64, as `reference_verdicts.render_rows` (the same
    numbers); a network with no path to its output is rendered naively (`emc2.perturbed_images`)."""
    rows = rows.reset_index(drop=True)
    out: list = [None] * len(rows)
    for (name, res), part in rows.groupby(["network", "res"], sort=False):
        if name not in nets:
            raise VolratioError(f"row network {name!r} is not in the anchored set's networks")
        rn = nets[name]
        pert = part[part["kernel"] >= 0]
        P = pert[["kernel", "row", "col"]].to_numpy(np.int64)
        base, images = perturbed_images(rn.net, int(res), P, pert["delta"].to_numpy(float), rn.member, "cpu")
        for i in part.index[part["kernel"] < 0]:
            out[i] = base.cpu().double()
        for idx, img in images:
            for j, im in zip(pert.index.to_numpy()[idx], img):
                out[j] = im.cpu().double()
    return out


def image_sha(images) -> list[str]:
    return [rv.image_sha(img[None])[0] for img in images]


def load_verdicts(path: str | Path | None = None):
    """The stored anchored verdicts (`pass1` 1 = shows the label, 0 = not; `pass2` the re-judged
    share). Raises `DataNotFoundError` naming the path when it is missing."""
    p = Path(path) if path else VERDICTS_CSV
    if not p.exists():
        raise DataNotFoundError(f"anchored verdicts not found at {p}; they ship in data/judge_reference/anchored/")
    df = pd.read_csv(p)
    need = {"id", "network", "group", "target", "label", "kernel", "row", "col", "delta", "res", "sha256", "pass1"}
    if missing := need - set(df.columns):
        raise VolratioError(f"{p}: missing columns {sorted(missing)}")
    return df


def all_networks(groups=None) -> dict[str, rv.RefNet]:
    """The networks every row of the anchored verdicts refers to (stored ones and the data groups)."""
    return networks(groups)


# ---------------------------------------------------------------------------------------------
# The judging protocol: shuffled, numbered mosaics per label, the label's target image on top


def judging_mosaics(rows, images, seed: int = 0, per_mosaic: int = 36, show_res: int = 64):
    """`[(label, [row ids], PIL image)]`: the rows grouped by label, shuffled (seeded), in mosaics
    of `per_mosaic` numbered tiles (no network, δ or resolution shown), each image shown at
    `show_res` (nearest upscaling) with the label's target image on top. What the verdicts were
    given on."""
    rows = rows.reset_index(drop=True)
    rng = np.random.default_rng(seed)
    out = []
    for label, part in rows.groupby("label", sort=True):
        idx = part.index.to_numpy()[rng.permutation(len(part))]
        header_spec = part["target"].iloc[0]
        for j in range(0, len(idx), per_mosaic):
            chunk = idx[j : j + per_mosaic]
            tiles = torch.stack([_show(images[i], show_res) for i in chunk])
            header = torch.as_tensor(np.asarray(get_target(header_spec).image(show_res)), dtype=torch.float64)
            m = rv.captioned_mosaic(tiles, list(range(1, len(chunk) + 1)), cols=6, scale=2, header=header,
                                      header_caption=f"is this a {label}?")  # fmt: skip
            out.append((label, rows.loc[chunk, "id"].tolist(), m))
    return out


def _show(img: torch.Tensor, res: int) -> torch.Tensor:
    """`(h, w, 3)` → `(res, res, 3)` by nearest-neighbour repetition (h divides res)."""
    k = res // img.shape[0]
    return img.repeat_interleave(k, 0).repeat_interleave(k, 1) if k > 1 else img
