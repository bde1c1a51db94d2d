"""The figures the book shows. Each function takes data, draws on a new figure, and returns it.

Large grids of feature maps are composed into one mosaic array and drawn with a single `imshow`
(a thousand sub-axes would take matplotlib minutes).
"""

from __future__ import annotations

from typing import Sequence

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.ticker import NullFormatter

from ..rho.grid import rows_to_grid


def _np(img) -> np.ndarray:
    if isinstance(img, torch.Tensor):
        img = img.detach().cpu().numpy()
    return np.asarray(img)


def image_row(images: Sequence, titles: Sequence[str] | None = None, size: float = 2.2, suptitle: str | None = None):
    """Images `(H, W, 3)` side by side."""

    n = len(images)
    fig, axes = plt.subplots(1, n, figsize=(size * n, size * 1.1), squeeze=False)
    for i, ax in enumerate(axes[0]):
        ax.imshow(np.clip(_np(images[i]), 0, 1), interpolation="nearest")
        ax.set_xticks([])
        ax.set_yticks([])
        if titles:
            ax.set_title(titles[i], fontsize=9)
    if suptitle:
        fig.suptitle(suptitle, fontsize=10)
    fig.tight_layout()
    return fig


def image_grid(
    rows: Sequence[Sequence],
    row_labels: Sequence[str] | None = None,
    col_labels: Sequence[str] | None = None,
    size: float = 1.2,
    title: str | None = None,
    frames: Sequence[Sequence] | None = None,
    captions: Sequence[Sequence[str]] | None = None,
):
    """A grid of images: `rows[i][j]` is `(H, W, 3)` (weight sweeps and similar figures). `frames[i][j]`:
    True draws a green frame round the image, False a red one, None none; `captions[i][j]`: a line
    under it."""

    nr, nc = len(rows), max(len(r) for r in rows)
    fig, axes = plt.subplots(nr, nc, figsize=(size * nc + 1.0, size * nr + 0.4), squeeze=False)
    for i in range(nr):
        for j in range(nc):
            ax = axes[i][j]
            ax.set_xticks([])
            ax.set_yticks([])
            if j < len(rows[i]):
                ax.imshow(np.clip(_np(rows[i][j]), 0, 1), interpolation="nearest")
                mark = frames[i][j] if frames is not None and j < len(frames[i]) else None
                for side in ax.spines.values():
                    side.set_visible(mark is not None)
                    if mark is not None:
                        side.set_color("#1a9641" if mark else "#d7191c")
                        side.set_linewidth(2.0)
                if captions is not None and j < len(captions[i]):
                    ax.set_xlabel(captions[i][j], fontsize=6, labelpad=1)
            else:
                ax.axis("off")
            if row_labels is not None and j == 0:
                ax.set_ylabel(row_labels[i], fontsize=7, rotation=0, ha="right", va="center")
            if col_labels is not None and i == 0:
                ax.set_title(col_labels[j], fontsize=8)
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig


def tile_maps(maps: Sequence[np.ndarray], pad: int = 1, fill: float = np.nan) -> np.ndarray:
    """Stack rows of feature maps into one array. `maps[i]` is `(n_i, H, W)`; rows are padded to
    the longest with `fill` (drawn as background)."""
    maps = [_np(m) for m in maps]
    H, W = maps[0].shape[1:3]
    ncol = max(m.shape[0] for m in maps)
    out = np.full((len(maps) * (H + pad) - pad, ncol * (W + pad) - pad), fill, dtype=np.float64)
    for i, row in enumerate(maps):
        for j in range(row.shape[0]):
            out[i * (H + pad) : i * (H + pad) + H, j * (W + pad) : j * (W + pad) + W] = row[j]
    return out


