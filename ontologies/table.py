"""A vocabulary kept as a table (TSV or CSV): one concept per row, the columns that hold its id,
name, synonyms and parents chosen by header name or 0-based index (docs/formats.md, "Tables").

- Delimiter: `delimiter` (`tab`, `comma`, `;`, …), else by extension (`.tsv`/`.tab` tab, `.csv`
  comma, a `.gz` after it ignored), else sniffed from the head. Cells in double quotes may hold the
  delimiter or a line break (the csv module reads the file).
- `header` (default on): the first row names the columns and is no concept (a warning says so
  when its id cell looks like an id).
- uid: an id that already has a prefix (`HP:0001250`) is kept; any other gets `prefix:` (parents
  alike), and without `prefix` it is an error: uids must not hang on the ontology's or the file's
  name, or a re-ingest under another name would orphan every link. code = the part after it.
- synonyms and parents: several in one cell, split on `separator` (default `|`); every synonym EXACT.
- A row repeating an id with the same name adds its synonyms and parents to the concept.

Bad rows fail the whole load with an InputError naming file and line (the store is never
touched): too few columns, an empty id or name, an id repeated with another name, and (unless
allow_dangling) a parent that no row defines.
"""
from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kgnorm.errors import InputError
from kgnorm.graph.ontology_graph import Concept, OntologyGraph

from .common import describe_format, finish, guess_format, iter_rows, read_head, require_path

FORMAT = "table"
DELIMITERS = {"tab": "\t", "\\t": "\t", "comma": ",", "semicolon": ";", "pipe": "|"}
_BY_SUFFIX = {".tsv": "\t", ".tab": "\t", ".csv": ","}
_NOT_TABLES = ("obo", "mesh-xml", "mesh-ascii", "xml", "html")


@dataclass(frozen=True)
class Columns:
    """The 0-based positions of the columns read (None: not read) and how many a row needs."""

    id: int
    name: int
    synonyms: int | None
    parents: int | None

    @property
    def needed(self) -> int:
        return 1 + max(i for i in (self.id, self.name, self.synonyms, self.parents) if i is not None)


def load(path: str | Path, name: str | None = None, *, allow_dangling: bool = False, id_column: str = "0",
         name_column: str = "1", synonyms_column: str | None = None, parents_column: str | None = None,
         separator: str = "|", delimiter: str | None = None, header: bool = True, prefix: str | None = None,
         **options: Any) -> OntologyGraph:
    """Load a vocabulary table into a finalized graph named `name` (default: the file's stem)."""
    path = require_path(path, "table")
    if path.is_dir():
        raise InputError("the table loader expects one TSV or CSV file, got a directory", path=path)
    head = read_head(path)
    kind = guess_format(head)
    if kind in _NOT_TABLES:
        raise InputError(f"this looks like {describe_format(kind)}, not a table", path=path)
    delim = _delimiter(path, delimiter, head)
    graph = OntologyGraph(name=name or _stem(path), format=FORMAT, source_path=str(path))
    prefix = (prefix or "").rstrip(":")
    rows = iter_rows(path, delim, desc=f"table {path.name}")
    cols: Columns | None = None if header else _columns(None, id_column, name_column, synonyms_column,
                                                        parents_column, path)
    seen: dict[str, tuple[str, int]] = {}  # uid -> (name, first line)
    for line, row in rows:
        if cols is None:
            cols = _columns(row, id_column, name_column, synonyms_column, parents_column, path)
            _check_header(graph, row, cols.id, path, line)
            continue
        _add_row(graph, row, line, cols, path, prefix, separator, seen)
    if not graph.concepts:
        raise InputError("no rows below the header" if header else "no rows", path=path)
    return finish(graph, allow_dangling)


