"""Shared fixtures. The Picbreeder data lives outside the repository (`volratio.data.picbreeder`); tests that need
it use `picbreeder_dir`: the data where the library finds it, else downloaded on first use from the
mirror named by $VOLRATIO_FER_URL (as the book downloads it), else the test skips with the reason.
A new user's clone (no ../shared beside it, an empty cache) passes the suite: what needs the data or
the mirrors skips, naming them; everything else runs (CI checks this: .ci/run, "a new user's tests")."""

import contextlib
import functools
import http.server
import os
import threading
from pathlib import Path

import pytest
import torch

# Tests never download: a test that needs the Picbreeder data uses `picbreeder_dir` (skips when it
# is absent), and the download path is tested against a mirror on 127.0.0.1 (test_fer_data.py).
os.environ.setdefault("VOLRATIO_OFFLINE", "1")

# `auto` is the fixed rule in tests (fused where it builds): no test depends on what a timing picks
# on the machine it runs on (volratio.util.autopick; its own tests inject rates or set the mode)
os.environ.setdefault("VOLRATIO_AUTO", "rule")

torch.set_num_threads(1)  # the suite's numbers must not depend on the thread count
os.environ["VOLRATIO_THREADS"] = "1"  # … also inside the CLI, which sets its threads (volratio.util.threads)


def pytest_collection_modifyitems(config, items):
    """Tests marked `cuda` run where torch sees a CUDA device and skip, saying so, elsewhere."""
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU: torch.cuda.is_available() is False on this machine")
    for item in items:
        if "cuda" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def picbreeder_dir():
    from volratio.data import fer_data, picbreeder

    d = picbreeder.data_dir(required=False)
    if d is None and os.environ.get(fer_data.URL_ENV):  # a mirror: download on first use, as the book does
        d = fer_data.fetch()
    if d is None:
        looked = ", ".join(str(p) for _, p in picbreeder.candidate_dirs())
        pytest.skip(
            f"Picbreeder data not found (looked in {looked}): set VOLRATIO_DATA, run `volratio data fetch`, "
            f"or name a mirror of the FER files in ${fer_data.URL_ENV}"
        )
    return d


FORK_MIRROR = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "fer-fork-mirror"


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):  # keep the test output clean
        pass


