"""EMC2-Bench commands: `emc2` (the δ-curve of a network) and `sweep-weights` (a weight-sweep grid)."""

from __future__ import annotations

import re

import numpy as np

from .. import emc2, judges
from ..data.picbreeder import layerize
from ..data.specs import load_network
from ..data.targets import get_target
from ..errors import VolratioError
from ..judges import DEFAULT_JUDGE, JUDGES
from ..report import plots
from ..util import autopick
from ..util.device import resolve_device
from ..util.fileio import atomic_path, check_out
from . import _args as A
from ._common import add_json_flag, add_out, emit


def register(sub) -> None:
    p = sub.add_parser("emc2", help="EMC2-Bench: S(θ; δ) over the non-zero parameters, per δ, and its AUC")
    p.add_argument("spec", help="network: picbreeder:NAME, fer-sgd:NAME, fer-layered:NAME or a saved .safetensors")
    p.add_argument(
        "--target", required=True, help="the target the network draws (gives the label), e.g. picbreeder:skull"
    )
    p.add_argument(
        "--judge",
        default=DEFAULT_JUDGE,
        choices=list(JUDGES),
        help=f"{DEFAULT_JUDGE} (default): is each image a <label>? judged against the target image, with the "
        "structure gate; anchored, anchored-*: the same question under other rules; clip / vlm: a local "
        "model asked about the label; stability, calibrated, calibrated-pooled, ssim: similarity to the "
        "network's own render (how stable its picture is, not the compositional score); planted-family (planted "
        "targets): each change drawn by the planted DAG with its link weights moved",
    )
    p.add_argument("--judge-model", default=None, help="local folder or cached model id for the clip/vlm judges")
    p.add_argument("--label", default=None, help="what the judge is asked about (default: the target's name)")
    p.add_argument(
        "--deltas",
        type=A.FloatList(),
        default="-2,-1,-0.5,-0.25,0.25,0.5,1,2",
        help="comma-separated perturbation sizes, e.g. --deltas -1,-0.5,0.5,1",
    )
    _allow_negative_lists(p)
    p.add_argument("--res", type=A.res, default=64)
    p.add_argument(
        "--which",
        default="all",
        choices=["all", "genome"],
        help="all non-zero weights, or (picbreeder:NAME only) the genome's connections without cache copies",
    )
    p.add_argument(
        "--max-params",
        type=A.positive_int,
        default=None,
        help="score a seeded random subsample of this many parameters",
    )
    p.add_argument("--seed", type=A.seed, default=0)
    p.add_argument("--device", type=A.device, default="auto")
    p.add_argument("--dtype", default="float64", choices=["float32", "float64"])
    p.add_argument(
        "--engine",
        default="auto",
        choices=["auto", "torch", "fused"],
        help="perturbation engine: fused (the C++ kernel; float32 on the CPU), torch, or auto (for --dtype "
        "float32 on the CPU where a C++ compiler builds the kernel, the faster engine here for the network's "
        "density, timed once and cached — VOLRATIO_AUTO=rule: fused; else torch; the output says which and why)",
    )
    p.add_argument(
        "--delta-scale",
        default="absolute",
        choices=list(emc2.DELTA_SCALES),
        help="absolute: w ← w + δ (the paper's, the default); layer_std: w ← w + δ × the std of the non-zero "
        "weights of the perturbed weight's layer",
    )
    add_json_flag(p)
    p.set_defaults(func=cmd_emc2)

    p = sub.add_parser(
        "sweep-weights", help="grid of images as single weights move over Δw ∈ [−1, 1] (+ random-direction control)"
    )
    p.add_argument("spec", help="network spec (as for emc2)")
    add_out(p, "output PNG")
    p.add_argument(
        "--params",
        nargs="*",
        default=None,
        metavar="K:R:C",
        help="parameters as kernel:row:col (default: the --n with the largest effect)",
    )
    p.add_argument("--n", type=A.positive_int, default=6, help="how many parameters when --params is not given")
    p.add_argument("--how", default="effect", choices=["effect", "random"])
    p.add_argument("--offsets", type=A.FloatList(), default="-1,-0.5,0,0.5,1", help="comma-separated Δw of the columns")
    _allow_negative_lists(p)
    p.add_argument("--controls", type=A.nonneg_int, default=1, help="random-direction control rows")
    p.add_argument("--res", type=A.res, default=64)
    p.add_argument("--seed", type=A.seed, default=0)
    p.add_argument("--device", type=A.device, default="auto")
    add_json_flag(p)
    p.set_defaults(func=cmd_sweep)


