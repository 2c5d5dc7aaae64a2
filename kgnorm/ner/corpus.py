"""Annotated texts to train and select a mention detector on: PubTator or BioC XML files read into
(text, gold spans), with the corpus's entity types mapped onto the detector's labels.

Stricter than reading mentions for linking: a gold span whose offsets do not give its text
would teach the detector wrong boundaries, so it is refused (naming file and document)."""
from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from kgnorm.errors import InputError, KgnormError
from kgnorm.ner.spans import Span

__all__ = ["AnnotatedText", "TypeMap", "read_annotated", "parse_types", "FORMATS"]

FORMATS = ("pubtator", "bioc")


@dataclass
class AnnotatedText:
    """A text and its gold spans. ``known``: the character ranges someone labelled, where the text
    is only partly reviewed (a span in them is a mention, the rest of them is not; outside them
    nothing is known and a detector learns nothing there); None: the whole text is labelled.
    ``rejected``: spans someone said are not a mention -- that exact span, not its words, which can
    belong to a longer mention ("cancer" in "breast cancer")."""

    doc_id: str
    text: str
    spans: list[Span] = field(default_factory=list)
    known: list[tuple[int, int]] | None = None
    rejected: list[tuple[int, int]] = field(default_factory=list)


@dataclass(frozen=True)
class TypeMap:
    """Corpus type -> detector label (``None``: every type is its own label)."""

    mapping: dict[str, str] | None = None

    @property
    def labels(self) -> tuple[str, ...] | None:
        if self.mapping is None:
            return None
        return tuple(dict.fromkeys(self.mapping.values()))

    def label(self, corpus_type: str) -> str | None:
        if self.mapping is None:
            return corpus_type
        return self.mapping.get(corpus_type)


def parse_types(value: str | None) -> TypeMap:
    """``--types``: comma-separated ``TYPE`` (kept as its own label) or ``TYPE=LABEL`` items,
    e.g. ``SpecificDisease=Disease,DiseaseClass=Disease,Modifier=Disease,CompositeMention=Disease``."""
    if value is None or not value.strip():
        return TypeMap(None)
    mapping: dict[str, str] = {}
    for item in value.split(","):
        src, _, label = item.strip().partition("=")
        src, label = src.strip(), (label.strip() or src.strip())
        if not src:
            raise KgnormError(f"--types {value!r}: empty type name")
        mapping[src] = label
    return TypeMap(mapping)


def _sniff(path: Path) -> str:
    with open(path, "rb") as fh:
        head = fh.read(512).lstrip(b"\xef\xbb\xbf").lstrip()
    return "bioc" if head.startswith(b"<") else "pubtator"


def _checked(doc_id: str, text: str, start: int, end: int, mention: str, path: Path) -> Span | None:
    """The gold span, its offsets checked against the text (whitespace around the annotation's
    text column is ignored: NCBI-disease's training file has one with trailing spaces)."""
    if not 0 <= start <= end <= len(text) or text[start:end].strip() != mention.strip():
        raise InputError(f"annotation {start}-{end} {mention!r} does not match the document "
                         f"text there ({text[max(start, 0):max(end, 0)]!r})", path, record=doc_id)
    return Span(start, end, text[start:end], "") if end > start else None


def _read_pubtator(path: Path) -> list[tuple[str, str, list[tuple[Span, str]]]]:
    from kgnorm.mentions.readers import read_pubtator

    out = []
    for doc in read_pubtator(path):
        text = doc.text
        spans = []
        for m in doc.mentions:
            span = _checked(doc.doc_id, text, m.start, m.end, m.text, path)
            if span is not None:
                spans.append((span, m.type))
        out.append((doc.doc_id, text, spans))
    return out


def _read_bioc(path: Path) -> list[tuple[str, str, list[tuple[Span, str]]]]:
    """A document's text: its passages at their offsets (gaps as spaces), as PubTator's
    title + " " + abstract; annotation locations are document offsets."""
    from bioc import biocxml

    try:
        with open(path, encoding="utf-8") as fh:
            collection = biocxml.load(fh)
    except UnicodeDecodeError as exc:
        raise InputError(f"not valid UTF-8 (byte offset {exc.start})", path) from None
    except Exception as exc:  # noqa: BLE001 - lxml / bioc parse errors
        raise InputError(f"not BioC XML: {str(exc).splitlines()[0] if str(exc) else exc}", path) from None
    out = []
    for doc in collection.documents:
        if not doc.passages:
            raise InputError("BioC document without passages", path, record=doc.id)
        text = ""
        anns = []
        for p in doc.passages:
            body = p.text or ""
            if p.offset > len(text):
                text += " " * (p.offset - len(text))
            elif p.offset < len(text):
                raise InputError(f"passage at offset {p.offset} overlaps the one before", path, record=doc.id)
            text += body
            anns.extend(p.annotations)
        spans = []
        for a in anns:
            if len(a.locations) != 1:
                continue  # discontinuous mention: no single span to learn
            loc = a.locations[0]
            span = _checked(doc.id, text, loc.offset, loc.offset + loc.length, a.text or "", path)
            if span is not None:
                spans.append((span, a.infons.get("type", "")))
        out.append((doc.id, text, spans))
    return out


def read_annotated(path: str | Path, types: TypeMap, fmt: str | None = None,
                   require_types: bool = True) -> list[AnnotatedText]:
    """The documents of a PubTator or BioC XML file with their gold spans labelled by
    ``types`` (unmapped types dropped; overlapping spans: the longer one kept). A ``--types``
    type no document has is refused when ``require_types``."""
    p = Path(path)
    if not p.is_file():
        raise InputError("file not found", p)
    fmt = fmt or _sniff(p)
    if fmt not in FORMATS:
        raise KgnormError(f"unknown annotated-text format {fmt!r} (choose from {', '.join(FORMATS)})")
    docs = _read_bioc(p) if fmt == "bioc" else _read_pubtator(p)
    seen: Counter[str] = Counter()
    out = []
    for doc_id, text, raw in docs:
        labelled = []
        for span, corpus_type in raw:
            seen[corpus_type] += 1
            label = types.label(corpus_type)
            if label is not None:
                labelled.append(Span(span.start, span.end, span.text, label))
        out.append(AnnotatedText(doc_id, text, _non_overlapping(labelled)))
    if require_types and types.mapping is not None:
        missing = [t for t in types.mapping if t not in seen]
        if missing:
            raise InputError(f"--types {', '.join(missing)}: no document has this type "
                             f"(types present: {', '.join(sorted(seen)) or 'none'})", p)
    return out


def _non_overlapping(spans: Sequence[Span]) -> list[Span]:
    """Longest first, then leftmost: BIO tags cannot hold nested mentions."""
    kept: list[Span] = []
    for s in sorted(spans, key=lambda s: (s.start - s.end, s.start)):
        if all(s.end <= k.start or s.start >= k.end for k in kept):
            kept.append(s)
    return sorted(kept, key=lambda s: s.start)


def corpus_types(docs: Sequence[AnnotatedText]) -> tuple[str, ...]:
    """The labels present, in order of first appearance."""
    return tuple(dict.fromkeys(s.type for d in docs for s in d.spans))
