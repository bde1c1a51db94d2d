"""Core commands: `targets`, `render`, `info`, `train`, `data fetch|where`.

`volratio data fetch` installs the original three Picbreeder targets (`volratio.data.fer_data`);
`volratio data fetch --extra` the thirteen of the fork `jagilley/fer` (`volratio.data.fer_fork`)."""

from __future__ import annotations

import sys
from pathlib import Path

from PIL import Image

from ..data import fer_data, fer_fork
from ..data.picbreeder import where
from ..data.specs import NETWORK_KINDS, load_network
from ..data.targets import KINDS, LAYERED_SOURCE, TargetError, get_target, list_targets
from ..train import TrainConfig, auto_note, new_network, train
from ..util.fileio import atomic_path, check_out
from ..util.images import to_uint8
from . import _args as A
from ._common import add_json_flag, add_out, emit


def register(sub) -> None:
    p = sub.add_parser("targets", help="list the available targets")
    add_json_flag(p)
    p.set_defaults(func=cmd_targets)

    p = sub.add_parser("render", help="render a network or a target to a PNG")
    p.add_argument("spec", help="picbreeder:NAME, fer-sgd:NAME, a saved network, or any target spec")
    p.add_argument("--res", type=A.res, default=256)
    add_out(p, "output PNG path")
    p.set_defaults(func=cmd_render)

    p = sub.add_parser("info", help="structure of a network: depth, width, arch, non-zeros, live units")
    p.add_argument("spec")
    add_json_flag(p)
    p.set_defaults(func=cmd_info)

    p = sub.add_parser("train", help="train a dense coordinate network on a target")
    p.add_argument("target", help="target spec, e.g. picbreeder:skull or planted:3")
    p.add_argument("--depth", type=A.positive_int, default=4)
    p.add_argument("--width", type=A.positive_int, default=16)
    p.add_argument("--activation", default="gaussian", help="one activation, or a full arch 'L;act:n,…'")
    p.add_argument("--optimizer", default="adam", choices=["adam", "adamw", "sgd", "muon"])
    p.add_argument("--lr", type=A.positive_float, default=3e-3)
    p.add_argument("--steps", type=A.positive_int, default=1000)
    p.add_argument("--res", type=A.res, default=64)
    p.add_argument("--seed", type=A.seed, default=0)
    p.add_argument("--grad-norm", action="store_true", help="normalise the gradient to unit L2 norm (FER baseline)")
    p.add_argument("--device", type=A.device, default="auto")
    p.add_argument(
        "--path",
        default="auto",
        choices=["auto", "eager", "fast", "fused"],
        help="how each step is computed (TrainConfig.path; auto: on CPU float32 where a C++ compiler builds the fused kernel, the fastest of fused, fast and eager here, timed once and cached — VOLRATIO_AUTO=rule: fused; else the fast path; the path used and why is printed)",
    )
    add_out(p, "where to save the network (.safetensors)")
    add_json_flag(p)
    p.set_defaults(func=cmd_train)

    p = sub.add_parser(
        "data",
        help="the Picbreeder reference data (two datasets: the original three, the fork's thirteen): where it is, or fetch it",
    )
    dsub = p.add_subparsers(dest="data_command", metavar="fetch|where")
    dsub.required = True
    q = dsub.add_parser("where", help="say where each dataset was found, or how to get it")
    q.set_defaults(func=cmd_data_where)
    q = dsub.add_parser(
        "fetch",
        help="download the genomes, images and FER networks of skull, butterfly and apple (1.8 MB) from the FER "
        "repository — or, with --extra, the images and layered networks of thirteen more targets (1.0 MB) from "
        "its fork jagilley/fer — verify and convert them",
    )
    q.add_argument(
        "--extra",
        action="store_true",
        help="fetch the second dataset: the thirteen extra Picbreeder targets of the fork jagilley/fer "
        "(images and layered networks; no genomes)",
    )
    q.add_argument("--dest", default=None, help="folder to install into (default: the user cache)")
    q.add_argument(
        "--url",
        default=None,
        help="base URL to download from instead of the repository at the pinned commit "
        "(a mirror; also $VOLRATIO_FER_URL, or $VOLRATIO_FER_FORK_URL with --extra)",
    )
    q.set_defaults(func=cmd_data_fetch)


def cmd_targets(args) -> int:
    rows = list_targets()

    def missing(r) -> str:
        if fer_data.offline():
            return "not here: VOLRATIO_OFFLINE=1 (see volratio data where)"
        mod = fer_fork if r.get("source") == LAYERED_SOURCE else fer_data
        return f"downloaded on first use ({mod.download_bytes() / 1e6:.1f} MB)"

    text = "\n".join(
        f"{r['spec']:<55} {r['kind']:<11} {'available' if r['available'] else missing(r)}"
        + (f" — {r['source']}" if r.get("source") else "")
        for r in rows
    )
    emit(args, rows, text)
    return 0