def feature_mosaic(layers: Sequence, title: str = "", ax=None, row_label: str = "layer", per_unit: bool = True):
    """Draw per-layer feature maps (`layers[l]` is `(n_units, H, W)`) as one mosaic: one row per
    layer, one tile per unit, a diverging colour map centred at 0. With `per_unit` each tile is
    scaled by its own largest |value|, so that a unit's *pattern* is visible whatever its size."""

    if per_unit:
        layers = [_np(l) / np.maximum(np.abs(_np(l)).max(axis=(1, 2), keepdims=True), 1e-12) for l in layers]
    m = tile_maps(layers)
    if ax is None:
        fig, ax = plt.subplots(figsize=(min(14, 0.35 * m.shape[1] / layers[0].shape[1] + 2), 0.35 * len(layers) + 1))
    lim = np.nanmax(np.abs(m)) or 1.0
    cmap = plt.get_cmap("RdBu_r").copy()
    cmap.set_bad("white")
    ax.imshow(m, cmap=cmap, vmin=-lim, vmax=lim, interpolation="nearest")
    H = layers[0].shape[1]
    ax.set_yticks([(H + 1) * i + H / 2 for i in range(len(layers))])
    ax.set_yticklabels([f"{row_label} {i + 1}" for i in range(len(layers))], fontsize=6)
    ax.set_xticks([])
    ax.set_title(title, fontsize=9)
    return ax.figure


def loss_curves(curves: dict, title: str = "", logy: bool = True):
    """`curves` maps a label to `(steps, losses)`."""

    fig, ax = plt.subplots(figsize=(6, 3.2))
    for label, (x, y) in curves.items():
        ax.plot(_np(x), _np(y), label=label, lw=1.2)
    if logy:
        ax.set_yscale("log")
    ax.set_xscale("log")
    ax.set_xlabel("step")
    ax.set_ylabel("MSE (RGB)")
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


# ---------------------------------------------------------------------------------------------
# Depth (chapters "Depth", "Unknown targets", "Your own target")


def plot_curves(curves: dict, ax=None, title: str = "", true_depths: dict | None = None):
    """Mean EMC2 score vs depth per target with 95% t-intervals over seeds; the sweet spot marked
    (and the true depth L*, dashed, where `true_depths` gives it)."""

    if ax is None:
        _, ax = plt.subplots(figsize=(6.4, 3.6))
    for name, c in curves.items():
        rows = c.summary()
        d = [r["depth"] for r in rows]
        m = np.array([r["score"] for r in rows])
        lo, hi = np.array([r["score_lo"] for r in rows]), np.array([r["score_hi"] for r in rows])
        (line,) = ax.plot(d, m, "o-", label=name, ms=4)
        ax.fill_between(d, lo, hi, color=line.get_color(), alpha=0.15)
        if c.spot.depth is not None:
            ax.plot([c.spot.depth], [m[d.index(c.spot.depth)]], "*", color=line.get_color(), ms=12)
        if true_depths and name in true_depths:
            ax.axvline(true_depths[name], color=line.get_color(), ls="--", lw=0.8)
    ax.set_xlabel("depth L (hidden layers)")
    ax.set_ylabel("EMC2 score (AUC)")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7)
    return ax


def depth_panels(curves: dict, true_depths: dict, title: str = "", networks: str = ""):
    """The depth chapter's two panels: the Picbreeder (or any unplanted) curves against depth (left,
    `plot_curves`), and every planted curve of `true_depths` against depth − L* (right), so that a
    peak at the true depth sits at 0; the planted panel alone where every curve is planted. Returns
    the figure."""
    pic = {t: c for t, c in curves.items() if t not in true_depths}
    fig, axes = plt.subplots(1, 2, figsize=(12, 5)) if pic else plt.subplots(1, 1, figsize=(7, 5))
    axes = axes if pic else [None, axes]
    if pic:
        n = next(iter(pic.values())).score.shape[1]
        plot_curves(pic, ax=axes[0], title=f"Picbreeder targets: {n} networks per depth{networks}")
    for t, lstar in true_depths.items():
        c = curves[t]
        axes[1].plot(np.array(c.depths) - lstar, c.spot.means, "o-", ms=3, lw=0.8, alpha=0.7,
                     label=f"{t.split(':')[1]}: L*={lstar}")  # fmt: skip
    axes[1].axvline(0, color="k", ls="--", lw=0.8)
    axes[1].set_xlabel("depth − L*"), axes[1].set_ylabel("mean EMC2 score (AUC)")
    axes[1].set_title(f"{len(true_depths)} planted targets, against depth − L*", fontsize=11)
    axes[1].legend(fontsize=8, ncol=2)
    if pic:
        axes[0].legend(fontsize=10)
        axes[0].title.set_fontsize(11)
    for ax in [a for a in axes if a is not None]:
        ax.tick_params(labelsize=10), ax.xaxis.label.set_fontsize(11), ax.yaxis.label.set_fontsize(11)
    fig.suptitle(title, fontsize=12)
    fig.tight_layout()
    return fig


