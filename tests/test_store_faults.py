"""Fault injection over a small stored chunk: every kind of file it holds, damaged every way, read by
every reader, ends in a clear error or a correct rebuild — never a traceback, never a number that
differs from the undamaged store's without a line saying so.

The chunk `tiny` (one `depth_point` run keeping its networks, on a planted target) and its recovery
table are stored in a temporary root beside a second chunk, `other` (another seed), whose files the
"swap" fault puts in `tiny`'s place. Each fault is applied to a fresh copy of that root, and each
reader runs on a fresh copy of the damaged one (a reader may repair what it reads).

Outcomes (one word per file kind × fault × reader):
- `unaffected`: the reader does not read that file, or reads it through an intact copy: the same
  output as the undamaged store's;
- `rebuilt`: the same output as the undamaged store's, with a line saying what was rebuilt;
- `refused`: exit status 2 (or a `VolratioError`) with one line naming the problem and the fix;
- `reported`: `results verify` exits 1 naming the damage;
- `flagged`: a different output with a line naming the damage (a listing that shows a damaged run
  as damaged, or leaves it out of the runs it counts as stored);
- `TRACEBACK`, `SILENT` (a different output without a line saying so): failures.

The kill rows kill the writer (`volratio reference run`, then `recovered.table`) before its k-th file
is renamed into place (every file is written to a temporary name and renamed, `atomic_path`), for
every k: a hook in place of the rename, at fixed steps rather than random times, so every run of the
test kills at the same points. The readers of the half-written store must not end in a traceback
(`partial`: they show the runs the killed writer had finished, as a resumable store holds them), and
the writer run again must leave the undamaged store (timings aside): `resumed same`.

`VOLRATIO_FAULT_TABLE=PATH pytest tests/test_store_faults.py` writes the table as Markdown to PATH
(the section "Fault injection" of results/reference/README.md is that file).
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import os
import re
import shutil
import warnings
from pathlib import Path
from typing import NamedTuple

import pytest

from volratio import cli
from volratio.errors import VolratioError
from volratio.rho import recovery
from volratio.runs import recovered
from volratio.runs import reference as R
from volratio.runs import stored as S
from volratio.runs.manifest import MANIFEST
from volratio.runs.store import ARTIFACTS, RECORD, TABLE, Store
from volratio.util import fileio

ROOT = Path(__file__).resolve().parents[1]
CFG = recovery.RecoveryConfig(res=16, controls=1)
KINDS = ("run table", "run record", "manifest", "artifact", "derived table", "derived metadata")
FAULTS = ("truncate to 0", "truncate to half", "flip middle bytes", "delete", "swap with other chunk")
READERS = ("results", "results verify", "reference list", "reference rescore", "recovery table", "chapter readers")
BAD = ("TRACEBACK", "SILENT")


def _file(root: Path, chunk: str, kind: str) -> Path:
    """The file of `kind` in chunk `chunk` (the record and the network of its one run)."""
    key = next(iter(Store(root / chunk).rows))
    return {
        "run table": root / chunk / TABLE,
        "run record": root / chunk / ARTIFACTS / key / RECORD,
        "manifest": root / chunk / MANIFEST,
        "artifact": root / chunk / ARTIFACTS / key / "net.safetensors",
        "derived table": root / chunk / recovered.FILE,
        "derived metadata": root / chunk / recovered.META,
    }[kind]


def _damage(root: Path, kind: str, fault: str) -> None:
    path = _file(root, "tiny", kind)
    data = path.read_bytes()
    if fault == "truncate to 0":
        path.write_bytes(b"")
    elif fault == "truncate to half":
        path.write_bytes(data[: len(data) // 2])
    elif fault == "flip middle bytes":
        mid = len(data) // 2
        path.write_bytes(data[:mid] + bytes(b ^ 0xFF for b in data[mid : mid + 8]) + data[mid + 8 :])
    elif fault == "delete":
        path.unlink()
    elif fault == "swap with other chunk":
        path.write_bytes(_file(root, "other", kind).read_bytes())


# ---------------------------------------------------------------------------------------------
# Readers: each returns what it shows (exit status, output with timings blanked, numbers read)


class Cli(NamedTuple):
    """What a command showed: exit status, stdout (timings blanked), stderr, and numbers it stored."""

    rc: int
    out: str
    err: str
    data: object = None


def _main(*argv) -> Cli:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = cli.main([str(a) for a in argv])
    return Cli(rc, _untimed(out.getvalue()), err.getvalue())


def _untimed(text: str) -> str:
    return re.sub(r"\d+(\.\d+)? (CPU )?s\b", "T s", text)


def results(root: Path, plan: Path):
    return _main("results", root / "tiny")


def verify(root: Path, plan: Path):
    return _main("results", "verify", root, "--chunk", "tiny", "--sample", "1")


def reference_list(root: Path, plan: Path):
    return _main("reference", "list", plan, "--out", root)


def rescore(root: Path, plan: Path):
    shown = _main("reference", "rescore", "tiny", "--judge", "stability", "--root", root, "--no-progress")
    if shown.rc:
        return shown
    scores = S.rescore_table("tiny", root=root)[["source", "member", "score", "scores"]].to_dict("list")
    return shown._replace(out=re.sub(r"ran \d+|skipped \d+", "N", shown.out), data=scores)


def recovery_table(root: Path, plan: Path):
    return recovered.table("tiny", CFG, root).to_dict("list")


def chapter_readers(root: Path, plan: Path, timed: bool = True):
    table = S.table("tiny", root)
    cost = S.cost("tiny", root)
    if not timed:  # a writer run again: its runs' own times
        table = table.drop(columns=["cpu_s", "wall_s"])
        cost = {k: v for k, v in cost.items() if not k.endswith("_s")}
    return table.to_dict("list"), cost, [r["metrics"] for r in S.records("tiny", root)]


READ = dict(zip(READERS, (results, verify, reference_list, rescore, recovery_table, chapter_readers)))


def observe(reader: str, root: Path, plan: Path) -> tuple[str, object, str]:
    """`(how it ended, what it showed, its lines to the user)` of one reader on a copy of `root`."""
    copy = root.parent / f"{root.name}-{reader.replace(' ', '_')}"
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(root, copy)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            value = READ[reader](copy, plan)
        except VolratioError as e:
            return "error", None, str(e)
        except Exception as e:  # noqa: BLE001 - what the test looks for
            return "traceback", None, f"{type(e).__name__}: {e}"
    lines = "\n".join([str(w.message) for w in caught] + ([value.err] if isinstance(value, Cli) else []))
    if isinstance(value, Cli):  # where the copy lies is no part of what a reader shows
        value = value._replace(out=value.out.replace(str(copy), "ROOT"), err="")
    return "ran", value, lines.replace(str(copy), "ROOT").strip()


def outcome(ended: str, shown, lines: str, baseline) -> str:
    if ended == "traceback":
        return "TRACEBACK"
    if ended == "error":
        return "refused" if lines and "\n" not in lines else "TRACEBACK"
    rc = shown.rc if isinstance(shown, Cli) else 0
    if rc == 2:
        errors = [ln for ln in lines.splitlines() if ": error: " in ln]
        return "refused" if len(errors) == 1 and "Traceback" not in lines else "TRACEBACK"
    if rc == 1:
        return "reported" if ": error: " in lines else "SILENT"
    if shown == baseline:
        return "rebuilt" if lines else "unaffected"
    return "flagged" if lines else "SILENT"


# ---------------------------------------------------------------------------------------------
# The stored chunks


@pytest.fixture(scope="module")
def pristine(run_plan, depth_plan, tmp_path_factory):
    """`(root, plan)`: chunks `tiny` and `other` with their recovery tables, and the plan of both."""
    folder = tmp_path_factory.mktemp("faults")
    text = depth_plan(seeds=(0,)) + "\n" + depth_plan(seeds=(1,)).replace("chunks.tiny", "chunks.other")
    plan, root, _ = run_plan(text, "tiny", folder)
    R.run_chunk(R.load_plan(plan), "other", root, progress=False)
    for chunk in ("tiny", "other"):
        recovered.table(chunk, CFG, root)
    return root, plan


@pytest.fixture(scope="module")
def baseline(pristine):
    root, plan = pristine
    seen = {reader: observe(reader, root, plan) for reader in READERS}
    for reader, (ended, shown, lines) in seen.items():
        assert ended == "ran" and (not isinstance(shown, Cli) or shown.rc == 0), (reader, lines)
        assert not lines, (reader, lines)  # the undamaged store reads without a warning
    return {reader: shown for reader, (_, shown, _) in seen.items()}


def _table_md(rows: list) -> str:
    head = "| file | fault | " + " | ".join(READERS) + " |"
    out = [head, "|" + " --- |" * (len(READERS) + 2)]
    out += [f"| {kind} | {fault} | " + " | ".join(cells[r] for r in READERS) + " |" for kind, fault, cells in rows]
    return "\n".join(out)


def test_every_fault_of_every_file_ends_in_a_clear_error_or_a_correct_rebuild(pristine, baseline, tmp_path):
    root, plan = pristine
    rows, problems = [], []
    for kind in KINDS:
        for fault in FAULTS:
            damaged = tmp_path / "damaged"
            shutil.rmtree(damaged, ignore_errors=True)
            shutil.copytree(root, damaged)
            _damage(damaged, kind, fault)
            cells = {}
            for reader in READERS:
                ended, shown, lines = observe(reader, damaged, plan)
                cells[reader] = outcome(ended, shown, lines, baseline[reader])
                if cells[reader] in BAD:
                    problems.append(f"{kind} / {fault} / {reader}: {cells[reader]}: {lines[:300]}")
            rows.append((kind, fault, cells))
    _write_table(rows, "faults")
    counts = {o: sum(c[r] == o for _, _, c in rows for r in READERS) for o in ("TRACEBACK", "SILENT")}
    assert len({k for k, _, _ in rows}) >= 5 and len({f for _, f, _ in rows}) >= 5 and len(READERS) >= 5
    assert counts == {"TRACEBACK": 0, "SILENT": 0}, "\n".join(problems)
    # the damage is seen: each file kind is refused, reported or rebuilt by some reader under each fault
    for kind, fault, cells in rows:
        assert set(cells.values()) - {"unaffected"}, (kind, fault)


class _Killed(BaseException):
    """The writer's death, raised by the hook in place of a file's rename."""


class _KillingOs:
    """`os` for `volratio.util.fileio` whose `replace` (the rename of every file the store writes)
    dies at call `at` (0-based); counts the calls."""

    def __init__(self, at: int | None):
        self.at, self.calls = at, 0

    def __getattr__(self, name):
        return getattr(os, name)

    def replace(self, src, dst):
        if self.calls == self.at:
            raise _Killed(dst)
        self.calls += 1
        os.replace(src, dst)


def _write_tiny(root: Path, plan: Path) -> None:
    """The writer of `tiny`: its runs into its store and manifest, then its recovery table."""
    R.run_chunk(R.load_plan(plan), "tiny", root, progress=False)
    recovered.table("tiny", CFG, root)


def test_a_writer_killed_at_each_write_step_leaves_a_store_that_reads_cleanly_and_resumes(
    pristine, baseline, tmp_path, monkeypatch
):
    root, plan = pristine
    fresh = tmp_path / "fresh"
    shutil.copytree(root, fresh)
    shutil.rmtree(fresh / "tiny")
    count = _KillingOs(None)
    monkeypatch.setattr(fileio, "os", count)
    _write_tiny(fresh, plan)
    steps = count.calls
    assert steps >= 6  # artifact, record, run table, manifest (twice), recovery table and metadata
    rows, problems = [], []
    for at in range(steps):
        killed = tmp_path / f"killed-{at}"
        shutil.copytree(root, killed)
        shutil.rmtree(killed / "tiny")
        hook = _KillingOs(at)
        monkeypatch.setattr(fileio, "os", hook)
        with pytest.raises(_Killed) as death:
            _write_tiny(killed, plan)
        monkeypatch.setattr(fileio, "os", os)
        what = Path(str(death.value)).name
        cells = {}
        for reader in READERS:
            ended, shown, lines = observe(reader, killed, plan)
            shown, want = _untimed_view(reader, ended, shown, baseline[reader], killed, root, plan)
            seen = outcome(ended, shown, lines, want)
            cells[reader] = "partial" if seen == "SILENT" else seen  # the runs the killed writer finished
            if seen == "TRACEBACK":
                problems.append(f"killed before {what}: {reader}: {lines[:300]}")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a table left without its metadata is recomputed, saying so
            _write_tiny(killed, plan)  # run again: the store is whole
        for reader in READERS:
            ended, shown, lines = observe(reader, killed, plan)
            shown, want = _untimed_view(reader, ended, shown, baseline[reader], killed, root, plan)
            again = outcome(ended, shown, lines, want)
            cells[reader] += ", resumed " + ("same" if again in ("unaffected", "rebuilt") else again)
            if again not in ("unaffected", "rebuilt"):
                problems.append(f"killed before {what}, run again: {reader}: {again}: {lines[:300]}")
        rows.append((f"writer killed before renaming {what}", f"step {at + 1} of {steps}", cells))
        shutil.rmtree(killed)
    _write_table(rows, "kills")
    assert not problems, "\n".join(problems)


def _untimed_view(reader: str, ended: str, shown, want, root: Path, pristine: Path, plan: Path) -> tuple:
    """What a reader showed and the undamaged store's, without the times a writer run again measures
    anew (its runs' CPU and wall seconds; `volratio results`' attempts and seconds columns)."""
    if ended != "ran":
        return shown, want
    if reader == "chapter readers":
        try:
            return chapter_readers(root, plan, timed=False), chapter_readers(pristine, plan, timed=False)
        except VolratioError:
            return shown, want
    if reader == "results":
        return shown._replace(out=_untimed_rows(shown.out)), want._replace(out=_untimed_rows(want.out))
    return shown, want


def test_a_manifest_left_behind_by_a_kill_is_rebuilt_not_refused(pristine, tmp_path, monkeypatch):
    """A writer killed between storing its second run and writing the manifest: the readers read both
    runs (the second's CPU time is lost: NaN, marked rebuilt), and the writer run again writes it."""
    root, plan = pristine
    work = tmp_path / "ref"
    shutil.copytree(root, work)
    two = tmp_path / "two.toml"
    two.write_text(plan.read_text().replace("seeds = [0]", "seeds = [0, 2]", 1))
    renames = []

    class Dying(_KillingOs):
        def replace(self, src, dst):
            if Path(dst).name == MANIFEST:
                raise _Killed(dst)
            renames.append(Path(dst).name)
            os.replace(src, dst)

    monkeypatch.setattr(fileio, "os", Dying(None))
    with pytest.raises(_Killed):
        R.run_chunk(R.load_plan(two), "tiny", work, progress=False)
    monkeypatch.setattr(fileio, "os", os)
    assert renames[-1] == TABLE  # the run is in the store, the manifest is the old one
    runs = S.records("tiny", work)
    assert len(runs) == 2 and sum(r["cpu_s"] != r["cpu_s"] for r in runs) == 1  # the lost CPU time: NaN
    assert R.verify(work, sample=2, chunk="tiny").failures == []
    R.run_chunk(R.load_plan(two), "tiny", work, progress=False)  # nothing to run: the manifest is written
    man = json.loads((work / "tiny" / MANIFEST).read_text())
    assert len(man["runs"]) == 2 and sum(bool(e.get("rebuilt")) for e in man["runs"].values()) == 1


def _untimed_rows(text: str) -> str:
    """`volratio results`' listing without its attempts and seconds columns (a rerun's own)."""
    return "\n".join(
        " ".join(ln.split()[:-2]) if ln.startswith(" ") or ln[:1].isalnum() else ln for ln in text.splitlines()
    )


def _write_table(rows: list, part: str) -> None:
    path = os.environ.get("VOLRATIO_FAULT_TABLE")
    if path:
        Path(path).with_suffix(f".{part}.md").write_text(_table_md(rows) + "\n")


def test_a_changed_digit_that_still_parses_is_caught_by_the_manifest_s_digest(pristine, tmp_path):
    root, _ = pristine
    work = tmp_path / "ref"
    shutil.copytree(root, work)
    path = work / "tiny" / MANIFEST
    text = path.read_text()
    cpu = re.search(r'"cpu_s": (\d)', text)
    path.write_text(text[: cpu.start(1)] + str((int(cpu.group(1)) + 1) % 10) + text[cpu.end(1) :])
    json.loads(path.read_text())  # still valid JSON
    with pytest.raises(
        VolratioError, match=r"manifest.json: damaged manifest \(its content does not match its SHA-256\)"
    ):
        S.records("tiny", work)
    # without a digest (as the stored chunks' manifests until sealed) it is checked against itself
    doc = json.loads(path.read_text())
    del doc["sha256"]
    path.write_text(json.dumps(doc))
    with pytest.raises(VolratioError, match="its totals are not those of its runs"):
        S.records("tiny", work)
    doc = json.loads((root / "tiny" / MANIFEST).read_text())
    del doc["sha256"]
    path.write_text(json.dumps(doc))
    assert len(S.records("tiny", work)) == 1


def test_the_sealing_tool_gives_checked_manifests_their_digest_and_leaves_the_others(pristine, tmp_path, capsys):
    spec = importlib.util.spec_from_file_location("seal_manifests", ROOT / "tools" / "seal_manifests.py")
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    root, _ = pristine
    work = tmp_path / "ref"
    shutil.copytree(root, work)
    for chunk in ("tiny", "other"):  # as the stored chunks' manifests: no digest
        doc = json.loads((work / chunk / MANIFEST).read_text())
        del doc["sha256"]
        (work / chunk / MANIFEST).write_text(json.dumps(doc))
    doc["runs"][next(iter(doc["runs"]))]["config"]["seed"] = 7  # `other`'s manifest: not its store's config
    (work / "other" / MANIFEST).write_text(json.dumps(doc))
    before = S.records("tiny", work)
    assert tool.main([str(work)]) == 1
    out = capsys.readouterr().out
    assert "tiny: sealed (1 runs read back the same)" in out and "other: NOT sealed" in out
    assert "sha256" in json.loads((work / "tiny" / MANIFEST).read_text()) and S.records("tiny", work) == before
    assert "sha256" not in json.loads((work / "other" / MANIFEST).read_text())
    assert tool.main([str(work)]) == 1 and "tiny: already sealed" in capsys.readouterr().out
