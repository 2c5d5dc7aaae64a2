"""The links people reviewed, written out as a corpus (`kgnorm export reviewed`): reviews are the
labelled data a deployment makes, and a file in a format kgnorm's own readers take back is what
turns them into training data (`train biosyn --reviewed FILE`) or into gold for `eval`.

What is written: every mention whose *current* review (with ``reviewer``: that reviewer's newest;
with ``resolved_only``: only where no two reviewers' answers differ) decided a concept (accept, concept), at its
offsets in its document, with that concept; a mention reviewed ``nil`` is written as an unlinked
mention where the format's reader reads it back as one (PubTator and .concept: ``-1``; BioC's
reader keeps ``-1`` as an id, so BioC leaves nil out); ``not_a_mention`` is left out. PubTator and
BioC need the document's text (documents `annotate` stored); a reviewed mention without one
(linked from a mention file) is only written by ``concept``. The file is written whole or not at
all: a temporary file beside it, renamed when complete."""
from __future__ import annotations

import os
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from kgnorm.documents.types import Annotation, TextDocument
from kgnorm.errors import KgnormError
from kgnorm.review.records import WITH_CONCEPT, WITHDRAW

FORMATS = ("pubtator", "bioc", "concept")
NIL = "-1"
# BioC: the reader keeps an identifier "-1" as an id, so a nil mention would come back linked to "-1"
NIL_READ_BACK = {"pubtator": True, "concept": True, "bioc": False}



@dataclass(frozen=True)
class ReviewedMention:
    """One mention and its current review; ``doc_text`` is None when it is in no stored document."""

    doc_id: str
    start: int
    end: int
    text: str
    type: str
    decision: str
    concept_uid: str
    created_at: str = ""
    doc_title: str = ""
    doc_text: str | None = None

    @property
    def ids(self) -> tuple[str, ...]:
        return (self.concept_uid,) if self.decision in WITH_CONCEPT and self.concept_uid else ()


@dataclass
class ExportReport:
    output: Path
    fmt: str
    documents: int = 0
    linked: int = 0
    nil: int = 0
    notes: list[str] = field(default_factory=list)

    def summary(self) -> list[str]:
        docs = f" in {self.documents:,} document(s)" if self.fmt != "concept" else ""
        nil = f" + {self.nil:,} reviewed nil (-1)" if self.nil else ""
        return [f"exported {self.linked:,} reviewed link(s){nil}{docs} → {self.output} ({self.fmt})"]


def check_format(fmt: str) -> str:
    """The format, lower-cased; a bad one is one line, before the store is opened."""
    f = (fmt or "").strip().lower()
    if f not in FORMATS:
        raise KgnormError(f"unknown export format {fmt!r}; use one of {', '.join(FORMATS)}")
    return f


def _chosen(rows: list[list[Any]], reviewer: str | None, resolved_only: bool) -> list[list[Any]]:
    """Per mention and document, the review that is written out: the current one, or with
    `reviewer` that reviewer's newest (none once withdrawn); with `resolved_only`, none for a
    mention on which two reviewers' answers differ (kgnorm.review.reviewers.conflict)."""
    from kgnorm.review.reviewers import conflict

    history: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        history.setdefault(r[4], []).append({"decision": r[10], "concept_uid": r[11] or "", "reviewer": r[14] or "",
                                             "created_at": r[13] or "", "review": r[16]})
    disputed = {m for m, h in history.items() if resolved_only and conflict({x["review"]: x for x in h}.values())}
    out: dict[tuple[Any, str], list[Any]] = {}
    for r in rows:
        if r[4] in disputed:
            continue
        key = (r[0], r[4])
        if reviewer is None:
            if r[15]:
                out[key] = r
        elif (r[14] or "") == reviewer and (key not in out or (r[13] or "") > (out[key][13] or "")):
            out[key] = r
    return [r for r in out.values() if r[10] != WITHDRAW]


def reviewed_mentions(store: Any, ontology: str | None = None, with_nil: bool = True, *,
                      reviewer: str | None = None, resolved_only: bool = False) -> list[ReviewedMention]:
    """The mentions whose current review (or `reviewer`'s newest) decided a concept (and nil, with
    ``with_nil``), one row per mention and document it is in; ``ontology`` keeps the links to that
    ontology's concepts; ``resolved_only`` leaves out the mentions reviewers disagree on."""
    decisions = set(WITH_CONCEPT) | ({"nil"} if with_nil else set())
    rows = _chosen(store.run_saved("reviewed_mentions").rows, reviewer, resolved_only)
    out = []
    for (_, d_doc, d_title, d_text, _, m_doc, start, end, text, mtype, decision, concept, onto, at, *_) in rows:
        if decision not in decisions or (ontology is not None and decision in WITH_CONCEPT and onto != ontology):
            continue
        out.append(ReviewedMention((d_doc if d_text else m_doc) or "",  # stores made before issue 40 keep no text
                                   -1 if start is None else int(start), -1 if end is None else int(end),
                                   text or "", mtype or "", decision, concept or "", at or "", d_title or "",
                                   d_text or None))
    return out


def pending_reviews(uri: str, store: Any) -> int:
    """Reviews an embedded store's journal holds that are not in the store yet (another process held
    it when they were made): they cannot be exported until written."""
    from kgnorm.stores import embedded_path
    from kgnorm.review.journal import ReviewJournal
    from kgnorm.review.records import applied

    path = embedded_path(uri)
    if path is None:
        return 0
    uids = [r.uid for r in ReviewJournal.beside(path).reviews()]
    return len(uids) - len(applied(store, uids)) if uids else 0


