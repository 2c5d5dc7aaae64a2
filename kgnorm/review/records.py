"""A review: one person's decision on one mention, written into the graph beside the machine's link.

Reviews are added, never edited: (:Mention)-[:REVIEWED]->(:Review {decision, concept_uid, ...});
the newest review of a mention has ``current = true``. The machine's LINKED_TO edges stay as they
were, so "the current link" of a mention is its current review's concept when it has one, else the
machine's rank-1 link (the saved query ``current_links``). A reviewed mention keeps an IN edge of
its own (run ``review``) to its document and is never removed by a later run (STALE_MENTIONS).
"""
from __future__ import annotations

import uuid
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from typing import Any

from kgnorm.errors import InputError
from kgnorm.stores import GraphStore

DECISIONS = ("accept", "concept", "nil", "not_a_mention")
REVIEW_RUN = "review"  # the run tag of the IN edges and mentions a review adds
WITH_CONCEPT = ("accept", "concept")


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

    def record(self) -> dict[str, Any]:
        """The row a journal line holds (and the API returns)."""
        return asdict(self)

    @classmethod
    def from_record(cls, rec: dict[str, Any]) -> "Review":
        added = rec.get("added")
        return cls(**{**rec, "added": AddedMention(**added) if added else None})


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="microseconds")


def current_link(store: GraphStore, mention_uid: str) -> tuple[str, str]:
    """(concept uid, ontology) a mention has now: its current review's (empty for nil and
    not-a-mention), else the machine's best link, else ("", "")."""
    rows = store.query("MATCH (m:Mention {uid: $m})-[:REVIEWED]->(r:Review) WHERE r.current = true "
                       "RETURN r.decision, r.concept_uid, r.ontology", {"m": mention_uid}).rows
    if rows:
        decision, uid, onto = rows[0]
        return (uid or "", onto or "") if decision in WITH_CONCEPT else ("", "")
    return machine_link(store, mention_uid)


def machine_link(store: GraphStore, mention_uid: str) -> tuple[str, str]:
    """(concept uid, ontology) of the machine's best link of a mention (rank 1, highest score)."""
    rows = store.query("MATCH (m:Mention {uid: $m})-[l:LINKED_TO]->(c:Concept) RETURN c.uid, c.ontology, l.rank, l.score "
                       "ORDER BY l.rank, l.score DESC LIMIT 1", {"m": mention_uid}).rows
    return (rows[0][0], rows[0][1]) if rows else ("", "")


def make_review(store: GraphStore, mention_uid: str, decision: str, concept_uid: str = "", *,
                reviewer: str = "", ontology: str = "", added: AddedMention | None = None) -> Review:
    """Check a decision against the store and fill in what it records (the previous concept, the
    concept's ontology, when); raises InputError with one line for a bad one."""
    if decision not in DECISIONS:
        raise InputError(f"unknown decision {decision!r}: one of {', '.join(DECISIONS)}")
    doc_id = ""
    if added is None:
        rows = store.query("MATCH (m:Mention {uid: $m}) RETURN m.doc_id", {"m": mention_uid}).rows
        if not rows:
            raise InputError(f"no mention {mention_uid!r} in the store")
        doc_id = rows[0][0] or ""
        previous, prev_onto = current_link(store, mention_uid)
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
                  now(), doc_id, added)


def _document_id(store: GraphStore, added: AddedMention) -> str:
    rows = store.query("MATCH (d:Document {uid: $d}) RETURN d.doc_id, d.text", {"d": added.document_uid}).rows
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


def review_statements(review: Review) -> list[tuple[str, dict[str, Any]]]:
    """The writes of one review, for one transaction; applying it twice writes it once (the first
    statement makes nothing when the review is there already, and the rest match nothing new)."""
    r = review
    row = {"uid": r.uid, "doc_id": r.doc_id, "decision": r.decision, "concept_uid": r.concept_uid,
           "ontology": r.ontology, "previous_concept_uid": r.previous_concept_uid, "reviewer": r.reviewer,
           "run": REVIEW_RUN}
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
                "created_at: $at, run: $run, current: n = 0})",
                {**row, "m": r.mention_uid, "at": r.created_at}))
    return out


def apply_review(store: GraphStore, review: Review) -> None:
    """Write one review (all of it or nothing)."""
    store.write_statements(review_statements(review), f"recording review {review.uid}")


def applied(store: GraphStore, uids: list[str]) -> set[str]:
    """Those of `uids` that are Review nodes in the store (index lookups)."""
    return {row[0] for row in store.rows_for("UNWIND $u AS x MATCH (r:Review {uid: x}) RETURN r.uid", uids)}
