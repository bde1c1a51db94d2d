"""Build the anchored verdict set (`volratio.calibration.anchored_set`): networks, judging mosaics, the CSV.

    python tools/anchored_verdicts.py networks            # train/build and store every network (CPU-minutes)
    python tools/anchored_verdicts.py mosaics DIR [--pass 2]   # mosaics of the rows not yet judged, + DIR/index1.json
    python tools/anchored_verdicts.py record DIR...       # each DIR/answers.json (+ answers2.json) → verdicts.csv
    python tools/anchored_verdicts.py fit                 # fit the anchored judges' rules → volratio/judges/rules/
                                                          # (the default, anchored-v2, on degraded.csv too)
    python tools/anchored_verdicts.py mosaics DIR --new   # the held-out rows on five new targets
    python tools/anchored_verdicts.py record DIR --new    # their answers → new_targets.csv (never fitted on)
    python tools/anchored_verdicts.py mosaics DIR --fork  # the thirteen fork targets' networks and twins
    python tools/anchored_verdicts.py record DIR --fork   # their answers → fork_targets.csv
    python tools/anchored_verdicts.py mosaics DIR --sparse  # the sparse regime's networks (depth_sparse_picbreeder)
    python tools/anchored_verdicts.py record DIR --sparse   # their answers → sparse_regime.csv (never fitted on)
    python tools/anchored_verdicts.py mosaics DIR --degraded  # recognisable but degraded drawings (calibration.degraded)
    python tools/anchored_verdicts.py record DIR --degraded   # their answers → degraded.csv (the gate is fitted on them)

`answers.json` maps each mosaic's file name to the tile numbers judged "shows the label" (every
other tile: not). The first pass judges every new row; the second pass (`--pass 2`) a seeded 20%
of them, shuffled afresh with new numbering. Rows shared with the first verdict set (the
Picbreeder and FER SGD networks at 64×64) are copied with their verdicts after their images are
checked to be the same (SHA-256 of the uint8 image).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from volratio.calibration import anchored_set as A
from volratio.calibration import reference_verdicts as rv

SECOND_PASS = 0.2


def new_rows() -> pd.DataFrame:
    nets = A.networks()
    rows = A.sample_rows(A.AnchoredSetConfig(), nets)
    rows["sha256"] = A.image_sha(A.render(rows, nets))
    return rows, nets


def cmd_networks(args) -> None:
    nets = A.build_networks()
    A.save_networks(nets)
    print(f"stored {len(nets)} networks in {A.NETWORKS_DIR}")


KEY = ["network", "kernel", "row", "col", "delta", "res"]


def unjudged(rows: pd.DataFrame) -> pd.DataFrame:
    """The rows not yet in the stored verdicts (networks added in a later batch)."""
    if not A.VERDICTS_CSV.exists():
        return rows
    done = set(map(tuple, A.load_verdicts()[KEY].astype(str).to_numpy().tolist()))
    return rows[[tuple(r) not in done for r in rows[KEY].astype(str).to_numpy().tolist()]]


def _numbered(rows: pd.DataFrame, nets: dict):
    """`(rows, nets)` with each row's id and the SHA-256 of its rendered image."""
    rows.insert(0, "id", np.arange(len(rows)))
    rows["sha256"] = A.image_sha(A.render(rows, nets))
    return rows, nets


def held_out_rows() -> pd.DataFrame:
    """The held-out rows on new targets (`anchored_set.sample_new_rows`) with ids and image hashes."""
    nets = A.new_target_networks()
    return _numbered(A.sample_new_rows(A.AnchoredSetConfig(), nets), nets)


def fork_rows() -> pd.DataFrame:
    """The rows on the thirteen fork targets (`anchored_set.sample_fork_rows`) with ids and hashes."""
    nets = A.fork_networks()
    return _numbered(A.sample_fork_rows(A.AnchoredSetConfig(), nets), nets)


def sparse_rows() -> pd.DataFrame:
    """The sparse regime's rows (`anchored_set.sample_sparse_rows`) with ids and hashes."""
    nets = A.sparse_networks()
    return _numbered(A.sample_sparse_rows(A.AnchoredSetConfig(), nets), nets)


