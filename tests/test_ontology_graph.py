"""OntologyGraph.finalize: dangling, duplicate, self and cyclic edges, depth, merging."""
from __future__ import annotations

import networkx as nx
import pytest

from kgnorm.errors import InputError
from kgnorm.graph.ontology_graph import Concept, OntologyGraph


def _graph(*uids: str) -> OntologyGraph:
    g = OntologyGraph(name="t", format="test", source_path="mem.txt")
    for u in uids:
        g.add_concept(Concept(uid=u, code=u, name=f"name {u}"))
    return g


def test_depth_is_shortest_distance_from_a_root():
    g = _graph("R", "A", "B", "C", "D")
    for child, parent in [("A", "R"), ("B", "A"), ("C", "B"), ("C", "R"), ("D", "C")]:
        g.add_is_a(child, parent)
    rep = g.finalize()
    assert rep.roots == 1
    assert {u: c.depth for u, c in g.concepts.items()} == {"R": 0, "A": 1, "B": 2, "C": 1, "D": 2}


def test_dangling_strict_raises_with_origin():
    g = _graph("A")
    g.add_is_a("A", "MISSING", origin="file.tsv:7")
    with pytest.raises(InputError) as err:
        g.finalize(strict=True)
    assert "file.tsv:7" in str(err.value) and "MISSING" in str(err.value)


def test_dangling_dropped_and_counted():
    g = _graph("A", "B")
    g.add_is_a("A", "MISSING")
    g.add_is_a("GHOST", "B")
    g.add_is_a("A", "B")
    rep = g.finalize(strict=False)
    assert rep.dangling_edges == 2
    assert g.is_a == [("A", "B")]
    assert any("unknown ids" in w for w in g.warnings)


def test_duplicates_and_self_loops():
    g = _graph("A", "B")
    g.add_is_a("A", "B")
    g.add_is_a("A", "B")
    g.add_is_a("B", "B")
    rep = g.finalize()
    assert rep.duplicate_edges == 1
    assert rep.cycle_edges_removed == 1  # the self loop
    assert g.is_a == [("A", "B")]


def test_cycle_broken_every_node_gets_a_depth():
    g = _graph("R", "A", "B", "C")
    for child, parent in [("A", "R"), ("B", "A"), ("C", "B"), ("A", "C")]:
        g.add_is_a(child, parent)
    rep = g.finalize()
    assert rep.cycle_edges_removed == 1
    assert len(g.is_a) == 3
    assert all(c.depth >= 0 for c in g.concepts.values())
    assert g.concepts["A"].depth == 1
    dag = nx.DiGraph(g.is_a)
    assert nx.is_directed_acyclic_graph(dag)


def test_pure_cycle_without_root():
    g = _graph("A", "B")
    g.add_is_a("A", "B")
    g.add_is_a("B", "A")
    rep = g.finalize()
    assert rep.cycle_edges_removed == 1 and rep.roots == 1
    assert sorted(c.depth for c in g.concepts.values()) == [0, 1]


def test_duplicate_concept_merges():
    g = _graph()
    g.add_concept(Concept(uid="X", code="X", name="first", synonyms=["s1"], synonym_scopes=["EXACT"]))
    merged = g.add_concept(Concept(uid="X", code="X", name="second", alt_ids=["Y"],
                                   definition="def"))
    assert merged is g.concepts["X"]
    assert merged.name == "first"
    assert merged.synonyms == ["s1", "second"]
    assert merged.alt_ids == ["Y"] and merged.definition == "def"
    assert merged.ontology == "t"


def test_add_synonym_dedupes_and_skips_name():
    c = Concept(uid="X", code="X", name="Name")
    c.add_synonym("Name")
    c.add_synonym(" other ", "BROAD")
    c.add_synonym("other", "EXACT")
    c.add_synonym("")
    assert c.synonyms == ["other"] and c.synonym_scopes == ["BROAD"]
    c.add_alt_id("X")
    c.add_alt_id("Z")
    c.add_alt_id("Z")
    assert c.alt_ids == ["Z"]
