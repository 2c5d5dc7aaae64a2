"""Readers for mention files: PubTator, BioSyn ``.concept``, TSV, and plain name lists.

Why streaming generators: corpora and name lists are read once per run, and a bad line must
be reported as ``file:line`` (InputError) instead of a stack trace deep inside a trainer.
Layouts and pitfalls: docs/formats.md, sections "BioSyn .concept", "PubTator" and "Mention TSV".
"""
from __future__ import annotations

import bisect
import re
import warnings
from collections.abc import Iterator
from itertools import groupby
from pathlib import Path

from kgnorm.errors import InputError
from kgnorm.mentions.seen_ids import SeenIds, first_line_with_id
from kgnorm.mentions.types import Document, Mention
from kgnorm.text.abbreviations import abbreviations_from_mentions, document_abbreviations, find_abbreviations

__all__ = [
    "curie", "parse_gold", "iter_lines", "read_pubtator", "read_concept", "read_tsv",
    "read_mentions", "read_mentions_with_abbreviations", "read_names", "doc_abbreviations",
    "sentence_spans", "sniff_format", "FORMATS", "NIL_PART",
]

FORMATS = ("concept", "pubtator", "tsv")
NIL_PART = "-1"

_MESH = re.compile(r"^[CD](?:\d{6}|\d{9})?$")  # "C" alone is MEDIC's root line
_UMLS = re.compile(r"^C\d{7}$")
_OMIM = re.compile(r"^\d{6}$")
_PREFIX_CASE = {"MESH": "MESH", "OMIM": "OMIM", "MIM": "OMIM", "UMLS": "UMLS",
                "SNOMEDCT": "SNOMEDCT", "SNOMED": "SNOMEDCT", "MEDDRA": "MEDDRA", "HP": "HP"}
_PUBTATOR_FIRST = re.compile(r"^\d+\|t\|")
_CONCEPT_LINE = re.compile(r"^[^|]*\|\|-?\d+\|-?\d+\|\|[^|]*\|\|.*\|\|.+$")
_SENTENCE_END = re.compile(r"[.!?](?=\s)")


# --------------------------------------------------------------------------- identifiers

def curie(raw_id: str) -> str:
    """Normalize one concept ID to a CURIE: bare MeSH ``D…``/``C…`` -> ``MESH:…``, bare
    6-digit OMIM -> ``OMIM:…``, a 7-digit ``C`` (UMLS CUI) -> ``UMLS:…``; an existing prefix
    is kept with its canonical case (``mesh:D1`` -> ``MESH:D1``); anything else unchanged.

    Raises ValueError for an empty ID or ``-1`` (use parse_gold for whole gold fields)."""
    rid = raw_id.strip()
    if not rid or rid == "-1":
        raise ValueError(f"not a concept ID: {raw_id!r}")
    if ":" in rid:
        prefix, _, local = rid.partition(":")
        canon = _PREFIX_CASE.get(prefix.strip().upper())
        local = local.strip()
        if not local:
            raise ValueError(f"not a concept ID: {raw_id!r}")
        return f"{canon}:{local}" if canon else f"{prefix.strip()}:{local}"
    if _UMLS.match(rid):
        return "UMLS:" + rid
    if _MESH.match(rid):
        return "MESH:" + rid
    if _OMIM.match(rid):
        return "OMIM:" + rid
    return rid


def parse_gold(field: str) -> list[str]:
    """A gold field -> one CURIE per composite part: ``-1``/empty -> []; ``A|B`` -> two parts;
    ``A+B`` (one mention meaning both) stays one part ``MESH:A+MESH:B``. A composite part
    without a concept (BC5CDR dev has ``D002544|-1``) stays ``-1`` (NIL_PART), so the parts
    still line up with the mention's parts."""
    field = field.strip()
    if not field or field == NIL_PART:
        return []
    gold = []
    for part in field.split("|"):
        if part.strip() == NIL_PART:
            gold.append(NIL_PART)
        else:
            gold.append("+".join(curie(x) for x in part.split("+")))
    return gold


# --------------------------------------------------------------------------- line access

