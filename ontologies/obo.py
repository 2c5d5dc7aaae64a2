"""OBO flat-file loader (HPO, MONDO, DOID, CTD_diseases.obo …) built on pronto.

Mapping: live `[Term]` stanzas become concepts (uid = the term id as written, `\\:` escapes
removed; code = the part after the first colon); `name`, `def` text, synonyms with their
OBO scope (EXACT/RELATED/BROAD/NARROW; the synonym *type* is not kept), `alt_id`s, `xref`
ids (without their quoted description) and direct `is_a` parents. Obsolete terms make no
node, even when their id is an `alt_id` of a live term (HPO has 387 such ids); they are
recorded in `graph.retired` with their `replaced_by` / `consider` so their ids still resolve,
and an `is_a` to an obsolete term is redirected to its single live `replaced_by` (or dropped,
with a warning, when there is none or several).

pronto (fastobo) is strict where real releases are not: a file it refuses is read again
through `obo_lenient`, which mends or blanks only the lines fastobo rejects and reports each
kind once with file:line and a count. pronto refuses an `is_a` to an id that has no stanza;
with `allow_dangling=True` such lines are blanked before parsing, then added to the graph so
that `finalize` drops and counts them like every other loader's dangling edges.
"""
from __future__ import annotations

import io
import re
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kgnorm.errors import InputError
from kgnorm.graph.ontology_graph import Concept, OntologyGraph, RetiredId

from . import obo_fast, obo_lenient
from .common import decode_text, find_line, finish, iter_lines, open_stream, reject_other_format, \
    require_path, unescape_obo

if TYPE_CHECKING:
    import pronto

FORMAT = "obo"
_ID_LINE = re.compile(r"^id:\s*(\S+)")
_ISA_LINE = re.compile(r"^is_a:\s*(\S+)")
_STANZA = re.compile(r"^\[(\w+)\]\s*$")


class _Undeclared(Exception):
    """A synonym type without `synonymtypedef:` (pronto raises only when synonyms are read)."""


@dataclass
class _Parsed:
    ont: pronto.Ontology
    caught: list[warnings.WarningMessage]
    notes: list[str]  # what the lenient reader mended, one line per kind
    dropped: list[tuple[str, str, int]]  # dangling is_a removed with allow_dangling


def load(path: str | Path, name: str | None = None, *, allow_dangling: bool = False,
         **options: Any) -> OntologyGraph:
    """Load an OBO file into a finalized OntologyGraph.

    A well-formed file is read in one pass by `obo_fast` (the same graph, several times faster);
    any other goes through pronto. Options: `import_depth` (default 0: never fetch `import:` URLs
    over the network); `parser="pronto"` skips the one-pass reader."""
    path = require_path(path, "OBO file")
    if path.is_dir():
        raise InputError("the obo loader expects one .obo file, got a directory", path=path)
    reject_other_format(path, "obo", accept=("obo",))
    parser = options.get("parser") or "fast"
    if parser not in ("fast", "pronto"):
        raise InputError(f"unknown OBO parser {parser!r}: fast or pronto")
    if parser == "fast":
        graph = obo_fast.read(path, name)
        if graph is not None:
            return finish(graph, allow_dangling)
    import_depth = int(options.get("import_depth", 0))
    parsed = _parse(path, import_depth, allow_dangling, lenient=False)
    try:
        return _build(path, name, parsed, allow_dangling)
    except _Undeclared:  # read again leniently: the undeclared types are dropped, with a warning
        pass
    again = _parse(path, import_depth, allow_dangling, lenient=True, syntax_ok=not parsed.notes)
    try:
        return _build(path, name, again, allow_dangling)
    except _Undeclared as exc:  # a synonym line the lenient reader could not make out
        raise InputError(f"{exc}; declare it with a `synonymtypedef:` header line", path=path) from exc