def plot_predictor(pred, ax=None, title: str = "", xlabel: str = "PNG compression ratio", ylabel: str = "depth"):
    """The points, the fitted line, its confidence band and the prediction interval."""

    if ax is None:
        _, ax = plt.subplots(figsize=(5, 3.6))
    x = np.asarray(pred.x)
    grid = np.linspace(x.min() - 0.05 * np.ptp(x), x.max() + 0.05 * np.ptp(x), 100)
    p = pred.predict(grid)
    ax.fill_between(grid, p["pi_lo"], p["pi_hi"], color="C0", alpha=0.1, label=f"{pred.level:.0%} prediction interval")
    ax.fill_between(grid, p["band_lo"], p["band_hi"], color="C0", alpha=0.25, label=f"{pred.level:.0%} confidence band")
    ax.plot(grid, p["depth"], "C0-", label=f"{pred.a:.2f} + {pred.b:.3f}·ratio (R² = {pred.r2:.2f})")
    ax.plot(x, pred.y, "ko", ms=4)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7)
    return ax


# ---------------------------------------------------------------------------------------------
# EMC2 weight sweeps


def predictor_check(check, title: str = "", ax=None):
    """A predictor fitted on some targets' sweet spots and checked on others
    (`volratio.experiments.depth_regime.PredictorCheck`): the fit (`plot_predictor`), and each
    held-out target's measured sweet spot (red star) beside its prediction's 95% interval."""
    if ax is None:
        _, ax = plt.subplots(figsize=(9, 5))
    plot_predictor(check.fit, ax=ax, title=title, ylabel="sweet-spot depth")
    for r in check.held_out:
        lo, hi = r["prediction interval"]
        ax.errorbar([r["ratio"]], [r["predicted"]], yerr=[[r["predicted"] - lo], [hi - r["predicted"]]], fmt="none",
                    ecolor="r", alpha=0.5)  # fmt: skip
        ax.plot([r["ratio"]], [r["measured sweet spot"]], "r*", ms=10)
        ax.annotate(r["target"].split(":")[1], (r["ratio"], r["measured sweet spot"]), fontsize=7)
    return ax


def draw_weight_sweep(sweep, title: str | None = None, scale: float = 1.1):
    """A weight sweep (`volratio.emc2.WeightSweep`) as a grid of images (rows: parameters, then
    controls; columns: Δw). Chapters "EMC2-Bench", "Unknown targets", "Your own target"."""

    R, C = sweep.images.shape[:2]
    fig, axes = plt.subplots(R, C, figsize=(scale * C + 1.6, scale * R + 0.4), squeeze=False)
    for a in range(R):
        for b in range(C):
            ax = axes[a, b]
            ax.imshow(sweep.images[a, b], interpolation="nearest")
            ax.set_xticks([]), ax.set_yticks([])
            if a == 0:
                ax.set_title(f"Δw={sweep.offsets[b]:+.2g}", fontsize=8)
            if b == 0:
                ax.set_ylabel(sweep.labels[a], fontsize=6, rotation=0, ha="right", va="center")
    if title:
        fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    return fig


def basin_heatmap(rows: list[dict], Ws, Ls, depth: int, w_min: int, ax=None, title: str = ""):
    """ρ(W, L) of a basin grid as a heat map, each cell annotated with ρ, its interval and
    compositional/solutions; the planted (W_min, L*) outlined in red."""

    if ax is None:
        _, ax = plt.subplots(figsize=(5, 3.8))
    Ws, Ls = list(Ws), list(Ls)
    im = ax.imshow(rows_to_grid(rows, "rho", Ws, Ls), origin="lower", vmin=0, vmax=1, cmap="viridis")
    for r in rows:
        if r["rho"] is None:
            txt = f"—\n{r['compositional']}/{r['solutions']}"
        else:
            txt = f"{r['rho']:.2f}\n[{r['lo']:.2f},{r['hi']:.2f}]\n{r['compositional']}/{r['solutions']}"
        color = "w" if (r["rho"] or 0) < 0.6 else "k"
        ax.text(Ws.index(r["W"]), Ls.index(r["L"]), txt, ha="center", va="center", fontsize=7, color=color)
    if w_min in Ws and depth in Ls:
        ax.plot(Ws.index(w_min), Ls.index(depth), "s", mfc="none", mec="r", ms=36, mew=1.5)
    ax.set(xticks=range(len(Ws)), xticklabels=Ws, yticks=range(len(Ls)), yticklabels=Ls, xlabel="W", ylabel="L")
    ax.set_title(title, fontsize=9)
    ax.figure.colorbar(im, ax=ax, fraction=0.046)
    return ax


