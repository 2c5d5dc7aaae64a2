"""UMLS Metathesaurus loader: the RRF files of a release's `META/` folder (docs/formats.md, "UMLS RRF").

Mapping: a concept per CUI (uid `UMLS:C0011849`, code the CUI) that keeps at least one name
after the filters (sources `sab`, languages `lang`, suppressible names unless `suppress`).
- MRCONSO: the preferred name is the atom with the best MRRANK rank (when MRRANK.RRF is
  there), then TS=P, STT=PF, ISPREF=Y; without MRRANK, TS/STT/ISPREF then a term-type order.
  Every other name is an EXACT synonym. Each atom's source code is an alt id, spelled as the
  project's own loaders spell it (`MSH` -> `MESH:D003920`, `SNOMEDCT_US` -> `SNOMEDCT:…`,
  `MDR` -> `MEDDRA:…`; a code that is already a CURIE, e.g. HPO's `HP:0001250`, as is), so
  MEDIC, MeSH and SNOMED CT gold ids resolve to the CUI.
- MRSTY: the semantic type names, joined by `|`, as the concept's `level_label` (the graph's
  Concept has no free property slot; level_label is the per-concept label the stores keep).
- MRDEF: the first definition from a chosen source.
- MRREL: IS_A from PAR/CHD rows (and RELA `isa` / `inverse_isa`) of the chosen sources. REL is
  the relation of CUI2 to CUI1: PAR means CUI2 is the parent of CUI1, CHD its child.

The files are streamed line by line (a full MRCONSO is 2 GB): memory grows with the concepts
kept, not the file (every CUI of MRCONSO is remembered in a 10 MB bitmap to tell a dangling
MRREL row from a filtered one). A row with the wrong column count, a MRREL row naming a CUI
that MRCONSO lacks (unless `allow_dangling`) or a folder without MRCONSO.RRF is an InputError
naming file and line.
"""
from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from kgnorm.errors import InputError
from kgnorm.graph.ontology_graph import Concept, OntologyGraph

from .common import finish, iter_lines, require_path

FORMAT = "umls"
DEFAULT_NAME = "umls"
COLUMNS = {"MRCONSO": 18, "MRREL": 16, "MRSTY": 6, "MRRANK": 4, "MRDEF": 8}
# UMLS source abbreviation -> the CURIE prefix the project's other loaders use for its codes
PREFIX = {"MSH": "MESH", "SNOMEDCT_US": "SNOMEDCT", "MDR": "MEDDRA", "OMIM": "OMIM"}
# Without MRRANK: term types in the order a name is preferred (earlier is better).
TTY_ORDER = ("MH", "PT", "PN", "PEP", "FN", "NM", "LLT", "HT", "OAP", "SY", "SYN", "ET", "ETAL", "AB", "ACR")
_TTY_SCORE = {tty: len(TTY_ORDER) - i for i, tty in enumerate(TTY_ORDER)}
_CURIE = re.compile(r"^[A-Z][A-Za-z]*:\S+$")
_RELEASE = re.compile(r"(\d{4}A[AB])")
_ISA = {"isa": True, "inverse_isa": False}  # RELA -> CUI2 is the child (True) or the parent


class _Acc:
    """What MRCONSO says about one kept CUI (slots: millions of these may be held)."""

    __slots__ = ("key", "name", "names", "alt_ids")

    def __init__(self) -> None:
        self.key: tuple = ()
        self.name = ""
        self.names: list[str] = []
        self.alt_ids: list[str] = []