def _newest_per_span(mentions: Iterable[ReviewedMention]) -> list[ReviewedMention]:
    """One mention per (document, span): two stored copies of a document (read from two inputs)
    keep the newest review of a span."""
    best: dict[tuple, ReviewedMention] = {}
    for m in mentions:
        key = (m.doc_id, m.doc_text, m.start, m.end)
        if key not in best or m.created_at > best[key].created_at:
            best[key] = m
    return sorted(best.values(), key=lambda m: (m.doc_id, m.start, m.end, m.text))


def as_documents(mentions: list[ReviewedMention], report: ExportReport) -> list[tuple[TextDocument, list[Annotation]]]:
    """The stored documents with their reviewed mentions (offsets into the document's text); a
    mention without document text, or whose offsets do not give its text, is left out (noted)."""
    docs: dict[tuple[str, str], tuple[TextDocument, list[Annotation]]] = {}
    no_doc = bad = 0
    for m in mentions:
        if m.doc_text is None:
            no_doc += 1
            continue
        if not (0 <= m.start < m.end <= len(m.doc_text)) or m.doc_text[m.start:m.end] != m.text:
            bad += 1
            continue
        key = (m.doc_id, m.doc_text)
        if key not in docs:
            title_end = len(m.doc_title) if m.doc_title and m.doc_text.startswith(m.doc_title) else None
            docs[key] = (TextDocument(m.doc_id, m.doc_text, title_end), [])
        docs[key][1].append(Annotation(m.start, m.end, m.text, m.type, m.ids))
    if no_doc:
        report.notes.append(f"{no_doc:,} reviewed mention(s) are in no document whose text the store holds (linked "
                            "from a mention file, not annotated): left out; --format concept writes them")
    if bad:
        report.notes.append(f"{bad:,} reviewed mention(s) whose offsets do not give their text in the document: "
                            "left out")
    return [docs[k] for k in sorted(docs, key=lambda k: k[0])]


def _one_line(text: str) -> str:
    return text.replace("\r", " ").replace("\n", " ")


def concept_line(m: ReviewedMention) -> str:
    """``doc_id||start|end||type||mention||cui`` (kgnorm.mentions.readers.read_concept)."""
    return f"{m.doc_id}||{m.start}|{m.end}||{m.type}||{_one_line(m.text)}||{'|'.join(m.ids) or NIL}\n"


def write_atomically(output: Path, write: Any) -> None:
    """`write(fh)` into a temporary file beside `output`, renamed onto it once complete: a failure
    leaves neither a truncated file nor a changed old one."""
    output.parent.mkdir(parents=True, exist_ok=True)
    tmp = output.with_name(f".{output.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.partial")
    try:
        with open(tmp, "x", encoding="utf-8", newline="") as fh:  # the usual permissions (umask), unlike mkstemp
            write(fh)
        os.replace(tmp, output)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _write_documents(fh: TextIO, fmt: str, docs: list[tuple[TextDocument, list[Annotation]]]) -> None:
    from kgnorm.documents.writers import BioCWriter, PubTatorWriter

    writer = BioCWriter(fh, source="kgnorm export reviewed") if fmt == "bioc" else PubTatorWriter(fh)
    for doc, annotations in docs:
        writer.write(doc, annotations)
    writer.close()


def export_reviewed(store: str | None, output: str | Path, fmt: str = "concept", *,
                    ontology: str | None = None, reviewer: str | None = None,
                    resolved_only: bool = False) -> ExportReport:
    """Write the store's reviewed links to `output` in `fmt` (FORMATS); raises KgnormError, and
    writes nothing, when there is none to write. `reviewer`: that reviewer's answers (their newest
    review of each mention) instead of the current reviews; `resolved_only`: not the mentions two
    reviewers answered differently."""
    from kgnorm.stores import check_store_uri, open_store

    fmt, output = check_format(fmt), Path(output)
    if output.is_dir():
        raise KgnormError(f"{output} is a directory; --output names the file to write")
    report = ExportReport(output, fmt)
    uri = check_store_uri(store)
    with open_store(uri, read_only=True) as st:
        mentions = _newest_per_span(reviewed_mentions(st, ontology, with_nil=NIL_READ_BACK[fmt], reviewer=reviewer,
                                                      resolved_only=resolved_only))
        waiting = pending_reviews(uri, st)
    if waiting:
        report.notes.append(f"{waiting:,} review(s) wait in the journal for the store (another process writes it): "
                            "not exported; run again once they are written")
    if fmt == "concept":
        kept, docs = [m for m in mentions if m.text.strip()], []  # the reader refuses an empty mention
    else:
        docs = as_documents(mentions, report)
        kept = [a for _, anns in docs for a in anns]
    if not kept:
        what = (f" of ontology {ontology!r}" if ontology else "") + (f" by reviewer {reviewer!r}" if reviewer else "")
        what += " that reviewers agree on" if resolved_only else ""
        if mentions:  # all of them outside the documents the store holds the text of
            raise KgnormError(f"no reviewed mention with a concept{what} in a stored document ({len(mentions):,} "
                              "in none: --format concept writes them); nothing written")
        raise KgnormError(f"no reviewed mention with a concept{what} to export: review links first (kgnorm serve, "
                          "Workbench.review); nothing written")
    report.linked = sum(1 for m in kept if m.ids)
    report.nil = len(kept) - report.linked
    report.documents = len(docs)
    if fmt == "concept":
        write_atomically(output, lambda fh: fh.writelines(concept_line(m) for m in kept))
    else:
        write_atomically(output, lambda fh: _write_documents(fh, fmt, docs))
    return report
