"""A review: one person's decision on one mention, written into the graph beside the machine's link.

Reviews are added, never edited: (:Mention)-[:REVIEWED]->(:Review {decision, concept_uid, ...});
the newest review of a mention has ``current = true``, unless it is a withdrawal (decision
``withdraw``: it ends the review before it and is never current itself, so the mention is
unreviewed again and every rule that reads ``current`` needs no exception for it). The machine's
LINKED_TO edges stay as they were, so "the current link" of a mention is its current review's
concept when it has one, else the machine's rank-1 link (``link_now``; the saved query
``current_links`` says the same in Cypher). A reviewed mention keeps an IN edge of
its own (run ``review``) to its document and is never removed by a later run (STALE_MENTIONS).
"""
from __future__ import annotations

import uuid
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from typing import Any, Sequence

from kgnorm.errors import InputError
from kgnorm.stores import GraphStore

WITHDRAW = "withdraw"
DECISIONS = ("accept", "concept", "nil", "not_a_mention", WITHDRAW)
REVIEW_RUN = "review"  # the run tag of the IN edges and mentions a review adds
WITH_CONCEPT = ("accept", "concept")
MAX_ELAPSED_MS = 24 * 3600 * 1000


@dataclass(frozen=True)
class AddedMention:
    """A span the detector missed, added by a person: the review creates its Mention node."""

    document_uid: str
    start: int
    end: int
    text: str
    type: str = ""

    @property
    def uid(self) -> str:
        return f"{REVIEW_RUN}:{self.document_uid}:{self.start}-{self.end}"


@dataclass(frozen=True)
class Review:
    uid: str
    mention_uid: str
    decision: str
    concept_uid: str = ""
    ontology: str = ""
    previous_concept_uid: str = ""
    reviewer: str = ""
    created_at: str = ""
    doc_id: str = ""
    added: AddedMention | None = field(default=None)
    propagated_from: str = ""  # the review this one copies to a mention of the same text (apply_to_same_text)
    elapsed_ms: int | None = None  # what the page measured from opening the mention to deciding it

    def record(self) -> dict[str, Any]:
        """The row a journal line holds (and the API returns)."""
        return asdict(self)

    @classmethod
    def from_record(cls, rec: dict[str, Any]) -> "Review":
        added = rec.get("added")
        return cls(**{**rec, "added": AddedMention(**added) if added else None})


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="microseconds")


def link_now(decision: str | None, reviewed: tuple[str, str], machine: tuple[str, str]) -> tuple[str, str]:
    """The current-link rule, in Python (the saved query current_links.cypher says it in Cypher):
    a mention's current review decides ((concept, ontology) for accept and concept, none for nil
    and not-a-mention); without one (never reviewed, or withdrawn) the machine's best link holds."""
    if decision is None:
        return machine
    return reviewed if decision in WITH_CONCEPT else ("", "")


def current_link(store: GraphStore, mention_uid: str) -> tuple[str, str]:
    """(concept uid, ontology) a mention has now (link_now), ("", "") for none."""
    rows = store.run_saved("serve_current_review", {"m": mention_uid}).rows
    if rows:
        _, decision, uid, onto = rows[0]
        return link_now(decision, (uid or "", onto or ""), ("", ""))
    return machine_link(store, mention_uid)


def machine_link(store: GraphStore, mention_uid: str) -> tuple[str, str]:
    """(concept uid, ontology) of the machine's best link of a mention (rank 1, highest score)."""
    rows = store.run_saved("serve_machine_link", {"m": mention_uid}).rows
    return (rows[0][0], rows[0][1]) if rows else ("", "")


