"""Writers of annotated documents: PubTator, BioC XML (the `bioc` package's encoder) and JSONL,
one document at a time into an open text file.

Offsets round-trip: a mention's [start, end) indexes the text each format carries. PubTator
holds one line per title and abstract, so a line break inside them is written as a space (same
length: offsets unchanged); a document without a title is written whole as the title line and
an empty abstract (the reader's text is then the same text plus a trailing space)."""
from __future__ import annotations

import json
from typing import Protocol, TextIO

from kgnorm.documents.types import Annotation, TextDocument

FORMATS = ("pubtator", "bioc", "jsonl")
NIL = "-1"


class DocumentWriter(Protocol):
    def write(self, doc: TextDocument, annotations: list[Annotation]) -> None: ...

    def close(self) -> None: ...


def _one_line(text: str) -> str:
    return text.replace("\r", " ").replace("\n", " ")


class PubTatorWriter:
    def __init__(self, out: TextIO) -> None:
        self.out = out

    def write(self, doc: TextDocument, annotations: list[Annotation]) -> None:
        title, abstract = (doc.title, doc.abstract) if doc.title_end is not None else (doc.text, "")
        lines = [f"{doc.doc_id}|t|{_one_line(title)}", f"{doc.doc_id}|a|{_one_line(abstract)}"]
        lines += [f"{doc.doc_id}\t{a.start}\t{a.end}\t{_one_line(a.text)}\t{a.type}\t{'|'.join(a.ids) or NIL}"
                  for a in annotations]
        self.out.write("\n".join(lines) + "\n\n")

    def close(self) -> None:
        pass


class JsonlWriter:
    def __init__(self, out: TextIO) -> None:
        self.out = out

    def write(self, doc: TextDocument, annotations: list[Annotation]) -> None:
        obj = {"id": doc.doc_id, "text": doc.text,
               "mentions": [{"start": a.start, "end": a.end, "text": a.text, "type": a.type, "ids": list(a.ids),
                             **({"score": round(a.score, 4)} if a.score is not None else {}),
                             **({"confidence": round(a.confidence, 4)} if a.confidence is not None else {}),
                             **({"ontology": a.ontology} if a.ontology else {})}
                            for a in annotations]}
        self.out.write(json.dumps(obj, ensure_ascii=False) + "\n")

    def close(self) -> None:
        pass


class BioCWriter:
    """A BioC collection written document by document (bioc's own encoder for each document)."""

    def __init__(self, out: TextIO, source: str = "kgnorm annotate") -> None:
        self.out = out
        out.write("<?xml version='1.0' encoding='utf-8' standalone='yes'?>\n<collection>"
                  f"<source>{_xml_text(source)}</source><date></date><key>kgnorm.key</key>\n")

    def write(self, doc: TextDocument, annotations: list[Annotation]) -> None:
        import bioc
        from bioc.biocxml.encoder import encode_document
        from lxml import etree

        d = bioc.BioCDocument()
        d.id = doc.doc_id
        if doc.title_end is not None:
            parts = [("title", 0, doc.title), ("abstract", doc.title_end + 1, doc.abstract)]
        else:
            parts = [("text", 0, doc.text)]
        passages = []
        for kind, offset, text in parts:
            p = bioc.BioCPassage()
            p.offset, p.text = offset, text
            p.infons["type"] = kind
            passages.append(p)
            d.add_passage(p)
        for i, a in enumerate(annotations):
            ann = bioc.BioCAnnotation()
            ann.id, ann.text = str(i), a.text
            ann.infons["type"] = a.type
            ann.infons["identifier"] = "|".join(a.ids) or NIL
            if a.score is not None:
                ann.infons["score"] = f"{a.score:.4f}"
            if a.confidence is not None:
                ann.infons["confidence"] = f"{a.confidence:.4f}"
            if a.ontology:
                ann.infons["ontology"] = a.ontology
            ann.add_location(bioc.BioCLocation(a.start, a.end - a.start))
            home = max((p for p in passages if p.offset <= a.start), key=lambda p: p.offset)
            home.add_annotation(ann)
        self.out.write(etree.tostring(encode_document(d), encoding="unicode") + "\n")

    def close(self) -> None:
        self.out.write("</collection>\n")


def _xml_text(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def document_writer(out: TextIO, fmt: str) -> DocumentWriter:
    fmt = fmt.strip().lower()
    if fmt == "pubtator":
        return PubTatorWriter(out)
    if fmt == "jsonl":
        return JsonlWriter(out)
    if fmt == "bioc":
        return BioCWriter(out)
    from kgnorm.errors import KgnormError
    raise KgnormError(f"unknown output format {fmt!r}; use one of {', '.join(FORMATS)}")
