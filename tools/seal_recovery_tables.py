"""One-off: give the recovery tables kept beside the stored chunks (`recovery.parquet`, written before
their metadata held the table's SHA-256) that hash, after checking every row.

For each chunk under ROOT (default results/reference) whose `recovery.json` has no `table_sha256`:
every network of the chunk is checked against the SHA-256 its run recorded and scored again under the
table's own config (`volratio.runs.recovered.score`); only when every row equals the kept one exactly
is the table's SHA-256 added to its metadata (written atomically; the table itself is not touched).
A chunk whose table differs is left as it is and named. Afterwards `recovered.table` reads every
chunk's table as before (checked here too), and `volratio results verify` checks it against its hash.

    PYTHONPATH=. python tools/seal_recovery_tables.py [ROOT]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import pandas as pd

from volratio.rho import recovery
from volratio.runs import recovered, stored
from volratio.runs.store import sha256_file
from volratio.util.fileio import write_text_atomic


def seal(chunk: str, root: Path) -> str:
    """Check and seal one chunk's table; returns what was done, in words."""
    folder = root / chunk
    meta = json.loads((folder / recovered.META).read_text())
    if "table_sha256" in meta:
        return "already sealed"
    kept = pd.read_parquet(folder / recovered.FILE)
    cfg = recovery.RecoveryConfig(**meta["config"])
    fresh = recovered.recompute(chunk, cfg, root)  # every network checked against its run's SHA-256
    try:
        pd.testing.assert_frame_equal(fresh, kept, check_exact=True)
    except AssertionError as e:
        return f"NOT sealed: the kept table differs from its networks' scores ({' '.join(str(e).split())[:200]})"
    write_text_atomic(
        folder / recovered.META,
        json.dumps({**meta, "table_sha256": sha256_file(folder / recovered.FILE)}, indent=1) + "\n",
    )
    pd.testing.assert_frame_equal(recovered.check(chunk, root), kept, check_exact=True)
    pd.testing.assert_frame_equal(recovered.table(chunk, cfg, root), kept, check_exact=True)
    return f"sealed: {len(kept)} rows recomputed exactly, read back the same"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("root", nargs="?", type=Path, default=stored.DEFAULT_ROOT, help="reference root")
    root = parser.parse_args(argv).root
    bad = 0
    for chunk in stored.chunks(root):
        if (root / chunk / recovered.META).is_file():
            what = seal(chunk, root)
            bad += what.startswith("NOT")
            print(f"{chunk}: {what}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