def make_review(store: GraphStore, mention_uid: str, decision: str, concept_uid: str = "", *,
                reviewer: str = "", ontology: str = "", added: AddedMention | None = None,
                elapsed_ms: int | None = None, reviewed: bool | None = None) -> Review:
    """Check a decision against the store and fill in what it records (the previous concept, the
    concept's ontology, when); raises InputError with one line for a bad one. `reviewed`: whether
    the mention has a review now, when the caller knows better than the store (a pending one)."""
    if decision not in DECISIONS:
        raise InputError(f"unknown decision {decision!r}: one of {', '.join(DECISIONS)}")
    if elapsed_ms is not None and not 0 <= elapsed_ms <= MAX_ELAPSED_MS:
        raise InputError(f"elapsed_ms must be between 0 and {MAX_ELAPSED_MS} (a day), got {elapsed_ms}")
    doc_id = ""
    if added is None:
        rows = store.run_saved("serve_mention_fields", {"m": mention_uid}).rows
        if not rows:
            raise InputError(f"no mention {mention_uid!r} in the store")
        doc_id = rows[0][0] or ""
        previous, prev_onto = current_link(store, mention_uid)
        if decision == WITHDRAW and not (reviewed if reviewed is not None else has_current_review(store, mention_uid)):
            raise InputError(f"mention {mention_uid!r} has no review to withdraw")
    elif decision == WITHDRAW:
        raise InputError("a mention being added cannot be withdrawn")
    else:
        mention_uid, previous, prev_onto = added.uid, "", ""
        doc_id = _document_id(store, added)
    if decision == "accept":  # the machine was right: its link, whatever earlier reviews said
        machine, machine_onto = machine_link(store, mention_uid) if added is None else ("", "")
        if not machine and not concept_uid:
            raise InputError(f"mention {mention_uid!r} has no machine link to accept: pick a concept (decision 'concept')")
        concept_uid, ontology = (concept_uid or machine), (ontology or machine_onto)
    if decision in WITH_CONCEPT:
        named, ontology = ontology, _concept_ontology(store, concept_uid, ontology or prev_onto)
        if named and named != ontology:  # a named ontology is the person's: never swapped for another
            raise InputError(f"concept {concept_uid} is not in ontology {named!r} (it is in {ontology!r})")
    else:
        concept_uid, ontology = "", ""
    return Review(uuid.uuid4().hex, mention_uid, decision, concept_uid, ontology, previous, reviewer.strip()[:200],
                  now(), doc_id, added, elapsed_ms=elapsed_ms)


def has_current_review(store: GraphStore, mention_uid: str) -> bool:
    return bool(store.run_saved("serve_current_review", {"m": mention_uid}).rows)


def _document_id(store: GraphStore, added: AddedMention) -> str:
    rows = store.run_saved("serve_document_text", {"d": added.document_uid}).rows
    if not rows:
        raise InputError(f"no document {added.document_uid!r} in the store")
    doc_id, text = rows[0]
    if not (0 <= added.start < added.end <= len(text or "")) or (text or "")[added.start:added.end] != added.text:
        raise InputError(f"span {added.start}-{added.end} is not {added.text!r} in document {doc_id}")
    return doc_id or ""


def _concept_ontology(store: GraphStore, uid: str, preferred: str) -> str:
    if not uid:
        raise InputError("decision 'concept' needs a concept uid")
    ontologies = sorted({onto for _, _, onto in store.uid_lookup([uid])})
    if not ontologies:
        raise InputError(f"no concept {uid!r} in the store")
    if preferred in ontologies:
        return preferred
    if len(ontologies) > 1:
        raise InputError(f"concept {uid} is in several ontologies ({', '.join(ontologies)}): say which one")
    return ontologies[0]


def same_text_reviews(store: GraphStore, review: Review, pending: Sequence[Review] = ()) -> list[Review]:
    """`review` copied to every other mention of its text (case-insensitive) and type that has no
    review now (stored or pending): the same concept (``accept`` where it is that mention's machine
    link, else ``concept``), nil or not-a-mention, each naming `review` in ``propagated_from``."""
    if review.decision == WITHDRAW:
        raise InputError("apply_to_same_text applies a decision; a withdrawal ends one review only")
    if review.added is not None:
        text, typ = review.added.text, review.added.type
    else:
        rows = store.run_saved("serve_mention_fields", {"m": review.mention_uid}).rows
        text, typ = (rows[0][1] or "", rows[0][2] or "") if rows else ("", "")
    newest: dict[str, Review] = {}
    for r in pending:
        if r.mention_uid not in newest or r.created_at >= newest[r.mention_uid].created_at:
            newest[r.mention_uid] = r
    busy = {u for u, r in newest.items() if r.decision != WITHDRAW}
    best: dict[str, tuple[str, str, str, float]] = {}
    for uid, doc_id, concept, onto, score in store.run_saved(
            "same_text_mentions", {"text": text.lower(), "type": typ, "except": review.mention_uid}).rows:
        s = -1e30 if score is None else float(score)
        if uid not in busy and (uid not in best or s > best[uid][3]):
            best[uid] = (doc_id or "", concept or "", onto or "", s)
    out = []
    for uid, (doc_id, machine, machine_onto, _) in sorted(best.items()):
        decision, concept, onto = review.decision, review.concept_uid, review.ontology
        if decision in WITH_CONCEPT:
            decision = "accept" if (machine, machine_onto) == (concept, onto) else "concept"
        out.append(Review(uuid.uuid4().hex, uid, decision, concept, onto, machine, review.reviewer, now(), doc_id,
                          propagated_from=review.uid))
    return out