def _image_for(spec: str, res: int):
    """A network spec renders its network; a target spec renders the target. The kind decides
    which, so a bad target spec gets the target's error (not a network's)."""
    kind, sep, _ = spec.partition(":")
    if (sep and kind in NETWORK_KINDS) or spec.endswith(".safetensors") or (not sep and Path(spec).exists()):
        return load_network(spec).render(res)[0]
    if sep and kind in KINDS:
        return get_target(spec).image(res)
    raise TargetError(
        f"{spec!r} is neither a network ({', '.join(k + ':NAME' for k in NETWORK_KINDS)} or a saved .safetensors file) "
        f"nor a target ({', '.join(k + ':…' for k in KINDS)}); see `volratio targets`"
    )


def cmd_render(args) -> int:
    check_out(args.out, args.force, inputs=[args.spec, args.spec.partition(":")[2]])
    img = _image_for(args.spec, args.res)

    arr = to_uint8(img)  # (res, res, 3)
    with atomic_path(args.out) as tmp:
        Image.fromarray(arr).save(tmp, format="PNG")
    print(f"wrote {args.out} ({args.res}×{args.res})")
    return 0


def network_info(net) -> dict:
    """The summary `volratio info` prints (first network of a population)."""
    live = net.live_units()[0]
    nz = net.nonzero()[0]
    return {
        "arch": str(net.arch),
        "depth": net.depth,
        "width": net.width,
        "head": net.head,
        "population": net.population,
        "n_params": net.n_params(),
        "nonzero": nz,
        "sparsity": 1.0 - nz / net.n_params(),
        "live_units": live,
        "nonzero_per_layer": [int((w[0] != 0).sum()) for w in net.effective_weights()],
        "provenance": net.provenance,
    }


def cmd_info(args) -> int:
    info = network_info(load_network(args.spec))
    text = (
        f"{args.spec}: arch {info['arch']} (depth {info['depth']}, width {info['width']}, head {info['head']})\n"
        f"  weights {info['n_params']}, non-zero {info['nonzero']} (sparsity {info['sparsity']:.3f})\n"
        f"  live units per layer {info['live_units']}\n"
        f"  non-zero per kernel  {info['nonzero_per_layer']}"
    )
    if info["provenance"].get("genome"):  # the fork's thirteen: say what the network is
        text += f"\n  genome: {info['provenance']['genome']} ({info['provenance']['source'][:25]})"
    emit(args, info, text)
    return 0


def cmd_train(args) -> int:
    check_out(args.out, args.force)
    target = get_target(args.target)
    net = new_network(target, args.depth, args.width, args.activation, seed=args.seed)
    cfg = TrainConfig(
        steps=args.steps,
        optimizer=args.optimizer,
        lr=args.lr,
        grad_norm=args.grad_norm,
        device=args.device,
        log_every=max(1, args.steps // 100),
        progress=not args.json,
        path=args.path,
    )
    result = train(net, target.image(args.res), cfg)
    net.provenance = dict(net.provenance, target=target.spec, seed=args.seed)
    net.cpu().save(args.out)
    out = {
        "target": target.spec,
        "arch": str(net.arch),
        "optimizer": args.optimizer,
        "steps": args.steps,
        "res": args.res,
        "seed": args.seed,
        "path": result.path,  # the path the steps ran on (what "auto" chose)
        "final_loss": float(result.final_loss[0]),
        "out": args.out,
    }
    note = auto_note(args.path, result.path)
    if note:
        out["path_note"] = note
    emit(
        args,
        out,
        f"trained {out['arch']} on {out['target']} ({args.optimizer}, {args.steps} steps, "
        f"{args.res}px, {result.path} path{'; ' + note if note else ''}): final MSE {out['final_loss']:.5f} → {args.out}",
    )
    return 0


def cmd_data_where(args) -> int:
    print(where())
    return 0


def cmd_data_fetch(args) -> int:
    if args.dest is not None:
        check_out(args.dest, folder=True, option="--dest")
    mod = fer_fork if args.extra else fer_data
    url = mod.base_url(args.url)
    print(f"downloading {mod.download_bytes() / 1e6:.1f} MB from {url} …", file=sys.stderr, flush=True)
    dest = mod.fetch(args.dest, url=url)
    what = (
        f"the {len(fer_fork.NAMES)} extra Picbreeder targets' images and layered networks ({fer_fork.REPO})"
        if args.extra
        else "Picbreeder genomes, images and FER networks"
    )
    print(f"{what} verified, converted and installed in {dest}")
    return 0