class _Cuis:
    """Every CUI of MRCONSO (kept or not) in a bitmap; a CUI outside `C` + 7 digits in a set."""

    def __init__(self) -> None:
        self._bits = bytearray(10_000_000 // 8 + 1)
        self._other: set[str] = set()

    def add(self, cui: str) -> None:
        n = _cui_number(cui)
        if n is None:
            self._other.add(cui)
        else:
            self._bits[n >> 3] |= 1 << (n & 7)

    def __contains__(self, cui: str) -> bool:
        n = _cui_number(cui)
        return cui in self._other if n is None else bool(self._bits[n >> 3] & (1 << (n & 7)))


def _cui_number(cui: str) -> int | None:
    return int(cui[1:]) if len(cui) == 8 and cui[0] == "C" and cui[1:].isascii() and cui[1:].isdigit() else None


def load(path: str | Path, name: str | None = None, *, allow_dangling: bool = False,
         sab: str | Iterable[str] | None = None, lang: str | Iterable[str] | None = "ENG",
         suppress: bool = False, **options: Any) -> OntologyGraph:
    """Load a UMLS release folder (META/ or the folder above it) into a finalized graph.

    `sab`: sources to keep (names and IS_A), None for all; `lang`: languages (None or "ALL" for
    all); `suppress`: keep suppressible names (SUPPRESS other than N) too."""
    meta = _meta_dir(require_path(path, "UMLS folder"))
    sabs, langs = _as_set(sab), _as_set(lang)
    if langs:
        langs = {v.upper() for v in langs}
        if "ALL" in langs:
            langs = None
    graph = OntologyGraph(name=name or DEFAULT_NAME, format=FORMAT, source_path=str(meta),
                          version=_release(meta))
    ranks = _ranks(meta)
    seen = _Cuis()
    accs = _read_conso(meta / "MRCONSO.RRF", sabs, langs, suppress, ranks, seen, graph)
    types = _read_types(meta / "MRSTY.RRF", accs) if (meta / "MRSTY.RRF").exists() else {}
    defs = _read_defs(meta / "MRDEF.RRF", accs, sabs, suppress) if (meta / "MRDEF.RRF").exists() else {}
    for cui in accs:  # each accumulator is freed once its concept is made (the keys stay for MRREL)
        acc = accs[cui]
        accs[cui] = None  # type: ignore[assignment]
        con = Concept(uid=f"UMLS:{cui}", code=cui, name=acc.name, definition=defs.get(cui, ""),
                      level_label="|".join(sorted(types.get(cui, ()))))
        for text in acc.names:
            con.add_synonym(text, "EXACT")
        for alt in acc.alt_ids:
            con.add_alt_id(alt)
        graph.add_concept(con)
    if (meta / "MRREL.RRF").exists():
        _read_rels(meta / "MRREL.RRF", accs, sabs, suppress, seen, allow_dangling, graph)
    else:
        graph.warnings.append(f"{meta}: no MRREL.RRF, so no IS_A edges")
    return finish(graph, allow_dangling)


def rows(path: Path, columns: int) -> Iterator[tuple[int, list[str]]]:
    """(line number, fields) of an RRF file; a row with another column count is an InputError."""
    for lineno, line in iter_lines(path):
        if not line:
            continue
        fields = line.split("|")
        if len(fields) == columns + 1 and fields[-1] == "":
            fields.pop()
        elif len(fields) != columns:
            found = len(fields) - 1 if fields[-1] == "" else len(fields)
            raise InputError(f"{columns} columns expected in {path.stem}, found {found}", path=path, line=lineno)
        yield lineno, fields


def _meta_dir(path: Path) -> Path:
    if path.is_file():
        path = path.parent
    for cand in (path, path / "META"):
        if (cand / "MRCONSO.RRF").is_file():
            return cand
    raise InputError("no MRCONSO.RRF here (a UMLS release's META folder holds it)", path=path)


def _as_set(value: str | Iterable[str] | None) -> set[str] | None:
    if value is None:
        return None
    items = value.split(",") if isinstance(value, str) else list(value)
    out = {v.strip() for v in items if v and v.strip()}
    return out or None


def _release(meta: Path) -> str:
    for part in reversed(meta.resolve().parts):
        m = _RELEASE.search(part)
        if m:
            return m.group(1)
    return ""


def _ranks(meta: Path) -> dict[tuple[str, str], int] | None:
    """MRRANK: (SAB, TTY) -> rank, a higher rank preferred; None when the file is absent."""
    path = meta / "MRRANK.RRF"
    if not path.exists():
        return None
    return {(f[1], f[2]): int(f[0]) for _, f in rows(path, COLUMNS["MRRANK"]) if f[0].isascii() and f[0].isdigit()}


def _read_conso(path: Path, sabs: set[str] | None, langs: set[str] | None, suppress: bool,
                ranks: dict[tuple[str, str], int] | None, seen: _Cuis, graph: OntologyGraph) -> dict[str, _Acc]:
    accs: dict[str, _Acc] = {}
    skipped: Counter[str] = Counter()
    total = 0
    last = ""
    sources: set[str] = set()
    for _, f in rows(path, COLUMNS["MRCONSO"]):
        total += 1
        cui, lat, src, supp = f[0], f[1], f[11], f[16]
        sources.add(src)
        if cui != last:  # MRCONSO is sorted by CUI: one bitmap update per concept, not per row
            seen.add(cui)
            last = cui
        if langs is not None and lat not in langs:
            skipped["in another language"] += 1
            continue
        if sabs is not None and src not in sabs:
            skipped["from another source"] += 1
            continue
        if supp != "N" and not suppress:
            skipped["suppressible (--suppress keeps them)"] += 1
            continue
        acc = accs.get(cui)
        if acc is None:
            acc = accs[cui] = _Acc()
        text, tty = f[14], f[12]
        flags = (f[2] == "P", f[4] == "PF", f[6] == "Y")
        key = ((ranks.get((src, tty), 0), *flags) if ranks is not None
               else (*flags, _TTY_SCORE.get(tty, 0)))
        if text not in acc.names:
            acc.names.append(text)
        if key > acc.key:
            acc.key, acc.name = key, text
        alt = alt_id(src, f[13])
        if alt and alt not in acc.alt_ids:
            acc.alt_ids.append(alt)
    if total and not accs:
        raise InputError(f"no name kept of {total:,}: sources {','.join(sorted(sabs or ['all']))}, languages "
                         f"{','.join(sorted(langs or ['all']))} (the file's sources: {', '.join(sorted(sources))})",
                         path=path)
    if skipped:
        graph.warnings.append(f"{path}: {total:,} names read, {total - sum(skipped.values()):,} kept for "
                              f"{len(accs):,} concepts; skipped " +
                              ", ".join(f"{n:,} {why}" for why, n in sorted(skipped.items())))
    return accs


def alt_id(sab: str, code: str) -> str | None:
    """A source code as the CURIE the project's loaders use (`MSH`, `D003920` -> `MESH:D003920`)."""
    if not code or code == "NOCODE":
        return None
    if _CURIE.match(code):
        return code
    return f"{PREFIX.get(sab, sab)}:{code}"


def _read_types(path: Path, accs: dict[str, _Acc]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for _, f in rows(path, COLUMNS["MRSTY"]):
        if f[0] in accs:
            out.setdefault(f[0], set()).add(f[3])
    return out


def _read_defs(path: Path, accs: dict[str, _Acc], sabs: set[str] | None, suppress: bool) -> dict[str, str]:
    out: dict[str, str] = {}
    for _, f in rows(path, COLUMNS["MRDEF"]):
        cui, src, text, supp = f[0], f[4], f[5], f[6]
        if cui in accs and cui not in out and (sabs is None or src in sabs) and (suppress or supp == "N"):
            out[cui] = text
    return out


def _read_rels(path: Path, accs: dict[str, _Acc], sabs: set[str] | None, suppress: bool, seen: _Cuis,
               allow_dangling: bool, graph: OntologyGraph) -> None:
    dangling: list[int] = []
    filtered = 0
    for lineno, f in rows(path, COLUMNS["MRREL"]):
        cui1, rel, cui2, rela, src, supp = f[0], f[3], f[4], f[7], f[10], f[14]
        if rel == "PAR":
            child, parent = cui1, cui2
        elif rel == "CHD":
            child, parent = cui2, cui1
        elif rela in _ISA:
            child, parent = (cui2, cui1) if _ISA[rela] else (cui1, cui2)
        else:
            continue
        if (sabs is not None and src not in sabs) or (supp not in ("N", "") and not suppress):
            continue
        missing = next((c for c in (cui1, cui2) if c not in seen), None)
        if missing is not None:
            if not allow_dangling:
                raise InputError(f"{missing} is not in MRCONSO.RRF (use --allow-dangling to skip such rows)",
                                 path=path, line=lineno)
            dangling.append(lineno)
            continue
        if child not in accs or parent not in accs:
            filtered += 1  # a concept kept out by the language / suppress filters
            continue
        graph.add_is_a(f"UMLS:{child}", f"UMLS:{parent}")  # both ends are concepts: no origin kept
    if dangling:
        graph.warnings.append(f"{path}:{dangling[0]}: {len(dangling):,} IS_A row(s) naming a CUI that "
                              f"MRCONSO.RRF lacks skipped")
    if filtered:
        graph.warnings.append(f"{path}: {filtered:,} IS_A row(s) to a concept without a kept name skipped")
