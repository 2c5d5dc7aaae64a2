"""CTD MEDIC disease vocabulary loader: the CTD report (TSV/CSV) and the DNorm pipe file.

Layouts (detected from the file itself, see docs/formats.md, "MEDIC"):
- CTD report `CTD_diseases.tsv|.csv[.gz]`: `#` comment lines (one names the columns), then
  8 or 9 columns DiseaseName, DiseaseID, AltDiseaseIDs, Definition, ParentIDs, TreeNumbers,
  ParentTreeNumbers, Synonyms[, SlimMappings]. IDs are already CURIEs (`MESH:D…`, `OMIM:…`);
  `ParentIDs` become IS_A edges, `AltDiseaseIDs` alt_ids; a row whose DiseaseID is an
  OMIM id with a MeSH id among its alt ids takes the MeSH id as uid, like the pipe layout. When some row names the MEDIC
  root `MESH:C` as parent and no row defines it, a synthetic root `MESH:C` "Diseases" is
  added (the CTD report's top rows point at it); any other unknown parent is dangling.
- DNorm/BioSyn pipe file (`medic_06Jul2012.txt`): `IDS||NAMES`, bare IDs (`D…`/`C…` MeSH,
  digits OMIM). The first MeSH ID is the primary CURIE (else the first ID), the others
  become alt_ids (so an OMIM-first line still gets its MeSH id as uid); the first
  name is the preferred name, the rest synonyms; HTML entities (`&apos;`) are unescaped.
  The line `C||Diseases` becomes `MESH:C`. This layout has no hierarchy (all roots).

A repeated primary ID merges into one concept; an ID that is primary on one line and an
alt ID on another stays a concept of its own (the real 2012 file has one: OMIM:260350).
"""
from __future__ import annotations

import csv
import html
import re
from pathlib import Path
from typing import Any

from kgnorm.errors import InputError
from kgnorm.graph.ontology_graph import Concept, OntologyGraph

from .common import describe_format, finish, guess_format, iter_lines, read_head, require_path

FORMAT = "medic"
DEFAULT_NAME = "medic"
CTD_COLUMNS = ["DiseaseName", "DiseaseID", "AltDiseaseIDs", "Definition", "ParentIDs",
               "TreeNumbers", "ParentTreeNumbers", "Synonyms", "SlimMappings"]
ROOT_UID = "MESH:C"
ROOT_NAME = "Diseases"

_MESH = re.compile(r"^(?:MESH:)?([DC]\d+)$")
_OMIM = re.compile(r"^(?:OMIM:)?(\d+)$")
_CURIE = re.compile(r"^[A-Za-z][\w.-]*:\S+$")
_DATE_IN_NAME = re.compile(r"(\d{1,2}[A-Z][a-z]{2}\d{4}|\d{4}-?\d{2}-?\d{2})")


def load(path: str | Path, name: str | None = None, *, allow_dangling: bool = False,
         **options: Any) -> OntologyGraph:
    """Load a MEDIC file (CTD TSV/CSV or DNorm pipe layout) into a finalized graph."""
    path = require_path(path, "MEDIC file")
    if path.is_dir():
        raise InputError("the medic loader expects one file (CTD_diseases.tsv or the "
                         "DNorm pipe file), got a directory", path=path)
    layout = _detect_layout(path)
    graph = OntologyGraph(name=name or DEFAULT_NAME, format=FORMAT, source_path=str(path))
    stats: dict[str, int] = {}
    if layout == "pipe":
        _load_pipe(path, graph, stats)
    else:
        _load_ctd(path, graph, stats, delimiter="," if layout == "csv" else "\t")
    if stats.get("fallback_lines"):
        graph.warnings.append(f"{stats['fallback_lines']} line(s) were not valid UTF-8 and "
                              f"were decoded as cp1252/latin-1")
    return finish(graph, allow_dangling)


def normalize_id(raw: str) -> str | None:
    """Bare or prefixed MEDIC id -> CURIE (`D001` -> MESH:D001, `123` -> OMIM:123)."""
    raw = raw.strip()
    if raw in ("C", "MESH:C"):
        return ROOT_UID
    m = _MESH.match(raw)
    if m:
        return f"MESH:{m.group(1)}"
    m = _OMIM.match(raw)
    if m:
        return f"OMIM:{m.group(1)}"
    if _CURIE.match(raw):
        return raw
    return None


def mesh_first(uids: list[str]) -> list[str]:
    """The line's first MeSH id leads (CTD's convention: the MeSH id is the concept id, OMIM ids
    are alternatives); 772 lines of the 2012 pipe file list an OMIM id first."""
    mesh = next((u for u in uids if u.startswith("MESH:")), None)
    if mesh is None or uids[0] == mesh:
        return uids
    return [mesh] + [u for u in uids if u != mesh]


def _detect_layout(path: Path) -> str:
    head = read_head(path)
    kind = guess_format(head)
    if kind == "medic-pipe":
        return "pipe"
    if kind not in (None, "medic-ctd"):
        raise InputError(f"this looks like {describe_format(kind)}, not a MEDIC file",
                         path=path)
    first = next((ln.rstrip("\r") for ln in head.lstrip("\ufeff").split("\n")
                  if ln.strip() and not ln.startswith("#")), "")
    if "\t" in first:
        return "tsv"
    if "||" in first and "\t" not in first:
        return "pipe"
    if kind == "medic-ctd" or ".csv" in path.name.lower():
        return "csv"
    raise InputError("unrecognised MEDIC layout: expected CTD_diseases.tsv/.csv rows or "
                     "DNorm `IDS||NAMES` lines", path=path)


