"""The Picbreeder genome format: `parse_genome` reads a `genome.xml` (NEAT nodes and links) into a
validated `volratio.data.graph.Graph`, refusing what it cannot read with an error that names the
node or link. XML is parsed with `defusedxml` (no entities, no DTDs). Used by `volratio.data.picbreeder`
(the three genomes) and by `volratio.data.fer_data` (a downloaded genome is parsed before it is installed).
"""

from __future__ import annotations

import re
from pathlib import Path

from defusedxml import ElementTree as ET

from ..errors import GenomeError
from .graph import Graph, Node

# genome activation names -> volratio.nets.ACTIVATIONS keys
_GENOME_ACTIVATIONS = {
    "identity": "identity",
    "sin": "sin",
    "cos": "cos",
    "tanh": "tanh",
    "sigmoid": "sigmoid",
    "gaussian": "gaussian",
}


def parse_genome(source: "str | Path | bytes", name: str | None = None) -> Graph:
    """Parse a Picbreeder `genome.xml` (a path, or the XML as bytes/str) into a validated `Graph`.

    Raises `GenomeError` naming the problem: not XML, a node without marking or activation, an
    unknown activation, a dangling link, a cycle, a missing output.
    """
    if isinstance(source, Path) or (isinstance(source, str) and not source.lstrip().startswith("<")):
        path = Path(source)
        name = name or (path.parent.name if path.name == "genome.xml" else path.stem)
        try:
            data = path.read_bytes()
        except OSError as e:
            raise GenomeError(f"{path}: cannot read genome ({e.strerror})") from e
    else:
        data = source.encode() if isinstance(source, str) else bytes(source)
    name = name or "genome"
    try:
        root = ET.fromstring(data)
    except Exception as e:  # ParseError, or defusedxml's refusal of entities/DTDs
        raise GenomeError(f"{name}: not a readable genome XML ({type(e).__name__}: {e})") from e

    def key(el, what: str, ctx: str) -> str:
        if el is None or el.get("branch") is None or el.get("id") is None:
            raise GenomeError(f"{name}: {ctx} has no <{what} branch=… id=…>")
        return f"{el.get('branch')}_{el.get('id')}"

    nodes: dict[str, Node] = {}
    for i, el in enumerate(root.iter("node")):
        k = key(el.find("marking"), "marking", f"node {i}")
        act_el = el.find("activation")
        if act_el is None or not (act_el.text or "").strip():
            raise GenomeError(f"{name}: node {k} has no <activation>")
        m = re.fullmatch(r"\s*([a-zA-Z_]+)\s*(\(\s*x\s*\))?\s*", act_el.text)
        act = _GENOME_ACTIVATIONS.get(m.group(1).lower()) if m else None
        if act is None:
            raise GenomeError(
                f"{name}: node {k} has unknown activation {act_el.text.strip()!r}; "
                f"known: {', '.join(f'{a}(x)' for a in _GENOME_ACTIVATIONS)}"
            )
        kind = el.get("type", "hidden")
        if kind not in ("in", "hidden", "out"):
            raise GenomeError(f"{name}: node {k} has type {kind!r}; expected in, hidden or out")
        if k in nodes:
            raise GenomeError(f"{name}: node {k} is defined twice")
        nodes[k] = Node(k, kind, act, el.get("label"))
    if not nodes:
        raise GenomeError(f"{name}: the genome has no <node> elements")
    links = []
    for i, el in enumerate(root.iter("link")):
        s = key(el.find("source"), "source", f"link {i}")
        t = key(el.find("target"), "target", f"link {i}")
        w_el = el.find("weight")
        try:
            w = float(w_el.text)
        except (AttributeError, TypeError, ValueError):
            raise GenomeError(f"{name}: link {i} ({s} → {t}) has no numeric <weight>") from None
        links.append((s, t, w))
    return Graph(nodes, links, name=name)
