"""The score stage: stored networks scored under a reading, into the store that holds them.

An experiment trains, then scores. A run that trains networks stores them beside its metrics:
`depth_point` and `optimizer_point` (and their sparse-regime variants) with `keep_net = true` return
the final (SP-pruned, optimised) population as the artifact `net`, a `volratio.nets.CoordMLP`
safetensors file (`volratio.runs.store.encode_net`; never a pickle), and a `twin_point` stores its
network; each row holds the run's whole config. Scoring is then a separate, cheap stage that reads
them under a reading (`volratio.emc2.reading.Reading`: the judge, the anchor, δ's scale, the weights
and the engine, as one value):

    volratio reference rescore depth_picbreeder --judge stability --root results/reference
    volratio reference rescore depth_picbreeder --judge anchored --every-weight --engine fused

`score_chunk(chunk, reading, root)` runs one run of the registered run function `rescore`
(`point`) per stored source run with a network, as an ordinary sweep of explicit configs
(`volratio.runs.sweep.run_configs`) into the chunk's own store, and records each run in the chunk's
manifest as `volratio.runs.reference.run_chunk` records a chunk's own runs (`manifest_entry`,
marked `"run": "rescore"`), its session naming the reading. A run's config (`rescore_config`) names
the source (`chunk`, `key`, run function, the network's SHA-256), the judge, the anchor, the target
and the source's EMC2 settings under the reading (float64 on the CPU, calibration seed 0, exactly
what the source's own scoring used, `volratio.depth.point.emc2_of`, except where the reading changes
it), so its store key includes the reading and the source key, a second score of the same reading
recomputes nothing, and scoring under the source run's own judge reproduces its stored scores
exactly. Metrics, one list entry per member: `score` (EMC2 AUC), `scores` (S per δ), `base_kept`;
and `judge`, `anchor`.

The run function reads its source networks from the chunks under the root it is given
(`volratio.runs.registry.RunFunction.reading_store`: the folder beside the store it writes to).

**Every weight.** The source runs scored a seeded sample of `max_params` weights per network; an
every-weight reading scores every non-zero weight of the same stored networks (`max_params` None)
through its engine ("torch" in float64, the exact reference, or "fused", the C++ kernel in
float32). A sampled and an every-weight score of one source under one judge are two runs with two
keys, stored side by side; `volratio.runs.stored.judged(..., reading)` reads either.

**Cross-fitted.** The judge "anchored-xfit" scores a network of the anchored verdict set with the
rule fitted without that network's fold, any other with the rule fitted on every row. A score run
names each stored network as the set does (`volratio.runs.reference.source_scoring`: a
`twin_point`'s Picbreeder network is `picbreeder:TARGET`; its twins and the SP populations of the
depth and optimizer runs are in no verdict row, and have no name) and stores, per member, that
`network` (None for a network without a name) and the `fold` whose rule scored it: the fold of a
network the set holds, "all" (the all-rows rule) for any other.

Score runs are re-run by `volratio results verify` like any other run; `volratio.runs.stored.records`
leaves them out unless asked, so the readers of a chunk see its own runs only. Read them with
`volratio.runs.stored.rescores(chunk, reading)`. Float results are compared bit for bit on the CPU
kind that stored them; score runs have not been shown to reproduce across kinds, so they are not in
`volratio.runs.reference.MACHINE_INDEPENDENT`.

Used by `volratio reference rescore` (volratio/commands/reference.py); results/reference/README.md.
"""

from __future__ import annotations

import re
import time
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path

import torch

from .. import emc2
from ..data.anchors import ANCHORS, anchor_image
from ..depth.point import CALIBRATION_SEED
from ..emc2 import EMC2Config
from ..emc2.reading import Reading
from ..errors import VolratioError
from ..judges import DEFAULT_JUDGE, JUDGES, check_res
from ..judges.family import FamilyJudge, planted_target
from ..nets import CoordMLP
from ..util.limits import LimitError, check_limits
from . import stored
from .manifest import MANIFEST
from .reference import (
    NET,
    RUN,
    machine,
    manifest_entry,
    now,
    read_for_writing,
    rescorable,
    rescore_config,
    source_scoring,
    write_manifest,
)
from .registry import get_run
from .store import Store, StoreError, config_key, sha256_file
from .stored import DEFAULT_ROOT
from .sweep import run_configs


class RescoreError(VolratioError, ValueError):
    """A chunk, judge or rescore config that cannot be rescored as asked."""


# ---------------------------------------------------------------------------------------------
# One rescore run (run function `rescore`)


