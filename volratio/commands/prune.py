"""`volratio prune` — SP and the baselines on a saved or named network (volratio.prune).

    volratio prune NET --target TARGET --method sp|imp|wanda|llm-pruner|magnitude|random|random-units
                   [--sparsity S] [--match OTHER_NET] [method options] --steps N --res N --seed S --out NET

Prints one line (method, sparsity reached, live units per layer, final loss) or, with `--json`,
the same as JSON. `--steps` is the retraining after each pruning round (IMP: the training per level).
"""

from __future__ import annotations

from ..data.specs import load_network
from ..data.targets import get_target
from ..errors import VolratioError
from ..prune import METHODS, prune
from ..train import TrainConfig
from ..util.fileio import check_out
from . import _args as A
from ._common import add_json_flag, add_out, emit


def register(sub) -> None:
    p = sub.add_parser("prune", help="prune a network: SP, IMP (Lottery Ticket), Wanda, LLM-Pruner, magnitude, random")
    p.add_argument("net", help="picbreeder:NAME, fer-sgd:NAME, or a saved .safetensors network")
    p.add_argument("--target", required=True, help="target spec the network draws, e.g. picbreeder:skull")
    p.add_argument("--method", required=True, choices=list(METHODS))
    p.add_argument(
        "--sparsity",
        type=A.fraction,
        default=None,
        help="fraction removed: of all weights (weight methods) or of hidden units (llm-pruner, random-units)",
    )
    p.add_argument("--match", default=None, help="random-units: copy the live units per layer of this network")
    p.add_argument(
        "--steps", type=A.nonneg_int, default=200, help="retraining steps after each round (IMP: training per level)"
    )
    p.add_argument("--res", type=A.res, default=64, help="resolution of the target image and of the feature maps")
    p.add_argument("--seed", type=A.seed, default=0, help="SP's choice within pairs; random methods' draws")
    add_out(p, "where to save the pruned network (.safetensors)")
    g = p.add_argument_group("SP options")
    g.add_argument(
        "--tau",
        type=A.probability,
        default=0.95,
        help="cosine similarity above which two units are redundant, in [0, 1]",
    )
    g.add_argument("--rounds", type=A.positive_int, default=10, help="at most this many prune → retrain rounds")
    g.add_argument(
        "--cap", type=A.positive_int, default=None, help="at most this many units removed per layer per round"
    )
    g.add_argument("--centred", action="store_true", help="compare mean-subtracted feature maps")
    g.add_argument("--opposite-sign", action="store_true", help="similarity below −τ also counts as redundant")
    g.add_argument("--target-units", type=A.positive_int, default=None, help="stop at this many live hidden units")
    g.add_argument(
        "--target-nonzeros",
        type=A.positive_int,
        default=None,
        help="stop at this many non-zero weights or fewer (e.g. a Picbreeder network's count)",
    )
    g.add_argument(
        "--tau-schedule",
        type=A.FloatList(A.probability, hint=", e.g. 0.9,0.8,0.7 (each below the one before, after --tau)"),
        default=(),
        help="thresholds tried in turn once a network has no pair above its current one (most similar pair first)",
    )
    g.add_argument(
        "--no-guard",
        action="store_true",
        help="switch SP's relative fit guard off (a round leaving the MSE above 2× the dense MSE is kept); "
        "--max-loss still applies",
    )
    g.add_argument(
        "--per-round-fraction",
        type=A.Float(0, 1, lo_open=True),
        default=None,
        help="at most this fraction of a network's live hidden units removed per round, in (0, 1]",
    )
    g.add_argument(
        "--max-loss", type=A.positive_float, default=None, help="undo a round that pushes the MSE above this, and stop"
    )
    g = p.add_argument_group("baseline options")
    g.add_argument(
        "--scope",
        default=None,
        choices=["global", "layer"],
        help="magnitude: global|layer; llm-pruner, random-units: layer|global",
    )
    g.add_argument(
        "--rewind", type=A.nonneg_int, default=0, help="IMP: rewind survivors to their weights after this many steps"
    )
    g.add_argument(
        "--rate", type=A.open_unit, default=0.2, help="IMP: fraction of remaining weights pruned per level, in (0, 1)"
    )
    g.add_argument("--variant", default="first", choices=["first", "param_mix"], help="LLM-Pruner Taylor importance")
    g.add_argument("--exclude-output", action="store_true", help="magnitude, IMP: never prune the output kernel")
    g = p.add_argument_group("training")
    g.add_argument("--optimizer", default="adam", choices=["adam", "adamw", "sgd", "muon"])
    g.add_argument("--lr", type=A.positive_float, default=3e-3)
    g.add_argument("--device", type=A.device, default="auto")
    add_json_flag(p)
    p.set_defaults(func=cmd_prune)


