"""One-off: give every stored chunk's manifest (`ROOT/CHUNK/manifest.json`, written before manifests
carried a digest of their content) its digest, after checking its content against the chunk's runs.

For each chunk under ROOT (default results/reference) whose manifest has no `sha256`: the manifest
must read (`volratio.runs.manifest.read`: valid, of this chunk, its totals those of its runs), every
run it records must be a finished run of the chunk's store with the same config, and every finished
run of the store must be in it. Only then is it written again by `volratio.runs.manifest.write`
(its content unchanged, its digest added last); a chunk that fails is named and left as it is.
Afterwards every chunk's runs are read back (`volratio.runs.stored.records`) and compared with what
they were before. Run it once the branches that write manifests are merged: a manifest changed after
it is sealed is refused by every reader.

    PYTHONPATH=. python tools/seal_manifests.py [ROOT]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from volratio.runs import manifest as M
from volratio.runs import stored
from volratio.runs.store import Store


def problem(chunk: str, root: Path) -> str | None:
    """What keeps chunk `chunk`'s manifest from being sealed, or None."""
    try:
        doc = M.read(root / chunk / M.MANIFEST, chunk)
    except M.ManifestError as e:
        return str(e)
    rows = {k: r for k, r in Store(root / chunk).rows.items() if r["status"] == "done"}
    for key, entry in doc["runs"].items():
        if key not in rows:
            return f"run {key} of the manifest is not a finished run of the store"
        if json.loads(rows[key]["config"]) != entry["config"]:
            return f"run {key}: the manifest's config is not the store's"
    missing = sorted(set(rows) - set(doc["runs"]))
    return f"the store's runs {', '.join(missing[:3])} are not in the manifest" if missing else None


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("root", nargs="?", type=Path, default=stored.DEFAULT_ROOT, help="reference root")
    root = parser.parse_args(argv).root
    bad = 0
    for chunk in stored.chunks(root):
        path = root / chunk / M.MANIFEST
        if M.DIGEST in json.loads(path.read_text()):
            print(f"{chunk}: already sealed")
            continue
        why = problem(chunk, root)
        if why:
            bad += 1
            print(f"{chunk}: NOT sealed: {why}")
            continue
        before = stored.records(chunk, root, rescores=True)
        M.write(path, M.read(path, chunk))
        assert stored.records(chunk, root, rescores=True) == before, chunk
        print(f"{chunk}: sealed ({len(before)} runs read back the same)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