def iter_lines(path: str | Path) -> Iterator[tuple[int, str]]:
    """(1-based line number, line without its LF/CRLF) for a UTF-8 file, streamed.

    Decoding per line lets an undecodable byte be reported with its exact line and byte
    offset; a leading BOM is dropped."""
    p = Path(path)
    try:
        fh = open(p, "rb")
    except FileNotFoundError:
        raise InputError("file not found", p) from None
    except IsADirectoryError:
        raise InputError("is a directory, expected a file", p) from None
    except OSError as exc:
        raise InputError(f"cannot open: {exc.strerror or exc}", p) from None
    with fh:
        offset = 0
        for lineno, raw in enumerate(fh, 1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise InputError(
                    f"not valid UTF-8: byte 0x{raw[exc.start]:02x} at byte offset "
                    f"{offset + exc.start} (column {exc.start + 1})", p, lineno) from None
            offset += len(raw)
            if lineno == 1 and line.startswith("\ufeff"):
                line = line[1:]
            if line.endswith("\n"):
                line = line[:-1]
                if line.endswith("\r"):
                    line = line[:-1]
            yield lineno, line


def _gold(field: str, path: Path, lineno: int) -> list[str]:
    try:
        return parse_gold(field)
    except ValueError as exc:
        raise InputError(f"bad concept ID field {field!r}: {exc}", path, lineno) from None


# --------------------------------------------------------------------------- PubTator

def sentence_spans(text: str, breaks: tuple[int, ...] = ()) -> list[tuple[int, int]]:
    """(start, end) of the sentences of `text`: a cut after '.', '!' or '?' followed by
    whitespace, and at each offset in `breaks` (the title/abstract seam)."""
    cuts = {m.end() for m in _SENTENCE_END.finditer(text)}
    cuts.update(b for b in breaks if 0 < b < len(text))
    spans = []
    start = 0
    for cut in sorted(cuts):
        spans.append((start, cut))
        start = cut
    spans.append((start, len(text)))
    out = []
    for s, e in spans:  # trim the whitespace between sentences
        while s < e and text[s].isspace():
            s += 1
        while e > s and text[e - 1].isspace():
            e -= 1
        out.append((s, e))
    return out


def _context(text: str, spans: list[tuple[int, int]], starts: list[int],
             start: int, end: int) -> str:
    """The sentence(s) covering [start, end)."""
    i = max(0, bisect.bisect_right(starts, start) - 1)
    j = max(i, bisect.bisect_left(starts, end) - 1)
    return text[spans[i][0]:max(spans[j][1], min(end, len(text)))]


def read_pubtator(path: str | Path) -> Iterator[Document]:
    """Stream the documents of a PubTator file (docs/formats.md, "PubTator").

    Offsets index ``title + " " + abstract``; 4-column relation rows (``CID``) are skipped;
    6 or 7 columns; annotation lines are split on TAB without stripping; a duplicate PMID is
    warned about and still yielded. Each mention's ``context`` is its sentence."""
    p = Path(path)
    seen: set[str] = set()
    doc: Document | None = None
    has_abstract = False
    spans: list[tuple[int, int]] | None = None
    starts: list[int] = []
    text = ""

    for lineno, line in iter_lines(p):
        if not line.strip():
            if doc is not None:
                yield doc
                doc = None
            continue
        bar, tab = line.find("|"), line.find("\t")
        if bar >= 0 and (tab < 0 or bar < tab):
            fields = line.split("|", 2)
            if len(fields) != 3 or fields[1] not in ("t", "a") or not fields[0].strip():
                raise InputError("expected 'PMID|t|title' or 'PMID|a|abstract'", p, lineno)
            pmid, kind, body = fields[0].strip(), fields[1], fields[2]
            if kind == "t":
                if doc is not None:  # block without a blank line before the next one
                    yield doc
                if pmid in seen:
                    warnings.warn(f"{p}:{lineno}: duplicate PMID {pmid}; keeping both "
                                  "documents", stacklevel=2)
                seen.add(pmid)
                doc = Document(doc_id=pmid, title=body)
                has_abstract = False
                spans = None
            else:
                if doc is None or doc.doc_id != pmid or has_abstract:
                    raise InputError(f"abstract line for PMID {pmid} does not follow its "
                                     "title line", p, lineno)
                if doc.mentions:
                    raise InputError("abstract line after annotation lines", p, lineno)
                doc.abstract = body
                has_abstract = True
            continue
        if tab < 0:
            raise InputError("neither a 'PMID|t|' / 'PMID|a|' header nor a TAB-separated "
                             "annotation line", p, lineno)
        cols = line.split("\t")
        if len(cols) == 4 and not cols[1].strip().lstrip("-").isdigit():
            continue  # relation row: PMID CID chemical disease
        if len(cols) not in (6, 7):
            raise InputError(f"annotation line has {len(cols)} TAB-separated columns, "
                             "expected 6 or 7 (or a 4-column CID row)", p, lineno)
        pmid = cols[0].strip()
        if doc is None or pmid != doc.doc_id:
            raise InputError(f"annotation for PMID {pmid} outside its document block",
                             p, lineno)
        try:
            start, end = int(cols[1]), int(cols[2])
        except ValueError:
            raise InputError(f"offsets must be integers, got {cols[1]!r} {cols[2]!r}",
                             p, lineno) from None
        if spans is None:
            text = doc.text
            spans = sentence_spans(text, (len(doc.title),))
            starts = [s for s, _ in spans]
        if not 0 <= start <= end <= len(text):
            raise InputError(f"span {start}-{end} outside the document text "
                             f"(length {len(text)})", p, lineno)
        parts = cols[6].split("|") if len(cols) == 7 and cols[6].strip() else []
        doc.mentions.append(Mention(
            text=cols[3], doc_id=pmid, start=start, end=end, type=cols[4].strip(),
            gold=_gold(cols[5], p, lineno), parts=parts,
            context=_context(text, spans, starts, start, end)))
    if doc is not None:
        yield doc


# --------------------------------------------------------------------------- .concept

def read_concept(path: str | Path) -> Iterator[Mention]:
    """Stream BioSyn ``.concept`` lines ``pmid||start|end||type||mention||cui`` (docs/formats.md,
    "BioSyn .concept"); a mention text holding ``|`` gives its parts."""
    p = Path(path)
    for lineno, line in iter_lines(p):
        if not line.strip():
            continue
        head = line.split("||", 3)
        if len(head) != 4 or "||" not in head[3]:
            raise InputError("expected 5 '||'-separated fields "
                             "'pmid||start|end||type||mention||cui'", p, lineno)
        pmid, span, mtype = head[0].strip(), head[1], head[2].strip()
        text, cui = head[3].rsplit("||", 1)
        offsets = span.split("|")
        try:
            if len(offsets) != 2:
                raise ValueError
            start, end = int(offsets[0]), int(offsets[1])
        except ValueError:
            raise InputError(f"span field must be 'start|end', got {span!r}", p, lineno) \
                from None
        if not text.strip():
            raise InputError("empty mention text", p, lineno)
        parts = text.split("|") if "|" in text else []
        yield Mention(text=text, doc_id=pmid, start=start, end=end, type=mtype,
                      gold=_gold(cui, p, lineno), parts=parts)


# --------------------------------------------------------------------------- TSV

def read_tsv(path: str | Path) -> Iterator[Mention]:
    """Stream a TSV with a header naming ``id`` and ``text`` and optionally ``doc_id``,
    ``context``, ``gold`` (CURIEs joined by ``|``), ``type``, ``parts``; no quoting."""
    p = Path(path)
    lines = iter_lines(p)
    header: list[str] | None = None
    for lineno, line in lines:
        if line.strip():
            header = [h.strip().lower() for h in line.split("\t")]
            break
    if header is None:
        raise InputError("empty file, expected a TSV header with 'id' and 'text'", p)
    missing = [c for c in ("id", "text") if c not in header]
    if missing:
        raise InputError(f"TSV header lacks column(s) {', '.join(missing)} "
                         f"(has: {', '.join(header)})", p, lineno)
    col = {name: i for i, name in enumerate(header)}
    seen = SeenIds()
    for lineno, line in lines:
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) != len(header):
            raise InputError(f"{len(fields)} TAB-separated fields, header has {len(header)}",
                             p, lineno)

        def get(name: str) -> str:
            return fields[col[name]] if name in col else ""

        mid, text = get("id").strip(), get("text")
        if not mid:
            raise InputError("empty id", p, lineno)
        if not text.strip():
            raise InputError("empty text", p, lineno, record=mid)
        if seen.add(mid):  # links of both would land on one Mention node
            first = first_line_with_id(iter_lines(p), col["id"], mid, lineno)
            if first is not None:
                raise InputError(f"duplicate id {mid} (first on line {first}); each mention needs its own id",
                                 p, lineno)
        parts = get("parts")
        yield Mention(text=text, id=mid, doc_id=get("doc_id").strip(), context=get("context"),
                      type=get("type").strip(), gold=_gold(get("gold"), p, lineno),
                      parts=parts.split("|") if parts.strip() else [])


