"""Derive the student notebooks `notebooks/<chapter>.ipynb` from the chapters' exercise sections.

Run `python tools/derive_notebooks.py` after changing an exercise (`--check` only verifies that
`notebooks/` is up to date; tests/test_coursework.py does the same).

Every chapter ends with a section `## Exercises` (book/*.md, MyST notebooks read with jupytext).
Only that section goes into the notebook, so edits elsewhere in a chapter never make it stale:

- the text between the heading and the first code cell is the book's introduction to the section
  (it points to the notebook) and is left out; the notebook opens with its own title cell;
- the section's first code cell is the *setup* (imports, `from volratio.coursework import <chapter> as cw`):
  every exercise needs only it and the cells of its own exercise, never the chapter's state;
- `exercise-start`/`exercise-end` and `{exercise}` blocks become "Exercise N" headings with their
  text; code cells between them (given data) are kept;
- `solution-start`/`solution-end` and `{solution}` blocks are removed. Each *code* cell of a gated
  solution becomes a task cell: the solution cell's `student` metadata (the placeholder the student
  fills in, e.g. `ratio = ...`) or `# YOUR CODE HERE`. With `solutions=True` (`derive(...,
  solutions=True)`, what the tests execute) the task cell holds the reference solution instead;
- check cells (`cw.check_…(…)`) are kept; they raise `CheckFailed` with a hint on a wrong answer;
- MyST roles (`{prf:ref}`, `{cite:p}`, …) become plain text; `(label)=` targets are dropped.

Notebooks are written without outputs and with fixed cell ids, so rerunning reproduces them byte
for byte.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import jupytext
import nbformat
import yaml

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "notebooks"
HEADING = "## Exercises"
PARTS = ("Part I", "Part II", "Part III")  # the _toc.yml parts whose chapters carry coursework
KERNEL = {"display_name": "Python 3", "language": "python", "name": "python3"}
CHECK = re.compile(r"^\s*cw\.check_\w+\(", re.MULTILINE)

HOW_TO = """\
**How to use this notebook.** Run the cells from the top (the first one imports what the exercises
need). In each cell marked `# YOUR CODE HERE`, replace the placeholders (`...`) with your code, then
run the check cell below it: it recomputes the answer with the `volratio` library and shows
`[PASS] …`, or `[FAIL] …` with what is wrong and a hint. Try again as often as you like."""


def chapters() -> list[Path]:
    """The chapters of Parts I–III, in the order of `_toc.yml`."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    out = []
    for part in toc["parts"]:
        if part["caption"].startswith(tuple(p + " " for p in PARTS)):
            out += [ROOT / f"{c['file']}.md" for c in part["chapters"]]
    return out


def _fence(line: str) -> tuple[str, str] | None:
    """`(directive, argument)` when `line` opens a directive (`:::{name} arg` or ```` ```{name} ````)."""
    m = re.match(r"^(:{3,}|`{3,})\{([\w:-]+)\}\s*(.*)$", line.strip())
    return (m.group(2), m.group(3)) if m else None


def _plain(text: str) -> str:
    """MyST markdown → Jupyter markdown: roles become their text, label targets go."""
    text = re.sub(r"\{[\w:-]+\}`([^`<]*?)\s*<[^`>]*>`", r"\1", text)  # {ref}`text <label>` → text
    text = re.sub(r"\{(?:cite)(?::\w+)?\}`([^`]*)`", r"(\1)", text)
    text = re.sub(r"\{[\w:-]+\}`([^`]*)`", r"\1", text)
    text = re.sub(r"^\(\S+\)=\s*$\n?", "", text, flags=re.MULTILINE)
    return text


def _exercise_section(path: Path):
    """The chapter's title and the cells of its `## Exercises` section (which must be the last one)."""
    nb = jupytext.read(path, fmt="md:myst")
    title, start = None, None
    for i, c in enumerate(nb.cells):
        if c.cell_type != "markdown":
            continue
        for line in c.source.splitlines():
            if title is None and line.startswith("# "):
                title = line[2:].strip()
            if line.strip() == HEADING:
                start = i
            elif start is not None and line.startswith("## ") and i > start:
                raise ValueError(
                    f"{path.name}: '{line.strip()}' follows '{HEADING}'; the exercises must be the last section"
                )
    if start is None:
        raise ValueError(f"{path.name}: no '{HEADING}' section")
    # the heading and the section's introduction (written for the book's reader) give way to the
    # notebook's own title cell; everything from the setup cell on is kept
    cells = nb.cells[start + 1 :]
    for c in cells[1:]:
        if c.cell_type == "markdown" and any(ln.startswith("## ") for ln in c.source.splitlines()):
            raise ValueError(f"{path.name}: a second '## ' heading inside the exercise section")
    return title or path.stem, cells