def degraded_rows() -> pd.DataFrame:
    """`(rows, images)`: the degraded drawings (`volratio.calibration.degraded.rows`), with ids and
    hashes; their images are edits and stored renders, not rows of a network to render."""
    from volratio.calibration import degraded

    return degraded.rows()


def cmd_mosaics(args) -> None:
    if args.degraded:
        rows, images = degraded_rows()
    elif args.sparse:
        rows, nets = sparse_rows()
    elif args.fork:
        rows, nets = fork_rows()
    elif args.new:
        rows, nets = held_out_rows()
    else:
        rows, nets = new_rows()
        rows.insert(0, "id", np.arange(len(rows)))
        rows = unjudged(rows)
    if not args.degraded:
        images = A.render(rows, nets)
    if args.pass_ == 2:
        rng = np.random.default_rng(2)
        pick = np.sort(rng.permutation(len(rows))[: round(SECOND_PASS * len(rows))])
        rows, images = rows.iloc[pick], [images[i] for i in pick]
    out = Path(args.dir)
    out.mkdir(parents=True, exist_ok=True)
    index = {}
    for i, (label, ids, img) in enumerate(A.judging_mosaics(rows, images, seed=args.pass_)):
        name = f"pass{args.pass_}_{i:02d}.png"
        img.save(out / name)
        index[name] = {"label": label, "ids": [int(x) for x in ids]}
    (out / f"index{args.pass_}.json").write_text(json.dumps(index, indent=1))
    print(f"{len(index)} mosaics, {sum(len(v['ids']) for v in index.values())} images in {out}")


def _verdicts(out: Path, p: int) -> dict[int, int]:
    index = json.loads((out / f"index{p}.json").read_text())
    answers = json.loads(
        (out / ("answers.json" if p == 1 else "answers2.json")).read_text()
    )  # tile numbers judged "shows the label"
    v = {}
    for name, m in index.items():
        kept = set(answers[name])
        if bad := kept - set(range(1, len(m["ids"]) + 1)):
            sys.exit(f"{name}: tiles {sorted(bad)} do not exist")
        for t, i in enumerate(m["ids"], start=1):
            v[i] = int(t in kept)
    return v


def with_answers(rows: pd.DataFrame, dirs, source: str) -> pd.DataFrame:
    """`rows` with `pass1` (and `pass2`) from each judging folder's answers, and `source`; every
    row must have a first-pass answer."""
    p1, p2 = {}, {}
    for d in dirs:  # one folder per judging batch
        p1.update(_verdicts(Path(d), 1))
        if (Path(d) / "answers2.json").exists():
            p2.update(_verdicts(Path(d), 2))
    if len(p1) != len(rows):
        sys.exit(f"pass 1 judged {len(p1)} of {len(rows)} images")
    return rows.assign(pass1=rows["id"].map(p1), pass2=rows["id"].map(p2), source=source)


def cmd_record(args) -> None:
    if args.degraded:
        from volratio.calibration import degraded

        rows = with_answers(degraded_rows()[0], args.dirs, "degraded")
        rows.to_csv(degraded.DEGRADED_CSV, index=False)
        return print(f"wrote {degraded.DEGRADED_CSV}: {len(rows)} rows")
    if args.sparse:
        rows = with_answers(sparse_rows()[0], args.dirs, "held out")
        rows.to_csv(A.SPARSE_CSV, index=False)
        return print(f"wrote {A.SPARSE_CSV}: {len(rows)} rows")
    if args.fork:
        rows = with_answers(fork_rows()[0], args.dirs, "fork")
        rows.to_csv(A.FORK_CSV, index=False)
        return print(f"wrote {A.FORK_CSV}: {len(rows)} rows")
    if args.new:
        return record_held_out(args)
    rows, _ = new_rows()
    rows.insert(0, "id", np.arange(len(rows)))
    rows = with_answers(rows, args.dirs, "new")
    old = rv.load_verdicts()
    shared = old[old.group.isin(A.DATA_GROUPS)].copy()
    check = rv.render_rows(shared.reset_index(drop=True), A.networks(groups=list(A.DATA_GROUPS)))
    if rv.image_sha(check) != shared["sha256"].tolist():
        sys.exit("the shared Picbreeder/FER rows do not regenerate the first set's images")
    shared = shared.assign(source="first set", pass2=shared["pass2"])
    cols = ["network", "group", "member", "target", "label", "kernel", "row", "col", "delta", "res", "sha256",
            "pass1", "pass2", "source"]  # fmt: skip
    table = pd.concat([shared[cols], rows[cols]], ignore_index=True)
    table.insert(0, "id", np.arange(len(table)))
    table.to_csv(A.VERDICTS_CSV, index=False)
    print(f"wrote {A.VERDICTS_CSV}: {len(table)} rows ({len(shared)} shared, {len(rows)} new)")


