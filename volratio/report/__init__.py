"""The book's reporting layer: the claims and their verdicts, and the figures.

- `claims`: the paper's claims, the functions that decide a verdict from what an experiment
  measured, and the glue that puts each verdict on the claims page;
- `forest`: a claim's deciding effect drawn as a small inline SVG under its verdict;
- `plots`: the figures the chapters share (image grids, depth curves, ρ grids, weight sweeps);
- `explorer`: the interactive weight explorer (export of a network and its perturbations).

It sits above every experiment and below the command line and the coursework: nothing in the
library's lower layers imports it.
"""
