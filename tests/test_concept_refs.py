"""Issue 49, item 2: several ontologies in one store, one uid in several. A MEDIC-like and a
MeSH-like ontology share `MESH:D003924`; one run links into both (each edge names its own
ontology, kgnorm.graph.refs.ConceptRef), and re-ingesting one leaves the other and its links as
they were. Store-level tests run on LadybugDB and over Bolt (the `store` fixture of test_stores)."""
from __future__ import annotations

import pytest

from kgnorm.errors import StoreError
from kgnorm.graph.ontology_graph import Concept, OntologyGraph
from kgnorm.graph.refs import ConceptRef
from kgnorm.stores import LinkEdge, MentionRow, RunRecord, RunWrite
from kgnorm.stores.base import concept_key
from kgnorm.stores.staged_run import StagedMention, StagedRun
from test_stores import count, store  # noqa: F401  (the two-backend fixture)

SHARED = "MESH:D003924"


def medic(version: str = "1", drop: str = "") -> OntologyGraph:
    """A MEDIC-like slice: diseases, MeSH ids and OMIM ids, under a disease root."""
    g = OntologyGraph("medic", "medic", "/data/CTD_diseases.tsv", version=version)
    for uid, name in (("MESH:C", "Diseases"), (SHARED, "Diabetes Mellitus, Type 2"),
                      ("MESH:D009369", "Neoplasms"), ("OMIM:125853", "Diabetes mellitus, noninsulin-dependent")):
        if uid != drop:
            g.add_concept(Concept(uid, uid.split(":")[1], name + ("" if version == "1" else " (v2)")))
    for child in (SHARED, "MESH:D009369"):
        if child != drop:
            g.add_is_a(child, "MESH:C")
    if drop != "OMIM:125853":
        g.add_is_a("OMIM:125853", SHARED)
    g.finalize()
    return g


def mesh() -> OntologyGraph:
    """A MeSH-like slice: the same disease descriptor and a chemical one, each under its tree."""
    g = OntologyGraph("mesh", "mesh", "/data/mesh", version="2025")
    for uid, name in (("MESH:D004700", "Endocrine System Diseases"), (SHARED, "Diabetes Mellitus, Type 2"),
                      ("MESH:D002241", "Carbohydrates"), ("MESH:D005947", "Glucose")):
        g.add_concept(Concept(uid, uid.split(":")[1], name))
    g.add_is_a(SHARED, "MESH:D004700")
    g.add_is_a("MESH:D005947", "MESH:D002241")
    g.finalize()
    return g


def links(st) -> list[tuple]:
    return sorted(tuple(r) for r in st.query("MATCH (m:Mention)-[l:LINKED_TO]->(c:Concept) "
                                             "RETURN m.uid, c.ontology, c.uid, c.name, l.rank, l.run").rows)


def test_concept_ref_is_the_one_spelling_of_a_key():
    ref = ConceptRef("medic", SHARED)
    assert ref.key == concept_key("medic", SHARED) == "medic|MESH:D003924"
    assert ConceptRef.from_key(ref.key) == ref and ConceptRef("mesh", SHARED) != ref
    assert LinkEdge("m", SHARED, 1.0, 1, "mesh").ref == ConceptRef("mesh", SHARED)


def test_one_run_links_into_two_ontologies_sharing_a_uid(store):  # noqa: F811
    store.load_ontology(medic())
    store.load_ontology(mesh())
    assert count(store, "MATCH (c:Concept) WHERE c.uid = $u RETURN count(c)", u=SHARED) == 2
    mentions = [MentionRow("f:dm", "type 2 diabetes", "d1", 0, 15, mention_id="dm", type="Disease"),
                MentionRow("f:glc", "glucose", "d1", 20, 27, mention_id="glc", type="Chemical"),
                MentionRow("f:dm2", "T2DM", "d1", 30, 34, mention_id="dm2", type="Disease")]
    store.write_run(RunWrite(RunRecord("run-both", "annotate", "router"), mentions=mentions, links=[
        LinkEdge("f:dm", SHARED, 0.9, 1, "medic"), LinkEdge("f:dm", "OMIM:125853", 0.5, 2, "medic"),
        LinkEdge("f:glc", "MESH:D005947", 0.8, 1, "mesh"), LinkEdge("f:dm2", SHARED, 0.7, 1, "mesh")]))
    assert links(store) == [
        ("f:dm", "medic", SHARED, "Diabetes Mellitus, Type 2", 1, "run-both"),
        ("f:dm", "medic", "OMIM:125853", "Diabetes mellitus, noninsulin-dependent", 2, "run-both"),
        ("f:dm2", "mesh", SHARED, "Diabetes Mellitus, Type 2", 1, "run-both"),
        ("f:glc", "mesh", "MESH:D005947", "Glucose", 1, "run-both")]
    # a link to a concept its ontology lacks fails the whole write, naming that ontology
    before = links(store)
    with pytest.raises(StoreError, match="store unchanged: 1 concept.*of ontology medic.*MESH:D005947"):
        store.write_run(RunWrite(RunRecord("run-bad", "annotate", "router"), mentions=mentions[:1], links=[
            LinkEdge("f:dm", SHARED, 0.9, 1, "mesh"), LinkEdge("f:dm", "MESH:D005947", 0.8, 1, "medic")]))
    assert links(store) == before
    # a bare uid (no ontology on the edge, none on the run) is still refused when two ontologies have it
    with pytest.raises(StoreError, match="several ontologies"):
        store.write_run(RunWrite(RunRecord("run-x", "link", "x"), mentions=mentions[:1],
                                 links=[LinkEdge("f:dm", SHARED, 1.0, 1)]))