def review_statements(review: Review) -> list[tuple[str, dict[str, Any]]]:
    """The writes of one review, for one transaction; applying it twice writes it once (the first
    statement makes nothing when the review is there already, and the rest match nothing new)."""
    r = review
    row = {"uid": r.uid, "doc_id": r.doc_id, "decision": r.decision, "concept_uid": r.concept_uid,
           "ontology": r.ontology, "previous_concept_uid": r.previous_concept_uid, "reviewer": r.reviewer,
           "run": REVIEW_RUN, "propagated_from": r.propagated_from, "elapsed_ms": r.elapsed_ms,
           "may_be_current": r.decision != WITHDRAW}
    out: list[tuple[str, dict[str, Any]]] = []
    if r.added is not None:
        a = r.added
        out.append(("MERGE (m:Mention {uid: $uid}) ON CREATE SET m.text = $text, m.doc_id = $doc, m.start = $s, "
                    "m.`end` = $e, m.context = '', m.mention_id = $uid, m.source = $src, m.type = $type",
                    {"uid": a.uid, "text": a.text, "doc": r.doc_id, "s": a.start, "e": a.end, "src": REVIEW_RUN,
                     "type": a.type}))
        out.append(("MATCH (m:Mention {uid: $m}), (d:Document {uid: $d}) "
                    "WHERE NOT EXISTS { MATCH (m)-[i:`IN`]->(d) WHERE i.run = $run } "
                    "CREATE (m)-[:`IN` {run: $run}]->(d)", {"m": a.uid, "d": a.document_uid, "run": REVIEW_RUN}))
    else:  # the mention stays in its documents whatever later runs of them find
        out.append(("MATCH (m:Mention {uid: $m})-[:`IN`]->(d:Document) WITH DISTINCT m, d "
                    "WHERE NOT EXISTS { MATCH (m)-[i:`IN`]->(d) WHERE i.run = $run } "
                    "CREATE (m)-[:`IN` {run: $run}]->(d)", {"m": r.mention_uid, "run": REVIEW_RUN}))
    out.append(("MATCH (m:Mention {uid: $m})-[:REVIEWED]->(old:Review) WHERE old.created_at <= $at AND old.uid <> $uid "
                "SET old.current = false", {"m": r.mention_uid, "at": r.created_at, "uid": r.uid}))
    # current unless a newer review is there already (a journal applied late)
    out.append(("MATCH (m:Mention {uid: $m}) "
                "WHERE NOT EXISTS { MATCH (m)-[:REVIEWED]->(x:Review) WHERE x.uid = $uid } "
                "OPTIONAL MATCH (m)-[:REVIEWED]->(newer:Review) WHERE newer.created_at > $at "
                "WITH m, count(newer) AS n "
                "CREATE (m)-[:REVIEWED]->(r:Review {uid: $uid, mention_uid: $m, doc_id: $doc_id, "
                "decision: $decision, concept_uid: $concept_uid, ontology: $ontology, "
                "previous_concept_uid: $previous_concept_uid, reviewer: $reviewer, "
                "created_at: $at, run: $run, propagated_from: $propagated_from, elapsed_ms: $elapsed_ms, "
                "current: n = 0 AND $may_be_current})",
                {**row, "m": r.mention_uid, "at": r.created_at}))
    return out


def apply_review(store: GraphStore, review: Review) -> None:
    """Write one review (all of it or nothing)."""
    store.write_statements(review_statements(review), f"recording review {review.uid}")


def applied(store: GraphStore, uids: list[str]) -> set[str]:
    """Those of `uids` that are Review nodes in the store (index lookups)."""
    return {row[0] for row in store.run_saved_for("existing_reviews", uids)}
