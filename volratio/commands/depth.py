"""`volratio depth ratio|sweep|predict`: image complexity, depth sweeps and the depth predictor.

    volratio depth ratio picbreeder:skull --json
    volratio depth sweep planted:1:depth=3 --depths 1..5 --seeds 3 --out results/depth --json
    volratio depth predict image:camera --json

See `volratio.depth` and the chapter "Depth: a narrow, target-dependent regime".
"""

from __future__ import annotations

from dataclasses import replace

from ..depth import planted_predictor, planted_specs
from ..depth.complexity import png_ratio
from ..depth.point import Config, parse_depths
from ..runs.depth_sweep import depth_sweep
from ..runs.sweep import make_executor
from ..util.fileio import check_out
from . import _args as A
from ._common import add_json_flag, emit


def register(sub) -> None:
    p = sub.add_parser("depth", help="depth regime: PNG complexity ratio, depth sweeps, depth predictor")
    dsub = p.add_subparsers(dest="depth_command", metavar="SUBCOMMAND")
    dsub.required = True

    r = dsub.add_parser("ratio", help="PNG compression ratio (raw bytes / PNG bytes) of a target")
    r.add_argument("target", help="target spec, e.g. picbreeder:skull, image:camera, planted:3:depth=4")
    r.add_argument("--res", type=A.res, default=64, help="fixed size the ratio is measured at (compare at one size)")
    add_json_flag(r)
    r.set_defaults(func=cmd_ratio)

    s = dsub.add_parser(
        "sweep", help="SP networks at each depth × seeds; EMC2 score and loss per depth; the sweet spot"
    )
    s.add_argument("target", help="target spec")
    s.add_argument("--depths", default="1..6", help="A..B or a comma-separated list (default 1..6)")
    s.add_argument("--seeds", type=A.positive_int, default=3, help="initialisation seeds per depth")
    s.add_argument("--scale", default="quick", choices=["quick", "full"])
    s.add_argument("--width", type=A.positive_int, default=None, help="override the scale's width")
    s.add_argument("--res", type=A.res, default=None, help="override the scale's resolution")
    s.add_argument("--steps", type=A.positive_int, default=None, help="override the scale's training steps")
    s.add_argument(
        "--out", default=None, metavar="DIR", help="results store (default: a fresh temporary folder); reruns resume"
    )
    where = s.add_mutually_exclusive_group()
    where.add_argument(
        "--scheduler", type=A.scheduler_address, metavar="ADDR", help="address of a running Dask scheduler"
    )
    where.add_argument("--workers", type=A.positive_int, metavar="N", help="start a Dask LocalCluster of N workers")
    where.add_argument("--processes", type=A.positive_int, metavar="N", help="run on N local processes")
    add_json_flag(s)
    s.set_defaults(func=cmd_sweep)

    q = dsub.add_parser("predict", help="predict a target's sweet-spot depth from its PNG compression ratio")
    q.add_argument("target", help="target spec")
    q.add_argument("--res", type=A.res, default=64, help="resolution of the ratios (target and calibration)")
    q.add_argument(
        "--calibration",
        nargs="*",
        default=None,
        metavar="SPEC",
        help="planted targets (known depth L*) to fit depth ≈ a + b·ratio on (default: 12, L* = 2…5)",
    )
    add_json_flag(q)
    q.set_defaults(func=cmd_predict)


def cmd_ratio(args) -> int:
    c = png_ratio(args.target, args.res)
    emit(
        args,
        c.to_json(),
        f"{c.target}: ratio {c.ratio:.3f} ({c.raw_bytes} raw / {c.png_bytes} PNG bytes at {c.res}×{c.res}, Pillow {c.pillow})",
    )
    return 0


def cmd_sweep(args) -> int:
    if args.out is not None:
        check_out(args.out, folder=True)
    cfg = (Config.quick if args.scale == "quick" else Config.full)()
    over = {k: getattr(args, k) for k in ("width", "res", "steps") if getattr(args, k) is not None}
    members = cfg.members if args.seeds % cfg.members == 0 else 1  # population training is a speed-up only
    cfg = replace(cfg, depths=parse_depths(args.depths), seeds=args.seeds, members=members, **over)
    ex = make_executor(args.scheduler, args.workers, args.processes)
    curves, report = depth_sweep(args.target, cfg, args.out, ex, progress=False if args.json else None)
    curve = curves[args.target]
    payload = {
        "target": args.target,
        "scale": args.scale,
        "config": cfg.shared(),
        "seeds": cfg.seeds,
        "store": str(report.store),
        "failed": report.failed,
        "per_depth": curve.summary(),
        "sweet_spot": curve.spot.to_json(),
    }
    lines = [report.summary(), f"{args.target} ({args.scale} scale): depth, EMC2 score [95% CI], loss"]
    for r in curve.summary():
        lines.append(
            f"  L={r['depth']:2d}  score {r['score']:.3f} [{r['score_lo']:.3f}, {r['score_hi']:.3f}]  loss {r['loss']:.4g}"
        )
    sp = curve.spot
    lines.append(
        "  flat curve: no sweet spot"
        if sp.flat
        else f"  sweet spot L={sp.depth} (bootstrap 90%: {sp.interval[0]}..{sp.interval[1]}; tied {sp.tied})"
    )
    emit(args, payload, "\n".join(lines))
    return 1 if report.failed else 0


def cmd_predict(args) -> int:
    specs = args.calibration or planted_specs()
    pred, _ = planted_predictor(specs, args.res)
    c = png_ratio(args.target, args.res)
    p = pred.predict(c.ratio)
    payload = {
        "target": args.target,
        "ratio": c.ratio,
        "res": c.res,
        "pillow": c.pillow,
        "depth": p["depth"],
        "band": [p["band_lo"], p["band_hi"]],
        "prediction_interval": [p["pi_lo"], p["pi_hi"]],
        "fit": {"a": pred.a, "b": pred.b, "r2": pred.r2, "n": pred.n, "loo_rmse": pred.loo_rmse, "level": pred.level},
        "calibration": specs,
    }
    text = (
        f"{args.target}: ratio {c.ratio:.3f} → predicted depth {p['depth']:.2f} "
        f"(95% band {p['band_lo']:.2f}..{p['band_hi']:.2f}; prediction interval {p['pi_lo']:.2f}..{p['pi_hi']:.2f})\n"
        f"  fit on {pred.n} planted targets: depth = {pred.a:.3f} + {pred.b:.3f}·ratio, R² = {pred.r2:.3f}, "
        f"leave-one-out RMSE = {pred.loo_rmse:.2f}"
    )
    emit(args, payload, text)
    return 0