def _build(path: Path, name: str | None, parsed: _Parsed, allow_dangling: bool) -> OntologyGraph:
    ont = parsed.ont
    meta = ont.metadata
    graph = OntologyGraph(name=name or _default_name(meta.ontology, path), format=FORMAT,
                          source_path=str(path), version=meta.data_version or "")
    graph.warnings.extend(parsed.notes)
    for w in parsed.caught:
        msg = f"pronto: {w.message}"
        if msg not in graph.warnings:
            graph.warnings.append(msg)

    live: dict[str, Any] = {}
    obsolete: dict[str, Any] = {}
    for term in ont.terms():
        (obsolete if term.obsolete else live)[term.id] = term

    duplicates = _duplicate_stanzas(path)
    for tid, lines in duplicates.items():
        graph.warnings.append(f"term {tid} has {len(lines)} [Term] stanzas (lines "
                              f"{', '.join(str(n) for n, _ in lines)}); they are merged, and a name "
                              "that is not the merged one is kept as a synonym")
    for tid, term in live.items():
        graph.add_concept(_concept(term, duplicates.get(tid, ())))
    _retire(graph, obsolete)

    redirected = dropped_obsolete = 0
    for tid, term in live.items():
        child = unescape_obo(tid)
        for sup in term.superclasses(distance=1, with_self=False):
            parent_id = sup.id
            if parent_id in obsolete:
                repl = [r.id for r in sup.replaced_by if r.id in live]
                if len(repl) != 1:
                    dropped_obsolete += 1
                    continue
                parent_id = repl[0]
                redirected += 1
            graph.add_is_a(child, unescape_obo(parent_id))  # pronto checked it exists
    for child, parent, line in parsed.dropped:
        graph.add_is_a(unescape_obo(child), unescape_obo(parent), origin=f"{path}:{line}")
    if redirected:
        graph.warnings.append(f"{redirected} is_a edge(s) to obsolete terms redirected to replaced_by")
    if dropped_obsolete:
        graph.warnings.append(f"{dropped_obsolete} is_a edge(s) to obsolete terms without a single "
                              f"live replaced_by dropped")
    return finish(graph, allow_dangling)


def _concept(term: Any, duplicates: Any) -> Concept:
    uid = unescape_obo(term.id)
    con = Concept(uid=uid, code=uid.split(":", 1)[1] if ":" in uid else uid,
                  name=(term.name or "").strip(),
                  definition=str(term.definition).strip() if term.definition else "")
    try:
        synonyms = sorted(term.synonyms, key=lambda s: (s.description, s.scope or ""))
    except ValueError as exc:  # pronto: "undeclared synonym type: X"
        raise _Undeclared(str(exc)) from exc
    for syn in synonyms:
        con.add_synonym(syn.description, syn.scope or "RELATED")
    for _, other in duplicates:  # pronto keeps the last stanza's name only
        if other and other != con.name:
            con.add_synonym(other, "EXACT")
    for alt in sorted(term.alternate_ids):
        con.add_alt_id(unescape_obo(alt))
    for xref in sorted(term.xrefs, key=lambda x: x.id):
        xid = unescape_obo(xref.id)
        if xid not in con.xrefs:
            con.xrefs.append(xid)
    return con


def _retire(graph: OntologyGraph, obsolete: dict[str, Any]) -> None:
    """Obsolete terms make no concept, but their ids resolve through `graph.retired`.

    pronto resolves `replaced_by` / `consider` to Term objects and raises for an id outside the
    file (common: a successor in another ontology), so the raw ids are read from its data."""
    for tid, term in obsolete.items():
        data = term._data()
        uid = unescape_obo(tid)
        graph.retired[uid] = RetiredId(uid=uid, name=(term.name or "").strip(),
                                       replaced_by=sorted(unescape_obo(r) for r in data.replaced_by),
                                       consider=sorted(unescape_obo(c) for c in data.consider))


def _duplicate_stanzas(path: Path) -> dict[str, list[tuple[int, str]]]:
    """Term ids with more than one `[Term]` stanza: (line of the `id:`, the stanza's name) each."""
    seen: dict[str, list[tuple[int, str]]] = {}
    current: list[tuple[int, str]] | None = None
    in_term = False
    for lineno, line in iter_lines(path):
        if line.startswith("["):
            in_term, current = line.strip() == "[Term]", None
        elif in_term and line.startswith("id:"):
            entry = (lineno, "")
            seen.setdefault(line[3:].split("!")[0].strip(), []).append(entry)
            current = seen[line[3:].split("!")[0].strip()]
        elif in_term and current is not None and line.startswith("name:") and not current[-1][1]:
            current[-1] = (current[-1][0], line[5:].strip())
    return {tid: lines for tid, lines in seen.items() if len(lines) > 1}


