"""One-pass reader for well-formed OBO files: the common subset of OBO 1.4, read line by line.

pronto (through fastobo) builds a Python object for every clause and xref of the file before the
loader sees a term; on HPO that parse alone takes longer than the whole ingest should (issue 51:
ingest at parse speed). This reader splits the text once and makes one `Concept` per live term.

It is deliberately narrow. It accepts a file only when every line is in the subset it knows and
matches that line's grammar strictly (the quoted strings, ids, xref lists, qualifiers and dates
fastobo itself would accept); an unknown tag or stanza, an escape other than `\\"` / `\\\\`, a
header `import:` or `treat-xrefs-*` macro, a repeated stanza id, an `is_a` to an id that has no
`[Term]` stanza, a synonym type the header does not declare, a byte that is not UTF-8: any of these
and `read` answers None, and `obo.load` reads the file through pronto as before, with its mending,
warnings and error messages. For every file it accepts, the graph equals the one pronto's reading
builds (tests/test_loader_obo_fast.py compares them field by field).
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import TypeVar

from kgnorm.graph.ontology_graph import Concept, OntologyGraph, RetiredId

from .common import open_stream

_ID = r"[A-Za-z0-9_][A-Za-z0-9_.\-]*(?::[A-Za-z0-9_.\-/]+)?"
_URL = r"https?://[A-Za-z0-9_.\-~/:%?#@=&+;*$'()]+"
_QUOTED = r'"((?:[^"\\\n]|\\["\\nt])*)"'
_QUAL = rf'(?:\s*\{{\s*{_ID}\s*=\s*"(?:[^"\\]|\\["\\])*"(?:\s*,\s*{_ID}\s*=\s*"(?:[^"\\]|\\["\\])*")*\s*\}})?'
_TAIL = _QUAL + r"(?:\s+!.*)?\s*"
_XID = r"[A-Za-z0-9_][A-Za-z0-9_.\-]*:(?:[A-Za-z0-9_.\-/#%?=&~+()']|\\[:/#?=&])+"  # `url:http\://…`
_XURL = r"https?://(?:[A-Za-z0-9_.\-~/:%?#@=&+;*$'()]|\\[^\s])+"  # an escaped `\:` in a fragment
_XREF = rf'(?:{_ID}|{_XURL}|{_XID})(?:\s+"(?:[^"\\]|\\["\\])*")?'
_XREFS = rf"\[(?:\s*{_XREF}(?:\s*,\s*{_XREF})*)?\s*\]"
_SCOPE = "(EXACT|RELATED|BROAD|NARROW)"

_IDENT = re.compile(rf"({_ID}){_TAIL}")
_XREF_LINE = re.compile(rf'({_ID})(?:\s+"(?:[^"\\]|\\["\\])*")?{_TAIL}')
_DEF = re.compile(rf"{_QUOTED}\s*{_XREFS}{_TAIL}")
_SYNONYM = re.compile(rf"{_QUOTED}\s+{_SCOPE}(?:\s+({_ID}))?\s*{_XREFS}{_TAIL}")
_PROPERTY = re.compile(rf'(?:{_ID}|{_URL})\s+(?:"(?:[^"\\]|\\["\\])*"\s+{_ID}|{_ID}|{_URL}){_TAIL}')
_TEXT = re.compile(r"[^\\{}\n]*[^\\{}\s][^\\{}\n]*?" + _TAIL)
_NAME = re.compile(r"([^\\{}!\n]*[^\\{}!\s][^\\{}!\n]*?)" + _QUAL + r"\s*")
_BOOL = re.compile(rf"(true|false){_TAIL}")
# a date alone makes pronto warn ("incomplete creation date"): pronto reads such a file
_ISO_DATE = re.compile(r"\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])"
                       r"T([01]\d|2[0-3]):[0-5]\d:[0-5]\d(\.\d+)?(Z|[+-]\d\d:\d\d)\s*")
_HEADER_DATE = re.compile(r"(0[1-9]|[12]\d|3[01]):(0[1-9]|1[0-2]):\d{4} ([01]\d|2[0-3]):[0-5]\d\s*")
_TYPEDEF_LINE = re.compile(rf"({_ID})\s+{_QUOTED}(?:\s+{_SCOPE})?{_TAIL}")
_SUBSETDEF_LINE = re.compile(rf"({_ID})\s+{_QUOTED}{_TAIL}")
_IDSPACE = re.compile(rf"{_ID}\s+{_URL}(?:\s+{_QUOTED})?\s*")
_PAIR = re.compile(rf"{_ID}\s+{_ID}{_TAIL}")

# header tag -> the grammar of its value (tags not listed send the file to pronto)
_HEADER = {"format-version": _TEXT, "data-version": _TEXT, "default-namespace": _IDENT, "remark": _TEXT,
           "ontology": _TEXT, "saved-by": _TEXT, "auto-generated-by": _TEXT, "date": _HEADER_DATE,
           "idspace": _IDSPACE, "property_value": _PROPERTY, "logical-definition-view-relation": _IDENT}
# [Typedef] stanzas make no concept: their clauses are only checked
_TYPEDEF = {"id": _IDENT, "name": _NAME, "def": _DEF, "comment": _TEXT, "xref": _XREF_LINE, "synonym": _SYNONYM,
            "property_value": _PROPERTY, "namespace": _IDENT, "domain": _IDENT, "range": _IDENT,
            "inverse_of": _IDENT, "transitive_over": _IDENT, "holds_over_chain": _PAIR,
            "equivalent_to_chain": _PAIR, "created_by": _TEXT, "creation_date": _ISO_DATE, "subset": _IDENT,
            **{flag: _BOOL for flag in ("is_transitive", "is_symmetric", "is_reflexive", "is_anti_symmetric",
                                        "is_cyclic", "is_functional", "is_inverse_functional", "is_metadata_tag",
                                        "is_class_level", "is_obsolete", "builtin", "is_anonymous")}}
_ONCE = frozenset(("name", "def", "comment", "is_obsolete", "created_by", "creation_date", "namespace"))
_T = TypeVar("_T")
_UNESCAPE = re.compile(r"\\([\"\\nt])")
_ESCAPED = {'"': '"', "\\": "\\", "n": "\n", "t": "\t"}


class _NotSimple(Exception):
    """The file is outside the subset: pronto reads it."""


def read(path: Path, name: str | None = None) -> OntologyGraph | None:
    """The graph of `path` (not yet finalized), or None when the file is outside the subset."""
    with open_stream(path) as fh:
        data = fh.read()
    if b"\r" in data or data.startswith(b"\xef\xbb\xbf"):
        return None
    try:
        lines = data.decode("utf-8").split("\n")
    except UnicodeDecodeError:
        return None
    try:
        return _Reader(lines).graph(path, name)
    except _NotSimple:
        return None


class _Reader:
    """The header, then every stanza, in one pass over the lines."""

    def __init__(self, lines: list[str]) -> None:
        self.meta: dict[str, str] = {}
        self.synonym_types: set[str] = set()
        self.live: dict[str, Concept] = {}
        self.obsolete: dict[str, RetiredId] = {}
        self.parents: dict[str, list[str]] = {}
        self.typedefs: set[str] = set()
        start = self._header(lines)
        stanzas = [i for i in range(start, len(lines)) if lines[i].startswith("[")]
        for k, begin in enumerate(stanzas):
            end = stanzas[k + 1] if k + 1 < len(stanzas) else len(lines)
            kind = lines[begin].rstrip()
            if kind == "[Term]":
                self._term(lines, begin + 1, end)
            elif kind == "[Typedef]":
                self._typedef(lines, begin + 1, end)
            else:
                raise _NotSimple(kind)

    def _header(self, lines: list[str]) -> int:
        for i, line in enumerate(lines):
            if line.startswith("["):
                return i
            if not line.strip():
                continue
            tag, sep, value = line.partition(":")
            value = value.strip()
            if tag == "synonymtypedef":
                m = _TYPEDEF_LINE.fullmatch(value)
                self.synonym_types.add(_need(m).group(1))
            elif tag == "subsetdef":
                _need(_SUBSETDEF_LINE.fullmatch(value))
            else:
                _need(sep and tag in _HEADER and _HEADER[tag].fullmatch(value))
                if tag in ("data-version", "ontology") and tag not in self.meta:
                    self.meta[tag] = value
        return len(lines)

    def _term(self, lines: list[str], begin: int, end: int) -> None:
        tid, seen = "", set()
        name = definition = ""
        obsolete = False
        synonyms: list[tuple[str, str]] = []
        alt_ids: list[str] = []
        xrefs: list[str] = []
        parents: list[str] = []
        replaced: list[str] = []
        consider: list[str] = []
        for i in range(begin, end):
            line = lines[i]
            if not line.strip():
                continue
            tag, sep, value = line.partition(":")
            value = value.strip()
            if not sep or (not tid) != (tag == "id"):  # `id:` comes first, once
                raise _NotSimple(line)
            if tag in _ONCE:
                _need(tag not in seen)
                seen.add(tag)
            if tag == "synonym":
                m = _need(_SYNONYM.fullmatch(value))
                _need(m.group(3) is None or m.group(3) in self.synonym_types)
                synonyms.append((_unescape(m.group(1)), m.group(2)))
            elif tag == "is_a":
                parents.append(_need(_IDENT.fullmatch(value)).group(1))
            elif tag == "property_value" or tag == "creation_date" or tag == "comment" or tag == "created_by":
                _need(_TYPEDEF[tag].fullmatch(value))
            elif tag == "xref":
                xrefs.append(_need(_XREF_LINE.fullmatch(value)).group(1))
            elif tag == "def":
                definition = _unescape(_need(_DEF.fullmatch(value)).group(1))
            elif tag == "name":
                name = _need(_NAME.fullmatch(value)).group(1)
            elif tag == "id":
                tid = _need(_IDENT.fullmatch(value)).group(1)
            elif tag == "alt_id":
                alt_ids.append(_need(_IDENT.fullmatch(value)).group(1))
            elif tag == "subset":
                _need(_IDENT.fullmatch(value))
            elif tag == "is_obsolete":
                obsolete = _need(_BOOL.fullmatch(value)).group(1) == "true"
            elif tag == "replaced_by":
                replaced.append(_need(_IDENT.fullmatch(value)).group(1))
            elif tag == "consider":
                consider.append(_need(_IDENT.fullmatch(value)).group(1))
            elif tag == "namespace":
                _need(_IDENT.fullmatch(value))
            else:
                raise _NotSimple(line)
        _need(tid and tid not in self.live and tid not in self.obsolete and tid not in self.typedefs)
        self.parents[tid] = parents
        if obsolete:
            self.obsolete[tid] = RetiredId(uid=tid, name=name.strip(), replaced_by=sorted(set(replaced)),
                                           consider=sorted(set(consider)))
            return
        con = Concept(uid=tid, code=tid.split(":", 1)[1] if ":" in tid else tid, name=name.strip(),
                      definition=definition.strip())
        for text, scope in sorted(set(synonyms)):
            con.add_synonym(text, scope)
        for alt in sorted(set(alt_ids)):
            con.add_alt_id(alt)
        con.xrefs = sorted(set(xrefs))
        self.live[tid] = con

    def _typedef(self, lines: list[str], begin: int, end: int) -> None:
        tid = ""
        for i in range(begin, end):
            line = lines[i]
            if not line.strip():
                continue
            tag, sep, value = line.partition(":")
            grammar = _TYPEDEF.get(tag)
            m = _need(sep and grammar is not None and (not tid) == (tag == "id") and grammar.fullmatch(value.strip()))
            if tag == "id":
                tid = m.group(1)
            elif tag == "synonym":
                _need(m.group(3) is None or m.group(3) in self.synonym_types)
        _need(tid and tid not in self.typedefs and tid not in self.live and tid not in self.obsolete)
        self.typedefs.add(tid)

    def graph(self, path: Path, name: str | None) -> OntologyGraph:
        """The concepts, retired ids and IS_A edges, as `obo._build` makes them from pronto's terms."""
        from .obo import _default_name  # the one rule for an ontology's name

        _need(self.live)  # no live term: pronto's reading says what is wrong with the file

        graph = OntologyGraph(name=name or _default_name(self.meta.get("ontology"), path), format="obo",
                              source_path=str(path), version=self.meta.get("data-version", ""))
        for con in self.live.values():
            graph.add_concept(con)
        graph.retired.update(self.obsolete)
        redirected = dropped = 0
        for child in self.live:
            for parent in dict.fromkeys(self.parents[child]):
                if parent == child:  # pronto's superclasses(with_self=False) leaves it out
                    continue
                if parent in self.obsolete:
                    targets = self.obsolete[parent].replaced_by
                    _need(all(t in self.live or t in self.obsolete for t in targets))
                    repl = [t for t in targets if t in self.live]
                    if len(repl) != 1:
                        dropped += 1
                        continue
                    parent = repl[0]
                    redirected += 1
                _need(parent in self.live)  # an is_a to an id without a stanza: pronto says which line
                graph.add_is_a(child, parent)
        if redirected:
            graph.warnings.append(f"{redirected} is_a edge(s) to obsolete terms redirected to replaced_by")
        if dropped:
            graph.warnings.append(f"{dropped} is_a edge(s) to obsolete terms without a single live replaced_by dropped")
        return graph


def _need(value: _T) -> _T:
    """`value` when truthy; otherwise the file is outside the subset."""
    if not value:
        raise _NotSimple()
    return value


def _unescape(text: str) -> str:
    return _UNESCAPE.sub(lambda m: _ESCAPED[m.group(1)], text) if "\\" in text else text
