"""MeSH XML loader: descriptors (`descYYYY.xml`) and supplementary records (`suppYYYY.xml`).

PATH is one XML file (`.xml` or `.xml.gz`) or a directory holding `descYYYY.xml[.gz]` and/or
`suppYYYY.xml[.gz]` (the latest year of each is used; qualifier files are ignored). Files are
streamed with lxml `iterparse`, finished records are cleared, no DTD is fetched.

Mapping
- Descriptor: uid `MESH:<DescriptorUI>` (the record's *direct* child; the nested
  `DescriptorUI`s of SeeRelated/PharmacologicalAction/EntryCombination are ignored), name =
  `DescriptorName/String`, definition = the preferred concept's `ScopeNote` (stripped),
  synonyms = every `Term/String` of every concept, de-duplicated, permuted terms skipped
  (option `include_permuted=True` keeps them). Scopes: terms of the preferred concept are
  EXACT; terms of another concept get NARROW/BROAD/RELATED from its `ConceptRelation` with the
  preferred concept (NRW/BRD/REL), RELATED when none is given.
- Hierarchy scheme (`mesh_tree.py`, shared with the name tables): a tree number's parent is
  the tree number without its last `.segment`; top-level tree numbers hang under a synthetic
  category root `MESH:<letter>` (`MESH:C` "Diseases", `MESH:D` "Chemicals and Drugs"). MeSH
  UIs always carry digits, so `MESH:<letter>` cannot collide with a real record (and `MESH:C`
  matches MEDIC's root). `branches` (`--branches D`, repeatable) keeps the descriptors under
  those tree letters (or tree numbers) and the supplementary records mapped into them.
- Supplementary record (SCR): uid `MESH:<SupplementalRecordUI>`, name, terms as synonyms,
  level_label "supplementary", IS_A to each `HeadingMappedTo` descriptor (leading `*`
  stripped). A mapped descriptor that is not loaded is a dangling edge (strict: error).
- version = the year in the file name (`desc2025.xml` -> "2025"), else "".

A directory holding the MeSH name tables instead (`mesh_id_label_mappings.tsv`,
`mesh_supp_id_label_mappings.tsv`) is read by `mesh_tables.py` into the same concepts.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from lxml import etree

from kgnorm.errors import InputError
from kgnorm.graph.ontology_graph import Concept, OntologyGraph

from .common import describe_format, finish, guess_format, open_stream, read_head, require_path
from .mesh_tables import find_tables, read_tables
from .mesh_tree import SUPPLEMENTARY, select_branches, tree_edges

FORMAT = "mesh"
DEFAULT_NAME = "mesh"
_RELATION_SCOPE = {"NRW": "NARROW", "BRD": "BROAD", "REL": "RELATED"}
_FILE = re.compile(r"^(desc|supp)(\d{4})\.xml(\.gz)?$", re.IGNORECASE)
_YEAR = re.compile(r"(\d{4})")


def load(path: str | Path, name: str | None = None, *, allow_dangling: bool = False,
         branches: list[str] | None = None, **options: Any) -> OntologyGraph:
    """Load MeSH descriptor and/or supplementary XML, or the MeSH name tables, into a finalized graph."""
    path = require_path(path, "MeSH path")
    graph = OntologyGraph(name=name or DEFAULT_NAME, format=FORMAT, source_path=str(path))
    trees: dict[str, list[str]] = {}
    tables = find_tables(path)
    if tables:
        read_tables(tables, graph, trees)
    else:
        include_permuted = bool(options.get("include_permuted", False))
        for f in _find_files(path):
            m = _YEAR.search(f.name)
            if m and not graph.version:
                graph.version = m.group(1)
            _parse_file(f, graph, trees, include_permuted)
    if branches:
        select_branches(graph, trees, branches)
    tree_edges(graph, trees)
    return finish(graph, allow_dangling)


def _find_files(path: Path) -> list[Path]:
    """Descriptor files first, so that SCR edges point at known descriptors."""
    if path.is_file():
        head = read_head(path)
        kind = guess_format(head)
        if kind != "mesh-xml":
            what = (f"looks like {describe_format(kind)}" if kind and kind != "xml"
                    else "is not a MeSH XML record set")
            raise InputError(f"this {what}; the mesh loader expects descYYYY.xml or "
                             f"suppYYYY.xml (or a folder holding them)", path=path)
        return [path]
    found: dict[str, list[tuple[str, Path]]] = {"desc": [], "supp": []}
    for f in sorted(path.iterdir()):
        m = _FILE.match(f.name)
        if m and f.is_file():
            found[m.group(1).lower()].append((m.group(2), f))
    chosen = [max(found[k])[1] for k in ("desc", "supp") if found[k]]
    if not chosen:
        raise InputError("no descYYYY.xml or suppYYYY.xml (optionally .gz), nor the MeSH name tables "
                         "(mesh_id_label_mappings.tsv, mesh_supp_id_label_mappings.tsv) in this directory",
                         path=path)
    return chosen


def _parse_file(path: Path, graph: OntologyGraph, trees: dict[str, list[str]],
                include_permuted: bool) -> None:
    records = 0
    with open_stream(path, desc=f"mesh {path.name}") as stream:
        context = etree.iterparse(stream, events=("end",),
                                  tag=("DescriptorRecord", "SupplementalRecord"),
                                  no_network=True, load_dtd=False, resolve_entities=False,
                                  huge_tree=True)
        try:
            for _, elem in context:
                line = elem.sourceline
                if elem.tag == "DescriptorRecord":
                    _descriptor(elem, graph, trees, include_permuted, path, line)
                else:
                    _supplemental(elem, graph, include_permuted, path, line)
                records += 1
                elem.clear()
                parent = elem.getparent()
                if parent is not None:
                    while elem.getprevious() is not None:
                        del parent[0]
        except etree.XMLSyntaxError as exc:
            line = exc.lineno if exc.lineno else None
            raise InputError(f"malformed or truncated XML: {exc.msg}", path=path,
                             line=line) from exc
    if records == 0:
        raise InputError("no DescriptorRecord or SupplementalRecord elements found", path=path)


def _text(elem: Any, path: str) -> str:
    """Stripped text of the first element at a `/`-separated path of *direct* children."""
    node = elem
    for tag in path.split("/"):
        node = next(node.iterchildren(tag), None)
        if node is None:
            return ""
    return (node.text or "").strip()


def _all(elem: Any, path: str) -> list[Any]:
    """Every element at a `/`-separated path of direct children (faster than findall)."""
    nodes = [elem]
    for tag in path.split("/"):
        nodes = [child for node in nodes for child in node.iterchildren(tag)]
    return nodes


def _names(elem: Any, con: Concept, include_permuted: bool) -> None:
    """Synonyms (and the definition) from ConceptList/Concept/TermList/Term/String."""
    concepts = _all(elem, "ConceptList/Concept")
    preferred = next((c for c in concepts if c.get("PreferredConceptYN") == "Y"),
                     concepts[0] if concepts else None)
    scope_of: dict[str, str] = {}
    if preferred is not None:
        pref_ui = _text(preferred, "ConceptUI")
        con.definition = _text(preferred, "ScopeNote")
        for c in concepts:
            for rel in _all(c, "ConceptRelationList/ConceptRelation"):
                if _text(rel, "Concept1UI") == pref_ui:
                    other = _text(rel, "Concept2UI")
                    scope_of.setdefault(other, _RELATION_SCOPE.get(rel.get("RelationName", ""), "RELATED"))
    for c in concepts:
        scope = "EXACT" if c is preferred else scope_of.get(_text(c, "ConceptUI"), "RELATED")
        for term in _all(c, "TermList/Term"):
            if not include_permuted and term.get("IsPermutedTermYN") == "Y":
                continue
            con.add_synonym(_text(term, "String"), scope)


def _descriptor(elem: Any, graph: OntologyGraph, trees: dict[str, list[str]],
                include_permuted: bool, path: Path, line: int | None) -> None:
    ui = _text(elem, "DescriptorUI")
    if not ui:
        raise InputError("DescriptorRecord without DescriptorUI", path=path, line=line)
    uid = f"MESH:{ui}"
    con = Concept(uid=uid, code=ui, name=_text(elem, "DescriptorName/String"))
    _names(elem, con, include_permuted)
    graph.add_concept(con)
    tns = [t.text.strip() for t in _all(elem, "TreeNumberList/TreeNumber") if t.text and t.text.strip()]
    if tns:
        trees.setdefault(uid, []).extend(tns)


def _supplemental(elem: Any, graph: OntologyGraph, include_permuted: bool, path: Path,
                  line: int | None) -> None:
    ui = _text(elem, "SupplementalRecordUI")
    if not ui:
        raise InputError("SupplementalRecord without SupplementalRecordUI", path=path, line=line)
    uid = f"MESH:{ui}"
    con = Concept(uid=uid, code=ui, name=_text(elem, "SupplementalRecordName/String"),
                  level_label=SUPPLEMENTARY)
    _names(elem, con, include_permuted)
    con.definition = con.definition or _text(elem, "Note")
    graph.add_concept(con)
    seen: set[str] = set()
    for d in _all(elem, "HeadingMappedToList/HeadingMappedTo/DescriptorReferredTo/DescriptorUI"):
        target = (d.text or "").strip().lstrip("*")
        if target and target not in seen:
            seen.add(target)
            graph.add_is_a(uid, f"MESH:{target}", origin=f"{path}:{d.sourceline or line}")
