"""Readers of raw documents: plain text, JSONL, PubTator and BioC XML, streamed one document at a
time (memory follows the largest document, not the corpus).

A bad file is one line naming the file and the line (or the document id): a byte that is not
UTF-8, a JSONL line without an id, a BioC document without passages."""
from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path

from kgnorm.digests import update_with_file
from kgnorm.documents.types import Annotation, TextDocument
from kgnorm.errors import InputError

FORMATS = ("text", "jsonl", "pubtator", "bioc")


def read_documents(path: str | Path, fmt: str) -> Iterator[TextDocument]:
    """The documents of `path` in layout `fmt` (one of FORMATS); checked now, read lazily."""
    fmt = (fmt or "").strip().lower()
    if fmt not in FORMATS:
        raise InputError(f"unknown input format {fmt!r}; use one of {', '.join(FORMATS)}", path)
    p = Path(path)
    if not p.exists():
        raise InputError("no such file or directory", p)
    if p.is_dir() and fmt != "text":
        raise InputError(f"is a directory; only --input-format text reads a directory of .txt files", p)
    return {"text": read_text, "jsonl": read_jsonl, "pubtator": read_pubtator_text, "bioc": read_bioc}[fmt](p)


def sniff_document_format(path: str | Path) -> str:
    """The layout a documents file's suffix names (``.xml``/``.bioc``: BioC, ``.jsonl``/``.json``:
    JSONL), else PubTator."""
    suffix = Path(path).suffix.lower()
    return {".xml": "bioc", ".bioc": "bioc", ".jsonl": "jsonl", ".json": "jsonl"}.get(suffix, "pubtator")


def input_digest(path: str | Path) -> str:
    """The identity of an input (a file's bytes; a directory's .txt names and bytes): mention and
    document uids start with it, so two inputs that reuse a document id never share nodes."""
    p = Path(path)
    h = hashlib.sha1()
    for f in (sorted(p.glob("*.txt")) if p.is_dir() else [p]):
        h.update(f.name.encode("utf-8") + b"\0" if p.is_dir() else b"")
        update_with_file(h, f)
    return h.hexdigest()


def _decode(raw: bytes, path: Path) -> str:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise InputError(f"not valid UTF-8: byte 0x{raw[exc.start]:02x} at byte offset {exc.start}", path,
                         line) from None
    return text[1:] if text.startswith("\ufeff") else text


def read_text(path: Path) -> Iterator[TextDocument]:
    """A file is one document, a directory one per ``.txt`` file (sorted); the stem is the id."""
    files = sorted(path.glob("*.txt")) if path.is_dir() else [path]
    if path.is_dir() and not files:
        raise InputError("no .txt files in this directory", path)
    for f in files:
        yield TextDocument(f.stem, _decode(f.read_bytes(), f), line=1)


def read_jsonl(path: Path) -> Iterator[TextDocument]:
    """One object a line: ``id`` and ``text``, or ``title`` and ``abstract`` (text = title + " " +
    abstract, as PubTator has it); optional ``mentions`` (start, end, text, type, ids) are kept."""
    from kgnorm.mentions.readers import iter_lines

    for lineno, line in iter_lines(path):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(f"not JSON: {exc.msg} (column {exc.colno})", path, lineno) from None
        except RecursionError:
            raise InputError("not JSON kgnorm reads: nested too deeply", path, lineno) from None
        if not isinstance(obj, dict):
            raise InputError("expected a JSON object", path, lineno)
        doc_id = obj.get("id")
        if doc_id is None or not str(doc_id).strip():
            raise InputError("no 'id'; each line needs an 'id' and a 'text' (or 'title' and 'abstract')",
                             path, lineno)
        if isinstance(obj.get("text"), str):
            text, title_end = obj["text"], None
        elif isinstance(obj.get("title"), str) or isinstance(obj.get("abstract"), str):
            title, abstract = obj.get("title") or "", obj.get("abstract") or ""
            text, title_end = f"{title} {abstract}", len(title)
        else:
            raise InputError("no 'text' (or 'title' and 'abstract') string", path, lineno, record=str(doc_id))
        try:
            anns = [Annotation(int(m["start"]), int(m["end"]), str(m["text"]), str(m.get("type", "")),
                               tuple(m.get("ids") or ()), m.get("score"), m.get("confidence"))
                    for m in obj.get("mentions") or ()]
        except (KeyError, TypeError, ValueError) as exc:
            raise InputError(f"bad mention ({exc}); a mention has start, end, text [type, ids]", path, lineno,
                             record=str(doc_id)) from None
        yield TextDocument(str(doc_id).strip(), text, title_end, lineno, anns)


def read_pubtator_text(path: Path) -> Iterator[TextDocument]:
    """PubTator documents (title + " " + abstract) with their annotation lines as annotations."""
    from kgnorm.mentions.readers import read_pubtator

    for doc in read_pubtator(path):
        anns = [Annotation(m.start, m.end, m.text, m.type, tuple(m.gold)) for m in doc.mentions]
        yield TextDocument(doc.doc_id, doc.text, len(doc.title), None, anns)


def read_bioc(path: Path) -> Iterator[TextDocument]:
    """BioC XML documents: passages placed at their offsets (a gap is filled with spaces); a first
    passage of type ``title`` followed by one at its end + 1 makes the PubTator layout."""
    from bioc.biocxml import BioCXMLDocumentReader
    from lxml import etree

    try:
        reader = BioCXMLDocumentReader(str(path))
        for doc in reader:
            yield _bioc_document(doc, path)
    except etree.XMLSyntaxError as exc:
        raise InputError(f"not BioC XML: {exc.msg}", path, exc.lineno) from None
    except UnicodeDecodeError as exc:
        raise InputError(f"not valid UTF-8: {exc.reason}", path) from None
    except (AttributeError, KeyError, TypeError, ValueError) as exc:  # the bioc library on a well-formed
        # file that is not BioC: a root other than <collection>, an offset or length missing or not a number
        raise InputError(f"not BioC XML ({type(exc).__name__}: {exc})", path) from None


def _bioc_document(doc, path: Path) -> TextDocument:
    passages = sorted(doc.passages, key=lambda p: p.offset)
    if not passages:
        raise InputError("document has no passages (no text to annotate)", path, record=doc.id)
    text = ""
    for p in passages:
        if p.offset < len(text):
            raise InputError(f"passage at offset {p.offset} overlaps the one before (ends at {len(text)})", path,
                             record=doc.id)
        text += " " * (p.offset - len(text)) + (p.text or "")
    first = passages[0]
    title_end = None
    if (first.infons.get("type") == "title" and first.offset == 0
            and (len(passages) == 1 or passages[1].offset == len(first.text or "") + 1)):
        title_end = len(first.text or "")
    anns = []
    for p in passages:
        for a in p.annotations:
            if not a.locations:
                continue
            loc = a.total_span
            ids = a.infons.get("identifier") or a.infons.get("MESH") or ""
            anns.append(Annotation(loc.offset, loc.offset + loc.length, a.text or "", a.infons.get("type", ""),
                                   tuple(i for i in ids.replace(",", "|").split("|") if i.strip()),
                                   _number(a.infons.get("score")), _number(a.infons.get("confidence"))))
    return TextDocument(str(doc.id), text, title_end, None, anns)


def _number(value: str | None) -> float | None:
    """A BioC infon written by kgnorm (score, confidence) as a number; absent or not one: None."""
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None
