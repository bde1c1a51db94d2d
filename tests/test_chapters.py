"""The book's pages as sources: chapters that teach first, and call the library for every analysis.

- A Part I chapter's source is at most `MAX_LINES` lines; the audit of its stored runs is an
  appendix page, `book/evidence_<chapter>.md`, which the chapter links.
- No page defines, in a code cell, a function that computes a statistic, a verdict or a table: the
  library holds those (`volratio.report.readings` for the stored verdicts), so that what a page
  prints is computed once and tested. A page may define a function that only draws (`PLOTTING`),
  and an exercise's solution may define what the student is asked to write.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
BOOK = ROOT / "book"
MAX_LINES = 700

# page -> functions it may define, each only drawing a figure from values it is given
PLOTTING = {
    "connectivity": {"show"},  # one target's feature maps at the quick scale
    "picbreeder": {"draw_insides"},  # a network's hidden feature maps
    "volume_ratio": {"grid_figure"},  # ρ(W, L) as a heatmap and its two cuts
    "evidence_connectivity": {"draw_judge"},  # one judge's verdict forest
}

CELL = re.compile(r"^```\{code-cell\}[^\n]*\n(.*?)^```", re.S | re.M)
SOLUTION = re.compile(r"^:::\{solution-start\}.*?^:::\{solution-end\}", re.S | re.M)
DEF = re.compile(r"^\s*(?:async\s+)?def\s+(\w+)", re.M)


def part(caption: str) -> list[str]:
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    (chapters,) = [p["chapters"] for p in toc["parts"] if p["caption"].split(" — ")[0] == caption]
    return [Path(c["file"]).name for c in chapters]


def defined(source: str) -> list[str]:
    """The functions a page's code cells define, exercises' solutions left out."""
    outside = SOLUTION.sub("", source)
    return [name for cell in CELL.findall(outside) for name in DEF.findall(cell)]


def test_defined_finds_a_def_in_a_code_cell_and_skips_solutions_and_prose():
    page = (
        "text def prose(x):\n```{code-cell} ipython3\nx = 1\ndef stat(rows):\n    return 1\n```\n"
        ":::{solution-start} ex\n:::\n```{code-cell} ipython3\ndef answer():\n    pass\n```\n:::{solution-end}\n:::\n"
        "```python\ndef shown_only():\n```\n"
    )
    assert defined(page) == ["stat"]


@pytest.mark.parametrize("page", sorted(p.stem for p in BOOK.glob("*.md")))
def test_no_page_defines_an_analysis(page):
    extra = sorted(set(defined((BOOK / f"{page}.md").read_text())) - PLOTTING.get(page, set()))
    assert not extra, (
        f"book/{page}.md defines {extra} in its code cells: move the analysis into the library "
        "(volratio.report.readings for a stored verdict) and call it, or, for a function that only draws, "
        "name it in PLOTTING with what it draws"
    )


def test_the_plotting_allow_list_names_only_what_pages_define():
    for page, names in PLOTTING.items():
        assert names <= set(defined((BOOK / f"{page}.md").read_text())), page


@pytest.mark.parametrize("chapter", part("Part I"))
def test_a_part_one_chapter_teaches_in_at_most_700_lines_and_links_its_evidence(chapter):
    source = (BOOK / f"{chapter}.md").read_text()
    n = source.count("\n")
    assert n <= MAX_LINES, f"book/{chapter}.md has {n} lines (at most {MAX_LINES}): move its audit to an evidence page"
    assert re.search(r"\{doc\}`(?:[^`<]*<)?evidence_\w+>?`", source), f"book/{chapter}.md links no evidence page"
