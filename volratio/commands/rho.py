"""`volratio rho boolean|basin` — the compositional volume ratio ρ(W, L) over a grid (`volratio.rho`).

JSON output: a list of rows with keys `W, L, samples, solutions, compositional, rho, lo, hi`
(plus `exact` with `--exact`, `theory` where the closed form applies, and the absolute volumes),
and for `boolean` how each cell ran: `engine, elapsed_s, stopped` ("samples", "width" or
"budget"), `rel_width` and `networks_for_width` (networks needed for a relative interval width of
`--width`, or `--until-width` when given). A reference-scale run of one target:
`volratio rho boolean --target chain:2 --W 1-8 --L 1-5 --samples 100000000 --until-width 0.1
--workers 2` (add `--budget-s` to cap each cell's time).
"""

from __future__ import annotations

import argparse
from dataclasses import replace

from ..rho import BasinConfig, SamplerConfig, basin_grid, boolean_grid, n_params
from ..rho.boolean import get_boolean_target
from ..util import budget
from . import _args as A
from ._common import add_json_flag, emit

MAX_LIST = 1000  # values in one --W/--L list


def int_list(text: str) -> list[int]:
    """`"2,3,5"` or `"2-6"` or a mix (`"1,3-5"`) → sorted unique ints."""
    out: set[int] = set()
    try:
        for part in str(text).split(","):
            part = part.strip()
            if "-" in part[1:]:
                a, b = part.split("-", 1) if not part.startswith("-") else (part, part)
                if int(b) - int(a) > MAX_LIST:
                    raise argparse.ArgumentTypeError(
                        f"{text!r}: the range {part} has more than {MAX_LIST} values; give a shorter one"
                    )
                out.update(range(int(a), int(b) + 1))
            elif part:
                out.add(int(part))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a list of integers; write e.g. '2,3,4' or '2-6'") from None
    if not out or min(out) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: give at least one positive integer (e.g. '2,3,4' or '2-6')")
    return sorted(out)


def register(sub) -> None:
    p = sub.add_parser("rho", help="compositional volume ratio ρ(W, L): Boolean model or basin model")
    rsub = p.add_subparsers(dest="rho_command", metavar="boolean|basin")
    rsub.required = True

    q = rsub.add_parser("boolean", help="random masked threshold networks on a compositional Boolean target")
    q.add_argument(
        "--target", required=True, help="tree:D:K, chain:D or dag:SEED[:depth=…,arity=…,inputs=…,primitives=…]"
    )
    q.add_argument("--W", required=True, type=int_list, help="widths, e.g. '2,3,4' or '2-6'")
    q.add_argument("--L", required=True, type=int_list, help="depths (threshold layers, output included)")
    q.add_argument(
        "--samples",
        type=A.positive_int,
        default=100_000,
        help="networks sampled per (W, L) (the most, with --until-width/--budget-s)",
    )
    q.add_argument("--seed", type=A.seed, default=0)
    q.add_argument(
        "--until-width",
        type=A.positive_float,
        default=None,
        help="stop a cell once ρ's relative interval width (hi − lo)/ρ is ≤ this, e.g. 0.2",
    )
    q.add_argument("--budget-s", type=A.positive_float, default=None, help="stop a cell after this many seconds")
    q.add_argument(
        "--width",
        type=A.positive_float,
        default=0.5,
        help="report the networks each cell needs for this relative width (default 0.5; --until-width overrides)",
    )
    q.add_argument(
        "--engine",
        default="bits",
        choices=["bits", "float"],
        help="bits: bit-sliced uint64 tables on CPU (default); float: batched matmuls (CUDA if --device allows)",
    )
    q.add_argument(
        "--workers",
        type=A.Int(1, 64),
        default=1,
        help="worker processes for the bits engine (counts do not depend on it)",
    )
    q.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    q.add_argument("--exact", action="store_true", help="also enumerate every configuration where feasible (≤ 3^13)")
    q.add_argument("--weights", default="ternary", choices=["ternary", "gaussian"])
    q.add_argument("--masks", default="bernoulli", choices=["bernoulli", "fanin"])
    q.add_argument("--p", type=A.probability, default=0.8, help="mask density (bernoulli masks)")
    q.add_argument("--fan-in", type=A.positive_int, default=2, help="incoming connections per unit (fanin masks)")
    q.add_argument("--confidence", type=A.open_unit, default=0.95, help="confidence level of the intervals, in (0, 1)")
    q.add_argument("--interval", default="wilson", choices=["wilson", "clopper-pearson"])
    q.add_argument("--device", type=A.device, default="auto")
    add_json_flag(q)
    q.set_defaults(func=cmd_boolean)

    q = rsub.add_parser("basin", help="train random masked coordinate networks on a planted image target")
    q.add_argument("--target", required=True, help="planted:SEED[:depth=…,width=…,arity=…]")
    q.add_argument("--W", required=True, type=int_list)
    q.add_argument("--L", required=True, type=int_list, help="hidden layers")
    q.add_argument(
        "--samples", type=A.positive_int, default=16, help="K: networks trained (as one population) per cell"
    )
    q.add_argument("--seed", type=A.seed, default=0)
    q.add_argument("--scale", default="quick", choices=["quick", "full"])
    q.add_argument("--steps", type=A.positive_int, default=None, help="override the scale's training steps")
    q.add_argument("--res", type=A.res, default=None, help="override the scale's resolution")
    q.add_argument("--p", type=A.probability, default=None, help="override the mask density")
    q.add_argument(
        "--threshold", type=A.probability, default=None, help="override the |correlation| threshold, in [0, 1]"
    )
    q.add_argument(
        "--emc2", action="store_true", help="also require an EMC2 score above --emc2-threshold (needs volratio.emc2)"
    )
    q.add_argument("--emc2-threshold", type=A.probability, default=None, help="EMC2 score threshold, in [0, 1]")
    q.add_argument("--device", type=A.device, default="auto")
    add_json_flag(q)
    q.set_defaults(func=cmd_basin)