def draw_judged(examples, title: str | None = None, size: float = 1.1):
    """What one EMC2 score counts (`volratio.emc2.judged_examples`): the unperturbed image, then per
    δ a row of perturbed images, each framed green where the judge says the identity is kept and red
    where it is not."""
    ex = examples
    rows = [[ex.base] + list(r) for r in ex.images]
    frames = [[ex.base_kept] + [bool(k) for k in row] for row in ex.kept]
    cols = ["unperturbed"] + [f"k{k} r{r} c{c}" for k, r, c in np.asarray(ex.params).tolist()]
    return image_grid(rows, [f"δ = {d:+g}" for d in ex.deltas], cols, size=size, frames=frames, title=title)


# ---------------------------------------------------------------------------------------------
# Picbreeder networks against their twins


def paired_auc(paired, title: str = "", xlabel: str = "EMC2 AUC"):
    """One row per target of `volratio.experiments.twins.paired`: the Picbreeder network's AUC and
    its interval (orange) above the twins' mean and t-interval (blue, over the twins that draw the
    target, cut at 0 and 1); a target left out of the comparison is greyed, with the reason."""
    t = paired.iloc[::-1]
    fig, ax = plt.subplots(figsize=(10, 0.42 * len(t) + 1.2))
    for y, (_, r) in enumerate(t.iterrows()):
        a = 1.0 if r["used"] else 0.35
        ax.errorbar(r["Picbreeder"], y + 0.15, xerr=[[r["Picbreeder"] - r["Picbreeder lo"]], [r["Picbreeder hi"] - r["Picbreeder"]]],
                    fmt="o", color="C1", alpha=a, ms=6, capsize=3, label="Picbreeder" if y == 0 else None)  # fmt: skip
        if np.isfinite(r.get("twins mean", np.nan)):
            # an AUC lies in [0, 1]; a t-interval over 2–3 seeds can reach past it, and is drawn cut at the bounds
            lo, hi = max(r["twins lo"], 0.0), min(r["twins hi"], 1.0)
            ax.errorbar(r["twins mean"], y - 0.15, xerr=[[r["twins mean"] - lo], [hi - r["twins mean"]]], fmt="s",
                        color="C0", alpha=a, ms=5, capsize=3, label="dense twins (mean, t-interval)" if y == 0 else None)  # fmt: skip
        if not r["used"]:
            ax.text(1.07, y, f"left out: {r['why']}", fontsize=8, va="center", color="0.4")
    ax.set_yticks(range(len(t)), [f"{n} (depth {str(r['arch']).split(';')[0]})" for n, r in t.iterrows()], fontsize=9)
    ax.set_xlim(-0.05, 1.05)
    ax.set_xlabel(xlabel)
    ax.grid(axis="x", alpha=0.3)
    ax.legend(fontsize=9, loc="lower left")
    ax.set_title(title, fontsize=10)
    fig.tight_layout()
    return fig


FRONTIER_STYLE = {  # method -> (marker, colour) of the sparsity–fit frontier
    "sp": ("o", "C0"), "magnitude": ("s", "C1"), "random": ("x", "C2"), "wanda": ("^", "C3"),
    "random-units": ("v", "C4"), "scratch": ("*", "k"), "dense": ("D", "0.5"), "imp": ("P", "C5"),
    "llm-pruner": ("<", "C6"),
}  # fmt: skip