@contextlib.contextmanager
def serve_folder(folder: Path):
    """A throwaway HTTP server for `folder` on 127.0.0.1 and a free port; stopped on exit."""
    handler = functools.partial(_QuietHandler, directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


@pytest.fixture(scope="session")
def extra_installed(tmp_path_factory):
    """The thirteen extra Picbreeder targets, fetched once per session from the byte-exact mirror of
    the fork served on 127.0.0.1 into a temporary folder (its pooch cache too); skips when the
    mirror is absent."""
    from volratio.data import fer_fork

    root = tmp_path_factory.mktemp("fork")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("XDG_CACHE_HOME", str(root / "cache"))
        if os.environ.get(fer_fork.URL_ENV):  # a mirror served elsewhere (CI's new-user step)
            return fer_fork.fetch(root / "data")
        if not (FORK_MIRROR / "SHA256SUMS").is_file():
            pytest.skip(f"no mirror of the fork jagilley/fer at {FORK_MIRROR} and no ${fer_fork.URL_ENV}")
        with serve_folder(FORK_MIRROR) as url:
            return fer_fork.fetch(root / "data", url=url)


@pytest.fixture
def extra_data(extra_installed, monkeypatch):
    """`extra_installed` found through $VOLRATIO_DATA (the original three, lacking there, are still
    found in ../shared/data/picbreeder: each dataset takes the first complete copy)."""
    monkeypatch.setenv("VOLRATIO_DATA", str(extra_installed))
    return extra_installed


# ---------------------------------------------------------------------------------------------
# Shared scaffolding of the test modules (no test module imports another): the loopback mirror
# server and a machine with no data for the download tests, and plans run into a store.


@pytest.fixture(scope="session")
def serve():
    """`with serve(folder) as url`: `folder` served on 127.0.0.1 (`serve_folder`)."""
    return serve_folder


@pytest.fixture
def fresh_machine(tmp_path, monkeypatch):
    """No data anywhere: an empty user cache, no $VOLRATIO_DATA, no mirror named, not offline, no
    ../shared beside the code or the working directory (a temporary one)."""
    from volratio.data import picbreeder

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    for var in ("VOLRATIO_DATA", "VOLRATIO_FER_URL", "VOLRATIO_FER_FORK_URL", "VOLRATIO_OFFLINE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(picbreeder, "_repo_root", lambda: tmp_path / "repo")
    (tmp_path / "work").mkdir()
    monkeypatch.chdir(tmp_path / "work")
    picbreeder.genome.cache_clear()
    yield tmp_path
    picbreeder.genome.cache_clear()


@pytest.fixture
def mirror_copy(fresh_machine):
    """`mirror_copy(mirror)`: a writable copy of a mirror folder in `fresh_machine`, to damage."""
    import shutil

    def copy(mirror: Path) -> Path:
        out = fresh_machine / "mirror"
        shutil.copytree(mirror, out)
        for p in out.rglob("*"):
            p.chmod(0o755 if p.is_dir() else 0o644)
        return out

    return copy


@pytest.fixture(
    params=[
        (lambda p: p.write_bytes(p.read_bytes()[: len(p.read_bytes()) // 2]), "does not match its pinned SHA-256"),
        (lambda p: p.write_bytes(b"\x00" + p.read_bytes()[1:]), "does not match its pinned SHA-256"),
        (lambda p: p.unlink(), "could not download"),
    ],
    ids=["truncated", "corrupt", "missing"],
)
def damage(request):
    """`(damage(path), the error's words)`: a downloaded file truncated, corrupted or missing."""
    return request.param


TINY_DEPTH_PLAN = """
[chunks.tiny]
run = "depth_point"
seeds = {seeds}

[chunks.tiny.config]
target = "{target}"
depth = 2
members = 2
width = 4
res = 16
steps = {steps}
"sp.rounds" = 1
"sp.retrain_steps" = 5
max_params = 20
deltas = [-0.25, 0.25]
judge = "stability"
keep_net = {keep}
"""


@pytest.fixture(scope="session")
def depth_plan():
    """`depth_plan(keep=…, target=…, seeds=…, steps=…)`: the text of a plan whose one chunk, "tiny",
    runs `depth_point` on two tiny networks per seed (seconds), storing them when `keep`."""

    def plan(keep: bool = True, target: str = "planted:1:depth=2,width=3", seeds=(0,), steps: int = 20) -> str:
        return TINY_DEPTH_PLAN.format(keep=str(keep).lower(), target=target, seeds=list(seeds), steps=steps)

    return plan


@pytest.fixture(scope="session")
def run_plan():
    """`run_plan(toml, chunk, folder)`: the plan text written to folder/plan.toml and its chunk run into
    folder/reference (progress off); a failed run fails the test. Returns (plan file, root, report)."""
    from volratio.runs import reference as R

    def run(toml: str, chunk: str, folder: Path):
        plan_file, root = folder / "plan.toml", folder / "reference"
        folder.mkdir(parents=True, exist_ok=True)
        plan_file.write_text(toml)
        report = R.run_chunk(R.load_plan(plan_file), chunk, root, progress=False)
        assert not report.failed, report.failed
        return plan_file, root, report

    return run


TOY_PLAN = """
scale = "reference"

[chunks.tiny]
run = "toy"
seeds = [0, 1, 2]

[chunks.tiny.config]
steps = 30

[chunks.tiny.grid]
n = [4, 8]
"""


@pytest.fixture
def toy_store(run_plan, tmp_path):
    """A store of one chunk, `tiny`: 6 runs of the `toy` run function (n ∈ {4, 8} × 3 seeds, seconds).
    Returns (plan file, root)."""
    plan_file, root, report = run_plan(TOY_PLAN, "tiny", tmp_path)
    assert report.total == 6 and len(report.ran) == 6
    return plan_file, root


# end of the shared scaffolding
# ---------------------------------------------------------------------------------------------
