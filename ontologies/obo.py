"""OBO flat-file loader (HPO, MONDO, DOID, CTD_diseases.obo …) built on pronto.

Mapping: live `[Term]` stanzas become concepts (uid = the term id as written, `\\:` escapes
removed; code = the part after the first colon); `name`, `def` text, synonyms with their
OBO scope (EXACT/RELATED/BROAD/NARROW; the synonym *type* is not kept), `alt_id`s, `xref`
ids (without their quoted description) and direct `is_a` parents. Obsolete terms are
skipped: they make no node, even when their id is an `alt_id` of a live term (HPO has 387
such ids), and an `is_a` to an obsolete term is redirected to its single live `replaced_by`
(or dropped, with a warning, when there is none or several).

pronto is strict where hand-written parsers are lax, so its load errors are turned into
`InputError`s naming the file (and line, when pronto gives one). pronto refuses a file with
an `is_a` to an id that has no stanza; with `allow_dangling=True` such `is_a` lines are
removed before parsing, then added to the graph so that `finalize` drops and counts them
like every other loader's dangling edges.
"""
from __future__ import annotations

import io
import re
import warnings
from pathlib import Path
from typing import Any

import pronto

from kgnorm.errors import InputError
from kgnorm.graph.ontology_graph import Concept, OntologyGraph

from .common import decode_text, find_line, finish, iter_lines, open_stream, reject_other_format, \
    require_path, unescape_obo

FORMAT = "obo"
_ID_LINE = re.compile(r"^id:\s*(\S+)")
_ISA_LINE = re.compile(r"^is_a:\s*(\S+)")
_STANZA = re.compile(r"^\[(\w+)\]\s*$")


def load(path: str | Path, name: str | None = None, *, allow_dangling: bool = False,
         **options: Any) -> OntologyGraph:
    """Load an OBO file into a finalized OntologyGraph.

    Options: `import_depth` (default 0: never fetch `import:` URLs over the network)."""
    path = require_path(path, "OBO file")
    if path.is_dir():
        raise InputError("the obo loader expects one .obo file, got a directory", path=path)
    reject_other_format(path, "obo", accept=("obo",))
    import_depth = int(options.get("import_depth", 0))

    dropped: list[tuple[str, str, int]] = []
    ont, caught = _parse(path, import_depth, allow_dangling, dropped)

    meta = ont.metadata
    graph = OntologyGraph(name=name or _default_name(meta.ontology, path), format=FORMAT,
                          source_path=str(path), version=meta.data_version or "")
    for w in caught:
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
        uid = unescape_obo(tid)
        con = Concept(uid=uid, code=uid.split(":", 1)[1] if ":" in uid else uid,
                      name=(term.name or "").strip(),
                      definition=str(term.definition).strip() if term.definition else "")
        try:
            synonyms = sorted(term.synonyms, key=lambda s: (s.description, s.scope or ""))
        except ValueError as exc:  # pronto: "undeclared synonym type: X"
            line = find_line(path, lambda t, tid=tid: _ID_LINE.match(t) is not None
                             and _ID_LINE.match(t).group(1) == tid)
            raise InputError(f"{exc}; declare it with a `synonymtypedef:` header line",
                             path=path, line=line, record=tid) from exc
        for syn in synonyms:
            con.add_synonym(syn.description, syn.scope or "RELATED")
        for _, other in duplicates.get(tid, ()):  # pronto keeps the last stanza's name only
            if other and other != con.name:
                con.add_synonym(other, "EXACT")
        for alt in sorted(term.alternate_ids):
            con.add_alt_id(unescape_obo(alt))
        for xref in sorted(term.xrefs, key=lambda x: x.id):
            xid = unescape_obo(xref.id)
            if xid not in con.xrefs:
                con.xrefs.append(xid)
        graph.add_concept(con)

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
    for child, parent, line in dropped:
        graph.add_is_a(unescape_obo(child), unescape_obo(parent), origin=f"{path}:{line}")
    if redirected:
        graph.warnings.append(f"{redirected} is_a edge(s) to obsolete terms redirected to replaced_by")
    if dropped_obsolete:
        graph.warnings.append(f"{dropped_obsolete} is_a edge(s) to obsolete terms without a single "
                              f"live replaced_by dropped")
    return finish(graph, allow_dangling)


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


def _parse(path: Path, import_depth: int, allow_dangling: bool,
           dropped: list[tuple[str, str, int]]) -> tuple[pronto.Ontology, list[warnings.WarningMessage]]:
    """Run pronto, converting its errors; see the module docstring for dangling is_a."""
    handle: Any = path
    for attempt in range(2):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                return _pronto(handle, import_depth), list(caught)
            except KeyError as exc:
                missing = str(exc.args[0]) if exc.args else ""
                if not allow_dangling or attempt:
                    line = find_line(path, lambda t: _ISA_LINE.match(t) is not None
                                     and _ISA_LINE.match(t).group(1) == missing)
                    raise InputError(f"is_a names unknown term {missing!r} "
                                     f"(use --allow-dangling to drop such edges)",
                                     path=path, line=line) from exc
                handle = _without_dangling_is_a(path, dropped)
            except UnicodeDecodeError as exc:
                raise InputError(f"cannot decode: {exc}", path=path) from exc
            except OSError as exc:
                if "UTF-8" not in str(exc) or attempt:
                    raise InputError(f"cannot read OBO file: {exc}", path=path) from exc
                # pronto only reads UTF-8 reliably: re-encode a cp1252/latin-1 file.
                with open_stream(path) as fh:
                    text, _ = decode_text(fh.read())
                handle = io.BytesIO(text.encode("utf-8"))
            except SyntaxError as exc:
                raise InputError(f"OBO syntax error: {exc.msg}", path=path,
                                 line=exc.lineno) from exc
            except ValueError as exc:
                raise InputError(f"not a readable OBO file: {exc}", path=path) from exc
    raise InputError("could not parse OBO file", path=path)  # pragma: no cover


def _pronto(handle: Any, import_depth: int) -> pronto.Ontology:
    """A path is handed to pronto as is (it gunzips itself, and is faster than a buffer)."""
    if isinstance(handle, Path):
        handle = str(handle)
    return pronto.Ontology(handle, import_depth=import_depth, encoding="utf-8")


def _without_dangling_is_a(path: Path, dropped: list[tuple[str, str, int]]) -> io.BytesIO:
    """Copy of the file without `is_a` lines whose target has no stanza (recorded in `dropped`)."""
    with open_stream(path) as fh:
        text, _ = decode_text(fh.read())
    lines = text.splitlines(keepends=True)
    declared: set[str] = set()
    for ln in lines:
        m = _ID_LINE.match(ln)
        if m:
            declared.add(m.group(1))
    out: list[str] = []
    current = ""
    for lineno, ln in enumerate(lines, 1):
        if _STANZA.match(ln.strip()):
            current = ""
        m = _ID_LINE.match(ln)
        if m:
            current = m.group(1)
        m = _ISA_LINE.match(ln)
        if m and m.group(1) not in declared:
            dropped.append((current, m.group(1), lineno))
            continue
        out.append(ln)
    return io.BytesIO("".join(out).encode("utf-8"))
