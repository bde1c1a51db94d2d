"""The experiments of the book, one module per chapter experiment.

Every experiment follows one contract (`volratio.experiments._base`): a dataclass `Config` with
`quick()`, `reference()` and `full()` presets, and `run(cfg) -> Result` with `Result.to_frame()`.

    from volratio.experiments import depth_regime as X
    res = X.run(X.Config.quick())
    res.to_frame()

`load(name, scale="reference", reading=PAPER)` (`volratio.experiments.load`) gives the same kind of
`Result` from the runs the reference plan stored for an experiment, under a reading, without
running anything.

The modules also hold the *run functions* that sweeps run, one run each (`fn(config) -> dict` with a
`parse_<fn>` that validates its config): `training.train`, `toy.toy` and the experiments' `point`s.
The registry that names the experiments and the run functions — for the command line (`volratio
run NAME`), sweep specs and the book — is `volratio.runs.registry`, in the layer below: it finds an
experiment's module by name and imports it on first use.

The reference scale is budgeted at ≤ 8 CPU-hours for all claims on a 2-core machine.
The runs are the chunks of `examples/sweeps/reference.toml`, stored under `results/reference/`;
their measured cost (one thread, CPU time, `results/reference/*/manifest.json`) is what the
chapters state. The presets here hold the settings; the plan says which targets, seeds and grids.
"""
