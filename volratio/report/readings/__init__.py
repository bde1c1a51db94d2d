"""Each claim's reference verdict, read from the store under one reading.

A *reading* of a stored chunk (`volratio.emc2.reading.Reading`) is the judge its networks are
scored under, how δ is read (`delta_scale`: "absolute", the paper's w ← w + δ, or "layer_std", δ ×
the std of the weight's layer) and which weights are perturbed: every non-zero weight through the
fused kernel (`EVERY`) or the runs' own seeded sample (`SAMPLE`). A chapter decides its claim under the deciding reading (the default judge, absolute δ) and
shows the same verdict under the others beside it: every other label-anchored judge, and δ × layer
std. The functions here are what those chapters call, so that a verdict a page prints is computed
by the library, once, and tested:

- `emc2`: Picbreeder above dense SGD, on sixteen targets against their dense twins;
- `connectivity`: SP against the pruners in the sparse regime;
- `depth`: the depth optimum at one sparsity per target, the PNG-ratio predictor, and the
  judge-free recovery of the planted primitives;
- `optimizers`: Muon against Adam at matched sparsity;
- `scenes`: the scene's sweet-spot effect against its parts'.

Each module reads its chunks once per process (the store does not change under a book build) and
returns the `Verdict` of `volratio.report.deciders`, with its evidence, as the chapter glues it.
"""

from ...emc2.reading import Reading

EVERY = Reading(weights="every", engine="fused")  # every non-zero weight of every stored network (fused kernel)
SAMPLE = Reading()  # the runs' own EMC2 settings: a seeded sample of weights per network
