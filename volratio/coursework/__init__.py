"""Coursework checks: one module per chapter, each holding the checkers its exercises call.

Exercises live in the chapters (the `## Exercises` section at the end of each `book/*.md`): a
gated `exercise-start`/`exercise-end` block, its reference solution as runnable code in a
`solution-start`/`solution-end` block (executed by the book build, hidden in the student
edition), and a check cell that passes the student's answer to a checker here. A passing checker
returns a `Check` (`[PASS] …`); a wrong or missing answer raises `CheckFailed`, whose one-line
message says what is wrong and where to look (see `volratio.coursework.check`). The student
notebooks in `notebooks/` are derived from those sections by `tools/derive_notebooks.py`.

| module | chapter | checkers |
| --- | --- | --- |
| `picbreeder` | Picbreeder networks and their SGD twins | `check_layerized_size`, `check_twin` |
| `emc2` | EMC2-Bench | `check_perturbed_image`, `check_perturbation_score` |
| `connectivity` | Connectivity | `check_similarity`, `check_redundant_pairs`, `check_unit_removed`, `check_sparsity` |
| `depth` | Depth | `check_png_ratio`, `check_depth_fit`, `check_sweet_spot` |
| `optimization` | Optimization | `check_top_eigenvalue` |
| `unknown_targets` | Unknown targets | `check_scene_image` |
| `compositional_sparsity` | Compositional sparsity | `check_layers`, `check_dag_shape` |
| `volume_ratio` | The volume-ratio argument | `check_truth_table`, `check_target_shape`, `check_p_solution`, `check_interval` |
| `welch` | Feature interference and the Welch bound | `check_welch_bound`, `check_coherence`, `check_frame`, `check_represented`, `check_first_higher_order` |
| `practice_cluster` | Rerunning at scale on a cluster | `check_sweep_table` |
| `own_target` | Bringing your own target | `check_flattened` |

A check cell reads `cw.check_png_ratio(ratio, "image:camera", 64)` after the section's setup cell
imported the chapter's module as `cw` (`from volratio.coursework import depth as cw`).
"""

from . import (
    compositional_sparsity,
    connectivity,
    depth,
    emc2,
    optimization,
    own_target,
    picbreeder,
    practice_cluster,
    unknown_targets,
    volume_ratio,
    welch,
)
from .check import Check, CheckFailed, CourseworkError

MODULES = {
    m.__name__.rsplit(".", 1)[1]: m
    for m in (
        picbreeder,
        emc2,
        connectivity,
        depth,
        optimization,
        unknown_targets,
        compositional_sparsity,
        volume_ratio,
        welch,
        practice_cluster,
        own_target,
    )
}

__all__ = [
    "MODULES",
    "Check",
    "CheckFailed",
    "CourseworkError",
    "compositional_sparsity",
    "connectivity",
    "depth",
    "emc2",
    "optimization",
    "own_target",
    "picbreeder",
    "practice_cluster",
    "unknown_targets",
    "volume_ratio",
    "welch",
]
