"""The full plan's pilot on one GPU: the CUDA tests, the EMC2 benchmark and the first runs of the full plan,
within a hard time cap.

    PYTHONPATH=. python benchmarks/gpu_pilot.py --log-dir LOGS --budget-s 500      # on a CUDA machine
    PYTHONPATH=. python benchmarks/gpu_pilot.py --tiny --device cpu --log-dir /tmp/p  # the script itself, in a minute

Steps, in order, each a subprocess given what is left of the budget (at most its own cap), killed at its
deadline — what it stored until then stays stored (a reference chunk is resumable):

1. `pytest -m "cuda and not slow"` (`tests_cuda.log`: the quick scales on CUDA are left to `pytest -m cuda`), then the whole suite but those, on pytest-xdist workers, each
   test's outcome on its own line (`tests_suite.log`: a device mismatch anywhere shows there);
2. `benchmarks/emc2_engine.py --res 256` on the device (engine, naive, matmul rate) and the whole
   scoring (engine + judge) against the host CPU: `bench.log`;
3. `volratio reference run examples/sweeps/full.toml --chunk emc2_dense --device DEV --out OUT`: its
   first run (seed 0 under the first judge: training, SP and every weight scored) is the one a cap lets finish;
4. the same for `emc2`: every weight of the Picbreeder and FER SGD networks at 256×256 in float64, run
   by run in the plan's order;
5. the training step of the `sparse_regime` full preset (five networks of width 128 and depth 6 at
   128×128): `volratio.runs.gpu_plan.time_training_steps`, stored as `sparse_regime_steps.json` under OUT,
   from which `volratio.runs.gpu_plan` projects a full sparse_regime run (its step count × this time).

`--tiny` runs the same steps at a size that takes seconds (a plan of its own in the log folder, the
benchmark's quick mode at 16×16), to check the script before a GPU is spent on it.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

TINY_PLAN = """
[chunks.emc2]
run = "emc2_point"
seeds = [0]
threads = 1

[chunks.emc2.config]
res = 16
max_params = 6
deltas = [-1.0, 1.0]

[chunks.emc2.grid]
network = ["picbreeder", "fer-sgd"]
target = ["skull"]
judge = ["anchored"]

[chunks.emc2_dense]
run = "emc2_dense"
seeds = [0, 1]
threads = 1

[chunks.emc2_dense.config]
res = 16
max_params = 4
dense_depth = 2
dense_width = 4
"train.steps" = 3
"sp.rounds" = 1
"sp.retrain_steps" = 1
"""

TESTS = ["tests/test_cuda.py"]  # `pytest -m cuda`: every test that needs the GPU


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--log-dir", required=True, help="where the logs and the step summary go")
    ap.add_argument("--out", default="results/full", help="the full plan's results root")
    ap.add_argument("--budget-s", type=float, default=480.0, help="hard cap on the whole pilot, in seconds")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--tiny", action="store_true", help="every step at a size that takes seconds")
    ap.add_argument("--workers", type=int, default=12, help="pytest-xdist workers for the tests (0: none)")
    a = ap.parse_args(argv)
    logs = Path(a.log_dir)
    logs.mkdir(parents=True, exist_ok=True)
    plan = "examples/sweeps/full.toml"
    if a.tiny:
        plan = str(logs / "tiny_plan.toml")
        Path(plan).write_text(TINY_PLAN)
    py = sys.executable
    t_end = time.monotonic() + a.budget_s
    xdist = ["-n", str(a.workers)] if a.workers and not a.tiny else []
    pytest = [py, "-m", "pytest", "-p", "no:cacheprovider", "--tb=short", "-rfE"]
    tests = [*pytest, "-v", "-m", "cuda and not slow", *xdist, *TESTS]
    suite = [*pytest, "-v", "-m", "not cuda", *xdist, "tests/"]
    if a.tiny:
        suite = [*pytest, "-q", "tests/test_emc2_fused.py::test_cli_scores_every_weight_and_says_which_engine"]
    bench = [py, "benchmarks/emc2_engine.py", "--device", a.device, "--repeats", "1"]
    bench += ["--quick", "--res", "16"] if a.tiny else ["--res", "256", "--scoring-units", "48"]
    ref = [py, "-m", "volratio", "reference", "run", plan, "--device", a.device, "--out", a.out, "--no-progress"]
    steps_json = Path(a.out) / "sparse_regime_steps.json"
    timing = [py, "-m", "volratio.runs.gpu_plan", "--device", a.device, "--json", str(steps_json)]
    timing += ["--steps", "5", "--width", "8", "--res", "16"] if a.tiny else ["--steps", "300"]
    # (name, command, cap in seconds, seconds kept back for the steps after it)
    plan_steps = [
        ("tests_cuda", tests, 80, 400),
        ("tests_suite", suite, 130, 300),
        ("bench", bench, 75, 230),
        ("emc2_dense", [*ref, "--chunk", "emc2_dense"], 150, 80),
        ("emc2", [*ref, "--chunk", "emc2"], 75, 25),
        ("sparse_regime_steps", timing, 25, 0),
    ]
    summary = []
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    for name, cmd, cap, reserve in plan_steps:
        left = t_end - time.monotonic()
        limit = max(0.0, min(cap, left - reserve))
        if limit < 5:
            summary.append({"step": name, "status": "skipped: no time left", "seconds": 0.0})
            continue
        t0 = time.monotonic()
        with open(logs / f"{name}.log", "w") as log:
            log.write("$ " + " ".join(cmd) + f"\n(cap {limit:.0f} s)\n")
            log.flush()
            proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
            try:
                rc = proc.wait(timeout=limit)
                status = f"exit {rc}"
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, 15)
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, 9)
                    proc.wait()
                status = f"stopped at its cap of {limit:.0f} s"
        seconds = round(time.monotonic() - t0, 1)
        summary.append({"step": name, "status": status, "seconds": seconds})
        print(f"{name}: {status} ({seconds} s)", flush=True)
    (logs / "pilot.json").write_text(json.dumps({"device": a.device, "tiny": a.tiny, "steps": summary}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
