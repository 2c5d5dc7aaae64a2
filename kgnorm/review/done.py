"""A document a person marked done: every mention found in it has a current review and the spans the
detector missed were added, so the document is complete gold for the detector (`kgnorm retrain`
trains the detector on done documents only; a document with unreviewed mentions would teach it that
those spans are no mentions).

Recorded as reviews are: added, never edited -- (:Document)-[:MARKED_DONE]->(:DocumentDone) -- and,
on an embedded store, journaled first (``<store>.done.jsonl``, kgnorm.review.journal) so that a mark
made while another process writes the store is not lost."""
from __future__ import annotations

import uuid
from dataclasses import asdict, dataclass
from typing import Any, Sequence

from kgnorm.errors import InputError, StoreError
from kgnorm.review.records import REVIEW_RUN, WITHDRAW, now
from kgnorm.stores import GraphStore

UNDECIDED = (WITHDRAW,)  # a current review with this decision leaves its mention unreviewed


@dataclass(frozen=True)
class DocumentDone:
    """One "done" mark: who, when, and how many reviewed mentions the document had then."""

    uid: str
    document_uid: str
    doc_id: str
    reviewer: str = ""
    created_at: str = ""
    mentions: int = 0

    def record(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_record(cls, rec: dict[str, Any]) -> "DocumentDone":
        return cls(**rec)


class NotDone(InputError):
    """Refused: the document still has mentions without a current review (their uids)."""

    def __init__(self, doc_id: str, unreviewed: list[str]) -> None:
        self.doc_id, self.unreviewed = doc_id, list(unreviewed)
        super().__init__(f"document {doc_id} has {len(self.unreviewed)} unreviewed mention(s): review each of them "
                         "first")


def unreviewed(document: dict[str, Any]) -> list[str]:
    """The uids of a document view's mentions (kgnorm.review.views.document_view, pending reviews
    overlaid) that have no current review."""
    return [m["uid"] for m in document["mentions"]
            if not m.get("review") or (m["review"] or {}).get("decision") in UNDECIDED]


def make_done(document: dict[str, Any], reviewer: str = "") -> DocumentDone:
    """The mark of a document view, or NotDone when a mention of it has no current review."""
    missing = unreviewed(document)
    if missing:
        raise NotDone(document["doc_id"], missing)
    if document.get("text_missing"):
        raise InputError(f"document {document['doc_id']}: its text is not in the store, so it cannot be training data")
    return DocumentDone(uuid.uuid4().hex, document["uid"], document["doc_id"], reviewer.strip()[:200], now(),
                        len(document["mentions"]))


def done_statements(mark: DocumentDone) -> list[tuple[str, dict[str, Any]]]:
    """The writes of one mark, for one transaction; applying it twice writes it once."""
    row = {k: v for k, v in mark.record().items()} | {"run": REVIEW_RUN}
    return [("MERGE (x:DocumentDone {uid: $uid}) ON CREATE SET x.document_uid = $document_uid, x.doc_id = $doc_id, "
             "x.reviewer = $reviewer, x.created_at = $created_at, x.mentions = $mentions, x.run = $run", row),
            ("MATCH (d:Document {uid: $d}), (x:DocumentDone {uid: $uid}) "
             "WHERE NOT EXISTS { MATCH (d)-[:MARKED_DONE]->(x) } CREATE (d)-[:MARKED_DONE]->(x)",
             {"d": mark.document_uid, "uid": mark.uid})]


def apply_done(store: GraphStore, mark: DocumentDone) -> None:
    store.write_statements(done_statements(mark), f"recording document {mark.doc_id} done")


def applied_done(store: GraphStore, uids: list[str]) -> set[str]:
    """Those of `uids` that are DocumentDone nodes in the store."""
    return {row[0] for row in store.run_saved_for("existing_done_marks", uids)}


def done_documents(store: GraphStore, pending: Sequence[DocumentDone] = ()) -> dict[str, DocumentDone]:
    """Document uid -> its newest done mark (stored or still pending). A store no desk ever wrote to
    since done marks exist has no such table: no document is done."""
    try:
        rows = store.run_saved("serve_done_marks").rows
    except StoreError:
        rows = []
    out: dict[str, DocumentDone] = {}
    marks = [DocumentDone(u, d, doc or "", who or "", at or "", int(n or 0)) for u, d, doc, who, at, n in rows]
    for m in sorted([*marks, *pending], key=lambda m: m.created_at):
        out[m.document_uid] = m
    return out



def document_done(store: GraphStore, document_uid: str, pending: Sequence[DocumentDone] = ()) -> DocumentDone | None:
    """The newest done mark of one document (stored or pending), if any."""
    try:
        rows = store.run_saved("serve_document_done", {"d": document_uid}).rows
    except StoreError:
        rows = []
    marks = [DocumentDone(u, document_uid, doc or "", who or "", at or "", int(n or 0)) for u, doc, who, at, n in rows]
    marks += [m for m in pending if m.document_uid == document_uid]
    return max(marks, key=lambda m: m.created_at) if marks else None


def training_reviews(store: GraphStore, decisions: Sequence[str] | None = None) -> list[tuple[str, str, Any]]:
    """(document uid, mention uid, kgnorm.review.export.ReviewedMention) of every mention in a stored
    document whose current review says it is one (accept, concept, nil): what `kgnorm retrain`
    learns from. Not-a-mention (and any other decision) is left out, unless `decisions` names it
    (rejected_reviews)."""
    from kgnorm.review.export import ReviewedMention
    from kgnorm.review.records import WITH_CONCEPT

    rows = store.run_saved("training_reviews", {"decisions": list(decisions or [*WITH_CONCEPT, "nil"])}).rows
    return [(d_uid, m_uid, ReviewedMention(doc_id or "", -1 if s is None else int(s), -1 if e is None else int(e),
                                           text or "", mtype or "", decision, concept or "", at or "", title or "",
                                           doc_text or None))
            for d_uid, doc_id, title, doc_text, m_uid, s, e, text, mtype, decision, concept, at in rows]


def rejected_reviews(store: GraphStore) -> list[tuple[str, str, Any]]:
    """As training_reviews, the mentions whose current review says they are not a mention: in a
    document not done, the detector learns that exactly that span is none and nothing else there."""
    return training_reviews(store, ["not_a_mention"])


def done_texts_of(store: GraphStore) -> dict[str, tuple[str, str]]:
    """Document uid -> (doc id, text) of every document marked done: a done document with no
    mention in it is training data too (nothing there to find)."""
    try:
        rows = store.run_saved("done_documents").rows
    except StoreError:
        return {}
    return {uid: (doc_id or "", text or "") for uid, doc_id, text in rows}
