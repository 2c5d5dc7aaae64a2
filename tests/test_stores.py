"""Graph stores: atomic replace, XREF resolution, run writes, and the shared saved queries.

Every test runs on the embedded LadybugDB and again over Bolt: against the Neo4j 5 database
KGNORM_TEST_NEO4J_URI names (disposable: it is wiped first), or else against an ArcadeDB
server the `bolt_server` fixture starts (tests/conftest.py)."""
from __future__ import annotations

import pytest

from kgnorm.stores.cypher_files import fill_slots
from kgnorm.errors import KgnormError, StoreError
from kgnorm.graph.ontology_graph import Concept, OntologyGraph
from kgnorm.stores import LinkEdge, MentionRow, PredictionEdge, RunRecord, RunWrite, open_store


def make_graph(name: str = "toy", prefix: str = "T", version: str = "1", extra: bool = False) -> OntologyGraph:
    g = OntologyGraph(name, "obo", f"/data/{name}.obo", version=version)
    names = {"root": "Root thing", "a": "Alpha disease", "b": "Beta disease", "c": "Gamma syndrome"}
    if extra:
        names["d"] = "Delta syndrome"
    for code, label in names.items():
        g.add_concept(Concept(f"{prefix}:{code}", code, label, synonyms=[f"{label} variant"],
                              synonym_scopes=["EXACT"], xrefs=[f"X:{code}"]))
    g.add_is_a(f"{prefix}:a", f"{prefix}:root")
    g.add_is_a(f"{prefix}:b", f"{prefix}:root")
    g.add_is_a(f"{prefix}:c", f"{prefix}:a")
    g.add_is_a(f"{prefix}:c", f"{prefix}:b")
    if extra:
        g.add_is_a(f"{prefix}:d", f"{prefix}:c")
    g.finalize()
    return g


@pytest.fixture(params=["ladybug", "neo4j"])
def store(request, tmp_path, monkeypatch):
    if request.param == "neo4j":
        uri, database, kind = request.getfixturevalue("bolt_server")
        if database:
            monkeypatch.setenv("KGNORM_NEO4J_DATABASE", database)
        st = open_store(uri)
        st.server_kind, st.test_uri = kind, uri
        st.query("MATCH (n) DETACH DELETE n")
    else:
        st = open_store(f"ladybug://{tmp_path}/graph", create=True)
        st.test_uri = st.uri
    yield st
    st.close()


def count(store, cypher, **params):
    return store.query(cypher, params).rows[0][0]


def test_load_and_saved_queries(store):
    summary = store.load_ontology(make_graph())
    assert (summary.concepts, summary.is_a, summary.replaced) == (4, 4, False)
    row = store.run_saved("concept", {"uid": "T:c"}).records()[0]
    assert row["name"] == "Gamma syndrome"
    assert sorted(row["parents"]) == ["T:a", "T:b"] and row["children"] == []
    assert row["depth"] == 2
    desc = store.run_saved("descendants", {"root": "T:root", "depth": 1}).records()
    assert [r["uid"] for r in desc] == ["T:a", "T:b"]
    desc = store.run_saved("descendants", {"root": "T:root", "depth": 3}).records()
    assert sorted(r["uid"] for r in desc) == ["T:a", "T:b", "T:c"]
    hits = store.run_saved("search", {"q": "GAMMA SYNDROME var"}).records()
    assert [h["uid"] for h in hits] == ["T:c"]
    counts = store.run_saved("ontology_counts").records()
    assert counts[0]["ontology"] == "toy" and counts[0]["concepts"] == 4 and counts[0]["is_a_edges"] == 4


def test_read_definitions_in_uid_order(store):
    from kgnorm.graph.views import read_definitions

    g = make_graph()
    g.concepts["T:b"].definition = "Beta is defined here."
    g.concepts["T:a"].definition = "Alpha is defined here."
    store.load_ontology(g)
    assert read_definitions(store, "toy") == ["Alpha is defined here.", "Beta is defined here."]
    assert read_definitions(store, "nope") == []


def test_reingest_replaces_exactly_that_ontology(store):
    store.load_ontology(make_graph())
    store.load_ontology(make_graph("other", "O"))
    summary = store.load_ontology(make_graph(version="2", extra=True))
    assert summary.replaced
    assert count(store, "MATCH (c:Concept) WHERE c.ontology = 'toy' RETURN count(c)") == 5
    assert count(store, "MATCH (c:Concept) WHERE c.ontology = 'other' RETURN count(c)") == 4
    assert count(store, "MATCH (:Concept)-[r:IS_A]->(:Concept) RETURN count(r)") == 5 + 4
    assert store.ontology_info("toy")["version"] == "2"


