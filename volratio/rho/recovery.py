"""A judge-free structural score on planted targets: how well a network's hidden units recover the
planted primitives, how close each of its units is to one, and how many of its units carry one
primitive each.

A planted target (`volratio.data.targets.PlantedTarget`) is a known DAG of primitives, each with its
ground-truth map (`primitive_maps`). For a network (a `CoordMLP` population of K) the score reads the
absolute Pearson correlation between every hidden unit's feature map and every planted map
(`primitive_correlations`) and reports three numbers per network:

- **recovery**: the mean ``|r|`` over the target's hidden primitives under the optimal one-to-one
  assignment of primitives to *live* hidden units (`assigned_correlations`, scipy's
  `linear_sum_assignment`); a primitive left without a live unit counts 0. The output node is
  excluded: any network that fits its target draws it.
- **per-unit recovery** (`per_unit`): the mean over *live* hidden units of each unit's best ``|r|``
  with any planted node, the output node included (a unit that computes the output computes a node
  of the DAG). Recovery is a maximum over assignments, so extra units can only raise it; the
  per-unit reading averages over every live unit, so a unit that carries no planted node lowers it,
  and a copy of a unit that carries one leaves it unchanged.
- **monosemanticity**: the share of live units (`volratio.nets.live_unit_mask`) whose best planted
  node's ``|r|`` exceeds by at least `margin` their best ``|r|`` with a node distinguishable from it. Here
  the output node counts like the others (a unit that computes the output is dedicated to one
  planted node). Two planted maps that correlate at ``|r|`` ≥ 1 − `margin` are indistinguishable
  (`indistinguishable`): deep planted DAGs hold chains of nearly identical maps (a sigmoid of a
  sigmoid), and no unit can carry one of them without the other. So the planted DAG built into a
  masked network scores recovery 1 and monosemanticity 1 (`tests/test_recovery.py`).

Recovery keeps every primitive, near-duplicates included: a network that computes two nearly
identical primitives with one unit gets the second one's best other unit.

**Chance levels** (`chance`): the same networks against the primitives of other planted targets with
the same layer sizes (`control_targets`), and networks at initialisation (`at_initialisation`:
fresh LeCun-normal weights under the same masks, so the same live units) against the target itself.
Both are read at the network's own live units, so a reading *above chance* (`above_chance`: the
score minus its chance level against other targets) compares like with like: a network that
raises its recovery only by having more units raises its chance level as much.

The basin model (`volratio.rho.basin`) classifies a network as compositional with the same two
functions (`primitive_correlations`, `assigned_correlations`): one definition of the assignment.

Chapters: "Depth: a narrow, target-dependent regime" (judge-free section) and "The volume-ratio
argument" (the basin model).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
import scipy
import torch

from ..data.targets import PlantedTarget, get_target
from ..nets import CoordMLP, live_unit_mask
from ..util.limits import at_least, between, check_limits
from ..util.presets import Presets
from .sampler import RhoError

OUTPUT = "out"  # the output node's key in `PlantedTarget.primitive_maps`


@dataclass(frozen=True)
class RecoveryConfig(Presets):
    """How the structural score reads a network (module docstring)."""

    res: int = 64  # feature and primitive maps at res × res (the stored depth networks' resolution)
    margin: float = 0.1  # monosemantic: best node's |r| ≥ margin + the best |r| with a node whose map
    # correlates with the best one's at |r| < 1 − margin (the others cannot be told apart from it)
    controls: int = 4  # other planted targets with the same layer sizes, for the chance level
    seed: int = 0  # seeds the choice of control targets and the networks at initialisation

    LIMITS = {"res": at_least(2), "margin": between(0, 1, open_lo=True), "controls": at_least(1), "seed": at_least(0)}

    def __post_init__(self):
        check_limits(self, "RecoveryConfig")


# ---------------------------------------------------------------------------------------------
# The two shared functions (the basin model calls them too)


def primitive_correlations(feats: list[torch.Tensor], prims: dict[str, torch.Tensor]) -> np.ndarray:
    """The absolute Pearson correlation between every primitive map and every hidden unit: (K, n_prim, n_units).
    `feats`: per layer (K, res, res, W), units numbered layer by layer; `prims`: name → (res, res).
    Constant maps correlate 0."""
    F = torch.cat([f.flatten(1, 2) for f in feats], dim=-1).double()  # (K, P, U)
    Pm = torch.stack([p.flatten() for p in prims.values()], dim=-1).double()  # (P, n_prim)
    F = F - F.mean(1, keepdim=True)
    Pm = Pm - Pm.mean(0, keepdim=True)
    fn, pn = F.norm(dim=1), Pm.norm(dim=0)  # (K, U), (n_prim,)
    C = torch.einsum("kpu,pq->kqu", F, Pm) / (pn[None, :, None] * fn[:, None, :]).clamp_min(1e-12)
    C = torch.where((fn[:, None, :] > 1e-9) & (pn[None, :, None] > 1e-9), C, torch.zeros_like(C))
    return C.abs().cpu().numpy()


def assigned_correlations(C: np.ndarray) -> np.ndarray:
    """Per network, the absolute correlation of each primitive with the unit an optimal one-to-one
    assignment gives it (the largest total), (K, n_prim); 0 where there are fewer units than
    primitives. `C`: (K, n_prim, n_units) from `primitive_correlations`."""
    K, n_prim, U = C.shape
    out = np.zeros((K, n_prim))
    for k in range(K):
        r, c = scipy.optimize.linear_sum_assignment(-C[k])
        out[k, r] = C[k, r, c]
    return out


# ---------------------------------------------------------------------------------------------
# Features, the score, its chance levels


def indistinguishable(prims: dict[str, torch.Tensor], margin: float) -> np.ndarray:
    """(n, n) bool over the planted maps `prims`: ``|r|`` ≥ 1 − `margin` between two maps (the diagonal
    True). A unit cannot carry one of such a pair without carrying the other."""
    M = torch.stack([p.flatten() for p in prims.values()]).double().numpy()  # (n, P)
    with np.errstate(invalid="ignore", divide="ignore"):
        R = np.abs(np.nan_to_num(np.corrcoef(M)))  # constant maps correlate 0
    np.fill_diagonal(R, 1.0)
    return R >= 1.0 - margin - 1e-12


@dataclass
class Structure:
    """The structural score of a population of K networks on one planted target."""

    target: str  # the target's spec
    primitives: list  # the hidden primitives recovery is over (the output node excluded)
    recovery: np.ndarray  # (K,) mean assigned |r| over `primitives`
    monosemanticity: np.ndarray  # (K,) share of live units with best − second best ≥ margin (0: no live unit)
    assigned: np.ndarray  # (K, n_primitives) the |r| each primitive gets under the assignment
    live: np.ndarray  # (K,) live hidden units
    per_unit: np.ndarray  # (K,) mean over live units of their best |r| with any planted node (0: no live unit)


def structure(net: CoordMLP, target, cfg: RecoveryConfig = RecoveryConfig()) -> Structure:
    """Recovery and monosemanticity of every network of `net` on planted `target` (a spec or a
    `PlantedTarget`), with maps at `cfg.res`."""
    target = _planted(target)
    with torch.no_grad():
        feats = [f.detach().cpu() for f in net.features(cfg.res)]
    alive = torch.cat([a.cpu() for a in live_unit_mask(net.effective_weights())], dim=1).numpy()  # (K, U)
    return score_maps(feats, alive, target.primitive_maps(cfg.res), cfg.margin, target.spec)


def score_maps(feats, alive: np.ndarray, prims: dict, margin: float, name: str = "target") -> Structure:
    """The score from maps: `feats` per layer (K, res, res, W), `alive` (K, U) bool (units numbered
    layer by layer), `prims` name → (res, res) with the output node under `OUTPUT`."""
    if OUTPUT not in prims:
        raise RhoError(f"{name}: the planted maps have no output node {OUTPUT!r}")
    names = list(prims)
    hidden = [i for i, n in enumerate(names) if n != OUTPUT]
    if not hidden:
        raise RhoError(f"{name}: the target has no hidden primitive (depth 1); nothing to recover")
    C = primitive_correlations(feats, prims)  # (K, n_prim, U)
    C = np.where(alive[:, None, :], C, 0.0)  # a dead unit carries nothing
    assigned = assigned_correlations(C[:, hidden, :])  # (K, n_hidden)
    # monosemanticity: each unit's best node against the best node distinguishable from it
    same = indistinguishable(prims, margin)  # (n_prim, n_prim)
    best = C.argmax(axis=1)  # (K, U)
    top = np.take_along_axis(C, best[:, None, :], axis=1)[:, 0, :]  # (K, U)
    others = np.where(same[best].transpose(0, 2, 1), 0.0, C)  # (K, n_prim, U): nodes apart from the best
    gap = top - others.max(axis=1)  # (K, U)
    live = alive.sum(axis=1)
    mono = np.where(alive, gap >= margin - 1e-12, False).sum(axis=1) / np.maximum(live, 1)
    per_unit = np.where(alive, top, 0.0).sum(axis=1) / np.maximum(live, 1)
    return Structure(name, [names[i] for i in hidden], assigned.mean(axis=1), mono, assigned, live, per_unit)


def control_targets(target, n: int, seed: int = 0) -> list[PlantedTarget]:
    """`n` other planted targets with the same options and the same layer sizes as `target`, their
    seeds drawn from a stream seeded by (target's seed, `seed`)."""
    target = _planted(target)
    sizes = target.layer_sizes()
    rng = np.random.default_rng([int(target.seed), int(seed), 58])
    out: list[PlantedTarget] = []
    for _ in range(100 * n):
        s = int(rng.integers(2**62))
        t = dataclasses.replace(target, seed=s)
        if s != target.seed and t.layer_sizes() == sizes and s not in {c.seed for c in out}:
            out.append(t)
            if len(out) == n:
                return out
    raise RhoError(f"{target.spec}: no {n} other planted targets with layer sizes {sizes} found; lower controls")


def at_initialisation(net: CoordMLP, seed: int = 0) -> CoordMLP:
    """Networks of `net`'s architecture at initialisation: LeCun-normal weights (seeded) under
    `net`'s masks, so the same units are live."""
    return CoordMLP(net.arch, head=net.head, population=net.population, n_inputs=net.n_inputs, seed=seed,
                    masks=[m.detach().cpu() for m in net.masks])  # fmt: skip


@dataclass
class Chance:
    """Chance levels of the score, per network (K,): the same networks against control targets
    (mean over them) and networks at initialisation against the target."""

    recovery_other: np.ndarray
    monosemanticity_other: np.ndarray
    recovery_init: np.ndarray
    monosemanticity_init: np.ndarray
    per_unit_other: np.ndarray
    per_unit_init: np.ndarray


def chance(net: CoordMLP, target, cfg: RecoveryConfig = RecoveryConfig()) -> Chance:
    """The chance levels of `structure(net, target, cfg)` (module docstring)."""
    target = _planted(target)
    others = [structure(net, t, cfg) for t in control_targets(target, cfg.controls, cfg.seed)]
    init = structure(at_initialisation(net, cfg.seed), target, cfg)
    return Chance(
        np.mean([s.recovery for s in others], axis=0),
        np.mean([s.monosemanticity for s in others], axis=0),
        init.recovery,
        init.monosemanticity,
        np.mean([s.per_unit for s in others], axis=0),
        init.per_unit,
    )


def above_chance(s: Structure, c: Chance) -> dict[str, np.ndarray]:
    """Recovery and per-unit recovery minus their chance levels against other planted targets, per
    network (K,): the same networks, so the same live units, read against primitives they were not
    trained on (`chance`)."""
    return {"recovery": s.recovery - c.recovery_other, "per_unit": s.per_unit - c.per_unit_other}


def _planted(target) -> PlantedTarget:
    t = get_target(target) if isinstance(target, str) else target
    if not isinstance(t, PlantedTarget):
        raise RhoError(
            f"{getattr(t, 'spec', t)}: the structural score needs a planted target (planted:SEED[:…]), whose "
            "primitives are known"
        )
    return t
