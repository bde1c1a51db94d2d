"""The verdict sets and the judges' rules fitted and checked on them (import them as modules).

A judge (`volratio.judges`) reads a stored rule; this package holds what that rule was fitted on and
how, above the experiments because the sets are rebuilt by training, pruning and rendering networks:

- `reference_verdicts` — the first verdict set (`data/judge_reference/`): single-weight
  perturbations judged by inspection, regenerable exactly;
- `trained_set` — the recipe of that set's trained networks (SP and the baselines at SP's global
  sparsity);
- `fit_calibrated` — the calibrated judges' threshold rule (`volratio.judges.calibrated_rule`)
  fitted and checked on it, and EMC2 under the verdicts themselves;
- `anchored_set` — the target-anchored verdict set (`data/judge_reference/anchored/`);
- `fit_anchored` — the anchored judge's logistic rule (`volratio.judges.anchored_rule`) fitted,
  compared and checked on it.
- `planted_kappa` — the image judges checked against the family judge (`planted-family`) on
  single-weight perturbations of the stored planted networks (`data/planted_kappa/`).

Chapter: "EMC2-Bench" (book/emc2.md), section "The judge, validated".
"""
