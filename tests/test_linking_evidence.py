"""A dictionary match as evidence for the linker (kgnorm.linking.evidence.prefer_named)."""
from __future__ import annotations

from kgnorm.graph.refs import ConceptRef
from kgnorm.linking.candidates import Hit
from kgnorm.linking.evidence import prefer_named

HITS = [Hit("X:1", "Outer ear anomaly", 0.9, "t"), Hit("X:2", "Ear anomaly", 0.8, "t"), Hit("X:3", "Otitis", 0.5, "t")]


def uids(hits: list[Hit]) -> list[str]:
    return [h.uid for h in hits]


def test_the_named_concept_moves_to_rank_one_keeping_its_score() -> None:
    got = prefer_named(HITS, [ConceptRef("t", "X:2")])
    assert uids(got) == ["X:2", "X:1", "X:3"] and got[0].score == 0.8
    # the linker's top among several named concepts stays; nothing named, or no hits: as ranked
    assert prefer_named(HITS, [ConceptRef("t", "X:3"), ConceptRef("t", "X:1")]) == HITS
    assert prefer_named(HITS, []) == HITS and prefer_named([], [ConceptRef("t", "X:2")]) == []
    # of several named concepts the linker ranked, its best ranked one
    assert uids(prefer_named(HITS, [ConceptRef("t", "X:3"), ConceptRef("t", "X:2")])) == ["X:2", "X:1", "X:3"]


def test_an_unranked_named_concept_is_put_first_only_when_it_is_the_one() -> None:
    got = prefer_named(HITS, [ConceptRef("t", "X:9")], "Skin lesion")
    assert got[0] == Hit("X:9", "Skin lesion", 0.9, "t") and uids(got) == ["X:9", "X:1", "X:2"]
    assert prefer_named(HITS, [ConceptRef("t", "X:8"), ConceptRef("t", "X:9")]) == HITS


def test_a_concept_of_another_ontology_is_never_the_hit() -> None:
    # a tagger over one ontology, a linker over another (a router): the linker's ranking stands
    assert prefer_named(HITS, [ConceptRef("u", "X:2")]) == HITS
    # a bare uid (no ontology) is taken as the linker's
    assert uids(prefer_named(HITS, [ConceptRef("", "X:2")]))[0] == "X:2"


class _NearestOuterEar:
    """A linker that ranks "Abnormality of the outer ear" first for every query (as BioSyn did for GSC+'s
    "ear anomalies"), then its parent."""

    method = "fixed"

    def link_parts(self, queries, mentions, whole, top_k):
        return [[Hit("X:2", "Abnormality of the outer ear", 0.9, "t"), Hit("X:1", "Abnormality of the ear", 0.7, "t")]
                for _ in queries]


def test_annotate_links_what_the_matched_name_names_after_the_document_vote() -> None:
    from kgnorm.documents.types import TextDocument
    from kgnorm.jobs.batch_work import detect_batch, link_found
    from kgnorm.ner.dictionary import DictionaryDetector
    from kgnorm.text.pipeline import TextPipeline

    tagger = DictionaryDetector([("Ear anomaly", "X:1"), ("Outer ear anomaly", "X:2"), ("Otitis", "X:3")], ontology="t")
    doc = TextDocument("d1", "Ear anomalies and otitis. Two ear anomalies.")
    found = detect_batch(tagger, True, [doc])
    assert [(s.text, s.source, [c.uid for c in s.concepts]) for s in found.spans] == [
        ("Ear anomalies", "detector", ["X:1"]), ("otitis", "detector", ["X:3"]),
        ("ear anomalies", "detector", ["X:1"])]

    def top(evidence: bool) -> list[str]:
        done = link_found(_NearestOuterEar(), TextPipeline(), True, {"top_k": 2}, found, evidence=evidence)
        return [lm.parts[0][0].uid for lm in done.linked[0]]
    assert top(False) == ["X:2", "X:2", "X:2"]
    assert top(True) == ["X:1", "X:3", "X:1"]  # "otitis" was never ranked: its one concept is put first