def _add_row(graph: OntologyGraph, row: list[str], line: int, cols: Columns, path: Path, prefix: str,
             separator: str, seen: dict[str, tuple[str, int]]) -> None:
    if len(row) < cols.needed:
        raise InputError(f"expected at least {cols.needed} columns, found {len(row)}", path=path, line=line)
    raw_id, name = row[cols.id].strip(), row[cols.name].strip()
    if not raw_id:
        raise InputError("empty id", path=path, line=line)
    uid = _uid(raw_id, prefix, path, line)
    if not name:
        raise InputError("empty name", path=path, line=line, record=uid)
    first = seen.setdefault(uid, (name, line))
    if first[0] != name:
        raise InputError(f"id {raw_id!r} is on line {first[1]} already, named {first[0]!r}, not {name!r}",
                         path=path, line=line)
    con = Concept(uid=uid, code=uid.split(":", 1)[1], name=name)
    if cols.synonyms is not None:
        for syn in row[cols.synonyms].split(separator):
            con.add_synonym(syn)
    graph.add_concept(con)
    if cols.parents is not None:
        for parent in row[cols.parents].split(separator):
            if parent.strip():
                graph.add_is_a(uid, _uid(parent.strip(), prefix, path, line), origin=f"{path}:{line}")


def _check_header(graph: OntologyGraph, row: list[str], id_at: int, path: Path, line: int) -> None:
    """A header whose id cell looks like an id (`HP:0001`, `12`) is likely a concept: say so."""
    cell = row[id_at].strip() if id_at < len(row) else ""
    if ":" in cell.strip(":") or cell.isdigit():
        graph.warnings.append(f"{path}:{line}: the first row ({cell!r} …) was read as the header, not as a "
                              f"concept; give --no-header if it is one")


def _uid(raw: str, prefix: str, path: Path, line: int) -> str:
    if ":" in raw.strip(":"):
        return raw
    if not prefix:
        raise InputError(f"id {raw!r} has no prefix (as in MYV:{raw}): give --prefix", path=path, line=line)
    return f"{prefix}:{raw}"


def _columns(header: list[str] | None, id_column: str, name_column: str, synonyms_column: str | None,
             parents_column: str | None, path: Path) -> Columns:
    """Each column given by 0-based index or (with a header row) by header name."""
    names = [h.strip() for h in header] if header is not None else None

    def find(spec: str | None, what: str) -> int | None:
        if spec is None or str(spec).strip() == "":
            return None
        spec = str(spec).strip()
        if spec.isdigit():
            return int(spec)
        if names is None:
            raise InputError(f"--{what}-column {spec!r} is a header name, but the table has no header row "
                             f"(--no-header): give a 0-based index", path=path)
        if spec in names:
            return names.index(spec)
        lowered = [n.lower() for n in names]
        if spec.lower() in lowered:
            return lowered.index(spec.lower())
        raise InputError(f"no column {spec!r} for --{what}-column in the header (columns: {', '.join(names)})",
                         path=path, line=1)

    id_at, name_at = find(id_column, "id"), find(name_column, "name")
    if id_at is None or name_at is None:
        raise InputError("--id-column and --name-column must name a column", path=path)
    return Columns(id_at, name_at, find(synonyms_column, "synonyms"), find(parents_column, "parents"))


def _delimiter(path: Path, given: str | None, head: str) -> str:
    if given:
        delim = DELIMITERS.get(given.lower(), given)
        if len(delim) != 1:
            raise InputError(f"--delimiter {given!r} is not one character (or tab, comma, semicolon, pipe)",
                             path=path)
        return delim
    suffixes = [s.lower() for s in path.suffixes if s.lower() != ".gz"]
    if suffixes and suffixes[-1] in _BY_SUFFIX:
        return _BY_SUFFIX[suffixes[-1]]
    try:
        return csv.Sniffer().sniff(head[:8192], delimiters="\t,;").delimiter
    except csv.Error:
        raise InputError("cannot tell the column delimiter: name the file .tsv or .csv, or give --delimiter",
                         path=path) from None


def _stem(path: Path) -> str:
    name = path.name
    for suffix in (".gz", ".tsv", ".tab", ".csv", ".txt"):
        if name.lower().endswith(suffix):
            name = name[: -len(suffix)]
    return name or "table"