@dataclass(frozen=True)
class Config:
    """One rescore run: the stored population of one source run, scored under `judge`."""

    source: dict = field(default_factory=dict)  # chunk, key, run (function name), net_sha256 of the stored
    # population, and its artifact where it is not "net" (a sparse_regime run's net_<method>_<checkpoint>)
    judge: str = DEFAULT_JUDGE  # the judge to score under (volratio.judges.make_judge)
    target: str = "planted:0"  # the source run's target spec (what the judge is anchored on)
    members: int = 1  # networks in the stored population
    emc2: dict = field(default_factory=dict)  # volratio.emc2.EMC2Config entries but `member` (the source's)
    calibration_seed: int = CALIBRATION_SEED  # seeds the "ssim" judge's calibration (as the source's scoring)
    seed: int = 0  # the source run's seed (recorded; the EMC2 subsample's seed is emc2.seed)
    anchor: str = "image"  # what a label-anchored judge compares with (volratio.data.anchors.ANCHORS)


_SOURCE_KEYS = ("chunk", "key", "run", "net_sha256")  # and "artifact" where the population is not NET


def parse_point(config: dict) -> Config:
    """Validate one rescore run's config (`RescoreError` naming the entry and the fix)."""
    if not isinstance(config, dict):
        raise RescoreError("a rescore config is a table (dict); see volratio.runs.score.Config")
    names = {f.name for f in fields(Config)}
    unknown = set(config) - names
    if unknown:
        raise RescoreError(f"rescore config: unknown entries {sorted(unknown)}; it has {sorted(names)}")
    cfg = Config(**config)
    src = cfg.source
    if (
        not isinstance(src, dict)
        or set(src) - {"artifact"} != set(_SOURCE_KEYS)
        or not all(isinstance(src[k], str) for k in src)
        or src.get("artifact") == NET
    ):
        raise RescoreError(
            f"rescore config: source must name {', '.join(_SOURCE_KEYS)}, and the artifact where it is not "
            f"{NET!r} (strings); got {src!r}"
        )
    check_chunk_name(src["chunk"])
    if not rescorable(src["run"]):
        raise RescoreError(
            f"rescore config: source run {src['run']!r} stores no networks that can be rescored; "
            "one whose config says how it scored them (`scoring()`: depth_point, twin_point, …)"
        )
    if cfg.anchor not in ANCHORS:
        raise RescoreError(f"rescore config: anchor {cfg.anchor!r}; choose one of {', '.join(ANCHORS)}")
    if cfg.judge not in JUDGES:
        raise RescoreError(f"rescore config: judge {cfg.judge!r}; choose one of {', '.join(JUDGES)}")
    if not isinstance(cfg.target, str) or not cfg.target:
        raise RescoreError(f"rescore config: target {cfg.target!r}; give the source run's target spec")
    if cfg.judge == FamilyJudge.name:  # its family is the planted DAG's: refused before any network is read
        try:
            planted_target(cfg.target)
        except VolratioError as e:
            raise RescoreError(f"rescore config: {e}") from None
    for name in ("members", "calibration_seed", "seed"):
        v = getattr(cfg, name)
        if not isinstance(v, int) or isinstance(v, bool) or v < (1 if name == "members" else 0):
            raise RescoreError(
                f"rescore config: {name} = {v!r}; give a {'positive' if name == 'members' else 'non-negative'} integer"
            )
    allowed = {f.name for f in fields(EMC2Config)} - {"member"}
    if not isinstance(cfg.emc2, dict) or set(cfg.emc2) - allowed:
        raise RescoreError(
            f"rescore config: emc2 holds EMC2Config entries ({', '.join(sorted(allowed))}); got {cfg.emc2!r}"
        )
    try:
        check_limits(emc2_config(cfg, 0), "rescore config: emc2")
        check_res(cfg.judge, emc2_config(cfg, 0).res, "rescore config: emc2 images", RescoreError)
    except LimitError as e:
        raise RescoreError(str(e)) from None
    except (TypeError, ValueError) as e:
        raise RescoreError(f"rescore config: emc2 {cfg.emc2!r} is not an EMC2Config ({e})") from None
    full = {k: v for k, v in asdict(emc2_config(cfg, 0)).items() if k != "member"}
    full["deltas"] = [float(d) for d in full["deltas"]]
    return replace(cfg, emc2=full)  # every EMC2Config entry: a run is keyed by its complete settings


def emc2_config(cfg: Config, member: int):
    kw = dict(cfg.emc2)
    if "deltas" in kw:
        kw["deltas"] = tuple(float(d) for d in kw["deltas"])
    return EMC2Config(**kw, member=member)


def load_source(cfg: Config, root: Path):
    """The stored population of `cfg.source` under `root` (a `CoordMLP`), after checking its SHA-256."""
    src = cfg.source
    path = root / src["chunk"]
    try:
        art = Store(path).artifact_path(src["key"], artifact(cfg))
    except StoreError as e:
        raise RescoreError(f"source network of rescore run: {e}") from None
    if sha256_file(art) != src["net_sha256"]:
        raise RescoreError(
            f"{art}: the stored network is not the one this rescore run scored (SHA-256 differs); "
            f"rescore the chunk again (`volratio reference rescore {src['chunk']} --judge {cfg.judge}`)"
        )
    net = CoordMLP.load(art)
    if net.population != cfg.members:
        raise RescoreError(f"{art}: {net.population} networks, the config says {cfg.members}; rescore the chunk again")
    return net


