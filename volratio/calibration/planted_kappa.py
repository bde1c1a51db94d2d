"""The image judges checked on planted images: Cohen's κ of each image judge's EMC2 verdicts against
the family judge's (`planted-family`, the ground truth on planted targets) on single-weight
perturbations of the stored planted networks, by target and pooled.

`measure(cfg)` draws, per stored chunk and planted target, a seeded sample of `networks` of the
chunk's stored network files (every run's `net`, and for the sparse regime every population
`net_<method>_<checkpoint>`), checks each file against the SHA-256 its run recorded, and scores
member 0 with EMC2 (`volratio.emc2.scoring.score`) under every judge of `judges` and the family judge
at once: the same seeded sample of `weights` non-zero weights, each moved by every δ of `deltas`, at
`res` × `res`. A row is one perturbed image with each judge's EMC2 verdict (kept before and after the
perturbation: the base rule applies, as in every claim). `kappa(table)` reads κ of each judge against
the family judge per target and pooled. The table is computed once by `tools/planted_kappa.py`
and stored in `data/planted_kappa/` (`load` reads it back); the book never recomputes it.

Chapter: "Evidence: depth" (book/evidence_depth.md), where the family judge decides the planted claims.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ..emc2.scoring import EMC2Config, judges_for, score, target_label
from ..errors import VolratioError
from ..judges import DEFAULT_JUDGE
from ..nets import CoordMLP
from ..runs import stored
from ..runs.store import sha256_file
from ..util.limits import at_least, check_limits
from ..util.stats import cohen_kappa

FAMILY = "planted-family"  # the ground truth on planted targets
DEFAULT_DIR = Path(__file__).resolve().parents[2] / "data" / "planted_kappa"  # the repository's data/planted_kappa
TABLE_FILE = "planted_kappa.csv"  # one row per perturbed image: where it comes from, each judge's verdict
CONFIG_FILE = "planted_kappa.json"  # its config, the command that wrote it, its CPU time
KAPPA_FLOOR = 0.6  # below this κ against the family judge, the family judge decides the planted claims


class PlantedKappaError(VolratioError, ValueError):
    """Bad input to the planted κ check, or a stored table that cannot be read as asked."""


@dataclass(frozen=True)
class PlantedKappaConfig:
    """What is sampled and judged (module docstring)."""

    chunks: tuple = ("depth_matched_planted", "sparse_regime_planted", "optimizers_planted")  # stored chunks read
    judges: tuple = (DEFAULT_JUDGE, "anchored-ssim")  # image judges compared with the family judge
    networks: int = 2  # stored network files sampled per (chunk, target)
    weights: int = 10  # non-zero weights sampled per network (EMC2's seeded subsample)
    deltas: tuple = (-1.0, -0.5, 0.5, 1.0)  # every sampled weight moved by each δ
    res: int = 32  # images at res × res (the family judge: ~20 images/s at 32×32 on one core)
    seed: int = 0  # seeds the choice of networks and EMC2's sample of weights

    LIMITS = {"networks": at_least(1), "weights": at_least(1), "res": at_least(16), "seed": at_least(0)}

    def __post_init__(self):
        check_limits(self, "PlantedKappaConfig")
        if not self.chunks or not self.judges or FAMILY in self.judges:
            raise PlantedKappaError(
                f"PlantedKappaConfig: name at least one chunk and one image judge other than {FAMILY} "
                f"(got chunks {self.chunks}, judges {self.judges})"
            )


def network_files(chunk: str, root=None) -> list[dict]:
    """Every stored network file of `chunk` on a planted target: `{chunk, key, target, network, path, sha256}`."""
    out = []
    for r in stored.runs_of(chunk, root, error=PlantedKappaError):
        target = r["config"]["target"]
        if not target.startswith("planted:"):
            continue
        for name, path in sorted(r.get("artifacts", {}).items()):
            if name == "net" or name.startswith("net_"):
                out.append(dict(chunk=chunk, key=r["key"], target=target, network=name, path=path,
                                sha256=r["artifact_sha256"][name]))  # fmt: skip
    if not out:
        raise PlantedKappaError(f"chunk {chunk}: no stored network on a planted target (runs need keep_net = true)")
    return out


def sample(cfg: PlantedKappaConfig, root=None) -> list[dict]:
    """The seeded sample of network files: `cfg.networks` per (chunk, target), in chunk and target order."""
    rng = np.random.default_rng(cfg.seed)
    out = []
    for chunk in cfg.chunks:
        files = pd.DataFrame(network_files(chunk, root))
        for _, group in files.groupby("target", sort=True):
            pick = rng.choice(len(group), size=min(cfg.networks, len(group)), replace=False)
            out += [group.iloc[i].to_dict() for i in sorted(pick)]
    return out


def load_network(entry: dict) -> CoordMLP:
    """The stored network of `entry` (`network_files`), after checking its SHA-256 against its run's."""
    path = Path(entry["path"])
    if not path.is_file() or sha256_file(path) != entry["sha256"]:
        raise PlantedKappaError(f"{path}: network of run {entry['key']} in chunk {entry['chunk']} is missing or "
                                "damaged (not the SHA-256 its run recorded); restore the chunk")  # fmt: skip
    return CoordMLP.load(path)