def _default_name(header: str | None, path: Path) -> str:
    """`ontology: hp.obo` or `…/obo/hp.owl` -> "hp"; without a header, the file stem."""
    raw = (header or "").strip().rstrip("/").rsplit("/", 1)[-1]
    if not raw:
        raw = path.name
    for ext in (".gz", ".obo", ".owl", ".json"):
        if raw.lower().endswith(ext):
            raw = raw[: -len(ext)]
    return raw or path.stem


def _parse(path: Path, import_depth: int, allow_dangling: bool, lenient: bool,
           syntax_ok: bool = False) -> _Parsed:
    """Run pronto; a file it refuses is read again leniently (see obo_lenient), and a dangling
    `is_a` is an error or, with allow_dangling, blanked out and recorded (see the docstring)."""
    text: str | None = None
    notes: list[str] = []
    dropped: list[tuple[str, str, int]] = []
    if lenient:
        text, notes = _repaired(path, syntax_ok)
    for _ in range(3):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                return _Parsed(_pronto(path if text is None else text, import_depth), list(caught),
                               notes, dropped)
            except KeyError as exc:
                missing = str(exc.args[0]) if exc.args else ""
                if not allow_dangling or dropped:
                    line = find_line(path, lambda t: _ISA_LINE.match(t) is not None
                                     and _ISA_LINE.match(t).group(1) == missing)
                    raise InputError(f"is_a names unknown term {missing!r} "
                                     f"(use --allow-dangling to drop such edges)",
                                     path=path, line=line) from exc
                text = _without_dangling_is_a(_read_text(path) if text is None else text, dropped)
            except UnicodeDecodeError as exc:
                raise InputError(f"cannot decode: {exc}", path=path) from exc
            except OSError as exc:
                if "UTF-8" not in str(exc) or text is not None:
                    raise InputError(f"cannot read OBO file: {exc}", path=path) from exc
                text = _read_text(path)  # pronto reads only UTF-8 reliably: hand it decoded text
            except (SyntaxError, ValueError) as exc:
                if not lenient:
                    return _parse(path, import_depth, allow_dangling, lenient=True)
                line = exc.lineno if isinstance(exc, SyntaxError) else None
                raise InputError(f"OBO syntax error: {getattr(exc, 'msg', exc)}", path=path, line=line) from exc
            except BaseException as exc:  # pyo3's PanicException: fastobo gave up without a line
                if isinstance(exc, (KeyboardInterrupt, SystemExit, MemoryError)):
                    raise
                if lenient:
                    raise InputError(f"the OBO parser failed even on the mended file ({exc})", path=path) from exc
                return _parse(path, import_depth, allow_dangling, lenient=True)
    raise InputError("could not parse OBO file", path=path)  # pragma: no cover


def _read_text(path: Path) -> str:
    with open_stream(path) as fh:
        return decode_text(fh.read())[0]


def _repaired(path: Path, syntax_ok: bool) -> tuple[str, list[str]]:
    """The file mended line by line; a file with no readable `[Term]` is not OBO at all."""
    rep = obo_lenient.repair(_read_text(path), syntax_ok)
    if not any(_ID_LINE.match(ln) for ln in rep.lines):
        first = rep.found.get("header", [None])[0]
        raise InputError("not an OBO file: no readable [Term] stanza", path=path, line=first)
    return rep.text(), rep.warnings(str(path))


def _pronto(source: Path | str, import_depth: int) -> pronto.Ontology:
    """A path is handed to pronto as is (it gunzips itself, and is faster than a buffer); pronto is
    imported here, so that a file the one-pass reader takes never loads it."""
    import pronto

    if isinstance(source, Path):
        return pronto.Ontology(str(source), import_depth=import_depth, encoding="utf-8")
    return pronto.Ontology(io.BytesIO(source.encode("utf-8")), import_depth=import_depth, encoding="utf-8")


def _without_dangling_is_a(text: str, dropped: list[tuple[str, str, int]]) -> str:
    """The text with `is_a` lines whose target has no stanza blanked (recorded in `dropped`);
    blanking keeps every line number."""
    lines = text.splitlines()
    declared = {m.group(1) for ln in lines if (m := _ID_LINE.match(ln))}
    current = ""
    for index, ln in enumerate(lines):
        if _STANZA.match(ln.strip()):
            current = ""
        m = _ID_LINE.match(ln)
        if m:
            current = m.group(1)
        m = _ISA_LINE.match(ln)
        if m and m.group(1) not in declared:
            dropped.append((current, m.group(1), index + 1))
            lines[index] = ""
    return "\n".join(lines) + "\n"