def artifact(cfg: Config) -> str:
    """The artifact of the source run that a score run scores: NET, or the one its source names."""
    return cfg.source.get("artifact", NET)


def source_record(cfg: Config, root: Path) -> dict:
    """The stored row of `cfg.source` under `root` (`volratio.runs.store.Store.records`)."""
    src = cfg.source
    recs = Store(root / src["chunk"]).records([src["key"]])
    if not recs:
        raise RescoreError(
            f"{root / src['chunk']}: no run {src['key']} to rescore; rescore the chunk again "
            f"(`volratio reference rescore {src['chunk']} --judge {cfg.judge}`)"
        )
    return recs[0]


def point(config: dict, root: "str | Path | None" = None) -> dict:
    """Score the stored population of one source run, read from the chunks under `root` (default
    `DEFAULT_ROOT`), under `judge`. Metrics, per member: `score`
    (EMC2 AUC), `scores` (S per δ), `base_kept`; and `judge`, `anchor` (what the verdicts are
    anchored on: "target", "label" or "own image"). Under an `anchor` other than "image", also
    `anchor_rmse` per member: the RMSE of its unperturbed render to the anchor image. Under the
    cross-fitted judge ("anchored-xfit"), per member `network`, its name as the anchored verdict set
    names networks (`volratio.runs.reference.source_scoring`; None for one without a name), and
    `fold`, the fold whose rule scored it — fitted without that network's verdict rows — or "all",
    the rule fitted on every row, for a network without verdict rows."""
    cfg = parse_point(config)
    root = DEFAULT_ROOT if root is None else Path(root)
    return score_population(load_source(cfg, root), cfg, source_scoring(source_record(cfg, root)).networks)


def score_population(net: CoordMLP, cfg: Config, names: tuple) -> dict:
    """The metrics of `point` for the population `net` of a source run under the score run's config
    `cfg` (parsed), its members named `names` as the verdict set names them: the one scorer of the
    score stage, for a stored network (`point`) or one in memory (`volratio.runs.depth_sweep.rescored`)."""
    if len(names) != net.population:
        raise RescoreError(
            f"{cfg.source['chunk']}/{cfg.source['key']}: {len(names)} network names, {net.population} networks"
        )
    ec = emc2_config(cfg, 0)
    per_member = emc2.score_members(net, cfg.target, [cfg.judge], ec, anchor=cfg.anchor,
                                    calibration_seed=cfg.calibration_seed, names=names)  # fmt: skip
    results = [r for rs in per_member for r in rs]
    rmse = []
    if cfg.anchor != "image":  # how far each member's unperturbed render is from the anchor
        image = anchor_image(cfg.target, ec.res, cfg.anchor).double()
        for k in range(net.population):
            with torch.no_grad():
                base = net.select(k).render(ec.res)[0].double()
            rmse.append(float(((base - image) ** 2).mean().sqrt()))
    return {
        "score": [float(r.auc) for r in results],
        "scores": [[float(s) for s in r.scores] for r in results],
        "base_kept": [bool(r.base_kept) for r in results],
        "judge": results[0].judge,
        "anchor": results[0].anchor,
        **({"anchor_rmse": rmse} if rmse else {}),
        # the cross-fitted judge: which rule scored each network
        **(
            {
                "network": [r.judge_settings["network"] for r in results],
                "fold": [r.judge_settings["fold"] for r in results],
            }
            if "fold" in results[0].judge_settings
            else {}
        ),
    }


# ---------------------------------------------------------------------------------------------
# Rescoring a chunk


def check_chunk_name(chunk) -> str:
    if not isinstance(chunk, str) or not re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_.-]*", chunk):
        raise RescoreError(f"chunk {chunk!r}: give a chunk's folder name (letters, digits, '_', '-', '.')")
    return chunk


