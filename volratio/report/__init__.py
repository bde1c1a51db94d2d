"""The book's reporting layer: the claims and their verdicts, and the figures.

- `catalogue`: the paper's claims that the book tests;
- `deciders`: the verdict rules, one function per claim from what its experiment measured;
- `render`: a verdict as the claims page shows it (badge, sentence, forest plot) and the glue
  that puts it there;
- `claims`: the one import the chapters use, gathering the three;
- `forest`: a claim's deciding effect drawn as a small inline SVG under its verdict;
- `plots`: the figures the chapters share (image grids, depth curves, ρ grids, weight sweeps);
- `explorer`: the interactive weight explorer (export of a network and its perturbations).

It sits above every experiment and below the command line and the coursework: nothing in the
library's lower layers imports it.
"""
