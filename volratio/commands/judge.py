"""Judge commands: `judge` (verdicts for PNG images) and `judge-check` (a judge against the
reference verdicts of `data/judge_reference/`)."""

from __future__ import annotations

from . import _args as A
from ._common import add_json_flag, emit


def register(sub) -> None:
    p = sub.add_parser("judge", help="is each image still a <label>? one verdict and score per image")
    p.add_argument("images", nargs="+", help="PNG images (square, the reference's size)")
    p.add_argument("--reference", required=True, help="the unperturbed image (PNG) the offline judge compares with")
    p.add_argument("--label", required=True, help="what the image should show, e.g. skull")
    p.add_argument(
        "--judge",
        default="calibrated",
        choices=["calibrated", "calibrated-pooled", "ssim", "clip", "vlm"],
        help="calibrated: SSIM@4 with thresholds fitted on the reference verdicts (default); calibrated-pooled: "
        "the same with one threshold for every target; ssim: threshold "
        "from other targets; clip, vlm: local model weights",
    )
    p.add_argument("--model", default=None, help="local folder or cached model id for --judge clip/vlm")
    p.add_argument("--device", default="auto", type=A.device, help="auto, cpu, cuda or cuda:N")
    add_json_flag(p)
    p.set_defaults(func=cmd_judge)

    p = sub.add_parser("judge-check", help="agreement of a judge with the reference verdicts (data/judge_reference)")
    p.add_argument("--judge", required=True, choices=["calibrated", "calibrated-pooled", "ssim", "clip", "vlm"])
    p.add_argument("--model", default=None, help="local folder or cached model id for --judge clip/vlm")
    p.add_argument(
        "--groups",
        default=None,
        help="comma-separated network groups to check, e.g. picbreeder,fer-sgd (default: all; "
        "the others need about a minute of training)",
    )
    p.add_argument(
        "--max-images", type=A.positive_int, default=None, help="a seeded random subsample of this many perturbations"
    )
    p.add_argument("--seed", type=A.seed, default=0, help="seed of the subsample")
    p.add_argument("--device", default="auto", type=A.device, help="auto, cpu, cuda or cuda:N")
    add_json_flag(p)
    p.set_defaults(func=cmd_check)


def read_png(path: str, size: int | None = None):
    """`(H, W, 3)` float tensor in [0, 1] of a square PNG (of side `size` when given)."""
    from PIL import Image, UnidentifiedImageError

    from ..errors import ImageError
    from ..targets import FileTarget

    try:
        with Image.open(path) as im:
            w, h = im.size
    except FileNotFoundError:
        raise ImageError(f"{path}: no such image file") from None
    except UnidentifiedImageError:
        raise ImageError(f"{path}: not an image Pillow can read") from None
    if w != h:
        raise ImageError(f"{path}: the judges take square images, got {w}×{h}")
    if size is not None and w != size:
        raise ImageError(f"{path}: {w}×{h}, but the reference is {size}×{size}; render both at the same resolution")
    return FileTarget(path).image(w).double()


def _judge_factory(name: str, model: str | None, device: str):
    """`make(reference) -> Judge` for the judge `name`."""
    from .. import judges

    if name in ("ssim", "calibrated", "calibrated-pooled"):  # per image: each compares it with its own reference
        return lambda reference: judges.make_judge(name, reference, model=model, device=device)
    kw = {"model": model} if model else {}
    j = judges.CLIPJudge(device=device, **kw) if name == "clip" else judges.VLMJudge(device=device, **kw)
    return lambda reference: j


def cmd_judge(args) -> int:
    import torch

    ref = read_png(args.reference)
    imgs = torch.stack([read_png(p, ref.shape[0]) for p in args.images])  # (B, H, W, 3)
    judge = _judge_factory(args.judge, args.model, args.device)(ref)
    v = judge(imgs, args.label)
    payload = {
        "judge": v.judge,
        "settings": v.settings,
        "label": args.label,
        "reference": args.reference,
        "images": [
            {"image": p, "kept": bool(k), "score": float(s)} for p, k, s in zip(args.images, v.verdicts, v.scores)
        ],
    }
    lines = [f"judge {v.judge} — is this still a {args.label}?"]
    lines += [
        f"  {'kept    ' if k else 'not kept'}  score {s:.3f}  {p}" for p, k, s in zip(args.images, v.verdicts, v.scores)
    ]
    emit(args, payload, "\n".join(lines))
    return 0


def cmd_check(args) -> int:
    from ..errors import VolratioError
    from ..judge_calibration import check_judge

    if args.max_images is not None and args.max_images < 1:
        raise VolratioError(f"--max-images must be at least 1, got {args.max_images}")
    groups = [g.strip() for g in args.groups.split(",") if g.strip()] if args.groups else None
    res = check_judge(
        _judge_factory(args.judge, args.model, args.device), groups=groups, max_images=args.max_images, seed=args.seed
    )
    a, b = res["all"], res["base kept"]
    lines = [f"judge {res['settings'].get('judge')} against the reference verdicts ({', '.join(res['groups'])})"]
    for name, r in (("all perturbations", a), ("networks whose own image shows the object", b)):
        lines.append(f"  {name}: n = {r['n']}, accuracy {r['accuracy']:.3f}, Cohen's κ {r['kappa']:.3f}")
        lines.append(
            f"    judge kept / reference kept {r['kept_kept']}, judge kept / reference not {r['kept_notkept']}, "
            f"judge not / reference kept {r['notkept_kept']}, judge not / reference not {r['notkept_notkept']}"
        )
    lines.append(f"  ROC AUC of the judge's score: {res['auc']:.3f}")
    emit(args, res, "\n".join(lines))
    return 0