def record_held_out(args) -> None:
    rows = with_answers(held_out_rows()[0], args.dirs, "held out")
    rows.to_csv(A.NEW_CSV, index=False)
    print(f"wrote {A.NEW_CSV}: {len(rows)} rows")


def cmd_fit(args) -> None:
    from volratio.calibration import fit_anchored as fa
    from volratio.calibration import hard_negatives
    from volratio.judges import anchored_rule as ar

    table = fa.verdict_table()
    rule, ks = fa.fit_default(table)
    fa.write_rule(rule)
    for name, k in ks.items():
        print(f"  {name:32s} held-out κ {np.mean(k):.3f} ± {np.std(k):.3f}")
    print(f"wrote {ar.RULE_JSON}: {rule.name}")
    second, k2 = fa.fit_second(table)
    fa.write_rule(second, ar.SECOND_RULE_JSON)
    print(f"wrote {ar.SECOND_RULE_JSON}: {second.name}, held-out κ {np.mean(k2):.3f} ± {np.std(k2):.3f}")
    gated, res = fa.fit_gated_default(table, hard_negatives.feature_table())
    fa.write_rule(gated, ar.GATED_RULE_JSON)
    print(res.round(3).to_string())
    print(
        f"wrote {ar.GATED_RULE_JSON}: {gated.name}, held-out κ {res['kappa_gated'].mean():.3f} "
        f"(ungated {res['kappa_plain'].mean():.3f}), generated negatives rejected {res['rejected_gated'].mean():.1%}"
    )
    from volratio.calibration import crossfit, fit_v2

    fitted, generated, _ = fit_v2.tables()
    v2 = fit_v2.fit_stored(fitted, generated)
    crossfit.write(v2, ar.V2_RULE_JSON)
    print(
        f"wrote {ar.V2_RULE_JSON}: {v2['all'].name} (the default judge, {fit_v2.NAME}; cross-fitted, {v2['k']} folds)"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(required=True)
    sub.add_parser("networks").set_defaults(func=cmd_networks)
    m = sub.add_parser("mosaics")
    m.add_argument("dir")
    m.add_argument("--pass", dest="pass_", type=int, default=1, choices=[1, 2])
    m.add_argument("--new", action="store_true", help="the held-out rows on new targets")
    m.add_argument("--fork", action="store_true", help="the rows on the thirteen fork targets")
    m.add_argument("--sparse", action="store_true", help="the rows of the sparse regime's networks")
    m.add_argument("--degraded", action="store_true", help="recognisable but degraded drawings")
    m.set_defaults(func=cmd_mosaics)
    r = sub.add_parser("record")
    r.add_argument("dirs", nargs="+")
    r.add_argument("--new", action="store_true", help="the held-out rows on new targets")
    r.add_argument("--fork", action="store_true", help="the rows on the thirteen fork targets")
    r.add_argument("--sparse", action="store_true", help="the rows of the sparse regime's networks")
    r.add_argument("--degraded", action="store_true", help="recognisable but degraded drawings")
    r.set_defaults(func=cmd_record)
    sub.add_parser("fit").set_defaults(func=cmd_fit)
    args = ap.parse_args()
    args.func(args)


if __name__ == "__main__":
    main()
