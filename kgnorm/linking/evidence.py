"""A dictionary match as evidence for the linker (annotate's ``--dictionary-evidence``).

Why: a dictionary tagger (kgnorm.ner.dictionary) knows which name it matched, and so which
concept(s) the span names; the linker ranks the span's text against every name again and may
prefer a neighbour ("skin lesions", matched as "Localized skin lesion" without its modifier, ranked
nearer to another skin concept). :func:`prefer_named` makes the dictionary's concept rank 1 when
the match names one concept; when it names several, the linker chooses among them. Spans a trained
detector found carry no concepts and are left as the linker ranked them.
"""
from __future__ import annotations

from collections.abc import Sequence

from kgnorm.graph.refs import ConceptRef
from kgnorm.linking.candidates import Hit

__all__ = ["prefer_named"]


def _names(hit: Hit, concepts: Sequence[ConceptRef]) -> bool:
    return any(hit.uid == c.uid and (not hit.ontology or not c.ontology or hit.ontology == c.ontology)
               for c in concepts)


def prefer_named(hits: list[Hit], concepts: Sequence[ConceptRef], name: str = "") -> list[Hit]:
    """`hits` (one mention's ranking, best first) with the dictionary's concept first: the best
    ranked hit among ``concepts`` moves to rank 1; when none was ranked and the match names one
    concept, that concept is put first (named ``name``, with the displaced top hit's score, so the
    mention's confidence reads the linker's margin as before). Unchanged when the linker's top is
    already among them, when ``concepts`` is empty, or when the concept is of another ontology than
    the linker's. The list keeps its length."""
    if not hits or not concepts or _names(hits[0], concepts):
        return hits
    for i, hit in enumerate(hits):
        if _names(hit, concepts):
            return [hit, *hits[:i], *hits[i + 1:]]
    c = concepts[0]
    if len(concepts) != 1 or (c.ontology and hits[0].ontology and c.ontology != hits[0].ontology):
        return hits  # the linker's ontology is not the dictionary's (a router): its ranking stands
    first = Hit(c.uid, name or c.uid, hits[0].score, c.ontology or hits[0].ontology)
    return [first, *hits[:-1]]
