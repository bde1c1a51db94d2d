"""Judge commands: `judge` (verdicts for PNG images) and `judge-check` (a judge against the
reference verdicts of `data/judge_reference/`: by default a label-anchored judge's κ beside the
inspection's repeat κ on every verdict set, `volratio.calibration.judge_agreement`)."""

from __future__ import annotations

import warnings

import torch
from PIL import Image, UnidentifiedImageError

from .. import judges
from ..calibration import fit_anchored, fit_calibrated, judge_agreement
from ..data.targets import FileTarget, get_target
from ..emc2 import target_label
from ..errors import ImageError, VolratioError
from ..judges import DEFAULT_JUDGE, JUDGES, SELF_ANCHORED
from . import _args as A
from ._common import add_json_flag, emit


def register(sub) -> None:
    p = sub.add_parser("judge", help="does each image show the <label>? one verdict and score per image")
    p.add_argument("images", nargs="+", help="PNG images (square; any size)")
    p.add_argument("--target", default=None, help="the target whose image anchors the judge, e.g. picbreeder:skull")
    p.add_argument(
        "--reference",
        default=None,
        help="an image (PNG) of what the label looks like, for a target of your own (instead of --target); "
        "for the self-anchored judges and planted-family: the network's unperturbed image they compare with "
        "(planted-family: default the target's own image)",
    )
    p.add_argument("--label", default=None, help="what the image should show (default: the target's name)")
    p.add_argument(
        "--judge",
        default=DEFAULT_JUDGE,
        choices=list(JUDGES),
        help=f"{DEFAULT_JUDGE} (default): against the target image, with the structure gate; anchored, anchored-*: "
        "the same question under other rules; clip, vlm: local model weights; stability, "
        "calibrated, calibrated-pooled, ssim: similarity to the --reference image (stability); planted-family "
        "(planted targets): the change from --reference drawn by the planted DAG with its link weights moved",
    )
    p.add_argument("--model", default=None, help="local folder or cached model id for --judge clip/vlm")
    p.add_argument("--device", default="auto", type=A.device, help="auto, cpu, cuda or cuda:N")
    add_json_flag(p)
    p.set_defaults(func=cmd_judge)

    p = sub.add_parser(
        "judge-check", help="agreement of a judge with the verdicts judged by inspection (data/judge_reference)"
    )
    p.add_argument("--judge", required=True, choices=list(JUDGES))
    p.add_argument(
        "--set",
        default=None,
        choices=["inspection", "anchored", "first"],
        help="inspection (default): per verdict set and group, the judge's κ beside the inspection's blind-repeat "
        "κ, and its false rejections among images both inspections keep (label-anchored judges); anchored: the "
        "anchored verdict set alone, with --groups / --max-images (the default when either is given); first: the "
        "first set (perturbations of networks retrained on the fly; the self-anchored judges only)",
    )
    p.add_argument(
        "--sets",
        default=None,
        help=f"with --set inspection: comma-separated verdict sets (default all: {','.join(judge_agreement.SETS)})",
    )
    p.add_argument("--model", default=None, help="local folder or cached model id for --judge clip/vlm")
    p.add_argument(
        "--groups",
        default=None,
        help="comma-separated network groups to check, e.g. picbreeder,fer-sgd,flat (default: all)",
    )
    p.add_argument(
        "--max-images", type=A.positive_int, default=None, help="a seeded random subsample of this many perturbations"
    )
    p.add_argument("--seed", type=A.seed, default=0, help="seed of the subsample")
    p.add_argument("--device", default="auto", type=A.device, help="auto, cpu, cuda or cuda:N")
    add_json_flag(p)
    p.set_defaults(func=cmd_check)