def test_staged_run_links_into_two_ontologies(store):  # noqa: F811
    store.load_ontology(medic())
    store.load_ontology(mesh())
    items = [StagedMention(MentionRow("f:dm", "diabetes", "d1", 0, 8, mention_id="dm", type="Disease"),
                           [LinkEdge("f:dm", SHARED, 0.9, 1, "medic")]),
             StagedMention(MentionRow("f:glc", "glucose", "d1", 9, 16, mention_id="glc", type="Chemical"),
                           [LinkEdge("f:glc", "MESH:D005947", 0.8, 1, "mesh"),
                            LinkEdge("f:glc", "MESH:D005947", 0.2, 2, "medic")]),  # not in medic: skipped
             StagedMention(MentionRow("f:dm2", "diabetic", "d1", 17, 25, mention_id="dm2", type="Disease"),
                           [LinkEdge("f:dm2", SHARED, 0.6, 1)])]  # no ontology: the run's (medic)
    with StagedRun(store, RunRecord("run-s", "annotate", "router"), ontology="medic") as staged:
        result = staged.add(items[:2])
        result2 = staged.add(items[2:])
        staged.publish()
    assert (result.links_written, result2.links_written) == (2, 1)
    assert [(m, o, u) for m, o, u, *_ in links(store)] == [
        ("f:dm", "medic", SHARED), ("f:dm2", "medic", SHARED), ("f:glc", "mesh", "MESH:D005947")]
    assert store.query("MATCH (m:Mention) RETURN m.uid, m.type ORDER BY m.uid").rows == [
        ["f:dm", "Disease"], ["f:dm2", "Disease"], ["f:glc", "Chemical"]]


def test_reingesting_one_ontology_leaves_the_other_and_its_links(store):  # noqa: F811
    store.load_ontology(medic())
    store.load_ontology(mesh())
    mentions = [MentionRow("f:dm", "diabetes", mention_id="dm"), MentionRow("f:glc", "glucose", mention_id="glc"),
                MentionRow("f:om", "NIDDM", mention_id="om")]
    store.write_run(RunWrite(RunRecord("run-1", "annotate", "router"), mentions=mentions, links=[
        LinkEdge("f:dm", SHARED, 0.9, 1, "medic"), LinkEdge("f:dm", SHARED, 0.8, 1, "mesh"),
        LinkEdge("f:glc", "MESH:D005947", 0.8, 1, "mesh"), LinkEdge("f:om", "OMIM:125853", 0.7, 1, "medic")]))
    mesh_state = sorted(tuple(r) for r in store.query(
        "MATCH (c:Concept) WHERE c.ontology = 'mesh' RETURN c.key, c.uid, c.name, c.depth").rows)
    mesh_links = [r for r in links(store) if r[1] == "mesh"]
    # a new MEDIC release: names change and the OMIM concept is gone
    summary = store.load_ontology(medic(version="2", drop="OMIM:125853"))
    assert summary.replaced and summary.removed_concepts == ["OMIM:125853"] and summary.links_removed == 1
    assert sorted(tuple(r) for r in store.query(
        "MATCH (c:Concept) WHERE c.ontology = 'mesh' RETURN c.key, c.uid, c.name, c.depth").rows) == mesh_state
    assert [r for r in links(store) if r[1] == "mesh"] == mesh_links
    assert [r[:4] for r in links(store) if r[1] == "medic"] == [
        ("f:dm", "medic", SHARED, "Diabetes Mellitus, Type 2 (v2)")]
    assert count(store, "MATCH (c:Concept) WHERE c.uid = $u RETURN count(c)", u=SHARED) == 2
    assert count(store, "MATCH (:ConceptId {uid: $u})-[:IDENTIFIES]->(c:Concept) RETURN count(c)", u=SHARED) == 2
    # and the other way round: a new MeSH keeps MEDIC's links
    medic_links = [r for r in links(store) if r[1] == "medic"]
    store.load_ontology(mesh())
    g = mesh()
    g.version = "2026"
    del g.concepts["MESH:D005947"]
    g.is_a = [(c, p) for c, p in g.is_a if c != "MESH:D005947"]
    store.load_ontology(g)
    assert [r for r in links(store) if r[1] == "medic"] == medic_links
    assert [r[:3] for r in links(store) if r[1] == "mesh"] == [("f:dm", "mesh", SHARED)]