def _fmt(x, spec=".3f"):
    return "—" if x is None else format(x, spec)


def _check_boolean_budget(n: int, widths, depths, batch: int) -> None:
    """Networks are drawn `batch` at a time; one draw holds their weights and masks (float32, ~3
    copies while drawing) and, while classifying, ~3 truth tables per unit. Refuse a grid whose
    largest cell would not fit the memory budget."""
    W, L = max(widths), max(depths)
    need = batch * (n_params(n, W, L) * 4 * 3 + (2**n) * W * L * 4 * 3)
    budget.check(need, f"sampling width-{W}, depth-{L} threshold networks ({batch} per batch)", "use smaller --W/--L")


def _check_basin_budget(widths, depths, population: int, res: int) -> None:
    """The largest cell trains `population` networks at once: their weights, masks and Adam state,
    and the activations autograd keeps (float32)."""
    W, L = max(widths), max(depths)
    n_params = 4 * W + (L - 1) * W * W + W
    need = budget.network_bytes(n_params, population, 4, training=True) + budget.forward_bytes(
        res * res, W, L, population, 4, training=True
    )
    budget.check(
        need,
        f"training {population} networks of width {W}, depth {L} at {res}×{res}",
        "use fewer --samples, smaller --W/--L or a lower --res",
    )


def cmd_boolean(args) -> int:
    target = get_boolean_target(args.target)
    cfg = SamplerConfig(
        weights=args.weights,
        masks=args.masks,
        p=args.p,
        fan_in=args.fan_in,
        confidence=args.confidence,
        interval=args.interval,
        device=args.device,
        engine=args.engine,
        workers=args.workers,
    )
    _check_boolean_budget(target.n, args.W, args.L, cfg.batch)
    rows = boolean_grid(
        target,
        args.W,
        args.L,
        args.samples,
        cfg,
        seed=args.seed,
        with_exact=args.exact,
        until_width=args.until_width,
        budget_s=args.budget_s,
        width=args.width,
        progress=not args.no_progress,
    )
    head = (
        f"{target.spec}: n={target.n}, L*={target.depth}, W_min={target.width}; weights={cfg.weights}, "
        f"masks={cfg.masks} (p={cfg.p}), {int(cfg.confidence * 100)}% {cfg.interval} intervals, seed {args.seed}"
    )
    w = args.until_width or args.width
    lines = [
        head,
        f"{'W':>3} {'L':>3} {'samples':>11} {'solutions':>9} {'comp':>7} {'rho':>6} {'interval':>15} "
        f"{'exact':>6} {'theory V':>10} {'time s':>7} {'stop':>7} {'nets for ±' + format(w, 'g'):>14}",
    ]
    for r in rows:
        ex = r.get("exact")
        need = r.get("networks_for_width")
        lines.append(
            f"{r['W']:>3} {r['L']:>3} {r['samples']:>11} {r['solutions']:>9} {r['compositional']:>7} "
            f"{_fmt(r['rho']):>6} [{r['lo']:.3f}, {r['hi']:.3f}] {_fmt(ex and ex['rho']):>6} "
            f"{_fmt(r.get('theory'), '.3g'):>10} {r['elapsed_s']:>7.1f} {r['stopped']:>7} {_fmt(need, '.3g'):>14}"
        )
    emit(args, rows, "\n".join(lines))
    return 0


def cmd_basin(args) -> int:
    cfg = BasinConfig.full() if args.scale == "full" else BasinConfig.quick()
    over = {
        k: v
        for k, v in dict(
            steps=args.steps, res=args.res, p=args.p, threshold=args.threshold, emc2_threshold=args.emc2_threshold
        ).items()
        if v is not None
    }
    cfg = replace(cfg, population=args.samples, seed=args.seed, device=args.device, use_emc2=args.emc2, **over)
    _check_basin_budget(args.W, args.L, cfg.population, cfg.res)
    rows = basin_grid(args.target, args.W, args.L, cfg)
    lines = [
        f"{args.target}: basin model, scale {args.scale}, K={cfg.population} per cell, {cfg.steps} steps at "
        f"{cfg.res}×{cfg.res}, |corr| ≥ {cfg.threshold}"
        + (f", EMC2 ≥ {cfg.emc2_threshold}" if cfg.use_emc2 else ", correlation criterion only"),
        f"{'W':>3} {'L':>3} {'samples':>7} {'solutions':>9} {'comp':>5} {'rho':>6} {'interval':>15}",
    ]
    for r in rows:
        lines.append(
            f"{r['W']:>3} {r['L']:>3} {r['samples']:>7} {r['solutions']:>9} {r['compositional']:>5} "
            f"{_fmt(r['rho']):>6} [{r['lo']:.3f}, {r['hi']:.3f}]"
        )
    emit(args, rows, "\n".join(lines))
    return 0
