"""What a re-ingest does to what users wrote (issue 27), read from the store: the LoadSummary of
a replace, the plan behind it (kgnorm.graph.versions), the retired ids and the orphan mentions.
Mixed into GraphStore; the backends apply the plan in their own load_ontology."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kgnorm.errors import StoreError
from kgnorm.graph.refs import ConceptRef
from kgnorm.graph.ontology_graph import OntologyGraph, RetiredId
from kgnorm.graph.versions import plan_version

if TYPE_CHECKING:
    from kgnorm.stores.base import MentionRow

RETIRED_COLUMNS = ["key", "uid", "ontology", "name", "replaced_by", "consider"]


@dataclass
class LoadSummary:
    """What an ingest did. On a re-ingest (issue 27): links into concepts that are still there
    are kept; a LINKED_TO into a concept the new version merged into a single successor (an
    alt id, `replaced_by`, SNOMED REPLACED BY / SAME AS) moves there, recording `moved_from`;
    one into a concept gone without a single successor is removed and its mention becomes an
    ORPHAN_OF the ontology (`kgnorm link --relink-orphans`). PREDICTED_IS_A edges touching a
    removed concept are removed (a prediction about the old concept's name, not the
    successor's): counted in `predictions_removed`. Nothing is dropped silently."""

    ontology: str
    concepts: int
    is_a: int
    xrefs: int
    replaced: bool
    seconds: float = 0.0
    removed_concepts: list[str] = field(default_factory=list)  # every stored concept absent now
    links_kept: int = 0  # LINKED_TO and PREDICTED_IS_A whose ends all survive
    links_removed: int = 0  # links_orphaned + predictions_removed
    links_removed_to: list[str] = field(default_factory=list)  # removed concepts that had links
    unchanged: bool = False  # same content as stored: only the Ontology record was updated
    links_moved: int = 0
    links_orphaned: int = 0
    orphan_mentions: int = 0
    predictions_removed: int = 0
    added_concepts: list[str] = field(default_factory=list)
    merged: dict[str, str] = field(default_factory=dict)  # removed uid -> its single successor
    retired: dict[str, RetiredId] = field(default_factory=dict)  # written as RetiredId nodes
    dry_run: bool = False

    def reingest_note(self, show: int = 10) -> str:
        """One line for the user: what happened to the links of a replaced ontology."""
        if not self.replaced:
            return ""
        if self.unchanged:
            return f"kept {self.links_kept:,} link(s); same concepts and IS_A as stored, nothing rewritten"
        note = (f"kept {self.links_kept:,} link(s), moved {self.links_moved:,} to a successor, orphaned "
                f"{self.links_orphaned:,} (of {self.orphan_mentions:,} mention(s)); "
                f"{len(self.added_concepts):,} concept(s) added, {len(self.removed_concepts):,} absent from the "
                f"new version removed ({len(self.merged):,} merged into a successor)")
        if self.links_removed:
            shown = ", ".join(self.links_removed_to[:show])
            more = len(self.links_removed_to) - show
            note += (f", with the {self.links_removed:,} link(s) that pointed to them: {shown}"
                     + (f" (and {more:,} more)" if more > 0 else ""))
        if self.predictions_removed:
            note += f" ({self.predictions_removed:,} PREDICTED_IS_A among them)"
        if self.orphan_mentions:
            note += "; `kgnorm link --model M --relink-orphans` links the orphans again"
        return note


class ReingestReads:
    """Reads behind a re-ingest; the host class supplies `query`, `ontology_info`, `unchanged`."""

    def link_ends(self, ontology: str) -> list[tuple[str, str, int]]:
        """(source, target, edges) of the LINKED_TO and PREDICTED_IS_A edges touching a concept
        of `ontology`; an end outside the ontology is ""."""
        rows = [("", c, int(n)) for c, n in self.query(
            "MATCH (:Mention)-[l:LINKED_TO]->(c:Concept) WHERE c.ontology = $o RETURN c.uid, count(l)",
            {"o": ontology}).rows]
        return rows + self.prediction_ends(ontology)

    def prediction_ends(self, ontology: str) -> list[tuple[str, str, int]]:
        """(source, target, edges) of the PREDICTED_IS_A edges touching `ontology`, as link_ends."""
        o = {"o": ontology}
        rows = [("", c, int(n)) for c, n in self.query(
            "MATCH (:Mention)-[p:PREDICTED_IS_A]->(c:Concept) WHERE c.ontology = $o RETURN c.uid, count(p)", o).rows]
        for s, so, c, co, n in self.query(
                "MATCH (s:Concept)-[p:PREDICTED_IS_A]->(c:Concept) WHERE s.ontology = $o OR c.ontology = $o "
                "RETURN s.uid, s.ontology, c.uid, c.ontology, count(p)", o).rows:
            rows.append((s if so == ontology else "", c if co == ontology else "", int(n)))
        return rows

    def plan_load(self, graph: OntologyGraph) -> LoadSummary:
        """What `load_ontology(graph)` would do, read only (``ingest --dry-run``)."""
        summary = LoadSummary(graph.name, len(graph.concepts), len(graph.is_a), 0,
                              self.ontology_info(graph.name) is not None, dry_run=True)
        self.reingest_plan(graph, summary)
        summary.unchanged = self.unchanged(graph, summary)
        return summary

    def reingest_plan(self, graph: OntologyGraph, summary: LoadSummary) -> None:
        """Fill `summary` with what a re-ingest does (kgnorm.graph.versions.plan_version): the
        concepts added, removed and merged, and the links it keeps, moves and orphans."""
        o = {"o": graph.name}
        stored = {r[0] for r in self.query("MATCH (c:Concept) WHERE c.ontology = $o RETURN c.uid", o).rows}
        plan = plan_version(stored, graph, self.retired_ids(graph.name))
        summary.added_concepts, summary.merged, summary.retired = plan.added, plan.moved, plan.retired
        summary.removed_concepts = sorted(plan.removed + list(plan.moved))
        gone = set(summary.removed_concepts)
        hit: set[str] = set()
        for c, n in self.query("MATCH (:Mention)-[l:LINKED_TO]->(c:Concept) WHERE c.ontology = $o "
                               "RETURN c.uid, count(l)", o).rows:
            if c in plan.moved:
                summary.links_moved += int(n)
            elif c in gone:
                summary.links_orphaned += int(n)
                hit.add(c)
            else:
                summary.links_kept += int(n)
        orphaned = sorted(gone - set(plan.moved))
        if summary.links_orphaned:
            summary.orphan_mentions = int(self.query(
                "MATCH (m:Mention)-[:LINKED_TO]->(c:Concept) WHERE c.ontology = $o AND c.uid IN $u "
                "RETURN count(DISTINCT m)", {**o, "u": orphaned}).rows[0][0])
        for s, c, n in self.prediction_ends(graph.name):
            ends = {s, c} & gone
            if ends:
                summary.predictions_removed += n
                hit |= ends
            else:
                summary.links_kept += n
        summary.links_removed = summary.links_orphaned + summary.predictions_removed
        summary.links_removed_to = sorted(hit)

    def retired_ids(self, ontology: str) -> dict[str, RetiredId]:
        """The RetiredId nodes of `ontology`: ids that are no longer concepts but resolve (empty
        on a store made before they existed)."""
        try:
            rows = self.query("MATCH (r:RetiredId) WHERE r.ontology = $o RETURN r.uid, r.name, r.replaced_by, "
                              "r.consider", {"o": ontology}).rows
        except StoreError:
            return {}
        return {u: RetiredId(u, n or "", list(rb or []), list(co or [])) for u, n, rb, co in rows}

    def orphans(self, ontology: str) -> list[MentionRow]:
        """The mentions left orphans of `ontology` by a re-ingest (see LoadSummary), once each."""
        try:
            rows = self.query("MATCH (m:Mention)-[:ORPHAN_OF]->(o:Ontology) WHERE o.name = $o "
                              "RETURN DISTINCT m.uid, m.text, m.doc_id, m.start, m.`end`, m.context, m.mention_id, "
                              "m.source ORDER BY m.uid", {"o": ontology}).rows
        except StoreError:
            return []
        from kgnorm.stores.base import MentionRow  # noqa: F811  (base imports this module)

        return [MentionRow(u, t or "", d or "", -1 if s is None else int(s), -1 if e is None else int(e), c or "",
                           mid or "", src or "") for u, t, d, s, e, c, mid, src in rows]


def retired_records(ontology: str, retired: dict[str, RetiredId]) -> list[dict[str, Any]]:
    """RetiredId node rows, keyed like concepts (kgnorm.stores.base.concept_key: ontology|uid)."""
    return [{"key": ConceptRef(ontology, r.uid).key, "uid": r.uid, "ontology": ontology, "name": r.name or "",
             "replaced_by": list(r.replaced_by), "consider": list(r.consider)}
            for r in sorted(retired.values(), key=lambda r: r.uid)]
