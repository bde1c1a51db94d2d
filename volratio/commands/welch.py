"""`volratio welch bound|frame|net`: the Welch bound, numerical low-coherence frames, and the
interference of a network's features against the bound (volratio/welch.py, book/welch.md)."""

from __future__ import annotations

from ..data.specs import load_network
from ..welch import layer_interference, low_coherence_frame, welch_bound
from . import _args as A
from ._common import add_json_flag, emit


def register(sub) -> None:
    p = sub.add_parser("welch", help="Welch bounds, low-coherence frames, interference of a network's features")
    wsub = p.add_subparsers(dest="welch_command", metavar="bound|frame|net")
    wsub.required = True

    q = wsub.add_parser("bound", help="the order-k Welch bound on max |<v_i, v_j>|^(2k) for m unit vectors in R^n")
    q.add_argument("--m", type=A.positive_int, required=True, help="number of unit vectors")
    q.add_argument("--n", type=A.positive_int, required=True, help="dimension")
    q.add_argument("--k", type=A.positive_int, default=1, help="order (default 1: (m-n)/(n(m-1)))")
    add_json_flag(q)
    q.set_defaults(func=cmd_bound)

    q = wsub.add_parser("frame", help="build a low-coherence frame (alternating projection + smooth-max descent)")
    q.add_argument("--m", type=A.positive_int, required=True, help="number of unit vectors")
    q.add_argument("--n", type=A.positive_int, required=True, help="dimension")
    q.add_argument("--seed", type=A.seed, default=0)
    add_json_flag(q)
    q.set_defaults(func=cmd_frame)

    q = wsub.add_parser("net", help="per-layer interference of a network's features against the bound at (r, d)")
    q.add_argument("spec", help="picbreeder:NAME, fer-sgd:NAME, or a saved network (.safetensors)")
    q.add_argument(
        "--vectors",
        choices=["weights", "maps"],
        default="weights",
        help="weights: incoming weight vectors of live units (d = feeding units); "
        "maps: centred unit feature maps (d = their rank). Default weights.",
    )
    q.add_argument("--res", type=A.res, default=64, help="grid resolution for --vectors maps")
    q.add_argument("--member", type=A.nonneg_int, default=0, help="population member to measure")
    add_json_flag(q)
    q.set_defaults(func=cmd_net)


def cmd_bound(args) -> int:
    b = welch_bound(args.m, args.n, args.k)
    emit(
        args,
        {"m": args.m, "n": args.n, "k": args.k, "bound": b},
        f"Welch bound (k={args.k}) for {args.m} unit vectors in R^{args.n}: max |<v_i,v_j>|^{2 * args.k} >= {b:.6g}",
    )
    return 0


def cmd_frame(args) -> int:
    res = low_coherence_frame(args.m, args.n, seed=args.seed)
    s = res.summary()
    ratio = "n/a (bound is 0)" if s["ratio"] is None else f"{s['ratio']:.6f}"
    text = (
        f"{args.m} unit vectors in R^{args.n} (seed {args.seed}, {s['method']}):\n"
        f"  max squared inner product {s['max_sq_inner']:.6g}\n"
        f"  Welch bound               {s['bound']:.6g}\n"
        f"  ratio                     {ratio}\n"
        f"  best known lower bound    {s['best_bound']:.6g} ({s['best_bound_name']})"
    )
    emit(args, s, text)
    return 0


def _load(spec: str):
    """A network from a spec, through `volratio.data.specs` (saved files, picbreeder:, fer-sgd:)."""
    return load_network(spec)


def cmd_net(args) -> int:
    net = _load(args.spec)
    rows = [r.as_dict() for r in layer_interference(net, vectors=args.vectors, res=args.res, member=args.member)]
    payload = {
        "spec": args.spec,
        "vectors": args.vectors,
        "res": args.res if args.vectors == "maps" else None,
        "layers": rows,
    }

    def f(x):
        return "-" if x is None else f"{x:.4g}"

    lines = [
        f"{args.spec}: interference of {args.vectors} per hidden layer",
        "layer   r   d   max<.,.>^2  mean<.,.>^2  Welch bound",
    ]
    lines += [
        f"{r['layer']:>5} {r['r']:>3} {r['d']:>3}   {f(r['max_sq_inner']):>10}  {f(r['mean_sq_inner']):>11}  {r['bound']:.4g}"
        for r in rows
    ]
    emit(args, payload, "\n".join(lines))
    return 0
