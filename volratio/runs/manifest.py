"""A chunk's manifest, `ROOT/NAME/manifest.json`: read and written with a digest of its own content.

The manifest records what is needed to trust and re-run a chunk (`volratio.runs.reference` says what
it holds); the store beside it holds the runs. This module is the one place that reads or writes it.

Integrity:

- `write` writes it atomically, its totals (`totals`) recomputed from its runs and, last, `sha256`:
  the SHA-256 of the rest of its content (`digest`), so that a changed digit that still parses is
  caught;
- `read` refuses, with one line naming the file and the fix (`ManifestError`), a manifest that is
  not valid JSON, not a manifest, of another chunk (swapped), or whose content does not match its
  digest;
- a manifest without a digest (the stored chunks' of `results/reference/` until
  `tools/seal_manifests.py` gives them one, or a writer next updates them) is checked against
  itself: its totals must equal those of its runs, and its chunk name its folder's. A changed digit
  in its per-run entries is not caught until it carries a digest;
- a writer killed between writing a run into the store and the manifest leaves a manifest that lacks
  the run: `rebuild` adds the store's finished runs the manifest lacks (from their rows: config,
  seed, wall seconds; their CPU seconds are lost with the kill and recorded as NaN, and the entry is
  marked `"rebuilt": true`). Readers do this in memory; writers write it back.

Used by `volratio.runs.stored` (readers: every chapter that reads `results/reference/`),
`volratio.runs.reference` and `volratio.runs.score` (writers).
"""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path

from ..errors import VolratioError
from ..util.fileio import atomic_path

MANIFEST = "manifest.json"
DIGEST = "sha256"  # the manifest's own digest: SHA-256 of its other content (`digest`)
RESCORE = "rescore"  # the run function of the score stage (`volratio.runs.score.point`)
TOTALS = ("runs_done", "cpu_s_total", "wall_s_total", "gpu_s_total", "rescores_done", "rescore_cpu_s_total")


class ManifestError(VolratioError, ValueError):
    """A chunk's manifest that is missing, damaged or not the chunk's."""


def digest(doc: dict) -> str:
    """SHA-256 of a manifest's content without its digest (canonical JSON: sorted keys, no spaces)."""
    body = {k: v for k, v in doc.items() if k != DIGEST}
    return hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def totals(runs: dict) -> dict:
    """`runs_done`, `cpu_s_total`, `wall_s_total` of a manifest's runs: the chunk's own runs; the
    rescore runs stored beside them (the score stage, `volratio.runs.score`, marked `"run": "rescore"`) are counted
    apart (`rescores_done`, `rescore_cpu_s_total`) when there are any; `gpu_s_total` sums the runs'
    GPU seconds when any run computed on CUDA. A NaN CPU time (unknown) counts as none."""

    def sums(rs):
        cpu = sum(r["cpu_s"] for r in rs if r["cpu_s"] == r["cpu_s"])
        return len(rs), round(cpu, 1), round(sum(r["wall_s"] for r in rs), 1)

    own = [r for r in runs.values() if r.get("run") != RESCORE]
    rescored = [r for r in runs.values() if r.get("run") == RESCORE]
    n, cpu, wall = sums(own)
    out = {"runs_done": n, "cpu_s_total": cpu, "wall_s_total": wall}
    if any("gpu_s" in r for r in own):
        out["gpu_s_total"] = round(sum(r.get("gpu_s", 0.0) for r in own), 1)
    if rescored:
        n, cpu, _ = sums(rescored)
        out.update(rescores_done=n, rescore_cpu_s_total=cpu)
    return out


def write(path: "str | Path", doc: dict) -> None:
    """Write a chunk's manifest `doc` atomically: its totals (`totals`) updated from its runs, its
    digest last."""
    head = {k: doc[k] for k in ("chunk", "spec", "runs_total") if k in doc}
    rest = {k: v for k, v in doc.items() if k not in head and k not in TOTALS and k != DIGEST}
    out = {**head, **totals(doc["runs"]), **rest}
    out[DIGEST] = digest(out)
    with atomic_path(path) as tmp:
        tmp.write_text(json.dumps(out, indent=1, sort_keys=False) + "\n")


def read(path: "str | Path", chunk: str | None = None) -> dict:
    """The manifest at `path` (of chunk `chunk`, when given), checked (see the module's docstring);
    `ManifestError`, one line naming the file and the fix, when it is missing or damaged."""
    path = Path(path)
    name = chunk or path.parent.name
    if not path.is_file():
        raise ManifestError(f"{path}: no manifest; run the chunk with `volratio reference run PLAN --chunk {name}`")
    fix = (
        f"restore it (`git checkout -- {path}` for a committed chunk), or delete it and re-run the chunk "
        f"(`volratio reference run PLAN --chunk {name}`), which rebuilds it from the stored runs"
    )
    try:
        doc = json.loads(path.read_bytes().decode("utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as e:
        detail = " ".join(str(e).split())
        raise ManifestError(f"{path}: damaged manifest (not valid JSON: {detail}); {fix}") from None
    if not (isinstance(doc, dict) and isinstance(doc.get("runs"), dict) and isinstance(doc.get("sessions"), list)):
        raise ManifestError(f"{path}: damaged manifest (not a chunk's manifest: no runs and sessions); {fix}")
    if not all(isinstance(r, dict) for r in doc["runs"].values()):
        raise ManifestError(f"{path}: damaged manifest (a run entry is not a table); {fix}")
    if chunk is not None and doc.get("chunk", chunk) != chunk:  # a score stage's first manifest names none
        raise ManifestError(f"{path}: the manifest of chunk {doc['chunk']!r}, not of {chunk!r}; {fix}")
    if DIGEST in doc:
        if doc[DIGEST] != digest(doc):
            raise ManifestError(f"{path}: damaged manifest (its content does not match its SHA-256); {fix}")
        return doc
    try:  # without a digest: its totals must be those of its runs
        want = totals(doc["runs"])
    except (KeyError, TypeError) as e:
        raise ManifestError(f"{path}: damaged manifest (a run entry lacks {e}); {fix}") from None
    if any(not _same(doc.get(k), v) for k, v in want.items()):
        raise ManifestError(f"{path}: damaged manifest (its totals are not those of its runs); {fix}")
    return doc


def _same(a, b) -> bool:
    return isinstance(a, (int, float)) and (a == b or (math.isnan(a) and math.isnan(b)))


def rebuild(doc: dict, rows) -> list[str]:
    """Add to manifest `doc`, in place, every finished run among the store rows `rows`
    (`volratio.runs.store.Store.rows` values) that it lacks (see the module's docstring); returns the
    keys added."""
    runs, sessions = doc.setdefault("runs", {}), doc.setdefault("sessions", [])
    added = []
    for row in rows:
        if row["status"] != "done" or row["key"] in runs:
            continue
        config = json.loads(row["config"])
        entry = {
            "config": config,
            "seed": config.get("seed"),
            "wall_s": round(float(row["seconds"]), 3),
            "cpu_s": float("nan"),  # the CPU time was lost with the kill that left the manifest behind
            "finished_at": row["finished_at"],
            "session": len(sessions),
            "kind": (sessions[-1] if sessions else {}).get("kind"),
            "rebuilt": True,
        }
        if row["run"] == RESCORE:
            entry["run"] = RESCORE
        runs[row["key"]] = entry
        added.append(row["key"])
    if added:
        doc.update(totals(runs))
    return added