def _allow_negative_lists(p) -> None:
    """Let a value such as `-1,0.5,1` follow an option: argparse only recognises plain negative
    numbers (`-1`) as values, and would read `-1,0.5,1` as an unknown option."""
    p._negative_number_matcher = re.compile(r"^-\d[\d.,eE+-]*$|^-\.\d[\d.,eE+-]*$")


def cmd_emc2(args) -> int:
    get_target(args.target)  # validate early
    judges.check_res(args.judge, args.res, "--res: images")  # before any network is loaded
    deltas = args.deltas
    net = load_network(args.spec)
    layered = None
    if args.which == "genome":
        kind, _, name = args.spec.partition(":")
        if kind != "picbreeder":
            raise VolratioError(
                "--which genome applies to picbreeder:NAME networks only (their cache copies are known)"
            )

        layered = layerize(name)
    cfg = emc2.EMC2Config(
        deltas=tuple(deltas),
        res=args.res,
        which=args.which,
        max_params=args.max_params,
        seed=args.seed,
        device=args.device,
        dtype=args.dtype,
        engine=args.engine,
        delta_scale=args.delta_scale,
    )
    device, dtype = resolve_device(args.device), emc2.torch_dtype(args.dtype)
    share = autopick.density(net, cfg.member) if args.engine == "auto" else 1.0  # as the engine chooses
    used, choice = emc2.fused.choose_engine(args.engine, device, dtype, share, emc2.engine.timing_steps)
    js = emc2.judges_for(net, [args.judge], args.target, cfg, model=args.judge_model)
    label = args.label or emc2.target_label(args.target)
    res = emc2.score(net, js, label, cfg, layered=layered, progress=not args.json)[0]
    payload = {**res.to_json(), "network": args.spec, "target": args.target}
    lines = [
        f"EMC2 {args.spec} on {args.target} — judge {res.judge} (anchored on the {res.anchor}; {res.measure}), "
        f"{res.n_params} of {res.n_nonzero} parameters, res {args.res}"
        + ("" if args.delta_scale == "absolute" else ", δ × the std of each weight's layer"),
        f"  unperturbed image shows the {label}: "
        f"{'yes' if res.base_kept else 'no — every S is 0'} (score {res.base_score:.3f})",
    ]
    lines += [f"  δ = {d:+.3g}: S = {s:.3f}" for d, s in zip(res.deltas, res.scores)]
    lines.append(f"  AUC (normalised) = {res.auc:.3f}  (engine {used})")
    note = emc2.fused.engine_note(args.engine, used, device, dtype, choice)
    if note:
        lines.append(f"  {note}")
    emit(args, payload, "\n".join(lines))
    return 0


def cmd_sweep(args) -> int:
    check_out(args.out, args.force, inputs=[args.spec])
    net = load_network(args.spec)
    if args.params:
        try:
            params = np.array([[int(v) for v in p.split(":")] for p in args.params], dtype=np.int64)
        except ValueError:
            raise VolratioError(f"--params must be kernel:row:col triples, got {args.params}") from None
        if params.shape[1] != 3:
            raise VolratioError(f"--params must be kernel:row:col triples, got {args.params}")
        for k, r, c in params.tolist():
            shape = tuple(net.weights[k].shape[1:]) if 0 <= k < net.n_kernels else None
            if shape is None or not (0 <= r < shape[0] and 0 <= c < shape[1]):
                raise VolratioError(
                    f"--params {k}:{r}:{c} is not a weight of {args.spec} (kernels 0…{net.n_kernels - 1}, "
                    f"shapes {[tuple(w.shape[1:]) for w in net.weights]}); see `volratio info {args.spec}`"
                )
    else:
        params = emc2.pick_params(net, args.n, args.how, res=min(args.res, 32), seed=args.seed, device=args.device)
    sw = emc2.weight_sweep(
        net, params, args.offsets, res=args.res, controls=args.controls, seed=args.seed, device=args.device
    )
    fig = plots.draw_weight_sweep(sw, title=f"weight sweep: {args.spec}")
    with atomic_path(args.out) as tmp:
        fig.savefig(tmp, format="png", dpi=120)
    emit(
        args,
        {"out": args.out, "params": params.tolist(), "offsets": sw.offsets.tolist(), "rows": sw.labels},
        f"wrote {args.out}: {len(sw.labels)} rows × {len(sw.offsets)} columns",
    )
    return 0