def _version_from_name(path: Path) -> str:
    m = _DATE_IN_NAME.search(path.name)
    return m.group(1) if m else ""


def _load_pipe(path: Path, graph: OntologyGraph, stats: dict[str, int]) -> None:
    graph.version = _version_from_name(path)
    for lineno, line in iter_lines(path, desc=f"medic {path.name}", stats=stats):
        if not line.strip():
            continue
        if "||" not in line:
            raise InputError("expected `IDS||NAMES` (no `||` on this line)", path=path, line=lineno)
        ids_part, names_part = line.split("||", 1)
        uids: list[str] = []
        for raw in ids_part.split("|"):
            uid = normalize_id(raw)
            if uid is None:
                raise InputError(f"unrecognised MEDIC id {raw!r}", path=path, line=lineno)
            uids.append(uid)
        names = [html.unescape(n).strip() for n in names_part.split("|")]
        names = [n for n in names if n]
        if not names:
            raise InputError("line has IDs but no name", path=path, line=lineno)
        uids = mesh_first(uids)
        primary = uids[0]
        con = Concept(uid=primary, code=primary.split(":", 1)[1], name=names[0])
        for syn in names[1:]:
            con.add_synonym(syn)
        for alt in uids[1:]:
            con.add_alt_id(alt)
        graph.add_concept(con)


def _load_ctd(path: Path, graph: OntologyGraph, stats: dict[str, int], delimiter: str) -> None:
    columns = list(CTD_COLUMNS)
    parents_seen: set[str] = set()
    renamed: dict[str, str] = {}  # OMIM DiseaseID -> the MeSH alt id that became the uid
    for lineno, line in iter_lines(path, desc=f"medic {path.name}", stats=stats):
        if line.startswith("#"):
            _read_comment(line, graph, columns, delimiter)
            continue
        if not line.strip():
            continue
        try:
            fields = line.split("\t") if delimiter == "\t" else next(csv.reader([line]))
        except csv.Error as exc:  # a field past the csv module's size limit
            raise InputError(f"unreadable CSV row ({exc})", path=path, line=lineno) from None
        if len(fields) not in (8, 9):
            raise InputError(f"expected 8 or 9 {'TAB' if delimiter == chr(9) else 'comma'}-"
                             f"separated columns, found {len(fields)}", path=path, line=lineno)
        row = dict(zip(columns, fields))
        uid = normalize_id(row.get("DiseaseID", ""))
        if uid is None:
            raise InputError(f"bad DiseaseID {row.get('DiseaseID', '')!r}", path=path, line=lineno)
        name = row.get("DiseaseName", "").strip()
        if not name:
            raise InputError("empty DiseaseName", path=path, line=lineno, record=uid)
        alts = [normalize_id(a) or a for a in _split(row.get("AltDiseaseIDs", ""))]
        ordered = mesh_first([uid] + alts)
        if ordered[0] != uid:
            renamed[uid] = ordered[0]
            uid, alts = ordered[0], ordered[1:]
        con = Concept(uid=uid, code=uid.split(":", 1)[1], name=name,
                      definition=row.get("Definition", "").strip())
        for syn in _split(row.get("Synonyms", "")):
            con.add_synonym(syn)
        for alt in alts:
            con.add_alt_id(alt)
        graph.add_concept(con)
        for raw_parent in _split(row.get("ParentIDs", "")):
            parent = normalize_id(raw_parent)
            if parent is None:
                raise InputError(f"bad parent id {raw_parent!r}", path=path, line=lineno)
            parents_seen.add(parent)
            graph.add_is_a(uid, parent, origin=f"{path}:{lineno}")
    if not graph.concepts:
        raise InputError("no MEDIC rows found", path=path)
    if renamed:  # parents named by the OMIM id point at the MeSH uid now
        graph.is_a = [(renamed.get(c, c), renamed.get(p, p)) for c, p in graph.is_a]
        graph.is_a_origin = {(renamed.get(c, c), renamed.get(p, p)): o for (c, p), o in graph.is_a_origin.items()}
        parents_seen = {renamed.get(p, p) for p in parents_seen}
    if ROOT_UID in parents_seen and ROOT_UID not in graph.concepts:
        graph.add_concept(Concept(uid=ROOT_UID, code="C", name=ROOT_NAME))
        graph.warnings.append(f"added synthetic root {ROOT_UID} {ROOT_NAME!r}")


def _read_comment(line: str, graph: OntologyGraph, columns: list[str], delimiter: str) -> None:
    """Pick the column names and the report date out of the `#` header block."""
    body = line[1:].strip()
    if body.startswith("DiseaseName"):
        names = [c.strip() for c in (body.split("\t") if "\t" in body else body.split(","))]
        if "DiseaseID" in names:
            columns[:] = names
    elif body.startswith("Report created:") and not graph.version:
        graph.version = body.split(":", 1)[1].strip()


def _split(value: str) -> list[str]:
    return [v.strip() for v in value.split("|") if v.strip()]
