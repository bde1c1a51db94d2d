"""Build, show and record the clear-drawings verdict set (`volratio.calibration.clear16`).

    python tools/clear16_verdicts.py build DIR     # rows.csv, sampling.csv and the first pass's mosaics in DIR
    python tools/clear16_verdicts.py record DIR    # DIR/answers1.json -> data/judge_reference/clear16/verdicts.csv
    python tools/clear16_verdicts.py repeat DIR    # the blind repeat's mosaics (a seeded 30%, labels mixed)
    python tools/clear16_verdicts.py record2 DIR   # DIR/answers2.json -> the verdicts' pass2 column

An answers file maps each mosaic's file name to the tile numbers judged "shows the label"; the
`index*.json` files map each mosaic's tiles to row ids. The mosaics show no score, network or δ.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from volratio.calibration import anchored_set as A
from volratio.calibration import clear16 as C


def _rows_images(folder: Path):
    rows = pd.read_csv(folder / "rows.csv")
    images = C.render(rows, C.networks())
    if A.image_sha(images) != rows["sha256"].tolist():
        sys.exit(f"{folder}/rows.csv: the images no longer regenerate bit for bit (sha256 differs); rebuild the set")
    return rows, images


def build(folder: Path) -> None:
    rows, images, sampling = C.build()
    folder.mkdir(parents=True, exist_ok=True)
    rows.to_csv(folder / "rows.csv", index=False)
    sampling.to_csv(folder / "sampling.csv", index=False)
    index = {}
    for k, (label, ids, m) in enumerate(A.judging_mosaics(rows, images, seed=C.Clear16Config().seed, per_mosaic=36)):
        name = f"p1_{k:02d}_{label}.png"
        m.save(folder / name)
        index[name] = ids
    (folder / "index1.json").write_text(json.dumps(index, indent=1))
    print(f"{len(rows)} rows ({len(sampling)} candidates), {len(index)} mosaics in {folder}")


def _answers(folder: Path, n: int) -> dict[int, int]:
    index = json.loads((folder / f"index{n}.json").read_text())
    answers = json.loads((folder / f"answers{n}.json").read_text())
    if set(answers) != set(index):
        sys.exit(
            f"answers{n}.json: mosaics {sorted(set(index) ^ set(answers))} missing or unknown; answer every mosaic"
        )
    out = {}
    for name, ids in index.items():
        kept = set(answers[name])
        if bad := kept - set(range(1, len(ids) + 1)):
            sys.exit(f"answers{n}.json: {name} has no tiles {sorted(bad)}")
        out |= {rid: int(t + 1 in kept) for t, rid in enumerate(ids)}
    return out


def record(folder: Path) -> None:
    rows = pd.read_csv(folder / "rows.csv")
    v = _answers(folder, 1)
    rows["pass1"] = rows["id"].map(v)
    rows["pass2"] = np.nan
    C.SET_DIR.mkdir(parents=True, exist_ok=True)
    rows.to_csv(C.VERDICTS_CSV, index=False)
    print(f"{len(rows)} verdicts, {int(rows['pass1'].sum())} shown, written to {C.VERDICTS_CSV}")


def repeat(folder: Path) -> None:
    rows, images = _rows_images(folder)
    sub = C.repeat_rows(rows)
    index = {}
    for k, (ids, m) in enumerate(C.pair_mosaics(sub, [images[i] for i in sub.index])):
        name = f"p2_{k:02d}.png"
        m.save(folder / name)
        index[name] = ids
    (folder / "index2.json").write_text(json.dumps(index, indent=1))
    print(f"{len(sub)} rows in {len(index)} mosaics in {folder}")


def record2(folder: Path) -> None:
    rows = C.load_verdicts()
    v = _answers(folder, 2)
    rows["pass2"] = rows["id"].map(v)
    rows.to_csv(C.VERDICTS_CSV, index=False)
    agree = (rows["pass1"] == rows["pass2"])[rows["pass2"].notna()]
    print(f"pass2 on {len(agree)} rows: {int(agree.sum())} agree with pass1")


COMMANDS = {"build": build, "record": record, "repeat": repeat, "record2": record2}

if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in COMMANDS:
        sys.exit(f"usage: python tools/clear16_verdicts.py {{{','.join(COMMANDS)}}} DIR")
    COMMANDS[sys.argv[1]](Path(sys.argv[2]))