def judge_network(entry: dict, cfg: PlantedKappaConfig) -> pd.DataFrame:
    """One row per perturbed image of the stored network `entry`: its weight, δ, and each judge's
    EMC2 verdict (`verdict_<judge>`) and the family judge's (`verdict_planted-family`)."""
    net = load_network(entry)
    emc2 = EMC2Config(res=cfg.res, deltas=tuple(cfg.deltas), max_params=cfg.weights, seed=cfg.seed, device="cpu")
    names = [*cfg.judges, FAMILY]
    results = score(net, judges_for(net, names, entry["target"], emc2), target_label(entry["target"]), emc2)
    first = results[0].table
    rows = pd.DataFrame({"chunk": entry["chunk"], "key": entry["key"], "target": entry["target"],
                         "network": entry["network"], "layer": first.layer.to_numpy(), "row": first.row.to_numpy(),
                         "col": first.col.to_numpy(), "delta": first.delta.to_numpy()})  # fmt: skip
    for name, r in zip(names, results):
        same = r.table[["layer", "row", "col", "delta"]].to_numpy() == rows[["layer", "row", "col", "delta"]].to_numpy()
        if not same.all():
            raise PlantedKappaError(f"{entry['path']}: the judges scored different perturbations; report this as a bug")
        rows[f"verdict_{name}"] = r.table.verdict.to_numpy().astype(bool)
        rows[f"base_{name}"] = bool(r.base_kept)  # the judge kept the unperturbed image
    return rows


def kappa(table: pd.DataFrame, judges) -> pd.DataFrame:
    """κ of each judge's verdicts against the family judge's, per target and pooled ("all"): with the
    images, the family judge's keep rate and each judge's (`kept_<judge>`), the share of images
    whose base the family judge kept (`base_planted-family`; a base it does not keep keeps none of
    its perturbations), and κ on those images alone (`kappa_<judge>_base_kept`, NaN where none)."""
    fam = f"verdict_{FAMILY}"
    missing = [c for c in [fam, f"base_{FAMILY}", *(f"verdict_{j}" for j in judges)] if c not in table.columns]
    if missing:
        raise PlantedKappaError(
            f"planted κ table: no columns {', '.join(missing)}; rebuild it with tools/planted_kappa.py"
        )
    groups = [*table.groupby("target", sort=True), ("all", table)]
    out = []
    for target, d in groups:
        based = d[d[f"base_{FAMILY}"]]
        row = {"target": target, "images": len(d), f"kept_{FAMILY}": float(d[fam].mean()),
               f"base_{FAMILY}": float(d[f"base_{FAMILY}"].mean())}  # fmt: skip
        for j in judges:
            row[f"kept_{j}"] = float(d[f"verdict_{j}"].mean())
            row[f"kappa_{j}"] = cohen_kappa(d[f"verdict_{j}"], d[fam])
            row[f"kappa_{j}_base_kept"] = cohen_kappa(based[f"verdict_{j}"], based[fam]) if len(based) else np.nan
        out.append(row)
    return pd.DataFrame(out).set_index("target")


def config_json(cfg: PlantedKappaConfig) -> dict:
    """`cfg` as plain JSON values."""
    return json.loads(json.dumps(dataclasses.asdict(cfg)))


def load(folder: str | Path = DEFAULT_DIR) -> tuple[pd.DataFrame, PlantedKappaConfig, dict]:
    """The stored table, its config and its metadata; a missing, incomplete or malformed one is a clear error."""
    folder = Path(folder)
    table, meta_file = folder / TABLE_FILE, folder / CONFIG_FILE
    for f in (table, meta_file):
        if not f.is_file():
            raise PlantedKappaError(f"{f}: no stored planted κ table; build it with tools/planted_kappa.py")
    try:
        meta = json.loads(meta_file.read_text())
        cfg = PlantedKappaConfig(**{k: tuple(v) if isinstance(v, list) else v for k, v in meta["config"].items()})
    except (json.JSONDecodeError, KeyError, TypeError) as e:
        raise PlantedKappaError(f"{meta_file}: unreadable metadata ({e}); rebuild with tools/planted_kappa.py") from e
    if not meta.get("complete"):
        raise PlantedKappaError(
            f"{meta_file}: the stored run is incomplete; finish it with tools/planted_kappa.py --resume"
        )
    try:
        t = pd.read_csv(table)  # pandas reads every float back as written
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as e:
        raise PlantedKappaError(f"{table}: not a readable table ({e}); rebuild with tools/planted_kappa.py") from e
    kappa(t, cfg.judges)  # every verdict column present
    return t, cfg, meta