# --------------------------------------------------------------------------- dispatch

def sniff_format(path: str | Path) -> str:
    """'concept', 'pubtator' or 'tsv' from the extension or the first non-empty line."""
    p = Path(path)
    if p.suffix.lower() == ".concept":
        return "concept"
    for _, line in iter_lines(p):
        if not line.strip():
            continue
        if _PUBTATOR_FIRST.match(line):
            return "pubtator"
        if "\t" in line:
            header = {h.strip().lower() for h in line.split("\t")}
            if {"id", "text"} <= header:
                return "tsv"
        if _CONCEPT_LINE.match(line):
            return "concept"
        break
    raise InputError("unrecognized mention file layout; tried concept ('.concept' extension "
                     "or 'pmid||start|end||type||mention||cui' lines), pubtator (first line "
                     "'PMID|t|title') and tsv (header with 'id' and 'text' columns)", p)


def read_mentions(path: str | Path, fmt: str | None = None) -> Iterator[Mention]:
    """Mentions of a file in any supported layout; `fmt` in FORMATS or None to sniff.

    The layout is decided (and a bad one reported) at call time; reading is lazy."""
    if fmt is not None:
        fmt = fmt.strip().lower()
        if fmt not in FORMATS:
            raise InputError(f"unknown mention format {fmt!r}; use one of "
                             f"{', '.join(FORMATS)}", path)
    else:
        fmt = sniff_format(path)
    if fmt == "concept":
        return read_concept(path)
    if fmt == "tsv":
        return read_tsv(path)
    return (m for doc in read_pubtator(path) for m in doc.mentions)


