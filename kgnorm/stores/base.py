"""The one GraphStore interface both backends implement, and the rows they write.

Reads go through `query`/`run_saved` with the shared cypher/queries/*.cypher files, so the
embedded backend's tests exercise the same read queries Neo4j users run. Only DDL and bulk
writes differ per backend.
"""
from __future__ import annotations

import hashlib
import json
import re
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Iterable, Sequence

from kgnorm.stores.cypher_files import fill_slots, saved_query
from kgnorm.errors import StoreError
from kgnorm.graph.ontology_graph import OntologyGraph
from kgnorm.graph.refs import ConceptRef
from kgnorm.stores.reingest import LoadSummary, ReingestReads, retired_records  # noqa: F401  (re-exported)
from kgnorm.stores.stages import PUBLISHED, STAGING, owner_is_gone

_CREDENTIALS = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*:/*|^|/)([^/@:\s]+):([^@/\s]*)@")

LOOKUP_CHUNK = 5000  # keys per statement in a lookup of many (GraphStore.rows_for)
CONCEPT_COLUMNS = ["key", "uid", "ontology", "code", "name", "synonyms", "synonym_scopes", "alt_ids",
                   "xrefs", "definition", "depth", "level_label", "obsolete"]
@dataclass
class QueryResult:
    columns: list[str]
    rows: list[list[Any]]

    def records(self) -> list[dict[str, Any]]:
        return [dict(zip(self.columns, row)) for row in self.rows]


@dataclass
class RunRecord:
    """A `Run` node: one linking or hypernym run; every edge it writes carries its uid."""

    uid: str
    kind: str
    method: str
    model_path: str = ""
    params: dict[str, Any] = field(default_factory=dict)
    metrics: dict[str, Any] = field(default_factory=dict)
    created_at: str = field(default_factory=lambda: datetime.now(timezone.utc).isoformat(timespec="seconds"))

    def row(self) -> dict[str, Any]:
        return {"uid": self.uid, "kind": self.kind, "method": self.method, "model_path": self.model_path,
                "params_json": json.dumps(self.params, sort_keys=True, default=str),
                "metrics_json": json.dumps(self.metrics, sort_keys=True, default=str),
                "created_at": self.created_at}


@dataclass
class MentionRow:
    """A `Mention` node. `uid` is its identity in the graph (see `kgnorm.stores.run_ids.mention_uid`:
    the input file's digest plus the id, so files that reuse ids never share a node);
    `mention_id` is the id the user's file gave it (the TSV's mention_id), `source` that file."""

    uid: str
    text: str
    doc_id: str = ""
    start: int = -1
    end: int = -1
    context: str = ""
    mention_id: str = ""
    source: str = ""
    type: str = ""  # the detector's label for a mention found in text (annotate)
    confidence: float | None = None  # annotate's mention confidence (kgnorm.nil.confidence), where fitted

# Re-annotating: the mentions the previous copy of run $r found (its IN edges) that neither the new
# copy (IN under the staging tag) nor any other run has, once $r's own LINKED_TO edges are gone.
STALE_MENTIONS = ("MATCH (m:Mention)-[i:`IN`]->(:Document) WHERE i.run = $r "
                  "AND NOT EXISTS { MATCH (m)-[j:`IN`]->(:Document) WHERE coalesce(j.run, '') <> $r } "
                  "AND NOT EXISTS { MATCH (m)-[:LINKED_TO]->() } AND NOT EXISTS { MATCH (m)-[:PREDICTED_IS_A]->() } "
                  "AND NOT EXISTS { MATCH (m)-[:ORPHAN_OF]->() } AND NOT EXISTS { MATCH (m)-[:REVIEWED]->() } "
                  "WITH DISTINCT m DETACH DELETE m")

@dataclass
class DocumentRow:
    """A `Document` node (annotate): uid = input digest + doc id; `(:Mention)-[:IN {run}]->(:Document)`,
    one IN edge per mention and run that found it. `text` is what mention offsets index (title
    included), `title` its first part ("" when the input had none): what `kgnorm serve` shows."""
    uid: str
    doc_id: str
    source: str = ""
    title: str = ""
    text: str = ""


@dataclass
class LinkEdge:
    """LINKED_TO from a mention to a concept of `ontology` (the linker that ranked it; "": the
    run's ontology, or the one concept the store has with that uid)."""

    mention_uid: str
    concept_uid: str
    score: float
    rank: int
    ontology: str = ""

    @property
    def ref(self) -> ConceptRef:
        return ConceptRef(self.ontology, self.concept_uid)


@dataclass
class PredictionEdge:
    """PREDICTED_IS_A from a Concept (source_is_mention False) or a Mention to a hypernym."""

    source_uid: str
    hypernym_uid: str
    score: float
    rank: int
    level: int
    source_is_mention: bool = False


@dataclass
class MappingEdge:
    """MAPS_TO from a concept of `source_ontology` to one of `target_ontology` (`kgnorm match`): the
    two ends name their own ontologies, since a mapping run spans two."""

    source_uid: str
    target_uid: str
    predicate: str
    confidence: float
    justification: str
    source_ontology: str
    target_ontology: str

    def keys(self) -> tuple[str, str]:
        return concept_key(self.source_ontology, self.source_uid), concept_key(self.target_ontology, self.target_uid)


@dataclass
class RunWrite:
    """Everything one run writes, applied atomically and idempotently (same run uid twice = one copy).

    A link names its concept's ontology (:attr:`LinkEdge.ontology`), so one run may link into
    several; a link that names none, and every prediction, is of `ontology` (the model's
    dictionary); without that either, a uid must name one concept in the store. `relinked` (``link --relink-orphans``): mentions whose ORPHAN_OF
    edges to `ontology` go in the same transaction."""

    run: RunRecord
    mentions: list[MentionRow] = field(default_factory=list)
    links: list[LinkEdge] = field(default_factory=list)
    predictions: list[PredictionEdge] = field(default_factory=list)
    ontology: str = ""
    relinked: list[str] = field(default_factory=list)  # mentions no longer ORPHAN_OF `ontology` once written
    mappings: list[MappingEdge] = field(default_factory=list)  # MAPS_TO edges, keyed by their own ontologies

    def link_ref(self, edge: LinkEdge) -> ConceptRef:
        """The concept a link points at: of its own ontology, else the run's."""
        return ConceptRef(edge.ontology or self.ontology, edge.concept_uid)

    def ref(self, uid: str) -> ConceptRef:
        """A concept of the run's ontology (a prediction's ends)."""
        return ConceptRef(self.ontology, uid)

    def refs(self) -> list[ConceptRef]:
        """Every concept the run writes to."""
        refs = {self.link_ref(e) for e in self.links} | {self.ref(e.hypernym_uid) for e in self.predictions}
        refs |= {self.ref(e.source_uid) for e in self.predictions if not e.source_is_mention}
        return sorted(refs)


class GraphStore(ReingestReads, ABC):
    uri: str
    # the stages of killed processes this writer removed when it opened the store (not yet told)
    abandoned: list[str] = []

    @abstractmethod
    def query(self, cypher: str, params: dict[str, Any] | None = None) -> QueryResult:
        """Run one read (or user) Cypher statement."""

    def run_saved(self, name: str, params: dict[str, Any] | None = None) -> QueryResult:
        text, rest = fill_slots(saved_query(name), dict(params or {}))
        return self.query(text, rest)

    @abstractmethod
    def load_ontology(self, graph: OntologyGraph) -> LoadSummary:
        """Replace exactly `graph.name`'s concepts and edges, atomically."""

    @abstractmethod
    def write_run(self, write: RunWrite) -> None:
        """Write a run's Run node, Mention nodes and edges, atomically and idempotently."""

    # -- a run written in batches (kgnorm.stores.staged_run) ------------------------
    @abstractmethod
    def stage_begin(self, run: RunRecord, stage: str) -> None:
        """Clear what a failed earlier attempt left under `stage`, then write its staging Run node."""

    @abstractmethod
    def stage_rows(self, stage: str, run: RunRecord, new: list[MentionRow], links: list[LinkEdge],
                   keys: dict[ConceptRef, str], documents: Sequence[DocumentRow] = (),
                   in_edges: Sequence[tuple[str, str]] = ()) -> None:
        """One batch, in one transaction: `new` mentions (and `documents`) created and listed under
        `stage`, to be undone should the run fail; `links` written under the staging tag (`keys`: each
        edge's :attr:`LinkEdge.ref` -> its key); `in_edges` (mention uid, document uid): IN edges of
        the run's mentions, new or not, written under the staging tag as the links are."""

    @abstractmethod
    def stage_publish(self, run: RunRecord, stage: str) -> None:
        """In one transaction: the previous copy of `run` goes (its edges, and the mentions only it
        had: STALE_MENTIONS), the staged edges become `run`'s."""

    @abstractmethod
    def stage_clear(self, stage: str) -> None:
        """Drop the staging node; while it is still unpublished, also every row staged under it."""

    def clear_abandoned_stages(self) -> list[str]:
        """Remove the stages left by processes killed outright on this host (their rows would
        otherwise stay until the same run is attempted again); the staging uids removed. Every
        writer runs this when it opens the store (:meth:`opened_for_writing`)."""
        rows = self.query("MATCH (r:Run) WHERE r.kind = $k OR r.kind = $p RETURN r.uid, r.metrics_json",
                          {"k": STAGING, "p": PUBLISHED}).rows  # published: only its bookkeeping is left
        gone = [uid for uid, meta in rows if owner_is_gone(meta)]
        for uid in gone:
            self.stage_clear(uid)
        return gone

    def opened_for_writing(self) -> None:
        """What every writer does first, whatever it writes (ingest, link, hypernyms, query
        --write, compact): a `link` killed outright left a staging Run and its rows; they go
        now, not only when the next link run starts."""
        self.abandoned = self.clear_abandoned_stages()

    def rows_for(self, cypher: str, values: Sequence[Any], chunk: int = LOOKUP_CHUNK) -> list[list[Any]]:
        """The rows of `cypher` (which UNWINDs `$u`) for every value, asked `chunk` values at a time:
        the one way index lookups of many keys are made, so no statement carries a huge list."""
        rows: list[list[Any]] = []
        for i in range(0, len(values), chunk):
            rows.extend(self.query(cypher, {"u": list(values[i:i + chunk])}).rows)
        return rows

    def run_saved_for(self, name: str, values: Sequence[Any], chunk: int = LOOKUP_CHUNK) -> list[list[Any]]:
        """rows_for of a saved query (one that UNWINDs `$u`)."""
        return self.rows_for(fill_slots(saved_query(name), {"u": []})[0], values, chunk)

    def mention_texts(self, uids: list[str]) -> dict[str, tuple[str, str]]:
        """uid -> (text, doc_id) of those of `uids` that are Mention nodes (index lookups)."""
        return {uid: (text, doc or "") for uid, text, doc in self.rows_for(
            "UNWIND $u AS x MATCH (m:Mention {uid: x}) RETURN m.uid, m.text, m.doc_id", uids)}

    def document_uids(self, uids: list[str]) -> set[str]:
        """Those of `uids` that are Document nodes already (index lookups)."""
        return {r[0] for r in self.rows_for("UNWIND $u AS x MATCH (d:Document {uid: x}) RETURN d.uid", uids)}

    @abstractmethod
    def write_statements(self, statements: Sequence[tuple[str, dict[str, Any]]], what: str) -> None:
        """Run small write statements (a review) in one transaction: all of them or none; `what`
        names the write in the error."""

    @abstractmethod
    def close(self) -> None: ...

    def __enter__(self) -> "GraphStore":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- shared reads --------------------------------------------------------------
    def ontologies(self) -> list[dict[str, Any]]:
        return self.run_saved("ontology_counts").records()

    def unchanged(self, graph: OntologyGraph, summary: LoadSummary, digest: str | None = None) -> bool:
        """True when the stored ontology holds exactly this content (see `content_digest`)."""
        if not summary.replaced:
            return False
        rows = self.query("MATCH (o:Ontology {name: $n}) RETURN o.content_digest", {"n": graph.name}).rows
        return bool(rows and rows[0][0] and rows[0][0] == (digest or content_digest(graph)))

    def ontology_info(self, name: str) -> dict[str, Any] | None:
        rows = self.run_saved("ontology_info", {"name": name}).records()
        return rows[0] if rows else None

    def ref_keys(self, refs: Iterable[ConceptRef]) -> dict[ConceptRef, str]:
        """The stored key of each of `refs` found in the store: a ref naming its ontology is that
        ontology's concept (index lookups by key); a bare uid (no ontology) must name one concept
        of the whole store, else the uid is ambiguous (StoreError)."""
        wanted = set(refs)
        named = sorted(r.key for r in wanted if r.ontology)
        have = {row[0] for row in self.rows_for("UNWIND $u AS x MATCH (c:Concept {key: x}) RETURN c.key", named)}
        out = {r: r.key for r in wanted if r.ontology and r.key in have}
        found: dict[str, list[str]] = {}
        for uid, key, _ in self.uid_lookup(sorted(r.uid for r in wanted if not r.ontology)):
            found.setdefault(uid, []).append(key)
        shared = sorted(u for u, keys in found.items() if len(keys) > 1)
        if shared:
            raise StoreError(f"concept {shared[0]} is in several ontologies of the store: "
                             "say which one (the model's ontology)")
        out.update({ConceptRef("", u): keys[0] for u, keys in found.items()})
        return out

    def concept_keys(self, uids: list[str], ontology: str = "") -> dict[str, str]:
        """uid → concept key of the given uids found in the store: those of `ontology`, or,
        without one, of any ontology as long as the uid names one concept (:meth:`ref_keys`)."""
        return {r.uid: key for r, key in self.ref_keys(ConceptRef(ontology, u) for u in uids).items()}

    def uid_lookup(self, uids: list[str]) -> list[tuple[str, str, str]]:
        """(uid, key, ontology) of every concept that has one of `uids` (index lookups by uid)."""
        return [tuple(r) for r in self.rows_for(
            "UNWIND $u AS x MATCH (i:ConceptId {uid: x})-[:IDENTIFIES]->(c:Concept) RETURN c.uid, c.key, c.ontology", uids)]

    def run_keys(self, write: RunWrite) -> dict[ConceptRef, str]:
        """Concept keys for every concept a run writes to; a missing one fails the whole write."""
        refs = write.refs()
        keys = self.ref_keys(refs)
        missing = [r for r in refs if r not in keys]
        if missing:
            where = f" of ontology {missing[0].ontology}" if missing[0].ontology else ""
            raise StoreError(f"writing run {write.run.uid} failed, store unchanged: {len(missing)} concept(s)"
                             f"{where} not in the store (first: {missing[0].uid})")
        return keys

    def mapping_keys(self, write: RunWrite) -> None:
        """Every MAPS_TO end must be a stored concept of its ontology; a missing one fails the whole write."""
        keys = sorted({k for e in write.mappings for k in e.keys()})
        have = {r[0] for r in self.rows_for("UNWIND $u AS x MATCH (c:Concept {key: x}) RETURN c.key", keys)}
        missing = [k for k in keys if k not in have]
        if missing:
            raise StoreError(f"writing run {write.run.uid} failed, store unchanged: {len(missing)} mapped "
                             f"concept(s) not in the store (first: {ConceptRef.from_key(missing[0])})")

    def xref_edges_for(self, graph: OntologyGraph) -> list[tuple[str, str, str]]:
        """XREF (from key, to key, source) between `graph` and concepts already in the store.

        Both directions: the new ontology's xrefs that hit stored concepts (of any other
        ontology, or itself), and stored concepts' xrefs that hit the new ontology."""
        edges: set[tuple[str, str, str]] = set()
        targets = sorted({x for c in graph.concepts.values() for x in c.xrefs})
        keys_of: dict[str, list[str]] = {x: [concept_key(graph.name, x)] for x in targets if x in graph.concepts}
        others = self.query("MATCH (c:Concept) WHERE c.ontology <> $n RETURN count(c)", {"n": graph.name}).rows[0][0]
        if not others:  # the only ontology of the store: its own xrefs are all there is to resolve
            targets = []
        for uid, key, onto in self.uid_lookup(targets):
            if onto != graph.name:
                keys_of.setdefault(uid, []).append(key)
        for c in graph.concepts.values():
            own = concept_key(graph.name, c.uid)
            for x in c.xrefs:
                edges.update((own, k, graph.name) for k in keys_of.get(x, ()) if k != own)
        for key, onto, xrefs in (self.run_saved("xref_sources", {"ontology": graph.name}).rows if others else ()):
            for x in xrefs or ():
                if x in graph.concepts:
                    edges.add((key, concept_key(graph.name, x), onto))
        return sorted(edges)


def concept_key(ontology: str, uid: str) -> str:
    """A concept's identity in the store: its ontology and its uid, so that two ontologies that
    share CURIEs (MeSH and MEDIC) each keep their own node; `uid` stays a queryable property."""
    return ConceptRef(ontology, uid).key


def concept_records(graph: OntologyGraph) -> Iterable[dict[str, Any]]:
    for c in graph.concepts.values():
        yield {"key": concept_key(graph.name, c.uid), "uid": c.uid, "ontology": graph.name, "code": c.code,
               "name": c.name, "synonyms": list(c.synonyms), "synonym_scopes": list(c.synonym_scopes),
               "alt_ids": list(c.alt_ids), "xrefs": list(c.xrefs), "definition": c.definition or "",
               "depth": int(c.depth), "level_label": c.level_label or "", "obsolete": bool(c.obsolete)}


def concept_columns(graph: OntologyGraph) -> dict[str, list[Any]]:
    """Column-wise concept data: bulk loaders build Arrow tables from it without per-row dicts
    (the concepts' own lists are handed over, not copied: nothing here changes them)."""
    cs = list(graph.concepts.values())
    uids = [c.uid for c in cs]
    prefix = concept_key(graph.name, "")
    return {"key": [prefix + u for u in uids], "uid": uids,
            "ontology": [graph.name] * len(cs), "code": [c.code for c in cs],
            "name": [c.name for c in cs], "synonyms": [c.synonyms for c in cs],
            "synonym_scopes": [c.synonym_scopes for c in cs], "alt_ids": [c.alt_ids for c in cs],
            "xrefs": [c.xrefs for c in cs], "definition": [c.definition or "" for c in cs],
            "depth": [int(c.depth) for c in cs], "level_label": [c.level_label or "" for c in cs],
            "obsolete": [bool(c.obsolete) for c in cs]}


def ontology_record(graph: OntologyGraph, digest: str | None = None) -> dict[str, Any]:
    return {"name": graph.name, "version": graph.version or "", "source_path": graph.source_path,
            "format": graph.format, "loaded_at": graph.loaded_at, "concept_count": len(graph.concepts),
            "content_digest": digest or content_digest(graph)}


def content_digest(graph: OntologyGraph, columns: dict[str, list[Any]] | None = None) -> str:
    """Digest of what an ingest writes (concepts and IS_A): an unchanged re-ingest rewrites nothing,
    so the embedded store does not grow by a full copy each time. One JSON document of the
    columns in uid order (`columns`: concept_columns(graph), when the caller has them): a digest of
    an earlier kgnorm's layout (one document per concept) never equals it, so the first re-ingest
    of an unchanged file after an upgrade writes it once more."""
    cols = columns if columns is not None else concept_columns(graph)
    order = sorted(range(len(cols["uid"])), key=cols["uid"].__getitem__)
    h = hashlib.sha1(b"kgnorm content digest 2\n")
    h.update(json.dumps({k: [cols[k][i] for i in order] for k in CONCEPT_COLUMNS}).encode("utf-8"))
    h.update(json.dumps(sorted(graph.is_a)).encode("utf-8"))
    if graph.retired:
        h.update(json.dumps(sorted([r.uid, r.replaced_by, r.consider] for r in graph.retired.values())).encode())
    return h.hexdigest()


def redact(text: str) -> str:
    """`user:password@` in a URI (or anything that looks like one) → `user:***@`."""
    return _CREDENTIALS.sub(lambda m: f"{m.group(1)}{m.group(2)}:***@", text)


def refused_read_only(cause: str) -> StoreError:
    """The one line every backend gives when a store opened read-only is asked to write."""
    return StoreError(f"query failed: {cause}; the store is opened read-only: pass --write to change it")