def frontier(table, title: str = "", picbreeder_nonzero: int | None = None, fit_factor: float = 2.0, ax=None):
    """The sparsity–fit frontier of a `sparse_regime` table: non-zero weights (log axis) against MSE ÷
    the dense MSE (log axis). SP's trajectory is a line per member; each checkpoint's networks are
    points, one marker per method (`FRONTIER_STYLE`); the dotted line is `fit_factor` × the dense
    MSE, and `picbreeder_nonzero` (the Picbreeder network's count) a vertical line."""
    fig, ax = (ax.figure, ax) if ax is not None else plt.subplots(figsize=(8, 5))
    traj = table[table.kind == "trajectory"]
    for k, g in traj.groupby("member"):
        g = g.sort_values("round")
        ax.plot(
            g.nonzero, g.loss_ratio, "-", color="C0", alpha=0.5, lw=1, label="SP, round by round" if k == 0 else None
        )
    points = table[table.kind == "checkpoint"]
    for method, g in points.groupby("method", sort=False):
        marker, colour = FRONTIER_STYLE.get(method, ("o", None))
        ax.scatter(g.nonzero, g.loss_ratio, marker=marker, color=colour, s=40, label=method, zorder=3)
    ax.axhline(fit_factor, ls=":", color="0.3", lw=1)
    if picbreeder_nonzero is not None:
        ax.axvline(picbreeder_nonzero, ls="--", color="0.3", lw=1, label="Picbreeder network")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("non-zero weights")
    ax.set_ylabel("MSE ÷ dense MSE")
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8, loc="lower left")
    fig.tight_layout()
    return fig


SIZE_STYLE = {  # kind -> (marker, colour) of `auc_by_size`
    "Picbreeder": ("*", "C3"),
    "dense twin": ("o", "C7"),
    "SP twin": ("^", "C0"),
    "scratch twin": ("s", "C2"),
}


def auc_by_size(rows, title: str = "", ax=None):
    """EMC2 AUC against non-zero weights (log axis), one marker per kind of network (`SIZE_STYLE`),
    from a table with `kind`, `checkpoint`, `nonzero`, `auc` and `base_kept` (`volratio.report.readings.emc2.size_twins`):
    a twin pruned to a checkpoint short of SP's end is drawn pale, and a network whose unperturbed
    image the judge does not keep (it scores 0) hollow."""
    fig, ax = (ax.figure, ax) if ax is not None else plt.subplots(figsize=(6, 4.5))
    ckpt = rows.checkpoint.astype(object).where(rows.checkpoint.notna(), "end")
    for (kind, c), g in rows.assign(checkpoint=ckpt).groupby(["kind", "checkpoint"], sort=False):
        marker, colour = SIZE_STYLE.get(kind, ("o", None))
        size, alpha = (160 if marker == "*" else 45), (1.0 if c == "end" else 0.4)
        label = kind if c == "end" else f"{kind}, {float(c):.0%} sparse"
        kept = g[g.base_kept.astype(bool)]
        lost = g[~g.base_kept.astype(bool)]
        ax.scatter(kept.nonzero, kept.auc, marker=marker, color=colour, s=size, alpha=alpha, label=label, zorder=3)
        ax.scatter(lost.nonzero, lost.auc, marker=marker, facecolors="none", edgecolors=colour, s=size, alpha=alpha,
                   zorder=3)  # fmt: skip
    ax.set_xscale("log")
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_ylim(-0.03, 1.03)
    ax.set_xlabel("non-zero weights")
    ax.set_ylabel("EMC2 AUC")
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8, loc="best")
    fig.tight_layout()
    return fig