def _state(store) -> dict:
    """Everything an ingest may touch, property by property: concepts, IS_A and XREF edges,
    the run's links and predictions, and the Ontology records."""
    def rows(cypher: str) -> list[tuple]:
        return sorted(tuple(tuple(v) if isinstance(v, list) else v for v in r) for r in store.query(cypher).rows)

    return {"concepts": rows("MATCH (c:Concept) RETURN c.key, c.uid, c.ontology, c.name, c.synonyms, c.definition, "
                             "c.depth"),
            "is_a": rows("MATCH (a:Concept)-[:IS_A]->(b:Concept) RETURN a.key, b.key"),
            "xrefs": rows("MATCH (a:Concept)-[x:XREF]->(b:Concept) RETURN a.key, b.key, x.source"),
            "links": rows("MATCH (m:Mention)-[l:LINKED_TO]->(c:Concept) RETURN m.uid, c.key, l.score, l.rank, l.run"),
            "predictions": rows("MATCH (s)-[p:PREDICTED_IS_A]->(c:Concept) RETURN s.uid, c.key, p.score, p.run"),
            "ontologies": rows("MATCH (o:Ontology) RETURN o.name, o.version, o.loaded_at, o.concept_count, "
                               "o.source_path")}


def _with_links(store) -> dict:
    """toy v1 (xrefs into `xo`), a run linking into it, and the state that makes."""
    xo = OntologyGraph("xo", "obo", "x.obo")
    for code in ("a", "c"):
        xo.add_concept(Concept(f"X:{code}", code, f"x {code}"))
    xo.finalize()
    store.load_ontology(xo)
    store.load_ontology(make_graph())
    store.write_run(RunWrite(RunRecord("run-1", "link", "biosyn"),
                             mentions=[MentionRow("f:m1", "alpha", "d1", 0, 5),
                                       MentionRow("f:m2", "gamma", "d1", 6, 11)],
                             links=[LinkEdge("f:m1", "T:a", 0.9, 1), LinkEdge("f:m2", "T:c", 0.8, 1)],
                             predictions=[PredictionEdge("T:b", "T:root", 0.7, 1, 1)]))
    state = _state(store)
    assert len(state["is_a"]) == 4 and len(state["xrefs"]) == 2 and len(state["links"]) == 2
    return state


def test_failed_ingest_midway_leaves_previous_state(store):
    """The new version's IS_A batch names a missing parent: both backends fail inside the write
    transaction, after the old edges were deleted and the new concepts written (the message
    names the missing node, found only there), and roll all of it back."""
    before = _with_links(store)
    bad = make_graph(version="broken", extra=True)
    bad.concepts["T:a"].name = "Alpha, renamed by the broken version"
    bad.is_a.append(("T:d", "T:nowhere"))  # bypasses finalize's checks
    with pytest.raises(StoreError, match="loading ontology toy failed, store unchanged.*T:nowhere"):
        store.load_ontology(bad)
    assert _state(store) == before


def test_failed_reingest_after_its_deletes_leaves_previous_state(store):
    """A re-ingest that drops T:c deletes it with its link before the failing IS_A batch:
    the rollback brings back the concept, its edges and the link into it."""
    before = _with_links(store)
    bad = make_graph(version="broken")
    del bad.concepts["T:c"]
    bad.is_a = [(c, p) for c, p in bad.is_a if "T:c" not in (c, p)] + [("T:b", "T:nowhere")]
    with pytest.raises(StoreError, match="loading ontology toy failed, store unchanged.*T:nowhere"):
        store.load_ontology(bad)
    assert _state(store) == before


def test_xrefs_resolve_in_both_directions(store):
    target = OntologyGraph("xo", "obo", "x.obo")
    for code in ("a", "c"):
        target.add_concept(Concept(f"X:{code}", code, f"x {code}"))
    target.finalize()
    store.load_ontology(make_graph())          # xrefs point to X:* not yet loaded
    assert count(store, "MATCH ()-[x:XREF]->() RETURN count(x)") == 0
    summary = store.load_ontology(target)      # now both ends exist
    assert summary.xrefs == 2
    rows = store.query("MATCH (a)-[x:XREF]->(b) RETURN a.uid, b.uid, x.source ORDER BY a.uid").rows
    assert rows == [["T:a", "X:a", "toy"], ["T:c", "X:c", "toy"]]
    store.load_ontology(make_graph())          # re-ingest the source keeps them
    assert count(store, "MATCH ()-[x:XREF]->() RETURN count(x)") == 2


