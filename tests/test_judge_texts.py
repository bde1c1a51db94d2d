"""Each judge's name, anchor and texts are defined once, on its class (`Judge.texts`,
`Judge.anchor_kind`); the registry and the claims page read them from there."""

import ast
import re
from pathlib import Path

import numpy as np

from volratio import judges
from volratio.judges import registry
from volratio.report import claims

ROOT = Path(__file__).resolve().parent.parent
LIBRARY = sorted((ROOT / "volratio").rglob("*.py"))
SOURCES = LIBRARY + sorted((ROOT / "book").glob("*.md"))
ALL_TEXTS = {s for c in registry.CLASSES for t in c.texts.values() for s in (t.long, t.short, t.brief) if s}


def test_every_judge_text_is_written_once():
    """A display text of a judge appears as a string in one line of the library and the book: the
    judge class that carries it."""
    assert len(ALL_TEXTS) >= 2 * len(judges.JUDGES) - 2  # long and short texts (CLIP and VLM: long only)
    for text in ALL_TEXTS:
        where = [
            f"{p.relative_to(ROOT)}:{i + 1}"
            for p in SOURCES
            for i, line in enumerate(p.read_text().splitlines())
            if f'"{text}"' in line
        ]
        assert len(where) == 1, (text, where)
        assert where[0].startswith("volratio/judges/"), (text, where)


def test_no_second_table_of_judge_names():
    """No module keeps its own table of judge names or texts: the old tables are gone, every name is
    the key of one class's `texts`, and no literal in the library lists four or more judge names."""
    banned = re.compile(r"\b(JUDGE_TEXT|JUDGE_SHORT|ROBUST_NAMES)\b")
    hits = [str(p.relative_to(ROOT)) for p in SOURCES if banned.search(p.read_text())]
    assert hits == []
    names = [n for c in registry.CLASSES for n in c.texts]
    assert tuple(names) == judges.JUDGES and len(set(names)) == len(names)
    key = re.compile(r'"([a-z0-9-]+)": JudgeText\(')
    defined = [m for p in LIBRARY for m in key.findall(p.read_text())]
    assert sorted(defined) == sorted(judges.JUDGES)
    tables = []
    for p in LIBRARY:
        for node in ast.walk(ast.parse(p.read_text())):
            elts = node.keys if isinstance(node, ast.Dict) else getattr(node, "elts", None)
            is_texts = isinstance(node, ast.Dict) and all(  # a class's `texts`: the one definition
                isinstance(v, ast.Call) and getattr(v.func, "id", None) == "JudgeText" for v in node.values
            )
            if isinstance(node, (ast.Tuple, ast.List, ast.Set, ast.Dict)) and elts and not is_texts:
                found = {e.value for e in elts if isinstance(e, ast.Constant) and e.value in judges.JUDGES}
                if len(found) >= 4:
                    tables.append((str(p.relative_to(ROOT)), node.lineno, sorted(found)))
    assert tables == []


def test_registry_reads_names_and_anchors_from_the_classes():
    assert judges.JUDGES[0] == judges.DEFAULT_JUDGE == "anchored-v2"
    assert set(judges.SELF_ANCHORED) == {"calibrated", "calibrated-pooled", "ssim", "stability"}
    for name in judges.JUDGES:
        cls = judges.judge_class(name)
        assert (name in judges.SELF_ANCHORED) == (cls.anchor_kind == "own image"), name
        assert judges.judge_text(name) is cls.texts[name]
    assert judges.judge_text("nope") is None and judges.judge_text(None) is None
    image = np.zeros((16, 16, 3))
    assert judges.anchor_of(judges.make_judge("anchored-ssim", image, "image:camera")) == "target"
    assert judges.anchor_of(judges.make_judge("stability", image)) == "own image"

    class Stub(judges.Judge):
        name = "stub"

    assert judges.anchor_of(Stub()) == "label"  # a judge asked about the label's name, by default


def test_claims_page_names_judges_from_their_classes():
    anchored = judges.AnchoredJudge.texts
    assert claims.judge_long("anchored") == anchored["anchored"].long
    assert claims.judge_short("anchored-pooled") == anchored["anchored-pooled"].short
    assert claims.judge_brief("anchored-ssim") == anchored["anchored-ssim"].brief == "SSIM judge"
    # without a short or brief text, the judge's name; an unknown judge is named as given
    assert (
        claims.judge_long("clip") == "CLIP judge" and claims.judge_short("clip") == claims.judge_brief("clip") == "clip"
    )
    assert claims.judge_short("mine") == claims.judge_long("mine") == "mine"
    assert claims.judge_short(None) == claims.judge_long(None) == "judge not recorded"
    v = claims.record("sp-vs-pruners", "inconclusive", "m", judge="calibrated")
    assert judges.judge_text("calibrated").long in v.html()
    line = claims.judge_comparison({"anchored": v, "ssim": v})
    assert line.startswith("label-anchored judge: inconclusive; other-targets SSIM judge: inconclusive")
