"""Running a depth sweep: its grid as a `Sweep` of the run function `depth_point`, run or read from
its store, as depth curves.

`make_sweep` builds the sweep of targets × depths × seeds of a `volratio.depth.point.Config`,
`depth_sweep` runs it (or reads the runs its store already holds) and returns one
`volratio.depth.curves.DepthCurve` per target, `load_nets` the networks its runs stored;
`rescored` and `recovered_rows` read those networks again under a reading (a judge, or the
judge-free primitive recovery), in memory.

Experiments: `depth_regime`, `optimizers` (the sweet spot it studies), `unknown_targets`; command:
`volratio depth sweep`.
"""

from __future__ import annotations

from pathlib import Path

from ..depth.curves import curves_from_table
from ..depth.point import Config, depths_of
from ..emc2.reading import Reading
from ..nets import CoordMLP
from ..rho.recovery import RecoveryConfig
from . import recovered as R
from . import score as S
from .reference import NET, RUN, rescore_config, source_scoring
from .registry import get_run
from .store import Store
from .sweep import InProcess, Processes, Sweep, results_dir, run_sweep


def make_sweep(targets, cfg: Config, name: str = "depth"):
    """The `volratio.runs.sweep.Sweep` of a depth sweep: targets × depths (`depths_of`) × seeds."""
    targets = [targets] if isinstance(targets, str) else list(targets)
    seeds = int(cfg.seeds) // int(cfg.members)
    if cfg.window is None:
        grid = {"target": targets, "depth": list(cfg.depths)}
        return Sweep(run="depth_point", config=cfg.shared(), grid=grid, seeds=seeds, name=name)
    cases = [{"target": t, "depth": d} for t in targets for d in depths_of(t, cfg)]
    return Sweep(run="depth_point", config=cfg.shared(), cases=cases, seeds=seeds, name=name)


def depth_sweep(
    targets, cfg: Config | None = None, out=None, executor=None, tol: float | None = None, progress: bool | None = False
):
    """Run (or read) the depth sweep of `targets`; returns `(curves: dict target -> DepthCurve, report)`.
    `out`: the results store (default `volratio.runs.sweep.results_dir("depth")`); `executor`: default
    `Processes(cfg.processes)`."""
    cfg = cfg or Config.quick()
    if executor is None:
        executor = Processes(cfg.processes) if cfg.processes > 1 else InProcess()
    report = run_sweep(make_sweep(targets, cfg), out or results_dir("depth"), executor, progress=progress)
    return curves_from_table(report.table, cfg.tol if tol is None else tol), report


def stored_networks(report):
    """`(record, population)` of every finished run of the sweep, read from its store (a
    `volratio.nets.CoordMLP`); `RescoreError` naming `keep_net` for a run that stored no network."""
    store = Store(report.store)
    for key, status in zip(report.table["key"], report.table["status"]):
        if status != "done":
            continue
        (record,) = store.records([key])
        if NET not in record["artifacts"]:
            raise S.RescoreError(
                f"{report.store}: run {key} stored no network, so it cannot be scored under another reading; "
                "train with keep_net = true (keep_nets for the optimizer study), then score"
            )
        yield record, CoordMLP.load(record["artifacts"][NET])


def rescored(report, reading: Reading):
    """The sweep's results table with every finished run's `score`, `scores`, `base_kept` and `judge`
    replaced by its stored networks scored under `reading` (which names a judge), in the shapes the
    runs stored them (a list per member, or one value for a run of one network), as the score stage
    scores them (`volratio.runs.score.score_population` under `volratio.runs.reference.rescore_config`:
    the run's own EMC2 settings under the reading), in memory: nothing is stored. Scored under the
    runs' own judge, the table is the sweep's own."""
    table, entry = report.table.copy(), get_run(RUN)
    names = ("score", "scores", "base_kept", "judge")
    columns = {name: list(table[name]) for name in names}
    row = {key: i for i, key in enumerate(table["key"])}
    for record, net in stored_networks(report):
        i = row[record["key"]]
        cfg = S.parse_point(entry.keyed(rescore_config(Path(report.store).name, record, reading)))
        metrics = S.score_population(net, cfg, source_scoring(record).networks)
        one = not isinstance(columns["score"][i], (list, tuple))  # a run of one network stores scalars
        for name in names:
            columns[name][i] = metrics[name][0] if one and name != "judge" else metrics[name]
    return table.assign(**columns)


def recovered_rows(report, cfg: RecoveryConfig | None = None) -> list:
    """`(record, row)` for every member of every finished run's stored network, `row` its judge-free
    score as `volratio.runs.recovered.table` gives it for a stored chunk (`target`, `member` and the
    fields of `volratio.runs.recovered.FIELDS`), computed in memory by the same scorer
    (`volratio.runs.recovered.members`) under `cfg` (default `RecoveryConfig()`)."""
    out = []
    for record, net in stored_networks(report):
        target = record["config"]["target"]
        m = R.members(net, target, cfg)
        out += [(record, {"target": target, "member": k, **{f: m[f][k] for f in R.FIELDS}})
                for k in range(net.population)]  # fmt: skip
    return out


def load_nets(report) -> dict:
    """`(target, depth) -> CoordMLP`: the population of the first finished run of each grid point,
    read from the sweep's store (the runs keep their networks: `keep_net`)."""
    store, out = Store(report.store), {}
    for _, r in report.table[report.table["status"] == "done"].iterrows():
        out.setdefault((r["target"], int(r["depth"])), store.artifact(r["key"], "net"))
    return out
