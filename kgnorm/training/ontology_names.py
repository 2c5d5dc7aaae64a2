"""Training queries from an ontology's own names, for an ontology nobody annotated text for (HPO):
each name of a concept that has two or more names is a query whose gold is that concept, so its
positives are the concept's other names (the trainer never offers a query its own name: BioSyn's
``exclude_query_name``); the names of its siblings -- concepts sharing a parent, neither ancestor nor
descendant (:class:`kgnorm.samplers.SiblingNegativeSampler`) -- are its hard negatives, the names a
linker confuses it with ("Abnormality of the left ventricle" against "... of the right ventricle")."""
from __future__ import annotations

from dataclasses import dataclass

from kgnorm.errors import KgnormError
from kgnorm.graph.hierarchy import Hierarchy
from kgnorm.linking.dictionary import NameDictionary
from kgnorm.samplers.siblings import SiblingNegativeSampler

__all__ = ["NameQueries", "ontology_name_queries"]


@dataclass
class NameQueries:
    """Training pairs (normalized name, {concept uid}) and, per pair, the dictionary rows of its
    siblings' names (the hard negatives a trainer may put among its candidates); row lists never
    hold a row that carries the pair's own concept."""

    pairs: list[tuple[str, set[str]]]
    negatives: list[list[int]]


def ontology_name_queries(dictionary: NameDictionary, hierarchy: Hierarchy | None = None,
                          max_negatives: int = 64) -> NameQueries:
    """Every (name, concept) of ``dictionary`` whose concept has another name; with ``hierarchy``,
    up to ``max_negatives`` sibling-name rows per pair (the first ones in a fixed order: a pool
    the trainer samples from each epoch). An ontology whose concepts all have one name gives no
    query: it has no synonym to learn from."""
    pairs: list[tuple[str, set[str]]] = []
    negatives: list[list[int]] = []
    sampler = SiblingNegativeSampler(hierarchy, items=[]) if hierarchy is not None else None
    pools: dict[str, list[int]] = {}
    for row, (name, uids) in enumerate(zip(dictionary.names, dictionary.uids)):
        for uid in uids:
            if len(dictionary.rows_of(uid)) < 2:
                continue
            pairs.append((name, {uid}))
            if sampler is None or uid not in hierarchy:
                negatives.append([])
                continue
            if uid not in pools:
                rows: dict[int, None] = {}
                for _, sibling in sampler.pool(uid):
                    for r in dictionary.rows_of(sibling):
                        if uid not in dictionary.uids[r]:
                            rows[r] = None
                pools[uid] = list(rows)[:max_negatives]
            negatives.append(pools[uid])
    if not pairs:
        raise KgnormError("no concept of the ontology has two names: there is no synonym to train on "
                          "(give --train mentions, or build the model untrained)")
    return NameQueries(pairs, negatives)
