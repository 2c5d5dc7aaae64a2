"""From ranked name rows to ranked concepts: what every dictionary linker returns.

A dictionary row is one normalized name, and a name can belong to several concepts (a MEDIC
synonym that is also a training mention of another concept, two concepts sharing a synonym).
A user gets one concept per rank, so the rows a model retrieves are turned into concepts here,
and ``kgnorm link``, ``kgnorm eval link``, every trainer's dev selection and the nil
evaluation all call this one function.

Order of the concepts, most important first:

1. the concept's best score over its retrieved names;
2. evidence for the name that gave that score: how many training mentions with that text
   were linked to the concept (``NameDictionary.counts``; "DM" in NCBI-disease train is
   Myotonic Dystrophy, not the MEDIC concept that merely lists "DM" as a synonym);
3. the concept's best score over its *other* retrieved names;
4. deterministic tie-break: rank of the best name's row, then the concept's position in that
   row (first seen: ontology order), then the uid.

A concept appears once; several names of one concept collapse to its best one.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from kgnorm.linking.candidates import RankedConcept
from kgnorm.linking.dictionary import NameDictionary

# names retrieved per wanted concept (synonyms of one concept collapse, shared names expand)
OVERFETCH = 4


def rank_concepts(dictionary: NameDictionary, rows: Iterable[int], scores: Iterable[float],
                  top_k: int) -> list[RankedConcept]:
    """The top ``top_k`` concepts of one query from its retrieved rows (``-1`` = none) and
    their scores, ordered as the module docstring says."""
    best: dict[str, tuple[float, int, int, int]] = {}   # uid -> (score, rank, row, position)
    other: dict[str, float] = {}
    for rank, (row, score) in enumerate(zip(rows, scores)):
        row = int(row)
        if row < 0:
            continue
        score = float(score)
        for pos, uid in enumerate(dictionary.uids[row]):
            cur = best.get(uid)
            if cur is None:
                best[uid] = (score, rank, row, pos)
                continue
            if score > cur[0]:  # the former best becomes one of its other names
                best[uid] = (score, rank, row, pos)
                score = cur[0]
            other[uid] = max(other.get(uid, float("-inf")), score)
    keyed = sorted(best.items(), key=lambda kv: (
        -kv[1][0], -dictionary.mention_count(kv[1][2], kv[0]), -other.get(kv[0], float("-inf")),
        kv[1][1], kv[1][3], kv[0]))
    return [RankedConcept(uid, b[2], b[0]) for uid, b in keyed[:max(0, int(top_k))]]


def link_concepts(model: Any, queries: Sequence[str], top_k: int,
                  batch_size: int = 512) -> list[list[RankedConcept]]:
    """Ranked concepts per (normalized) query from any model with ``link`` over a
    :class:`NameDictionary` (BioSyn, DAN, BNE, DILBERT): ``top_k * OVERFETCH`` names are
    retrieved, then :func:`rank_concepts`."""
    d = model.dictionary
    cands = model.link(list(queries), top_k=max(1, int(top_k)) * OVERFETCH, batch_size=batch_size)
    return [rank_concepts(d, [c.name_idx for c in cs], [c.score for c in cs], top_k) for cs in cands]
