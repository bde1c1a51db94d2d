"""Build, show and record the clear-drawings verdict set (`volratio.calibration.clear16`).

    python tools/clear16_verdicts.py build DIR [BATCH]  # a batch's rows.csv, sampling.csv and first-pass mosaics
    python tools/clear16_verdicts.py record DIR   # DIR/answers1.json -> data/judge_reference/clear16/verdicts.csv
    python tools/clear16_verdicts.py repeat DIR   # the blind repeat's mosaics (a seeded 30% of the batch, labels mixed)
    python tools/clear16_verdicts.py record2 DIR  # DIR/answers2.json -> the verdicts' pass2 column
    python tools/clear16_verdicts.py report DIR   # DIR/report.md: repeat κ, judges' κ, false rejections per label

BATCH (default 1) names a config of `clear16.BATCHES`. A later batch is drawn from fresh candidates,
none of whose images is already in the stored set; `record` appends it to the stored verdicts and
sampling table and recomputes every row's `weight` for the union (`clear16.union_weights`).

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
from volratio.calibration import judge_agreement as J
from volratio.calibration import repeatability as R

REPORT_JUDGES = ("anchored-v2", "anchored-xfit", "anchored-ssim")  # the judges the set's README reports


def _rows_images(folder: Path):
    rows = pd.read_csv(folder / "rows.csv")
    images = C.render(rows, C.networks())
    if A.image_sha(images) != rows["sha256"].tolist():
        sys.exit(f"{folder}/rows.csv: the images no longer regenerate bit for bit (sha256 differs); rebuild the set")
    return rows, images


def build(folder: Path, batch: int = 1) -> None:
    if batch not in C.BATCHES:
        sys.exit(f"batch {batch}: choose one of {sorted(C.BATCHES)} (clear16.BATCHES)")
    cfg = C.BATCHES[batch]
    previous = C.load_verdicts() if batch > 1 else None
    if previous is not None and (previous["batch"] >= batch).any():
        sys.exit(f"batch {batch} is already in {C.VERDICTS_CSV}; a batch is drawn and inspected once")
    rows, images, sampling = C.build(cfg=cfg, previous=previous)
    folder.mkdir(parents=True, exist_ok=True)
    rows.to_csv(folder / "rows.csv", index=False)
    sampling.to_csv(folder / "sampling.csv", index=False)
    index = {}
    for k, (label, ids, m) in enumerate(A.judging_mosaics(rows, images, seed=cfg.seed, per_mosaic=36)):
        name = f"p1_{k:02d}_{label}.png"
        m.save(folder / name)
        index[name] = ids
    (folder / "index1.json").write_text(json.dumps(index, indent=1))
    print(f"batch {batch}: {len(rows)} rows ({len(sampling)} candidates), {len(index)} mosaics in {folder}")


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
    sampling = pd.read_csv(folder / "sampling.csv")
    v = _answers(folder, 1)
    rows["pass1"] = rows["id"].map(v)
    rows["pass2"] = np.nan
    if int(rows["batch"].iloc[0]) == 1 and C.VERDICTS_CSV.exists():
        sys.exit(f"{C.VERDICTS_CSV} exists: batch 1 is recorded once (remove the file to record the set afresh)")
    if int(rows["batch"].iloc[0]) > 1:
        stored = C.load_verdicts()
        if set(stored["id"]) & set(rows["id"]) or set(stored["sha256"]) & set(rows["sha256"]):
            sys.exit(f"{folder}/rows.csv: ids or images already in {C.VERDICTS_CSV}; rebuild the batch")
        rows = pd.concat([stored, rows], ignore_index=True)
        sampling = pd.concat([pd.read_csv(C.SAMPLING_CSV), sampling], ignore_index=True)
    rows["weight"] = C.union_weights(rows, sampling)
    C.SET_DIR.mkdir(parents=True, exist_ok=True)
    rows.to_csv(C.VERDICTS_CSV, index=False)
    sampling.to_csv(C.SAMPLING_CSV, index=False)
    print(f"{len(rows)} verdicts, {int(rows['pass1'].sum())} shown, written to {C.VERDICTS_CSV}")


def repeat(folder: Path) -> None:
    rows, images = _rows_images(folder)
    cfg = C.BATCHES[int(rows["batch"].iloc[0])]
    sub = C.repeat_rows(rows, seed=cfg.seed + 1)
    index = {}
    for k, (ids, m) in enumerate(C.pair_mosaics(sub, [images[i] for i in sub.index], seed=cfg.seed + 2)):
        name = f"p2_{k:02d}.png"
        m.save(folder / name)
        index[name] = ids
    (folder / "index2.json").write_text(json.dumps(index, indent=1))
    print(f"{len(sub)} rows in {len(index)} mosaics in {folder}")


def record2(folder: Path) -> None:
    rows = C.load_verdicts()
    v = _answers(folder, 2)
    if unknown := set(v) - set(rows["id"]):
        sys.exit(f"answers2.json: rows {sorted(unknown)[:5]} are not in {C.VERDICTS_CSV}; record the first pass first")
    hit = rows["id"].isin(list(v))
    rows.loc[hit, "pass2"] = rows.loc[hit, "id"].map(v)
    rows.to_csv(C.VERDICTS_CSV, index=False)
    agree = (rows["pass1"] == rows["pass2"])[hit]
    print(f"pass2 on {len(agree)} rows: {int(agree.sum())} agree with pass1")


def _table(df: pd.DataFrame) -> str:
    fmt = {c: "{:.3f}" for c in df.columns if df[c].dtype.kind == "f"}
    cells = [[fmt.get(c, "{}").format(v) for c, v in row.items()] for _, row in df.iterrows()]
    lines = ["| " + " | ".join(df.columns) + " |", "|" + " --- |" * len(df.columns)]
    return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in cells])


def report(folder: Path) -> None:
    """The tables of the set's README, from the stored verdicts (seeded bootstraps: same numbers every run)."""
    loaded = J.load("clear16")
    df, images = loaded
    parts = ["## Repeat κ per group (weighted)", _table(R.repeat_kappa(df, n_boot=2000).drop(columns=["level"]))]
    by_batch = pd.concat([R.repeat_kappa(part, levels=((),), n_boot=2000).head(1).assign(group=f"batch {b}")
                          for b, part in df.groupby("batch")])  # fmt: skip
    parts += ["## Repeat κ per batch (weighted)", _table(by_batch[["group", "n", "agree", "kappa", "lo", "hi"]])]
    cols = ["group", "n", "kappa", "lo", "hi", "repeat_kappa", "ambiguous", "both_keep", "false_rejections", "meets"]
    for judge in REPORT_JUDGES:
        t = J.compare(judge, sets=("clear16",), loaded={"clear16": loaded})
        parts += [f"## {judge} (held out: {bool(t['held_out'].all())})", _table(t[cols])]
    parts += ["## False rejections per label (images both inspections keep)",
              _table(J.false_rejections(REPORT_JUDGES, df, images))]  # fmt: skip
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "report.md").write_text("\n\n".join(parts) + "\n")
    print(f"{len(df)} verdicts reported in {folder / 'report.md'}")


COMMANDS = {"build": build, "record": record, "repeat": repeat, "record2": record2, "report": report}

if __name__ == "__main__":
    if len(sys.argv) == 2 and sys.argv[1] in ("-h", "--help"):
        print(
            f"usage: python tools/clear16_verdicts.py {{{','.join(COMMANDS)}}} DIR  (build takes a BATCH after DIR)\n"
            + (__doc__ or "")
        )
        sys.exit(0)
    if not 3 <= len(sys.argv) <= 4 or sys.argv[1] not in COMMANDS or (len(sys.argv) == 4 and sys.argv[1] != "build"):
        sys.exit(
            f"usage: python tools/clear16_verdicts.py {{{','.join(COMMANDS)}}} DIR  (build takes a BATCH after DIR)"
        )
    if len(sys.argv) == 4:
        if not sys.argv[3].isdigit():
            sys.exit(f"batch {sys.argv[3]!r}: give a batch number of clear16.BATCHES, e.g. 2")
        build(Path(sys.argv[2]), int(sys.argv[3]))
    else:
        COMMANDS[sys.argv[1]](Path(sys.argv[2]))