def read_png(path: str, size: int | None = None, min_res: int | None = None):
    """`(H, W, 3)` float tensor in [0, 1] of a square PNG (of side `size` when given, at least
    `min_res` when given). The header is read first: a decompression bomb, a huge or a too-small
    image is refused before any pixel is decoded (`volratio.data.targets.FileTarget`)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)  # the memory budget decides
            with Image.open(path) as im:
                w, h = im.size
    except FileNotFoundError:
        raise ImageError(f"{path}: no such image file") from None
    except UnidentifiedImageError:
        raise ImageError(f"{path}: not an image Pillow can read") from None
    except Image.DecompressionBombError as e:
        raise ImageError(f"{path}: {e}; give a smaller image (downscale it first)") from None
    if w != h:
        raise ImageError(f"{path}: the judges take square images, got {w}×{h}")
    if min_res is not None and w < min_res:
        raise ImageError(
            f"{path}: {w}×{h} pixels, but the judge answers for images of at least {min_res}×{min_res}; "
            "give a larger image"
        )
    if size is not None and w != size:
        raise ImageError(f"{path}: {w}×{h}, but the reference is {size}×{size}; render both at the same resolution")
    return FileTarget(path).image(w).double()


def _judge_factory(name: str, model: str | None, device: str):
    """`make(reference) -> Judge` for the judge `name`."""
    if name in judges.SELF_ANCHORED:  # per image: each compares it with its own reference
        return lambda reference: judges.make_judge(name, reference, model=model, device=device)
    kw = {"model": model} if model else {}
    j = judges.CLIPJudge(device=device, **kw) if name == "clip" else judges.VLMJudge(device=device, **kw)
    return lambda reference: j


def cmd_judge(args) -> int:
    if args.target is None and args.reference is None:
        raise VolratioError(
            "give --target T (a target spec) or --reference PNG (an image of what the label looks like)"
        )
    if args.target is not None:
        get_target(args.target)  # an unknown target is its own one-line error
    label = args.label or (target_label(args.target) if args.target else None)
    if label is None:
        raise VolratioError("give --label (what the images should show) with --reference")
    smallest = judges.min_res(args.judge)
    imgs = [read_png(p, min_res=smallest) for p in args.images]
    if len({im.shape for im in imgs}) > 1:
        raise VolratioError(
            f"the images have different sizes {sorted({tuple(im.shape[:2]) for im in imgs})}; give images of one size"
        )
    batch = torch.stack(imgs)  # (B, H, W, 3)
    ref = read_png(args.reference, min_res=smallest) if args.reference else None
    if args.judge in judges.SELF_ANCHORED:
        if ref is None:
            raise VolratioError(
                f"--judge {args.judge} compares with the network's own image: give it as --reference PNG"
            )
        if ref.shape != batch.shape[1:]:
            raise VolratioError(
                f"--reference is {ref.shape[0]}×{ref.shape[1]}, the images {batch.shape[1]}×{batch.shape[2]}; render both at one size"
            )
        judge = judges.make_judge(args.judge, ref, args.target, model=args.model, device=args.device)
    elif args.judge == judges.FamilyJudge.name:
        # each image is judged by its change from the network's base image: --reference, else the target's own
        base = ref if ref is not None else get_target(args.target).image(batch.shape[1]).double()
        if base.shape != batch.shape[1:]:
            raise VolratioError(
                f"--reference is {base.shape[0]}×{base.shape[1]}, the images {batch.shape[1]}×{batch.shape[2]}; render both at one size"
            )
        judge = judges.make_judge(args.judge, base, args.target)
    else:
        judge = judges.make_judge(args.judge, batch[0], args.target, model=args.model, device=args.device, anchor=ref)
    v = judge(batch, label)
    anchor = judges.anchor_of(judge)
    payload = {
        "judge": v.judge,
        "anchor": anchor,
        "settings": v.settings,
        "label": label,
        "target": args.target,
        "reference": args.reference,
        "images": [
            {"image": p, "kept": bool(k), "score": float(s)} for p, k, s in zip(args.images, v.verdicts, v.scores)
        ],
    }
    note = "" if v.settings.get("label_fitted", True) else f" (no threshold fitted for {label!r}: the pooled one)"
    lines = [f"judge {v.judge} (anchored on the {anchor}) — is this a {label}?{note}"]
    lines += [f"  {'yes' if k else 'no '}  score {s:.3f}  {p}" for p, k, s in zip(args.images, v.verdicts, v.scores)]
    emit(args, payload, "\n".join(lines))
    return 0


def cmd_check(args) -> int:
    if args.max_images is not None and args.max_images < 1:
        raise VolratioError(f"--max-images must be at least 1, got {args.max_images}")
    groups = [g.strip() for g in args.groups.split(",") if g.strip()] if args.groups else None
    which = args.set or ("anchored" if groups or args.max_images is not None else "inspection")
    if args.sets is not None and which != "inspection":
        raise VolratioError(f"--sets chooses the verdict sets of --set inspection, not of --set {which}")
    if which == "inspection":
        return _check_inspection(args)
    if which == "anchored":
        return _check_anchored(args, groups)

    if args.judge not in SELF_ANCHORED and args.judge not in ("clip", "vlm"):
        raise VolratioError(
            f"--set first checks self-anchored and model judges; check --judge {args.judge} with --set anchored"
        )
    res = fit_calibrated.check_judge(
        _judge_factory(args.judge, args.model, args.device), groups=groups, max_images=args.max_images, seed=args.seed
    )
    a, b = res["all"], res["base kept"]
    lines = [f"judge {res['settings'].get('judge')} against the first verdict set ({', '.join(res['groups'])})"]
    for name, r in (("all perturbations", a), ("networks whose own image shows the object", b)):
        lines += _agreement_lines(name, r)
    lines.append(f"  ROC AUC of the judge's score: {res['auc']:.3f}")
    emit(args, res, "\n".join(lines))
    return 0


def _agreement_lines(name: str, r: dict) -> list[str]:
    return [
        f"  {name}: n = {r['n']}, accuracy {r['accuracy']:.3f}, Cohen's κ {r['kappa']:.3f}",
        f"    judge yes / reference yes {r['kept_kept']}, judge yes / reference no {r['kept_notkept']}, "
        f"judge no / reference yes {r['notkept_kept']}, judge no / reference no {r['notkept_notkept']}",
    ]


def _check_anchored(args, groups) -> int:
    res = fit_anchored.check_judge(args.judge, groups, args.model, args.device, args.max_images, args.seed)
    lines = [f"judge {res['settings'].get('judge')} against the anchored verdicts ({', '.join(res['groups'])})"]
    lines += _agreement_lines("each image shows the label", res["images"])
    lines += _agreement_lines("EMC2 verdicts (unperturbed and perturbed image shown)", res["emc2"])
    lines.append(f"  ROC AUC of the judge's score: {res['auc']:.3f}")
    emit(args, res, "\n".join(lines))
    return 0


def _check_inspection(args) -> int:
    sets = judge_agreement.SETS
    if args.sets is not None:
        sets = tuple(x.strip() for x in args.sets.split(",") if x.strip())
        if unknown := sorted(set(sets) - set(judge_agreement.SETS)) or not sets:
            raise VolratioError(
                f"--sets {args.sets!r}: unknown {unknown}; choose from {','.join(judge_agreement.SETS)}"
            )
    table = judge_agreement.compare(args.judge, sets)
    payload = {"judge": args.judge, "tolerance": judge_agreement.TOLERANCE, "rows": table.to_dict("records")}
    lines = [f"judge {args.judge} against inspection, held to the inspection's blind repeat (κ ≥ repeat κ − "
             f"{judge_agreement.TOLERANCE} on groups that are not ambiguous)"]  # fmt: skip
    for name, part in table.groupby("set", sort=False):
        lines.append(f"  {name}{'' if part['held_out'].iloc[0] else ' (fitted on: not held out)'}")
        for r in part.itertuples():
            fr = f"{r.false_rejections}/{r.both_keep}" if r.both_keep else "–"
            flag = (
                "one-class repeat" if r.one_class else "ambiguous" if r.ambiguous else "meets" if r.meets else "short"
            )
            lines.append(f"    {r.group:<28} n {r.n:>4}  κ {r.kappa:6.3f}  repeat κ {r.repeat_kappa:6.3f} "
                         f"(n {r.repeat_n:>3})  false rejections {fr:>7}  {flag}")  # fmt: skip
    emit(args, payload, "\n".join(lines))
    return 0