class _Walker:
    """Rewrites the section's markdown and code cells; tracks whether we are inside a solution."""

    def __init__(self, chapter: str, solutions: bool):
        self.chapter, self.solutions = chapter, solutions
        self.in_solution: str | None = None  # label of the gated solution we are in
        self.n = 0  # exercises seen
        self.tasks: list[str] = []  # labels of the task cells

    def markdown(self, text: str) -> str:
        out, lines, i = [], text.splitlines(), 0
        while i < len(lines):
            f = _fence(lines[i])
            if f is None:
                if self.in_solution is None:
                    out.append(lines[i])
                i += 1
                continue
            name, arg = f
            s0, head = i, lines[i].strip()
            close = head[: len(head) - len(head.lstrip(head[0]))]  # ":::" or "```" (its length matters)
            # the block: option lines (":key: value"), then the body up to the closing fence at depth 0
            j, opts = i + 1, {}
            while j < len(lines) and re.match(r"^:[\w-]+:", lines[j].strip()):
                k, _, v = lines[j].strip()[1:].partition(":")
                opts[k] = v.strip()
                j += 1
            body, depth = [], 0
            while j < len(lines):
                s = lines[j].strip()
                if _fence(lines[j]) and s.startswith(close) and not s.startswith(close + close[0]):
                    depth += 1
                elif s == close:
                    if depth == 0:
                        break
                    depth -= 1
                body.append(lines[j])
                j += 1
            i = j + 1
            if name == "solution-start":
                self.in_solution = arg or "solution"
            elif name == "solution-end":
                self.in_solution = None
            elif self.in_solution is not None or name == "solution":
                continue
            elif name in ("exercise", "exercise-start"):
                self.n += 1
                label = f" ({opts['label']})" if "label" in opts else ""
                out += [f"### Exercise {self.n}{label}" + (f": {arg}" if arg else ""), "", *body]
            elif name == "exercise-end":
                continue
            else:  # another directive (a note, a figure): keep it as it is
                out += lines[s0:i]
        return re.sub(r"\n{3,}", "\n\n", _plain("\n".join(out))).strip("\n")

    def code(self, cell) -> nbformat.NotebookNode | None:
        src = cell.source.strip("\n")
        if self.in_solution is not None:
            self.tasks.append(self.in_solution)
            task = src if self.solutions else (cell.metadata.get("student") or "# YOUR CODE HERE").strip("\n")
            c = nbformat.v4.new_code_cell(task)
            c.metadata["volratio"] = {"task": self.in_solution}
            return c
        c = nbformat.v4.new_code_cell(src)
        if CHECK.search(src):
            c.metadata["volratio"] = {"check": True}
        return c


def derive(path: Path, solutions: bool = False) -> nbformat.NotebookNode:
    """The student notebook of chapter `path` (`solutions=True`: task cells hold the reference solutions)."""
    path = Path(path)
    title, cells = _exercise_section(path)
    w = _Walker(path.stem, solutions)
    rel = path.relative_to(ROOT).as_posix()
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = dict(KERNEL)
    nb.metadata["language_info"] = {"name": "python"}
    nb.metadata["volratio"] = {"derived_from": rel, "by": "tools/derive_notebooks.py"}
    out = [
        nbformat.v4.new_markdown_cell(
            f'# Exercises: {title}\n\nThe exercises of the chapter "{title}" (`{rel}`), with the solutions left out. '
            "This notebook is derived from the chapter by `tools/derive_notebooks.py`: edit the chapter, not this file.\n\n"
            + HOW_TO
        )
    ]
    for c in cells:
        if c.cell_type == "markdown":
            text = w.markdown(c.source)
            if text:
                out.append(nbformat.v4.new_markdown_cell(text))
        elif c.cell_type == "code":
            new = w.code(c)
            if new is not None:
                out.append(new)
    if w.in_solution is not None:
        raise ValueError(f"{path.name}: solution {w.in_solution!r} has no solution-end")
    for i, c in enumerate(out):
        c.id = f"{path.stem[:40]}-{i:02d}"
    nb.cells = out
    nbformat.validate(nb)
    return nb


def render(path: Path) -> str:
    return nbformat.writes(derive(path)) + "\n"


def target(path: Path) -> Path:
    return OUT / f"{Path(path).stem}.ipynb"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="only verify that notebooks/ is up to date")
    args = ap.parse_args(argv)
    OUT.mkdir(exist_ok=True)
    want = {target(p): render(p) for p in chapters()}
    stale = [p for p, text in want.items() if not p.is_file() or p.read_text() != text]
    extra = [p for p in OUT.glob("*.ipynb") if p not in want]
    if args.check:
        for p in stale + extra:
            print("out of date:", p.relative_to(ROOT))
        if stale or extra:
            print("run: python tools/derive_notebooks.py")
        return 1 if stale or extra else 0
    for p in stale:
        p.write_text(want[p])
        print("wrote", p.relative_to(ROOT))
    for p in extra:
        p.unlink()
        print("removed", p.relative_to(ROOT), "(no chapter of Parts I–III derives it)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