def test_write_run_is_idempotent(store):
    store.load_ontology(make_graph())
    write = RunWrite(
        RunRecord("run-1", "link", "biosyn", params={"k": 1}),
        mentions=[MentionRow("d1:0-5", "alpha", "d1", 0, 5, "alpha here"),
                  MentionRow("free:1", "gamma thing")],
        links=[LinkEdge("d1:0-5", "T:a", 0.9, 1), LinkEdge("d1:0-5", "T:b", 0.5, 2)],
        predictions=[PredictionEdge("T:c", "T:a", 0.8, 1, 1),
                     PredictionEdge("free:1", "T:b", 0.7, 1, 1, source_is_mention=True)])
    store.write_run(write)
    store.write_run(write)
    assert count(store, "MATCH ()-[l:LINKED_TO]->() RETURN count(l)") == 2
    assert count(store, "MATCH ()-[p:PREDICTED_IS_A]->() RETURN count(p)") == 2
    assert count(store, "MATCH (r:Run) RETURN count(r)") == 1
    links = store.run_saved("document_links", {"doc_id": "d1"}).records()
    assert [(l["concept"], l["rank"]) for l in links] == [("T:a", 1), ("T:b", 2)]
    assert store.run_saved("concept_links", {"uid": "T:a"}).records()[0]["mention"] == "alpha"
    hyp = store.run_saved("predicted_hypernyms", {"uid": "T:c"}).records()
    assert hyp[0]["hypernym_uid"] == "T:a" and hyp[0]["level"] == 1
    free = store.run_saved("mention_hypernyms", {"run": "run-1"}).records()
    assert free[0]["name"] == "gamma thing" and free[0]["hypernym_uid"] == "T:b"
    # a second run adds, never replaces, the first one's edges
    store.write_run(RunWrite(RunRecord("run-2", "link", "sparse"), links=[LinkEdge("d1:0-5", "T:c", 0.3, 1)],
                             mentions=[MentionRow("d1:0-5", "alpha", "d1", 0, 5)]))
    assert count(store, "MATCH ()-[l:LINKED_TO]->() RETURN count(l)") == 3
    assert count(store, "MATCH (m:Mention) RETURN count(m)") == 2


def test_failed_run_write_leaves_store_unchanged(store):
    store.load_ontology(make_graph())
    with pytest.raises(StoreError):
        store.write_run(RunWrite(RunRecord("r", "link", "x"), mentions=[MentionRow("m", "t")],
                                 links=[LinkEdge("m", "T:missing", 1.0, 1)]))
    assert count(store, "MATCH (r:Run) RETURN count(r)") == 0
    assert count(store, "MATCH (m:Mention) RETURN count(m)") == 0


def test_bad_query_and_unknown_scheme(store, tmp_path):
    with pytest.raises(StoreError, match="query failed"):
        store.query("MATCH (c:Concept RETURN c")
    with pytest.raises(KgnormError, match="unknown store URI scheme"):
        open_store("ftp://example/graph")
    with pytest.raises(KgnormError, match="needs --param n"):
        fill_slots("MATCH (n) RETURN n LIMIT {{n}}", {})
    with pytest.raises(KgnormError, match="must be an integer"):
        store.run_saved("descendants", {"root": "T:a", "depth": "3; DROP TABLE Concept"})


def test_neo4j_credentials_from_uri_or_env(monkeypatch):
    from kgnorm.stores.neo4j_store import split_credentials
    assert split_credentials("bolt://alice:s%40cret@db.example:7687") == ("bolt://db.example:7687", ("alice", "s@cret"))
    monkeypatch.setenv("KGNORM_NEO4J_USER", "bob")
    monkeypatch.setenv("KGNORM_NEO4J_PASSWORD", "pw")
    assert split_credentials("neo4j+s://host") == ("neo4j+s://host", ("bob", "pw"))
    monkeypatch.delenv("KGNORM_NEO4J_PASSWORD")
    assert split_credentials("neo4j://host:7687")[1] is None


def test_unreachable_neo4j_is_a_clear_error():
    with pytest.raises(StoreError, match="cannot reach Neo4j at bolt://127.0.0.1:1"):
        open_store("bolt://127.0.0.1:1")