def read_mentions_with_abbreviations(path: str | Path, fmt: str | None = None
                                     ) -> Iterator[tuple[Mention, dict[str, str]]]:
    """(mention, short -> long forms of its document): what TextPipeline.prepare needs.

    PubTator: the document's title and abstract (one dict shared by its mentions); TSV: the
    mention's `context` column; .concept: no text, so the document's own mentions and their
    offsets (:func:`~kgnorm.text.abbreviations.abbreviations_from_mentions`; a document's
    lines are consecutive in these files, so one document is held at a time)."""
    if not Path(path).exists():
        raise InputError("no such file", path=path)
    kind = fmt.strip().lower() if fmt is not None else sniff_format(path)
    if kind == "pubtator":
        return ((m, abbr) for doc in read_pubtator(path)
                for abbr in (doc_abbreviations(doc),) for m in doc.mentions)
    if kind == "concept":
        return ((m, abbr) for _, group in groupby(read_concept(path), key=lambda m: m.doc_id)
                for ms in (list(group),)
                for abbr in (abbreviations_from_mentions((m.text, m.start, m.end) for m in ms),)
                for m in ms)
    return ((m, find_abbreviations(m.context) if m.context else {})
            for m in read_mentions(path, kind))  # read_mentions rejects an unknown kind


def read_names(path: str | Path) -> list[str]:
    """One name per line, kept as given (minus the line end); an empty line is an error."""
    p = Path(path)
    names = []
    for lineno, line in iter_lines(p):
        if not line.strip():
            raise InputError("empty line; expected one name per line", p, lineno)
        names.append(line)
    if not names:
        raise InputError("no names in file", p)
    return names


def doc_abbreviations(doc: Document) -> dict[str, str]:
    """Short form -> long form defined in a document's title and abstract (or spelled by the
    title's words or another of its mentions: kgnorm.text.abbreviations.document_abbreviations)."""
    return document_abbreviations(doc.title, doc.text, ((m.text, m.start, m.end) for m in doc.mentions))