def plan(chunk: str, reading: Reading, root: "str | Path | None" = None, artifacts=None) -> dict:
    """`{rescore key: complete config}` of every stored population of `chunk` under `reading`
    (`volratio.runs.reference.rescore_config`): each artifact of its runs' `scoring().artifacts`
    that is stored, or only those named in `artifacts` (e.g. `["net_sp_end"]`). `RescoreError` when
    the reading names no judge, or when the chunk's runs cannot be rescored (not networks' runs, or
    no network stored)."""
    root = Path(DEFAULT_ROOT if root is None else root)
    check_chunk_name(chunk)
    if not isinstance(reading, Reading):
        raise RescoreError(f"reading {reading!r}: give a volratio.emc2.reading.Reading")
    if reading.recovery:
        raise RescoreError(
            "reading: primitive recovery is judge-free and is not a score run; read a chunk's networks by "
            "recovery with volratio.runs.recovered.table(CHUNK)"
        )
    if reading.judge is None:
        raise RescoreError(f"reading: give the judge to score under (Reading(judge=NAME)); one of {', '.join(JUDGES)}")
    recs = stored.records(chunk, root)
    runs = sorted({r["run"] for r in recs})
    sources = [r for r in recs if rescorable(r["run"])]
    if not sources:
        raise RescoreError(
            f"{root / chunk}: its runs ({', '.join(runs) or 'none'}) train no networks that can be rescored; "
            "rescore a chunk of a run function whose config says how it scored them (`scoring()`: depth_point, "
            "optimizer_point, their sparse variants, twin_point)"
        )
    wanted = None if artifacts is None else set(artifacts)
    with_net = [(r, a) for r in sources for a in source_scoring(r).artifacts
                if a in r["artifacts"] and (wanted is None or a in wanted)]  # fmt: skip
    if not with_net and wanted is not None:
        stored_names = sorted({a for r in sources for a in source_scoring(r).artifacts if a in r["artifacts"]})
        if stored_names:
            raise RescoreError(
                f"{root / chunk}: no run stores the artifact(s) {', '.join(sorted(wanted))}; its runs store "
                f"{', '.join(stored_names)}: name those in --artifacts, or leave it out to score every one"
            )
    if not with_net:
        raise RescoreError(
            f"{root / chunk}: its runs stored no networks; re-run the chunk with keep_net = true in its "
            f"config (`volratio reference run PLAN --chunk {chunk}`), then rescore it"
        )
    store = Store(root / chunk)
    for r, a in with_net:  # every network checked against the SHA-256 its run recorded, before any is scored
        try:
            store.artifact_path(r["key"], a)
        except StoreError as e:
            raise RescoreError(f"{e} before it is rescored (`git checkout` restores a committed chunk)") from None
    entry = get_run(RUN)
    out = {}
    for r, a in with_net:
        cfg = entry.keyed(rescore_config(chunk, r, reading, a))
        out[config_key(entry.name, cfg)] = cfg
    return out


@dataclass
class ScoreReport:
    chunk: str
    reading: Reading  # what the networks were scored under
    total: int  # score runs of the chunk under this reading (one per stored source run with a network)
    ran: list  # keys executed now
    skipped: int  # already in the store
    failed: list  # keys whose run failed now
    seconds: float
    cpu_s: float = 0.0  # CPU seconds of the runs that ran now (each run's own, as the manifest records them)

    def summary(self) -> str:
        return (
            f"rescore {self.chunk!r} under {self.reading.describe()}: {self.total} runs — ran "
            f"{len(self.ran)} ({self.cpu_s:.1f} CPU s), skipped {self.skipped} already in the store, "
            f"failed {len(self.failed)} ({self.seconds:.1f} s)"
        )


def score_chunk(
    chunk: str,
    reading: Reading,
    root: "str | Path | None" = None,
    progress: bool | None = None,
    artifacts=None,
    executor=None,
) -> ScoreReport:
    """Score every stored population of `chunk` (or those named in `artifacts`, see `plan`) under
    `reading` into the chunk's own store (resuming: runs already done are skipped; failed ones are
    run again) and record each run, with its CPU seconds, in the chunk's manifest (a new session
    naming the reading), on `executor` (`volratio.runs.sweep`'s; default in this process). Returns
    the report."""
    t0 = time.perf_counter()
    root = Path(DEFAULT_ROOT if root is None else root)
    todo = plan(chunk, reading, root, artifacts)
    man_path = root / chunk / MANIFEST
    man = read_for_writing(man_path, chunk)
    session = {"started_at": now(), **machine(), "reading": reading.as_dict()}
    man.setdefault("sessions", []).append(session)
    runs = man.setdefault("runs", {})
    cpu = []

    def on_outcome(outcome: dict) -> None:
        cpu.append(float(outcome["cpu_seconds"]))
        if outcome["status"] == "done":
            runs[outcome["key"]] = manifest_entry(outcome, len(man["sessions"]), session["kind"])
            write_manifest(man_path, man)

    report = run_configs(
        get_run(RUN), list(todo.values()), root / chunk, executor, name=f"rescore {chunk}", retry_failed=True,
        progress=progress, on_outcome=on_outcome, heartbeat=True,
    )  # fmt: skip
    if report.ran:
        write_manifest(man_path, man)
    return ScoreReport(
        chunk,
        reading,
        len(todo),
        report.ran,
        report.skipped,
        report.failed,
        time.perf_counter() - t0,
        round(sum(cpu), 3),
    )