def sp_endpoints(grid, fit_factor: float = 2.0, title: str = ""):
    """Where SP ends and where it last fits, against the retraining steps per round (log axis), one
    colour per τ start, from `sparse_regime.endpoint_grid`'s table: weight sparsity (left) and MSE ÷
    the dense MSE (right, log axis; the dotted line is `fit_factor`). Solid lines: the end point;
    dashed: the fit point; lines join the medians over the members, whose own values are the small
    markers (a collapsed end point is drawn as a cross)."""
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.2))
    for i, (tau, g) in enumerate(grid.groupby("tau", sort=False)):
        colour = f"C{i}"
        med = g.groupby("retrain_steps").median(numeric_only=True)
        for ax, (end, fit) in zip(axes, (("sparsity", "fit_sparsity"), ("loss_ratio", "fit_loss_ratio"))):
            ax.plot(med.index, med[end], "-o", color=colour, label=f"τ from {tau:g}: end point")
            ax.plot(med.index, med[fit], "--s", color=colour, mfc="none", label=f"τ from {tau:g}: fit point")
            ok, flat = g[~g.collapsed.astype(bool)], g[g.collapsed.astype(bool)]
            ax.scatter(ok.retrain_steps, ok[end], color=colour, s=12, alpha=0.5, zorder=3)
            ax.scatter(flat.retrain_steps, flat[end], color=colour, marker="x", s=24, alpha=0.7, zorder=3)
            ax.scatter(g.retrain_steps, g[fit], facecolors="none", edgecolors=colour, marker="s", s=12, alpha=0.5)
    steps = sorted(grid.retrain_steps.unique())
    for ax in axes:
        ax.set_xscale("log")
        ax.set_xticks(steps, [str(s) for s in steps])
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_xlabel("retraining steps per round")
    axes[0].set_ylim(0, 1)
    axes[0].set_ylabel("weight sparsity")
    axes[1].set_yscale("log")
    axes[1].axhline(fit_factor, ls=":", color="0.3", lw=1, label=f"fit criterion ({fit_factor:g} × dense)")
    axes[1].set_ylabel("MSE ÷ dense MSE")
    axes[1].legend(fontsize=8, loc="best")
    if title:
        fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    return fig


def optimizers_at_best(best, loss_label: str = "final MSE", title: str = ""):
    """Adam and Muon, each at its best setting, per target (or target @ depth): the loss the setting
    was chosen on (left, log axis) and the EMC2 AUC of the same networks (right), means with their
    95% intervals. `best`: the rows of `volratio.experiments.optimizers.at_best_lr`, concatenated
    with a `target` column (the dict's keys); a target an optimizer has not run yet has no point for it.
    Returns the figure."""
    targets = list(dict.fromkeys(best.target))
    opts = list(dict.fromkeys(best.optimizer))
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.8))
    for ax, (col, label) in zip(axes, [("loss", loss_label), ("score", "EMC2 AUC (anchored)")]):
        for i, t in enumerate(targets):
            for j, opt in enumerate(opts):
                rows = best[(best.target == t) & (best.optimizer == opt)]
                if rows.empty:  # a partly run chunk: this optimizer has no run on `t` yet
                    continue
                r = rows.iloc[0]
                ax.errorbar([i + (j - 0.5) * 0.25], [r[col]], yerr=[[r[col] - r[f"{col}_lo"]], [r[f"{col}_hi"] - r[col]]],
                            fmt="o", color=f"C{j}", capsize=3, label=opt if i == 0 else None)  # fmt: skip
        ax.set_xticks(range(len(targets)), [t.split(":", 1)[-1] for t in targets])
        ax.set_ylabel(f"{label}\nmean and 95% interval over seeds", fontsize=11)
        ax.tick_params(labelsize=11)
    axes[0].set_yscale("log")
    axes[0].legend(fontsize=11, loc="upper right")
    axes[0].set_title("the loss at each optimizer's best setting", fontsize=12)
    axes[1].set_title("the score of the same networks", fontsize=12)
    if title:
        fig.suptitle(title, fontsize=12)
    fig.tight_layout()
    return fig


def scene_panels(curves: dict, scenes, parts_of, title: str = ""):
    """One panel per scene of `scenes`: its depth curve beside its parts' (`parts_of(scene)` → the
    parts' targets; `plot_curves` of each), two panels a row, sharing the score axis. Returns the
    figure."""
    ncols = 2
    nrows = -(-len(scenes) // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(11, 4.2 * nrows), sharey=True, squeeze=False)
    for ax, spec in zip(axes.flat, scenes):
        plot_curves({t: curves[t] for t in (spec, *parts_of(spec))}, ax=ax,
                    title=f"{spec.removeprefix('scene:')} and its parts")  # fmt: skip
        ax.legend(fontsize=9), ax.title.set_fontsize(11)  # readable at the column's width
    for ax in axes.flat[len(scenes) :]:
        ax.set_visible(False)
    if title:
        fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    return fig