def options_for(args) -> dict:
    """The method's config fields from the command-line flags."""
    tc = TrainConfig(optimizer=args.optimizer, lr=args.lr, device=args.device)
    m = args.method
    if m in ("imp", "wanda", "llm-pruner", "magnitude", "random") and args.sparsity is None:
        raise VolratioError(f"--method {m} needs --sparsity S (a fraction in [0, 1))")
    if m == "sp":
        return dict(
            tau=args.tau,
            rounds=args.rounds,
            cap=args.cap,
            centred=args.centred,
            opposite_sign=args.opposite_sign,
            target_units=args.target_units,
            target_nonzeros=args.target_nonzeros,
            tau_schedule=tuple(args.tau_schedule),
            per_round_fraction=args.per_round_fraction,
            **({"loss_factor": None} if args.no_guard else {}),
            max_loss=args.max_loss,
            retrain_steps=args.steps,
            seed=args.seed,
            train=tc,
        )
    if m == "imp":
        return dict(
            sparsity=args.sparsity,
            rate=args.rate,
            rewind_step=args.rewind,
            train_steps=args.steps,
            exclude_output=args.exclude_output,
            train=tc,
        )
    if m == "wanda":
        return dict(sparsity=args.sparsity, retrain_steps=0, train=tc)
    if m == "magnitude":
        return dict(
            sparsity=args.sparsity,
            scope=args.scope or "global",
            retrain_steps=args.steps,
            exclude_output=args.exclude_output,
            train=tc,
        )
    if m == "random":
        return dict(sparsity=args.sparsity, retrain_steps=args.steps, seed=args.seed, train=tc)
    if m == "llm-pruner":
        return dict(
            sparsity=args.sparsity,
            variant=args.variant,
            scope=args.scope or "layer",
            retrain_steps=args.steps,
            train=tc,
        )
    match = load_network(args.match) if args.match else None
    return dict(
        match=match,
        sparsity=args.sparsity,
        scope=args.scope or "layer",
        seed=args.seed,
        retrain_steps=args.steps,
        train=tc,
    )


def cmd_prune(args) -> int:
    opts = options_for(args)  # the method's own option errors first
    check_out(args.out, args.force, inputs=[args.net, args.match])
    net = load_network(args.net)
    image = get_target(args.target).image(args.res)
    result = prune(net, image, args.method, **opts)
    net.provenance = dict(
        net.provenance,
        pruned={"method": args.method, "target": args.target, "res": args.res, "seed": args.seed, "net": args.net},
    )
    net.save(args.out)
    s = result.summary()
    s["out"] = str(args.out)
    members = result.extras.get("members")  # SP: per member its sparsity, dense and final MSE, why it stopped
    if members is not None:
        s["members"] = members
    if net.population == 1:
        text = (
            f"{s['method']}: sparsity {s['sparsity'][0]:.4f} ({s['nonzero'][0]}/{s['weights']} non-zero), "
            f"live units {s['live_units'][0]}, final loss {s['final_loss'][0]:.5f} → {args.out}"
        )
    else:
        text = (
            f"{s['method']}: sparsity {[round(x, 4) for x in s['sparsity']]}, live units {s['live_units']}, "
            f"final loss {[round(x, 5) for x in s['final_loss']]} → {args.out}"
        )
    for k, m in enumerate(members or []):
        text += (
            f"\n  member {k}: {m['nonzeros']} non-zero (sparsity {m['sparsity']:.4f}), MSE {m['dense_loss']:.5f} dense → "
            f"{m['final_loss']:.5f}, τ {m['tau']}, stopped: {m['stop']}"
        )
    emit(args, s, text)
    return 0
